/* SPDX-License-Identifier: MIT
 *
 * stats_memory_breakdown: where resident memory goes, one row per
 * component, bytes and share of RSS, read together so that the parts add
 * up (prof/breakdown.h has the arithmetic, rss.h the reading).
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
 *   0 component   TEXT     "rss", "jemalloc.dirty", "other.stacks", ...
 *                          (prof/breakdown.h lists them in order)
 *   1 kind        TEXT     total, part (the parts add up to the total),
 *                          subtotal (a sum of the parts named under it),
 *                          info (context, not in RSS: pss, swap,
 *                          jemalloc.retained, jemalloc.mapped)
 *   2 bytes       INTEGER  NULL when its source could not be read
 *                          (jemalloc without stats, no /proc)
 *   3 pct_of_rss  REAL     bytes * 100 / rss; NULL on info rows
 *   4 detail      TEXT     what it is, the figures behind it, and what to
 *                          do about it
 *
 * No HIDDEN columns, no constraints used: 21 rows, computed whole in
 * xFilter (one epoch, shared within jemalloc-stats_max_age_ms; smaps read
 * on the worker thread). Reading smaps makes the kernel walk the host's
 * page tables (bench/RESULTS-stats.md measures it): this table is for an
 * operator's question; the Prometheus metrics read /proc/self/status
 * instead, which costs nothing comparable.
 *
 * SQLITE_VTAB_INNOCUOUS: reading changes nothing.
 */
#include "vtab/rss.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/task.h"
#include "core/util.h"
#include "prof/smaps.h"
#include "vtab/jestats.h"
#include "vtab/mallctl.h"

/* ------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------ */

static bool
read_z(const struct ha_mallctl_ops *ops, const char *name, uint64_t *out)
{
    size_t v;

    if (ha_mallctl_read_size(ops, name, &v) != 0)
        return false;
    *out = v;
    return true;
}

/* The merged bins: fragmentation in slabs and its worst size class. */
static void
read_bins(const struct ha_mallctl_ops *ops, struct ha_breakdown_in *in)
{
    struct ha_jestats_classes cl;
    struct ha_mallctl_mib m_regs = {0}, m_slabs = {0};

    memset(&cl, 0, sizeof(cl));
    if (!ha_jestats_classes_load(ops, &cl))
        goto out;
    for (unsigned j = 0; j < cl.nbins; j++) {
        size_t regs, slabs;
        uint64_t total, used, free_b;

        if (ha_mallctl_read_at(ops, "stats.arenas.%u.bins.%u.curregs",
                               &m_regs, HA_JESTATS_MERGED, j, &regs,
                               sizeof(regs)) != 0 ||
            ha_mallctl_read_at(ops, "stats.arenas.%u.bins.%u.curslabs",
                               &m_slabs, HA_JESTATS_MERGED, j, &slabs,
                               sizeof(slabs)) != 0)
            goto out;
        total = (uint64_t)slabs * cl.bin_slab[j];
        used = (uint64_t)regs * cl.bin_size[j];
        free_b = total > used ? total - used : 0;
        in->slab_free += free_b;
        if (free_b > in->worst_free) {
            in->worst_free = free_b;
            in->worst_size = cl.bin_size[j];
            in->worst_slabs = slabs;
            in->worst_util = slabs > 0 && cl.bin_nregs[j] > 0
                                 ? (double)regs /
                                       ((double)slabs * cl.bin_nregs[j])
                                 : 0;
        }
    }
    in->have_bins = true;
out:
    ha_jestats_classes_free(&cl);
}

static void
read_jemalloc(struct ha_vtab_ctx *ctx, bool refresh,
              struct ha_breakdown_in *in)
{
    const struct ha_mallctl_ops *ops = ctx->ops;
    uint64_t page = 0, pdirty = 0, pmuzzy = 0, stashed = 0;

    if (ops == NULL)
        return;
    if (refresh)
        ha_vtab_refresh_stats(ctx);
    in->have_jemalloc =
        read_z(ops, "stats.allocated", &in->allocated) &&
        read_z(ops, "stats.active", &in->active) &&
        read_z(ops, "stats.metadata", &in->metadata) &&
        read_z(ops, "stats.resident", &in->resident) &&
        read_z(ops, "stats.mapped", &in->mapped) &&
        read_z(ops, "stats.retained", &in->retained) &&
        read_z(ops, "arenas.page", &page) &&
        read_z(ops, "stats.arenas.4096.pdirty", &pdirty) &&
        read_z(ops, "stats.arenas.4096.pmuzzy", &pmuzzy);
    if (!in->have_jemalloc)
        return;
    in->dirty = pdirty * page;
    in->muzzy = pmuzzy * page;
    (void)read_z(ops, "stats.arenas.4096.internal", &in->internal);
    (void)read_z(ops, "stats.arenas.4096.tcache_bytes", &in->tcache);
    if (read_z(ops, "stats.arenas.4096.tcache_stashed_bytes", &stashed))
        in->tcache += stashed;
    in->dirty_decay_ms = in->muzzy_decay_ms = -1;
    (void)ha_mallctl_read_ssize(ops, "arenas.dirty_decay_ms",
                                &in->dirty_decay_ms);
    (void)ha_mallctl_read_ssize(ops, "arenas.muzzy_decay_ms",
                                &in->muzzy_decay_ms);
    (void)ha_mallctl_read_unsigned(ops, "arenas.narenas", &in->narenas);
    read_bins(ops, in);
}

/* The worker's job: /proc/self/smaps into memory it owns. */
struct smaps_job {
    struct ha_smaps smaps;
    int rc;
    char err[256];
};

static void
smaps_run(void *arg)
{
    struct smaps_job *j = arg;

    j->rc = ha_smaps_read(HA_RSS_SMAPS, &j->smaps, j->err, sizeof(j->err));
}

int
ha_rss_read(struct ha_vtab_ctx *ctx, bool refresh, bool detailed,
            struct ha_breakdown_row *rows, char *err, size_t errlen)
{
    struct ha_breakdown_in in;
    struct smaps_job *j;

    memset(&in, 0, sizeof(in));
    read_jemalloc(ctx, refresh, &in);
    if (!detailed) {
        char why[256];

        in.have_smaps = ha_smaps_read_status(HA_RSS_STATUS, &in.smaps, why,
                                             sizeof(why)) == 0;
        ha_breakdown_compute(&in, rows);
        return 0;
    }
    if ((j = calloc(1, sizeof(*j))) != NULL) {
        /* On -1 the job is the worker's to finish and free. */
        if (ha_task_offload(smaps_run, free, j) != 0) {
            ha_err_set(err, errlen, "stopped while reading %s",
                       HA_RSS_SMAPS);
            return -1;
        }
        if (j->rc == 0) {
            in.have_smaps = true;
            in.smaps = j->smaps;
        }
        free(j);
    }
    ha_breakdown_compute(&in, rows);
    return 0;
}

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
    if (ha_rss_read(vt->conn->ctx, true, true, rows, err, sizeof(err)) != 0)
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
        if (!rows[i].known)
            continue;
        ha_jestats_int(&row[2], rows[i].bytes);
        if (have_rss && rows[i].kind != HA_BREAKDOWN_INFO)
            ha_jestats_real(&row[3], (double)rows[i].bytes * 100.0 /
                                         (double)rss);
        if (ha_jestats_text(c, &row[4], rows[i].detail) != SQLITE_OK)
            return SQLITE_NOMEM;
    }
    return SQLITE_OK;
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
ha_rss_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    conn->refs++;
    return sqlite3_create_module_v2(db, "stats_memory_breakdown",
                                    &rss_module, conn, ha_vtab_conn_unref);
}
