/* SPDX-License-Identifier: MIT
 *
 * Per-class figures of fragmentation by call site (see fragment.h): a
 * small size class's use and free bytes from its bin's statistics, the
 * weight of a sample of a given size, the samples a class's regions in
 * use would hold and their sampling error, and a stack's counts as
 * jemalloc unbiases them. Pure.
 */
#include "prof/fragment.h"

#include <math.h>

#define JE_CNT_SHIFT 8     /* 1 << SC_LG_TINY_MIN (jemalloc's sc.h) */

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
