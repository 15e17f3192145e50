/* SPDX-License-Identifier: MIT
 *
 * What the files of the aggregate (aggregate.h) share: the lookup pc
 * of a frame, the symbol lookups of one pass and the cut of a stack
 * (aggregate_site.c), the collapsed forms the walker writes
 * (aggregate_collapsed.c). Private to prof/aggregate*.c.
 */
#ifndef HA_AGGREGATE_INT_H
#define HA_AGGREGATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "prof/heapv2.h"
#include "prof/syms.h"
#include "prof/wrappers.h"

#define HA_AGGREGATE_HIGH_ADDR (UINT64_C(1) << 63)

static inline uint64_t
ha_aggregate_lookup_pc(const uint64_t *f, size_t i)
{
    return i == 0 ? f[0] : f[i] - 1;
}

/* Symbol lookups for one pass over a profile: a hash from lookup pc to
 * the syms entry (a binary search per frame was a fifth of the time on a
 * 65k-stack dump), whether each entry is an allocator frame and how far
 * into it wrapper code reaches (worked out once per entry, not per
 * frame), and the current stack's entries and cut. */
struct resolver {
    const struct ha_syms *syms;
    const struct ha_wrap_set *wrap; /* the wrappers the cut skips; NULL:
                                       none (jeprof's cut) */
    uint64_t *keys;                 /* pc; slot empty when vals[j] == 0 */
    uint32_t *vals;                 /* syms->addrs index + 1 */
    size_t cap;                     /* power of two */
    uint8_t *alloc;                 /* per entry: 0 not yet, 1 no, 2 yes */
    uint8_t *deep;       /* per entry: 0 not yet, else 1 + the number of its
                            inline entries, innermost first, up to and
                            including its outermost wrapper entry (1: none) */
    uint32_t *name_keys; /* name (strs offset) -> NAME_* bits */
    uint8_t *name_vals;  /* 0: empty slot */
    size_t name_cap;     /* SIZE_MAX: no table */
    size_t name_n;
    const struct ha_syms_addr **sa; /* the stack's frames' entries */
    size_t sa_cap;
    size_t alloc_end; /* the last stack's cut: first frame after the
                         allocator's */
    size_t start;     /* ... the site's frame */
    uint32_t skip;    /* ... its inline entries that are wrapper code */
};

static inline size_t
ha_aggregate_pc_slot(uint64_t pc, size_t cap)
{
    return (size_t)((pc * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

/* aggregate_site.c */

/* wrap: the set to cut with, or NULL for syms' own. 0, or -1 when out
 * of memory (free r with ha_aggregate_resolver_free either way). */
int ha_aggregate_resolver_init(struct resolver *r, const struct ha_syms *syms,
                               const struct ha_wrap_set *wrap);

void ha_aggregate_resolver_free(struct resolver *r);

/* The entry of raw frame j of stack i (frames f): by the syms' frame
 * index when it was made for p (checked by its pc), else by pc; NULL
 * when unknown. */
const struct ha_syms_addr *ha_aggregate_frame_entry(struct resolver *r,
                                                    const struct ha_heapv2 *p,
                                                    size_t i, size_t j,
                                                    const uint64_t *f);

/* Looks up every frame of stack i into r->sa, sets the cut (r->alloc_end,
 * r->start, r->skip) and returns r->start, the site's frame, or SIZE_MAX
 * on OOM. */
size_t ha_aggregate_resolve_stack(struct resolver *r, const struct ha_heapv2 *p,
                                  size_t i);

/* aggregate_collapsed.c */

/* The stack (resolved into r, cut) from its site on, collapsed into
 * line (reset first). */
void ha_aggregate_collapse_one(const struct resolver *r,
                               const struct ha_heapv2 *p, size_t i,
                               const struct ha_syms *syms, struct ha_buf *line);

/* The wrapper part the cut skipped (between the allocator's frames and
 * the site), collapsed into line; empty when none. */
void ha_aggregate_collapse_wrappers(const struct resolver *r,
                                    const struct ha_heapv2 *p, size_t i,
                                    const struct ha_syms *syms,
                                    struct ha_buf *line);

#endif /* HA_AGGREGATE_INT_H */
