/* SPDX-License-Identifier: MIT
 *
 * stats_memory_jemalloc and stats_memory_metrics: read-only, eponymous
 * virtual tables with one row per jemalloc scalar, read live.
 *
 * Usage:
 *
 *   SELECT * FROM stats_memory_jemalloc;
 *     One row per scalar below, values in bytes or counts.
 *   SELECT variable_value FROM stats_memory_jemalloc
 *    WHERE variable_name = 'resident';
 *     One row; only epoch and stats.resident are read.
 *   SELECT * FROM stats_memory_metrics;
 *     ProxySQL's rows (jemalloc_resident, ..., SQLite3_memory_bytes), so
 *     monitoring written for ProxySQL's admin keeps working.
 *
 * Schema of stats_memory_jemalloc:
 *   0 variable_name  TEXT     row name (first column below)
 *   1 variable_value INTEGER  value, or NULL when the mallctl fails
 *
 *   variable_name                    mallctl                        type
 *   allocated                        stats.allocated                size_t
 *   active                           stats.active                   size_t
 *   metadata                         stats.metadata                 size_t
 *   metadata_thp                     stats.metadata_thp             size_t
 *   resident                         stats.resident                 size_t
 *   mapped                           stats.mapped                   size_t
 *   retained                         stats.retained                 size_t
 *   zero_reallocs                    stats.zero_reallocs            size_t
 *   background_thread.num_threads    stats.background_thread.num_threads
 *   background_thread.num_runs       stats.background_thread.num_runs
 *   background_thread.run_interval   stats.background_thread.run_interval
 *                                    (ns between background runs)
 *   narenas                          arenas.narenas                 unsigned
 *   prof.lg_sample                   prof.lg_sample                 size_t
 *                                    (sampling rate now: log2 of the mean
 *                                    bytes between samples)
 *   prof.interval                    prof.interval                  uint64
 *                                    (mean bytes between interval dumps,
 *                                    0 = no interval dumps)
 *   stats_age_ms                     (none: ms since jemalloc's
 *                                    statistics were last refreshed)
 *   heapadmin.allocated, .active,    heapadmin's own share of the
 *   .metadata, .resident, .mapped,   figures of the same names, when it
 *   .retained                        allocates from an arena of its own
 *                                    (the agent, a library on its own
 *                                    thread: api/heapadmin.c); the rows
 *                                    above are then the host's alone.
 *                                    Absent otherwise (heapadmind), so
 *                                    every row shown is an integer.
 *
 * Schema of stats_memory_metrics (ProxySQL's, values as text like there):
 *   0 Variable_Name  VARCHAR
 *   1 Variable_Value VARCHAR
 *   SQLite3_memory_bytes (sqlite3_memory_used(): process-wide, so inside
 *   a host that uses the same SQLite library it includes the host's),
 *   jemalloc_resident,
 *   jemalloc_active, jemalloc_allocated, jemalloc_mapped, jemalloc_metadata,
 *   jemalloc_retained (stats.<same>), in ProxySQL's order.
 *
 * No HIDDEN columns. xBestIndex/xFilter plan (idxNum bits):
 *   HA_VTAB_IDX_NAME (1)  `name = ?` with BINARY collation: argv[0] is the
 *                         name; only that row is produced and read.
 *   0                     full scan.
 *
 * Every xFilter writes jemalloc's "epoch" exactly once, so each scan sees
 * current values, unless jemalloc-stats_max_age_ms is set: then scans
 * within that many ms of the last refresh share it (the refresh locks
 * every arena, which a host with many arenas feels under frequent
 * polling), and stats_age_ms says how old the figures are; values are read when a row's value column is first
 * asked for. When a mallctl fails (jemalloc without --enable-stats, or an
 * older jemalloc without the name) the value is NULL, not an error. The
 * prof.* rows are NULL while profiling is unavailable (opt.prof=false),
 * where jemalloc would report a misleading 0.
 *
 * Both tables are SQLITE_VTAB_INNOCUOUS: reading statistics has no effect
 * beyond refreshing jemalloc's cached counters (epoch), so they are safe in
 * views and triggers, like memstat.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "vtab/cursor.h"
#include "heap/mallctl.h"
#include "core/util.h"
#include "vtab/vtab_util.h"

enum stats_type {
    STATS_SIZE,       /* size_t mallctl */
    STATS_U64,        /* uint64_t mallctl */
    STATS_UNSIGNED,   /* unsigned mallctl */
    STATS_SQLITE_MEM, /* sqlite3_memory_used(), no mallctl */
    STATS_AGE,        /* ms since the figures were refreshed */
    STATS_TYPE_MAX
};

#define STATS_NEEDS_PROF (1u << 0) /* NULL unless opt.prof */
#define STATS_OWN (1u << 1)        /* shown only when it can be read */

#define STATS_ROWS_MAX 32 /* rows in the largest table */

struct stats_row {
    const char *name;     /* variable_name */
    const char *mallctl;  /* source, NULL for STATS_SQLITE_MEM */
    enum stats_type type;
    unsigned flags;       /* STATS_* flags */
};

static const struct stats_row jemalloc_rows[] = {
    {"allocated", "stats.allocated", STATS_SIZE, 0},
    {"active", "stats.active", STATS_SIZE, 0},
    {"metadata", "stats.metadata", STATS_SIZE, 0},
    {"metadata_thp", "stats.metadata_thp", STATS_SIZE, 0},
    {"resident", "stats.resident", STATS_SIZE, 0},
    {"mapped", "stats.mapped", STATS_SIZE, 0},
    {"retained", "stats.retained", STATS_SIZE, 0},
    {"zero_reallocs", "stats.zero_reallocs", STATS_SIZE, 0},
    {"background_thread.num_threads", "stats.background_thread.num_threads",
     STATS_SIZE, 0},
    {"background_thread.num_runs", "stats.background_thread.num_runs",
     STATS_U64, 0},
    {"background_thread.run_interval",
     "stats.background_thread.run_interval", STATS_U64, 0},
    {"narenas", "arenas.narenas", STATS_UNSIGNED, 0},
    {"prof.lg_sample", "prof.lg_sample", STATS_SIZE, STATS_NEEDS_PROF},
    {"prof.interval", "prof.interval", STATS_U64, STATS_NEEDS_PROF},
    {"stats_age_ms", NULL, STATS_AGE, 0},
    /* heapadmin's own share, which the rows above leave out when it runs
     * on a thread of its own (the agent): absent otherwise. */
    {"heapadmin.allocated", "heapadmin.allocated", STATS_SIZE, STATS_OWN},
    {"heapadmin.active", "heapadmin.active", STATS_SIZE, STATS_OWN},
    {"heapadmin.metadata", "heapadmin.metadata", STATS_SIZE, STATS_OWN},
    {"heapadmin.resident", "heapadmin.resident", STATS_SIZE, STATS_OWN},
    {"heapadmin.mapped", "heapadmin.mapped", STATS_SIZE, STATS_OWN},
    {"heapadmin.retained", "heapadmin.retained", STATS_SIZE, STATS_OWN},
};

static const struct stats_row metrics_rows[] = {
    {"SQLite3_memory_bytes", NULL, STATS_SQLITE_MEM, 0},
    {"jemalloc_resident", "stats.resident", STATS_SIZE, 0},
    {"jemalloc_active", "stats.active", STATS_SIZE, 0},
    {"jemalloc_allocated", "stats.allocated", STATS_SIZE, 0},
    {"jemalloc_mapped", "stats.mapped", STATS_SIZE, 0},
    {"jemalloc_metadata", "stats.metadata", STATS_SIZE, 0},
    {"jemalloc_retained", "stats.retained", STATS_SIZE, 0},
};

#define STATS_SCHEMA_JEMALLOC                          \
    "CREATE TABLE x("                                  \
    "variable_name TEXT, "  /* 0 STATS_COL_NAME */     \
    "variable_value INTEGER" /* 1 STATS_COL_VALUE */   \
    ")"
#define STATS_SCHEMA_METRICS                           \
    "CREATE TABLE x("                                  \
    "Variable_Name VARCHAR, " /* 0 STATS_COL_NAME */   \
    "Variable_Value VARCHAR"  /* 1 STATS_COL_VALUE */  \
    ")"
#define STATS_COL_NAME 0
#define STATS_COL_VALUE 1

/* Which table a module serves; the module's pAux is the connection. */
struct stats_table {
    const char *schema;
    const struct stats_row *rows;
    int n_rows;
    bool as_text;            /* values as text (ProxySQL) */
};

static const struct stats_table jemalloc_table = {
    STATS_SCHEMA_JEMALLOC, jemalloc_rows, (int)HA_ARRAY_SIZE(jemalloc_rows),
    false,
};
static const struct stats_table metrics_table = {
    STATS_SCHEMA_METRICS, metrics_rows, (int)HA_ARRAY_SIZE(metrics_rows),
    true,
};
_Static_assert(HA_ARRAY_SIZE(jemalloc_rows) <= STATS_ROWS_MAX &&
                   HA_ARRAY_SIZE(metrics_rows) <= STATS_ROWS_MAX,
               "stats_vtab.mibs needs a slot per row");

typedef struct stats_vtab stats_vtab;
struct stats_vtab {
    sqlite3_vtab base;                /* Base class - must be first */
    struct ha_vtab_conn *conn;        /* ctx->heap->ops reaches jemalloc */
    const struct stats_table *table;  /* rows this table shows */
    struct ha_mallctl_mib mibs[STATS_ROWS_MAX]; /* per row, resolved once */
};

typedef struct stats_cursor stats_cursor;
struct stats_cursor {
    struct ha_cursor rc;       /* rows [row, end) of table->rows; must
                                * be first */

    int own_apart;             /* STATS_OWN rows readable: -1 not yet
                                * asked this scan, 0 no, 1 yes */
    bool have_value;           /* value/is_null valid for row */
    bool is_null;              /* mallctl failed: NULL */
    sqlite3_int64 value;       /* the row's value */
};

/* ------------------------------------------------------------------
 * Reading one row
 * ------------------------------------------------------------------ */

/* Reads row r into cur->value / cur->is_null. */
static void
stats_read_row(stats_vtab *vt, stats_cursor *cur)
{
    const struct ha_mallctl_ops *ops = vt->conn->ctx->heap->ops;
    const struct stats_row *r = &vt->table->rows[cur->rc.row];
    struct ha_mallctl_mib *mib = &vt->mibs[cur->rc.row];
    int rc = 0;

    cur->is_null = false;
    if ((r->flags & STATS_NEEDS_PROF) && !ha_mallctl_prof_enabled(ops)) {
        cur->is_null = true;
    } else {
        switch (r->type) {
        case STATS_SIZE: {
            size_t v = 0;

            rc = ha_mallctl_read_cached(ops, r->mallctl, mib, &v,
                                        sizeof(v));
            cur->value = (sqlite3_int64)v;
            break;
        }
        case STATS_U64: {
            uint64_t v = 0;

            rc = ha_mallctl_read_cached(ops, r->mallctl, mib, &v,
                                        sizeof(v));
            cur->value = v > INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
            break;
        }
        case STATS_UNSIGNED: {
            unsigned v = 0;

            rc = ha_mallctl_read_cached(ops, r->mallctl, mib, &v,
                                        sizeof(v));
            cur->value = v;
            break;
        }
        case STATS_SQLITE_MEM:
            cur->value = sqlite3_memory_used();
            break;
        case STATS_AGE: {
            long long age = ha_heap_stats_age_ms(vt->conn->ctx->heap);

            rc = age < 0 ? -1 : 0;
            cur->value = age;
            break;
        }
        case STATS_TYPE_MAX:
            rc = -1;
            break;
        }
        cur->is_null = rc != 0;
    }
    cur->have_value = true;
}

/* ------------------------------------------------------------------
 * Virtual table methods
 * ------------------------------------------------------------------ */

/* Constructor for stats_vtab objects: declares table's schema. aux is the
 * module's client data, the connection's struct ha_vtab_conn. */
static int
stats_connect_table(sqlite3 *db, void *aux, const struct stats_table *table,
                    sqlite3_vtab **ppVtab, char **pzErr)
{
    stats_vtab *vt;
    int rc = ha_vtab_new(db, table->schema, SQLITE_VTAB_INNOCUOUS,
                         sizeof(*vt), ppVtab, pzErr);

    if (rc != SQLITE_OK)
        return rc;
    vt = (stats_vtab *)*ppVtab;
    vt->conn = aux;
    vt->table = table;
    return SQLITE_OK;
}

static int
stats_jemalloc_connect(sqlite3 *db, void *aux, int argc,
                       const char *const *argv, sqlite3_vtab **ppVtab,
                       char **pzErr)
{
    (void)argc;
    (void)argv;
    return stats_connect_table(db, aux, &jemalloc_table, ppVtab, pzErr);
}

static int
stats_metrics_connect(sqlite3 *db, void *aux, int argc,
                      const char *const *argv, sqlite3_vtab **ppVtab,
                      char **pzErr)
{
    (void)argc;
    (void)argv;
    return stats_connect_table(db, aux, &metrics_table, ppVtab, pzErr);
}

static int
stats_disconnect(sqlite3_vtab *vtab)
{
    sqlite3_free(vtab);
    return SQLITE_OK;
}

/* STATS_OWN rows are not shown when heapadmin keeps no share apart
 * (heapadmind, whose memory is all its own): asked once per scan, when
 * the scan first reaches one, by reading that row. */
static bool
stats_skip(const struct ha_cursor *rc)
{
    stats_cursor *cur = (stats_cursor *)rc;
    const stats_vtab *vt = (const stats_vtab *)rc->base.pVtab;
    const struct stats_row *r = &vt->table->rows[rc->row];
    size_t v = 0;

    if ((r->flags & STATS_OWN) == 0)
        return false;
    if (cur->own_apart < 0)
        cur->own_apart =
            ha_mallctl_read_size(vt->conn->ctx->heap->ops, r->mallctl, &v) == 0;
    return cur->own_apart == 0;
}

static int
stats_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor)
{
    int rc = ha_cursor_open(sizeof(stats_cursor), ppCursor);

    (void)vtab;
    if (rc == SQLITE_OK)
        ((stats_cursor *)*ppCursor)->rc.skip = stats_skip;
    return rc;
}

static int
stats_next(sqlite3_vtab_cursor *cursor)
{
    stats_cursor *cur = (stats_cursor *)cursor;

    cur->have_value = false;
    return ha_cursor_next(cursor);
}

static int
stats_column(sqlite3_vtab_cursor *cursor, sqlite3_context *ctx, int col)
{
    stats_cursor *cur = (stats_cursor *)cursor;
    stats_vtab *vt = (stats_vtab *)cursor->pVtab;

    if (col == STATS_COL_NAME) {
        sqlite3_result_text(ctx, vt->table->rows[cur->rc.row].name, -1,
                            SQLITE_STATIC);
        return SQLITE_OK;
    }
    if (!cur->have_value)
        stats_read_row(vt, cur);
    if (cur->is_null) {
        sqlite3_result_null(ctx);
    } else if (vt->table->as_text) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%lld", (long long)cur->value);
        sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_result_int64(ctx, cur->value);
    }
    return SQLITE_OK;
}

/* Rewinds the cursor: writes epoch once, then produces every row, or only
 * the row named by argv[0] when idxNum has HA_VTAB_IDX_NAME. Always called
 * before any xColumn/xRowid/xEof. */
static int
stats_filter(sqlite3_vtab_cursor *cursor, int idxNum, const char *idxStr,
             int argc, sqlite3_value **argv)
{
    stats_cursor *cur = (stats_cursor *)cursor;
    stats_vtab *vt = (stats_vtab *)cursor->pVtab;
    const struct stats_table *t = vt->table;

    (void)idxStr;
    cur->own_apart = -1;
    ha_cursor_rewind(&cur->rc, 0, 0);
    cur->have_value = false;
    /* Failure (stats disabled) shows up as NULL values, row by row. */
    ha_heap_refresh_stats(vt->conn->ctx->heap);
    if ((idxNum & HA_VTAB_IDX_NAME) && argc >= 1) {
        const char *name = (const char *)sqlite3_value_text(argv[0]);

        for (int i = 0; name != NULL && i < t->n_rows; i++) {
            if (strcmp(t->rows[i].name, name) == 0) {
                ha_cursor_rewind(&cur->rc, (size_t)i, (size_t)i + 1);
                break;
            }
        }
    } else {
        ha_cursor_rewind(&cur->rc, 0, (size_t)t->n_rows);
    }
    return SQLITE_OK;
}

static int
stats_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    stats_vtab *vt = (stats_vtab *)vtab;

    return ha_vtab_best_index_name(info, STATS_COL_NAME, vt->table->n_rows);
}

#define STATS_MODULE(connect_fn)                                             \
    {                                                                        \
        0,                /* iVersion */                                     \
        connect_fn,       /* xCreate - a session's own (temp) */             \
        connect_fn,       /* xConnect - declare schema, allocate vtab */     \
        stats_best_index, /* xBestIndex - name = ? or full scan */           \
        stats_disconnect, /* xDisconnect */                                  \
        stats_disconnect, /* xDestroy */                                     \
        stats_open,       /* xOpen - open a cursor */                        \
        ha_cursor_close,  /* xClose - close a cursor */                      \
        stats_filter,     /* xFilter - epoch, then position the cursor */    \
        stats_next,       /* xNext - advance a cursor */                     \
        ha_cursor_eof,    /* xEof - past the last row? */                    \
        stats_column,     /* xColumn - read a column (mallctl, cached) */    \
        ha_cursor_rowid,  /* xRowid - row index */                           \
        NULL,             /* xUpdate - read-only */                          \
        NULL,             /* xBegin */                                       \
        NULL,             /* xSync */                                        \
        NULL,             /* xCommit */                                      \
        NULL,             /* xRollback */                                    \
        NULL,             /* xFindFunction */                                \
        NULL,             /* xRename */                                      \
        NULL,             /* xSavepoint */                                   \
        NULL,             /* xRelease */                                     \
        NULL,             /* xRollbackTo */                                  \
        NULL,             /* xShadowName */                                  \
    }

static const sqlite3_module stats_jemalloc_module =
    STATS_MODULE(stats_jemalloc_connect);
static const sqlite3_module stats_metrics_module =
    STATS_MODULE(stats_metrics_connect);

int
ha_stats_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    int rc;

    conn->refs++;
    rc = sqlite3_create_module_v2(db, "stats_memory_jemalloc",
                                  &stats_jemalloc_module, conn,
                                  ha_vtab_conn_unref);
    if (rc != SQLITE_OK)
        return rc;
    conn->refs++;
    return sqlite3_create_module_v2(db, "stats_memory_metrics",
                                    &stats_metrics_module, conn,
                                    ha_vtab_conn_unref);
}
