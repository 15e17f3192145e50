/* SPDX-License-Identifier: MIT
 *
 * A delta profile (see delta.h).
 */
#include "prof/delta.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* A backtrace's frames hashed (FNV-1a over the addresses). */
static uint64_t
stack_hash(const struct ha_heapv2 *p, size_t s)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, s);
    uint64_t h = 1469598103934665603ULL;

    for (uint32_t i = 0; i < p->stacks[s].n_frames; i++) {
        h ^= f[i];
        h *= 1099511628211ULL;
    }
    return h;
}

struct keyed {
    uint64_t h;
    size_t s;
};

static int
cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;

    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return (x->s > y->s) - (x->s < y->s);
}

static bool
same_frames(const struct ha_heapv2 *a, size_t sa, const struct ha_heapv2 *b,
            size_t sb)
{
    uint32_t n = a->stacks[sa].n_frames;

    return n == b->stacks[sb].n_frames &&
           (n == 0 ||
            memcmp(ha_heapv2_stack_frames(a, sa), ha_heapv2_stack_frames(b, sb),
                   n * sizeof(uint64_t)) == 0);
}

/* The base backtrace with end's backtrace s's frames, or SIZE_MAX. */
static size_t
find_base(const struct keyed *idx, size_t n, const struct ha_heapv2 *base,
          const struct ha_heapv2 *end, size_t s, uint64_t h)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (idx[mid].h < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && idx[lo].h == h; lo++)
        if (same_frames(end, s, base, idx[lo].s))
            return idx[lo].s;
    return SIZE_MAX;
}

/* a - b, or 0 when b is the larger (a figure that may fall). */
static uint64_t
minus0(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* a - b into *d, or false when b is the larger (reset). */
static bool
minus(uint64_t a, uint64_t b, uint64_t *d)
{
    if (b > a)
        return false;
    *d = a - b;
    return true;
}

int
ha_heapv2_delta(const struct ha_heapv2 *end, const struct ha_heapv2 *base,
                struct ha_heapv2 *out, char *why, size_t whylen)
{
    struct keyed *idx = NULL;
    bool *seen = NULL;
    int ret = HA_DELTA_NOMEM;

    memset(out, 0, sizeof(*out));
    if (!ha_heapv2_has_accum(end) || !ha_heapv2_has_accum(base)) {
        ha_err_set(why, whylen,
                   "no cumulative counters (the process "
                   "runs without prof_accum)");
        return HA_DELTA_NOACCUM;
    }
    if (end->period != base->period) {
        ha_err_set(why, whylen,
                   "the sample period changed from %llu to "
                   "%llu bytes (prof.reset)",
                   (unsigned long long)base->period,
                   (unsigned long long)end->period);
        return HA_DELTA_RESET;
    }
    if (end->total.accum_objs < base->total.accum_objs) {
        ha_err_set(why, whylen,
                   "the cumulative total fell from %llu to "
                   "%llu samples (prof.reset)",
                   (unsigned long long)base->total.accum_objs,
                   (unsigned long long)end->total.accum_objs);
        return HA_DELTA_RESET;
    }
    idx = malloc((base->n_stacks ? base->n_stacks : 1) * sizeof(*idx));
    seen = calloc(base->n_stacks ? base->n_stacks : 1, sizeof(*seen));
    out->stacks =
        malloc((end->n_stacks ? end->n_stacks : 1) * sizeof(*out->stacks));
    out->frames =
        malloc((end->n_frames ? end->n_frames : 1) * sizeof(*out->frames));
    out->threads =
        malloc((end->n_threads ? end->n_threads : 1) * sizeof(*out->threads));
    out->names = malloc(end->names_len ? end->names_len : 1);
    out->tlines =
        malloc((end->n_tlines ? end->n_tlines : 1) * sizeof(*out->tlines));
    out->maps = calloc(1, 1);
    if (idx == NULL || seen == NULL || out->stacks == NULL ||
        out->frames == NULL || out->threads == NULL || out->names == NULL ||
        out->tlines == NULL || out->maps == NULL)
        goto fail;
    for (size_t s = 0; s < base->n_stacks; s++) {
        idx[s].h = stack_hash(base, s);
        idx[s].s = s;
    }
    qsort(idx, base->n_stacks, sizeof(*idx), cmp_keyed);

    out->period = end->period;
    out->total = end->total;
    out->total.accum_objs -= base->total.accum_objs;
    out->total.accum_bytes =
        minus0(end->total.accum_bytes, base->total.accum_bytes);
    out->n_threads = end->n_threads;
    if (end->n_threads > 0)
        memcpy(out->threads, end->threads,
               end->n_threads * sizeof(*end->threads));
    /* A header thread's cumulative counts less the base's of its uid. */
    for (uint32_t i = 0; i < out->n_threads; i++) {
        const struct ha_heapv2_thread *b =
            ha_heapv2_thread_of(base, out->threads[i].uid);
        struct ha_heapv2_counts *c = &out->threads[i].raw;

        if (b == NULL)
            continue;
        c->accum_bytes = minus0(c->accum_bytes, b->raw.accum_bytes);
        if (!minus(c->accum_objs, b->raw.accum_objs, &c->accum_objs)) {
            ha_err_set(why, whylen,
                       "thread %llu's cumulative counts fell "
                       "(prof.reset)",
                       (unsigned long long)out->threads[i].uid);
            ret = HA_DELTA_RESET;
            goto fail;
        }
    }
    if (end->names_len > 0)
        memcpy(out->names, end->names, end->names_len);
    out->names_len = end->names_len;
    if (end->n_frames > 0)
        memcpy(out->frames, end->frames, end->n_frames * sizeof(uint64_t));
    out->n_frames = end->n_frames;
    out->has_maps = end->has_maps;

    for (size_t s = 0; s < end->n_stacks; s++) {
        const struct ha_heapv2_stack *e = &end->stacks[s];
        struct ha_heapv2_stack *o = &out->stacks[s];
        size_t b =
            find_base(idx, base->n_stacks, base, end, s, stack_hash(end, s));
        const struct ha_heapv2_stack *bs =
            b != SIZE_MAX ? &base->stacks[b] : NULL;

        *o = *e;
        o->tline_off = (uint32_t)out->n_tlines;
        if (bs != NULL) {
            seen[b] = true;
            o->raw.accum_bytes =
                minus0(e->raw.accum_bytes, bs->raw.accum_bytes);
            if (!minus(e->raw.accum_objs, bs->raw.accum_objs,
                       &o->raw.accum_objs)) {
                ha_err_set(why, whylen,
                           "the cumulative counts of the "
                           "stack at line %u fell from %llu "
                           "to %llu samples (prof.reset)",
                           e->line, (unsigned long long)bs->raw.accum_objs,
                           (unsigned long long)e->raw.accum_objs);
                ret = HA_DELTA_RESET;
                goto fail;
            }
        }
        /* The scaled figures are what adds up (see delta.h). */
        if (bs != NULL) {
            o->accum_objs = e->accum_objs > bs->accum_objs
                                ? e->accum_objs - bs->accum_objs
                                : 0;
            o->accum_bytes = e->accum_bytes > bs->accum_bytes
                                 ? e->accum_bytes - bs->accum_bytes
                                 : 0;
        }
        for (uint32_t k = 0; k < e->n_threads; k++) {
            struct ha_heapv2_tline tl = end->tlines[e->tline_off + k];

            for (uint32_t q = 0; bs != NULL && q < bs->n_threads; q++) {
                const struct ha_heapv2_tline *bt =
                    &base->tlines[bs->tline_off + q];

                if (bt->uid != tl.uid)
                    continue;
                tl.raw.accum_bytes =
                    minus0(tl.raw.accum_bytes, bt->raw.accum_bytes);
                if (!minus(tl.raw.accum_objs, bt->raw.accum_objs,
                           &tl.raw.accum_objs)) {
                    ha_err_set(why, whylen,
                               "thread %llu's cumulative "
                               "counts at the stack at line "
                               "%u fell (prof.reset)",
                               (unsigned long long)tl.uid, e->line);
                    ret = HA_DELTA_RESET;
                    goto fail;
                }
                break;
            }
            out->tlines[out->n_tlines++] = tl;
        }
        out->scaled_objs += o->objs;
        out->scaled_bytes += o->bytes;
        out->scaled_accum_objs += o->accum_objs;
        out->scaled_accum_bytes += o->accum_bytes;
        out->n_stacks++;
    }
    /* With prof_accum jemalloc keeps every backtrace it ever sampled: one
     * gone means its counters were thrown away. */
    for (size_t s = 0; s < base->n_stacks; s++)
        if (!seen[s] && base->stacks[s].raw.accum_objs > 0) {
            ha_err_set(why, whylen,
                       "the stack at line %u of the first "
                       "profile is gone from the second "
                       "(prof.reset)",
                       base->stacks[s].line);
            ret = HA_DELTA_RESET;
            goto fail;
        }
    free(idx);
    free(seen);
    return 0;
fail:
    if (ret == HA_DELTA_NOMEM)
        ha_err_set(why, whylen, "out of memory");
    free(idx);
    free(seen);
    ha_heapv2_free(out);
    return ret;
}
