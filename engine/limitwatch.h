/* SPDX-License-Identifier: MIT
 *
 * The limit watch: heap dumps relative to the process's memory limit,
 * taken before the OOM killer comes (SIGKILL leaves no chance to dump).
 * Wherever a memory cgroup limits the process (heap/cgroup.h: v1 or v2,
 * its own group's limit or an ancestor's), it takes a dump, of kind
 * `limit` (trigger "limit" in <dump>.mem, with the usage and limit at
 * dump time):
 *   - as the working set (usage less inactive file cache) passes each
 *     of jemalloc_variables.limit_dump_fractions (0.80, 0.90, 0.95 by
 *     default) of the limit: once per crossing, a level re-armed once
 *     the working set falls HA_LIMITWATCH_REARM of the limit below it;
 *   - on memory pressure (PSI "some" above limit_dump_psi_pct: the
 *     kernel's trigger where it accepts one, else the 10 s average),
 *     once, re-armed below half of it;
 *   - on new high, max or oom events of the cgroup (v2 memory.events;
 *     v1 memory.failcnt), when limit_dump_events.
 * At most one limit dump per limit_dump_min_interval_s, but for a level
 * higher than any dumped since the working set was last below the
 * lowest: a fast climb gets every level. A trigger held back by the
 * interval fires once it has passed, if it still holds (events are
 * counted, not lost). Dumps run on the disk worker like every automatic
 * dump (the free-space floor and retention apply).
 *
 * On by default wherever there is a limit: an empty limit_dump_fractions
 * switches the limit dumps off, pressure and events included (which
 * have switches of their own besides).
 * Sampling: a dump holds what was sampled, and what grew before sampling
 * was on is not in it, so wherever a limit binds the process the watch
 * holds sampling on from its first look (heap.h ha_heap_sampling_hold,
 * at limit_watch_lg_prof_sample or the current rate: jemalloc's default
 * 19, a sample every 512 KiB, costs redis and nginx at most about 3 % of
 * CPU per request: bench/RESULTS-sampling.md), and lets it go when the
 * limit does. The
 * operator's sampling is left as it is; limit_watch_sampling = false,
 * or prof_active = false in the config, leaves it off.
 * The dump is decided on a look's figures and queued on the disk worker
 * at once (behind any dump still being written); <dump>.mem records the
 * look it was decided on, so a limit dump never says less than its
 * level.
 *
 * Wake-ups: far from the limit, the history sampler's tick serves
 * (engine/history.h; the engine ticks every 60 s without it) and the
 * kernel wakes the watch where it can: v1 usage thresholds
 * (cgroup.event_control eventfd) at the wake level (the first fraction
 * less 10 points) and at each level, v2 memory.events changes
 * (inotify), a PSI trigger on the process's own v2 group's
 * memory.pressure (none where the process sits in the root group or has
 * no v2 group: that file, like /proc/pressure/memory, is the whole
 * machine's). Where no threshold is set (v2, or a process that is not
 * root: the kernel keeps cgroup.event_control to root) the watch reads
 * the usage itself, one read at most 250 ms apart and sooner as it
 * climbs (limitrule.h), and near the limit between two looks too, for
 * the usage at which the working set reaches the next level (a
 * threshold of its own, read down to 20 ms apart). Past the wake level
 * it looks at most a second
 * apart, 250 ms within 5 points of the first level, and sooner at a
 * fast climb: half the time it needs to reach the next mark, down to
 * 10 ms, the climb measured over the last 250 ms or more. A fill faster
 * than any of these periods still gets a look at each level (thresholds)
 * or on its way (the paced look).
 */
#ifndef HA_LIMITWATCH_H
#define HA_LIMITWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "core/worker.h"
#include "heap/cgroup.h"
#include "heap/heap.h"
#include "engine/limitrule.h"

/* ------------------------------------------------------------------
 * The watch
 * ------------------------------------------------------------------ */

struct ha_limitwatch;
struct ha_dump_looked;

/* What the owner is told, on the loop (each may be NULL). */
struct ha_limitwatch_hooks {
    /* Each look under a limit: st as read at looked_ns (unix ns);
     * dumping: the look decided on a limit dump, queued right after. */
    void (*looked)(void *arg, const struct ha_cgroup_state *st,
                   int64_t looked_ns, bool dumping);
    /* A limit dump written: its file name (in the datadir) and the look
     * it was decided on. */
    void (*dumped)(void *arg, const char *file,
                   const struct ha_dump_looked *looked);
    void *arg;
};

/* Starts watching as heap->je says; dumps are written on worker's
 * thread; the owner calls ha_limitwatch_tick at each history sample (or
 * a tick of its own without one), and hears of each look through hooks
 * (NULL: nothing; copied). Returns NULL when it is off (an empty
 * limit_dump_fractions, or profiling off: logged). heap and worker must
 * outlive it. */
struct ha_limitwatch *
ha_limitwatch_new(struct event_base *base, struct ha_worker *worker,
                  struct ha_heap *heap,
                  const struct ha_limitwatch_hooks *hooks);

/* A look at st, the cgroup's state the history sampler just read (the
 * group located again first, heap->cgroup). Loop thread. */
void ha_limitwatch_tick(struct ha_limitwatch *w,
                        const struct ha_cgroup_state *st);

/* NULL is a no-op. A dump being written completes. */
void ha_limitwatch_free(struct ha_limitwatch *w);

/* For a fork child: closes the descriptors the watch made (the kernel's
 * wake-ups: eventfd, inotify, pressure file and its epoll set) that are
 * provably still the ones it made, and touches nothing else; w is
 * leaked. NULL is a no-op. */
void ha_limitwatch_abandon(struct ha_limitwatch *w);

/* "jemalloc-limit_watch_state" as text (w may be NULL: "off"). */
bool ha_limitwatch_value(const void *w, const char *name, char *buf,
                         size_t len);

#endif /* HA_LIMITWATCH_H */
