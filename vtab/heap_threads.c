/* SPDX-License-Identifier: MIT
 *
 * heap_threads(<dump>[, seconds]): which thread holds the memory of a
 * heap profile, and which allocated it (prof/threads.h has the rule: a
 * thread's share of each stack, from jemalloc's per-thread lines).
 *
 *   SELECT thread_name, sum(bytes) AS bytes, count(*) AS threads
 *     FROM heap_threads('live') GROUP BY thread_name ORDER BY 2 DESC;
 * says which pool of threads (one name) holds the most;
 *   SELECT thread_name, alloc_bytes FROM heap_threads('live', 10);
 * what each thread allocated in the last 10 seconds (a delta, as
 * heap_top('live', 10)).
 *
 *   0 thread_id     INTEGER  jemalloc's number of the thread (thr_uid:
 *                            from 0 in the order threads first sampled,
 *                            not the kernel's tid); NULL for the part of
 *                            stacks no thread line shares (never in what
 *                            jemalloc writes)
 *   1 thread_name   TEXT     its name: the kernel's (comm) at its last
 *                            sample with opt.prof_sys_thread_name, or
 *                            what thread.prof.name (heapadmin_set_thread_
 *                            name) set; NULL when it has none
 *   2 bytes         INTEGER  in-use bytes it allocated and still held,
 *                            scaled as jeprof scales; the rows add up to
 *                            the dump's total (stats_heap_dumps.bytes)
 *                            exactly
 *   3 objects       INTEGER  the same in objects
 *   4 bytes_pct     REAL     its share of the total, percent
 *   5 alloc_bytes   INTEGER  bytes it allocated since profiling began,
 *                            freed or not (prof_accum), or in the delta's
 *                            window; NULL when the dump has no cumulative
 *                            counters
 *   6 alloc_objects INTEGER
 *   7 stacks        INTEGER  stacks with a line of this thread
 *   8 dump          HIDDEN   a file name from stats_heap_dumps, or 'live'
 *   9 seconds       HIDDEN   with 'live': the delta's window (1..60)
 * Rows come largest bytes first, then by thread_id. A thread that
 * exited keeps its row while it holds sampled memory (jemalloc keeps its
 * record). Only reads: INNOCUOUS like the other heap tables.
 */
#include <stdlib.h>
#include <string.h>

#include "heap/profiles.h"
#include "prof/threads.h"
#include "vtab/heap_vtab.h"

#define THREADS_SCHEMA                                                         \
    "CREATE TABLE x(thread_id INTEGER, thread_name TEXT, bytes INTEGER, "      \
    "objects INTEGER, bytes_pct REAL, alloc_bytes INTEGER, "                   \
    "alloc_objects INTEGER, stacks INTEGER, dump HIDDEN, seconds HIDDEN)"
#define THREADS_COL_DUMP 8
#define THREADS_COL_SECONDS 9

typedef struct threads_cursor threads_cursor;
struct threads_cursor {
    struct ha_cursor rc;                 /* rows [row, end) of order; must be
                                          * first */
    struct ha_heap_profile *prof;        /* holds the rows */
    const struct ha_threads_row **order; /* rows, largest bytes first */
    sqlite3_int64 seconds;               /* the delta's window; 0: none */
};

static int
threads_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, THREADS_SCHEMA, pp, pzErr);
}

static int
threads_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    static const int push[] = {THREADS_COL_SECONDS};

    (void)p;
    return ha_heap_vtab_best_index(info, THREADS_COL_DUMP, 1, push, 1, 64);
}

static int
threads_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(threads_cursor), pp);
}

static void
threads_clear(threads_cursor *c)
{
    ha_heap_profile_put(c->prof);
    c->prof = NULL;
    free(c->order);
    c->order = NULL;
    c->seconds = 0;
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
threads_close(sqlite3_vtab_cursor *cur)
{
    threads_clear((threads_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
cmp_rows(const void *a, const void *b)
{
    const struct ha_threads_row *x = *(const struct ha_threads_row *const *)a;
    const struct ha_threads_row *y = *(const struct ha_threads_row *const *)b;

    if (x->i_bytes != y->i_bytes)
        return x->i_bytes < y->i_bytes ? 1 : -1;
    if (x->has_uid != y->has_uid)
        return x->has_uid ? -1 : 1;
    return (x->uid > y->uid) - (x->uid < y->uid);
}

static int
threads_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
               int argc, sqlite3_value **argv)
{
    threads_cursor *c = (threads_cursor *)cur;
    sqlite3_vtab *vt = cur->pVtab;
    size_t n;
    int rc;

    (void)idxStr;
    threads_clear(c);
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 1)
        return ha_vtab_set_errmsg(vt, "heap_threads needs a dump: SELECT "
                                      "* FROM heap_threads('<file name "
                                      "from stats_heap_dumps>') or "
                                      "heap_threads('live'[, seconds])");
    if ((rc = ha_heap_vtab_profile(
             vt, "heap_threads", argv[0],
             (idxNum & HA_HEAP_IDX_PUSH(0)) && argc > 1 ? argv[1] : NULL,
             &c->prof)) != SQLITE_OK)
        return rc;
    if ((idxNum & HA_HEAP_IDX_PUSH(0)) && argc > 1)
        c->seconds = sqlite3_value_int64(argv[1]);
    if (c->prof->threads == NULL && c->prof->n_threads == 0 &&
        c->prof->p.n_stacks > 0)
        return ha_vtab_set_errmsg(vt,
                                  "heap_threads: %s: no thread figures "
                                  "(out of memory when it loaded)",
                                  c->prof->name);
    n = c->prof->n_threads;
    if ((c->order = malloc((n ? n : 1) * sizeof(*c->order))) == NULL)
        return SQLITE_NOMEM;
    for (size_t i = 0; i < n; i++)
        c->order[i] = &c->prof->threads[i];
    qsort(c->order, n, sizeof(*c->order), cmp_rows);
    ha_cursor_rewind(&c->rc, 0, n);
    return SQLITE_OK;
}

static int
threads_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    threads_cursor *c = (threads_cursor *)cur;
    const struct ha_heap_profile *pr = c->prof;
    const struct ha_threads_row *r = c->order[c->rc.row];
    long long total = ha_heapv2_jeprof_int(pr->p.scaled_bytes);
    bool accum = ha_heapv2_has_accum(&pr->p);

    switch (col) {
    case 0:
        if (r->has_uid)
            sqlite3_result_int64(ctx, (sqlite3_int64)r->uid);
        break;
    case 1:
        if (r->name != NULL)
            sqlite3_result_text(ctx, r->name, -1, SQLITE_TRANSIENT);
        break;
    case 2:
        sqlite3_result_int64(ctx, r->i_bytes);
        break;
    case 3:
        sqlite3_result_int64(ctx, r->i_objs);
        break;
    case 4:
        sqlite3_result_double(
            ctx, total > 0 ? 100.0 * (double)r->i_bytes / (double)total : 0);
        break;
    case 5:
        if (accum)
            sqlite3_result_int64(ctx, r->i_accum_bytes);
        break;
    case 6:
        if (accum)
            sqlite3_result_int64(ctx, r->i_accum_objs);
        break;
    case 7:
        sqlite3_result_int64(ctx, r->stacks);
        break;
    case THREADS_COL_DUMP:
        sqlite3_result_text(ctx, pr->name, -1, SQLITE_TRANSIENT);
        break;
    case THREADS_COL_SECONDS:
        if (c->seconds > 0)
            sqlite3_result_int64(ctx, c->seconds);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_threads_module = {
    0,                       /* iVersion */
    threads_connect,         /* xCreate: a session's own (temp) */
    threads_connect,         /* xConnect */
    threads_best_index,      /* xBestIndex - the dump; seconds */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    threads_open,            /* xOpen */
    threads_close,           /* xClose */
    threads_filter,          /* xFilter - the profile's thread rows */
    ha_cursor_next,          /* xNext */
    ha_cursor_eof,           /* xEof */
    threads_column,          /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};
