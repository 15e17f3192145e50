/* SPDX-License-Identifier: MIT
 *
 * The heap service (heap.h): statistics freshness.
 */
#include "heap/heap.h"

#include <errno.h>

#include "core/clock.h"

void
ha_heap_refresh_stats(struct ha_heap *heap)
{
    long long now = ha_clock_ms();

    if (heap->stats_epoch_ms != 0 && heap->stats_max_age_ms > 0 &&
        now - heap->stats_epoch_ms < (long long)heap->stats_max_age_ms)
        return;
    /* While a dump of ours writes, the refresh would wait for it: the
     * figures stay as of the last one, and their age says so. */
    if (ha_mallctl_epoch(heap->ops) == EBUSY)
        return;
    /* Never 0, which means "never refreshed". */
    heap->stats_epoch_ms = now > 0 ? now : 1;
}

long long
ha_heap_stats_age_ms(const struct ha_heap *heap)
{
    if (heap->stats_epoch_ms == 0)
        return -1;
    return ha_clock_ms() - heap->stats_epoch_ms;
}
