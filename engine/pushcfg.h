/* SPDX-License-Identifier: MIT
 *
 * The fleet's settings in admin_variables, parsed: where dumps are
 * pushed (push_targets) and what a program is called as a service
 * (service_names). Pure: strings in, structs out, unit-tested in
 * test/check_push.c.
 *
 * push_targets, as global_variables shows it and SAVE CONFIG TO FILE
 * writes it: targets separated by ';', each a list of key=value fields
 * separated by spaces:
 *
 *   type=pyroscope url=http://10.0.0.5:4040 kinds=limit,peak tenant=ops;
 *   type=parca url=https://parca:7070 bearer_token=abc
 *
 * A file may give the same as a libconfig list of groups, which the
 * loader turns into that text (engine/config_read.c):
 *
 *   push_targets = ( { type = "pyroscope"; url = "http://..."; } );
 *
 * Fields:
 *   type          pyroscope (POST <url>/ingest, Pyroscope's HTTP ingest
 *                 API) or parca (POST <url>/profiles/writeraw, the HTTP
 *                 binding of Parca's ProfileStoreService.WriteRaw);
 *                 required
 *   url           http:// or https://, the receiver's base URL (a path
 *                 is kept: a reverse proxy's prefix); required
 *   kinds         which dumps go there, comma-separated among
 *                 HA_PUSH_KIND_* names; default limit,peak,leak,final,
 *                 manual
 *   basic_auth    user:password, sent as HTTP Basic
 *   bearer_token  sent as "Authorization: Bearer <token>"
 *   tenant        sent as X-Scope-OrgID (Pyroscope's tenant header)
 * A value holds no space, ';' or control character; basic_auth and
 * bearer_token are never both given.
 *
 * service_names: "program=service;program=service": the label contract's
 * service_name of a program (engine/labels.h); a program not listed is
 * its own service.
 */
#ifndef HA_PUSHCFG_H
#define HA_PUSHCFG_H

#include <stdbool.h>
#include <stddef.h>

/* Kinds of profile a target takes (bits of ha_push_target.kinds). The
 * dump's kind comes from its name and its <dump>.mem trigger
 * (ha_pushcfg_kind_of). */
#define HA_PUSH_KIND_MANUAL (1u << 0)    /* dump_now */
#define HA_PUSH_KIND_AUTOMATIC (1u << 1) /* dump_interval_s,
                                            dump_resident_bytes */
#define HA_PUSH_KIND_INTERVAL (1u << 2)  /* jemalloc's lg_prof_interval */
#define HA_PUSH_KIND_PEAK (1u << 3)      /* jemalloc's prof_gdump: a new
                                            high-water mark */
#define HA_PUSH_KIND_LIMIT (1u << 4)     /* the limit watch */
#define HA_PUSH_KIND_LEAK (1u << 5)      /* the leak watch */
#define HA_PUSH_KIND_FINAL (1u << 6)     /* jemalloc's prof_final */
#define HA_PUSH_KIND_LIVE (1u << 7)      /* push_live_interval_s */
#define HA_PUSH_KINDS_DEFAULT                                              \
    (HA_PUSH_KIND_LIMIT | HA_PUSH_KIND_PEAK | HA_PUSH_KIND_LEAK |          \
     HA_PUSH_KIND_FINAL | HA_PUSH_KIND_MANUAL)
#define HA_PUSH_TARGETS_MAX 8

enum ha_push_type {
    HA_PUSH_PYROSCOPE,
    HA_PUSH_PARCA,
    HA_PUSH_TYPE_MAX
};

struct ha_push_target {
    enum ha_push_type type;
    char url[1024];          /* base URL, no trailing '/' */
    unsigned kinds;          /* HA_PUSH_KIND_* */
    char basic_auth[256];    /* "user:password", or "" */
    char bearer_token[1024]; /* or "" */
    char tenant[128];        /* X-Scope-OrgID, or "" */
    char id[12];             /* "t" and 8 hex digits of type and url: the
                                outbox's name for the target, stable
                                while they are */
};

struct ha_service_name {
    char program[64];
    char service[64];
};

/* Parses spec (NULL or "": none) into *targets (malloc'd; free()) and
 * *n. Returns 0, or -1 with err naming the target (1-based), the field
 * and what is allowed; never quotes a password or token. */
int ha_pushcfg_parse(const char *spec, struct ha_push_target **targets,
                     size_t *n, char *err, size_t errlen);

/* spec with basic_auth's password and bearer_token written "****", for
 * global_variables and the log. */
void ha_pushcfg_mask(const char *spec, char *out, size_t outlen);

/* A kinds list ("limit,peak") into HA_PUSH_KIND_* bits. Returns 0, or
 * -1 with err naming the word and the kinds allowed. */
int ha_pushcfg_parse_kinds(const char *list, unsigned *kinds, char *err,
                           size_t errlen);

/* The name of one kind bit ("limit"), or "" for another value. */
const char *ha_pushcfg_kind_name(unsigned kind);

/* The kind of a dump, from jemalloc's kind in its name ("manual",
 * "interval", "high-water", "final": prof/dumpname.h) and the trigger
 * its <dump>.mem recorded ("manual", "automatic", "leak-watch",
 * "limit", "jemalloc"; "" unknown): one HA_PUSH_KIND_* bit, or 0 for
 * none (a log, or an unknown pair). */
unsigned ha_pushcfg_kind_of(const char *name_kind, const char *trigger);

/* The type's name: "pyroscope", "parca". */
const char *ha_pushcfg_type_name(enum ha_push_type t);

/* Parses service_names (NULL or "": none) into *out (malloc'd) and *n.
 * A program is 1..63 bytes without '=', ';', space or control
 * characters; a service 1..63 of [A-Za-z0-9_.-]; a program given twice
 * is an error. Returns 0, or -1 with err. */
int ha_pushcfg_parse_services(const char *spec, struct ha_service_name **out,
                              size_t *n, char *err, size_t errlen);

/* The service_name of program under map (n entries): its entry's, else
 * program itself. */
const char *ha_pushcfg_service_of(const struct ha_service_name *map,
                                  size_t n, const char *program);

#endif /* HA_PUSHCFG_H */
