/* SPDX-License-Identifier: MIT
 *
 * Lifetimes per allocation site or stack from a prof_log window (see
 * lifetimes.h): every trace named once, every sampled allocation turned
 * into a weighted entry, the entries sorted by key and lifetime, and
 * each key's run summed and cut at its percentiles.
 */
#include "prof/lifetimes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "prof/aggregate.h"

/* What stands for a trace with no frame after the allocator's. */
#define NO_SITE "(allocator frames only)"

/* One sampled allocation. */
struct entry {
    uint32_t key;
    uint32_t site;       /* the key's allocation site */
    uint32_t free_key;   /* free site (or free stack) */
    uint32_t free_site;  /* the free key's site */
    uint64_t life_ns;
    double w;            /* objects it stands for */
    double bytes;
    double temp;         /* its temporary estimate, 0..1 */
    bool other_thread;
};

static int
by_key_life(const void *x, const void *y)
{
    const struct entry *a = x, *b = y;

    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->life_ns != b->life_ns)
        return a->life_ns < b->life_ns ? -1 : 1;
    return 0;
}

/* Free keys and their weight, for the main free site of one key. */
struct fk {
    uint32_t key;
    uint32_t site;
    double w;
};

static int
by_fk(const void *x, const void *y)
{
    const struct fk *a = x, *b = y;

    return a->key < b->key ? -1 : a->key > b->key;
}

/* qsort_r's context for the final order. */
static int
by_bytes(const void *x, const void *y, void *arg)
{
    const struct ha_life_row *a = x, *b = y;
    const struct ha_lifetimes *l = arg;

    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return strcmp(ha_life_str(l, a->key), ha_life_str(l, b->key));
}

/* Names every trace of p: its site and, with want_stack, its collapsed
 * stack, interned into l->names. */
static int
name_traces(const struct ha_heapv2 *p, const struct ha_syms *syms,
            bool want_stack, struct ha_lifetimes *l, uint32_t *site,
            uint32_t *stack)
{
    struct ha_agg_walker *w = ha_agg_walker_new(syms);
    struct ha_buf b = HA_BUF_INIT;
    int ret = -1;

    if (w == NULL)
        return -1;
    for (size_t i = 0; i < p->n_stacks; i++) {
        int rc = ha_agg_walker_site(w, p, i, &b);

        if (rc < 0)
            goto out;
        site[i] = rc == 1 ? ha_strtab_intern(&l->names, NO_SITE,
                                             strlen(NO_SITE))
                          : ha_strtab_intern(&l->names,
                                             (const char *)b.data, b.len);
        if (site[i] == UINT32_MAX)
            goto out;
        if (!want_stack)
            continue;
        if (ha_agg_walker_collapsed(w, p, i, &b) != 0)
            goto out;
        stack[i] = b.len == 0 ? site[i]
                              : ha_strtab_intern(&l->names,
                                                 (const char *)b.data, b.len);
        if (stack[i] == UINT32_MAX)
            goto out;
    }
    ret = 0;
out:
    ha_buf_free(&b);
    ha_agg_walker_free(w);
    return ret;
}

/* The lifetime at share q of the run's weight W (entries sorted by
 * lifetime): the first whose running weight reaches q * W. */
static double
percentile(const struct entry *e, size_t n, double W, double q)
{
    double run = 0;

    for (size_t i = 0; i < n; i++) {
        run += e[i].w;
        if (run >= q * W * (1 - 1e-12))
            return (double)e[i].life_ns;
    }
    return n > 0 ? (double)e[n - 1].life_ns : 0;
}

/* Sums one key's run of entries into r; scratch holds n free keys. */
static void
summarize(const struct entry *e, size_t n, struct fk *scratch,
          bool per_stack, struct ha_life_row *r, bool known_temp)
{
    double W = 0, other = 0, temp = 0, best = -1;
    size_t m = 0;

    memset(r, 0, sizeof(*r));
    r->key = e[0].key;
    r->site = e[0].site;
    r->samples = n;
    for (size_t i = 0; i < n; i++) {
        W += e[i].w;
        r->bytes += e[i].bytes;
        other += e[i].other_thread ? e[i].w : 0;
        temp += e[i].temp * e[i].w;
        scratch[i].key = e[i].free_key;
        scratch[i].site = e[i].free_site;
        scratch[i].w = e[i].w;
    }
    r->objects = W;
    r->lifetime_ns[0] = percentile(e, n, W, 0.50);
    r->lifetime_ns[1] = percentile(e, n, W, 0.90);
    r->lifetime_ns[2] = percentile(e, n, W, 0.99);
    r->lifetime_ns[3] = (double)e[n - 1].life_ns;
    r->other_thread_share = W > 0 ? other / W : 0;
    r->temporary_share = known_temp && W > 0 ? temp / W : NAN;
    qsort(scratch, n, sizeof(*scratch), by_fk);
    for (size_t i = 0; i < n;) {
        size_t k = i;
        double sum = 0;

        while (k < n && scratch[k].key == scratch[i].key)
            sum += scratch[k++].w;
        /* Ties go to the first key met (the lower offset). */
        if (sum > best) {
            best = sum;
            m = i;
        }
        i = k;
    }
    r->free_site = scratch[m].site;
    r->free_stack = per_stack ? scratch[m].key : 0;
    r->free_site_share = W > 0 ? best / W : 0;
}

int
ha_lifetimes_build(const struct ha_proflog *log, const struct ha_heapv2 *p,
                   const struct ha_syms *syms,
                   const struct ha_life_opts *opts, struct ha_lifetimes *out,
                   char *err, size_t errlen)
{
    size_t nt = p->n_stacks, n = log->n_allocs, cap = 0;
    uint32_t *site = calloc(nt ? nt : 1, sizeof(*site));
    uint32_t *stack = calloc(nt ? nt : 1, sizeof(*stack));
    struct entry *e = calloc(n ? n : 1, sizeof(*e));
    struct fk *scratch = calloc(n ? n : 1, sizeof(*scratch));
    uint64_t period = ha_proflog_period(log);
    double rate = opts->events_per_s;
    bool known_temp = rate > 0 && isfinite(rate);
    int ret = -1;

    memset(out, 0, sizeof(*out));
    out->seconds = (double)log->duration_ns / 1e9;
    out->time_high = log->time_high;
    if (site == NULL || stack == NULL || e == NULL || scratch == NULL ||
        log->traces.n != nt)
        goto oom;
    if (name_traces(p, syms, opts->per_stack, out, site, stack) != 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const struct ha_proflog_alloc *a = &log->allocs[i];
        struct entry *x = &e[i];

        x->key = opts->per_stack ? stack[a->alloc_trace] : site[a->alloc_trace];
        x->site = site[a->alloc_trace];
        /* Per stack, the free side is a stack too. */
        x->free_key = opts->per_stack ? stack[a->free_trace]
                                      : site[a->free_trace];
        x->free_site = site[a->free_trace];
        x->life_ns = a->free_ns >= a->alloc_ns ? a->free_ns - a->alloc_ns : 0;
        x->w = ha_proflog_weight(period, a->usize);
        x->bytes = x->w * (double)a->usize;
        x->other_thread = a->free_thread != a->alloc_thread;
        x->temp = known_temp && !x->other_thread
                      ? exp(-rate * (double)x->life_ns / 1e9)
                      : 0;
    }
    if (n > 1)
        qsort(e, n, sizeof(*e), by_key_life);
    for (size_t i = 0; i < n;) {
        size_t k = i;
        struct ha_life_row *r;

        while (k < n && e[k].key == e[i].key)
            k++;
        if (out->n_rows == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct ha_life_row *v = realloc(out->rows, ncap * sizeof(*v));

            if (v == NULL)
                goto oom;
            out->rows = v;
            cap = ncap;
        }
        r = &out->rows[out->n_rows++];
        summarize(e + i, k - i, scratch, opts->per_stack, r, known_temp);
        out->objects += r->objects;
        out->bytes += r->bytes;
        out->samples += r->samples;
        i = k;
    }
    if (out->n_rows > 1)
        qsort_r(out->rows, out->n_rows, sizeof(*out->rows), by_bytes, out);
    ret = 0;
    goto done;
oom:
    ha_err_set(err, errlen, "out of memory summing %zu sampled allocations",
               n);
    ha_lifetimes_free(out);
done:
    free(site);
    free(stack);
    free(e);
    free(scratch);
    return ret;
}

void
ha_lifetimes_free(struct ha_lifetimes *l)
{
    if (l == NULL)
        return;
    free(l->rows);
    ha_strtab_free(&l->names);
    memset(l, 0, sizeof(*l));
}
