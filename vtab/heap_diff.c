/* SPDX-License-Identifier: MIT
 *
 * heap_profile_diff(<base>, <current>): `jeprof --base` as rows, one per
 * stack (in collapsed form) present in either dump.
 *
 *   0 stack_id  INTEGER  row number, in stack order
 *   1 stack     TEXT     the stack collapsed for flame graphs: root
 *                        first, frames joined by ';', "[inline]" marks
 *   2 bytes     INTEGER  current minus base (negative: memory released)
 *   3 objects   INTEGER  the same for objects
 *   4 site      TEXT     the stack's last frame: its allocation site
 *                        (past the allocation wrappers of the current
 *                        dump, which cut both: prof/wrappers.h)
 *   5 alloc_bytes INTEGER  allocated between the two dumps, freed or
 *                        not: current minus base of the cumulative
 *                        counters (opt.prof_accum); NULL when either
 *                        dump has none, or when they went down
 *                        (prof.reset between the dumps)
 *   6 alloc_objects INTEGER
 *   7 alloc_bytes_per_s REAL  alloc_bytes over the seconds between the
 *                        dumps (each taken when its .buildid says, else
 *                        its mtime; 'live' now): the allocation rate
 *   8 seconds   REAL     between the two dumps
 *   9 base      HIDDEN   the older dump: a file name, or 'live'
 *  10 current   HIDDEN   the newer dump: a file name, or 'live'
 * Stacks are matched by their symbolized form, not by address, so two
 * dumps of one binary compare even across restarts (ASLR). jemalloc's
 * steady-state recipe (dump, let it run, dump again, compare) is one
 * SELECT:
 *   SELECT stack, bytes FROM heap_profile_diff('a.heap', 'b.heap')
 *    ORDER BY bytes DESC LIMIT 10;
 * and, with prof_accum, what allocates the most per second, per site:
 *   SELECT site, sum(alloc_bytes_per_s) AS bps
 *     FROM heap_profile_diff('a.heap', 'b.heap')
 *    GROUP BY site ORDER BY bps DESC LIMIT 10;
 */
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/aggregate.h"
#include "heap/profiles.h"
#include "vtab/heap_vtab.h"

#define DIFF_SCHEMA                                                       \
    "CREATE TABLE x(stack_id INTEGER, stack TEXT, bytes INTEGER, "        \
    "objects INTEGER, site TEXT, alloc_bytes INTEGER, "                   \
    "alloc_objects INTEGER, alloc_bytes_per_s REAL, seconds REAL, "       \
    "base HIDDEN, current HIDDEN)"
#define DIFF_COL_BASE 9

/* One collapsed stack and its share of a diff. */
struct diff_row {
    char *stack;
    double bytes;
    double objs;
    double abytes;   /* cumulative counters, current minus base */
    double aobjs;
};

/* The rows of a diff, built off the loop. */
struct diff_rows {
    struct diff_row *rows;
    size_t n, cap;
    bool has_alloc;  /* both dumps carry cumulative counters */
    double seconds;  /* from the base's time to the current's */
};

typedef struct diff_cursor diff_cursor;
struct diff_cursor {
    struct ha_cursor rc;       /* rows [row, end) of d.rows; must be
                                * first */
    struct diff_rows d;
};

static int
diff_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, DIFF_SCHEMA, pp, pzErr);
}

static int
diff_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    return ha_heap_vtab_best_index(info, DIFF_COL_BASE, 2, NULL, 0, 10000);
}

static int
diff_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(diff_cursor), pp);
}

static void
rows_free(struct diff_rows *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->rows[i].stack);
    free(d->rows);
    memset(d, 0, sizeof(*d));
}

static void
diff_clear(diff_cursor *c)
{
    rows_free(&c->d);
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
diff_close(sqlite3_vtab_cursor *cur)
{
    diff_clear((diff_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
cmp_stack(const void *x, const void *y)
{
    return strcmp(((const struct diff_row *)x)->stack,
                  ((const struct diff_row *)y)->stack);
}

/* Merges rows of the same stack, summing their figures; rows that sum to
 * nothing on both counts stay (present in either dump). */
static void
diff_merge(struct diff_rows *c)
{
    size_t out = 0;

    if (c->n > 1)
        qsort(c->rows, c->n, sizeof(*c->rows), cmp_stack);
    for (size_t i = 0; i < c->n; i++) {
        if (out > 0 && strcmp(c->rows[out - 1].stack, c->rows[i].stack) == 0) {
            c->rows[out - 1].bytes += c->rows[i].bytes;
            c->rows[out - 1].objs += c->rows[i].objs;
            c->rows[out - 1].abytes += c->rows[i].abytes;
            c->rows[out - 1].aobjs += c->rows[i].aobjs;
            free(c->rows[i].stack);
            continue;
        }
        c->rows[out++] = c->rows[i];
    }
    c->n = out;
}

/* Adds every stack of profile pr to c with sign (+1 current, -1 base),
 * cut with the allocation wrappers wrap (the current dump's for both
 * sides: one rule). Worker thread: reads pr only. */
static int
diff_side(struct diff_rows *c, const struct ha_heap_profile *pr,
          double sign, const struct ha_wrap_set *wrap, char *err,
          size_t errlen)
{
    struct ha_buf line = HA_BUF_INIT;
    struct ha_agg_walker *w = NULL;
    int ret = -1;

    if ((w = ha_agg_walker_new_with(&pr->syms, wrap)) == NULL)
        goto oom;
    for (size_t i = 0; i < pr->p.n_stacks; i++) {
        struct diff_row *r;

        if (ha_agg_walker_collapsed(w, &pr->p, i, &line) != 0)
            goto oom;
        if (line.len == 0) /* nothing left after the allocator's frames */
            continue;
        if (c->n == c->cap) {
            size_t ncap = c->cap ? c->cap * 2 : 256;
            struct diff_row *v = realloc(c->rows, ncap * sizeof(*v));

            if (v == NULL)
                goto oom;
            c->rows = v;
            c->cap = ncap;
        }
        r = &c->rows[c->n];
        if ((r->stack = strndup((const char *)line.data, line.len)) == NULL)
            goto oom;
        r->bytes = sign * pr->p.stacks[i].bytes;
        r->objs = sign * pr->p.stacks[i].objs;
        r->abytes = sign * pr->p.stacks[i].accum_bytes;
        r->aobjs = sign * pr->p.stacks[i].accum_objs;
        c->n++;
    }
    ret = 0;
    goto out;
oom:
    ha_err_set(err, errlen, "%s: out of memory", pr->name);
out:
    ha_agg_walker_free(w);
    ha_buf_free(&line);
    return ret;
}

/* Both sides collapsed and merged, off the loop. */
struct diff_job {
    struct ha_heap_profile *base, *current; /* references held */
    struct diff_rows d;
    int rc;
    char err[256];
};

static void
diff_run(void *arg)
{
    struct diff_job *j = arg;

    const struct ha_wrap_set *wrap = j->current->syms.wrappers;

    j->rc = diff_side(&j->d, j->base, -1, wrap, j->err, sizeof(j->err)) !=
                        0 ||
                    diff_side(&j->d, j->current, 1, wrap, j->err,
                              sizeof(j->err)) != 0
                ? -1
                : 0;
    if (j->rc == 0)
        diff_merge(&j->d);
    j->d.has_alloc = ha_heapv2_has_accum(&j->base->p) &&
                     ha_heapv2_has_accum(&j->current->p);
    j->d.seconds = (double)(j->current->taken_ns - j->base->taken_ns) / 1e9;
}

static void
diff_job_free(void *arg)
{
    struct diff_job *j = arg;

    rows_free(&j->d);
    ha_heap_profile_put(j->base);
    ha_heap_profile_put(j->current);
    free(j);
}

static int
diff_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    diff_cursor *c = (diff_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    const char *base, *current;
    struct diff_job *j;
    char err[1024];
    int rc;

    (void)idxStr;
    diff_clear(c);
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 2)
        return ha_vtab_set_errmsg(&vt->base,
                                  "heap_profile_diff needs two dumps: "
                                  "SELECT * FROM heap_profile_diff("
                                  "'<base>', '<current>')");
    base = (const char *)sqlite3_value_text(argv[0]);
    current = (const char *)sqlite3_value_text(argv[1]);
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return SQLITE_NOMEM;
    if ((rc = ha_heap_profile_get(vt->conn->ctx->heap, base, vt->conn->admin,
                                  &j->base, err, sizeof(err))) != 0 ||
        (rc = ha_heap_profile_get(vt->conn->ctx->heap, current, vt->conn->admin,
                                  &j->current, err, sizeof(err))) != 0) {
        diff_job_free(j);
        return ha_heap_vtab_fail(&vt->base, rc, "heap_profile_diff", err);
    }
    if (ha_task_offload(diff_run, diff_job_free, j) != 0)
        return ha_heap_vtab_fail(&vt->base, HA_HEAP_STOPPED, "heap_profile_diff",
                            NULL);
    if (j->rc != 0) {
        rc = ha_vtab_set_errmsg(&vt->base, "heap_profile_diff: %s", j->err);
        diff_job_free(j);
        return rc;
    }
    c->d = j->d;
    memset(&j->d, 0, sizeof(j->d));
    diff_job_free(j);
    ha_cursor_rewind(&c->rc, 0, c->d.n);
    return SQLITE_OK;
}

static sqlite3_int64
rounded(double v)
{
    return (sqlite3_int64)(v < 0 ? v - 0.5 : v + 0.5);
}

static int
diff_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    diff_cursor *c = (diff_cursor *)cur;
    const struct diff_row *r = &c->d.rows[c->rc.row];

    switch (col) {
    case 0:
        sqlite3_result_int64(ctx, (sqlite3_int64)c->rc.row + 1);
        break;
    case 1:
        sqlite3_result_text(ctx, r->stack, -1, SQLITE_TRANSIENT);
        break;
    case 2:
        sqlite3_result_int64(ctx, rounded(r->bytes));
        break;
    case 3:
        sqlite3_result_int64(ctx, rounded(r->objs));
        break;
    case 4: {
        const char *site = strrchr(r->stack, ';');

        sqlite3_result_text(ctx, site != NULL ? site + 1 : r->stack, -1,
                            SQLITE_TRANSIENT);
        break;
    }
    case 5:
    case 6:
    case 7:
        /* Cumulative counters only grow; a fall means prof.reset. */
        if (!c->d.has_alloc || r->abytes < 0 || r->aobjs < 0)
            break;
        if (col == 5)
            sqlite3_result_int64(ctx, rounded(r->abytes));
        else if (col == 6)
            sqlite3_result_int64(ctx, rounded(r->aobjs));
        else if (c->d.seconds > 0)
            sqlite3_result_double(ctx, r->abytes / c->d.seconds);
        break;
    case 8:
        sqlite3_result_double(ctx, c->d.seconds);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_diff_module = {
    0,                  /* iVersion */
    diff_connect,       /* xCreate: a session's own (temp) */
    diff_connect,       /* xConnect */
    diff_best_index,    /* xBestIndex - both dump arguments */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    diff_open,          /* xOpen */
    diff_close,         /* xClose */
    diff_filter,        /* xFilter - both dumps, collapsed, merged */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    diff_column,        /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
