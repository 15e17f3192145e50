/* SPDX-License-Identifier: MIT
 *
 * Lifetimes per allocation site or stack from a prof_log window (see
 * lifetimes.h): every trace named once, every sampled allocation turned
 * into a weighted entry, the logged events put in time order to count
 * what lies inside each entry's life, the entries grouped by path for the
 * temporary share, then sorted by key and lifetime and each key's run
 * summed and cut at its percentiles.
 */
#include "prof/lifetimes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "prof/aggregate.h"

/* What stands for a trace with no frame after the allocator's. */
#define NO_SITE "(allocator frames only)"
/* The coarse clock's tick when neither the caller nor the log says. */
#define DEFAULT_TICK_NS 4000000

/* One sampled allocation. */
struct entry {
    uint32_t key;
    uint32_t site;       /* the key's allocation site */
    uint32_t free_key;   /* free site (or free stack) */
    uint32_t free_site;  /* the free key's site */
    uint32_t alloc_trace, free_trace;
    uint64_t life_ns;
    bool subtick;        /* under one tick of the coarse clock */
    double w;            /* objects it stands for */
    double bytes;
    double khat;         /* events inside its life, estimated */
    uint32_t seen;       /* logged events placed inside it */
    double vis;          /* share of its life where an event can be
                            placed: 1 with the fine clock */
    bool other_thread;
    /* Its path's temporary figures, in objects (set on the path's
     * first entry only, the others 0). */
    double t_est, t_lo, t_hi, t_sub, t_few, sightings;
    uint64_t n_subtick;
};

/* One logged allocation or free. */
struct event {
    uint64_t t;
    uint32_t idx;        /* the allocation's index in the log */
    uint32_t thread;
    bool is_free;
};

/* ------------------------------------------------------------------
 * Orders
 * ------------------------------------------------------------------ */

/* Time, then frees before allocations, then log order (the order of the
 * frees): the frees of one tick come in the order they happened. */
static int
by_time(const void *x, const void *y)
{
    const struct event *a = x, *b = y;

    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->is_free != b->is_free)
        return a->is_free ? -1 : 1;
    if (a->idx != b->idx)
        return a->idx < b->idx ? -1 : 1;
    return 0;
}

/* Positions into the time-ordered events (arg), by thread then time. */
static int
by_thread(const void *x, const void *y, void *arg)
{
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    const struct event *ev = arg, *a = &ev[i], *b = &ev[j];

    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    return i < j ? -1 : i > j;
}

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

static int
by_path(const void *x, const void *y)
{
    const struct entry *a = x, *b = y;

    if (a->alloc_trace != b->alloc_trace)
        return a->alloc_trace < b->alloc_trace ? -1 : 1;
    if (a->free_trace != b->free_trace)
        return a->free_trace < b->free_trace ? -1 : 1;
    return 0;
}

static int
by_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
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

/* ------------------------------------------------------------------
 * Traces
 * ------------------------------------------------------------------ */

/* Names every trace of p: its site and, with want_stack, its collapsed
 * stack, interned into l->names; cut[i] gets the first frame past the
 * allocator's. */
static int
name_traces(const struct ha_heapv2 *p, const struct ha_syms *syms,
            bool want_stack, struct ha_lifetimes *l, uint32_t *site,
            uint32_t *stack, uint32_t *cut)
{
    struct ha_agg_walker *w = ha_agg_walker_new(syms);
    struct ha_buf b = HA_BUF_INIT;
    int ret = -1;

    if (w == NULL)
        return -1;
    for (size_t i = 0; i < p->n_stacks; i++) {
        size_t c = ha_agg_walker_stack(w, p, i);
        int rc;

        if (c == SIZE_MAX)
            goto out;
        cut[i] = (uint32_t)c;
        rc = ha_agg_walker_site(w, p, i, &b);
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

/* True when traces i and j are the same call past the allocator's
 * frames: a realloc's allocation and free share that part. */
static bool
same_call(const struct ha_heapv2 *p, const uint32_t *cut, uint32_t i,
          uint32_t j)
{
    const struct ha_heapv2_stack *a = &p->stacks[i], *b = &p->stacks[j];
    size_t na = a->n_frames - cut[i], nb = b->n_frames - cut[j];

    if (cut[i] > a->n_frames || cut[j] > b->n_frames || na != nb || na == 0)
        return false;
    return memcmp(p->frames + a->frame_off + cut[i],
                  p->frames + b->frame_off + cut[j],
                  na * sizeof(*p->frames)) == 0;
}

/* ------------------------------------------------------------------
 * What lies inside each life
 * ------------------------------------------------------------------ */

/* The first position of events[0 .. n) at or after time t. */
static size_t
lower_time(const struct event *ev, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (ev[mid].t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The sampling chance of a typical event: the median of 1/w over the
 * logged events, each weighing the w events it stands for. */
static double
typical_chance(const struct event *ev, size_t n, const struct entry *e,
               double *scratch)
{
    double total = 0, run = 0;

    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++) {
        scratch[i] = e[ev[i].idx].w;
        total += scratch[i];
    }
    /* Largest weight first: the smallest chances. */
    qsort(scratch, n, sizeof(*scratch), by_double);
    for (size_t i = n; i-- > 0;) {
        run += scratch[i];
        if (run >= total / 2)
            return 1 / scratch[i];
    }
    return 1 / scratch[0];
}

/* Fills khat, seen and vis of every entry from the time-ordered events
 * (pos[2i], pos[2i+1]: where entry i's allocation and free are, and
 * tpos[]: each event's place in thread order, torder[]: that order). */
static void
place_events(const struct ha_proflog *log, const struct ha_heapv2 *p,
             const uint32_t *cut, const struct event *ev, size_t n_ev,
             const double *cw, const uint32_t *pos, const uint32_t *torder,
             const uint32_t *tpos, uint64_t tick, struct entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct ha_proflog_alloc *a = &log->allocs[i];
        struct entry *x = &e[i];
        size_t lo, hi, fpos = pos[2 * i + 1];
        double k = 0;
        uint32_t seen = 0;

        x->khat = 0;
        x->seen = 0;
        /* d ticks apart: the d - 1 between can hold placed events, the
         * ends cannot. */
        if (tick > 1) {
            double d = a->free_ns > a->alloc_ns
                           ? round((double)(a->free_ns - a->alloc_ns) /
                                   (double)tick)
                           : 0;

            x->vis = d >= 2 ? (d - 1) / d : 0;
        } else {
            x->vis = 1;
        }
        if (a->free_ns <= a->alloc_ns)
            continue;
        /* Strictly inside: after every event at the allocation's time,
         * before every event at the free's. */
        lo = lower_time(ev, n_ev, a->alloc_ns + 1);
        hi = lower_time(ev, n_ev, a->free_ns);
        if (hi > lo) {
            k = cw[hi] - cw[lo];
            seen = (uint32_t)(hi - lo);
        }
        /* The realloc that made it freed its old block next on its
         * thread; the one that freed it made the new block just before:
         * heaptrack puts those outside (free, then malloc). */
        {
            size_t t = tpos[pos[2 * i]] + 1;

            if (t < n_ev && ev[torder[t]].thread == ev[pos[2 * i]].thread) {
                const struct event *z = &ev[torder[t]];

                if (z->is_free && z->t > a->alloc_ns && z->t < a->free_ns &&
                    same_call(p, cut, log->allocs[z->idx].free_trace,
                              a->alloc_trace)) {
                    k -= e[z->idx].w;
                    seen--;
                }
            }
            t = tpos[fpos];
            if (t > 0 && ev[torder[t - 1]].thread == ev[fpos].thread) {
                const struct event *y = &ev[torder[t - 1]];

                if (!y->is_free && y->t > a->alloc_ns && y->t < a->free_ns &&
                    same_call(p, cut, log->allocs[y->idx].alloc_trace,
                              a->free_trace)) {
                    k -= e[y->idx].w;
                    seen--;
                }
            }
        }
        if (tick > 1) {
            /* Scaled up to its whole life; the frees of its own free
             * tick logged before its free are placed too
             * (lower_time(free) is that tick's first event, frees first
             * in log order). */
            k = x->vis > 0 ? k / x->vis : 0;
            if (x->vis == 0)
                seen = 0;
            if (fpos > hi) {
                k += cw[fpos] - cw[hi];
                seen += (uint32_t)(fpos - hi);
            }
        }
        x->khat = k > 0 ? k : 0;
        x->seen = seen;
    }
}

/* The Poisson count whose chance of showing s or fewer (lo: s or more)
 * is 2.5%: Wilson and Hilferty's approximation, within a few percent of
 * the exact bound from s = 0 on (3.67 for 3.69 at 0). */
static double
poisson_lo(double s)
{
    double c;

    if (s <= 0)
        return 0;
    c = 1 - 1 / (9 * s) - HA_LIFE_Z / (3 * sqrt(s));
    return c > 0 ? s * c * c * c : 0;
}

static double
poisson_hi(double s)
{
    double c = 1 - 1 / (9 * (s + 1)) + HA_LIFE_Z / (3 * sqrt(s + 1));

    return (s + 1) * c * c * c;
}

static double
clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* The temporary figures of each path (entries with one allocation trace
 * and one free trace; e sorted by path), in objects, on the path's first
 * entry. */
static void
judge_paths(struct entry *e, size_t n, double p_event)
{
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double w_vis = 0, wk = 0, w_proven = 0, w_sub = 0, vis = 0;
        double seen = 0;
        uint64_t n_sub = 0;
        struct entry *f = &e[i];

        while (j < n && by_path(&e[j], f) == 0) {
            const struct entry *x = &e[j++];

            if (x->vis > 0) {
                w_vis += x->w;
                wk += x->w * x->khat;
                vis += x->vis;
                seen += x->seen;
                if (x->seen > 0)
                    w_proven += x->w;
            } else if (x->seen == 0) {
                w_sub += x->w;
                n_sub++;
            }
        }
        for (size_t k = i; k < j; k++) {
            e[k].t_est = e[k].t_lo = e[k].t_hi = 0;
            e[k].t_sub = e[k].t_few = e[k].sightings = 0;
            e[k].n_subtick = 0;
        }
        if (w_vis > 0) {
            /* M, the mean events inside, from `seen` sightings: its
             * range is theirs scaled; none seen bounds it by what one
             * event per object would have shown. */
            double m = wk / w_vis, sights = p_event * vis;
            double m_lo = seen > 0 ? m * poisson_lo(seen) / seen : 0;
            double m_hi = seen > 0   ? m * poisson_hi(seen) / seen
                          : sights > 0 ? poisson_hi(0) / sights
                                       : INFINITY;
            double q_hi = clamp01(1 - m_lo);

            if (q_hi > 1 - w_proven / w_vis)
                q_hi = 1 - w_proven / w_vis;
            f->t_est = clamp01(1 - m) * w_vis;
            f->t_lo = clamp01(1 - m_hi) * w_vis;
            f->t_hi = q_hi * w_vis;
            f->t_few = f->t_hi - f->t_lo;
            f->sightings = f->t_few > 0 ? sights : 0;
        }
        /* Too short to place anything in: from none to all. */
        f->t_est += w_sub / 2;
        f->t_hi += w_sub;
        f->t_sub = w_sub;
        f->n_subtick = n_sub;
        i = j;
    }
}

/* ------------------------------------------------------------------
 * Rows
 * ------------------------------------------------------------------ */

/* The lifetime at share q of the run's weight W (entries sorted by
 * lifetime): the first whose running weight reaches q * W. */
static double
percentile(const struct entry *e, size_t n, double W, double q)
{
    size_t k = n - 1;
    double run = 0;

    for (size_t i = 0; i < n; i++) {
        run += e[i].w;
        if (run >= q * W * (1 - 1e-12)) {
            k = i;
            break;
        }
    }
    return e[k].subtick ? NAN : (double)e[k].life_ns;
}

/* The share of est in [lo, hi] over W; NAN when the range is wider than
 * HA_LIFE_UNKNOWN. */
static void
shares(double est, double lo, double hi, double W, double *share,
       double *min, double *max)
{
    *min = W > 0 ? lo / W : 0;
    *max = W > 0 ? hi / W : 0;
    *share = *max - *min > HA_LIFE_UNKNOWN ? NAN
             : W > 0                      ? est / W
                                          : 0;
}

/* Sums one key's run of entries into r; scratch holds n free keys. */
static void
summarize(const struct entry *e, size_t n, struct fk *scratch,
          bool per_stack, struct ha_life_row *r)
{
    double W = 0, other = 0, best = -1, est = 0, lo = 0, hi = 0, sub = 0,
           few = 0;
    size_t m = 0;

    memset(r, 0, sizeof(*r));
    r->key = e[0].key;
    r->site = e[0].site;
    r->samples = n;
    for (size_t i = 0; i < n; i++) {
        W += e[i].w;
        r->bytes += e[i].bytes;
        other += e[i].other_thread ? e[i].w : 0;
        est += e[i].t_est;
        lo += e[i].t_lo;
        hi += e[i].t_hi;
        sub += e[i].t_sub;
        few += e[i].t_few;
        r->sightings += e[i].sightings;
        r->subtick += e[i].n_subtick;
        scratch[i].key = e[i].free_key;
        scratch[i].site = e[i].free_site;
        scratch[i].w = e[i].w;
    }
    r->objects = W;
    r->lifetime_ns[0] = percentile(e, n, W, 0.50);
    r->lifetime_ns[1] = percentile(e, n, W, 0.90);
    r->lifetime_ns[2] = percentile(e, n, W, 0.99);
    r->lifetime_ns[3] = e[n - 1].subtick ? NAN : (double)e[n - 1].life_ns;
    r->other_thread_share = W > 0 ? other / W : 0;
    shares(est, lo, hi, W, &r->temporary_share, &r->temporary_min,
           &r->temporary_max);
    r->why = r->temporary_max - r->temporary_min <= HA_LIFE_TOLERANCE
                 ? HA_LIFE_KNOWN
             : sub >= few ? HA_LIFE_SUBTICK
                          : HA_LIFE_FEW;
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

/* ------------------------------------------------------------------
 * Build
 * ------------------------------------------------------------------ */

int
ha_lifetimes_build(const struct ha_proflog *log, const struct ha_heapv2 *p,
                   const struct ha_syms *syms,
                   const struct ha_life_opts *opts, struct ha_lifetimes *out,
                   char *err, size_t errlen)
{
    size_t nt = p->n_stacks, n = log->n_allocs, n_ev = 2 * n, cap = 0;
    uint32_t *site = calloc(nt ? nt : 1, sizeof(*site));
    uint32_t *stack = calloc(nt ? nt : 1, sizeof(*stack));
    uint32_t *cut = calloc(nt ? nt : 1, sizeof(*cut));
    struct entry *e = calloc(n ? n : 1, sizeof(*e));
    struct fk *scratch = calloc(n ? n : 1, sizeof(*scratch));
    struct event *ev = calloc(n_ev ? n_ev : 1, sizeof(*ev));
    double *cw = calloc(n_ev + 1, sizeof(*cw));
    uint32_t *pos = calloc(n_ev ? n_ev : 1, sizeof(*pos));
    uint32_t *torder = calloc(n_ev ? n_ev : 1, sizeof(*torder));
    uint32_t *tpos = calloc(n_ev ? n_ev : 1, sizeof(*tpos));
    double *dbl = calloc(n_ev ? n_ev : 1, sizeof(*dbl));
    uint64_t period = ha_proflog_period(log), tick;
    double est = 0, lo = 0, hi = 0;
    int ret = -1;

    memset(out, 0, sizeof(*out));
    out->seconds = (double)log->duration_ns / 1e9;
    out->time_high = log->time_high;
    tick = log->time_high  ? 1
           : opts->tick_ns ? opts->tick_ns
                           : ha_proflog_tick_ns(log);
    out->tick_ns = tick != 0 ? tick : DEFAULT_TICK_NS;
    if (site == NULL || stack == NULL || cut == NULL || e == NULL ||
        scratch == NULL || ev == NULL || cw == NULL || pos == NULL ||
        torder == NULL || tpos == NULL || dbl == NULL ||
        log->traces.n != nt ||
        n_ev > UINT32_MAX)
        goto oom;
    if (name_traces(p, syms, opts->per_stack, out, site, stack, cut) != 0)
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
        x->alloc_trace = a->alloc_trace;
        x->free_trace = a->free_trace;
        x->life_ns = a->free_ns >= a->alloc_ns ? a->free_ns - a->alloc_ns : 0;
        x->subtick = out->tick_ns > 1 && x->life_ns < out->tick_ns / 2;
        x->w = ha_proflog_weight(period, a->usize);
        x->bytes = x->w * (double)a->usize;
        x->other_thread = a->free_thread != a->alloc_thread;
        ev[2 * i] = (struct event){a->alloc_ns, (uint32_t)i, a->alloc_thread,
                                   false};
        ev[2 * i + 1] = (struct event){a->free_ns, (uint32_t)i,
                                       a->free_thread, true};
    }
    if (n_ev > 1)
        qsort(ev, n_ev, sizeof(*ev), by_time);
    for (size_t i = 0; i < n_ev; i++) {
        cw[i + 1] = cw[i] + e[ev[i].idx].w;
        pos[2 * ev[i].idx + ev[i].is_free] = (uint32_t)i;
        torder[i] = (uint32_t)i;
    }
    if (n_ev > 1)
        qsort_r(torder, n_ev, sizeof(*torder), by_thread, ev);
    for (size_t i = 0; i < n_ev; i++)
        tpos[torder[i]] = (uint32_t)i;
    out->p_event = typical_chance(ev, n_ev, e, dbl);
    place_events(log, p, cut, ev, n_ev, cw, pos, torder, tpos,
                 out->tick_ns, e, n);
    if (n > 1)
        qsort(e, n, sizeof(*e), by_path);
    judge_paths(e, n, out->p_event);
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
        summarize(e + i, k - i, scratch, opts->per_stack, r);
        out->objects += r->objects;
        out->bytes += r->bytes;
        out->samples += r->samples;
        for (size_t j = i; j < k; j++) {
            est += e[j].t_est;
            lo += e[j].t_lo;
            hi += e[j].t_hi;
        }
        i = k;
    }
    shares(est, lo, hi, out->objects, &out->temporary_share,
           &out->temporary_min, &out->temporary_max);
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
    free(cut);
    free(e);
    free(scratch);
    free(ev);
    free(cw);
    free(pos);
    free(torder);
    free(tpos);
    free(dbl);
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

void
ha_lifetimes_note(const struct ha_lifetimes *l, const struct ha_life_row *r,
                  char *out, size_t outlen)
{
    char range[64] = "";

    if (outlen == 0)
        return;
    out[0] = '\0';
    if (r->why == HA_LIFE_KNOWN)
        return;
    if (!isnan(r->temporary_share))
        snprintf(range, sizeof(range), "between %.2f and %.2f: ",
                 r->temporary_min, r->temporary_max);
    if (r->why == HA_LIFE_SUBTICK)
        snprintf(out, outlen,
                 "%s%llu of its %llu samples lived under two ticks of "
                 "jemalloc's default profiling clock (%.0f ms each), too "
                 "short to place another allocation or free in; start the "
                 "process with prof_time_resolution:high",
                 range, (unsigned long long)r->subtick,
                 (unsigned long long)r->samples, (double)l->tick_ns / 1e6);
    else
        snprintf(out, outlen,
                 "%stoo few samples (%llu): had each object outlived one "
                 "other allocation or free, about %.1f would have shown it; "
                 "lower lg_prof_sample or widen the window",
                 range, (unsigned long long)r->samples, r->sightings);
}
