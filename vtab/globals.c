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
 *   admin-max_connections, admin-max_pending_logins,
 *   admin-max_pending_logins_per_host, admin-connect_timeout,
 *   admin-wait_timeout,
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
 *                                           (heap/symcopy.h)
 *   jemalloc-dump_retention_count, jemalloc-dump_retention_bytes,
 *   jemalloc-dump_min_free_bytes, jemalloc-dump_interval_s,
 *   jemalloc-dump_resident_bytes      RO    dump housekeeping, as configured
 *                                           (jemalloc_variables; 0 = off)
 *   jemalloc-leak_watch_growth_bytes, jemalloc-leak_watch_window_s,
 *   jemalloc-leak_watch_dump_interval_s, jemalloc-leak_watch_dumps,
 *   jemalloc-leak_watch_sites,
 *   jemalloc-leak_watch_lg_prof_sample
 *                                     RO    the leak watch, as configured
 *                                           (jemalloc_variables; 0 = off,
 *                                           -1 = the current rate)
 *   jemalloc-leak_watch_state         RO    what the leak watch is doing, as
 *                                           the engine reports it
 *                                           (heap->engine_value)
 *   jemalloc-limit_dump_fractions, jemalloc-limit_dump_psi_pct,
 *   jemalloc-limit_dump_events, jemalloc-limit_dump_min_interval_s,
 *   jemalloc-limit_watch_sampling, jemalloc-limit_watch_lg_prof_sample
 *                                     RO    the limit watch, as configured
 *                                           (jemalloc_variables; '' and 0 =
 *                                           off, -1 = the current rate)
 *   jemalloc-limit_watch_state        RO    what the limit watch sees and
 *                                           did (heap->engine_value)
 *   jemalloc-log_max_bytes            RW    a lifetime window closes early
 *                                           once jemalloc holds this much
 *                                           for its log (1 MiB .. 4 GiB;
 *                                           default 64 MiB)
 *   jemalloc-alloc_wrappers           RW    the operator's edits of the
 *                                           allocation wrappers the site
 *                                           rule skips (prof/wrappers.h):
 *                                           '+name', 'name', '-name', '-*',
 *                                           comma-separated; '' = none.
 *                                           Profiles cached with other
 *                                           edits are read again
 *   jemalloc-log_state                RO    the lifetime window: open (its
 *                                           file, seconds left, memory) or
 *                                           closed, and the last one
 *   jemalloc-recent_alloc_max         RW P  experimental.prof_recent.
 *                                           alloc_max: the last N sampled
 *                                           allocations jemalloc keeps for
 *                                           stats_jemalloc_recent (0 = off,
 *                                           at most 100000; jemalloc's -1 is
 *                                           refused)
 *   jemalloc-dump_now                 A  P  prof.dump (jemalloc's naming,
 *                                           prof.prefix = datadir/stem),
 *                                           then dump_retention_*
 *   jemalloc-log_now                  A  P  prof.log_start for N seconds
 *                                           (1..600; heap/logwin.h), then
 *                                           prof.log_stop on the dump
 *                                           worker and the log published
 *                                           as <prefix>.<pid>.<seq>.json
 *                                           (stats_heap_dumps kind log);
 *                                           0 closes the open one now.
 *                                           Reads the seconds left
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
 *   jemalloc-prof_sys_thread_name,
 *   jemalloc-prof_time_resolution     RO  opt.<same name>
 *   jemalloc-opt_prof_active, jemalloc-opt_lg_prof_sample,
 *   jemalloc-opt_prof_gdump,
 *   jemalloc-opt_prof_thread_active_init,
 *   jemalloc-opt_prof_recent_alloc_max
 *                                     RO  opt.<name>: the start-up value
 *                                         of a setting whose live value
 *                                         is the row without "opt_"
 * Naming rule: an opt.X with no run-time counterpart is jemalloc-X; one
 * with a run-time counterpart is jemalloc-opt_X.
 *
 * The variables, their checks and how each is applied are the settings
 * engine's (heap/settings.h); this file maps rows and statements to it.
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
#include "vtab/globals.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "heap/settings.h"

/* ------------------------------------------------------------------
 * Virtual table methods
 * ------------------------------------------------------------------ */

/* Constructor for globals_vtab objects. aux is the connection's struct
 * ha_vtab_conn. */
static int
globals_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                sqlite3_vtab **ppVtab, char **pzErr)
{
    int rc = ha_vtab_new(db, GLOBALS_SCHEMA, SQLITE_VTAB_DIRECTONLY,
                         sizeof(globals_vtab), ppVtab, pzErr);
    struct ha_vtab_conn *conn = aux;

    (void)argc;
    (void)argv;
    if (rc == SQLITE_OK) {
        globals_vtab *vt = (globals_vtab *)*ppVtab;

        vt->conn = conn;
        /* The audit trail names the session: conn->who, as it is when a
         * line is written. */
        ha_settings_begin(&vt->set, conn->ctx->heap, conn->who);
    }
    return rc;
}

static int
globals_disconnect(sqlite3_vtab *vtab)
{
    globals_vtab *vt = (globals_vtab *)vtab;

    ha_settings_end(&vt->set);
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
    struct ha_settings_var v;
    char buf[PATH_MAX];

    if (col == GLOBALS_COL_NAME) {
        if (ha_settings_describe((int)cur->rc.row, &v) != 0)
            return SQLITE_ERROR;
        sqlite3_result_text(ctx, v.name, -1, SQLITE_STATIC);
        return SQLITE_OK;
    }
    if (ha_settings_read(vt->conn->ctx->heap, (int)cur->rc.row, buf,
                         sizeof(buf)))
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
    ha_cursor_rewind(&cur->rc, 0, (size_t)ha_settings_count());
    if ((idxNum & HA_VTAB_IDX_NAME) && argc >= 1) {
        int i = ha_settings_find((const char *)sqlite3_value_text(argv[0]));

        if (i >= 0)
            ha_cursor_rewind(&cur->rc, (size_t)i, (size_t)i + 1);
        else
            ha_cursor_rewind(&cur->rc, 0, 0);
    }
    return SQLITE_OK;
}

static int
globals_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    return ha_vtab_best_index_name(info, GLOBALS_COL_NAME,
                                   ha_settings_count());
}

/* The variable of row rowid, or NULL. */
static const char *
row_name(sqlite3_int64 rowid)
{
    struct ha_settings_var v;

    if (rowid < 0 || rowid >= ha_settings_count() ||
        ha_settings_describe((int)rowid, &v) != 0)
        return NULL;
    return v.name;
}

/* DELETE (argc 1), INSERT (argv[0] NULL) and renames are refused; an
 * UPDATE of the value is checked and staged by the settings engine
 * (which logs a refusal) for xSync. */
static int
globals_update(sqlite3_vtab *vtab, int argc, sqlite3_value **argv,
               sqlite3_int64 *pRowid)
{
    globals_vtab *vt = (globals_vtab *)vtab;
    const char *name, *value, *row;
    char err[PATH_MAX + 1024];

    (void)pRowid;
    if (argc == 1) {
        row = row_name(sqlite3_value_int64(argv[0]));
        return ha_vtab_set_errmsg(
            vtab,
            "DELETE from global_variables is not allowed (%s): the set of "
            "variables is fixed; change a value with UPDATE "
            "global_variables SET variable_value = '...' WHERE "
            "variable_name = '...'",
            row != NULL ? row : "?");
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
    if ((row = row_name(sqlite3_value_int64(argv[0]))) == NULL)
        return ha_vtab_set_errmsg(vtab, "global_variables has no row %lld",
                                  (long long)sqlite3_value_int64(argv[0]));
    if (sqlite3_value_int64(argv[1]) != sqlite3_value_int64(argv[0]) ||
        name == NULL || strcmp(name, row) != 0)
        return ha_vtab_set_errmsg(
            vtab,
            "variable_name cannot be changed ('%s' to '%s'): the set of "
            "variables is fixed; change a value with UPDATE "
            "global_variables SET variable_value = '...' WHERE "
            "variable_name = '%s'",
            row, name != NULL ? name : "NULL", row);
    if (ha_settings_stage(&vt->set, row, value, err, sizeof(err)) != 0)
        return ha_vtab_set_errmsg(vtab, "%s", err);
    return SQLITE_OK;
}

/* Forgets every staged change and savepoint mark. */
static void
globals_clear(globals_vtab *vt)
{
    ha_settings_rollback(&vt->set);
    vt->n_marks = 0;
}

static int
globals_begin(sqlite3_vtab *vtab)
{
    globals_clear((globals_vtab *)vtab);
    return SQLITE_OK;
}

/* Applies the staged changes (see the header comment). Runs before the
 * commit, where an error still fails the statement or COMMIT. */
static int
globals_sync(sqlite3_vtab *vtab)
{
    globals_vtab *vt = (globals_vtab *)vtab;
    char info[HA_VTAB_INFO_MAX], err[PATH_MAX + 2048];
    int rc = ha_settings_commit(&vt->set, info, sizeof(info), err,
                                sizeof(err));

    globals_clear(vt);
    if (rc != 0) {
        ha_vtab_set_info(vt->conn, "");
        return ha_vtab_set_errmsg(vtab, "%s", err);
    }
    ha_vtab_set_info(vt->conn, info);
    return SQLITE_OK;
}

static int
globals_commit(sqlite3_vtab *vtab)
{
    globals_clear((globals_vtab *)vtab);
    return SQLITE_OK;
}

static int
globals_rollback(sqlite3_vtab *vtab)
{
    globals_clear((globals_vtab *)vtab);
    return SQLITE_OK;
}

/* Statement and SAVEPOINT levels: remember how many changes were staged
 * when level i opened, so a failed statement inside BEGIN ... COMMIT
 * drops its own rows and nothing else. */
static int
globals_savepoint(sqlite3_vtab *vtab, int i)
{
    globals_vtab *vt = (globals_vtab *)vtab;
    int staged = ha_settings_staged(&vt->set);

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
        vt->marks[k] = staged;
    vt->marks[i] = staged;
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
        globals_clear(vt);
    } else if (i < vt->n_marks) {
        ha_settings_rollback_to(&vt->set, vt->marks[i]);
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
