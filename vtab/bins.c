/* SPDX-License-Identifier: MIT
 *
 * stats_jemalloc_bins and stats_jemalloc_lextents: jemalloc's size
 * classes, per arena and merged, from one refresh of its statistics.
 * Small allocations live in slabs of equal regions (bins); a slab whose
 * regions are mostly free still holds its pages, which is where
 * fragmentation of a size class shows. Large allocations (lextents) are
 * extents of their own.
 *
 * Usage:
 *
 *   SELECT size, curregs, curslabs, utilization, free_bytes
 *     FROM stats_jemalloc_bins WHERE arena IS NULL
 *    ORDER BY free_bytes DESC LIMIT 5;
 *     The size classes that waste most (merged over all arenas).
 *   SELECT arena, curslabs, utilization FROM stats_jemalloc_bins
 *    WHERE size = 4096 AND arena IS NOT NULL;
 *     One class, arena by arena.
 *   SELECT size, curlextents, allocated_bytes FROM stats_jemalloc_lextents
 *    WHERE arena IS NULL AND curlextents > 0;
 *     Large allocations in use, by size class.
 *
 * Schema of stats_jemalloc_bins (mallctl stats.arenas.<i>.bins.<j>.<name>;
 * arenas.bin.<j>.<name> for the class's constants):
 *    0 arena          INTEGER  index; NULL: all arenas merged
 *    1 bin            INTEGER  j, the size class's index
 *    2 size           INTEGER  region size, bytes (arenas.bin.<j>.size)
 *    3 nregs          INTEGER  regions per slab (arenas.bin.<j>.nregs)
 *    4 slab_size      INTEGER  bytes per slab (arenas.bin.<j>.slab_size)
 *    5 curregs        INTEGER  regions in use, thread caches' included
 *    6 curslabs       INTEGER  slabs
 *    7 nonfull_slabs  INTEGER  slabs with a free region
 *    8 utilization    REAL     curregs / (curslabs * nregs); NULL
 *                              without slabs
 *    9 allocated_bytes INTEGER curregs * size
 *   10 free_bytes     INTEGER  curslabs * slab_size - allocated_bytes:
 *                              this class's part of fragmentation
 *   11 nmalloc        INTEGER  allocations served (cumulative)
 *   12 ndalloc        INTEGER  deallocations (cumulative)
 *   13 nrequests      INTEGER  requests, thread caches' hits included
 *   14 nfills         INTEGER  thread-cache fills
 *   15 nflushes       INTEGER  thread-cache flushes
 *   16 nslabs         INTEGER  slabs created (cumulative)
 *   17 nreslabs       INTEGER  times a slab was swapped for another
 *   18 prof_live      INTEGER  sampled objects of the class live now
 *                              (prof.stats.bins.<j>.live's count)
 *   19 prof_live_requested INTEGER  the sizes they were asked with
 *   20 requested_bytes INTEGER allocated_bytes at the sampled objects'
 *                              requested-to-usable ratio: what the
 *                              program asked for, estimated
 *   21 rounding_waste_bytes INTEGER allocated_bytes - requested_bytes:
 *                              lost to rounding up to the class's size
 *                              (33-byte objects in the 48-byte class
 *                              waste 15 bytes each)
 *   Columns 18-21 need opt.prof_stats (start-up: MALLOC_CONF=prof:true,
 *   prof_stats:true), which counts sampled objects only, per class and
 *   not per arena: merged rows only, NULL otherwise. Statistical, as the
 *   samples are.
 *
 * Schema of stats_jemalloc_lextents (stats.arenas.<i>.lextents.<j>.*):
 *    0 arena          INTEGER  index; NULL: all arenas merged
 *    1 lextent        INTEGER  j
 *    2 size           INTEGER  bytes (arenas.lextent.<j>.size)
 *    3 curlextents    INTEGER  extents in use
 *    4 allocated_bytes INTEGER curlextents * size
 *    5 nmalloc        INTEGER  (cumulative)
 *    6 ndalloc        INTEGER
 *    7 nrequests      INTEGER
 *
 * xBestIndex/xFilter plan (idxNum bits, jestats.h): HA_JESTATS_IDX_ARENA
 * (`arena = ?`, argv[0]) or HA_JESTATS_IDX_MERGED (`arena IS NULL`);
 * otherwise the merged rows, then every initialized arena's. xFilter
 * writes "epoch" once (shared within jemalloc-stats_max_age_ms) and reads
 * every figure by MIB (ha_mallctl_read_at), as malloc_stats_print does;
 * the refresh is what locks each arena's bins, briefly, one at a time
 * (bench/stats-cost measures it). A figure whose mallctl fails is NULL.
 *
 * SQLITE_VTAB_INNOCUOUS: reading statistics changes nothing.
 */
#include <stdint.h>
#include <string.h>

#include "core/util.h"
#include "vtab/jestats.h"

#define BINS_SCHEMA                                                        \
    "CREATE TABLE x(arena INTEGER, bin INTEGER, size INTEGER, nregs "      \
    "INTEGER, slab_size INTEGER, curregs INTEGER, curslabs INTEGER, "      \
    "nonfull_slabs INTEGER, utilization REAL, allocated_bytes INTEGER, "   \
    "free_bytes INTEGER, nmalloc INTEGER, ndalloc INTEGER, nrequests "     \
    "INTEGER, nfills INTEGER, nflushes INTEGER, nslabs INTEGER, nreslabs " \
    "INTEGER, prof_live INTEGER, prof_live_requested INTEGER, "           \
    "requested_bytes INTEGER, rounding_waste_bytes INTEGER)"
#define BINS_N_COLS 22

#define LEXT_SCHEMA                                                        \
    "CREATE TABLE x(arena INTEGER, lextent INTEGER, size INTEGER, "        \
    "curlextents INTEGER, allocated_bytes INTEGER, nmalloc INTEGER, "      \
    "ndalloc INTEGER, nrequests INTEGER)"
#define LEXT_N_COLS 8

#define COL_ARENA 0

/* Per-bin figures: column, mallctl, size_t (else uint64_t). */
static const struct {
    int col;
    const char *fmt;
    bool is_size;
} bin_figs[] = {
    {5, "stats.arenas.%u.bins.%u.curregs", true},
    {6, "stats.arenas.%u.bins.%u.curslabs", true},
    {7, "stats.arenas.%u.bins.%u.nonfull_slabs", true},
    {11, "stats.arenas.%u.bins.%u.nmalloc", false},
    {12, "stats.arenas.%u.bins.%u.ndalloc", false},
    {13, "stats.arenas.%u.bins.%u.nrequests", false},
    {14, "stats.arenas.%u.bins.%u.nfills", false},
    {15, "stats.arenas.%u.bins.%u.nflushes", false},
    {16, "stats.arenas.%u.bins.%u.nslabs", false},
    {17, "stats.arenas.%u.bins.%u.nreslabs", false},
};

static const struct {
    int col;
    const char *fmt;
    bool is_size;
} lext_figs[] = {
    {3, "stats.arenas.%u.lextents.%u.curlextents", true},
    {5, "stats.arenas.%u.lextents.%u.nmalloc", false},
    {6, "stats.arenas.%u.lextents.%u.ndalloc", false},
    {7, "stats.arenas.%u.lextents.%u.nrequests", false},
};

_Static_assert(HA_ARRAY_SIZE(lext_figs) <= HA_ARRAY_SIZE(bin_figs),
               "bins_vtab.mibs serves both tables");

typedef struct bins_vtab bins_vtab;
struct bins_vtab {
    ha_jestats_vtab base;                  /* must be first */
    bool large;                            /* lextents, not bins */
    struct ha_sizeclasses classes;     /* read once */
    struct ha_mallctl_mib mibs[HA_ARRAY_SIZE(bin_figs)]; /* per figure */
    struct ha_mallctl_mib prof_live;       /* prof.stats.bins.<j>.live */
};

/* jemalloc's prof_stats_t (include/jemalloc/internal/prof_stats.h). */
struct prof_stats {
    uint64_t req_sum;
    uint64_t count;
};

/* Columns 18-21 of a merged row: requested against usable bytes, from
 * the sampled objects (opt.prof_stats). */
static void
rounding(bins_vtab *vt, unsigned j, struct ha_jestats_cell *row)
{
    const struct ha_mallctl_ops *ops = vt->base.conn->ctx->heap->ops;
    const struct ha_sizeclasses *cl = &vt->classes;
    struct prof_stats ps;
    double ratio, requested;

    if (ha_mallctl_read_at(ops, "prof.stats.bins.%u.live", &vt->prof_live, j,
                           0, &ps, sizeof(ps)) != 0)
        return;
    ha_jestats_int(&row[18], ps.count > INT64_MAX ? INT64_MAX
                                                  : (long long)ps.count);
    ha_jestats_int(&row[19], ps.req_sum > INT64_MAX ? INT64_MAX
                                                    : (long long)ps.req_sum);
    if (ps.count == 0 || cl->bin_size[j] == 0 ||
        row[9].type != HA_JESTATS_INT)
        return;
    ratio = (double)ps.req_sum / ((double)ps.count * (double)cl->bin_size[j]);
    if (ratio > 1)
        ratio = 1;
    requested = (double)row[9].v.i * ratio;
    ha_jestats_int(&row[20], (long long)(requested + 0.5));
    ha_jestats_int(&row[21], row[9].v.i - (long long)(requested + 0.5));
}

static bool
read_fig(const struct ha_mallctl_ops *ops, const char *fmt,
         struct ha_mallctl_mib *m, unsigned arena, unsigned j, bool is_size,
         struct ha_jestats_cell *cell)
{
    size_t z;
    uint64_t q;

    if (is_size) {
        if (ha_mallctl_read_at(ops, fmt, m, arena, j, &z, sizeof(z)) != 0)
            return false;
        ha_jestats_int(cell, (long long)z);
    } else {
        if (ha_mallctl_read_at(ops, fmt, m, arena, j, &q, sizeof(q)) != 0)
            return false;
        ha_jestats_int(cell, q > INT64_MAX ? INT64_MAX : (long long)q);
    }
    return true;
}

/* The rows of one arena's bins. */
static int
bin_rows(bins_vtab *vt, ha_jestats_cursor *c, unsigned arena)
{
    const struct ha_mallctl_ops *ops = vt->base.conn->ctx->heap->ops;
    const struct ha_sizeclasses *cl = &vt->classes;

    for (unsigned j = 0; j < cl->nbins; j++) {
        struct ha_jestats_cell *row = ha_jestats_row(c);
        long long curregs, curslabs;

        if (row == NULL)
            return SQLITE_NOMEM;
        if (arena != HA_JESTATS_MERGED)
            ha_jestats_int(&row[COL_ARENA], arena);
        ha_jestats_int(&row[1], j);
        ha_jestats_int(&row[2], (long long)cl->bin_size[j]);
        ha_jestats_int(&row[3], cl->bin_nregs[j]);
        ha_jestats_int(&row[4], (long long)cl->bin_slab[j]);
        for (size_t k = 0; k < HA_ARRAY_SIZE(bin_figs); k++)
            (void)read_fig(ops, bin_figs[k].fmt, &vt->mibs[k], arena, j,
                           bin_figs[k].is_size, &row[bin_figs[k].col]);
        if (row[5].type != HA_JESTATS_INT || row[6].type != HA_JESTATS_INT)
            continue;
        curregs = row[5].v.i;
        curslabs = row[6].v.i;
        if (curslabs > 0 && cl->bin_nregs[j] > 0)
            ha_jestats_real(&row[8],
                            (double)curregs /
                                ((double)curslabs * cl->bin_nregs[j]));
        ha_jestats_int(&row[9], curregs * (long long)cl->bin_size[j]);
        ha_jestats_int(&row[10], curslabs * (long long)cl->bin_slab[j] -
                                     curregs * (long long)cl->bin_size[j]);
        if (arena == HA_JESTATS_MERGED)
            rounding(vt, j, row);
    }
    return SQLITE_OK;
}

/* The rows of one arena's large size classes. */
static int
lext_rows(bins_vtab *vt, ha_jestats_cursor *c, unsigned arena)
{
    const struct ha_mallctl_ops *ops = vt->base.conn->ctx->heap->ops;
    const struct ha_sizeclasses *cl = &vt->classes;

    for (unsigned j = 0; j < cl->nlextents; j++) {
        struct ha_jestats_cell *row = ha_jestats_row(c);

        if (row == NULL)
            return SQLITE_NOMEM;
        if (arena != HA_JESTATS_MERGED)
            ha_jestats_int(&row[COL_ARENA], arena);
        ha_jestats_int(&row[1], j);
        ha_jestats_int(&row[2], (long long)cl->lext_size[j]);
        for (size_t k = 0; k < HA_ARRAY_SIZE(lext_figs); k++)
            (void)read_fig(ops, lext_figs[k].fmt, &vt->mibs[k], arena, j,
                           lext_figs[k].is_size, &row[lext_figs[k].col]);
        if (row[3].type == HA_JESTATS_INT)
            ha_jestats_int(&row[4],
                           row[3].v.i * (long long)cl->lext_size[j]);
    }
    return SQLITE_OK;
}

static int
connect_table(sqlite3 *db, void *aux, bool large, sqlite3_vtab **ppVtab,
              char **pzErr)
{
    int rc = ha_jestats_connect(db, aux, large ? LEXT_SCHEMA : BINS_SCHEMA,
                                large ? LEXT_N_COLS : BINS_N_COLS,
                                sizeof(bins_vtab), ppVtab, pzErr);

    if (rc == SQLITE_OK)
        ((bins_vtab *)*ppVtab)->large = large;
    return rc;
}

static int
bins_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **ppVtab, char **pzErr)
{
    (void)argc;
    (void)argv;
    return connect_table(db, aux, false, ppVtab, pzErr);
}

static int
lext_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **ppVtab, char **pzErr)
{
    (void)argc;
    (void)argv;
    return connect_table(db, aux, true, ppVtab, pzErr);
}

static int
bins_disconnect(sqlite3_vtab *vtab)
{
    bins_vtab *vt = (bins_vtab *)vtab;

    ha_sizeclasses_free(&vt->classes);
    sqlite3_free(vt);
    return SQLITE_OK;
}

static int
bins_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    bins_vtab *vt = (bins_vtab *)vtab;

    return ha_jestats_best_index(info, COL_ARENA, vt->large ? 200 : 40);
}

/* One refresh of the statistics, then the classes of each arena of the
 * plan. Without the size classes (jemalloc without stats), no rows. */
static int
bins_filter(sqlite3_vtab_cursor *cursor, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    ha_jestats_cursor *c = (ha_jestats_cursor *)cursor;
    bins_vtab *vt = (bins_vtab *)cursor->pVtab;
    const struct ha_mallctl_ops *ops = vt->base.conn->ctx->heap->ops;
    unsigned *list = NULL;
    size_t n = 0;
    int rc;

    (void)idxStr;
    ha_jestats_clear(c);
    if (!ha_sizeclasses_load(ops, &vt->classes))
        return SQLITE_OK;
    ha_heap_refresh_stats(vt->base.conn->ctx->heap);
    rc = ha_jestats_arenas(ops, idxNum, argc, argv, &list, &n);
    for (size_t k = 0; rc == SQLITE_OK && k < n; k++)
        rc = vt->large ? lext_rows(vt, c, list[k])
                       : bin_rows(vt, c, list[k]);
    sqlite3_free(list);
    return rc;
}

#define BINS_MODULE(connect_fn)                                            \
    {                                                                      \
        0,                 /* iVersion */                                  \
        connect_fn,        /* xCreate - a session's own (temp) */          \
        connect_fn,        /* xConnect - declare schema */                 \
        bins_best_index,   /* xBestIndex - arena = ?, arena IS NULL */     \
        bins_disconnect,   /* xDisconnect - frees the classes */           \
        bins_disconnect,   /* xDestroy */                                  \
        ha_jestats_open,   /* xOpen */                                     \
        ha_jestats_close,  /* xClose */                                    \
        bins_filter,       /* xFilter - epoch, then the rows */            \
        ha_cursor_next,    /* xNext */                                     \
        ha_cursor_eof,     /* xEof */                                      \
        ha_jestats_column, /* xColumn */                                   \
        ha_cursor_rowid,   /* xRowid */                                    \
        NULL,              /* xUpdate - read-only */                       \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,        \
    }

static const sqlite3_module bins_module = BINS_MODULE(bins_connect);
static const sqlite3_module lext_module = BINS_MODULE(lext_connect);

int
ha_bins_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    int rc;

    conn->refs++;
    rc = sqlite3_create_module_v2(db, "stats_jemalloc_bins", &bins_module,
                                  conn, ha_vtab_conn_unref);
    if (rc != SQLITE_OK)
        return rc;
    conn->refs++;
    return sqlite3_create_module_v2(db, "stats_jemalloc_lextents",
                                    &lext_module, conn, ha_vtab_conn_unref);
}
