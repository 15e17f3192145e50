/* SPDX-License-Identifier: MIT
 *
 * The heap service's caches taken together (heap.h): loaded profiles
 * (profiles.h), the symbolizer, the dumps' totals (dumps.h), the last
 * growth result (growth.h). For the owner, which frees them at the end
 * and may give them back while idle.
 */
#ifndef HA_CACHES_H
#define HA_CACHES_H

#include "heap/heap.h"

/* Frees every cache once nothing uses them: no job on the workers, no
 * cursor. heap itself is the owner's. */
void ha_heap_caches_free(struct ha_heap *heap);

/* Gives back the profiles no query holds and, unless debuginfod may have
 * fetches running, the symbolizer, once no profile was asked for idle_s
 * seconds. Loop thread, no job running on the worker. Returns 0, or -1
 * when not yet (ask again later). */
int ha_heap_caches_release(struct ha_heap *heap, unsigned idle_s);

#endif /* HA_CACHES_H */
