/* SPDX-License-Identifier: MIT
 *
 * The heap service (heap.h): statistics freshness.
 */
#include "heap/heap.h"

#include <errno.h>
#include <stdio.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"

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

int
ha_heap_sampling_hold(struct ha_heap *heap, int lg_rate, char *what,
                      size_t whatlen)
{
    struct ha_heap_sampling *sm = &heap->sampling;
    const struct ha_mallctl_ops *ops = heap->ops;
    bool active = false;
    size_t rate = 0;

    if (sm->holds > 0) {
        sm->holds++;
        ha_err_set(what, whatlen, "sampling already on for another watch");
        return 0;
    }
    if (!ha_mallctl_prof_enabled(ops)) {
        ha_err_set(what, whatlen, "heap profiling is not available in this "
                                  "process (opt.prof=false)");
        return -1;
    }
    (void)ha_mallctl_read_bool(ops, "prof.active", &active);
    (void)ha_mallctl_read_size(ops, "prof.lg_sample", &rate);
    sm->changed_active = sm->changed_rate = false;
    if (active) {
        ha_err_set(what, whatlen,
                   "sampling was already on (lg_prof_sample %zu, kept)",
                   rate);
        sm->holds = 1;
        return 0;
    }
    if (lg_rate != HA_UNSET && (size_t)lg_rate != rate &&
        ha_mallctl_write_size(ops, "prof.reset", (size_t)lg_rate) == 0) {
        sm->changed_rate = true;
        sm->old_rate = rate;
        rate = (size_t)lg_rate;
    }
    if (ha_mallctl_write_bool(ops, "prof.active", true, NULL) != 0) {
        ha_err_set(what, whatlen, "prof.active could not be switched on");
        if (sm->changed_rate)
            (void)ha_mallctl_write_size(ops, "prof.reset", sm->old_rate);
        sm->changed_rate = false;
        return -1;
    }
    sm->changed_active = true;
    sm->holds = 1;
    ha_err_set(what, whatlen, "sampling switched on (lg_prof_sample %zu)",
               rate);
    return 0;
}

void
ha_heap_sampling_release(struct ha_heap *heap)
{
    struct ha_heap_sampling *sm = &heap->sampling;
    const struct ha_mallctl_ops *ops = heap->ops;

    if (sm->holds == 0 || --sm->holds > 0)
        return;
    if (sm->changed_active &&
        ha_mallctl_write_bool(ops, "prof.active", false, NULL) != 0)
        ha_log_warn("prof.active could not be switched off again");
    if (sm->changed_rate &&
        ha_mallctl_write_size(ops, "prof.reset", sm->old_rate) != 0)
        ha_log_warn("the sampling rate could not be put back to %zu",
                    sm->old_rate);
    sm->changed_active = sm->changed_rate = false;
}

void
ha_heap_published(struct ha_heap *heap)
{
    if (heap != NULL && heap->published != NULL)
        heap->published(heap->published_arg);
}
