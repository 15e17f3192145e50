/* SPDX-License-Identifier: MIT
 *
 * heap_growth(...) and heap_growth_stacks(...): over a series of dumps of
 * one process, which allocation sites (per function) and which stacks
 * hold more memory dump after dump, how fast and how steadily, ranked so
 * that the steady leak comes first (prof/growth.h has the arithmetic,
 * prof/dumpseries.h the argument forms).
 *
 * Usage:
 *
 *   SELECT rank, function, round(bytes_per_hour / 1048576, 1) AS mib_h,
 *          round(r2, 2) AS r2, pattern
 *     FROM heap_growth(12) LIMIT 10;
 *     The newest process's last 12 dumps, the likeliest leak first.
 *   SELECT stack, bytes_per_hour FROM heap_growth_stacks(
 *          'proxysql.4242.3.m3.heap', 'proxysql.4242.20.m20.heap')
 *    WHERE pattern = 'steady';
 *     The stacks behind it, between two dumps (flame-graph input).
 *   SELECT * FROM heap_growth(unixepoch('now', '-6 hours'),
 *                             unixepoch('now'), 'interval');
 *     jemalloc's interval dumps of the last six hours.
 *
 * Schema of heap_growth (one row per allocation-site function, the
 * "flat" function of heap_top, "f (inline)" for inlined ones):
 *    0 rank              INTEGER  1 = the likeliest leak
 *    1 function          TEXT
 * Schema of heap_growth_stacks (one row per stack, as heap_stacks and
 * heap_profile_diff collapse them):
 *    0 rank              INTEGER
 *    1 stack             TEXT     root first, ';'-joined
 *    2 site              TEXT     its last frame: the allocation site
 * then in both (k = 2 for heap_growth, 3 for heap_growth_stacks):
 *   k+0 first_bytes      INTEGER  at the series' first dump (0: absent)
 *   k+1 last_bytes       INTEGER  at its last dump
 *   k+2 growth_bytes     INTEGER  last - first
 *   k+3 bytes_per_hour   REAL     least-squares slope over the dumps'
 *                                 times; NULL with one dump or equal times
 *   k+4 r2               REAL     how well a line fits (0..1); NULL when it
 *                                 never changed
 *   k+5 grew_share       REAL     share of the steps between dumps that
 *                                 grew; NULL with one dump
 *   k+6 pattern          TEXT     steady, step (grew once), growing,
 *                                 bursty, shrinking, flat, unknown
 *   k+7 score            REAL     max(slope, 0) * r2 * grew_share: the
 *                                 rank's key
 *   k+8 first_objects    INTEGER
 *   k+9 last_objects     INTEGER
 *   k+10 objects_per_hour REAL
 *   k+11 max_bytes       INTEGER  the most it held in one dump
 *   k+12 steps           INTEGER  dumps - 1
 *   k+13 grew            INTEGER  steps that grew
 *   k+14 shrank          INTEGER  steps that shrank
 *   k+15 dumps           INTEGER  in the series
 *   k+16 hours           REAL     from the first dump to the last
 *   k+17 first_dump      TEXT     the series' first and last file names
 *   k+18 last_dump       TEXT
 *   k+19 alloc_bytes     INTEGER  allocated from the first dump to the
 *                                 last, freed or not: the cumulative
 *                                 counters of dumps written with
 *                                 opt.prof_accum (last - first); NULL
 *                                 when a dump has none, or when they
 *                                 fell (prof.reset between)
 *   k+20 alloc_objects   INTEGER
 *   k+21 alloc_bytes_per_s REAL   alloc_bytes over the series' seconds:
 *                                 the allocation rate
 *   k+22 skipped         TEXT     the series' dumps that could not be
 *                                 read, each with why ('a.heap: ...;
 *                                 ...'), left out (dumps counts the
 *                                 others); NULL when none
 *   k+23 since           HIDDEN   the arguments (see dumpseries.h): a
 *   k+24 until           HIDDEN   number of dumps, dump names or times
 *   k+25 dump_kind       HIDDEN   'manual', 'interval', ... or NULL
 * Bytes and objects are jeprof's scaling of jemalloc's samples, as in
 * heap_top; a dump's time is the one recorded beside it at dump time
 * (<dump>.buildid "# dumped_at"), else its mtime.
 *
 * xBestIndex/xFilter plan (idxNum bits): GROWTH_IDX_SINCE (1),
 * GROWTH_IDX_UNTIL (2), GROWTH_IDX_KIND (4), each an `=` on its hidden
 * column; argv holds the values present in that order. None: every dump
 * of the newest process.
 *
 * Work: each dump is loaded through the heap-profile cache
 * (ha_heap_profile_get), then its stacks are collapsed and summed on the
 * worker thread (ha_task_offload) into running sums that the job owns;
 * the loop only lists the datadir and hands dumps over. The last result
 * is kept (heap/growth.h, one entry, keyed by the series' files), so the two
 * tables, or a dashboard's repeated query, cost one computation.
 *
 * INNOCUOUS, readable by stats users: it only reads dumps.
 */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/aggregate.h"
#include "prof/dumpfile.h"
#include "prof/dumpseries.h"
#include "prof/growth.h"
#include "prof/maps.h"
#include "vtab/cursor.h"
#include "heap/growth.h"
#include "heap/profiles.h"
#include "vtab/heap_vtab.h"

#define GROWTH_COLS_COMMON                                                 \
    "first_bytes INTEGER, last_bytes INTEGER, growth_bytes INTEGER, "      \
    "bytes_per_hour REAL, r2 REAL, grew_share REAL, pattern TEXT, score "  \
    "REAL, first_objects INTEGER, last_objects INTEGER, objects_per_hour " \
    "REAL, max_bytes INTEGER, steps INTEGER, grew INTEGER, shrank "        \
    "INTEGER, dumps INTEGER, hours REAL, first_dump TEXT, last_dump TEXT, " \
    "alloc_bytes INTEGER, alloc_objects INTEGER, alloc_bytes_per_s REAL, " \
    "skipped TEXT, since HIDDEN, until HIDDEN, dump_kind HIDDEN)"
#define GROWTH_SCHEMA_FUNCS                                                \
    "CREATE TABLE x(rank INTEGER, function TEXT, " GROWTH_COLS_COMMON
#define GROWTH_SCHEMA_STACKS                                               \
    "CREATE TABLE x(rank INTEGER, stack TEXT, site TEXT, "                 \
    GROWTH_COLS_COMMON

/* Column offsets after the key columns. */
enum {
    C_FIRST_BYTES, C_LAST_BYTES, C_GROWTH, C_BPH, C_R2, C_GREW_SHARE,
    C_PATTERN, C_SCORE, C_FIRST_OBJS, C_LAST_OBJS, C_OPH, C_MAX_BYTES,
    C_STEPS, C_GREW, C_SHRANK, C_DUMPS, C_HOURS, C_FIRST_DUMP, C_LAST_DUMP,
    C_ALLOC_BYTES, C_ALLOC_OBJS, C_ALLOC_BPS, C_SKIPPED,
    C_SINCE, C_UNTIL, C_KIND, C_MAX
};

#define GROWTH_IDX_SINCE (1u << 0)
#define GROWTH_IDX_UNTIL (1u << 1)
#define GROWTH_IDX_KIND (1u << 2)

/* ------------------------------------------------------------------
 * Virtual table
 * ------------------------------------------------------------------ */

typedef struct growth_vtab growth_vtab;
struct growth_vtab {
    heap_vtab base;            /* must be first */
    bool stacks;               /* heap_growth_stacks */
};

typedef struct growth_cursor growth_cursor;
struct growth_cursor {
    struct ha_cursor rc;       /* rows [row, end) of res; must be first */
    struct ha_heap_growth *res; /* one reference; NULL: no rows */
    sqlite3_value *args[3];    /* since, until, dump_kind as given */
};

/* Key columns before the common ones. */
static int
n_keys(const growth_vtab *vt)
{
    return vt->stacks ? 3 : 2;
}

static int
growth_connect_table(sqlite3 *db, void *aux, bool stacks, sqlite3_vtab **pp,
                     char **pzErr)
{
    growth_vtab *vt;
    int rc = ha_vtab_new(db,
                         stacks ? GROWTH_SCHEMA_STACKS : GROWTH_SCHEMA_FUNCS,
                         SQLITE_VTAB_INNOCUOUS, sizeof(*vt), pp, pzErr);

    if (rc != SQLITE_OK)
        return rc;
    vt = (growth_vtab *)*pp;
    vt->base.conn = aux;
    vt->stacks = stacks;
    return SQLITE_OK;
}

static int
growth_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
               sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return growth_connect_table(db, aux, false, pp, pzErr);
}

static int
growth_stacks_connect(sqlite3 *db, void *aux, int argc,
                      const char *const *argv, sqlite3_vtab **pp,
                      char **pzErr)
{
    (void)argc;
    (void)argv;
    return growth_connect_table(db, aux, true, pp, pzErr);
}

/* The hidden columns are all optional: each `=` on one is taken. */
static int
growth_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    growth_vtab *vt = (growth_vtab *)p;
    int first = n_keys(vt) + C_SINCE, which[3] = {-1, -1, -1};
    int argv = 0, idx = 0;

    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int k = c->iColumn - first;

        if (k < 0 || k > 2 || c->op != SQLITE_INDEX_CONSTRAINT_EQ)
            continue;
        if (!c->usable)
            return SQLITE_CONSTRAINT; /* from a join: another plan */
        if (which[k] < 0)
            which[k] = i;
    }
    for (int k = 0; k < 3; k++) {
        if (which[k] < 0)
            continue;
        info->aConstraintUsage[which[k]].argvIndex = ++argv;
        info->aConstraintUsage[which[k]].omit = 1;
        idx |= 1 << k;
    }
    info->idxNum = idx;
    info->estimatedCost = 10000;
    info->estimatedRows = 1000;
    return SQLITE_OK;
}

static int
growth_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(growth_cursor), pp);
}

static void
growth_clear(growth_cursor *c)
{
    ha_heap_growth_put(c->res);
    c->res = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
    for (int k = 0; k < 3; k++) {
        sqlite3_value_free(c->args[k]);
        c->args[k] = NULL;
    }
}

static int
growth_close(sqlite3_vtab_cursor *cur)
{
    growth_clear((growth_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static void
to_arg(sqlite3_value *v, struct ha_dumpseries_arg *a)
{
    memset(a, 0, sizeof(*a));
    if (v == NULL || sqlite3_value_type(v) == SQLITE_NULL)
        return;
    a->present = true;
    a->is_int = sqlite3_value_type(v) == SQLITE_INTEGER;
    a->i = sqlite3_value_int64(v);
    a->text = (const char *)sqlite3_value_text(v);
    if (a->text == NULL)
        a->present = false;
}

static const struct ha_growth *
rows_of(const growth_cursor *c, const growth_vtab *vt)
{
    return vt->stacks ? &c->res->stacks : &c->res->funcs;
}

static int
growth_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
              int argc, sqlite3_value **argv)
{
    growth_cursor *c = (growth_cursor *)cur;
    growth_vtab *vt = (growth_vtab *)cur->pVtab;
    struct ha_dumpseries_arg args[3];
    char err[1024];
    const char *table = vt->stacks ? "heap_growth_stacks" : "heap_growth";
    int a = 0, rc;

    (void)idxStr;
    growth_clear(c);
    for (int k = 0; k < 3; k++) {
        if ((idxNum & (1 << k)) && a < argc) {
            c->args[k] = sqlite3_value_dup(argv[a++]);
            if (c->args[k] == NULL)
                return SQLITE_NOMEM;
        }
        to_arg(c->args[k], &args[k]);
    }
    rc = ha_heap_growth_get(vt->base.conn->ctx->heap, vt->base.conn->admin, args,
                            &c->res, err, sizeof(err));
    if (rc != 0)
        return ha_heap_vtab_fail(&vt->base.base, rc, table, err);
    ha_cursor_rewind(&c->rc, 0, rows_of(c, vt)->n_rows);
    return SQLITE_OK;
}

static sqlite3_int64
rounded(double v)
{
    return (sqlite3_int64)(v < 0 ? v - 0.5 : v + 0.5);
}

static void
result_real(sqlite3_context *ctx, double v)
{
    if (isnan(v))
        sqlite3_result_null(ctx);
    else
        sqlite3_result_double(ctx, v);
}

static int
growth_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    growth_cursor *c = (growth_cursor *)cur;
    growth_vtab *vt = (growth_vtab *)cur->pVtab;
    const struct ha_growth *g = rows_of(c, vt);
    const struct ha_growth_row *r = &g->rows[c->rc.row];
    const char *key = ha_growth_key(g, r);
    int k = col - n_keys(vt);

    if (col == 0) {
        sqlite3_result_int64(ctx, (sqlite3_int64)c->rc.row + 1);
        return SQLITE_OK;
    }
    if (col == 1) {
        sqlite3_result_text(ctx, key, -1, SQLITE_TRANSIENT);
        return SQLITE_OK;
    }
    if (col == 2 && vt->stacks) {
        const char *site = strrchr(key, ';');

        sqlite3_result_text(ctx, site != NULL ? site + 1 : key, -1,
                            SQLITE_TRANSIENT);
        return SQLITE_OK;
    }
    switch (k) {
    case C_FIRST_BYTES:
        sqlite3_result_int64(ctx, rounded(r->first_bytes));
        break;
    case C_LAST_BYTES:
        sqlite3_result_int64(ctx, rounded(r->last_bytes));
        break;
    case C_GROWTH:
        sqlite3_result_int64(ctx, rounded(r->last_bytes - r->first_bytes));
        break;
    case C_BPH:
        result_real(ctx, r->bytes_per_hour);
        break;
    case C_R2:
        result_real(ctx, r->r2);
        break;
    case C_GREW_SHARE:
        if (r->steps > 0)
            sqlite3_result_double(ctx, (double)r->grew / r->steps);
        break;
    case C_PATTERN:
        sqlite3_result_text(ctx, ha_growth_pattern_name(r->pattern), -1,
                            SQLITE_STATIC);
        break;
    case C_SCORE:
        sqlite3_result_double(ctx, r->score);
        break;
    case C_FIRST_OBJS:
        sqlite3_result_int64(ctx, rounded(r->first_objs));
        break;
    case C_LAST_OBJS:
        sqlite3_result_int64(ctx, rounded(r->last_objs));
        break;
    case C_OPH:
        result_real(ctx, r->objs_per_hour);
        break;
    case C_MAX_BYTES:
        sqlite3_result_int64(ctx, rounded(r->max_bytes));
        break;
    case C_STEPS:
        sqlite3_result_int64(ctx, r->steps);
        break;
    case C_GREW:
        sqlite3_result_int64(ctx, r->grew);
        break;
    case C_SHRANK:
        sqlite3_result_int64(ctx, r->shrank);
        break;
    case C_DUMPS:
        sqlite3_result_int64(ctx, (sqlite3_int64)c->res->n_dumps);
        break;
    case C_HOURS:
        sqlite3_result_double(ctx, c->res->hours);
        break;
    case C_FIRST_DUMP:
        sqlite3_result_text(ctx, c->res->first_dump, -1, SQLITE_TRANSIENT);
        break;
    case C_LAST_DUMP:
        sqlite3_result_text(ctx, c->res->last_dump, -1, SQLITE_TRANSIENT);
        break;
    case C_ALLOC_BYTES:
    case C_ALLOC_OBJS:
    case C_ALLOC_BPS: {
        /* Allocated between the first dump and the last (cumulative
         * counters: opt.prof_accum). NULL when a dump has none, or when
         * they went down (prof.reset between the dumps). */
        double ab = r->last_alloc_bytes - r->first_alloc_bytes;
        double ao = r->last_alloc_objs - r->first_alloc_objs;
        double secs = c->res->hours * 3600.0;

        if (!ha_growth_has_alloc(g) || ab < 0 || ao < 0)
            break;
        if (k == C_ALLOC_BYTES)
            sqlite3_result_int64(ctx, rounded(ab));
        else if (k == C_ALLOC_OBJS)
            sqlite3_result_int64(ctx, rounded(ao));
        else if (secs > 0)
            sqlite3_result_double(ctx, ab / secs);
        break;
    }
    case C_SKIPPED:
        if (c->res->skipped != NULL)
            sqlite3_result_text(ctx, c->res->skipped, -1, SQLITE_TRANSIENT);
        break;
    case C_SINCE:
    case C_UNTIL:
    case C_KIND:
        if (c->args[k - C_SINCE] != NULL)
            sqlite3_result_value(ctx, c->args[k - C_SINCE]);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

#define GROWTH_MODULE(connect_fn)                                          \
    {                                                                      \
        0,                  /* iVersion */                                 \
        connect_fn,         /* xCreate - a session's own (temp) */         \
        connect_fn,         /* xConnect */                                 \
        growth_best_index,  /* xBestIndex - optional hidden arguments */   \
        ha_heap_vtab_disconnect, /* xDisconnect */                              \
        ha_heap_vtab_disconnect, /* xDestroy */                                 \
        growth_open,        /* xOpen */                                    \
        growth_close,       /* xClose */                                   \
        growth_filter,      /* xFilter - select the series, compute */     \
        ha_cursor_next,     /* xNext */                                    \
        ha_cursor_eof,      /* xEof */                                     \
        growth_column,      /* xColumn */                                  \
        ha_heap_vtab_rowid,      /* xRowid */                                   \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,  \
    }

const sqlite3_module ha_heap_growth_module = GROWTH_MODULE(growth_connect);
const sqlite3_module ha_heap_growth_stacks_module =
    GROWTH_MODULE(growth_stacks_connect);
