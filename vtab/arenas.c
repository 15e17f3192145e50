/* SPDX-License-Identifier: MIT
 *
 * stats_jemalloc_arenas: one row per jemalloc arena, and one for all of
 * them merged, from one refresh of jemalloc's statistics. Where RSS sits
 * per arena: pages in use, pages waiting for decay, and the decay
 * settings that return them.
 *
 * Usage:
 *
 *   SELECT * FROM stats_jemalloc_arenas;
 *     The merged row (arena NULL) first, then each initialized arena.
 *   SELECT arena, threads, dirty_bytes, dirty_decay_ms
 *     FROM stats_jemalloc_arenas WHERE arena IS NOT NULL
 *    ORDER BY dirty_bytes DESC;
 *     Which arenas hold freed pages, and how long they keep them.
 *   SELECT * FROM stats_jemalloc_arenas WHERE arena = 0;
 *     One arena; only its figures are read.
 *
 * Schema (mallctl stats.arenas.<i>.<name>, i = 4096 on the merged row):
 *    0 arena            INTEGER  index; NULL: all arenas merged
 *    1 threads          INTEGER  nthreads: threads assigned to it
 *    2 pactive          INTEGER  pages in active extents
 *    3 pdirty           INTEGER  pages freed, waiting for dirty decay
 *    4 pmuzzy           INTEGER  pages purged lazily (MADV_FREE), waiting
 *                                for muzzy decay
 *    5 active_bytes     INTEGER  pactive * arenas.page
 *    6 dirty_bytes      INTEGER  pdirty * page
 *    7 muzzy_bytes      INTEGER  pmuzzy * page
 *    8 mapped           INTEGER  mapped (bytes; virtual)
 *    9 retained         INTEGER  retained (bytes; virtual, not resident)
 *   10 resident         INTEGER  resident (bytes; a maximum: pages handed
 *                                out but never written count too)
 *   11 allocated_small  INTEGER  small.allocated (bytes)
 *   12 allocated_large  INTEGER  large.allocated (bytes)
 *   13 metadata         INTEGER  base + internal (bytes)
 *   14 tcache_bytes     INTEGER  tcache_bytes + tcache_stashed_bytes: freed
 *                                objects cached by its threads
 *   15 dirty_decay_ms   INTEGER  dirty_decay_ms (-1: never); the merged
 *                                row shows arenas.dirty_decay_ms, the
 *                                setting new arenas get
 *   16 muzzy_decay_ms   INTEGER  muzzy_decay_ms, likewise
 *   17 dirty_npurge     INTEGER  dirty_npurge: purge sweeps so far
 *   18 dirty_purged     INTEGER  dirty_purged: pages purged so far
 *   19 muzzy_npurge     INTEGER  muzzy_npurge
 *   20 muzzy_purged     INTEGER  muzzy_purged
 * A figure whose mallctl fails (an older jemalloc) is NULL.
 *
 * xBestIndex/xFilter plan (idxNum bits, jestats.h): HA_JESTATS_IDX_ARENA
 * (`arena = ?`, argv[0]) or HA_JESTATS_IDX_MERGED (`arena IS NULL`);
 * otherwise every row. xFilter writes "epoch" once (shared within
 * jemalloc-stats_max_age_ms, like stats_memory_jemalloc) and reads each
 * figure by MIB (ha_mallctl_read_at).
 *
 * SQLITE_VTAB_INNOCUOUS: reading statistics changes nothing.
 */
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "core/util.h"
#include "vtab/jestats.h"

#define ARENAS_SCHEMA                                                      \
    "CREATE TABLE x(arena INTEGER, threads INTEGER, pactive INTEGER, "     \
    "pdirty INTEGER, pmuzzy INTEGER, active_bytes INTEGER, "               \
    "dirty_bytes INTEGER, muzzy_bytes INTEGER, mapped INTEGER, "           \
    "retained INTEGER, resident INTEGER, allocated_small INTEGER, "        \
    "allocated_large INTEGER, metadata INTEGER, tcache_bytes INTEGER, "    \
    "dirty_decay_ms INTEGER, muzzy_decay_ms INTEGER, dirty_npurge "        \
    "INTEGER, dirty_purged INTEGER, muzzy_npurge INTEGER, muzzy_purged "   \
    "INTEGER)"
#define ARENAS_COL_ARENA 0
#define ARENAS_N_COLS 21

enum arenas_type { T_UNSIGNED, T_SIZE, T_SSIZE, T_U64 };

/* Columns read straight from one mallctl each. */
static const struct {
    int col;
    const char *fmt;
    enum arenas_type type;
} direct[] = {
    {1, "stats.arenas.%u.nthreads", T_UNSIGNED},
    {2, "stats.arenas.%u.pactive", T_SIZE},
    {3, "stats.arenas.%u.pdirty", T_SIZE},
    {4, "stats.arenas.%u.pmuzzy", T_SIZE},
    {8, "stats.arenas.%u.mapped", T_SIZE},
    {9, "stats.arenas.%u.retained", T_SIZE},
    {10, "stats.arenas.%u.resident", T_SIZE},
    {11, "stats.arenas.%u.small.allocated", T_SIZE},
    {12, "stats.arenas.%u.large.allocated", T_SIZE},
    {15, "stats.arenas.%u.dirty_decay_ms", T_SSIZE},
    {16, "stats.arenas.%u.muzzy_decay_ms", T_SSIZE},
    {17, "stats.arenas.%u.dirty_npurge", T_U64},
    {18, "stats.arenas.%u.dirty_purged", T_U64},
    {19, "stats.arenas.%u.muzzy_npurge", T_U64},
    {20, "stats.arenas.%u.muzzy_purged", T_U64},
};

/* The figures summed into one column. */
enum {
    M_BASE, M_INTERNAL, M_TCACHE, M_STASHED, M_MAX
};
static const char *const summed[M_MAX] = {
    "stats.arenas.%u.base",
    "stats.arenas.%u.internal",
    "stats.arenas.%u.tcache_bytes",
    "stats.arenas.%u.tcache_stashed_bytes",
};

typedef struct arenas_vtab arenas_vtab;
struct arenas_vtab {
    ha_jestats_vtab base;                            /* must be first */
    struct ha_mallctl_mib mibs[HA_ARRAY_SIZE(direct)]; /* per direct */
    struct ha_mallctl_mib sum_mibs[M_MAX];
};

/* Reads one figure as a long long; false when the mallctl fails. */
static bool
read_one(const struct ha_mallctl_ops *ops, const char *fmt,
         struct ha_mallctl_mib *m, unsigned arena, enum arenas_type type,
         long long *out)
{
    union {
        unsigned u;
        size_t z;
        ssize_t s;
        uint64_t q;
    } v;
    size_t len = type == T_UNSIGNED ? sizeof(v.u)
                 : type == T_SIZE   ? sizeof(v.z)
                 : type == T_SSIZE  ? sizeof(v.s)
                                    : sizeof(v.q);

    if (ha_mallctl_read_at(ops, fmt, m, arena, 0, &v, len) != 0)
        return false;
    switch (type) {
    case T_UNSIGNED:
        *out = v.u;
        break;
    case T_SIZE:
        *out = (long long)v.z;
        break;
    case T_SSIZE:
        *out = (long long)v.s;
        break;
    case T_U64:
        *out = v.q > INT64_MAX ? INT64_MAX : (long long)v.q;
        break;
    }
    return true;
}

/* Fills one row for arena (HA_JESTATS_MERGED: all). */
static void
arena_row(arenas_vtab *vt, unsigned arena, size_t page,
          struct ha_jestats_cell *row)
{
    const struct ha_mallctl_ops *ops = vt->base.conn->ctx->heap->ops;
    long long v = 0, sum[M_MAX] = {0};
    bool have[M_MAX];

    if (arena != HA_JESTATS_MERGED)
        ha_jestats_int(&row[ARENAS_COL_ARENA], arena);
    for (size_t k = 0; k < HA_ARRAY_SIZE(direct); k++)
        if (read_one(ops, direct[k].fmt, &vt->mibs[k], arena, direct[k].type,
                     &v))
            ha_jestats_int(&row[direct[k].col], v);
    for (int k = 0; k < M_MAX; k++)
        have[k] = read_one(ops, summed[k], &vt->sum_mibs[k], arena, T_SIZE,
                           &sum[k]);
    if (have[M_BASE] && have[M_INTERNAL])
        ha_jestats_int(&row[13], sum[M_BASE] + sum[M_INTERNAL]);
    if (have[M_TCACHE])
        ha_jestats_int(&row[14], sum[M_TCACHE] +
                                     (have[M_STASHED] ? sum[M_STASHED] : 0));
    /* Bytes from pages. */
    for (int k = 0; k < 3 && page > 0; k++)
        if (row[2 + k].type == HA_JESTATS_INT)
            ha_jestats_int(&row[5 + k], row[2 + k].v.i * (long long)page);
    /* The merged row's decay: the setting new arenas get. */
    if (arena == HA_JESTATS_MERGED) {
        ssize_t ms;

        row[15].type = row[16].type = HA_JESTATS_NULL;
        if (ha_mallctl_read_ssize(ops, "arenas.dirty_decay_ms", &ms) == 0)
            ha_jestats_int(&row[15], ms);
        if (ha_mallctl_read_ssize(ops, "arenas.muzzy_decay_ms", &ms) == 0)
            ha_jestats_int(&row[16], ms);
    }
}

static int
arenas_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
               sqlite3_vtab **ppVtab, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_jestats_connect(db, aux, ARENAS_SCHEMA, ARENAS_N_COLS,
                              sizeof(arenas_vtab), ppVtab, pzErr);
}

static int
arenas_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    return ha_jestats_best_index(info, ARENAS_COL_ARENA, 1);
}

/* One refresh of the statistics, then a row per arena of the plan. */
static int
arenas_filter(sqlite3_vtab_cursor *cursor, int idxNum, const char *idxStr,
              int argc, sqlite3_value **argv)
{
    ha_jestats_cursor *c = (ha_jestats_cursor *)cursor;
    arenas_vtab *vt = (arenas_vtab *)cursor->pVtab;
    const struct ha_mallctl_ops *ops = vt->base.conn->ctx->heap->ops;
    unsigned *list = NULL;
    size_t n = 0, page = 0;
    int rc;

    (void)idxStr;
    ha_jestats_clear(c);
    ha_heap_refresh_stats(vt->base.conn->ctx->heap);
    (void)ha_mallctl_read_size(ops, "arenas.page", &page);
    rc = ha_jestats_arenas(ops, idxNum, argc, argv, &list, &n);
    for (size_t k = 0; rc == SQLITE_OK && k < n; k++) {
        struct ha_jestats_cell *row = ha_jestats_row(c);

        if (row == NULL)
            rc = SQLITE_NOMEM;
        else
            arena_row(vt, list[k], page, row);
    }
    sqlite3_free(list);
    return rc;
}

static const sqlite3_module arenas_module = {
    0,                  /* iVersion */
    arenas_connect,     /* xCreate - a session's own (temp) */
    arenas_connect,     /* xConnect - declare schema */
    arenas_best_index,  /* xBestIndex - arena = ?, arena IS NULL */
    ha_jestats_disconnect,  /* xDisconnect */
    ha_jestats_disconnect,  /* xDestroy */
    ha_jestats_open,    /* xOpen */
    ha_jestats_close,   /* xClose */
    arenas_filter,      /* xFilter - epoch, then the rows */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    ha_jestats_column,  /* xColumn */
    ha_cursor_rowid,    /* xRowid */
    NULL,               /* xUpdate - read-only */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

int
ha_arenas_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    conn->refs++;
    return sqlite3_create_module_v2(db, "stats_jemalloc_arenas",
                                    &arenas_module, conn,
                                    ha_vtab_conn_unref);
}
