/* SPDX-License-Identifier: MIT
 *
 * Fragmentation by call site for a loaded profile (prof/fragment.h): the
 * free regions of the small size classes recorded with it (the bins of
 * <dump>.mem, or of the same pass as a live profile) shared among its
 * stacks, computed on the worker thread while the asking task waits.
 */
#ifndef HA_HEAP_FRAGMENTATION_H
#define HA_HEAP_FRAGMENTATION_H

#include <stdbool.h>
#include <stddef.h>

#include "heap/profiles.h"
#include "prof/fragment.h"

/* Shares pr's recorded bins among its call sites (stacks: per stack
 * rather than per allocation-site function). On 0 *out is the caller's
 * (ha_heap_fragmentation_free); pr must outlive it (its bins). Returns
 * 0, HA_HEAP_ERROR (err: no bins recorded beside the dump, out of
 * memory) or HA_HEAP_STOPPED. */
int ha_heap_fragmentation(struct ha_heap_profile *pr, bool stacks,
                          struct ha_frag **out, char *err, size_t errlen);

void ha_heap_fragmentation_free(struct ha_frag *f);

/* ha_frag_compute over pr (pr->mem must hold bins) with the sizes
 * recorded with it, or for a live profile the samples' sizes read now
 * (jemalloc's recent-allocation records, about 1 KiB of JSON each): on
 * the calling thread, a job's, never the loop's. Returns as
 * ha_frag_compute. */
int ha_heap_fragmentation_compute(const struct ha_heap_profile *pr,
                                  bool stacks, struct ha_frag *out,
                                  char *err, size_t errlen);

#endif /* HA_HEAP_FRAGMENTATION_H */
