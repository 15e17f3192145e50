/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end's paths: which exist and which methods each takes.
 * Pure (no evhttp): routes.c runs the page a path names, auth.c answers
 * 405 with Allow for a method the path does not take, and
 * test/fuzz/fuzz_http.c feeds it arbitrary paths. A path is matched
 * exactly, or by prefix for the asset directory.
 */
#ifndef HA_HTTP_PATHS_H
#define HA_HTTP_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* Methods, as the table lists them. */
#define HA_HTTP_GET_HEAD (1u << 0) /* GET and HEAD */
#define HA_HTTP_POST (1u << 1)     /* POST */

/* Every page the front-end serves (routes.c runs each). */
enum ha_http_page {
    HA_HTTP_PAGE_INDEX,          /* / */
    HA_HTTP_PAGE_METRICS,        /* /metrics */
    HA_HTTP_PAGE_AGENT,          /* /agent */
    HA_HTTP_PAGE_SD,             /* /sd (a gateway's) */
    HA_HTTP_PAGE_PPROF_HEAP,     /* /debug/pprof/heap */
    HA_HTTP_PAGE_PPROF_ALLOCS,   /* /debug/pprof/allocs */
    HA_HTTP_PAGE_PPROF_SYMBOL,   /* /debug/pprof/symbol, /pprof/symbol */
    HA_HTTP_PAGE_PPROF_CMDLINE,  /* /debug/pprof/cmdline, /pprof/cmdline */
    HA_HTTP_PAGE_JEPROF_HEAP,    /* /pprof/heap, /pprof/profile */
    HA_HTTP_PAGE_FLAME,          /* /heap, /heap/ */
    HA_HTTP_PAGE_FLAME_DATA,     /* /heap/data.json */
    HA_HTTP_PAGE_FLAME_DUMPS,    /* /heap/dumps.json */
    HA_HTTP_PAGE_GROWTH_DATA,    /* /heap/growth.json */
    HA_HTTP_PAGE_FLAME_LOGS,     /* /heap/logs.json */
    HA_HTTP_PAGE_LIFETIMES_DATA, /* /heap/lifetimes.json */
    HA_HTTP_PAGE_ASSET,          /* /assets/... */
    HA_HTTP_PAGE_MAX
};

/* One path the front-end serves (paths.c's table). */
struct ha_http_path {
    const char *path;
    bool prefix;             /* path is a prefix ("/assets/") */
    unsigned methods;        /* HA_HTTP_GET_HEAD, HA_HTTP_POST */
    enum ha_http_page page;
    bool admin;              /* admins only (ha_http_path_admin_only) */
    bool profile;            /* the profile role may ask it
                                (ha_http_path_profile_ok) */
    const char *doc;         /* what it serves, for people: docs/reference/
                                http.md is made from it (docs/gen/
                                gendocs.c); plain text, `code` in
                                backquotes */
};

/* Every path, in the table's order; *n of them. */
const struct ha_http_path *ha_http_paths(size_t *n);

/* The page path names, or -1 when none does (path NULL: none). */
int ha_http_path_page(const char *path);

/* Whether path is served to admins only (the process's command line,
 * which may carry secrets); a stats user gets 403. False for a path no
 * page has. */
bool ha_http_path_admin_only(const char *path);

/* Whether the profile role may ask path: the heap profiles (pprof,
 * jeprof's protocol, the flame page and its dumps and growth data, the
 * page's assets) and the index; never /metrics, /agent, the command
 * line or the lifetime window's files. True for a path no page has (it
 * gets 404). */
bool ha_http_path_profile_ok(const char *path);

/* Whether path takes a request whose method is methods (HA_HTTP_GET_HEAD,
 * HA_HTTP_POST, or 0 for any other). A path no page has takes every
 * method (it gets 404 once authenticated). When false, allow (allow_len
 * bytes, terminated) holds the methods it takes ("GET, HEAD"). */
bool ha_http_path_allows(const char *path, unsigned methods, char *allow,
                         size_t allow_len);

/* A pid as the gateway takes one (?pid=N, /pid/N/...): decimal digits
 * only, no sign, no leading zero, 1..2^31-1; s is n bytes. Returns the
 * pid, or 0 when s is not one. */
long ha_http_parse_pid(const char *s, size_t n);

/* A host gateway's per-process prefix, "/pid/<N>/...", which jeprof can
 * take as a base URL (it appends /pprof/symbol to what comes before
 * /pprof/heap): the path under it, with *pid set; NULL when path has no
 * such prefix (or an invalid pid: *pid is 0 then, and the rest
 * returned). */
const char *ha_http_path_strip_pid(const char *path, long *pid);

#endif /* HA_HTTP_PATHS_H */
