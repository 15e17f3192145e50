/* SPDX-License-Identifier: MIT
 *
 * What the files of the settings engine (settings.h) share: the
 * catalogue of variables (settings_catalog.c), reading them
 * (settings_read.c), a change's check and staging (settings_stage.c),
 * applying a change set with undo (settings_apply.c) and the actions
 * that act at once (settings_act.c). Private to those files.
 */
#ifndef HA_SETTINGS_IMPL_H
#define HA_SETTINGS_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "heap/heap.h"
#include "heap/mallctl.h"
#include "heap/settings.h"

enum gv_kind {
    GV_ADMIN,     /* from heap->admin_value, read-only */
    GV_BOOL,      /* bool mallctl, read-write */
    GV_LG_SAMPLE, /* reads prof.lg_sample, writes prof.reset(n) */
    GV_DUMP,      /* action: prof.dump */
    GV_RESET,     /* action: prof.reset at the current rate */
    GV_PURGE,     /* action: arena.<all>.purge */
    GV_RO_BOOL,   /* bool mallctl, read-only */
    GV_RO_SIZE,   /* size_t mallctl, read-only */
    GV_RO_SSIZE,  /* ssize_t mallctl, read-only */
    GV_RO_STR,    /* const char * mallctl, read-only */
    GV_PREFIX,    /* effective prof prefix, read-only */
    GV_LG_MIN,    /* heap->lg_prof_sample_min, read-only */
    GV_STATS_AGE, /* heap->stats_max_age_ms, read-write */
    GV_DUMP_SYM,  /* heap->dump_symbolized, read-write */
    GV_KEEP,      /* heap->je setting (dump housekeeping, leak watch),
                     read-only */
    GV_DECAY,     /* arenas.<kind>_decay_ms and every arena's, read-write */
    GV_ARENA_DECAY, /* per-arena <kind>_decay_ms list, read-write */
    GV_PURGE_ARENA, /* action: arena.<i>.purge, an index or all */
    GV_ENGINE,    /* run-time state from heap->engine_value, read-only */
    GV_LOG_NOW,   /* action: a lifetime window of N seconds (heap/logwin.h);
                     reads the seconds left */
    GV_LOG_MAX,   /* heap->log_max_bytes, read-write */
    GV_LOG_STATE, /* the lifetime window's state, read-only */
    GV_RECENT_MAX, /* experimental.prof_recent.alloc_max, read-write,
                      bounded */
    GV_WRAPPERS,  /* heap->alloc_wrappers, read-write (prof/
                     wrappers.h) */
    GV_KIND_MAX
};

enum gv_admin {
    GV_ADMIN_NONE,
    GV_ADMIN_CREDENTIALS,
    GV_ADMIN_STATS_CREDENTIALS,
    GV_ADMIN_IFACES,
    GV_ADMIN_VERSION,
    GV_ADMIN_MAX_CONNECTIONS,
    GV_ADMIN_MAX_PENDING_LOGINS,
    GV_ADMIN_MAX_PENDING_LOGINS_PER_HOST,
    GV_ADMIN_CONNECT_TIMEOUT,
    GV_ADMIN_WAIT_TIMEOUT,
    GV_ADMIN_NET_WRITE_TIMEOUT,
    GV_ADMIN_MAX_ALLOWED_PACKET,
    GV_ADMIN_MAX_OUTPUT_BUFFER,
    GV_ADMIN_MAX_EXECUTION_TIME,
    GV_ADMIN_DISK_TIMEOUT,
    GV_ADMIN_STATS_SYSTEM_MEMORY,
    GV_ADMIN_SQL_MEMORY_LIMIT,
    GV_ADMIN_MAX_OUTPUT_TOTAL,
    GV_ADMIN_UNIX_SOCKET_MODE,
    GV_ADMIN_HAVE_SSL,
    GV_ADMIN_REQUIRE_TLS,
    GV_ADMIN_DEFAULT_AUTH_PLUGIN,
    GV_ADMIN_PROFILE_CREDENTIALS,
    GV_ADMIN_SERVICE_NAMES,
    GV_ADMIN_PUSH_TARGETS,
    GV_ADMIN_PUSH_OUTBOX_MAX_BYTES,
    GV_ADMIN_PUSH_TIMEOUT_S,
    GV_ADMIN_PUSH_RETRY_MAX_S,
    GV_ADMIN_PUSH_LIVE_INTERVAL_S,
    GV_ADMIN_MAX
};

#define GV_PROF (1u << 0)        /* writes need opt.prof */
#define GV_ENOENT_FALSE (1u << 1) /* a missing mallctl reads 'false' */

struct ha_settings_row {
    const char *name;     /* variable_name */
    const char *mallctl;  /* source, NULL for admin rows */
    enum gv_kind kind;
    unsigned flags;       /* GV_* flags */
    enum gv_admin admin;  /* GV_ADMIN rows: which setting */
    const char *hint;     /* read-only rows: how to change it instead */
    const char *doc;      /* what it is, for people: docs/reference/
                             variables.md is made from it (docs/gen/
                             gendocs.c, through ha_settings_describe);
                             NULL only where a config key of the same
                             name (admin-x: admin_variables.x,
                             jemalloc-x: jemalloc_variables.x) says it,
                             whose doc the page shows. Plain text, `code`
                             in backquotes */
};

#define HINT_ADMIN                                                      \
    "admin-* variables are read-only at run time; change them in the " \
    "config file (admin_variables) and restart heapadmind"
#define HINT_STARTUP                                                   \
    "jemalloc reads it only when the process starts; set it in the "   \
    "config file (jemalloc_variables) or in MALLOC_CONF and restart "  \
    "heapadmind"
#define HINT_KEEP                                                       \
    "dump housekeeping is set in the config file (jemalloc_variables) "  \
    "and read when heapadmin starts"
#define HINT_WATCH                                                      \
    "the leak watch is set in the config file (jemalloc_variables."     \
    "leak_watch_*) and read when heapadmin starts"
#define HINT_LIMIT                                                      \
    "the limit watch is set in the config file (jemalloc_variables."    \
    "limit_dump_* and limit_watch_*) and read when heapadmin starts"
#define HINT_OPT                                                        \
    "it is the start-up value; the live setting is the same name "      \
    "without 'opt_'"

/* The catalogue: every variable, in order (settings_catalog.c). */
extern const struct ha_settings_row ha_settings_rows[];
extern const int ha_settings_n_rows;
#define GV_N_ROWS ha_settings_n_rows
/* jemalloc takes any decay from -1 (never) to about 2^64 ns; past a year
 * a setting is a mistake, not a plan. */
#define GV_DECAY_MAX 31536000000LL
#define GV_DECAY_ALLOWED                                                  \
    "-1 (never return freed pages), 0 (return them at once) or "          \
    "milliseconds up to 31536000000 (a year); jemalloc's defaults are "   \
    "10000 for dirty and 0 for muzzy pages"
/* Arenas one per-arena list may name. */
#define GV_ARENA_LIST_MAX 1024
/* Records jemalloc's recent-allocation list may keep: each holds its
 * stack's profiling data alive, so jemalloc's -1 (no bound) is refused. */
#define GV_RECENT_MAX_RECORDS 100000
#define GV_LG_SAMPLE_MAX 62
#define GV_LG_SAMPLE_ALLOWED                                             \
    "an integer from 0 to 62 (log2 of the mean bytes allocated between " \
    "samples; jemalloc's default 19 = 512 KiB)"

/* Longest value text kept for messages. */
#define GV_TEXT_MAX 128

/* One staged change, waiting for ha_settings_commit. */
struct ha_settings_change {
    int row;                 /* index into ha_settings_rows */
    long long value;         /* bool (0/1), a number or an arena index */
    char text[GV_TEXT_MAX];  /* the value as written, for messages */

    bool applied;            /* the commit did it */
    bool old_bool;           /* GV_BOOL, GV_DUMP_SYM: value before */
    long long old;           /* the number before, for undo */
    struct ha_mallctl_decay_undo undo; /* GV_DECAY, GV_ARENA_DECAY: the
                                          settings before (freed with the
                                          change) */
    char *str;               /* GV_WRAPPERS: the value, canonical, whole
                                (text is cut); malloc'd, freed with the
                                change */
    char *old_str;           /* GV_WRAPPERS: the value before, for undo */
};

/* ------------------------------------------------------------------
 * The catalogue (settings_catalog.c)
 * ------------------------------------------------------------------ */

/* Whether a change may set r (a read-write row or an action). */
bool ha_settings_writable(const struct ha_settings_row *r);

/* Whether r is an action (dump_now, reset_now, purge_now, ...): reads
 * 'false', acts on 'true', never saved. */
bool ha_settings_is_action(const struct ha_settings_row *r);

/* "a, b, c": the writable variables, for messages. */
void ha_settings_writable_list(char *buf, size_t len);

/* "dirty" or "muzzy": which decay a GV_DECAY / GV_ARENA_DECAY row is. */
const char *ha_settings_decay_kind(const struct ha_settings_row *r);

/* ------------------------------------------------------------------
 * Reading (settings_read.c)
 * ------------------------------------------------------------------ */

/* Whether arena i is initialized (in use). */
bool ha_settings_arena_in_use(const struct ha_mallctl_ops *ops, unsigned i);

/* ------------------------------------------------------------------
 * Actions (settings_act.c)
 * ------------------------------------------------------------------ */

/* jemalloc-dump_now: a heap dump written off the loop (the dump worker),
 * published, its retention applied; info says where and how to read it
 * (and the symbolized copy, when heap->dump_symbolized). Returns 0, or
 * -1 with err. */
int ha_settings_dump_now(struct ha_heap *heap, const char *variable,
                         char *info, size_t infolen, char *err,
                         size_t errlen);

/* arena.<arena>.purge (HA_MALLCTL_ARENAS_ALL: every arena), with how
 * much went back to the system in info. Returns 0 or mallctl's errno. */
int ha_settings_purge(struct ha_heap *heap, unsigned arena, char *info,
                      size_t infolen);

/* jemalloc-log_now: opens a lifetime window of c->value seconds, or
 * closes the open one (0). Returns 0 with info, or -1 with err. */
int ha_settings_log_now(struct ha_heap *heap,
                        const struct ha_settings_change *c, char *info,
                        size_t infolen, char *err, size_t errlen);

#endif /* HA_SETTINGS_IMPL_H */
