/* SPDX-License-Identifier: MIT
 *
 * stats_jemalloc_recent: the last sampled allocations of this process,
 * freed or not, as jemalloc keeps them (jemalloc-recent_alloc_max of
 * them; heap/recentallocs.h reads them). "What were the last allocations
 * just before this spike?"
 *
 * Usage:
 *
 *   UPDATE global_variables SET variable_value = '1000'
 *    WHERE variable_name = 'jemalloc-recent_alloc_max';
 *     jemalloc keeps the last 1000 sampled allocations from now on.
 *   SELECT strftime('%H:%M:%f', alloc_time, 'unixepoch') AS at, size,
 *          function, released, lifetime_ms
 *     FROM stats_jemalloc_recent ORDER BY alloc_time DESC LIMIT 20;
 *     The newest first, where they were made and how long they lived.
 *
 * Schema (one row per record, oldest first):
 *    0 seq               INTEGER  1 = the oldest kept
 *    1 size              INTEGER  bytes asked for
 *    2 usize             INTEGER  bytes jemalloc gave (its size class)
 *    3 alloc_time        REAL     when it was allocated, unix seconds
 *    4 alloc_thread      INTEGER  jemalloc's thread uid
 *    5 alloc_thread_name TEXT     the thread's name, when it has one
 *    6 age_ms            REAL     since it was allocated
 *    7 released          INTEGER  1 when freed since
 *    8 free_time         REAL     when it was freed (NULL: live)
 *    9 free_thread       INTEGER
 *   10 free_thread_name  TEXT
 *   11 lifetime_ms       REAL     free_time - alloc_time (NULL: live)
 *   12 function          TEXT     its allocation site (heap_top's flat
 *                                 function)
 *   13 stack             TEXT     its stack collapsed, root first
 *   14 free_function     TEXT     where it was freed
 *   15 free_stack        TEXT
 *   16 objects           REAL     the objects it stands for, scaled as
 *                                 jeprof scales samples
 * Times come from jemalloc's profiling clock (a few ms coarse by
 * default, prof_time_resolution:high for ns), moved to wall-clock time.
 *
 * Each scan reads jemalloc's list anew (it changes with every sampled
 * allocation), on the worker thread. With profiling off, or with
 * jemalloc-recent_alloc_max = 0 (jemalloc's default), it has no rows
 * (jemalloc-recent_alloc_max reads 0: set it to record).
 *
 * SQLITE_VTAB_INNOCUOUS: reading changes nothing (stats users read it).
 */
#include <stdbool.h>
#include <stdlib.h>

#include "heap/recentallocs.h"
#include "vtab/cursor.h"
#include "vtab/heap_vtab.h"

#define RECENT_SCHEMA                                                      \
    "CREATE TABLE x(seq INTEGER, size INTEGER, usize INTEGER, "            \
    "alloc_time REAL, alloc_thread INTEGER, alloc_thread_name TEXT, "      \
    "age_ms REAL, released INTEGER, free_time REAL, free_thread INTEGER, " \
    "free_thread_name TEXT, lifetime_ms REAL, function TEXT, stack TEXT, " \
    "free_function TEXT, free_stack TEXT, objects REAL)"

typedef struct recent_cursor recent_cursor;
struct recent_cursor {
    struct ha_cursor rc;          /* rows [row, end) of r->rows; first */
    struct ha_recent_allocs *r;
};

static int
recent_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
               sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, RECENT_SCHEMA, pp, pzErr);
}

static int
recent_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    info->estimatedCost = 10000;
    info->estimatedRows = 1000;
    return SQLITE_OK;
}

static int
recent_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(recent_cursor), pp);
}

static int
recent_close(sqlite3_vtab_cursor *cur)
{
    recent_cursor *c = (recent_cursor *)cur;

    ha_recent_allocs_free(c->r);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
recent_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
              int argc, sqlite3_value **argv)
{
    recent_cursor *c = (recent_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    char err[1024];
    int rc;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    ha_recent_allocs_free(c->r);
    c->r = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
    if ((rc = ha_heap_recent_allocs(vt->conn->ctx->heap, &c->r, NULL, err,
                                    sizeof(err))) != 0)
        return ha_heap_vtab_fail(&vt->base, rc, "stats_jemalloc_recent",
                                 err);
    ha_cursor_rewind(&c->rc, 0, c->r->recent.n);
    return SQLITE_OK;
}

static void
name(sqlite3_context *ctx, const struct ha_recent_allocs *r, uint32_t off,
     bool known)
{
    if (known)
        sqlite3_result_text(ctx, ha_recent_allocs_str(r, off), -1,
                            SQLITE_TRANSIENT);
}

static int
recent_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    recent_cursor *c = (recent_cursor *)cur;
    const struct ha_recent_allocs *r = c->r;
    const struct ha_recent_row *row = &r->rows[c->rc.row];
    const struct ha_recent_rec *x = row->rec;
    bool freed = x->released && x->has_dalloc;

    switch (col) {
    case 0:
        sqlite3_result_int64(ctx, (sqlite3_int64)c->rc.row + 1);
        break;
    case 1:
        sqlite3_result_int64(ctx, (sqlite3_int64)x->size);
        break;
    case 2:
        sqlite3_result_int64(ctx, (sqlite3_int64)x->usize);
        break;
    case 3:
        sqlite3_result_double(ctx, row->alloc_s);
        break;
    case 4:
        sqlite3_result_int64(ctx, (sqlite3_int64)x->alloc_tid);
        break;
    case 5:
        if (x->alloc_name != 0)
            sqlite3_result_text(ctx, ha_strtab_str(&r->recent.names,
                                                   x->alloc_name),
                                -1, SQLITE_TRANSIENT);
        break;
    case 6:
        sqlite3_result_double(ctx, row->age_ms);
        break;
    case 7:
        sqlite3_result_int(ctx, x->released);
        break;
    case 8:
        if (freed)
            sqlite3_result_double(ctx, row->free_s);
        break;
    case 9:
        if (freed)
            sqlite3_result_int64(ctx, (sqlite3_int64)x->dalloc_tid);
        break;
    case 10:
        if (freed && x->dalloc_name != 0)
            sqlite3_result_text(ctx, ha_strtab_str(&r->recent.names,
                                                   x->dalloc_name),
                                -1, SQLITE_TRANSIENT);
        break;
    case 11:
        if (freed)
            sqlite3_result_double(
                ctx, x->dalloc_ns >= x->alloc_ns
                         ? (double)(x->dalloc_ns - x->alloc_ns) / 1e6
                         : 0);
        break;
    case 12:
        name(ctx, r, row->site, row->site != 0);
        break;
    case 13:
        name(ctx, r, row->stack, true);
        break;
    case 14:
        name(ctx, r, row->free_site, row->free_site != 0);
        break;
    case 15:
        name(ctx, r, row->free_stack, row->free_stack != 0);
        break;
    case 16:
        sqlite3_result_double(ctx, row->objects);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_recent_module = {
    0,                  /* iVersion */
    recent_connect,     /* xCreate: a session's own (temp) */
    recent_connect,     /* xConnect */
    recent_best_index,  /* xBestIndex - always every record */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    recent_open,        /* xOpen */
    recent_close,       /* xClose */
    recent_filter,      /* xFilter - jemalloc's list, read now */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    recent_column,      /* xColumn */
    ha_heap_vtab_rowid, /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
