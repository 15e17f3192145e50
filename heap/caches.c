/* SPDX-License-Identifier: MIT
 *
 * The heap service's caches taken together (caches.h).
 */
#include "heap/caches.h"

#include <stddef.h>

#include "core/clock.h"
#include "heap/dumps.h"
#include "heap/growth.h"
#include "heap/profiles.h"
#include "heap/profmetrics.h"
#include "prof/symbolize.h"

#define HA_HEAP_INDEX_STOP_NS ((int64_t)500 * 1000000)

void
ha_heap_caches_free(struct ha_heap *heap)
{
    ha_heap_growth_free(heap);
    ha_heap_cache_free(heap);
    /* At shutdown: a symbol index being built stops first (it checks
     * often), so no build runs on while the process exits. */
    (void)ha_symbolizer_index_stop(heap->symbolizer,
                                   ha_clock_ns() + HA_HEAP_INDEX_STOP_NS);
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
