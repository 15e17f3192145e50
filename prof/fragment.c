/* SPDX-License-Identifier: MIT
 *
 * Fragmentation laid at call sites' doors (see fragment.h): each stack's
 * samples placed in their own classes, exactly where their sizes are
 * known, by estimate within the classes' capacity where not. Pure.
 */
#include "prof/fragment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"

#define MEAN_TOL 0.02      /* a mean this close to a class's size is it */
#define SIGMAS 3.0         /* beyond this many standard errors: not noise */
#define FIT_ITER_MAX 200   /* proportional-fit rounds */
#define FIT_TOL 1e-6       /* ... until no class factor moves more */
#define JE_CNT_SHIFT 8     /* 1 << SC_LG_TINY_MIN (jemalloc's sc.h) */

/* ------------------------------------------------------------------
 * Per-class figures
 * ------------------------------------------------------------------ */

double
ha_frag_utilization(const struct ha_dumpmem_bin *b)
{
    if (b->curslabs == 0 || b->nregs == 0)
        return -1;
    return (double)b->curregs / ((double)b->curslabs * (double)b->nregs);
}

uint64_t
ha_frag_class_free(const struct ha_dumpmem_bin *b)
{
    uint64_t total = b->curslabs * b->slab_size;
    uint64_t used = b->curregs * b->size;

    return total > used ? total - used : 0;
}

double
ha_frag_weight(uint64_t period, uint64_t usize)
{
    double w;

    if (period == 0 || usize == 0)
        return 1;
    w = 1.0 / (1.0 - exp(-(double)usize / (double)period));
    return isfinite(w) ? w : 1;
}

/* Slab regions per object of usable size usize: the share not sampled,
 * exp(-usize/period) (sampled objects sit on pages of their own); 1
 * without sampling figures (period 0). */
static double
region_factor(uint64_t period, uint64_t usize)
{
    return period == 0 ? 1 : exp(-(double)usize / (double)period);
}

double
ha_frag_expected_samples(uint64_t period, const struct ha_dumpmem_bin *b)
{
    double w = ha_frag_weight(period, b->size);

    if (period == 0)
        return -1;
    return w > 1 ? (double)b->curregs / (w - 1) : HUGE_VAL;
}

double
ha_frag_sigma(uint64_t period, const struct ha_dumpmem_bin *b)
{
    double w = ha_frag_weight(period, b->size);

    return period == 0 ? 0 : sqrt((double)b->curregs * (w - 1));
}

void
ha_frag_unbiased_counts(uint64_t period, const uint64_t *usize,
                        const uint64_t *count, size_t n, uint64_t *objs,
                        uint64_t *bytes)
{
    uint64_t c = 0, s = 0;
    double c_out, s_out, x, y;

    *objs = *bytes = 0;
    if (period == 0) {
        for (size_t i = 0; i < n; i++) {
            *objs += count[i];
            *bytes += count[i] * usize[i];
        }
        return;
    }
    /* prof_unbias_map_init's tables, summed as prof_tctx counts them */
    for (size_t i = 0; i < n; i++) {
        double w = ha_frag_weight(period, usize[i]);

        c += count[i] * (uint64_t)llround(JE_CNT_SHIFT * w);
        s += count[i] * (uint64_t)llround((double)usize[i] * w);
    }
    if (c == 0 || s == 0)
        return;
    /* prof_do_unbias */
    c_out = (double)c / JE_CNT_SHIFT;
    s_out = (double)s;
    x = s_out / c_out;
    y = s_out * (1.0 - exp(-x / (double)period));
    *objs = (uint64_t)llround(y / x);
    *bytes = (uint64_t)llround(y);
}

/* The class of usable size usize: the first whose size holds it; -1
 * above every small class. */
static long
class_of(const struct ha_dumpmem_bin *bins, size_t n_bins, uint64_t usize)
{
    for (size_t k = 0; k < n_bins; k++)
        if (bins[k].size >= usize)
            return (long)k;
    return -1;
}

/* ------------------------------------------------------------------
 * Rows
 * ------------------------------------------------------------------ */

/* Row lookup by (name, bin). */
struct index {
    uint64_t *keys;   /* (name << 8 | bin) + 1; 0 empty */
    uint32_t *vals;   /* row */
    size_t cap;       /* power of two */
    size_t n;
};

static uint64_t
mix(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    return k;
}

static int
index_grow(struct index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 1024;
    uint64_t *keys = calloc(cap, sizeof(*keys));
    uint32_t *vals = calloc(cap, sizeof(*vals));

    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < ix->cap; i++) {
        size_t j;

        if (ix->keys[i] == 0)
            continue;
        for (j = mix(ix->keys[i]) & (cap - 1); keys[j] != 0;
             j = (j + 1) & (cap - 1))
            ;
        keys[j] = ix->keys[i];
        vals[j] = ix->vals[i];
    }
    free(ix->keys);
    free(ix->vals);
    ix->keys = keys;
    ix->vals = vals;
    ix->cap = cap;
    return 0;
}

/* The row of (name, bin), created when new. Returns its index or -1. */
static long
row_for(struct ha_frag *f, struct index *ix, size_t *cap, uint32_t name,
        uint32_t module, size_t bin)
{
    uint64_t key = (((uint64_t)name << 8) | bin) + 1;
    size_t j;

    if ((ix->n + 1) * 2 > ix->cap && index_grow(ix) != 0)
        return -1;
    for (j = mix(key) & (ix->cap - 1); ix->keys[j] != 0;
         j = (j + 1) & (ix->cap - 1))
        if (ix->keys[j] == key)
            return ix->vals[j];
    if (f->n_rows == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct ha_frag_row *r = realloc(f->rows, ncap * sizeof(*r));

        if (r == NULL)
            return -1;
        f->rows = r;
        *cap = ncap;
    }
    memset(&f->rows[f->n_rows], 0, sizeof(f->rows[0]));
    f->rows[f->n_rows].name = name;
    f->rows[f->n_rows].module = module;
    f->rows[f->n_rows].bin = bin;
    ix->keys[j] = key;
    ix->vals[j] = (uint32_t)f->n_rows;
    ix->n++;
    return (long)f->n_rows++;
}

static int
by_free_desc(const void *a, const void *b)
{
    const struct ha_frag_row *x = a, *y = b;

    if (x->free_bytes != y->free_bytes)
        return x->free_bytes > y->free_bytes ? -1 : 1;
    if (x->bin != y->bin)
        return x->bin < y->bin ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

/* Everything one computation holds. */
struct work {
    const struct ha_frag_in *in;
    struct ha_frag *f;
    struct index ix;
    size_t cap;                          /* rows allocated */
    double claimed[HA_DUMPMEM_BINS_MAX]; /* regions placed so far */
};

/* Adds regions (exact of them exactly) of a site to row (name, module,
 * bin) with how. */
static int
add(struct work *wk, uint32_t name, uint32_t module, size_t bin,
    double regions, double exact, unsigned how, double mean)
{
    long r = row_for(wk->f, &wk->ix, &wk->cap, name, module, bin);

    if (r < 0)
        return -1;
    wk->f->rows[r].live_regions += regions;
    wk->f->rows[r].exact_regions += exact;
    wk->f->rows[r].how |= how;
    if ((how & HA_FRAG_FITTED) && mean > wk->f->rows[r].fit_mean)
        wk->f->rows[r].fit_mean = mean;
    wk->claimed[bin] += regions;
    return 0;
}

/* ------------------------------------------------------------------
 * Estimates: the mean rule and the proportional fit
 * ------------------------------------------------------------------ */

/* A stack's objects (or the part its recorded sizes leave) to place by
 * estimate. */
struct pend {
    uint32_t name, module;
    double objs, bytes;   /* objects they stand for, and their bytes */
    double *seed;         /* per bin: the recorded samples' objects;
                             NULL: none (the classes' room instead) */
    long mean_bin;        /* the class its mean is; -1: none */
    bool fit;             /* left to the fit */
};

/* The weighted mean of t under weights v * exp(beta * t) (and its
 * variance into *var), shifted so that nothing overflows. */
static double
tilt_mean(const double *v, const double *t, size_t K, double beta,
          double *var)
{
    double a = -HUGE_VAL, s0 = 0, s1 = 0, s2 = 0, m;

    for (size_t k = 0; k < K; k++)
        if (v[k] > 0 && beta * t[k] > a)
            a = beta * t[k];
    for (size_t k = 0; k < K; k++) {
        double e;

        if (v[k] <= 0)
            continue;
        e = v[k] * exp(beta * t[k] - a);
        s0 += e;
        s1 += e * t[k];
        s2 += e * t[k] * t[k];
    }
    m = s1 / s0;
    if (var != NULL)
        *var = s2 / s0 - m * m;
    return m;
}

/* Spreads pd's objects over the classes: weights v_k (its seed, or the
 * classes' room, times the fit's class factors g), tilted by
 * exp(beta * (z_k / mean - 1)) with beta solved so that the bytes hold
 * (the maximum-entropy spread with the stack's count and mean). *beta is
 * the last solution, a warm start. x[0 .. K) gets objects per class. */
static void
spread(const struct pend *pd, const double *z, const double *room,
       const double *g, size_t K, double *beta, double *x)
{
    double v[HA_DUMPMEM_BINS_MAX], t[HA_DUMPMEM_BINS_MAX];
    double m = pd->bytes / pd->objs, tmin = HUGE_VAL, tmax = -HUGE_VAL;
    double lo, hi, b = *beta, mt, var, step, s0 = 0, a = -HUGE_VAL;
    size_t kmin = 0, kmax = 0;

    for (size_t k = 0; k < K; k++) {
        x[k] = 0;
        v[k] = (pd->seed != NULL ? pd->seed[k] : room[k]) * g[k];
        t[k] = z[k] / m - 1;
        if (v[k] <= 0)
            continue;
        if (t[k] < tmin) {
            tmin = t[k];
            kmin = k;
        }
        if (t[k] > tmax) {
            tmax = t[k];
            kmax = k;
        }
    }
    if (tmin == HUGE_VAL)
        return; /* nowhere to go */
    /* the mean lies outside what the classes can give: its nearest */
    if (tmin >= -1e-12 || tmax <= 1e-12) {
        x[tmin >= -1e-12 ? kmin : kmax] = pd->objs;
        return;
    }
    /* bracket the root of the tilted mean of t, from the warm start */
    mt = tilt_mean(v, t, K, b, &var);
    lo = hi = b;
    for (step = 1; step < 1e9; step *= 2) {
        if (mt > 0) {
            hi = lo;
            lo = b - step;
            if (tilt_mean(v, t, K, lo, NULL) <= 0)
                break;
        } else {
            lo = hi;
            hi = b + step;
            if (tilt_mean(v, t, K, hi, NULL) >= 0)
                break;
        }
    }
    /* Newton within the bracket, bisection when it steps out */
    for (int it = 0; it < 100; it++) {
        double nb;

        mt = tilt_mean(v, t, K, b, &var);
        if (fabs(mt) < 1e-10 * (tmax - tmin) || hi - lo < 1e-14)
            break;
        if (mt > 0)
            hi = b;
        else
            lo = b;
        nb = var > 0 ? b - mt / var : (lo + hi) / 2;
        b = nb > lo && nb < hi ? nb : (lo + hi) / 2;
    }
    *beta = b;
    for (size_t k = 0; k < K; k++)
        if (v[k] > 0 && b * t[k] > a)
            a = b * t[k];
    for (size_t k = 0; k < K; k++)
        if (v[k] > 0)
            s0 += (x[k] = v[k] * exp(b * t[k] - a));
    for (size_t k = 0; k < K; k++)
        x[k] = x[k] / s0 * pd->objs;
}

/* The proportional fit: pds[0 .. n) spread over K classes of sizes z
 * with room[k] objects each, class factors scaled until no class holds
 * more than its room; then any excess cut. x[i * K + k]: objects. */
static int
fit(struct pend *const *pds, size_t n, const double *z, const double *room,
    size_t K, double *x)
{
    double g[HA_DUMPMEM_BINS_MAX];
    double *beta = calloc(n ? n : 1, sizeof(*beta));

    if (beta == NULL)
        return -1;
    for (size_t k = 0; k < K; k++)
        g[k] = room[k] > 0 ? 1 : 0;
    for (int it = 0; it < FIT_ITER_MAX; it++) {
        double moved = 0;

        for (size_t i = 0; i < n; i++)
            spread(pds[i], z, room, g, K, &beta[i], x + i * K);
        for (size_t k = 0; k < K; k++) {
            double tot = 0, ng = g[k];

            if (room[k] <= 0)
                continue;
            for (size_t i = 0; i < n; i++)
                tot += x[i * K + k];
            if (tot > room[k])
                ng = g[k] * room[k] / tot;
            else if (g[k] < 1 && tot > 0)
                ng = fmin(1, g[k] * room[k] / tot);
            if (g[k] > 0 && fabs(ng - g[k]) / g[k] > moved)
                moved = fabs(ng - g[k]) / g[k];
            g[k] = ng;
        }
        if (moved < FIT_TOL)
            break;
    }
    for (size_t i = 0; i < n; i++)
        spread(pds[i], z, room, g, K, &beta[i], x + i * K);
    for (size_t k = 0; k < K; k++) {
        double tot = 0;

        for (size_t i = 0; i < n; i++)
            tot += x[i * K + k];
        if (tot > room[k])
            for (size_t i = 0; i < n; i++)
                x[i * K + k] *= room[k] > 0 ? room[k] / tot : 0;
    }
    free(beta);
    return 0;
}

/* Places objs objects of bytes bytes over the classes (sizes z, room[k]
 * objects left in each) with the least spread that keeps both: the two
 * nearest classes around the mean that have room, split so the bytes
 * hold; where one of them has too little, it is filled and the rest goes
 * round again with its own mean, so that as many classes are taken as
 * it takes and never more than one holds. Where no class on one side of
 * the mean has room, the count is kept, nearest first. x[k] gets objects
 * per class. (The least-variance placement: fill a contiguous run of
 * classes around the mean; the two-class split is the rule a lone mean
 * gave before, which held whenever the classes had room.) */
static void
window(double objs, double bytes, const double *z, const double *room,
       size_t K, double *x)
{
    double o = objs, b = bytes;

    for (size_t k = 0; k < K; k++)
        x[k] = 0;
    for (size_t it = 0; it < 2 * K + 2 && o > 1e-9; it++) {
        double m = b > 0 ? b / o : 0, take;
        long lo = -1, hi = -1, k;

        for (size_t j = 0; j < K; j++) {
            if (room[j] - x[j] <= 1e-9)
                continue;
            if (z[j] <= m)
                lo = (long)j;
            else if (hi < 0)
                hi = (long)j;
        }
        if (lo >= 0 && hi >= 0) {
            double left_lo = room[lo] - x[lo], left_hi = room[hi] - x[hi];
            double xl = o * (z[hi] - m) / (z[hi] - z[lo]), xh = o - xl;

            if (xl <= left_lo && xh <= left_hi) {
                x[lo] += xl;
                x[hi] += xh;
                return;
            }
            if (xl > left_lo) {
                x[lo] += left_lo;
                o -= left_lo;
                b -= left_lo * z[lo];
            }
            if (xh > left_hi) {
                x[hi] += left_hi;
                o -= left_hi;
                b -= left_hi * z[hi];
            }
            continue;
        }
        if ((k = lo >= 0 ? lo : hi) < 0)
            return; /* no room anywhere: the rest stays unplaced */
        take = fmin(o, room[k] - x[k]);
        x[k] += take;
        o -= take;
        b -= take * z[k];
    }
}

/* Adds the placements x (objects, K per stack) of pds[0 .. n) as rows
 * and takes them off room. */
static int
land(struct work *wk, struct pend *const *pds, size_t n, const double *x,
     double *room)
{
    const struct ha_dumpmem_bin *bins = wk->in->bins;
    size_t K = wk->in->n_bins;
    uint64_t period = wk->in->p->period;

    for (size_t i = 0; i < n; i++) {
        double mean = pds[i]->bytes / pds[i]->objs;

        for (size_t k = 0; k < K; k++) {
            double o = x[i * K + k];

            if (o <= 0)
                continue;
            room[k] = room[k] > o ? room[k] - o : 0;
            if (add(wk, pds[i]->name, pds[i]->module, k,
                    o * region_factor(period, bins[k].size), 0,
                    HA_FRAG_FITTED, mean) != 0)
                return -1;
        }
    }
    return 0;
}

static int
by_regions_desc(const void *a, const void *b)
{
    const struct pend *const *x = a, *const *y = b;

    if ((*x)->objs != (*y)->objs)
        return (*x)->objs > (*y)->objs ? -1 : 1;
    return 0;
}

/* Places what the exact rules left: the mean rule where its class has
 * room, the fit for the rest. */
static int
estimate(struct work *wk, struct pend *pend, size_t n_pend)
{
    const struct ha_dumpmem_bin *bins = wk->in->bins;
    size_t K = wk->in->n_bins;
    uint64_t period = wk->in->p->period;
    double z[HA_DUMPMEM_BINS_MAX], room[HA_DUMPMEM_BINS_MAX];
    struct pend **list = calloc(n_pend ? n_pend : 1, sizeof(*list));
    double *x = NULL;
    size_t n_fit = 0;
    int ret = -1;

    if (list == NULL)
        return -1;
    for (size_t k = 0; k < K; k++)
        z[k] = (double)bins[k].size;
    /* the mean rule, class by class: the largest candidates leave for
     * the fit while the class would hold more than its regions */
    for (size_t k = 0; k < K; k++) {
        double rf = region_factor(period, bins[k].size), total;
        double limit = (double)bins[k].curregs +
                       SIGMAS * ha_frag_sigma(period, &bins[k]);
        size_t n = 0, first = 0;

        for (size_t i = 0; i < n_pend; i++)
            if (!pend[i].fit && pend[i].mean_bin == (long)k)
                list[n++] = &pend[i];
        if (n == 0)
            continue;
        qsort(list, n, sizeof(*list), by_regions_desc);
        total = wk->claimed[k];
        for (size_t i = 0; i < n; i++)
            total += list[i]->objs * rf;
        while (first < n && total > limit) {
            list[first]->fit = true;
            total -= list[first]->objs * rf;
            first++;
        }
        for (size_t i = first; i < n; i++)
            if (add(wk, list[i]->name, list[i]->module, k,
                    list[i]->objs * rf, 0, HA_FRAG_MEAN, 0) != 0)
                goto out;
    }
    /* what the classes have left, in objects */
    for (size_t k = 0; k < K; k++) {
        double rf = region_factor(period, bins[k].size);
        double left = (double)bins[k].curregs - wk->claimed[k];

        room[k] = left > 0 && rf > 0 ? left / rf : 0;
    }
    /* the stacks some of whose sizes were recorded: the proportional
     * fit over those sizes' classes */
    for (size_t i = 0; i < n_pend; i++)
        if (pend[i].fit && pend[i].seed != NULL)
            list[n_fit++] = &pend[i];
    if (n_fit > 0) {
        if ((x = calloc(n_fit * K, sizeof(*x))) == NULL ||
            fit(list, n_fit, z, room, K, x) != 0 ||
            land(wk, list, n_fit, x, room) != 0)
            goto out;
    }
    /* the others, largest first: the nearest classes around the mean
     * that have room */
    n_fit = 0;
    for (size_t i = 0; i < n_pend; i++)
        if (pend[i].fit && pend[i].seed == NULL)
            list[n_fit++] = &pend[i];
    qsort(list, n_fit, sizeof(*list), by_regions_desc);
    free(x);
    if ((x = calloc(K, sizeof(*x))) == NULL)
        goto out;
    for (size_t i = 0; i < n_fit; i++) {
        window(list[i]->objs, list[i]->bytes, z, room, K, x);
        if (land(wk, &list[i], 1, x, room) != 0)
            goto out;
    }
    ret = 0;
out:
    free(x);
    free(list);
    return ret;
}

/* ------------------------------------------------------------------
 * The computation
 * ------------------------------------------------------------------ */

/* Grows the scratch arrays for n recorded sizes. */
static int
scratch(uint64_t **u, uint64_t **c, size_t *cap, size_t n)
{
    uint64_t *nu, *nc;

    if (n <= *cap)
        return 0;
    nu = realloc(*u, n * sizeof(*nu));
    if (nu == NULL)
        return -1;
    *u = nu;
    nc = realloc(*c, n * sizeof(*nc));
    if (nc == NULL)
        return -1;
    *c = nc;
    *cap = n;
    return 0;
}

/* Classifies a pending part: large (dropped: false), the mean rule's
 * candidate, or the fit's. */
static bool
classify(const struct ha_frag_in *in, struct pend *pd)
{
    const struct ha_dumpmem_bin *bins = in->bins;
    size_t K = in->n_bins;
    double m, zmin = HUGE_VAL, zmax = 0;

    if (pd->objs <= 0 || pd->bytes <= 0)
        return false;
    m = pd->bytes / pd->objs;
    if (m > (double)bins[K - 1].size * (1 + MEAN_TOL))
        return false; /* large objects */
    pd->mean_bin = -1;
    for (size_t k = 0; k < K; k++)
        if (fabs(m - (double)bins[k].size) <= MEAN_TOL * (double)bins[k].size)
            pd->mean_bin = (long)k;
    pd->fit = pd->mean_bin < 0;
    /* a seed that cannot give the mean is no shape for it */
    if (pd->seed != NULL) {
        for (size_t k = 0; k < K; k++)
            if (pd->seed[k] > 0) {
                zmin = fmin(zmin, (double)bins[k].size);
                zmax = fmax(zmax, (double)bins[k].size);
            }
        if (m < zmin * (1 - MEAN_TOL) || m > zmax * (1 + MEAN_TOL)) {
            free(pd->seed);
            pd->seed = NULL;
        }
    }
    return true;
}

/* A stack's name and module rows are keyed by. */
static int
name_stack(struct ha_agg_walker *w, const struct ha_frag_in *in,
           struct ha_frag *out, size_t i, struct ha_buf *name,
           struct ha_buf *line, uint32_t *n_off, uint32_t *m_off)
{
    const char *module;
    int rc = ha_agg_walker_site(w, in->p, i, name); /* heap_top's rule */

    if (rc < 0)
        return -1;
    if (rc > 0)
        ha_buf_append_str(name, "(allocator)");
    module = ha_agg_walker_site_module(w);
    if (in->stacks) {
        if (ha_agg_walker_collapsed(w, in->p, i, line) != 0)
            return -1;
        *n_off = ha_strtab_intern(&out->names, (const char *)line->data,
                                  line->len);
    } else {
        *n_off = ha_strtab_intern(&out->names, (const char *)name->data,
                                  name->len);
    }
    *m_off = module != NULL
                 ? ha_strtab_intern(&out->names, module, strlen(module))
                 : 0;
    if (*n_off == UINT32_MAX || *m_off == UINT32_MAX)
        return -1;
    if (*n_off == 0) /* an empty stack: name it as heap_top would */
        *n_off = ha_strtab_intern(&out->names, "(allocator)", 11);
    return *n_off == UINT32_MAX ? -1 : 0;
}

static bool
near(uint64_t a, uint64_t b)
{
    return a + 1 >= b && b + 1 >= a;
}

/* One stack: its recorded samples placed exactly, a single sample by its
 * size, the rest into *pd (pd->objs 0: nothing left). */
static int
place_stack(struct work *wk, size_t i, uint32_t name, uint32_t module,
            uint64_t **u, uint64_t **c, size_t *ucap, struct pend *pd)
{
    const struct ha_frag_in *in = wk->in;
    const struct ha_heapv2_stack *st = &in->p->stacks[i];
    uint64_t period = in->p->period;
    size_t K = in->n_bins, first = 0, n = 0;
    uint64_t jo, jb, po = 0, pb = 0;
    double o_rec = 0, b_rec = 0, scale = 1;
    bool complete, exceeds;
    unsigned how = HA_FRAG_RECORDED;

    memset(pd, 0, sizeof(*pd));
    pd->name = name;
    pd->module = module;
    pd->mean_bin = -1;
    if (in->sizes != NULL && in->sizes->state == HA_LIVESIZES_RECENT)
        n = ha_livesizes_find(in->sizes,
                              ha_livesizes_hash(
                                  ha_heapv2_stack_frames(in->p, i),
                                  st->n_frames),
                              &first);
    if (n == 0 && st->raw.objs == 1) {
        /* one sample: its byte count is its usable size */
        long k = class_of(in->bins, K, st->raw.bytes);

        wk->f->stacks_exact++;
        if (k < 0)
            return 0;
        return add(wk, name, module, (size_t)k,
                   period == 0 ? 1 : ha_frag_weight(period, st->raw.bytes) - 1,
                   period == 0 ? 1 : ha_frag_weight(period, st->raw.bytes) - 1,
                   HA_FRAG_ONE, 0);
    }
    if (n == 0) {
        pd->objs = st->objs;
        pd->bytes = st->bytes;
        wk->f->stacks_estimated++;
        return 0;
    }
    if (scratch(u, c, ucap, n) != 0)
        return -1;
    for (size_t j = 0; j < n; j++) {
        const struct ha_livesizes_ent *e = &in->sizes->ents[first + j];
        double w = ha_frag_weight(period, e->usize);

        (*u)[j] = e->usize;
        (*c)[j] = e->count;
        po += e->count;
        pb += e->count * e->usize;
        o_rec += (double)e->count * w;
        b_rec += (double)e->count * (double)e->usize * w;
    }
    /* Do they account for the dump's figures, as jemalloc computes them
     * (prof_unbias), or as plain counts (without it)? */
    ha_frag_unbiased_counts(period, *u, *c, n, &jo, &jb);
    complete = (near(jo, st->raw.objs) && near(jb, st->raw.bytes)) ||
               (po == st->raw.objs && pb == st->raw.bytes);
    exceeds = !complete && (jo > st->raw.objs + 1 || jb > st->raw.bytes + 1);
    if (exceeds) {
        /* read at another moment than the dump: their shape, its count */
        scale = o_rec > 0 && st->objs < o_rec ? st->objs / o_rec : 1;
        how = HA_FRAG_RESCALED;
    }
    for (size_t j = 0; j < n; j++) {
        long k = class_of(in->bins, K, (*u)[j]);
        double rg;

        if (k < 0)
            continue;
        rg = (double)(*c)[j] *
             (period == 0 ? 1 : ha_frag_weight(period, (*u)[j]) - 1) * scale;
        if (add(wk, name, module, (size_t)k, rg, exceeds ? 0 : rg, how,
                0) != 0)
            return -1;
    }
    if (complete) {
        wk->f->stacks_exact++;
        return 0;
    }
    wk->f->stacks_estimated++;
    if (exceeds || st->objs - o_rec < 0.5 || st->bytes - b_rec <= 0)
        return 0;
    /* the samples not recorded: what the dump has beyond them, shaped
     * like the recorded ones */
    pd->objs = st->objs - o_rec;
    pd->bytes = st->bytes - b_rec;
    if ((pd->seed = calloc(K, sizeof(*pd->seed))) == NULL)
        return -1;
    for (size_t j = 0; j < n; j++) {
        long k = class_of(in->bins, K, (*u)[j]);

        if (k >= 0)
            pd->seed[k] += (double)(*c)[j] * ha_frag_weight(period, (*u)[j]);
    }
    return 0;
}

/* Per class: estimates over its curregs scaled down to them, regions the
 * samples do not account for given a row of their own, then each row's
 * share of the free bytes. */
static int
settle(struct work *wk)
{
    struct ha_frag *f = wk->f;
    const struct ha_dumpmem_bin *bins = wk->in->bins;
    uint64_t period = wk->in->p->period;
    size_t K = wk->in->n_bins, n_site_rows = f->n_rows;
    double denom[HA_DUMPMEM_BINS_MAX] = {0};

    for (size_t k = 0; k < K; k++) {
        double have = wk->claimed[k], curregs = (double)bins[k].curregs;

        if (have > curregs && have > 0) {
            double s = curregs / have;

            for (size_t r = 0; r < n_site_rows; r++)
                if (f->rows[r].bin == k) {
                    f->rows[r].live_regions *= s;
                    f->rows[r].exact_regions *= s;
                    f->rows[r].how |= HA_FRAG_CAPPED;
                }
            have = curregs;
        }
        f->class_regions[k] = have;
        denom[k] = have;
        if (have <= 0 && f->class_free[k] > 0) {
            long r = row_for(f, &wk->ix, &wk->cap, 0, 0, k);

            if (r < 0)
                return -1;
            f->rows[r].rest = HA_FRAG_NONE_LIVE;
            f->rows[r].live_regions = curregs;
            denom[k] = curregs;
        } else if (have > 0 && curregs - have >= 1 &&
                   curregs - have >
                       SIGMAS * ha_frag_sigma(period, &bins[k])) {
            long r = row_for(f, &wk->ix, &wk->cap, 0, 0, k);

            if (r < 0)
                return -1;
            f->rows[r].rest = HA_FRAG_UNACCOUNTED;
            f->rows[r].live_regions = curregs - have;
            denom[k] = curregs;
        }
    }
    for (size_t r = 0; r < f->n_rows; r++) {
        struct ha_frag_row *row = &f->rows[r];

        if (denom[row->bin] > 0)
            row->free_bytes =
                f->class_free[row->bin] * row->live_regions /
                denom[row->bin];
        else if (row->name == 0)
            row->free_bytes = f->class_free[row->bin];
    }
    return 0;
}

int
ha_frag_compute(const struct ha_frag_in *in, struct ha_frag *out,
                char *err, size_t errlen)
{
    struct work wk = {.in = in, .f = out};
    struct ha_agg_walker *w = NULL;
    struct ha_buf line = {0}, name = {0};
    struct pend *pend = NULL;
    uint64_t *u = NULL, *c = NULL;
    size_t ucap = 0, n_pend = 0;
    int ret = -1;

    memset(out, 0, sizeof(*out));
    out->bins = in->bins;
    out->n_bins = in->n_bins;
    out->period = in->p->period;
    out->sampling_since = in->sampling_since;
    out->sizes = in->sizes != NULL ? in->sizes->state : HA_LIVESIZES_NONE;
    if (in->sizes != NULL)
        ha_strlcpy(out->sizes_why, in->sizes->why, sizeof(out->sizes_why));
    if (in->n_bins == 0 || in->n_bins > HA_DUMPMEM_BINS_MAX) {
        ha_err_set(err, errlen, "no size classes to share out");
        return -1;
    }
    for (size_t k = 0; k < in->n_bins; k++) {
        out->class_free[k] = (double)ha_frag_class_free(&in->bins[k]);
        out->total_free += out->class_free[k];
    }
    if ((w = ha_agg_walker_new(in->syms)) == NULL ||
        (pend = calloc(in->p->n_stacks ? in->p->n_stacks : 1,
                       sizeof(*pend))) == NULL)
        goto oom;
    for (size_t i = 0; i < in->p->n_stacks; i++) {
        const struct ha_heapv2_stack *st = &in->p->stacks[i];
        uint32_t n_off, m_off;

        if (st->raw.objs == 0 || st->raw.bytes == 0)
            continue;
        if (name_stack(w, in, out, i, &name, &line, &n_off, &m_off) != 0 ||
            place_stack(&wk, i, n_off, m_off, &u, &c, &ucap,
                        &pend[n_pend]) != 0)
            goto oom;
        if (classify(in, &pend[n_pend]))
            n_pend++;
        else
            free(pend[n_pend].seed);
    }
    if (estimate(&wk, pend, n_pend) != 0 || settle(&wk) != 0)
        goto oom;
    if (out->n_rows > 1)
        qsort(out->rows, out->n_rows, sizeof(out->rows[0]), by_free_desc);
    ret = 0;
    goto done;
oom:
    ha_err_set(err, errlen, "out of memory sharing out the free regions");
    ha_frag_free(out);
done:
    for (size_t i = 0; pend != NULL && i < n_pend; i++)
        free(pend[i].seed);
    free(pend);
    free(u);
    free(c);
    ha_buf_free(&line);
    ha_buf_free(&name);
    free(wk.ix.keys);
    free(wk.ix.vals);
    ha_agg_walker_free(w);
    return ret;
}

/* ------------------------------------------------------------------
 * Notes
 * ------------------------------------------------------------------ */

/* Why sampled objects that were to be expected are not there. */
static void
rest_reason(const struct ha_frag *f, char *buf, size_t len, size_t *at)
{
    char when[32];

    if (f->sampling_since > 0) {
        ha_utc_stamp(when, sizeof(when), f->sampling_since / 1000000000,
                     ' ');
        (void)ha_appendf(buf, len, at,
                         "they were allocated before sampling last started "
                         "(%s UTC: prof.active switched on, or prof.reset), "
                         "which the profile cannot see",
                         when);
    } else if (f->sampling_since == -1) {
        (void)ha_appendf(buf, len, at,
                         "sampling has been on since the process started "
                         "(opt.prof_active), so they are regions thread "
                         "caches hold or objects of threads that do not "
                         "sample (thread.prof.active false)");
    } else {
        (void)ha_appendf(buf, len, at,
                         "objects allocated while sampling was off (when it "
                         "started is unknown: not switched by heapadmin), "
                         "regions thread caches hold, or objects of threads "
                         "that do not sample");
    }
}

void
ha_frag_note(const struct ha_frag *f, const struct ha_frag_row *r,
             char *out, size_t len)
{
    const struct ha_dumpmem_bin *b = &f->bins[r->bin];
    double wm1 = ha_frag_weight(f->period, b->size) - 1;
    size_t at = 0;
    bool est;

    out[0] = '\0';
    if (r->rest == HA_FRAG_NONE_LIVE) {
        double e = ha_frag_expected_samples(f->period, b);

        if (b->curregs == 0) {
            (void)ha_appendf(out, len, &at,
                             "no region of this class is in use: its slabs "
                             "hold only free regions");
        } else if (f->period == 0) {
            (void)ha_appendf(out, len, &at,
                             "no sampled object of this class is live");
        } else if (e < SIGMAS) {
            (void)ha_appendf(out, len, &at,
                             "no sampled object of this class is live: its "
                             "%llu regions in use would hold %.1f sampled "
                             "objects on average (one sample per %llu "
                             "bytes allocated), too few to expect one",
                             (unsigned long long)b->curregs, e,
                             (unsigned long long)f->period);
        } else {
            (void)ha_appendf(out, len, &at,
                             "no sampled object of this class is live, "
                             "though its %llu regions in use would hold "
                             "%.0f on average (one sample per %llu bytes "
                             "allocated): ",
                             (unsigned long long)b->curregs, e,
                             (unsigned long long)f->period);
            rest_reason(f, out, len, &at);
        }
        return;
    }
    if (r->rest == HA_FRAG_UNACCOUNTED) {
        (void)ha_appendf(out, len, &at,
                         "%.0f of the class's %llu regions in use have no "
                         "live sampled object standing for them (about "
                         "%.0f samples' worth), more than sampling error "
                         "(3 sigma: %.0f regions): ",
                         r->live_regions, (unsigned long long)b->curregs,
                         wm1 > 0 ? r->live_regions / wm1 : 0,
                         SIGMAS * ha_frag_sigma(f->period, b));
        rest_reason(f, out, len, &at);
        return;
    }
    est = r->live_regions - r->exact_regions > 0.5 ||
          (r->how & (HA_FRAG_MEAN | HA_FRAG_FITTED | HA_FRAG_RESCALED));
    if (r->how & HA_FRAG_RESCALED)
        (void)ha_appendf(out, len, &at,
                         "%sestimated: its sizes were recorded at another "
                         "moment than the profile; their classes kept, "
                         "scaled to its count",
                         at ? "; " : "");
    if (r->how & HA_FRAG_MEAN)
        (void)ha_appendf(out, len, &at,
                         "%sestimated: a stack's mean size is this class's",
                         at ? "; " : "");
    if (r->how & HA_FRAG_FITTED)
        (void)ha_appendf(out, len, &at,
                         "%sestimated: a stack's objects span several "
                         "classes (mean %.0f bytes) and not all their sizes "
                         "were recorded: placed within what the classes "
                         "hold",
                         at ? "; " : "", r->fit_mean);
    if (est && f->sizes == HA_LIVESIZES_NONE)
        (void)ha_appendf(out, len, &at,
                         "%sno sizes were recorded with this profile (a "
                         ".mem from before they were)",
                         at ? "; " : "");
    else if (est && f->sizes == HA_LIVESIZES_OFF)
        (void)ha_appendf(out, len, &at,
                         "%sno sizes were recorded with this profile: %s",
                         at ? "; " : "",
                         f->sizes_why[0] ? f->sizes_why : "recording off");
    if (r->how & HA_FRAG_CAPPED)
        (void)ha_appendf(out, len, &at,
                         "%sthe class's estimates came to more than its "
                         "%llu regions in use (sampling error) and were "
                         "scaled down to them",
                         at ? "; " : "", (unsigned long long)b->curregs);
}

void
ha_frag_free(struct ha_frag *f)
{
    free(f->rows);
    ha_strtab_free(&f->names);
    f->rows = NULL;
    f->n_rows = 0;
}
