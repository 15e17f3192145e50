/* SPDX-License-Identifier: MIT
 *
 * heap_fragmentation(<dump>) and heap_fragmentation_stacks(<dump>):
 * whose objects pin the fragmented size classes. Each small class's
 * free regions (its slabs' bytes less its regions in use: the class's
 * part of jemalloc.fragmentation.slabs in stats_memory_breakdown) are
 * shared among the call sites whose sampled objects are in that class,
 * in proportion to their estimated regions there (prof/fragment.h):
 * each sampled object in its own class, by the usable size recorded
 * beside the profile (jemalloc's recent-allocation records,
 * prof/livesizes.h), else by estimate within what each class holds. The
 * bins and sizes are those recorded with the dump (<dump>.mem, read in
 * the same pass as the dump), or for 'live' read around its dump.
 *
 * Statistical: the profile samples, and jemalloc promotes each sampled
 * small object to a page of its own, so regions are estimates (a
 * class's total within sqrt(curregs * (w - 1)) regions, one standard
 * error, w = 1/(1 - exp(-size/period)); never above its curregs); they
 * are exact only in total: the rows add up to the classes' free bytes,
 * regions no sampled object accounts for (a class with none, or more
 * than 3 standard errors of it) having a row of their own with no
 * function, whose note says why.
 *
 * Usage:
 *
 *   SELECT function, size_class, free_bytes, class_share, utilization
 *     FROM heap_fragmentation('live') LIMIT 5;
 *     The call sites that pin the most free regions, and where.
 *   SELECT sum(free_bytes) FROM heap_fragmentation('live');
 *     The stats_memory_breakdown row jemalloc.fragmentation.slabs.
 *
 * Schema of heap_fragmentation (heap_fragmentation_stacks has stack, the
 * collapsed stack root first, instead of function):
 *   0 function      TEXT     allocation site as heap_top names it; NULL:
 *                            the class's free regions no sampled object
 *                            stands in
 *   1 size_class    INTEGER  the region size, bytes
 *   2 live_regions  INTEGER  estimated regions of the site in the
 *                            class's slabs (each sampled object stands
 *                            for 1/(1 - exp(-size/period)) objects, less
 *                            itself: jemalloc keeps it on a page of its
 *                            own); a class's rows add up to at most its
 *                            curregs
 *   3 free_bytes    INTEGER  its share of the class's free bytes
 *   4 class_share   REAL     that share, percent of the class's free bytes
 *   5 utilization   REAL     the class's curregs / (curslabs * nregs)
 *   6 note          TEXT     what of the row is estimated and how; for a
 *                            row without a function, why no sample
 *                            stands for those regions; NULL: exact
 *   7 module        TEXT     the site's module
 *   8 exact_share   REAL     share of live_regions placed by recorded
 *                            sizes (or a stack's single sample): 1 exact,
 *                            0 estimated; NULL without a function
 *   9 dump          HIDDEN   a file name from stats_heap_dumps, or 'live'
 * Rows come largest free_bytes first. Computed on the worker thread.
 */
#include <stdio.h>
#include <stdlib.h>

#include "heap/fragmentation.h"
#include "heap/profiles.h"
#include "vtab/heap_vtab.h"

#define FRAG_SCHEMA(first)                                                \
    "CREATE TABLE x(" first " TEXT, size_class INTEGER, live_regions "    \
    "INTEGER, free_bytes INTEGER, class_share REAL, utilization REAL, "   \
    "note TEXT, module TEXT, exact_share REAL, dump HIDDEN)"
#define FRAG_COL_DUMP 9

typedef struct frag_cursor frag_cursor;
struct frag_cursor {
    struct ha_cursor rc;          /* rows [row, end) of f->rows; first */
    struct ha_heap_profile *prof; /* holds the bins */
    struct ha_frag *f;
};

static int
frag_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, FRAG_SCHEMA("function"), pp, pzErr);
}

static int
frag_stacks_connect(sqlite3 *db, void *aux, int argc,
                    const char *const *argv, sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, FRAG_SCHEMA("stack"), pp, pzErr);
}

static int
frag_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    return ha_heap_vtab_best_index(info, FRAG_COL_DUMP, 1, NULL, 0, 100);
}

static int
frag_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(frag_cursor), pp);
}

static void
frag_clear(frag_cursor *c)
{
    ha_heap_fragmentation_free(c->f);
    c->f = NULL;
    ha_heap_profile_put(c->prof);
    c->prof = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
frag_close(sqlite3_vtab_cursor *cur)
{
    frag_clear((frag_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
filter(sqlite3_vtab_cursor *cur, int idxNum, int argc, sqlite3_value **argv,
       bool stacks)
{
    frag_cursor *c = (frag_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    const char *table = stacks ? "heap_fragmentation_stacks"
                               : "heap_fragmentation";
    char err[1024];
    int rc;

    frag_clear(c);
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 1)
        return ha_vtab_set_errmsg(&vt->base,
                                  "%s needs a dump: SELECT * FROM "
                                  "%s('<file name from stats_heap_dumps>') "
                                  "or %s('live')",
                                  table, table, table);
    if ((rc = ha_heap_profile_get(vt->conn->ctx->heap,
                                  (const char *)sqlite3_value_text(argv[0]),
                                  vt->conn->admin, &c->prof, err,
                                  sizeof(err))) != 0 ||
        (rc = ha_heap_fragmentation(c->prof, stacks, &c->f, err,
                                    sizeof(err))) != 0)
        return ha_heap_vtab_fail(&vt->base, rc, table, err);
    ha_cursor_rewind(&c->rc, 0, c->f->n_rows);
    return SQLITE_OK;
}

static int
frag_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    (void)idxStr;
    return filter(cur, idxNum, argc, argv, false);
}

static int
frag_stacks_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
                   int argc, sqlite3_value **argv)
{
    (void)idxStr;
    return filter(cur, idxNum, argc, argv, true);
}

static int
frag_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    frag_cursor *c = (frag_cursor *)cur;
    const struct ha_frag *f = c->f;
    const struct ha_frag_row *r = &f->rows[c->rc.row];
    const struct ha_dumpmem_bin *b = &f->bins[r->bin];
    char note[1024];
    double u;

    switch (col) {
    case 0:
        if (r->name != 0)
            sqlite3_result_text(ctx, ha_strtab_str(&f->names, r->name), -1,
                                SQLITE_TRANSIENT);
        break;
    case 1:
        sqlite3_result_int64(ctx, (sqlite3_int64)b->size);
        break;
    case 2:
        sqlite3_result_int64(ctx, (sqlite3_int64)(r->live_regions + 0.5));
        break;
    case 3:
        sqlite3_result_int64(ctx, (sqlite3_int64)(r->free_bytes + 0.5));
        break;
    case 4:
        if (f->class_free[r->bin] > 0)
            sqlite3_result_double(ctx, 100.0 * r->free_bytes /
                                           f->class_free[r->bin]);
        break;
    case 5:
        if ((u = ha_frag_utilization(b)) >= 0)
            sqlite3_result_double(ctx, u);
        break;
    case 6:
        ha_frag_note(f, r, note, sizeof(note));
        if (note[0] != '\0')
            sqlite3_result_text(ctx, note, -1, SQLITE_TRANSIENT);
        break;
    case 7:
        if (r->module != 0)
            sqlite3_result_text(ctx, ha_strtab_str(&f->names, r->module), -1,
                                SQLITE_TRANSIENT);
        break;
    case 8:
        if (r->name != 0)
            sqlite3_result_double(ctx, r->live_regions > 0
                                           ? r->exact_regions /
                                                 r->live_regions
                                           : 1);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_fragmentation_module = {
    0,                  /* iVersion */
    frag_connect,       /* xCreate: a session's own (temp) */
    frag_connect,       /* xConnect */
    frag_best_index,    /* xBestIndex - the dump */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    frag_open,          /* xOpen */
    frag_close,         /* xClose */
    frag_filter,        /* xFilter - shared out on the worker */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    frag_column,        /* xColumn */
    ha_heap_vtab_rowid, /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

const sqlite3_module ha_heap_fragmentation_stacks_module = {
    0,                  /* iVersion */
    frag_stacks_connect, /* xCreate: a session's own (temp) */
    frag_stacks_connect, /* xConnect */
    frag_best_index,    /* xBestIndex - the dump */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    frag_open,          /* xOpen */
    frag_close,         /* xClose */
    frag_stacks_filter, /* xFilter - per stack */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    frag_column,        /* xColumn */
    ha_heap_vtab_rowid, /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
