/* SPDX-License-Identifier: MIT
 *
 * A series of dumps ranked by growth (growth.h): the datadir's dumps
 * listed with their times, a series picked by prof/dumpseries.h, each
 * dump loaded through the profile cache and summed on the worker thread
 * (ha_task_offload) into running sums the job owns (prof/growth.h has
 * the arithmetic); the loop only lists and hands dumps over. The last
 * result is kept (heap->growth, one entry, keyed by the series' files),
 * so heap_growth and heap_growth_stacks, the /heap page's growth view or
 * a dashboard's repeated query cost one computation.
 */
#include "heap/growth.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "heap/dumps.h"
#include "heap/heap.h"
#include "heap/profiles.h"
#include "prof/aggregate.h"
#include "prof/buildid.h"
#include "prof/dumpfile.h"
#include "prof/dumpname.h"
#include "prof/dumpseries.h"
#include "prof/growth.h"

/* ------------------------------------------------------------------
 * The result, shared by both tables and kept for the next query
 * ------------------------------------------------------------------ */

/* heap->growth: the last result (heap_vtab.h). */
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
    free(r->skipped);
    for (size_t i = 0; r->dumps != NULL && i < r->n_dumps; i++)
        free(r->dumps[i]);
    free(r->dumps);
    free(r->t_s);
    ha_products_free(&r->products);
    free(r);
}

void
ha_heap_growth_free(struct ha_heap *heap)
{
    if (heap->growth == NULL)
        return;
    ha_heap_growth_put(heap->growth->last);
    free(heap->growth);
    heap->growth = NULL;
}

/* ------------------------------------------------------------------
 * The series: the datadir's dumps and their times
 * ------------------------------------------------------------------ */

/* The datadir's dumps as prof/dumpseries.h picks among them. */
struct listing {
    struct ha_dump_list l;            /* owns the names */
    struct ha_dumpseries_dump *dumps; /* l.n; names point into l */
};

static void
listing_free(struct listing *l)
{
    ha_dump_list_free(&l->l);
    free(l->dumps);
    memset(l, 0, sizeof(*l));
}

/* Lists the datadir's dumps with their times off the loop into *l.
 * Returns 0, HA_HEAP_ERROR (err set) or HA_HEAP_STOPPED. */
static int
list_series(struct ha_heap *heap, struct listing *l, char *err,
            size_t errlen)
{
    int rc;

    memset(l, 0, sizeof(*l));
    if ((rc = ha_dumps_list(heap, HA_DUMPS_TIME, &l->l, err, errlen)) != 0)
        return rc;
    if ((l->dumps = calloc(l->l.n ? l->l.n : 1, sizeof(*l->dumps))) ==
        NULL) {
        listing_free(l);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    for (size_t i = 0; i < l->l.n; i++) {
        l->dumps[i].name = l->l.e[i].name;
        l->dumps[i].d = l->l.e[i].d;
        l->dumps[i].t_ns = l->l.e[i].taken_ns;
    }
    return 0;
}

/* The cache key: every file of the series with its size and mtime, and
 * the operator's wrapper edits (another cut is another result). */
static char *
series_key(const struct listing *l, const size_t *idx, size_t n,
           const char *wrappers)
{
    struct ha_buf b = HA_BUF_INIT;

    ha_buf_printf(&b, "%s|", wrappers);
    for (size_t k = 0; k < n; k++)
        ha_buf_printf(&b, "%s:%lld:%lld;", l->l.e[idx[k]].name,
                      l->l.e[idx[k]].size,
                      (long long)l->l.e[idx[k]].mtime_ns);
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
    struct ha_heap_profile *wrap; /* the newest readable dump: its
                                    allocation wrappers cut every dump
                                    of the series (one rule for all) */
    double t_s;                  /* its time */
    bool finish;                 /* the last job: rank the rows */
    int rc;
    char err[256];
};

static void
run_free(struct growth_run *run)
{
    ha_heap_profile_put(run->pr);
    ha_heap_profile_put(run->wrap);
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
    bool accum;

    run->rc = -1;
    memset(&agg, 0, sizeof(agg));
    if (run->finish) {
        ha_growth_finish(&run->funcs);
        ha_growth_finish(&run->stacks);
        run->rc = 0;
        return;
    }
    accum = ha_heapv2_has_accum(&pr->p);
    if (ha_growth_begin(&run->funcs, run->t_s, err, errlen) != 0 ||
        ha_growth_begin(&run->stacks, run->t_s, err, errlen) != 0)
        return;
    if ((w = ha_agg_walker_new_with(&pr->syms,
                                    run->wrap->syms.wrappers)) == NULL)
        goto oom;
    for (size_t i = 0; i < pr->p.n_stacks; i++) {
        const struct ha_heapv2_stack *st = &pr->p.stacks[i];

        if (ha_agg_walker_collapsed(w, &pr->p, i, &line) != 0)
            goto oom;
        if (ha_growth_add(&run->stacks, (const char *)line.data, line.len,
                          st->bytes, st->objs, err, errlen) != 0 ||
            (accum && ha_growth_add_alloc(&run->stacks,
                                          (const char *)line.data, line.len,
                                          st->accum_bytes, st->accum_objs,
                                          err, errlen) != 0))
            goto out;
    }
    agg.wrappers = run->wrap->syms.wrappers;
    if (ha_agg_add(&agg, &pr->p, &pr->syms, 1, false, err, errlen) != 0)
        goto out;
    for (size_t i = 0; i < agg.n_rows; i++) {
        const struct ha_agg_row *r = &agg.rows[i];
        const char *name = ha_agg_name(&agg, r);

        if (r->flat_bytes == 0 && r->flat_objs == 0 &&
            r->alloc_flat_objs == 0)
            continue;
        if (ha_growth_add(&run->funcs, name, strlen(name), r->flat_bytes,
                          r->flat_objs, err, errlen) != 0 ||
            (accum && ha_growth_add_alloc(&run->funcs, name, strlen(name),
                                          r->alloc_flat_bytes,
                                          r->alloc_flat_objs, err,
                                          errlen) != 0))
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
compute(struct ha_heap *heap, bool admin, const struct listing *l,
        const size_t *idx, size_t n, char *key, int *why, char *err,
        size_t errlen)
{
    int rc;

    struct growth_run *run = calloc(1, sizeof(*run));
    struct ha_heap_growth *res = NULL;
    struct ha_buf skipped = HA_BUF_INIT;
    bool *used = calloc(n ? n : 1, sizeof(*used));
    size_t n_used = 0, first = 0, last = 0, m = 0, wrap_k = SIZE_MAX;

    if (run == NULL || used == NULL)
        goto oom;
    /* The newest dump that reads: its wrapper set is the series'. With
     * prof_accum its stacks hold every stack sampled since profiling
     * began, so it has the most evidence; one set keeps a site's row the
     * same function in every dump. */
    for (size_t k = n; k-- > 0 && run->wrap == NULL;) {
        char why1[512];

        if ((rc = ha_heap_profile_get(heap, l->l.e[idx[k]].name, admin,
                                      &run->wrap, why1, sizeof(why1))) ==
            HA_HEAP_STOPPED) {
            *why = rc;
            goto fail_why;
        }
        if (rc == 0)
            wrap_k = k;
    }
    for (size_t k = 0; k <= n; k++) {
        if (k == n && n_used == 0) {
            ha_err_set(err, errlen, "no dump of the series could be read: %s",
                       skipped.len ? (const char *)skipped.data : "");
            goto fail;
        }
        if (k < n) {
            const char *name = l->l.e[idx[k]].name;

            char why1[512];

            if (k == wrap_k)
                run->pr = ha_heap_profile_ref(run->wrap);
            else if ((rc = ha_heap_profile_get(heap, name, admin, &run->pr,
                                               why1, sizeof(why1))) != 0) {
                if (rc != HA_HEAP_ERROR) {
                    ha_err_set(err, errlen, "%s", why1);
                    *why = rc;
                    goto fail_why;
                }
                /* One unreadable dump (truncated, planted, gone) leaves
                 * the series to the others, with a note. */
                ha_log_warn("heap_growth: %s skipped: %s", name, why1);
                ha_buf_printf(&skipped, "%s%s", skipped.len ? "; " : "",
                              why1);
                used[k] = false;
                continue;
            }
            used[k] = true;
            n_used++;
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
    for (size_t k = 0; k < n; k++)
        if (used[k]) {
            if (m++ == 0)
                first = k;
            last = k;
        }
    res->n_dumps = n_used;
    res->hours = ha_growth_span_hours(&res->funcs);
    res->first_dump = strdup(l->l.e[idx[first]].name);
    res->last_dump = strdup(l->l.e[idx[last]].name);
    if (skipped.len > 0) {
        ha_buf_append_u8(&skipped, 0);
        res->skipped = ha_buf_failed(&skipped) ? NULL
                                               : strdup((char *)skipped.data);
    }
    run_free(run);
    run = NULL;
    res->dumps = calloc(n_used, sizeof(*res->dumps));
    res->t_s = calloc(n_used, sizeof(*res->t_s));
    m = 0;
    for (size_t k = 0; res->dumps != NULL && res->t_s != NULL && k < n;
         k++) {
        if (!used[k])
            continue;
        if ((res->dumps[m] = strdup(l->l.e[idx[k]].name)) == NULL)
            break;
        res->t_s[m++] = (double)l->dumps[idx[k]].t_ns / 1e9;
    }
    free(used);
    ha_buf_free(&skipped);
    if (res->first_dump == NULL || res->last_dump == NULL ||
        res->dumps == NULL || res->t_s == NULL || m != n_used) {
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
    free(used);
    ha_buf_free(&skipped);
    free(key);
    return NULL;
}

int
ha_heap_growth_get(struct ha_heap *heap, bool admin,
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
    if ((why = list_series(heap, &l, err, errlen)) != 0)
        return why;
    if ((idx = malloc((l.l.n ? l.l.n : 1) * sizeof(*idx))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        why = HA_HEAP_ERROR;
        goto out;
    }
    if (ha_dumpseries_select(l.dumps, l.l.n, &spec, idx, &n, err, errlen) !=
        0) {
        why = HA_HEAP_ERROR;
        goto out;
    }
    if ((key = series_key(&l, idx, n, heap->alloc_wrappers)) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        why = HA_HEAP_ERROR;
        goto out;
    }
    if (heap->growth != NULL && heap->growth->last != NULL &&
        strcmp(heap->growth->last->key, key) == 0) {
        *out = heap->growth->last;
        (*out)->refs++;
        free(key);
        goto out;
    }
    if ((*out = compute(heap, admin, &l, idx, n, key, &why, err, errlen)) ==
        NULL)
        goto out;
    /* Keep it for the next query (on the loop, after the jobs). */
    if (heap->growth == NULL)
        heap->growth = calloc(1, sizeof(*heap->growth));
    if (heap->growth != NULL) {
        ha_heap_growth_put(heap->growth->last);
        heap->growth->last = *out;
        (*out)->refs++;
    }
out:
    free(idx);
    listing_free(&l);
    return why;
}

