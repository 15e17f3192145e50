/* SPDX-License-Identifier: MIT
 *
 * Fragmentation laid at call sites' doors (see fragment.h). Pure.
 */
#include "prof/fragment.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"

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

bool
ha_frag_classes(const struct ha_dumpmem_bin *bins, size_t n_bins,
                uint64_t objs, uint64_t bytes, size_t *lo, size_t *hi,
                double *share_lo)
{
    double mean;
    size_t k;

    if (objs == 0 || bytes == 0 || n_bins == 0)
        return false;
    mean = (double)bytes / (double)objs;
    for (k = 0; k < n_bins && (double)bins[k].size < mean; k++)
        ;
    if (k == n_bins) {
        /* above every small class: large objects, unless a hair above
         * the largest */
        if (mean - (double)bins[n_bins - 1].size >
            0.02 * (double)bins[n_bins - 1].size)
            return false;
        *lo = *hi = n_bins - 1;
        *share_lo = 1;
        return true;
    }
    *hi = k;
    /* jemalloc 5.3 writes unbiased counts (opt.prof_unbias), whose mean
     * strays a little from the one usable size they share: within 2 %
     * (neighbouring classes are 12.5 % and more apart) is that class. */
    if (k > 0 && mean - (double)bins[k - 1].size <=
                     0.02 * (double)bins[k - 1].size) {
        *lo = *hi = k - 1;
        *share_lo = 1;
        return true;
    }
    if ((double)bins[k].size - mean <= 0.02 * (double)bins[k].size ||
        k == 0) {
        *lo = k;
        *share_lo = 1;
        return true;
    }
    /* x objects of size a and n - x of size b with mean m:
     * x = n (b - m) / (b - a). */
    *lo = k - 1;
    *share_lo = ((double)bins[k].size - mean) /
                ((double)bins[k].size - (double)bins[k - 1].size);
    return true;
}

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

/* Adds est regions of a site to row (name, module, bin). */
static int
add(struct ha_frag *f, struct index *ix, size_t *cap, uint32_t name,
    uint32_t module, size_t bin, double regions, bool split, double mean)
{
    long r = row_for(f, ix, cap, name, module, bin);

    if (r < 0)
        return -1;
    f->rows[r].live_regions += regions;
    f->class_regions[bin] += regions;
    if (split) {
        f->rows[r].split = true;
        if (mean > f->rows[r].split_mean)
            f->rows[r].split_mean = mean;
    }
    return 0;
}

int
ha_frag_compute(const struct ha_heapv2 *p, const struct ha_syms *syms,
                const struct ha_dumpmem_bin *bins, size_t n_bins,
                bool stacks, struct ha_frag *out, char *err, size_t errlen)
{
    struct ha_agg_walker *w = NULL;
    struct index ix = {0};
    struct ha_buf line = {0}, name = {0};
    size_t cap = 0;
    int ret = -1;

    memset(out, 0, sizeof(*out));
    out->bins = bins;
    out->n_bins = n_bins;
    if (n_bins == 0 || n_bins > HA_DUMPMEM_BINS_MAX) {
        ha_err_set(err, errlen, "no size classes to share out");
        return -1;
    }
    for (size_t k = 0; k < n_bins; k++) {
        out->class_free[k] = (double)ha_frag_class_free(&bins[k]);
        out->total_free += out->class_free[k];
    }
    if ((w = ha_agg_walker_new(syms)) == NULL)
        goto oom;
    for (size_t i = 0; i < p->n_stacks; i++) {
        const struct ha_heapv2_stack *st = &p->stacks[i];
        const char *module = NULL;
        uint32_t n_off, m_off = 0;
        size_t lo, hi;
        double share, mean;
        int rc;

        if (!ha_frag_classes(bins, n_bins, st->raw.objs, st->raw.bytes, &lo,
                             &hi, &share))
            continue;
        /* heap_top's own rule for the site */
        rc = ha_agg_walker_site(w, p, i, &name);
        if (rc < 0)
            goto oom;
        if (rc > 0)
            ha_buf_append_str(&name, "(allocator)");
        module = ha_agg_walker_site_module(w);
        if (stacks) {
            if (ha_agg_walker_collapsed(w, p, i, &line) != 0)
                goto oom;
            n_off = ha_strtab_intern(&out->names, (const char *)line.data,
                                     line.len);
        } else {
            n_off = ha_strtab_intern(&out->names, (const char *)name.data,
                                     name.len);
        }
        if (module != NULL)
            m_off = ha_strtab_intern(&out->names, module, strlen(module));
        if (n_off == UINT32_MAX || m_off == UINT32_MAX)
            goto oom;
        if (n_off == 0) /* an empty stack: name it as heap_top would */
            n_off = ha_strtab_intern(&out->names, "(allocator)", 11);
        mean = (double)st->raw.bytes / (double)st->raw.objs;
        if (add(out, &ix, &cap, n_off, m_off, lo, st->objs * share, lo != hi,
                mean) != 0 ||
            (lo != hi && add(out, &ix, &cap, n_off, m_off, hi,
                             st->objs * (1 - share), true, mean) != 0))
            goto oom;
    }
    /* Each class's free bytes, shared by estimated regions; a class
     * with none sampled keeps its own row. */
    for (size_t r = 0; r < out->n_rows; r++) {
        struct ha_frag_row *row = &out->rows[r];

        if (out->class_regions[row->bin] > 0)
            row->free_bytes = out->class_free[row->bin] * row->live_regions /
                              out->class_regions[row->bin];
    }
    for (size_t k = 0; k < n_bins; k++) {
        long r;

        if (out->class_regions[k] > 0 || out->class_free[k] <= 0)
            continue;
        if ((r = row_for(out, &ix, &cap, 0, 0, k)) < 0)
            goto oom;
        out->rows[r].free_bytes = out->class_free[k];
    }
    if (out->n_rows > 1)
        qsort(out->rows, out->n_rows, sizeof(out->rows[0]), by_free_desc);
    ret = 0;
    goto done;
oom:
    ha_err_set(err, errlen, "out of memory sharing out the free regions");
    ha_frag_free(out);
done:
    ha_buf_free(&line);
    ha_buf_free(&name);
    free(ix.keys);
    free(ix.vals);
    ha_agg_walker_free(w);
    return ret;
}

void
ha_frag_free(struct ha_frag *f)
{
    free(f->rows);
    ha_strtab_free(&f->names);
    f->rows = NULL;
    f->n_rows = 0;
}
