/* SPDX-License-Identifier: MIT
 *
 * Estimates for fragmentation by call site (see fragment.h, rules 3 and
 * 4): what the exact rules left of each stack placed by its mean where
 * that class has room, by a proportional fit over the classes of its
 * recorded sizes, or, with none recorded, over the nearest classes
 * around its mean that have room; never more than a class holds. Pure.
 */
#include "prof/fragment_int.h"

#include <math.h>
#include <stdlib.h>

#define FIT_ITER_MAX 200   /* proportional-fit rounds */
#define FIT_TOL 1e-6       /* ... until no class factor moves more */

/* ------------------------------------------------------------------
 * The mean rule and the proportional fit
 * ------------------------------------------------------------------ */

/* Slab regions per object of usable size usize: the share not sampled,
 * exp(-usize/period) (sampled objects sit on pages of their own); 1
 * without sampling figures (period 0). */
static double
region_factor(uint64_t period, uint64_t usize)
{
    return period == 0 ? 1 : exp(-(double)usize / (double)period);
}

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
            if (ha_fragment_add(wk, pds[i]->name, pds[i]->module, k,
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
int
ha_fragment_estimate(struct work *wk, struct pend *pend, size_t n_pend)
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
            if (ha_fragment_add(wk, list[i]->name, list[i]->module, k,
                                list[i]->objs * rf, 0, HA_FRAG_MEAN,
                                0) != 0)
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
