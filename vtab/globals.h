/* SPDX-License-Identifier: MIT
 *
 * What the files of global_variables share (globals.c has the table's
 * documentation and its methods): the catalogue of rows and how each is
 * read (globals_catalog.c), an UPDATE's validation and staging
 * (globals_stage.c), and applying the staged changes at xSync, with undo
 * (globals_apply.c). Private to those files.
 */
#ifndef HA_GLOBALS_H
#define HA_GLOBALS_H

#include <stdbool.h>
#include <stddef.h>

#include <sqlite3.h>

#include "heap/mallctl.h"
#include "vtab/cursor.h"
#include "vtab/vtab_util.h"

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
    GV_LG_MIN,    /* ctx->heap->lg_prof_sample_min, read-only */
    GV_STATS_AGE, /* ctx->heap->stats_max_age_ms, read-write */
    GV_DUMP_SYM,  /* ctx->heap->dump_symbolized, read-write */
    GV_KEEP,      /* ctx->heap->je setting (dump housekeeping, leak watch),
                     read-only */
    GV_DECAY,     /* arenas.<kind>_decay_ms and every arena's, read-write */
    GV_ARENA_DECAY, /* per-arena <kind>_decay_ms list, read-write */
    GV_PURGE_ARENA, /* action: arena.<i>.purge, an index or all */
    GV_ENGINE,    /* run-time state from ctx->engine_value, read-only */
    GV_LOG_NOW,   /* action: a lifetime window of N seconds (heap/logwin.h);
                     reads the seconds left */
    GV_LOG_MAX,   /* ctx->heap->log_max_bytes, read-write */
    GV_LOG_STATE, /* the lifetime window's state, read-only */
    GV_RECENT_MAX, /* experimental.prof_recent.alloc_max, read-write,
                      bounded */
    GV_WRAPPERS,  /* ctx->heap->alloc_wrappers, read-write (prof/
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

struct gv_row {
    const char *name;     /* variable_name */
    const char *mallctl;  /* source, NULL for admin rows */
    enum gv_kind kind;
    unsigned flags;       /* GV_* flags */
    enum gv_admin admin;  /* GV_ADMIN rows: which setting */
    const char *hint;     /* read-only rows: how to change it instead */
    const char *doc;      /* what it is, for people: docs/reference/
                             variables.md is made from it (docs/gen/
                             gendocs.c); NULL only where a config key of
                             the same name (admin-x: admin_variables.x,
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

/* The catalogue: every row of global_variables, in order
 * (globals_catalog.c). */
extern const struct gv_row ha_globals_rows[];
extern const int ha_globals_n_rows;
#define GV_N_ROWS ha_globals_n_rows
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
    int row;                 /* index into ha_globals_rows */
    long long value;         /* bool (0/1) or lg_prof_sample */
    char text[GV_TEXT_MAX];  /* the value as written, for messages */

    bool applied;            /* xSync did it */
    bool old_bool;           /* GV_BOOL: value before, for undo */
    size_t old_lg;           /* GV_LG_SAMPLE: rate before, for undo */
    struct ha_mallctl_decay_undo undo; /* GV_DECAY, GV_ARENA_DECAY: the
                                          settings before (freed with the
                                          change: ha_globals_drop) */
    char *str;               /* GV_WRAPPERS: the value, canonical, whole
                                (text is cut); sqlite3_malloc'd, freed
                                with the change */
    char *old_str;           /* GV_WRAPPERS: the value before, for undo */
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
    struct ha_cursor rc;       /* rows [row, end) of ha_globals_rows; must be
                                * first */
};

/* ------------------------------------------------------------------
 * The catalogue and reading (globals_catalog.c)
 * ------------------------------------------------------------------ */

/* jemalloc, as the tables' context reaches it. */
const struct ha_mallctl_ops *ha_globals_ops(globals_vtab *vt);

/* Current value of r as text into buf. Returns false for NULL. */
bool ha_globals_read(globals_vtab *vt, const struct gv_row *r, char *buf,
                     size_t len);

/* Whether an UPDATE may set r (a read-write row or an action). */
bool ha_globals_writable(const struct gv_row *r);

/* Whether r is an action (dump_now, reset_now, purge_now, ...): reads
 * 'false', acts on 'true', never saved. */
bool ha_globals_is_action(const struct gv_row *r);

/* The lifetime window's state as a line (jemalloc-log_state). */
struct ha_heap;
void ha_globals_log_state(const struct ha_heap *heap, char *buf, size_t len);

/* "a, b, c": the writable variables, for messages. */
void ha_globals_writable_list(char *buf, size_t len);

/* Whether arena i is initialized (in use). */
bool ha_globals_arena_in_use(const struct ha_mallctl_ops *ops, unsigned i);

/* "dirty" or "muzzy": which decay a GV_DECAY / GV_ARENA_DECAY row is. */
const char *ha_globals_decay_kind(const struct gv_row *r);

/* ------------------------------------------------------------------
 * Validation and staging (globals_stage.c)
 * ------------------------------------------------------------------ */

/* Validates `UPDATE ... SET variable_value = text` for row index idx and
 * stages it. Returns SQLITE_OK, or SQLITE_ERROR with zErrMsg naming the
 * variable, the value and what is allowed. */
int ha_globals_validate(globals_vtab *vt, int idx, const char *text);

/* ------------------------------------------------------------------
 * Applying (globals_apply.c)
 * ------------------------------------------------------------------ */

/* Applies c. Returns 0 with an info message (maybe "") in info, or -1
 * with the reason in err. */
int ha_globals_apply(globals_vtab *vt, struct gv_change *c, char *info,
                     size_t infolen, char *err, size_t errlen);

/* Puts back the settings of changes [0, n) that were applied, newest
 * first. Appends "undone: ..." / "already done: ..." to report. */
void ha_globals_undo(globals_vtab *vt, int n, char *report, size_t len);

/* Forgets the staged changes [from, n_changes), freeing what they own. */
void ha_globals_drop(globals_vtab *vt, int from);

/* Forgets every staged change and savepoint mark. */
void ha_globals_clear(globals_vtab *vt);

/* snprintf for messages that may be cut at len: info and error text. */
void ha_globals_set_text(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* HA_GLOBALS_H */
