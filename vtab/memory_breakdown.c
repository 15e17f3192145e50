/* SPDX-License-Identifier: MIT
 *
 * stats_memory_breakdown: where resident memory goes, one row per
 * component, bytes and share of RSS, read together so that the parts add
 * up (prof/breakdown.h has the arithmetic, heap/rss.h the reading).
 *
 * Usage:
 *
 *   SELECT component, bytes, round(pct_of_rss, 1) AS pct, detail
 *     FROM stats_memory_breakdown;
 *     Every row: RSS, jemalloc's parts, what is not jemalloc's.
 *   SELECT sum(bytes) FROM stats_memory_breakdown WHERE kind = 'part';
 *     Equals the rss row.
 *
 * Schema:
 *   0 component   TEXT     "rss", "jemalloc.dirty", "heapadmin",
 *                          "other.stacks", ... (prof/breakdown.h lists
 *                          them in order)
 *   1 kind        TEXT     total, part (the parts add up to the total),
 *                          subtotal (a sum of the parts named under it),
 *                          info (context, not in RSS: pss, swap,
 *                          jemalloc.retained, jemalloc.mapped, and the
 *                          memory cgroup's cgroup.limit, cgroup.usage
 *                          and cgroup.headroom: limit less working set)
 *   2 bytes       INTEGER  NULL when its source could not be read
 *                          (jemalloc without stats, no /proc), and on
 *                          the heapadmin row where heapadmin keeps no
 *                          arena apart (heapadmind)
 *   3 pct_of_rss  REAL     bytes * 100 / rss; NULL on info rows
 *   4 detail      TEXT     what it is, the figures behind it, and what to
 *                          do about it; on a row whose bytes are NULL,
 *                          why, where known
 * While a lifetime window is open (jemalloc-log_now), one more info row,
 * jemalloc.internal.prof_log: what jemalloc holds for its log.
 *
 * No HIDDEN columns, no constraints used: 25 rows, computed whole in
 * xFilter (one epoch, shared within jemalloc-stats_max_age_ms; smaps read
 * on the worker thread). Reading smaps makes the kernel walk the host's
 * page tables (bench/RESULTS-stats.md measures it): this table is for an
 * operator's question; the Prometheus metrics read /proc/self/status
 * instead, which costs nothing comparable.
 *
 * SQLITE_VTAB_INNOCUOUS: reading changes nothing.
 */
#include <stdbool.h>
#include <stdint.h>

#include <stdio.h>

#include "heap/logwin.h"
#include "heap/rss.h"
#include "prof/breakdown.h"
#include "vtab/jestats.h"
#include "vtab/vtab_util.h"

/* ------------------------------------------------------------------
 * The table
 * ------------------------------------------------------------------ */

#define RSS_SCHEMA                                                         \
    "CREATE TABLE x(component TEXT, kind TEXT, bytes INTEGER, "            \
    "pct_of_rss REAL, detail TEXT)"
#define RSS_N_COLS 5

static int
rss_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
            sqlite3_vtab **ppVtab, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_jestats_connect(db, aux, RSS_SCHEMA, RSS_N_COLS,
                              sizeof(ha_jestats_vtab), ppVtab, pzErr);
}

static int
rss_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    info->estimatedCost = HA_BREAKDOWN_ROWS;
    info->estimatedRows = HA_BREAKDOWN_ROWS;
    return SQLITE_OK;
}

/* While a lifetime window is open, what jemalloc holds for its log
 * (heap/logwin.h): inside jemalloc.internal, so an info row. */
static int
log_row(ha_jestats_cursor *c, const struct ha_heap *heap)
{
    struct ha_logwin_state st;
    struct ha_jestats_cell *row;
    char detail[512];

    ha_logwin_state(heap, &st);
    if (!st.open || st.bytes < 0)
        return SQLITE_OK;
    snprintf(detail, sizeof(detail),
             "the open lifetime window's log (%s, %lld s left): every "
             "sampled allocation freed since it opened, kept in jemalloc's "
             "memory until it closes (inside jemalloc.internal; it closes "
             "early at jemalloc-log_max_bytes = %lld)",
             st.file, st.seconds_left, st.max_bytes);
    if ((row = ha_jestats_row(c)) == NULL ||
        ha_jestats_text(c, &row[0], "jemalloc.internal.prof_log") !=
            SQLITE_OK ||
        ha_jestats_text(c, &row[1], "info") != SQLITE_OK ||
        ha_jestats_text(c, &row[4], detail) != SQLITE_OK)
        return SQLITE_NOMEM;
    ha_jestats_int(&row[2], st.bytes);
    return SQLITE_OK;
}

static int
rss_filter(sqlite3_vtab_cursor *cursor, int idxNum, const char *idxStr,
           int argc, sqlite3_value **argv)
{
    ha_jestats_cursor *c = (ha_jestats_cursor *)cursor;
    ha_jestats_vtab *vt = (ha_jestats_vtab *)cursor->pVtab;
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    char err[256];
    int64_t rss = 0;
    bool have_rss;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    ha_jestats_clear(c);
    if (ha_rss_read(vt->conn->ctx->heap, true, true, rows, err, sizeof(err)) != 0)
        return ha_vtab_set_errmsg(&vt->base, "stats_memory_breakdown: %s",
                                  err);
    have_rss = rows[0].known && rows[0].bytes > 0;
    if (have_rss)
        rss = rows[0].bytes;
    for (int i = 0; i < HA_BREAKDOWN_ROWS; i++) {
        struct ha_jestats_cell *row = ha_jestats_row(c);

        if (row == NULL ||
            ha_jestats_text(c, &row[0], rows[i].component) != SQLITE_OK ||
            ha_jestats_text(c, &row[1], ha_breakdown_kind_name(
                                            rows[i].kind)) != SQLITE_OK)
            return SQLITE_NOMEM;
        /* An unknown row may still say why (no limit, heapadmin's
         * memory not kept apart): its detail is shown, its bytes NULL. */
        if ((rows[i].known || rows[i].detail[0] != '\0') &&
            ha_jestats_text(c, &row[4], rows[i].detail) != SQLITE_OK)
            return SQLITE_NOMEM;
        if (!rows[i].known)
            continue;
        ha_jestats_int(&row[2], rows[i].bytes);
        if (have_rss && rows[i].kind != HA_BREAKDOWN_INFO)
            ha_jestats_real(&row[3], (double)rows[i].bytes * 100.0 /
                                         (double)rss);
    }
    return log_row(c, vt->conn->ctx->heap);
}

static const sqlite3_module rss_module = {
    0,                  /* iVersion */
    rss_connect,        /* xCreate - a session's own (temp) */
    rss_connect,        /* xConnect - declare schema */
    rss_best_index,     /* xBestIndex - always the whole table */
    ha_jestats_disconnect,     /* xDisconnect */
    ha_jestats_disconnect,     /* xDestroy */
    ha_jestats_open,    /* xOpen */
    ha_jestats_close,   /* xClose */
    rss_filter,         /* xFilter - read and compute every row */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    ha_jestats_column,  /* xColumn */
    ha_cursor_rowid,    /* xRowid */
    NULL,               /* xUpdate - read-only */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

int
ha_memory_breakdown_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    conn->refs++;
    return sqlite3_create_module_v2(db, "stats_memory_breakdown",
                                    &rss_module, conn, ha_vtab_conn_unref);
}
