/* SPDX-License-Identifier: MIT
 *
 * The distinct addresses of a profile's stacks, sorted, for the
 * symbolizer, and each frame's place among them (ha_agg_lookup_index):
 * the frame index every later pass over the stacks finds frames by.
 */

#include "prof/aggregate.h"

#include <stdlib.h>
#include <string.h>

#include "core/radix.h"
#include "prof/aggregate_int.h"

/* ------------------------------------------------------------------ */
/* Addresses to symbolize                                              */
/* ------------------------------------------------------------------ */

int
ha_agg_lookup_index(const struct ha_heapv2 *p, uint64_t **pcs, size_t *n,
                    uint32_t **index)
{
    /* Deduplicated through a hash first: sorting every frame (most are
     * repeats) took a third of a warm query. The table grows with the
     * distinct pcs, not with the frames: sized for the frames, its
     * zeroed pages cost a 15 MB dump more than the hashing. */
    size_t cap = 4096, n_seen = 0;
    uint64_t *keys = NULL, *v = NULL;
    uint32_t *ids = NULL, *rank = NULL, *idx = NULL;
    struct ha_radix_item *seen = NULL; /* pc, order first seen */
    size_t seen_cap = 0;
    int ret = -1;

    *pcs = NULL;
    *n = 0;
    if (index != NULL)
        *index = NULL;
    keys = malloc(cap * sizeof(*keys));
    ids = malloc(cap * sizeof(*ids));
    if (index != NULL)
        idx = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*idx));
    if (keys == NULL || ids == NULL || (index != NULL && idx == NULL))
        goto done;
    memset(ids, 0xff, cap * sizeof(*ids));
    for (size_t i = 0; i < p->n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(p, i);

        for (size_t j = 0; j < p->stacks[i].n_frames; j++) {
            uint64_t pc = ha_aggregate_lookup_pc(f, j);
            size_t k = ha_aggregate_pc_slot(pc, cap);

            while (ids[k] != UINT32_MAX && keys[k] != pc)
                k = (k + 1) & (cap - 1);
            if (ids[k] == UINT32_MAX) {
                if (n_seen == seen_cap) {
                    size_t nc = seen_cap ? seen_cap * 2 : 4096;
                    struct ha_radix_item *ns = realloc(seen, nc * sizeof(*ns));

                    if (ns == NULL)
                        goto done;
                    seen = ns;
                    seen_cap = nc;
                }
                keys[k] = pc;
                ids[k] = (uint32_t)n_seen;
                seen[n_seen].key = pc;
                seen[n_seen].val = n_seen;
                n_seen++;
                if (n_seen * 2 > cap) {
                    /* Grow: rehash what is there. */
                    size_t nc = cap * 2;
                    uint64_t *nk = malloc(nc * sizeof(*nk));
                    uint32_t *ni = malloc(nc * sizeof(*ni));

                    if (nk == NULL || ni == NULL) {
                        free(nk);
                        free(ni);
                        goto done;
                    }
                    memset(ni, 0xff, nc * sizeof(*ni));
                    for (size_t q = 0; q < cap; q++) {
                        size_t r;

                        if (ids[q] == UINT32_MAX)
                            continue;
                        for (r = ha_aggregate_pc_slot(keys[q], nc);
                             ni[r] != UINT32_MAX; r = (r + 1) & (nc - 1))
                            ;
                        nk[r] = keys[q];
                        ni[r] = ids[q];
                    }
                    free(keys);
                    free(ids);
                    keys = nk;
                    ids = ni;
                    cap = nc;
                    if (idx != NULL)
                        idx[p->stacks[i].frame_off + j] = (uint32_t)n_seen - 1;
                    continue;
                }
            }
            if (idx != NULL)
                idx[p->stacks[i].frame_off + j] = ids[k];
        }
    }
    if (ha_radix_sort(seen, n_seen) != 0)
        goto done;
    v = malloc((n_seen ? n_seen : 1) * sizeof(*v));
    rank = malloc((n_seen ? n_seen : 1) * sizeof(*rank));
    if (v == NULL || rank == NULL)
        goto done;
    for (size_t k = 0; k < n_seen; k++) {
        v[k] = seen[k].key;
        rank[seen[k].val] = (uint32_t)k;
    }
    /* First-seen ids to places in the sorted list. */
    for (size_t k = 0; idx != NULL && k < p->n_frames; k++)
        idx[k] = rank[idx[k]];
    *pcs = v;
    *n = n_seen;
    v = NULL;
    if (index != NULL) {
        *index = idx;
        idx = NULL;
    }
    ret = 0;
done:
    free(keys);
    free(ids);
    free(seen);
    free(rank);
    free(v);
    free(idx);
    return ret;
}

int
ha_agg_lookup_pcs(const struct ha_heapv2 *p, uint64_t **pcs, size_t *n)
{
    return ha_agg_lookup_index(p, pcs, n, NULL);
}
