/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end's path table (see paths.h). Pure.
 */
#include "http/paths.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"

static const struct path {
    const char *path;
    bool prefix; /* path is a prefix ("/assets/") */
    unsigned methods;
    enum ha_http_page page;
    bool admin; /* admins only (paths.h) */
    bool profile; /* the profile role may ask it (paths.h) */
} paths[] = {
    {"/", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_INDEX, false, true},
    {"/metrics", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_METRICS, false, false},
    {"/agent", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_AGENT, false, false},
    /* A gateway's targets for Prometheus' HTTP service discovery (its
     * scrapers of profiles may hold a profile account). */
    {"/sd", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_SD, false, true},
    {"/debug/pprof/heap", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_PPROF_HEAP,
     false, true},
    {"/debug/pprof/allocs", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_PPROF_ALLOCS,
     false, true},
    {"/debug/pprof/symbol", false, HA_HTTP_GET_HEAD | HA_HTTP_POST,
     HA_HTTP_PAGE_PPROF_SYMBOL, false, true},
    /* The command line may carry secrets (a password, a token given
     * as an argument): admins only. */
    {"/debug/pprof/cmdline", false, HA_HTTP_GET_HEAD,
     HA_HTTP_PAGE_PPROF_CMDLINE, true, false},
    {"/pprof/heap", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_JEPROF_HEAP, false,
     true},
    /* What jeprof fetches when given no path (its CPU page): there is
     * no CPU profiler here, so the heap, which jeprof tells by its
     * header; ?seconds= is ignored. */
    {"/pprof/profile", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_JEPROF_HEAP,
     false, true},
    {"/pprof/symbol", false, HA_HTTP_GET_HEAD | HA_HTTP_POST,
     HA_HTTP_PAGE_PPROF_SYMBOL, false, true},
    {"/pprof/cmdline", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_PPROF_CMDLINE,
     true, false},
    {"/heap", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME, false, true},
    {"/heap/", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME, false, true},
    {"/heap/data.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME_DATA,
     false, true},
    {"/heap/dumps.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME_DUMPS,
     false, true},
    {"/heap/growth.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_GROWTH_DATA,
     false, true},
    {"/heap/logs.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME_LOGS,
     false, false},
    {"/heap/lifetimes.json", false, HA_HTTP_GET_HEAD,
     HA_HTTP_PAGE_LIFETIMES_DATA, false, false},
    {"/assets/", true, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_ASSET, false, true},
};

static const struct path *
find(const char *path)
{
    if (path == NULL)
        return NULL;
    for (size_t i = 0; i < HA_ARRAY_SIZE(paths); i++) {
        const struct path *p = &paths[i];

        if (p->prefix ? strncmp(path, p->path, strlen(p->path)) == 0
                      : strcmp(path, p->path) == 0)
            return p;
    }
    return NULL;
}

int
ha_http_path_page(const char *path)
{
    const struct path *p = find(path);

    return p != NULL ? (int)p->page : -1;
}

bool
ha_http_path_admin_only(const char *path)
{
    const struct path *p = find(path);

    return p != NULL && p->admin;
}

bool
ha_http_path_profile_ok(const char *path)
{
    const struct path *p = find(path);

    return p == NULL || p->profile;
}

bool
ha_http_path_allows(const char *path, unsigned methods, char *allow,
                    size_t allow_len)
{
    const struct path *p = find(path != NULL ? path : "");

    if (p == NULL || (p->methods & methods) != 0)
        return true;
    snprintf(allow, allow_len, "%s",
             p->methods & HA_HTTP_POST ? "GET, HEAD, POST" : "GET, HEAD");
    return false;
}

long
ha_http_parse_pid(const char *s, size_t n)
{
    long v = 0;

    if (n == 0 || n > 10 || s[0] == '0')
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    return v <= 2147483647L ? v : 0;
}

const char *
ha_http_path_strip_pid(const char *path, long *pid)
{
    const char *p, *slash;

    *pid = 0;
    if (path == NULL || strncmp(path, "/pid/", 5) != 0)
        return NULL;
    p = path + 5;
    slash = strchr(p, '/');
    if (slash == NULL)
        return NULL;
    *pid = ha_http_parse_pid(p, (size_t)(slash - p));
    return slash;
}
