/* SPDX-License-Identifier: MIT
 *
 * What the tables of jemalloc's per-arena and per-size-class statistics
 * share (arenas.c, bins.c, memory_breakdown.c): the `arena` column's plan (one
 * arena, the merged row, or all), the list of arenas to read, the size
 * classes (read once: they never change), and a cursor over rows built
 * whole in xFilter from one refresh of the statistics.
 *
 * The `arena` column is the arena index, or NULL on the row of all
 * arenas merged (jemalloc's stats.arenas.4096). xBestIndex takes
 * `arena = ?` (that arena only) and `arena IS NULL` (the merged row
 * only); otherwise the merged row comes first, then every initialized
 * arena in index order. Arenas jemalloc has not initialized (arenas.
 * narenas counts the slots, threads create arenas as they need them) are
 * skipped.
 */
#ifndef HA_JESTATS_H
#define HA_JESTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "vtab/cursor.h"
#include "heap/mallctl.h"
#include "heap/sizeclasses.h"
#include "vtab/vtab_util.h"

/* jemalloc's MALLCTL_ARENAS_ALL: the merged statistics. */
#define HA_JESTATS_MERGED ((unsigned)HA_MALLCTL_ARENAS_ALL)

/* idxNum bits of ha_jestats_best_index(). */
#define HA_JESTATS_IDX_ARENA (1u << 0)  /* argv[0] = the arena index */
#define HA_JESTATS_IDX_MERGED (1u << 1) /* arena IS NULL */

/* xBestIndex on column arena_col; rows_per_arena prices the plans. */
int ha_jestats_best_index(sqlite3_index_info *info, int arena_col,
                          double rows_per_arena);

/* The arenas a scan reads, from xFilter's plan: HA_JESTATS_MERGED first
 * unless one arena was asked for, then the initialized arenas (the
 * asked-for one only, when it is). *out is sqlite3_malloc'd. Returns
 * SQLITE_OK or SQLITE_NOMEM. */
int ha_jestats_arenas(const struct ha_mallctl_ops *ops, int idxNum,
                      int argc, sqlite3_value **argv, unsigned **out,
                      size_t *n);

/* One value of a built row. */
enum ha_jestats_type {
    HA_JESTATS_NULL,
    HA_JESTATS_INT,
    HA_JESTATS_REAL,
    HA_JESTATS_TEXT      /* static, or owned by the cursor's strings */
};

struct ha_jestats_cell {
    enum ha_jestats_type type;
    union {
        sqlite3_int64 i;
        double d;
        const char *s;
    } v;
};

/* A cursor over rows of n_cols cells built in xFilter: the row-array
 * cursor (vtab/cursor.h) walks them, rc.end following n_rows. */
typedef struct ha_jestats_cursor ha_jestats_cursor;
struct ha_jestats_cursor {
    struct ha_cursor rc;           /* Base class - must be first */
    struct ha_jestats_cell *cells; /* n_rows * n_cols */
    size_t n_cols;
    size_t n_rows, cap_rows;
    char **strings;                /* text the cells own */
    size_t n_strings;
};

/* Appends a row of NULL cells; returns it, or NULL on allocation
 * failure. */
struct ha_jestats_cell *ha_jestats_row(ha_jestats_cursor *c);

static inline void
ha_jestats_int(struct ha_jestats_cell *cell, long long v)
{
    cell->type = HA_JESTATS_INT;
    cell->v.i = v;
}

static inline void
ha_jestats_real(struct ha_jestats_cell *cell, double v)
{
    cell->type = HA_JESTATS_REAL;
    cell->v.d = v;
}

/* A text cell the cursor keeps a copy of. Returns SQLITE_OK or
 * SQLITE_NOMEM. */
int ha_jestats_text(ha_jestats_cursor *c, struct ha_jestats_cell *cell,
                    const char *s);

/* The cursor methods every such table uses besides vtab/cursor.h's
 * xNext, xEof and xRowid: xOpen (n_cols from the vtab: it must start
 * with struct ha_jestats_vtab), xClose, xColumn; ha_jestats_clear
 * empties the rows for a new xFilter. */
typedef struct ha_jestats_vtab ha_jestats_vtab;
struct ha_jestats_vtab {
    sqlite3_vtab base;             /* Base class - must be first */
    struct ha_vtab_conn *conn;     /* ctx->ops reaches jemalloc */
    size_t n_cols;                 /* columns of a row */
};

/* xConnect body: declares schema and allocates a zeroed vtab of size
 * bytes (a struct starting with ha_jestats_vtab) with conn = aux and
 * n_cols set. Returns SQLITE_OK, or an error with *pzErr set. */
int ha_jestats_connect(sqlite3 *db, void *aux, const char *schema,
                       size_t n_cols, size_t size, sqlite3_vtab **ppVtab,
                       char **pzErr);
int ha_jestats_disconnect(sqlite3_vtab *vtab);
int ha_jestats_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **pp);
int ha_jestats_close(sqlite3_vtab_cursor *cur);
int ha_jestats_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx,
                      int col);
void ha_jestats_clear(ha_jestats_cursor *c);

/* Module registration (arenas.c, bins.c, memory_breakdown.c), from vtab.c. */
int ha_arenas_register(sqlite3 *db, struct ha_vtab_conn *conn);
int ha_bins_register(sqlite3 *db, struct ha_vtab_conn *conn);
int ha_memory_breakdown_register(sqlite3 *db, struct ha_vtab_conn *conn);

#endif /* HA_JESTATS_H */
