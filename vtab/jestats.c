/* SPDX-License-Identifier: MIT
 *
 * What the per-arena and per-size-class tables share (see jestats.h).
 */
#include "vtab/jestats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------
 * The arena column
 * ------------------------------------------------------------------ */

int
ha_jestats_best_index(sqlite3_index_info *info, int arena_col,
                      double rows_per_arena)
{
    int eq = -1, isnull = -1;

    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];

        if (!c->usable || c->iColumn != arena_col)
            continue;
        if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && eq < 0)
            eq = i;
        else if (c->op == SQLITE_INDEX_CONSTRAINT_ISNULL && isnull < 0)
            isnull = i;
    }
    info->idxNum = 0;
    if (eq >= 0) {
        info->aConstraintUsage[eq].argvIndex = 1;
        info->aConstraintUsage[eq].omit = 1;
        info->idxNum = HA_JESTATS_IDX_ARENA;
        info->estimatedCost = rows_per_arena;
        info->estimatedRows = (sqlite3_int64)rows_per_arena;
    } else if (isnull >= 0) {
        info->aConstraintUsage[isnull].omit = 1;
        info->idxNum = HA_JESTATS_IDX_MERGED;
        info->estimatedCost = rows_per_arena;
        info->estimatedRows = (sqlite3_int64)rows_per_arena;
    } else {
        info->estimatedCost = rows_per_arena * 16;
        info->estimatedRows = (sqlite3_int64)(rows_per_arena * 16);
    }
    return SQLITE_OK;
}

/* Is arena i initialized? Its nthreads reads ENOENT when not. */
static bool
arena_exists(const struct ha_mallctl_ops *ops, struct ha_mallctl_mib *m,
             unsigned i)
{
    unsigned n;

    return ha_mallctl_read_at(ops, "stats.arenas.%u.nthreads", m, i, 0, &n,
                              sizeof(n)) == 0;
}

int
ha_jestats_arenas(const struct ha_mallctl_ops *ops, int idxNum, int argc,
                  sqlite3_value **argv, unsigned **out, size_t *n)
{
    struct ha_mallctl_mib m = {0};
    unsigned narenas = 0, *list;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    if ((idxNum & HA_JESTATS_IDX_ARENA) && argc >= 1) {
        sqlite3_int64 want;

        /* `arena = 'x'` or a number no arena has: no rows. */
        if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER)
            return SQLITE_OK;
        want = sqlite3_value_int64(argv[0]);
        if (want < 0 || want >= HA_JESTATS_MERGED ||
            !arena_exists(ops, &m, (unsigned)want))
            return SQLITE_OK;
        if ((list = sqlite3_malloc(sizeof(*list))) == NULL)
            return SQLITE_NOMEM;
        list[0] = (unsigned)want;
        *out = list;
        *n = 1;
        return SQLITE_OK;
    }
    if (idxNum & HA_JESTATS_IDX_MERGED)
        narenas = 0;
    else if (ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas) != 0)
        narenas = 0;
    if (narenas > HA_JESTATS_MERGED)
        narenas = HA_JESTATS_MERGED;
    list = sqlite3_malloc64(((sqlite3_uint64)narenas + 1) * sizeof(*list));
    if (list == NULL)
        return SQLITE_NOMEM;
    list[k++] = HA_JESTATS_MERGED;
    for (unsigned i = 0; i < narenas; i++)
        if (arena_exists(ops, &m, i))
            list[k++] = i;
    *out = list;
    *n = k;
    return SQLITE_OK;
}

/* ------------------------------------------------------------------
 * The cursor
 * ------------------------------------------------------------------ */

struct ha_jestats_cell *
ha_jestats_row(ha_jestats_cursor *c)
{
    struct ha_jestats_cell *row;

    if (c->n_rows == c->cap_rows) {
        size_t cap = c->cap_rows ? c->cap_rows * 2 : 64;
        struct ha_jestats_cell *v =
            sqlite3_realloc64(c->cells, (sqlite3_uint64)cap * c->n_cols *
                                            sizeof(*v));

        if (v == NULL)
            return NULL;
        c->cells = v;
        c->cap_rows = cap;
    }
    row = &c->cells[c->n_rows * c->n_cols];
    memset(row, 0, c->n_cols * sizeof(*row));
    c->n_rows++;
    c->rc.end = c->n_rows;
    return row;
}

int
ha_jestats_text(ha_jestats_cursor *c, struct ha_jestats_cell *cell,
                const char *s)
{
    char **v = sqlite3_realloc64(c->strings, ((sqlite3_uint64)c->n_strings +
                                              1) * sizeof(*v));
    char *copy;

    if (v == NULL)
        return SQLITE_NOMEM;
    c->strings = v;
    if ((copy = sqlite3_mprintf("%s", s)) == NULL)
        return SQLITE_NOMEM;
    c->strings[c->n_strings++] = copy;
    cell->type = HA_JESTATS_TEXT;
    cell->v.s = copy;
    return SQLITE_OK;
}

void
ha_jestats_clear(ha_jestats_cursor *c)
{
    for (size_t i = 0; i < c->n_strings; i++)
        sqlite3_free(c->strings[i]);
    sqlite3_free(c->strings);
    c->strings = NULL;
    c->n_strings = 0;
    c->n_rows = 0;
    ha_cursor_rewind(&c->rc, 0, 0);
}

int
ha_jestats_connect(sqlite3 *db, void *aux, const char *schema,
                   size_t n_cols, size_t size, sqlite3_vtab **ppVtab,
                   char **pzErr)
{
    ha_jestats_vtab *vt;
    int rc = ha_vtab_new(db, schema, SQLITE_VTAB_INNOCUOUS, size, ppVtab,
                         pzErr);

    if (rc != SQLITE_OK)
        return rc;
    vt = (ha_jestats_vtab *)*ppVtab;
    vt->conn = aux;
    vt->n_cols = n_cols;
    return SQLITE_OK;
}

int
ha_jestats_disconnect(sqlite3_vtab *vtab)
{
    sqlite3_free(vtab);
    return SQLITE_OK;
}

int
ha_jestats_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **pp)
{
    int rc = ha_cursor_open(sizeof(ha_jestats_cursor), pp);

    if (rc == SQLITE_OK)
        ((ha_jestats_cursor *)*pp)->n_cols = ((ha_jestats_vtab *)vtab)->n_cols;
    return rc;
}

int
ha_jestats_close(sqlite3_vtab_cursor *cur)
{
    ha_jestats_cursor *c = (ha_jestats_cursor *)cur;

    ha_jestats_clear(c);
    sqlite3_free(c->cells);
    sqlite3_free(c);
    return SQLITE_OK;
}

int
ha_jestats_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    ha_jestats_cursor *c = (ha_jestats_cursor *)cur;
    const struct ha_jestats_cell *cell;

    if (col < 0 || (size_t)col >= c->n_cols)
        return SQLITE_OK;
    cell = &c->cells[c->rc.row * c->n_cols + (size_t)col];
    switch (cell->type) {
    case HA_JESTATS_INT:
        sqlite3_result_int64(ctx, cell->v.i);
        break;
    case HA_JESTATS_REAL:
        sqlite3_result_double(ctx, cell->v.d);
        break;
    case HA_JESTATS_TEXT:
        sqlite3_result_text(ctx, cell->v.s, -1, SQLITE_TRANSIENT);
        break;
    case HA_JESTATS_NULL:
        break;
    }
    return SQLITE_OK;
}

