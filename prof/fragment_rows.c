/* SPDX-License-Identifier: MIT
 *
 * The rows of fragmentation by call site (see fragment.h): one per
 * (site, class), found through a hash on the pair and made when new;
 * regions added to a row by how they were placed, and counted against
 * the class. Pure.
 */
#include "prof/fragment_int.h"

#include <stdlib.h>
#include <string.h>

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
long
ha_fragment_row_for(struct ha_frag *f, struct index *ix, size_t *cap,
                    uint32_t name, uint32_t module, size_t bin)
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

/* Adds regions (exact of them exactly) of a site to row (name, module,
 * bin) with how. */
int
ha_fragment_add(struct work *wk, uint32_t name, uint32_t module, size_t bin,
                double regions, double exact, unsigned how, double mean)
{
    long r = ha_fragment_row_for(wk->f, &wk->ix, &wk->cap, name, module,
                                 bin);

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
