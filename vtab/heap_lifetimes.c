/* SPDX-License-Identifier: MIT
 *
 * heap_lifetimes(<log>) and heap_lifetimes_stacks(<log>): how long the
 * objects freed during a lifetime window lived, per allocation site and
 * per stack (prof/lifetimes.h has the definitions, heap/lifelogs.h the
 * loading). A log is what jemalloc-log_now publishes: a file of kind
 * 'log' in stats_heap_dumps.
 *
 * Usage:
 *
 *   UPDATE global_variables SET variable_value = '30'
 *    WHERE variable_name = 'jemalloc-log_now';
 *     ... 30 s later the log is in stats_heap_dumps (kind 'log').
 *   SELECT function, round(bytes_per_s / 1048576, 2) AS mib_s,
 *          lifetime_p50_ms, lifetime_p99_ms, free_function,
 *          round(temporary_share, 2) AS temp
 *     FROM heap_lifetimes('proxysql.4242.0.json') LIMIT 10;
 *     What allocates and frees the most, and how long those objects
 *     live.
 *   SELECT function, temporary_share, temporary_min, temporary_max,
 *          temporary_note
 *     FROM heap_lifetimes('proxysql.4242.0.json')
 *    ORDER BY objects * temporary_share DESC LIMIT 3;
 *     The sites whose objects are freed before anything else is
 *     allocated, with the range the log leaves; a wide range has its
 *     reason beside it.
 *
 * Schema of heap_lifetimes (one row per allocation site: heap_top's flat
 * function, "f (inline)" for an inlined one):
 *    0 function            TEXT
 * Schema of heap_lifetimes_stacks (one row per allocation stack):
 *    0 stack_id            INTEGER  row number, by bytes freed
 *    1 stack               TEXT     collapsed: root first, ';'-joined
 *    2 function            TEXT     its allocation site
 * then in both (k = 1 for heap_lifetimes, 3 for heap_lifetimes_stacks):
 *   k+0 objects            INTEGER  freed in the window, scaled as jeprof
 *                                   scales samples
 *   k+1 bytes              INTEGER  the same in bytes
 *   k+2 objects_per_s      REAL     over the window's duration: the rate
 *   k+3 bytes_per_s        REAL     at which the site churns
 *   k+4 lifetime_p50_ms    REAL     how long its objects lived: the
 *   k+5 lifetime_p90_ms    REAL     percentiles of objects, as precise as
 *   k+6 lifetime_p99_ms    REAL     jemalloc's profiling clock
 *   k+7 lifetime_max_ms    REAL     (clock_tick_ms); NULL: under one tick
 *                                   of the default clock, too short for it
 *   k+8 free_function      TEXT     where most of them were freed (the
 *                                   first frame after the deallocator's)
 *   k+9 free_share         REAL     the share of objects freed there
 *   k+10 other_thread_share REAL    the share freed by another thread
 *                                   than the one that allocated them
 *   k+11 temporary_share   REAL     the share that was temporary as
 *                                   heaptrack defines it: freed before
 *                                   the process made any other allocation
 *                                   or free; estimated from the log
 *                                   (prof/lifetimes.h); NULL when the
 *                                   window cannot tell (its range is
 *                                   wider than 0.5)
 *   k+12 temporary_min     REAL     the range the log leaves for it (95%)
 *   k+13 temporary_max     REAL
 *   k+14 temporary_note    TEXT     why the range is wider than 0.05 and
 *                                   what narrows it: lives too short for
 *                                   the default clock (start with
 *                                   prof_time_resolution:high), or too
 *                                   few samples; NULL otherwise
 *   k+15 samples           INTEGER  sampled allocations behind the row
 *   k+16 clock_tick_ms     REAL     the resolution of the log's clock:
 *                                   1e-6 with prof_time_resolution:high
 *                                   (ns), else the tick of
 *                                   CLOCK_MONOTONIC_COARSE (4 on HZ=250)
 *   k+17 log               HIDDEN   the log's file name
 * heap_lifetimes_stacks adds, before log, free_stack TEXT: the collapsed
 * stack that freed most of them.
 *
 * Objects still live when the window closed are not in the log (jemalloc
 * logs frees): the heap dump covers those (heap_top, heap_stacks).
 *
 * INNOCUOUS, readable by stats users: it only reads a file.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heap/lifelogs.h"
#include "heap/profiles.h"
#include "vtab/cursor.h"
#include "vtab/heap_vtab.h"

#define LIFE_COLS                                                          \
    "objects INTEGER, bytes INTEGER, objects_per_s REAL, "                 \
    "bytes_per_s REAL, lifetime_p50_ms REAL, lifetime_p90_ms REAL, "       \
    "lifetime_p99_ms REAL, lifetime_max_ms REAL, free_function TEXT, "     \
    "free_share REAL, other_thread_share REAL, temporary_share REAL, "     \
    "temporary_min REAL, temporary_max REAL, temporary_note TEXT, "       \
    "samples INTEGER, clock_tick_ms REAL, "
#define SITES_SCHEMA                                                       \
    "CREATE TABLE x(function TEXT, " LIFE_COLS "log HIDDEN)"
#define STACKS_SCHEMA                                                      \
    "CREATE TABLE x(stack_id INTEGER, stack TEXT, function TEXT, "         \
    LIFE_COLS "free_stack TEXT, log HIDDEN)"
#define SITES_KEYS 1
#define STACKS_KEYS 3
#define SITES_COL_LOG (SITES_KEYS + 17)
#define STACKS_COL_LOG (STACKS_KEYS + 18)

enum {
    L_OBJS, L_BYTES, L_OPS, L_BPS, L_P50, L_P90, L_P99, L_MAX, L_FREE_FN,
    L_FREE_SHARE, L_OTHER, L_TEMP, L_TEMP_MIN, L_TEMP_MAX, L_TEMP_NOTE,
    L_SAMPLES, L_TICK, L_FREE_STACK
};

typedef struct life_cursor life_cursor;
struct life_cursor {
    struct ha_cursor rc;          /* rows [row, end) of l->rows; first */
    struct ha_heap_profile *prof; /* holds l */
    const struct ha_lifetimes *l;
    bool per_stack;
};

static int
sites_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
              sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, SITES_SCHEMA, pp, pzErr);
}

static int
stacks_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
               sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, STACKS_SCHEMA, pp, pzErr);
}

static int
sites_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    return ha_heap_vtab_best_index(info, SITES_COL_LOG, 1, NULL, 0, 1000);
}

static int
stacks_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    return ha_heap_vtab_best_index(info, STACKS_COL_LOG, 1, NULL, 0, 10000);
}

static int
life_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(life_cursor), pp);
}

static void
life_clear(life_cursor *c)
{
    ha_heap_profile_put(c->prof);
    c->prof = NULL;
    c->l = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
life_close(sqlite3_vtab_cursor *cur)
{
    life_clear((life_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
life_filter_common(sqlite3_vtab_cursor *cur, bool per_stack,
                   const char *table, int idxNum, int argc,
                   sqlite3_value **argv)
{
    life_cursor *c = (life_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    char err[1024];
    int rc;

    life_clear(c);
    c->per_stack = per_stack;
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 1)
        return ha_vtab_set_errmsg(&vt->base,
                                  "%s needs a lifetime log: SELECT * FROM "
                                  "%s('<file name from stats_heap_dumps "
                                  "WHERE kind = ''log''>'); "
                                  "jemalloc-log_now writes one",
                                  table, table);
    if ((rc = ha_heap_log_get(vt->conn->ctx->heap,
                              (const char *)sqlite3_value_text(argv[0]),
                              &c->prof, err, sizeof(err))) != 0 ||
        (rc = ha_heap_profile_lifetimes(c->prof, per_stack, &c->l, err,
                                        sizeof(err))) != 0)
        return ha_heap_vtab_fail(&vt->base, rc, table, err);
    ha_cursor_rewind(&c->rc, 0, c->l->n_rows);
    return SQLITE_OK;
}

static int
sites_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
             int argc, sqlite3_value **argv)
{
    (void)idxStr;
    return life_filter_common(cur, false, "heap_lifetimes", idxNum, argc,
                              argv);
}

static int
stacks_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
              int argc, sqlite3_value **argv)
{
    (void)idxStr;
    return life_filter_common(cur, true, "heap_lifetimes_stacks", idxNum,
                              argc, argv);
}

static sqlite3_int64
rounded(double v)
{
    return (sqlite3_int64)(v < 0 ? v - 0.5 : v + 0.5);
}

static void
text(sqlite3_context *ctx, const struct ha_lifetimes *l, uint32_t off)
{
    sqlite3_result_text(ctx, ha_life_str(l, off), -1, SQLITE_TRANSIENT);
}

static int
life_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    life_cursor *c = (life_cursor *)cur;
    const struct ha_lifetimes *l = c->l;
    const struct ha_life_row *r = &l->rows[c->rc.row];
    int keys = c->per_stack ? STACKS_KEYS : SITES_KEYS;
    int k = col - keys;

    if (!c->per_stack && col == 0) {
        text(ctx, l, r->key);
        return SQLITE_OK;
    }
    if (c->per_stack && col < keys) {
        if (col == 0)
            sqlite3_result_int64(ctx, (sqlite3_int64)c->rc.row + 1);
        else
            text(ctx, l, col == 1 ? r->key : r->site);
        return SQLITE_OK;
    }
    switch (k) {
    case L_OBJS:
        sqlite3_result_int64(ctx, rounded(r->objects));
        break;
    case L_BYTES:
        sqlite3_result_int64(ctx, rounded(r->bytes));
        break;
    case L_OPS:
    case L_BPS:
        if (l->seconds > 0)
            sqlite3_result_double(ctx, (k == L_OPS ? r->objects : r->bytes) /
                                           l->seconds);
        break;
    case L_P50:
    case L_P90:
    case L_P99:
    case L_MAX:
        if (!isnan(r->lifetime_ns[k - L_P50]))
            sqlite3_result_double(ctx, r->lifetime_ns[k - L_P50] / 1e6);
        break;
    case L_FREE_FN:
        if (r->free_site != 0)
            text(ctx, l, r->free_site);
        break;
    case L_FREE_SHARE:
        sqlite3_result_double(ctx, r->free_site_share);
        break;
    case L_OTHER:
        sqlite3_result_double(ctx, r->other_thread_share);
        break;
    case L_TEMP:
        if (!isnan(r->temporary_share))
            sqlite3_result_double(ctx, r->temporary_share);
        break;
    case L_TEMP_MIN:
        sqlite3_result_double(ctx, r->temporary_min);
        break;
    case L_TEMP_MAX:
        sqlite3_result_double(ctx, r->temporary_max);
        break;
    case L_TEMP_NOTE:
        if (r->why != HA_LIFE_KNOWN) {
            char note[512];

            ha_lifetimes_note(l, r, note, sizeof(note));
            sqlite3_result_text(ctx, note, -1, SQLITE_TRANSIENT);
        }
        break;
    case L_SAMPLES:
        sqlite3_result_int64(ctx, (sqlite3_int64)r->samples);
        break;
    case L_TICK:
        sqlite3_result_double(ctx, (double)l->tick_ns / 1e6);
        break;
    case L_FREE_STACK:
        if (c->per_stack && r->free_stack != 0)
            text(ctx, l, r->free_stack);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_lifetimes_module = {
    0,                  /* iVersion */
    sites_connect,      /* xCreate: a session's own (temp) */
    sites_connect,      /* xConnect */
    sites_best_index,   /* xBestIndex - the log argument */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    life_open,          /* xOpen */
    life_close,         /* xClose */
    sites_filter,       /* xFilter - the cached log's rows per site */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    life_column,        /* xColumn */
    ha_heap_vtab_rowid, /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

const sqlite3_module ha_heap_lifetimes_stacks_module = {
    0,                  /* iVersion */
    stacks_connect,     /* xCreate: a session's own (temp) */
    stacks_connect,     /* xConnect */
    stacks_best_index,  /* xBestIndex - the log argument */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    life_open,          /* xOpen */
    life_close,         /* xClose */
    stacks_filter,      /* xFilter - the cached log's rows per stack */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    life_column,        /* xColumn */
    ha_heap_vtab_rowid, /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
