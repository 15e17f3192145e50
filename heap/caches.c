/* SPDX-License-Identifier: MIT
 *
 * The heap service's caches taken together (caches.h).
 */
#include "heap/caches.h"

#include <stddef.h>

#include "heap/dumps.h"
#include "heap/growth.h"
#include "heap/profiles.h"
#include "heap/profmetrics.h"
#include "prof/symbolize.h"

void
ha_heap_caches_free(struct ha_heap *heap)
{
    ha_heap_growth_free(heap);
    ha_heap_cache_free(heap);
    ha_profmetrics_free(heap);
    ha_symbolizer_free(heap->symbolizer);
    heap->symbolizer = NULL;
    ha_dump_totals_free(heap->dump_totals);
    heap->dump_totals = NULL;
}

int
ha_heap_caches_release(struct ha_heap *heap, unsigned idle_s)
{
    return ha_heap_cache_release(heap, idle_s);
}
