/* SPDX-License-Identifier: MIT
 *
 * heap_top(<dump>): what holds memory, per function, as `jeprof --text
 * --show_bytes` shows it on the same dump (prof/aggregate.h has the
 * rules: allocator frames cut, inline chains expanded, a name counted
 * once per stack), but for the allocation site: the first frame that is
 * neither allocator nor allocation wrapper (prof/wrappers.h), so redis's
 * memory goes to createStringObject and lpInsert, not to zmalloc. A
 * dump's wrappers are in heap_wrappers(<dump>).
 *
 *   0 function      TEXT     function, "f (inline)" for an inlined one;
 *                            "<module>+0x<offset>" when no name is
 *                            certain (the ELF address: eu-addr2line -e
 *                            <module> takes it), "0x<address>" outside
 *                            every module
 *   1 flat_bytes    INTEGER  bytes allocated by the function itself
 *   2 flat_pct      REAL     share of the total, percent
 *   3 cum_bytes     INTEGER  bytes allocated by it or its callees
 *   4 cum_pct       REAL
 *   5 flat_objects  INTEGER
 *   6 cum_objects   INTEGER
 *   7 module        TEXT     the mapped file of its code (of the first
 *                            frame seen when a name is defined in
 *                            several, as static functions may be)
 *   8 alloc_bytes   INTEGER  bytes the function itself allocated since
 *                            profiling began, freed or not (jeprof
 *                            --alloc_space): the cumulative counters of
 *                            a dump written with opt.prof_accum; NULL
 *                            when the dump has none
 *                            (stats_heap_dumps.alloc_counters = 0)
 *   9 alloc_objects INTEGER  the same in objects (--alloc_objects)
 *  10 alloc_cum_bytes INTEGER  by it or its callees
 *  11 alloc_cum_objects INTEGER
 *  12 wrapper       TEXT     the allocation wrappers the site called and
 *                            the cut skipped (in each of its stacks the
 *                            outermost one), most bytes first, ", "-
 *                            joined (at most 8, then ", ..."); NULL when
 *                            it called the allocator itself, or is not a
 *                            site
 *  13 dump          HIDDEN   a file name from stats_heap_dumps, or 'live'
 *  14 seconds       HIDDEN   with 'live': a delta over that many seconds
 *                            (1..60), heap_top('live', 10): the alloc_*
 *                            columns what was allocated in the window,
 *                            the others what is held at its end
 *  15 thread        HIDDEN   thread = '<name>' (every thread of that
 *                            name, a pool; '' for threads with no name)
 *                            or thread = <thread_id> (heap_threads'):
 *                            the figures of those threads alone, each
 *                            stack's shared out as heap_threads shares
 *                            it; percentages stay of the whole dump
 * Figures are jeprof's to the byte: truncated as jeprof prints them, so
 * no row, and no sum of rows, is above jeprof's (a sum of rows is at most
 * the dump's total, stats_heap_dumps.bytes, which is jeprof's Total).
 * Rows come largest flat_bytes first; rows of equal flat_bytes put named
 * functions before unnamed ones, then go by name. `function = '...'` is
 * answered from the aggregate without a scan in SQL. The aggregate is kept with
 * the cached profile, so a repeated query costs only its rows.
 */
#include <stdlib.h>
#include <string.h>

#include "prof/aggregate.h"
#include "prof/threads.h"
#include "heap/profiles.h"
#include "vtab/heap_vtab.h"

#define TOP_SCHEMA                                                        \
    "CREATE TABLE x(function TEXT, flat_bytes INTEGER, flat_pct REAL, "   \
    "cum_bytes INTEGER, cum_pct REAL, flat_objects INTEGER, "             \
    "cum_objects INTEGER, module TEXT, alloc_bytes INTEGER, "             \
    "alloc_objects INTEGER, alloc_cum_bytes INTEGER, "                    \
    "alloc_cum_objects INTEGER, wrapper TEXT, dump HIDDEN, "               \
    "seconds HIDDEN, thread HIDDEN)"
#define TOP_COL_FUNCTION 0
#define TOP_COL_MODULE 7
#define TOP_COL_ALLOC_BYTES 8
#define TOP_COL_WRAPPER 12
#define TOP_COL_DUMP 13
#define TOP_COL_SECONDS 14
#define TOP_COL_THREAD 15

typedef struct top_cursor top_cursor;
struct top_cursor {
    struct ha_cursor rc;          /* rows [row, end) of agg->rows; must
                                   * be first */
    struct ha_heap_profile *prof; /* holds agg */
    const struct ha_agg *agg;     /* rows, sorted by flat bytes */
    struct ha_agg *own;           /* agg when it is the cursor's (a
                                     thread's part), else NULL */
    char *only;                   /* function = ?, or NULL */
    sqlite3_value *seconds;       /* the hidden columns' values, for */
    sqlite3_value *thread;        /* xColumn; NULL: not given */
};

static int
top_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
            sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, TOP_SCHEMA, pp, pzErr);
}

static int
top_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    static const int push[] = {TOP_COL_FUNCTION, TOP_COL_SECONDS,
                               TOP_COL_THREAD};

    (void)p;
    return ha_heap_vtab_best_index(info, TOP_COL_DUMP, 1, push, 3, 1000);
}

/* Whether the function push-down excludes row c->row. */
static bool
top_skip(const struct ha_cursor *rc)
{
    const top_cursor *c = (const top_cursor *)rc;

    return c->only != NULL &&
           strcmp(ha_agg_name(c->agg, &c->agg->rows[rc->row]), c->only) != 0;
}

static int
top_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    int rc;

    (void)p;
    if ((rc = ha_cursor_open(sizeof(top_cursor), pp)) == SQLITE_OK)
        ((top_cursor *)*pp)->rc.skip = top_skip;
    return rc;
}

static void
top_clear(top_cursor *c)
{
    ha_heap_profile_put(c->prof);
    c->prof = NULL;
    c->agg = NULL;
    if (c->own != NULL) {
        ha_agg_free(c->own);
        free(c->own);
        c->own = NULL;
    }
    free(c->only);
    c->only = NULL;
    sqlite3_value_free(c->seconds);
    sqlite3_value_free(c->thread);
    c->seconds = c->thread = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
top_close(sqlite3_vtab_cursor *cur)
{
    top_clear((top_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
top_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
           int argc, sqlite3_value **argv)
{
    top_cursor *c = (top_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    char err[1024];
    int rc, k;

    (void)idxStr;
    top_clear(c);
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 1)
        return ha_vtab_set_errmsg(&vt->base,
                                  "heap_top needs a dump: SELECT * FROM "
                                  "heap_top('<file name from "
                                  "stats_heap_dumps>') or heap_top('live')");
    k = 1;
    if ((idxNum & HA_HEAP_IDX_PUSH(0)) && argc > k) {
        const unsigned char *fn = sqlite3_value_text(argv[k++]);

        if ((c->only = strdup(fn ? (const char *)fn : "")) == NULL)
            return SQLITE_NOMEM;
    }
    if ((idxNum & HA_HEAP_IDX_PUSH(1)) && argc > k &&
        (c->seconds = sqlite3_value_dup(argv[k++])) == NULL)
        return SQLITE_NOMEM;
    if ((idxNum & HA_HEAP_IDX_PUSH(2)) && argc > k &&
        (c->thread = sqlite3_value_dup(argv[k++])) == NULL)
        return SQLITE_NOMEM;
    if ((rc = ha_heap_vtab_profile(&vt->base, "heap_top", argv[0],
                                   c->seconds, &c->prof)) != SQLITE_OK)
        return rc;
    if (c->thread != NULL && sqlite3_value_type(c->thread) != SQLITE_NULL) {
        struct ha_threads_match m;

        if ((rc = ha_heap_vtab_thread(&vt->base, "heap_top", c->thread,
                                      &m)) != SQLITE_OK)
            return rc;
        rc = ha_heap_profile_top_threads(c->prof, &m, &c->own, err,
                                         sizeof(err));
        c->agg = c->own;
    } else {
        rc = ha_heap_profile_top(c->prof, &c->agg, err, sizeof(err));
    }
    if (rc != 0)
        return ha_heap_vtab_fail(&vt->base, rc, "heap_top", err);
    ha_cursor_rewind(&c->rc, 0, c->agg->n_rows);
    return SQLITE_OK;
}

static double
pct(double part, double total)
{
    return total != 0 ? 100.0 * part / total : 0;
}

/* What percentages are of: the dump's total, a thread's part too. */
static double
top_total(const top_cursor *c)
{
    return c->own != NULL ? c->prof->p.scaled_bytes : c->agg->total_bytes;
}

static int
top_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    top_cursor *c = (top_cursor *)cur;
    const struct ha_agg_row *r = &c->agg->rows[c->rc.row];

    switch (col) {
    case 0:
        sqlite3_result_text(ctx, ha_agg_name(c->agg, r), -1,
                            SQLITE_TRANSIENT);
        break;
    case 1:
        sqlite3_result_int64(ctx, ha_heapv2_jeprof_int(r->flat_bytes));
        break;
    case 2:
        sqlite3_result_double(ctx, pct(r->flat_bytes, top_total(c)));
        break;
    case 3:
        sqlite3_result_int64(ctx, ha_heapv2_jeprof_int(r->cum_bytes));
        break;
    case 4:
        sqlite3_result_double(ctx, pct(r->cum_bytes, top_total(c)));
        break;
    case 5:
        sqlite3_result_int64(ctx, ha_heapv2_jeprof_int(r->flat_objs));
        break;
    case 6:
        sqlite3_result_int64(ctx, ha_heapv2_jeprof_int(r->cum_objs));
        break;
    case TOP_COL_MODULE:
        if (ha_agg_module(c->agg, r) != NULL)
            sqlite3_result_text(ctx, ha_agg_module(c->agg, r), -1,
                                SQLITE_TRANSIENT);
        break;
    case TOP_COL_ALLOC_BYTES:
    case TOP_COL_ALLOC_BYTES + 1:
    case TOP_COL_ALLOC_BYTES + 2:
    case TOP_COL_ALLOC_BYTES + 3: {
        const double v[] = {r->alloc_flat_bytes, r->alloc_flat_objs,
                            r->alloc_cum_bytes, r->alloc_cum_objs};

        /* NULL, not 0: a dump without prof_accum does not know. */
        if (c->agg->has_alloc)
            sqlite3_result_int64(
                ctx, ha_heapv2_jeprof_int(v[col - TOP_COL_ALLOC_BYTES]));
        break;
    }
    case TOP_COL_WRAPPER:
        if (ha_agg_wrapper(c->agg, r) != NULL)
            sqlite3_result_text(ctx, ha_agg_wrapper(c->agg, r), -1,
                                SQLITE_TRANSIENT);
        break;
    case TOP_COL_DUMP:
        sqlite3_result_text(ctx, c->prof->name, -1, SQLITE_TRANSIENT);
        break;
    case TOP_COL_SECONDS:
        if (c->seconds != NULL)
            sqlite3_result_value(ctx, c->seconds);
        break;
    case TOP_COL_THREAD:
        if (c->thread != NULL)
            sqlite3_result_value(ctx, c->thread);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_top_module = {
    0,                  /* iVersion */
    top_connect,        /* xCreate: a session's own (temp) */
    top_connect,        /* xConnect */
    top_best_index,     /* xBestIndex - the dump; function = */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    top_open,           /* xOpen */
    top_close,          /* xClose */
    top_filter,         /* xFilter - the cached profile's aggregate */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    top_column,         /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
