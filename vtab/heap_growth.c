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
 *   k+19 since           HIDDEN   the arguments (see dumpseries.h): a
 *   k+20 until           HIDDEN   number of dumps, dump names or times
 *   k+21 dump_kind       HIDDEN   'manual', 'interval', ... or NULL
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
 * is kept (ctx->growth, one entry, keyed by the series' files), so the two
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
#include "vtab/heap_growth.h"
#include "vtab/heap_load.h"
#include "vtab/heap_vtab.h"

#define GROWTH_COLS_COMMON                                                 \
    "first_bytes INTEGER, last_bytes INTEGER, growth_bytes INTEGER, "      \
    "bytes_per_hour REAL, r2 REAL, grew_share REAL, pattern TEXT, score "  \
    "REAL, first_objects INTEGER, last_objects INTEGER, objects_per_hour " \
    "REAL, max_bytes INTEGER, steps INTEGER, grew INTEGER, shrank "        \
    "INTEGER, dumps INTEGER, hours REAL, first_dump TEXT, last_dump TEXT, " \
    "since HIDDEN, until HIDDEN, dump_kind HIDDEN)"
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
    C_SINCE, C_UNTIL, C_KIND, C_MAX
};

#define GROWTH_IDX_SINCE (1u << 0)
#define GROWTH_IDX_UNTIL (1u << 1)
#define GROWTH_IDX_KIND (1u << 2)

/* ------------------------------------------------------------------
 * The result, shared by both tables and kept for the next query
 * ------------------------------------------------------------------ */

/* ctx->growth: the last result (heap_vtab.h). */
struct ha_heap_growth_cache {
    struct ha_heap_growth *last;
};

void
ha_heap_growth_put(struct ha_heap_growth *r)
{
    if (r == NULL || --r->refs > 0)
        return;
    ha_growth_free(&r->funcs);
    ha_growth_free(&r->stacks);
    free(r->key);
    free(r->first_dump);
    free(r->last_dump);
    for (size_t i = 0; r->dumps != NULL && i < r->n_dumps; i++)
        free(r->dumps[i]);
    free(r->dumps);
    free(r->t_s);
    ha_buf_free(&r->page);
    free(r);
}

void
ha_heap_growth_free(struct ha_vtab_ctx *ctx)
{
    if (ctx->growth == NULL)
        return;
    ha_heap_growth_put(ctx->growth->last);
    free(ctx->growth);
    ctx->growth = NULL;
}

/* ------------------------------------------------------------------
 * The series: the datadir's dumps and their times
 * ------------------------------------------------------------------ */

struct listing {
    struct ha_dumpseries_dump *dumps;
    char **names;               /* owned; dumps[i].name points here */
    off_t *sizes;
    int64_t *mtimes;            /* ns */
    size_t n, cap;
};

static void
listing_free(struct listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    free(l->dumps);
    free(l->sizes);
    free(l->mtimes);
    memset(l, 0, sizeof(*l));
}

/* When dump name was taken: "# dumped_at" in its .buildid, else mtime. */
static int64_t
dump_time(const char *datadir, const char *name, int64_t mtime_ns)
{
    char side[NAME_MAX + 16], *buf = NULL, err[64];
    struct ha_buildids b;
    struct stat st;
    size_t len = 0;
    int64_t t = mtime_ns;

    if ((size_t)snprintf(side, sizeof(side), "%s.buildid", name) >=
            sizeof(side) ||
        ha_dumpfile_read(datadir, side, HA_DUMPFILE_BUILDID, &buf, &len,
                         &st, err, sizeof(err)) != 0)
        return t;
    if (ha_buildids_parse(buf, len, &b, err, sizeof(err)) == 0) {
        if (b.dumped_at_ns > 0)
            t = b.dumped_at_ns;
        ha_buildids_free(&b);
    }
    free(buf);
    return t;
}

/* Every dump in the datadir. Returns 0, or -1 (out of memory). */
static int
list_dumps(const char *datadir, struct listing *l)
{
    struct dirent *de;
    DIR *d;

    memset(l, 0, sizeof(*l));
    if (datadir == NULL || (d = opendir(datadir)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        struct ha_dump_name dn;
        struct stat st;
        char path[PATH_MAX];

        if (!ha_dumpname_parse(de->d_name, &dn) ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", datadir,
                             de->d_name) >= sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 64;
            void *a = realloc(l->dumps, cap * sizeof(*l->dumps));
            void *b = a ? realloc(l->names, cap * sizeof(*l->names)) : NULL;
            void *c = b ? realloc(l->sizes, cap * sizeof(*l->sizes)) : NULL;
            void *e = c ? realloc(l->mtimes, cap * sizeof(*l->mtimes)) : NULL;

            if (a != NULL)
                l->dumps = a;
            if (b != NULL)
                l->names = b;
            if (c != NULL)
                l->sizes = c;
            if (e != NULL)
                l->mtimes = e;
            if (e == NULL)
                goto oom;
            l->cap = cap;
        }
        if ((l->names[l->n] = strdup(de->d_name)) == NULL)
            goto oom;
        l->dumps[l->n].name = l->names[l->n];
        l->dumps[l->n].d = dn;
        l->sizes[l->n] = st.st_size;
        l->mtimes[l->n] = (int64_t)st.st_mtim.tv_sec * 1000000000 +
                          st.st_mtim.tv_nsec;
        l->dumps[l->n].t_ns = dump_time(datadir, de->d_name, l->mtimes[l->n]);
        l->n++;
    }
    closedir(d);
    return 0;
oom:
    closedir(d);
    listing_free(l);
    return -1;
}

/* The listing reads the directory and a sidecar per dump: on the
 * worker thread, so a datadir of thousands of dumps never holds the
 * loop. */
struct list_job {
    char *datadir;
    struct listing l;
    int rc;
};

static void
list_job_free(struct list_job *j)
{
    listing_free(&j->l);
    free(j->datadir);
    free(j);
}

static void
list_run(void *arg)
{
    struct list_job *j = arg;

    j->rc = list_dumps(j->datadir, &j->l);
}

static void
list_discard(void *arg)
{
    list_job_free(arg);
}

/* Lists the datadir's dumps off the loop into *l. Returns 0,
 * HA_HEAP_ERROR (out of memory) or HA_HEAP_STOPPED. */
static int
list_dumps_offloaded(const char *datadir, struct listing *l)
{
    struct list_job *j = calloc(1, sizeof(*j));

    memset(l, 0, sizeof(*l));
    if (j == NULL)
        return HA_HEAP_ERROR;
    if (datadir != NULL && (j->datadir = strdup(datadir)) == NULL) {
        free(j);
        return HA_HEAP_ERROR;
    }
    /* On -1 the job is list_discard's: never touch it again. */
    if (ha_task_offload(list_run, list_discard, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        list_job_free(j);
        return HA_HEAP_ERROR;
    }
    *l = j->l;
    memset(&j->l, 0, sizeof(j->l));
    list_job_free(j);
    return 0;
}

/* The cache key: every file of the series with its size and mtime. */
static char *
series_key(const struct listing *l, const size_t *idx, size_t n)
{
    struct ha_buf b = HA_BUF_INIT;

    for (size_t k = 0; k < n; k++)
        ha_buf_printf(&b, "%s:%lld:%lld;", l->names[idx[k]],
                      (long long)l->sizes[idx[k]],
                      (long long)l->mtimes[idx[k]]);
    ha_buf_append_u8(&b, 0);
    if (ha_buf_failed(&b)) {
        ha_buf_free(&b);
        return NULL;
    }
    return (char *)b.data;
}

/* ------------------------------------------------------------------
 * The work, on the worker thread
 * ------------------------------------------------------------------ */

/* What the jobs own: the running sums, and the dump in hand. A job reads
 * only the profile's parsed stacks and symbols, which never change once
 * loaded, and its reference keeps them alive; the loop drops the
 * reference (discard, or after the job). */
struct growth_run {
    struct ha_growth funcs, stacks;
    struct ha_heap_profile *pr;  /* the dump being added */
    double t_s;                  /* its time */
    bool finish;                 /* the last job: rank the rows */
    int rc;
    char err[256];
};

static void
run_free(struct growth_run *run)
{
    ha_heap_profile_put(run->pr);
    ha_growth_free(&run->funcs);
    ha_growth_free(&run->stacks);
    free(run);
}

/* discard: the statement stopped waiting; runs on the loop. */
static void
run_discard(void *arg)
{
    run_free(arg);
}

/* Adds one dump: stacks collapsed, functions by their flat figures. */
static void
run_dump(void *arg)
{
    struct growth_run *run = arg;
    const struct ha_heap_profile *pr = run->pr;
    struct ha_agg_walker *w = NULL;
    struct ha_buf line = HA_BUF_INIT;
    struct ha_agg agg;
    char *err = run->err;
    size_t errlen = sizeof(run->err);

    run->rc = -1;
    memset(&agg, 0, sizeof(agg));
    if (run->finish) {
        ha_growth_finish(&run->funcs);
        ha_growth_finish(&run->stacks);
        run->rc = 0;
        return;
    }
    if (ha_growth_begin(&run->funcs, run->t_s, err, errlen) != 0 ||
        ha_growth_begin(&run->stacks, run->t_s, err, errlen) != 0)
        return;
    if ((w = ha_agg_walker_new(&pr->syms)) == NULL)
        goto oom;
    for (size_t i = 0; i < pr->p.n_stacks; i++) {
        if (ha_agg_walker_collapsed(w, &pr->p, i, &line) != 0)
            goto oom;
        if (ha_growth_add(&run->stacks, (const char *)line.data, line.len,
                          pr->p.stacks[i].bytes, pr->p.stacks[i].objs, err,
                          errlen) != 0)
            goto out;
    }
    if (ha_agg_add(&agg, &pr->p, &pr->syms, 1, false, err, errlen) != 0)
        goto out;
    for (size_t i = 0; i < agg.n_rows; i++) {
        const struct ha_agg_row *r = &agg.rows[i];
        const char *name = ha_agg_name(&agg, r);

        if (r->flat_bytes == 0 && r->flat_objs == 0)
            continue;
        if (ha_growth_add(&run->funcs, name, strlen(name), r->flat_bytes,
                          r->flat_objs, err, errlen) != 0)
            goto out;
    }
    if (ha_growth_end(&run->funcs, err, errlen) != 0 ||
        ha_growth_end(&run->stacks, err, errlen) != 0)
        goto out;
    run->rc = 0;
    goto out;
oom:
    ha_err_set(err, errlen, "%s: out of memory", pr->name);
out:
    ha_agg_free(&agg);
    ha_agg_walker_free(w);
    ha_buf_free(&line);
}

/* Computes the series' result. Returns it (one reference), or NULL with
 * *why HA_HEAP_ERROR (err set) or HA_HEAP_STOPPED. */
static struct ha_heap_growth *
compute(struct ha_vtab_ctx *ctx, bool admin, const struct listing *l,
        const size_t *idx, size_t n, char *key, int *why, char *err,
        size_t errlen)
{
    int rc;

    struct growth_run *run = calloc(1, sizeof(*run));
    struct ha_heap_growth *res = NULL;

    if (run == NULL)
        goto oom;
    for (size_t k = 0; k <= n; k++) {
        if (k < n) {
            const char *name = l->names[idx[k]];

            if ((rc = ha_heap_profile_get(ctx, name, admin,
                                          &run->pr, err, errlen)) != 0) {
                *why = rc;
                goto fail_why;
            }
            run->t_s = (double)l->dumps[idx[k]].t_ns / 1e9;
        } else {
            run->finish = true;
        }
        /* On -1 the run is run_discard's: never touch it again. */
        if (ha_task_offload(run_dump, run_discard, run) != 0) {
            *why = HA_HEAP_STOPPED;
            free(key);
            return NULL;
        }
        ha_heap_profile_put(run->pr);
        run->pr = NULL;
        if (run->rc != 0) {
            ha_err_set(err, errlen, "%s", run->err);
            goto fail;
        }
    }
    if ((res = calloc(1, sizeof(*res))) == NULL)
        goto oom;
    res->refs = 1;
    res->key = key;
    key = NULL;
    res->funcs = run->funcs;
    res->stacks = run->stacks;
    memset(&run->funcs, 0, sizeof(run->funcs));
    memset(&run->stacks, 0, sizeof(run->stacks));
    res->n_dumps = n;
    res->hours = ha_growth_span_hours(&res->funcs);
    res->first_dump = strdup(l->names[idx[0]]);
    res->last_dump = strdup(l->names[idx[n - 1]]);
    run_free(run);
    res->dumps = calloc(n, sizeof(*res->dumps));
    res->t_s = calloc(n, sizeof(*res->t_s));
    for (size_t k = 0; res->dumps != NULL && res->t_s != NULL && k < n;
         k++) {
        if ((res->dumps[k] = strdup(l->names[idx[k]])) == NULL)
            break;
        res->t_s[k] = (double)l->dumps[idx[k]].t_ns / 1e9;
    }
    if (res->first_dump == NULL || res->last_dump == NULL ||
        res->dumps == NULL || res->t_s == NULL || res->dumps[n - 1] == NULL) {
        ha_heap_growth_put(res);
        ha_err_set(err, errlen, "out of memory");
        return NULL;
    }
    return res;
oom:
    ha_err_set(err, errlen, "out of memory");
fail:
    *why = HA_HEAP_ERROR;
fail_why:
    if (run != NULL)
        run_free(run);
    free(key);
    return NULL;
}

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
    sqlite3_vtab_cursor base;  /* Base class - must be first */
    struct ha_heap_growth *res; /* one reference; NULL: no rows */
    size_t i;
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
    int rc = sqlite3_declare_vtab(db, stacks ? GROWTH_SCHEMA_STACKS
                                             : GROWTH_SCHEMA_FUNCS);

    if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        return rc;
    }
    if ((vt = sqlite3_malloc(sizeof(*vt))) == NULL)
        return SQLITE_NOMEM;
    memset(vt, 0, sizeof(*vt));
    vt->base.conn = aux;
    vt->stacks = stacks;
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    *pp = &vt->base.base;
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
    growth_cursor *c = sqlite3_malloc(sizeof(*c));

    (void)p;
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *pp = &c->base;
    return SQLITE_OK;
}

static void
growth_clear(growth_cursor *c)
{
    ha_heap_growth_put(c->res);
    c->res = NULL;
    c->i = 0;
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

int
ha_heap_growth_get(struct ha_vtab_ctx *ctx, bool admin,
                   const struct ha_dumpseries_arg args[3],
                   struct ha_heap_growth **out, char *err, size_t errlen)
{
    struct ha_dumpseries_spec spec;
    struct listing l;
    size_t *idx = NULL, n = 0;
    char *key = NULL;
    int why = 0;

    *out = NULL;
    if (ha_dumpseries_spec(&args[0], &args[1], &args[2], &spec, err,
                           errlen) != 0)
        return HA_HEAP_ERROR;
    if ((why = list_dumps_offloaded(ctx->datadir, &l)) != 0) {
        ha_err_set(err, errlen, "out of memory");
        return why;
    }
    if ((idx = malloc((l.n ? l.n : 1) * sizeof(*idx))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        why = HA_HEAP_ERROR;
        goto out;
    }
    if (ha_dumpseries_select(l.dumps, l.n, &spec, idx, &n, err, errlen) !=
        0) {
        why = HA_HEAP_ERROR;
        goto out;
    }
    if ((key = series_key(&l, idx, n)) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        why = HA_HEAP_ERROR;
        goto out;
    }
    if (ctx->growth != NULL && ctx->growth->last != NULL &&
        strcmp(ctx->growth->last->key, key) == 0) {
        *out = ctx->growth->last;
        (*out)->refs++;
        free(key);
        goto out;
    }
    if ((*out = compute(ctx, admin, &l, idx, n, key, &why, err, errlen)) ==
        NULL)
        goto out;
    /* Keep it for the next query (on the loop, after the jobs). */
    if (ctx->growth == NULL)
        ctx->growth = calloc(1, sizeof(*ctx->growth));
    if (ctx->growth != NULL) {
        ha_heap_growth_put(ctx->growth->last);
        ctx->growth->last = *out;
        (*out)->refs++;
    }
out:
    free(idx);
    listing_free(&l);
    return why;
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
    rc = ha_heap_growth_get(vt->base.conn->ctx, vt->base.conn->admin, args,
                            &c->res, err, sizeof(err));
    return rc == 0 ? SQLITE_OK : ha_heap_fail(&vt->base.base, rc, table, err);
}

static const struct ha_growth *
rows_of(const growth_cursor *c, const growth_vtab *vt)
{
    return vt->stacks ? &c->res->stacks : &c->res->funcs;
}

static int
growth_next(sqlite3_vtab_cursor *cur)
{
    ((growth_cursor *)cur)->i++;
    return SQLITE_OK;
}

static int
growth_eof(sqlite3_vtab_cursor *cur)
{
    growth_cursor *c = (growth_cursor *)cur;
    growth_vtab *vt = (growth_vtab *)cur->pVtab;

    return c->res == NULL || c->i >= rows_of(c, vt)->n_rows;
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
    const struct ha_growth_row *r = &g->rows[c->i];
    const char *key = ha_growth_key(g, r);
    int k = col - n_keys(vt);

    if (col == 0) {
        sqlite3_result_int64(ctx, (sqlite3_int64)c->i + 1);
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
        ha_heap_disconnect, /* xDisconnect */                              \
        ha_heap_disconnect, /* xDestroy */                                 \
        growth_open,        /* xOpen */                                    \
        growth_close,       /* xClose */                                   \
        growth_filter,      /* xFilter - select the series, compute */     \
        growth_next,        /* xNext */                                    \
        growth_eof,         /* xEof */                                     \
        growth_column,      /* xColumn */                                  \
        ha_heap_rowid,      /* xRowid */                                   \
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,  \
    }

sqlite3_module ha_heap_growth_module = GROWTH_MODULE(growth_connect);
sqlite3_module ha_heap_growth_stacks_module =
    GROWTH_MODULE(growth_stacks_connect);
