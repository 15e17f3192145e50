/* SPDX-License-Identifier: MIT
 *
 * global_variables: an eponymous virtual table of admin-* and jemalloc-*
 * settings in ProxySQL's <module>-<name> naming. SELECT reads the live
 * state from jemalloc; UPDATE changes jemalloc at once (at the end of the
 * statement, or at COMMIT inside BEGIN ... COMMIT).
 *
 * Usage:
 *
 *   SELECT * FROM global_variables;
 *     Every row below with its current value.
 *   UPDATE global_variables SET variable_value = 'true'
 *    WHERE variable_name = 'jemalloc-prof_active';
 *     Starts sampling (prof.active); OK, 1 row affected.
 *   UPDATE global_variables SET variable_value = 'true'
 *    WHERE variable_name = 'jemalloc-dump_now';
 *     Writes <datadir>/proxysql.<pid>.<seq>.m<mseq>.heap; the OK packet's
 *     info message (ha_vtab_take_info) names the file.
 *   UPDATE global_variables SET variable_value = '20'
 *    WHERE variable_name = 'jemalloc-lg_prof_sample';
 *     One sample per 1 MiB on average; prof.reset discards the samples
 *     collected so far, and the info message says so.
 *
 * Schema:
 *   0 variable_name  TEXT PRIMARY KEY  "<module>-<name>", fixed set
 *   1 variable_value TEXT              current value; booleans read
 *                                      'true'/'false'; NULL when jemalloc
 *                                      cannot tell (mallctl failed)
 *
 * Rows (RW = UPDATE acts, A = action: reads 'false', 'true' acts,
 * 'false' is a no-op, RO = read-only). P = needs profiling (opt.prof):
 * with profiling off every UPDATE of a P row is refused with how to
 * start heapadmind with prof:true.
 *   admin-admin_credentials           RO  user:**** list (masked)
 *   admin-stats_credentials           RO  user:**** list (masked)
 *   admin-mysql_ifaces                RO
 *   admin-version                     RO  heapadmind's version
 *   admin-max_connections, admin-connect_timeout, admin-wait_timeout,
 *   admin-net_write_timeout, admin-max_allowed_packet,
 *   admin-max_output_buffer           RO  the limits, as configured
 *   admin-unix_socket_mode, admin-have_ssl, admin-require_tls,
 *   admin-default_authentication_plugin RO  as configured
 *   jemalloc-prof_active              RW P  prof.active
 *   jemalloc-lg_prof_sample           RW P  prof.lg_sample; written with
 *                                           prof.reset(n), 0..62; NULL when
 *                                           profiling is off
 *   jemalloc-prof_gdump               RW P  prof.gdump
 *   jemalloc-prof_thread_active_init  RW P  prof.thread_active_init
 *   jemalloc-background_thread        RW    background_thread
 *   jemalloc-dirty_decay_ms,          RW    arenas.dirty_decay_ms (the value
 *   jemalloc-muzzy_decay_ms                 new arenas get) and, written, also
 *                                           arena.<i>.*_decay_ms of every
 *                                           initialized arena, so it acts now;
 *                                           -1 (never) .. 31536000000 ms
 *   jemalloc-arena_dirty_decay_ms,    RW    per-arena settings that differ
 *   jemalloc-arena_muzzy_decay_ms           from the above, read as
 *                                           "<arena>:<ms>,..." ('' when
 *                                           none); written as the same list
 *                                           of arena.<i>.*_decay_ms to set.
 *                                           Not saved by SAVE: arena numbers
 *                                           are handed out anew in each run
 *   jemalloc-lg_prof_sample_min       RO    jemalloc_variables.lg_prof_sample_min:
 *                                           jemalloc-lg_prof_sample below it
 *                                           is refused (host memory guard)
 *   jemalloc-stats_max_age_ms         RW    how long scans of stats_memory_*
 *                                           share one epoch refresh, ms
 *   jemalloc-dump_symbolized          RW    dump_now also writes <dump>.sym,
 *                                           jeprof's symbolized profile
 *                                           (vtab/symcopy.h)
 *   jemalloc-dump_retention_count, jemalloc-dump_retention_bytes,
 *   jemalloc-dump_min_free_bytes, jemalloc-dump_interval_s,
 *   jemalloc-dump_resident_bytes      RO    dump housekeeping, as configured
 *                                           (jemalloc_variables; 0 = off)
 *   jemalloc-leak_watch_growth_bytes, jemalloc-leak_watch_window_s,
 *   jemalloc-leak_watch_dump_interval_s, jemalloc-leak_watch_dumps,
 *   jemalloc-leak_watch_lg_prof_sample
 *                                     RO    the leak watch, as configured
 *                                           (jemalloc_variables; 0 = off,
 *                                           -1 = the current rate)
 *   jemalloc-leak_watch_state         RO    what the leak watch is doing, as
 *                                           the engine reports it
 *                                           (ctx->engine_value)
 *   jemalloc-dump_now                 A  P  prof.dump (jemalloc's naming,
 *                                           prof.prefix = datadir/stem),
 *                                           then dump_retention_*
 *   jemalloc-reset_now                A  P  prof.reset at the current rate
 *   jemalloc-purge_now                A     arena.4096.purge (all arenas);
 *                                           the info message says how much
 *                                           was returned
 *   jemalloc-purge_arena_now          A     arena.<i>.purge: an arena index,
 *                                           'all' (or 'true'), or 'false'
 *   jemalloc-prof                     RO  opt.prof ('false' also when
 *                                         jemalloc lacks --enable-prof)
 *   jemalloc-lg_prof_interval         RO  opt.lg_prof_interval (-1 = off)
 *   jemalloc-prof_prefix              RO  prefix dumps use now: what was
 *                                         set through prof.prefix, else
 *                                         opt.prof_prefix
 *   jemalloc-version                  RO  version
 *   jemalloc-prof_accum, jemalloc-prof_final, jemalloc-prof_leak,
 *   jemalloc-prof_leak_error, jemalloc-prof_stats,
 *   jemalloc-prof_sys_thread_name, jemalloc-prof_time_resolution,
 *   jemalloc-prof_recent_alloc_max    RO  opt.<same name>
 *   jemalloc-opt_prof_active, jemalloc-opt_lg_prof_sample,
 *   jemalloc-opt_prof_gdump,
 *   jemalloc-opt_prof_thread_active_init
 *                                     RO  opt.<name>: the start-up value
 *                                         of a setting whose live value
 *                                         is the row without "opt_"
 * Naming rule: an opt.X with no run-time counterpart is jemalloc-X; one
 * with a run-time counterpart is jemalloc-opt_X.
 *
 * UPDATE is all or nothing. xUpdate validates each row (read-only row,
 * value syntax and range, profiling available, dump directory usable)
 * and only stages it; a refused row fails the statement and SQLite rolls
 * the staged rows back (xRollback, or xRollbackTo inside a transaction).
 * xSync applies the staged changes in row order; if one fails there, the
 * settings applied before it are put back (actions already done cannot be
 * undone and the message says which). INSERT and DELETE are refused, as
 * is changing variable_name; an UPDATE whose WHERE matches no row changes
 * nothing.
 *
 * xBestIndex/xFilter plan (idxNum bits):
 *   HA_VTAB_IDX_NAME (1)  `variable_name = ?` (BINARY): argv[0] is the
 *                         name; only that row is read.
 *   0                     full scan.
 *
 * SQLITE_VTAB_DIRECTONLY: an UPDATE dumps, resets or toggles profiling, so
 * it must come from the operator's own statement, never from a trigger or
 * view a schema could hide it in (csv.c's rationale).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "vtab/cursor.h"
#include "vtab/mallctl.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/breakdown.h"
#include "vtab/dumpjob.h"
#include "vtab/symcopy.h"
#include "vtab/value.h"
#include "vtab/vtab_util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

enum gv_kind {
    GV_ADMIN,     /* from the admin layer (ctx->admin_value), read-only */
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
    GV_LG_MIN,    /* ctx->lg_prof_sample_min, read-only */
    GV_STATS_AGE, /* ctx->stats_max_age_ms, read-write */
    GV_DUMP_SYM,  /* ctx->dump_symbolized, read-write */
    GV_KEEP,      /* ctx->je setting (dump housekeeping, leak watch),
                     read-only */
    GV_DECAY,     /* arenas.<kind>_decay_ms and every arena's, read-write */
    GV_ARENA_DECAY, /* per-arena <kind>_decay_ms list, read-write */
    GV_PURGE_ARENA, /* action: arena.<i>.purge, an index or all */
    GV_ENGINE,    /* run-time state from ctx->engine_value, read-only */
    GV_KIND_MAX
};

enum gv_admin {
    GV_ADMIN_NONE,
    GV_ADMIN_CREDENTIALS,
    GV_ADMIN_STATS_CREDENTIALS,
    GV_ADMIN_IFACES,
    GV_ADMIN_VERSION,
    GV_ADMIN_MAX_CONNECTIONS,
    GV_ADMIN_CONNECT_TIMEOUT,
    GV_ADMIN_WAIT_TIMEOUT,
    GV_ADMIN_NET_WRITE_TIMEOUT,
    GV_ADMIN_MAX_ALLOWED_PACKET,
    GV_ADMIN_MAX_OUTPUT_BUFFER,
    GV_ADMIN_MAX_EXECUTION_TIME,
    GV_ADMIN_STATS_SYSTEM_MEMORY,
    GV_ADMIN_SQL_MEMORY_LIMIT,
    GV_ADMIN_MAX_OUTPUT_TOTAL,
    GV_ADMIN_UNIX_SOCKET_MODE,
    GV_ADMIN_HAVE_SSL,
    GV_ADMIN_REQUIRE_TLS,
    GV_ADMIN_DEFAULT_AUTH_PLUGIN,
    GV_ADMIN_MAX
};

#define GV_PROF (1u << 0)        /* writes need opt.prof */
#define GV_ENOENT_FALSE (1u << 1) /* a missing mallctl reads 'false' */

struct gv_row {
    const char *name;     /* variable_name */
    const char *mallctl;  /* source, NULL for admin rows */
    enum gv_kind kind;
    unsigned flags;       /* GV_* flags */
    enum gv_admin admin;  /* GV_ADMIN rows: which setting */
    const char *hint;     /* read-only rows: how to change it instead */
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
#define HINT_OPT                                                        \
    "it is the start-up value; the live setting is the same name "      \
    "without 'opt_'"

static const struct gv_row gv_rows[] = {
    {"admin-admin_credentials", NULL, GV_ADMIN, 0, GV_ADMIN_CREDENTIALS,
     HINT_ADMIN},
    {"admin-stats_credentials", NULL, GV_ADMIN, 0,
     GV_ADMIN_STATS_CREDENTIALS, HINT_ADMIN},
    {"admin-mysql_ifaces", NULL, GV_ADMIN, 0, GV_ADMIN_IFACES, HINT_ADMIN},
    {"admin-version", NULL, GV_ADMIN, 0, GV_ADMIN_VERSION,
     "it is heapadmind's version"},
    {"admin-max_connections", NULL, GV_ADMIN, 0, GV_ADMIN_MAX_CONNECTIONS,
     HINT_ADMIN},
    {"admin-connect_timeout", NULL, GV_ADMIN, 0, GV_ADMIN_CONNECT_TIMEOUT,
     HINT_ADMIN},
    {"admin-wait_timeout", NULL, GV_ADMIN, 0, GV_ADMIN_WAIT_TIMEOUT,
     HINT_ADMIN},
    {"admin-net_write_timeout", NULL, GV_ADMIN, 0,
     GV_ADMIN_NET_WRITE_TIMEOUT, HINT_ADMIN},
    {"admin-max_allowed_packet", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_ALLOWED_PACKET, HINT_ADMIN},
    {"admin-max_output_buffer", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_OUTPUT_BUFFER, HINT_ADMIN},
    {"admin-max_execution_time", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_EXECUTION_TIME, HINT_ADMIN},
    {"admin-stats_system_memory", NULL, GV_ADMIN, 0,
     GV_ADMIN_STATS_SYSTEM_MEMORY, HINT_ADMIN},
    {"admin-sql_memory_limit", NULL, GV_ADMIN, 0, GV_ADMIN_SQL_MEMORY_LIMIT,
     HINT_ADMIN},
    {"admin-max_output_total", NULL, GV_ADMIN, 0, GV_ADMIN_MAX_OUTPUT_TOTAL,
     HINT_ADMIN},
    {"admin-unix_socket_mode", NULL, GV_ADMIN, 0, GV_ADMIN_UNIX_SOCKET_MODE,
     HINT_ADMIN},
    {"admin-have_ssl", NULL, GV_ADMIN, 0, GV_ADMIN_HAVE_SSL, HINT_ADMIN},
    {"admin-require_tls", NULL, GV_ADMIN, 0, GV_ADMIN_REQUIRE_TLS,
     HINT_ADMIN},
    {"admin-default_authentication_plugin", NULL, GV_ADMIN, 0,
     GV_ADMIN_DEFAULT_AUTH_PLUGIN, HINT_ADMIN},

    {"jemalloc-prof_active", "prof.active", GV_BOOL, GV_PROF, 0, NULL},
    {"jemalloc-lg_prof_sample", "prof.lg_sample", GV_LG_SAMPLE, GV_PROF, 0,
     NULL},
    {"jemalloc-prof_gdump", "prof.gdump", GV_BOOL, GV_PROF, 0, NULL},
    {"jemalloc-prof_thread_active_init", "prof.thread_active_init", GV_BOOL,
     GV_PROF, 0, NULL},
    {"jemalloc-background_thread", "background_thread", GV_BOOL, 0, 0, NULL},
    {"jemalloc-dirty_decay_ms", "arenas.dirty_decay_ms", GV_DECAY, 0, 0,
     NULL},
    {"jemalloc-muzzy_decay_ms", "arenas.muzzy_decay_ms", GV_DECAY, 0, 0,
     NULL},
    {"jemalloc-arena_dirty_decay_ms", "arena.<i>.dirty_decay_ms",
     GV_ARENA_DECAY, 0, 0, NULL},
    {"jemalloc-arena_muzzy_decay_ms", "arena.<i>.muzzy_decay_ms",
     GV_ARENA_DECAY, 0, 0, NULL},

    {"jemalloc-lg_prof_sample_min", NULL, GV_LG_MIN, 0, 0,
     "it guards the host's memory and comes from the config file "
     "(jemalloc_variables.lg_prof_sample_min); lower it there on purpose"},
    {"jemalloc-stats_max_age_ms", NULL, GV_STATS_AGE, 0, 0, NULL},
    {"jemalloc-dump_symbolized", NULL, GV_DUMP_SYM, 0, 0, NULL},
    {"jemalloc-dump_retention_count", NULL, GV_KEEP, 0, 0, HINT_KEEP},
    {"jemalloc-dump_retention_bytes", NULL, GV_KEEP, 0, 0, HINT_KEEP},
    {"jemalloc-dump_min_free_bytes", NULL, GV_KEEP, 0, 0, HINT_KEEP},
    {"jemalloc-dump_interval_s", NULL, GV_KEEP, 0, 0, HINT_KEEP},
    {"jemalloc-dump_resident_bytes", NULL, GV_KEEP, 0, 0, HINT_KEEP},
    {"jemalloc-leak_watch_growth_bytes", NULL, GV_KEEP, 0, 0, HINT_WATCH},
    {"jemalloc-leak_watch_window_s", NULL, GV_KEEP, 0, 0, HINT_WATCH},
    {"jemalloc-leak_watch_dump_interval_s", NULL, GV_KEEP, 0, 0,
     HINT_WATCH},
    {"jemalloc-leak_watch_dumps", NULL, GV_KEEP, 0, 0, HINT_WATCH},
    {"jemalloc-leak_watch_lg_prof_sample", NULL, GV_KEEP, 0, 0, HINT_WATCH},
    {"jemalloc-leak_watch_state", NULL, GV_ENGINE, 0, 0,
     "it is what the leak watch is doing; configure the watch in the "
     "config file (jemalloc_variables.leak_watch_*)"},

    {"jemalloc-dump_now", "prof.dump", GV_DUMP, GV_PROF, 0, NULL},
    {"jemalloc-reset_now", "prof.reset", GV_RESET, GV_PROF, 0, NULL},
    {"jemalloc-purge_now", HA_MALLCTL_PURGE_ALL, GV_PURGE, 0, 0, NULL},
    {"jemalloc-purge_arena_now", "arena.<i>.purge", GV_PURGE_ARENA, 0, 0,
     NULL},

    {"jemalloc-prof", "opt.prof", GV_RO_BOOL, GV_ENOENT_FALSE, 0,
     "profiling is chosen when the process starts: MALLOC_CONF=prof:true "
     "(heapadmind's default) or prof:false"},
    {"jemalloc-lg_prof_interval", "opt.lg_prof_interval", GV_RO_SSIZE, 0, 0,
     HINT_STARTUP},
    {"jemalloc-prof_prefix", "prof.prefix", GV_PREFIX, 0, 0,
     "it is <datadir>/<dump_prefix> from the config file"},
    {"jemalloc-version", "version", GV_RO_STR, 0, 0,
     "it is the linked jemalloc's version"},

    {"jemalloc-prof_accum", "opt.prof_accum", GV_RO_BOOL, 0, 0,
     HINT_STARTUP},
    {"jemalloc-prof_final", "opt.prof_final", GV_RO_BOOL, 0, 0,
     HINT_STARTUP},
    {"jemalloc-prof_leak", "opt.prof_leak", GV_RO_BOOL, 0, 0, HINT_STARTUP},
    {"jemalloc-prof_leak_error", "opt.prof_leak_error", GV_RO_BOOL, 0, 0,
     HINT_STARTUP},
    {"jemalloc-prof_stats", "opt.prof_stats", GV_RO_BOOL, 0, 0,
     HINT_STARTUP},
    {"jemalloc-prof_sys_thread_name", "opt.prof_sys_thread_name", GV_RO_BOOL,
     0, 0, HINT_STARTUP},
    {"jemalloc-prof_time_resolution", "opt.prof_time_resolution", GV_RO_STR,
     0, 0, HINT_STARTUP},
    {"jemalloc-prof_recent_alloc_max", "opt.prof_recent_alloc_max",
     GV_RO_SSIZE, 0, 0, HINT_STARTUP},

    {"jemalloc-opt_prof_active", "opt.prof_active", GV_RO_BOOL, 0, 0,
     HINT_OPT},
    {"jemalloc-opt_lg_prof_sample", "opt.lg_prof_sample", GV_RO_SIZE, 0, 0,
     HINT_OPT},
    {"jemalloc-opt_prof_gdump", "opt.prof_gdump", GV_RO_BOOL, 0, 0,
     HINT_OPT},
    {"jemalloc-opt_prof_thread_active_init", "opt.prof_thread_active_init",
     GV_RO_BOOL, 0, 0, HINT_OPT},
};

#define GV_N_ROWS ((int)HA_ARRAY_SIZE(gv_rows))
/* jemalloc takes any decay from -1 (never) to about 2^64 ns; past a year
 * a setting is a mistake, not a plan. */
#define GV_DECAY_MAX 31536000000LL
#define GV_DECAY_ALLOWED                                                  \
    "-1 (never return freed pages), 0 (return them at once) or "          \
    "milliseconds up to 31536000000 (a year); jemalloc's defaults are "   \
    "10000 for dirty and 0 for muzzy pages"
/* Arenas one per-arena list may name. */
#define GV_ARENA_LIST_MAX 1024
#define GV_LG_SAMPLE_MAX 62
#define GV_LG_SAMPLE_ALLOWED                                             \
    "an integer from 0 to 62 (log2 of the mean bytes allocated between " \
    "samples; jemalloc's default 19 = 512 KiB)"

#define GLOBALS_SCHEMA                                        \
    "CREATE TABLE global_variables("                          \
    "variable_name TEXT PRIMARY KEY, " /* 0 GLOBALS_COL_NAME */ \
    "variable_value TEXT"              /* 1 GLOBALS_COL_VALUE */ \
    ")"
#define GLOBALS_COL_NAME 0
#define GLOBALS_COL_VALUE 1

/* Longest value text kept for messages. */
#define GV_TEXT_MAX 128

/* One validated row of an UPDATE, waiting for xSync. */
struct gv_change {
    int row;                 /* index into gv_rows */
    long long value;         /* bool (0/1) or lg_prof_sample */
    char text[GV_TEXT_MAX];  /* the value as written, for messages */

    bool applied;            /* xSync did it */
    bool old_bool;           /* GV_BOOL: value before, for undo */
    size_t old_lg;           /* GV_LG_SAMPLE: rate before, for undo */
    struct ha_mallctl_decay_undo undo; /* GV_DECAY, GV_ARENA_DECAY: the
                                          settings before (freed with the
                                          change: gv_drop) */
};

typedef struct globals_vtab globals_vtab;
struct globals_vtab {
    sqlite3_vtab base;             /* Base class - must be first */
    struct ha_vtab_conn *conn;     /* ctx (ops, admin rows) and the info slot */

    struct gv_change *changes;     /* staged, in xUpdate order */
    int n_changes;
    int cap_changes;

    int *marks;                    /* n_changes at each savepoint level */
    int n_marks;
    int cap_marks;
};

typedef struct globals_cursor globals_cursor;
struct globals_cursor {
    struct ha_cursor rc;       /* rows [row, end) of gv_rows; must be
                                * first */
};

/* snprintf for messages that may be cut at len: info and error text. */
static void set_text(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------
 * Reading values
 * ------------------------------------------------------------------ */

static const struct ha_mallctl_ops *
gv_ops(globals_vtab *vt)
{
    return vt->conn->ctx->ops;
}

/* "dirty" or "muzzy": which decay a GV_DECAY / GV_ARENA_DECAY row is. */
static const char *
gv_decay_kind(const struct gv_row *r)
{
    return strstr(r->name, "muzzy") != NULL ? "muzzy" : "dirty";
}

/* The config value behind a GV_KEEP row. */
static bool
gv_keep_value(const struct ha_jemalloc_config *je, const char *name,
              long long *out)
{
    static const struct {
        const char *name;
        size_t offset;
    } keep[] = {
#define KEEP(n) {"jemalloc-" #n, offsetof(struct ha_jemalloc_config, n)}
        KEEP(dump_retention_count),
        KEEP(dump_retention_bytes),
        KEEP(dump_min_free_bytes),
        KEEP(dump_interval_s),
        KEEP(dump_resident_bytes),
        KEEP(leak_watch_growth_bytes),
        KEEP(leak_watch_window_s),
        KEEP(leak_watch_dump_interval_s),
        KEEP(leak_watch_dumps),
#undef KEEP
    };

    if (je == NULL)
        return false;
    if (strcmp(name, "jemalloc-leak_watch_lg_prof_sample") == 0) {
        *out = je->leak_watch_lg_prof_sample == HA_UNSET
                   ? -1
                   : je->leak_watch_lg_prof_sample;
        return true;
    }
    for (size_t i = 0; i < HA_ARRAY_SIZE(keep); i++)
        if (strcmp(name, keep[i].name) == 0) {
            *out = *(const long long *)((const char *)je + keep[i].offset);
            return true;
        }
    return false;
}

/* Whether arena i is initialized (in use). */
static bool
gv_arena_in_use(const struct ha_mallctl_ops *ops, unsigned i)
{
    char name[64];
    bool init = false;

    snprintf(name, sizeof(name), "arena.%u.initialized", i);
    return ha_mallctl_read_bool(ops, name, &init) == 0 && init;
}

/* "<arena>:<ms>,..." for the arenas whose <kind>_decay_ms differs from
 * arenas.<kind>_decay_ms; "" when none. Returns 0 or an errno value. */
static int
gv_read_arena_decay(const struct ha_mallctl_ops *ops, const char *kind,
                    char *buf, size_t len)
{
    char name[64];
    unsigned narenas = 0;
    ssize_t def = 0, v;
    size_t used = 0;
    int rc;

    buf[0] = '\0';
    /* The arena list and their states are as of the last epoch. */
    (void)ha_mallctl_epoch(ops);
    snprintf(name, sizeof(name), "arenas.%s_decay_ms", kind);
    if ((rc = ha_mallctl_read_ssize(ops, name, &def)) != 0 ||
        (rc = ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas)) !=
            0)
        return rc;
    for (unsigned i = 0; i < narenas && used + 32 < len; i++) {
        snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", i, kind);
        if (!gv_arena_in_use(ops, i) ||
            ha_mallctl_read_ssize(ops, name, &v) != 0 || v == def)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%u:%zd",
                                 used ? "," : "", i, v);
    }
    return 0;
}

/* Current value of r as text into buf. Returns false for NULL. */
static bool
gv_read(globals_vtab *vt, const struct gv_row *r, char *buf, size_t len)
{
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    const struct ha_vtab_ctx *ctx = vt->conn->ctx;
    int rc = 0;

    buf[0] = '\0';
    switch (r->kind) {
    case GV_ADMIN:
        if (r->admin == GV_ADMIN_VERSION) {
            ha_strlcpy(buf, PACKAGE_VERSION, len);
            return true;
        }
        /* The admin layer owns the config and renders its rows. */
        if (ctx->admin_value == NULL)
            return false;
        return ctx->admin_value(ctx->admin_arg, r->name, buf, len);
    case GV_BOOL:
    case GV_RO_BOOL: {
        bool b = false;

        rc = ha_mallctl_read_bool(ops, r->mallctl, &b);
        if (rc == ENOENT && (r->flags & GV_ENOENT_FALSE))
            rc = 0;
        ha_strlcpy(buf, ha_value_bool_str(b), len);
        break;
    }
    case GV_LG_SAMPLE: {
        size_t v = 0;

        /* prof.lg_sample reads 0 with profiling off; that would claim
         * every byte is sampled. */
        if (!ha_mallctl_prof_enabled(ops))
            return false;
        rc = ha_mallctl_read_size(ops, r->mallctl, &v);
        snprintf(buf, len, "%zu", v);
        break;
    }
    case GV_DUMP:
    case GV_RESET:
    case GV_PURGE:
        ha_strlcpy(buf, "false", len);
        break;
    case GV_RO_SIZE: {
        size_t v = 0;

        rc = ha_mallctl_read_size(ops, r->mallctl, &v);
        snprintf(buf, len, "%zu", v);
        break;
    }
    case GV_RO_SSIZE: {
        ssize_t v = 0;

        rc = ha_mallctl_read_ssize(ops, r->mallctl, &v);
        snprintf(buf, len, "%zd", v);
        break;
    }
    case GV_RO_STR: {
        const char *s = NULL;

        rc = ha_mallctl_read_str(ops, r->mallctl, &s);
        if (rc == 0)
            ha_strlcpy(buf, s, len);
        break;
    }
    case GV_PREFIX:
        rc = ha_mallctl_prof_prefix(ops, buf, len);
        break;
    case GV_LG_MIN:
        snprintf(buf, len, "%u", ctx->lg_prof_sample_min);
        break;
    case GV_STATS_AGE:
        snprintf(buf, len, "%u", ctx->stats_max_age_ms);
        break;
    case GV_DUMP_SYM:
        ha_strlcpy(buf, ctx->dump_symbolized ? "true" : "false", len);
        break;
    case GV_KEEP: {
        long long v;

        if (!gv_keep_value(ctx->je, r->name, &v)) {
            rc = -1;
            break;
        }
        snprintf(buf, len, "%lld", v);
        break;
    }
    case GV_DECAY: {
        ssize_t v = 0;

        rc = ha_mallctl_read_ssize(ops, r->mallctl, &v);
        snprintf(buf, len, "%zd", v);
        break;
    }
    case GV_ARENA_DECAY:
        rc = gv_read_arena_decay(ops, gv_decay_kind(r), buf, len);
        break;
    case GV_PURGE_ARENA:
        ha_strlcpy(buf, "false", len);
        break;
    case GV_ENGINE:
        if (ctx->engine_value == NULL)
            return false;
        return ctx->engine_value(ctx->engine_arg, r->name, buf, len);
    case GV_KIND_MAX:
        rc = -1;
        break;
    }
    return rc == 0;
}

static bool
gv_writable(const struct gv_row *r)
{
    return r->kind == GV_BOOL || r->kind == GV_LG_SAMPLE ||
           r->kind == GV_DUMP || r->kind == GV_RESET || r->kind == GV_PURGE ||
           r->kind == GV_STATS_AGE || r->kind == GV_DUMP_SYM ||
           r->kind == GV_DECAY || r->kind == GV_ARENA_DECAY ||
           r->kind == GV_PURGE_ARENA;
}

static bool
gv_is_action(const struct gv_row *r)
{
    return r->kind == GV_DUMP || r->kind == GV_RESET ||
           r->kind == GV_PURGE || r->kind == GV_PURGE_ARENA;
}

/* "a, b, c": the writable variables, for messages. */
static void
gv_writable_list(char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < GV_N_ROWS; i++) {
        int n;

        if (!gv_writable(&gv_rows[i]))
            continue;
        n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                     gv_rows[i].name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

/* ------------------------------------------------------------------
 * Validation and staging (xUpdate)
 * ------------------------------------------------------------------ */

static int
gv_stage(globals_vtab *vt, int row, long long value, const char *text)
{
    struct gv_change *c;

    if (vt->n_changes == vt->cap_changes) {
        int cap = vt->cap_changes ? vt->cap_changes * 2 : 8;
        struct gv_change *p =
            sqlite3_realloc64(vt->changes, (sqlite3_uint64)cap * sizeof(*p));

        if (p == NULL)
            return SQLITE_NOMEM;
        vt->changes = p;
        vt->cap_changes = cap;
    }
    c = &vt->changes[vt->n_changes++];
    memset(c, 0, sizeof(*c));
    c->row = row;
    c->value = value;
    ha_strlcpy(c->text, text, sizeof(c->text));
    return SQLITE_OK;
}

/* The operator's message for a mallctl errno on row r. */
static int
gv_mallctl_error(globals_vtab *vt, const struct gv_row *r, int errnum,
                 const char *text, const char *allowed)
{
    char err[1024];
    struct ha_mallctl_failure f = {
        .errnum = errnum,
        .mallctl = r->mallctl,
        .variable = r->name,
        .value = text,
        .allowed = allowed,
        .prof_built = ha_mallctl_prof_built(gv_ops(vt)),
    };

    ha_mallctl_errmsg(&f, err, sizeof(err));
    return ha_vtab_set_errmsg(&vt->base, "%s", err);
}

/* Refuses a dump_now that cannot succeed before anything changes. */
static int
gv_check_dump_dir(globals_vtab *vt, const struct gv_row *r)
{
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    struct ha_mallctl_dirstate st;
    char prefix[PATH_MAX], reason[PATH_MAX + 128], err[PATH_MAX + 512];

    if (ha_mallctl_prof_prefix(ops, prefix, sizeof(prefix)) != 0 ||
        prefix[0] == '\0') {
        ha_mallctl_dump_errmsg(EFAULT, r->name, NULL, "",
                               ha_mallctl_prof_built(ops), NULL, NULL, false,
                               err, sizeof(err));
        return ha_vtab_set_errmsg(&vt->base, "%s", err);
    }
    ha_mallctl_dir_probe(prefix, &st);
    if (!ha_mallctl_dir_problem(&st, reason, sizeof(reason)))
        return SQLITE_OK;
    ha_mallctl_dump_errmsg(EFAULT, r->name, NULL, prefix,
                           ha_mallctl_prof_built(ops), &st, NULL, false, err,
                           sizeof(err));
    return ha_vtab_set_errmsg(&vt->base, "%s", err);
}

/* A per-arena decay list: every arena named must be in use. */
static int
gv_validate_arena_decay(globals_vtab *vt, int idx, const char *text)
{
    const struct gv_row *r = &gv_rows[idx];
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    struct ha_value_arena_pair *pairs;
    char why[256];
    unsigned narenas = 0;
    size_t n = 0;
    int rc = SQLITE_OK;

    (void)ha_mallctl_epoch(ops); /* arenas created since the last one */
    if (ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas) != 0)
        return gv_mallctl_error(vt, r, ENOENT, text ? text : "NULL", NULL);
    pairs = sqlite3_malloc64(GV_ARENA_LIST_MAX * sizeof(*pairs));
    if (pairs == NULL)
        return SQLITE_NOMEM;
    if (ha_value_parse_arena_list(text, narenas, -1, GV_DECAY_MAX, pairs,
                                  GV_ARENA_LIST_MAX, &n, why,
                                  sizeof(why)) != 0) {
        rc = ha_vtab_set_errmsg(
            &vt->base,
            "%s = '%s': %s; allowed: '<arena>:<ms>[,<arena>:<ms>...]', "
            "each ms %s",
            r->name, text != NULL ? text : "NULL", why, GV_DECAY_ALLOWED);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (!gv_arena_in_use(ops, pairs[i].arena)) {
            rc = ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': arena %u is not in use (jemalloc creates arenas "
                "as threads need them); stats_jemalloc_arenas lists those "
                "in use",
                r->name, text, pairs[i].arena);
            goto out;
        }
    rc = gv_stage(vt, idx, (long long)n, text);
out:
    sqlite3_free(pairs);
    return rc;
}

/* purge_arena_now: an arena index, 'all' or 'true' (-1), 'false'. */
static int
gv_validate_purge_arena(globals_vtab *vt, int idx, const char *text)
{
    const struct gv_row *r = &gv_rows[idx];
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    const char *shown = text != NULL ? text : "NULL";
    unsigned narenas = 0;
    long long i;
    bool b;

    if (text != NULL && ha_value_parse_int(text, 0, HA_MALLCTL_ARENAS_ALL - 1,
                                           &i) == 0) {
        (void)ha_mallctl_epoch(ops); /* arenas created since the last one */
        (void)ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas);
        if (i >= (long long)narenas || !gv_arena_in_use(ops, (unsigned)i))
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': arena %lld is not in use (arenas.narenas = %u; "
                "stats_jemalloc_arenas lists those in use); allowed: an "
                "arena in use, 'all', or 'false' to do nothing",
                r->name, shown, i, narenas);
        return gv_stage(vt, idx, i, text);
    }
    if (text != NULL && (ha_str_ieq(text, "all") ||
                         (ha_value_parse_bool(text, &b) == 0 && b)))
        return gv_stage(vt, idx, -1, text);
    if (text != NULL && ha_value_parse_bool(text, &b) == 0 && !b)
        return SQLITE_OK;
    return ha_vtab_set_errmsg(&vt->base,
                              "%s = '%s': invalid value; allowed: an arena "
                              "index (stats_jemalloc_arenas.arena), 'all' "
                              "(or 'true'), or 'false' to do nothing",
                              r->name, shown);
}

/* Validates `UPDATE ... SET variable_value = text` for row index idx and
 * stages it. Returns SQLITE_OK, or SQLITE_ERROR with zErrMsg naming the
 * variable, the value and what is allowed. */
static int
gv_validate(globals_vtab *vt, int idx, const char *text)
{
    const struct gv_row *r = &gv_rows[idx];
    const char *shown = text != NULL ? text : "NULL";
    long long lg;
    bool b;

    if (!gv_writable(r)) {
        char list[512];

        gv_writable_list(list, sizeof(list));
        return ha_vtab_set_errmsg(
            &vt->base,
            "%s is read-only (refused value '%s'): %s; writable variables: "
            "%s",
            r->name, shown, r->hint, list);
    }
    if ((r->flags & GV_PROF) && !ha_mallctl_prof_enabled(gv_ops(vt)))
        return gv_mallctl_error(vt, r, ENOENT, shown, NULL);

    if (r->kind == GV_LG_SAMPLE) {
        unsigned floor = vt->conn->ctx->lg_prof_sample_min;
        char rate[32];

        if (ha_value_parse_int(text, 0, GV_LG_SAMPLE_MAX, &lg) != 0)
            return ha_vtab_set_errmsg(&vt->base,
                                      "%s = '%s': invalid value; allowed: %s",
                                      r->name, shown, GV_LG_SAMPLE_ALLOWED);
        if (lg < (long long)floor) {
            ha_value_format_lg_bytes((unsigned)lg, rate, sizeof(rate));
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s' refused: below the floor "
                "jemalloc-lg_prof_sample_min = %u. A sample every %s would "
                "cost the host memory: jemalloc promotes each sampled small "
                "allocation to a 16 KiB extent (measured in redis: 2.8x "
                "resident memory at 10). Allowed: %u..62; to go lower, "
                "lower jemalloc_variables.lg_prof_sample_min in the config",
                r->name, shown, floor, rate, floor);
        }
        return gv_stage(vt, idx, lg, text);
    }
    if (r->kind == GV_DECAY) {
        if (ha_value_parse_int(text, -1, GV_DECAY_MAX, &lg) != 0)
            return ha_vtab_set_errmsg(&vt->base,
                                      "%s = '%s': invalid value; allowed: %s",
                                      r->name, shown, GV_DECAY_ALLOWED);
        return gv_stage(vt, idx, lg, text);
    }
    if (r->kind == GV_ARENA_DECAY)
        return gv_validate_arena_decay(vt, idx, text);
    if (r->kind == GV_PURGE_ARENA)
        return gv_validate_purge_arena(vt, idx, text);
    if (r->kind == GV_STATS_AGE) {
        if (ha_value_parse_int(text, 0, 3600000, &lg) != 0)
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': invalid value; allowed: milliseconds from 0 "
                "(refresh jemalloc's statistics on every scan) to 3600000",
                r->name, shown);
        return gv_stage(vt, idx, lg, text);
    }
    if (ha_value_parse_bool(text, &b) != 0) {
        if (gv_is_action(r))
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': invalid value; allowed: 'true' to run it now, "
                "'false' to do nothing (also 1/0, on/off, any case)",
                r->name, shown);
        return ha_vtab_set_errmsg(&vt->base,
                                  "%s = '%s': invalid value; allowed: %s",
                                  r->name, shown, HA_VALUE_BOOL_ALLOWED);
    }
    if (gv_is_action(r) && !b)
        return SQLITE_OK; /* 'false' on an action does nothing */
    if (r->kind == GV_DUMP) {
        int rc = gv_check_dump_dir(vt, r);

        if (rc != SQLITE_OK)
            return rc;
    }
    return gv_stage(vt, idx, b, text);
}

/* ------------------------------------------------------------------
 * Applying (xSync)
 * ------------------------------------------------------------------ */

static void
set_text(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Path of the running executable for the jeprof hint. */
static void
self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);

    if (n <= 0) {
        ha_strlcpy(buf, "heapadmind", len);
        return;
    }
    buf[n] = '\0';
}

/* arena.<i>.purge (HA_MALLCTL_ARENAS_ALL: every arena), with what it
 * returned in info: the dirty and muzzy pages before and after, read
 * around it from a fresh epoch. Returns 0 or mallctl's errno. */
static int
gv_purge(globals_vtab *vt, unsigned arena, char *info, size_t infolen)
{
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    char name[64], ctl[64], who[32];
    size_t before = 0, after = 0, page = 0, m;
    bool counted;
    int rc;

    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", arena);
    (void)ha_mallctl_epoch(ops);
    counted = ha_mallctl_read_size(ops, "arenas.page", &page) == 0 &&
              ha_mallctl_read_size(ops, name, &before) == 0;
    snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", arena);
    if (counted && ha_mallctl_read_size(ops, name, &m) == 0)
        before += m;
    snprintf(ctl, sizeof(ctl), "arena.%u.purge", arena);
    if ((rc = ha_mallctl_action(ops, ctl)) != 0)
        return rc;
    (void)ha_mallctl_epoch(ops);
    vt->conn->ctx->stats_epoch_ms = 0; /* the next scan refreshes */
    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", arena);
    counted = counted && ha_mallctl_read_size(ops, name, &after) == 0;
    snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", arena);
    if (counted && ha_mallctl_read_size(ops, name, &m) == 0)
        after += m;
    if (arena == HA_MALLCTL_ARENAS_ALL)
        ha_strlcpy(who, "all arenas", sizeof(who));
    else
        snprintf(who, sizeof(who), "arena %u", arena);
    if (counted) {
        char bytes[32];

        ha_breakdown_format_bytes(
            before > after ? (int64_t)((before - after) * page) : 0, bytes,
            sizeof(bytes));
        set_text(info, infolen,
                 "%s purged (%s): %s of unused pages returned to the "
                 "system (dirty and muzzy pages %zu -> %zu)",
                 who, ctl, bytes, before, after);
    } else {
        set_text(info, infolen,
                 "unused dirty pages of %s were returned to the system (%s)",
                 who, ctl);
    }
    return 0;
}

/* Sets the arenas a per-arena decay list names, recording what they had
 * in c->undo. Returns 0 or the first errno value. */
static int
gv_apply_arena_decay(globals_vtab *vt, struct gv_change *c, char *info,
                     size_t infolen)
{
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    const struct gv_row *r = &gv_rows[c->row];
    const char *kind = gv_decay_kind(r);
    struct ha_value_arena_pair *pairs;
    char name[64], why[256];
    unsigned narenas = 0;
    size_t n = 0, used = 0;
    int rc = 0;

    memset(&c->undo, 0, sizeof(c->undo));
    c->undo.def = HA_MALLCTL_DECAY_NONE;
    if ((rc = ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas)) !=
        0)
        return rc;
    pairs = malloc(GV_ARENA_LIST_MAX * sizeof(*pairs));
    c->undo.arena = malloc((narenas ? narenas : 1) * sizeof(ssize_t));
    if (pairs == NULL || c->undo.arena == NULL) {
        free(pairs);
        ha_mallctl_decay_undo_free(&c->undo);
        return ENOMEM;
    }
    c->undo.n = narenas;
    for (unsigned i = 0; i < narenas; i++)
        c->undo.arena[i] = HA_MALLCTL_DECAY_NONE;
    if (ha_value_parse_arena_list(c->text, narenas, -1, GV_DECAY_MAX, pairs,
                                  GV_ARENA_LIST_MAX, &n, why,
                                  sizeof(why)) != 0) {
        rc = EINVAL;
        goto out;
    }
    set_text(info, infolen, "%s:", r->name);
    used = strlen(info);
    for (size_t i = 0; i < n; i++) {
        ssize_t old = 0;

        snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", pairs[i].arena,
                 kind);
        rc = ha_mallctl_write_ssize(ops, name, (ssize_t)pairs[i].value, &old);
        if (rc != 0)
            break;
        c->undo.arena[pairs[i].arena] = old;
        if (used + 1 < infolen) {
            set_text(info + used, infolen - used, "%s arena %u %zd -> %lld",
                     i ? "," : "", pairs[i].arena, old, pairs[i].value);
            used = strlen(info);
        }
    }
    if (n == 0)
        set_text(info, infolen, "%s: no arena listed, nothing changed",
                 r->name);
out:
    free(pairs);
    if (rc != 0) {
        (void)ha_mallctl_restore_decay(ops, kind, &c->undo);
        ha_mallctl_decay_undo_free(&c->undo);
    }
    return rc;
}

/* The statement stopped waiting (KILL, max_execution_time, shutdown):
 * the dump still completes, and says where it went. */
static void
gv_dump_discard(void *arg)
{
    struct ha_dump_job *j = arg;

    if (j->rc == 0 && j->file[0] != '\0')
        ha_log_notice("%s: heap profile written to %s after the statement "
                      "that asked for it stopped waiting",
                      j->variable, j->file);
    free(j);
}

/* Writes a heap dump for variable off the loop; file receives its path.
 * Returns 0, or -1 with the reason in err. */
static int
gv_dump(globals_vtab *vt, const char *variable, char *file, size_t filelen,
        char *err, size_t errlen)
{
    const struct ha_jemalloc_config *je = vt->conn->ctx->je;
    struct ha_dump_job *j = calloc(1, sizeof(*j));
    int rc;

    if (j == NULL) {
        set_text(err, errlen, "%s: out of memory", variable);
        return -1;
    }
    /* The dump, its build-ids and retention on the worker (dumpjob.h);
     * no free-space floor: an operator's dump is never skipped. */
    j->ops = gv_ops(vt);
    j->variable = variable;
    j->dump = true;
    j->rc = -1;
    if (je != NULL) {
        j->retain = true;
        j->retention_count = je->dump_retention_count;
        j->retention_bytes = je->dump_retention_bytes;
    }
    /* On -1 the job belongs to gv_dump_discard. */
    if (ha_task_offload_to(vt->conn->ctx->dump_worker, ha_dump_job_run,
                           gv_dump_discard, j) != 0) {
        set_text(err, errlen,
                 "%s: the statement stopped waiting (KILL, "
                 "max_execution_time or shutdown); the dump goes on and "
                 "its file will be in stats_heap_dumps",
                 variable);
        return -1;
    }
    rc = j->rc;
    if (rc == 0)
        ha_strlcpy(file, j->file, filelen);
    else
        set_text(err, errlen, "%s", j->err);
    free(j);
    return rc;
}

/* Applies c. Returns 0 with an info message (maybe "") in info, or -1
 * with the reason in err. */
static int
gv_apply(globals_vtab *vt, struct gv_change *c, char *info, size_t infolen,
         char *err, size_t errlen)
{
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    const struct gv_row *r = &gv_rows[c->row];
    struct ha_mallctl_failure f = {
        .mallctl = r->mallctl,
        .variable = r->name,
        .value = c->text,
        .prof_built = ha_mallctl_prof_built(ops),
    };
    char file[PATH_MAX], exe[PATH_MAX], rate[32];
    struct stat sb;
    size_t lg = 0;

    info[0] = '\0';
    switch (r->kind) {
    case GV_BOOL:
        f.allowed = HA_VALUE_BOOL_ALLOWED;
        f.errnum = ha_mallctl_write_bool(ops, r->mallctl, c->value != 0,
                                         &c->old_bool);
        break;
    case GV_LG_SAMPLE:
        f.allowed = GV_LG_SAMPLE_ALLOWED;
        f.errnum = ha_mallctl_read_size(ops, "prof.lg_sample", &lg);
        if (f.errnum != 0)
            break;
        c->old_lg = lg;
        ha_value_format_lg_bytes((unsigned)c->value, rate, sizeof(rate));
        if (lg == (size_t)c->value) {
            set_text(info, infolen,
                     "%s is already %lld (a sample every %s allocated on "
                     "average): nothing reset, the samples are kept",
                     r->name, c->value, rate);
            return 0;
        }
        f.mallctl = "prof.reset";
        f.errnum = ha_mallctl_write_size(ops, "prof.reset", (size_t)c->value);
        if (f.errnum == 0)
            set_text(info, infolen,
                     "%s set to %lld (a sample every %s allocated on "
                     "average); prof.reset discarded the heap profile "
                     "samples collected so far",
                     r->name, c->value, rate);
        break;
    case GV_DUMP:
        if (gv_dump(vt, r->name, file, sizeof(file), err, errlen) != 0)
            return -1;
        self_exe(exe, sizeof(exe));
        if (stat(file, &sb) == 0)
            set_text(info, infolen,
                     "heap profile written to %s (%lld bytes); read it "
                     "with: jeprof --text %s %s",
                     file, (long long)sb.st_size, exe, file);
        else
            set_text(info, infolen,
                     "heap profile written to %s; read it with: jeprof "
                     "--text %s %s",
                     file, exe, file);
        /* The portable copy: a failure leaves the dump a dump. */
        if (vt->conn->ctx->dump_symbolized && file[0] == '/') {
            char sym[PATH_MAX + 8], why[512];
            size_t at = strlen(info);

            if (ha_symcopy_write(vt->conn->ctx, file, sym, sizeof(sym), why,
                                 sizeof(why)) == 0)
                snprintf(info + at, infolen - at,
                         "; symbolized copy %.400s (jeprof --text %.400s, "
                         "no binary needed)",
                         sym, sym);
            else {
                ha_log_warn("%s: no symbolized copy: %s", file, why);
                snprintf(info + at, infolen - at,
                         "; the symbolized copy was not written: %.400s",
                         why);
            }
        }
        c->applied = true;
        return 0;
    case GV_RESET:
        f.errnum = ha_mallctl_action(ops, "prof.reset");
        if (f.errnum == 0 &&
            ha_mallctl_read_size(ops, "prof.lg_sample", &lg) == 0)
            set_text(info, infolen,
                     "prof.reset discarded the heap profile samples "
                     "collected so far; jemalloc-lg_prof_sample stays %zu",
                     lg);
        else if (f.errnum == 0)
            set_text(info, infolen,
                     "prof.reset discarded the heap profile samples "
                     "collected so far");
        break;
    case GV_DUMP_SYM:
        c->old_bool = vt->conn->ctx->dump_symbolized;
        vt->conn->ctx->dump_symbolized = c->value != 0;
        set_text(info, infolen,
                 c->value != 0
                     ? "%s set to true: dump_now also writes <dump>.sym, "
                       "which jeprof --text reads with no binary"
                     : "%s set to false: dump_now writes the dump alone",
                 r->name);
        break;
    case GV_STATS_AGE:
        c->old_lg = vt->conn->ctx->stats_max_age_ms;
        vt->conn->ctx->stats_max_age_ms = (unsigned)c->value;
        set_text(info, infolen,
                 c->value == 0
                     ? "%s set to %lld: every scan refreshes jemalloc's "
                       "statistics"
                     : "%s set to %lld: scans share one refresh of "
                       "jemalloc's statistics for up to that many ms "
                       "(stats_memory_jemalloc.stats_age_ms shows the age)",
                 r->name, c->value);
        break;
    case GV_PURGE:
        f.errnum = gv_purge(vt, HA_MALLCTL_ARENAS_ALL, info, infolen);
        break;
    case GV_PURGE_ARENA:
        f.errnum = gv_purge(vt,
                            c->value < 0 ? HA_MALLCTL_ARENAS_ALL
                                         : (unsigned)c->value,
                            info, infolen);
        break;
    case GV_DECAY: {
        char was[32];
        ssize_t old = 0;

        (void)ha_mallctl_read_ssize(ops, r->mallctl, &old);
        f.allowed = GV_DECAY_ALLOWED;
        f.errnum = ha_mallctl_set_decay(ops, gv_decay_kind(r),
                                        (ssize_t)c->value, &c->undo);
        if (f.errnum != 0) {
            (void)ha_mallctl_restore_decay(ops, gv_decay_kind(r), &c->undo);
            ha_mallctl_decay_undo_free(&c->undo);
            break;
        }
        snprintf(was, sizeof(was), "%zd", old);
        set_text(info, infolen,
                 "%s set to %lld (was %s) in every arena in use and for new "
                 "ones: %s",
                 r->name, c->value, was,
                 c->value < 0 ? "freed pages are kept until purged"
                 : c->value == 0
                     ? "freed pages go back to the system at once"
                     : "freed pages go back to the system over that many "
                       "ms");
        break;
    }
    case GV_ARENA_DECAY:
        f.allowed = GV_DECAY_ALLOWED;
        f.errnum = gv_apply_arena_decay(vt, c, info, infolen);
        break;
    default:
        f.errnum = EPERM;
        break;
    }
    if (f.errnum != 0) {
        ha_mallctl_errmsg(&f, err, errlen);
        return -1;
    }
    c->applied = true;
    return 0;
}

/* Puts back the settings of changes [0, n) that were applied, newest
 * first. Appends "undone: ..." / "already done: ..." to report. */
static void
gv_undo(globals_vtab *vt, int n, char *report, size_t len)
{
    const struct ha_mallctl_ops *ops = gv_ops(vt);
    char undone[512] = "", done[512] = "", failed[512] = "";

    for (int i = n - 1; i >= 0; i--) {
        struct gv_change *c = &vt->changes[i];
        const struct gv_row *r = &gv_rows[c->row];
        char *list;
        int rc = 0;

        if (!c->applied)
            continue;
        if (r->kind == GV_BOOL)
            rc = ha_mallctl_write_bool(ops, r->mallctl, c->old_bool, NULL);
        else if (r->kind == GV_LG_SAMPLE && c->old_lg != (size_t)c->value)
            rc = ha_mallctl_write_size(ops, "prof.reset", c->old_lg);
        else if (r->kind == GV_STATS_AGE)
            vt->conn->ctx->stats_max_age_ms = (unsigned)c->old_lg;
        else if (r->kind == GV_DUMP_SYM)
            vt->conn->ctx->dump_symbolized = c->old_bool;
        else if (r->kind == GV_DECAY || r->kind == GV_ARENA_DECAY)
            rc = ha_mallctl_restore_decay(ops, gv_decay_kind(r), &c->undo);
        list = !gv_is_action(r) ? (rc == 0 ? undone : failed) : done;
        if (list[0] != '\0')
            strncat(list, ", ", 511 - strlen(list));
        strncat(list, r->name, 511 - strlen(list));
    }
    report[0] = '\0';
    if (undone[0] == '\0' && done[0] == '\0' && failed[0] == '\0') {
        snprintf(report, len, "; nothing was changed");
        return;
    }
    if (undone[0] != '\0')
        set_text(report + strlen(report), len - strlen(report),
                 "; put back: %s", undone);
    if (failed[0] != '\0')
        set_text(report + strlen(report), len - strlen(report),
                 "; could not put back: %s", failed);
    if (done[0] != '\0')
        set_text(report + strlen(report), len - strlen(report),
                 "; already done and not undoable: %s", done);
}

/* Forgets the staged changes [from, n_changes), freeing what they own. */
static void
gv_drop(globals_vtab *vt, int from)
{
    for (int i = from; i < vt->n_changes; i++)
        ha_mallctl_decay_undo_free(&vt->changes[i].undo);
    if (from < vt->n_changes)
        vt->n_changes = from;
}

static void
gv_clear(globals_vtab *vt)
{
    gv_drop(vt, 0);
    vt->n_marks = 0;
}

/* ------------------------------------------------------------------
 * Virtual table methods
 * ------------------------------------------------------------------ */

/* Constructor for globals_vtab objects. aux is the connection's struct
 * ha_vtab_conn. */
static int
globals_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                sqlite3_vtab **ppVtab, char **pzErr)
{
    globals_vtab *vt;
    int rc;

    (void)argc;
    (void)argv;
    rc = sqlite3_declare_vtab(db, GLOBALS_SCHEMA);
    if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        return rc;
    }
    sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
    vt = sqlite3_malloc(sizeof(*vt));
    if (vt == NULL)
        return SQLITE_NOMEM;
    memset(vt, 0, sizeof(*vt));
    vt->conn = aux;
    *ppVtab = &vt->base;
    return SQLITE_OK;
}

static int
globals_disconnect(sqlite3_vtab *vtab)
{
    globals_vtab *vt = (globals_vtab *)vtab;

    gv_drop(vt, 0);
    sqlite3_free(vt->changes);
    sqlite3_free(vt->marks);
    sqlite3_free(vt);
    return SQLITE_OK;
}

static int
globals_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor)
{
    (void)vtab;
    return ha_cursor_open(sizeof(globals_cursor), ppCursor);
}

static int
globals_column(sqlite3_vtab_cursor *cursor, sqlite3_context *ctx, int col)
{
    globals_cursor *cur = (globals_cursor *)cursor;
    globals_vtab *vt = (globals_vtab *)cursor->pVtab;
    const struct gv_row *r = &gv_rows[cur->rc.row];
    char buf[PATH_MAX];

    if (col == GLOBALS_COL_NAME) {
        sqlite3_result_text(ctx, r->name, -1, SQLITE_STATIC);
        return SQLITE_OK;
    }
    if (gv_read(vt, r, buf, sizeof(buf)))
        sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
    else
        sqlite3_result_null(ctx);
    return SQLITE_OK;
}

/* Rewinds the cursor to every row, or to the one row named by argv[0]
 * when idxNum has HA_VTAB_IDX_NAME. Values are read in xColumn. */
static int
globals_filter(sqlite3_vtab_cursor *cursor, int idxNum, const char *idxStr,
               int argc, sqlite3_value **argv)
{
    globals_cursor *cur = (globals_cursor *)cursor;

    (void)idxStr;
    ha_cursor_rewind(&cur->rc, 0, (size_t)GV_N_ROWS);
    if ((idxNum & HA_VTAB_IDX_NAME) && argc >= 1) {
        const char *name = (const char *)sqlite3_value_text(argv[0]);

        ha_cursor_rewind(&cur->rc, 0, 0);
        for (int i = 0; name != NULL && i < GV_N_ROWS; i++) {
            if (strcmp(gv_rows[i].name, name) == 0) {
                ha_cursor_rewind(&cur->rc, (size_t)i, (size_t)i + 1);
                break;
            }
        }
    }
    return SQLITE_OK;
}

static int
globals_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    return ha_vtab_best_index_name(info, GLOBALS_COL_NAME, GV_N_ROWS);
}

/* DELETE (argc 1), INSERT (argv[0] NULL) and renames are refused; an
 * UPDATE of the value is validated and staged for xSync. */
static int
globals_update(sqlite3_vtab *vtab, int argc, sqlite3_value **argv,
               sqlite3_int64 *pRowid)
{
    globals_vtab *vt = (globals_vtab *)vtab;
    const char *name, *value;
    sqlite3_int64 rowid;

    (void)pRowid;
    if (argc == 1) {
        rowid = sqlite3_value_int64(argv[0]);
        return ha_vtab_set_errmsg(
            vtab,
            "DELETE from global_variables is not allowed (%s): the set of "
            "variables is fixed; change a value with UPDATE "
            "global_variables SET variable_value = '...' WHERE "
            "variable_name = '...'",
            rowid >= 0 && rowid < GV_N_ROWS ? gv_rows[rowid].name : "?");
    }
    name = (const char *)sqlite3_value_text(argv[2 + GLOBALS_COL_NAME]);
    value = (const char *)sqlite3_value_text(argv[2 + GLOBALS_COL_VALUE]);
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return ha_vtab_set_errmsg(
            vtab,
            "INSERT into global_variables is not allowed ('%s'): the set "
            "of variables is fixed; change a value with UPDATE "
            "global_variables SET variable_value = '...' WHERE "
            "variable_name = '...'",
            name != NULL ? name : "NULL");
    rowid = sqlite3_value_int64(argv[0]);
    if (rowid < 0 || rowid >= GV_N_ROWS)
        return ha_vtab_set_errmsg(vtab, "global_variables has no row %lld",
                                  (long long)rowid);
    if (sqlite3_value_int64(argv[1]) != rowid || name == NULL ||
        strcmp(name, gv_rows[rowid].name) != 0)
        return ha_vtab_set_errmsg(
            vtab,
            "variable_name cannot be changed ('%s' to '%s'): the set of "
            "variables is fixed; change a value with UPDATE "
            "global_variables SET variable_value = '...' WHERE "
            "variable_name = '%s'",
            gv_rows[rowid].name, name != NULL ? name : "NULL",
            gv_rows[rowid].name);
    {
        int rc = gv_validate(vt, (int)rowid, value);

        /* Most reasons already name the variable and the value: said
         * once. */
        if (rc != SQLITE_OK && vtab->zErrMsg != NULL &&
            strncmp(vtab->zErrMsg, gv_rows[rowid].name,
                    strlen(gv_rows[rowid].name)) == 0)
            ha_log_warn("control: %s: %s%s",
                        vt->conn->who[0] ? vt->conn->who : "(unknown)",
                        vtab->zErrMsg,
                        strstr(vtab->zErrMsg, "refused") != NULL
                            ? ""
                            : " (refused)");
        else if (rc != SQLITE_OK)
            ha_log_warn("control: %s: %s = '%.100s' refused: %s",
                        vt->conn->who[0] ? vt->conn->who : "(unknown)",
                        gv_rows[rowid].name, value != NULL ? value : "NULL",
                        vtab->zErrMsg != NULL ? vtab->zErrMsg : "");
        return rc;
    }
}

static int
globals_begin(sqlite3_vtab *vtab)
{
    gv_clear((globals_vtab *)vtab);
    return SQLITE_OK;
}

/* Applies the staged changes (see the header comment). Runs before the
 * commit, where an error still fails the statement or COMMIT. */
static int
globals_sync(sqlite3_vtab *vtab)
{
    globals_vtab *vt = (globals_vtab *)vtab;
    char info[HA_VTAB_INFO_MAX] = "", msg[HA_VTAB_INFO_MAX];
    char err[PATH_MAX + 512], report[1536];

    for (int i = 0; i < vt->n_changes; i++) {
        const struct gv_change *c = &vt->changes[i];

        if (gv_apply(vt, &vt->changes[i], msg, sizeof(msg), err,
                     sizeof(err)) != 0) {
            gv_undo(vt, i, report, sizeof(report));
            /* The audit trail: who, from where, what, the result. */
            ha_log_warn("control: %s: %s = '%s' failed: %s%s",
                        vt->conn->who[0] ? vt->conn->who : "(unknown)",
                        gv_rows[c->row].name, c->text, err, report);
            gv_clear(vt);
            ha_vtab_set_info(vt->conn, "");
            return ha_vtab_set_errmsg(vtab, "%s%s", err, report);
        }
        ha_log_notice("control: %s: %s = '%s': %s",
                      vt->conn->who[0] ? vt->conn->who : "(unknown)",
                      gv_rows[c->row].name, c->text,
                      msg[0] != '\0' ? msg : "done");
        if (msg[0] != '\0') {
            size_t used = strlen(info);

            set_text(info + used, sizeof(info) - used, "%s%s",
                     used ? "; " : "", msg);
        }
    }
    gv_clear(vt);
    ha_vtab_set_info(vt->conn, info);
    return SQLITE_OK;
}

static int
globals_commit(sqlite3_vtab *vtab)
{
    gv_clear((globals_vtab *)vtab);
    return SQLITE_OK;
}

static int
globals_rollback(sqlite3_vtab *vtab)
{
    gv_clear((globals_vtab *)vtab);
    return SQLITE_OK;
}

/* Statement and SAVEPOINT levels: remember how many changes were staged
 * when level i opened, so a failed statement inside BEGIN ... COMMIT
 * drops its own rows and nothing else. */
static int
globals_savepoint(sqlite3_vtab *vtab, int i)
{
    globals_vtab *vt = (globals_vtab *)vtab;

    if (i < 0)
        return SQLITE_OK;
    if (i >= vt->cap_marks) {
        int cap = i + 8;
        int *p = sqlite3_realloc64(vt->marks, (sqlite3_uint64)cap * sizeof(*p));

        if (p == NULL)
            return SQLITE_NOMEM;
        vt->marks = p;
        vt->cap_marks = cap;
    }
    /* Levels opened before this table joined the transaction saw no
     * change of ours. */
    for (int k = vt->n_marks; k < i; k++)
        vt->marks[k] = vt->n_changes;
    vt->marks[i] = vt->n_changes;
    vt->n_marks = i + 1;
    return SQLITE_OK;
}

static int
globals_release(sqlite3_vtab *vtab, int i)
{
    globals_vtab *vt = (globals_vtab *)vtab;

    if (i >= 0 && i < vt->n_marks)
        vt->n_marks = i;
    return SQLITE_OK;
}

static int
globals_rollback_to(sqlite3_vtab *vtab, int i)
{
    globals_vtab *vt = (globals_vtab *)vtab;

    if (i < 0) {
        gv_drop(vt, 0);
        vt->n_marks = 0;
    } else if (i < vt->n_marks) {
        gv_drop(vt, vt->marks[i]);
        vt->n_marks = i + 1;
    }
    return SQLITE_OK;
}

static const sqlite3_module globals_module = {
    3,                   /* iVersion - savepoints */
    globals_connect,    /* xCreate: a session's own (temp) */
    globals_connect,     /* xConnect - declare schema, allocate vtab */
    globals_best_index,  /* xBestIndex - variable_name = ? or full scan */
    globals_disconnect,  /* xDisconnect */
    globals_disconnect, /* xDestroy */
    globals_open,        /* xOpen - open a cursor */
    ha_cursor_close,     /* xClose - close a cursor */
    globals_filter,      /* xFilter - position the cursor */
    ha_cursor_next,      /* xNext - advance a cursor */
    ha_cursor_eof,       /* xEof - past the last row? */
    globals_column,      /* xColumn - read a value live */
    ha_cursor_rowid,     /* xRowid - row index */
    globals_update,      /* xUpdate - validate and stage */
    globals_begin,       /* xBegin */
    globals_sync,        /* xSync - apply the staged changes */
    globals_commit,      /* xCommit */
    globals_rollback,    /* xRollback - drop the staged changes */
    NULL,                /* xFindFunction */
    NULL,                /* xRename */
    globals_savepoint,   /* xSavepoint */
    globals_release,     /* xRelease */
    globals_rollback_to, /* xRollbackTo - drop a statement's changes */
    NULL,                /* xShadowName */
};

/* runtime_global_variables: the same rows, read-only (ProxySQL's
 * runtime_ layer; here runtime and memory are one, so it always equals
 * global_variables). */
static const sqlite3_module runtime_globals_module = {
    0,                   /* iVersion */
    globals_connect,    /* xCreate: a session's own (temp) */
    globals_connect,     /* xConnect */
    globals_best_index,  /* xBestIndex */
    globals_disconnect,  /* xDisconnect */
    globals_disconnect, /* xDestroy */
    globals_open,        /* xOpen */
    ha_cursor_close,     /* xClose */
    globals_filter,      /* xFilter */
    ha_cursor_next,      /* xNext */
    ha_cursor_eof,       /* xEof */
    globals_column,      /* xColumn */
    ha_cursor_rowid,     /* xRowid */
    NULL,                /* xUpdate - NULL: read-only */
    NULL, NULL, NULL, NULL, /* xBegin, xSync, xCommit, xRollback */
    NULL, NULL,             /* xFindFunction, xRename */
    NULL, NULL, NULL,       /* savepoints (iVersion 2) */
    NULL,                   /* xShadowName (iVersion 3) */
};

int
ha_globals_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    int rc;

    conn->refs++;
    rc = sqlite3_create_module_v2(db, "global_variables", &globals_module,
                                  conn, ha_vtab_conn_unref);
    if (rc != SQLITE_OK)
        return rc;
    conn->refs++;
    return sqlite3_create_module_v2(db, "runtime_global_variables",
                                    &runtime_globals_module, conn,
                                    ha_vtab_conn_unref);
}

bool
ha_globals_persistable(const char *name)
{
    for (int i = 0; i < GV_N_ROWS; i++)
        if (strcmp(gv_rows[i].name, name) == 0)
            return gv_rows[i].kind == GV_BOOL ||
                   gv_rows[i].kind == GV_LG_SAMPLE ||
                   gv_rows[i].kind == GV_STATS_AGE ||
                   gv_rows[i].kind == GV_DUMP_SYM ||
                   gv_rows[i].kind == GV_DECAY;
    return false;
}
