/* SPDX-License-Identifier: MIT
 *
 * Automatic dumps and the housekeeping of jemalloc's own ones, for one
 * server: a dump every jemalloc_variables.dump_interval_s, a dump when
 * stats.resident rises past dump_resident_bytes (the leak evidence
 * ProxySQL's guide asks for, gathered unattended; re-armed once resident
 * falls 10% below it), none while the datadir has less than
 * dump_min_free_bytes free, and dump_retention_* applied after each.
 * jemalloc's own interval and high-water dumps are checked on the same
 * watch: below the floor the new ones are removed (skipped), and
 * retention applies to them too. No timer exists unless something can
 * write a dump on its own: an idle daemon is never woken for this. The
 * timers only decide: the dump, the free-space check and the directory
 * scans are jobs on the engine's worker thread, and a tick that comes
 * while the last one's job is still running is skipped.
 */
#ifndef HA_DUMPTIMER_H
#define HA_DUMPTIMER_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

#include "core/worker.h"
#include "heap/heap.h"

#define HA_DUMPTIMER_WATCH_S 5 /* resident and jemalloc's own dumps */

struct ha_dumptimer;

/* Arms what heap->je asks for on base; the dumps and the directory work
 * run on worker's thread (heap/dumpjob.h), never on the loop. heap (ops,
 * prefix, je) and worker must outlive the timer. Returns NULL when
 * nothing needs a timer (or out of memory, logged). */
struct ha_dumptimer *ha_dumptimer_new(struct event_base *base,
                                      struct ha_worker *worker,
                                      struct ha_heap *heap);

/* NULL is a no-op. A dump being written completes; nobody is told. */
void ha_dumptimer_free(struct ha_dumptimer *t);

/* One automatic dump, as the timers take them, for another trigger (the
 * leak watch), on worker's thread: skipped while the datadir's free space
 * is below dump_min_free_bytes (logged once an episode; *low_space, when
 * not NULL, carries the episode from one dump to the next and must stay
 * alive until done), else prof.dump with jemalloc's naming, the
 * build-ids and the memory at dump time recorded beside it (trigger and
 * reason go into <dump>.mem), and dump_retention_* applied. variable
 * names the setting in messages, reason says why; looked, when not NULL,
 * is the cgroup as the caller saw it when it decided (<dump>.mem records
 * it rather than a reading at the dump). Then, on the loop,
 * done(arg, file): the dump's path, or NULL when none was written
 * (logged). Returns the request, or NULL when it could not be queued
 * (logged; done is never called). Loop thread only. */
struct ha_dump_req;
struct ha_dump_looked;
struct ha_dump_req *ha_dumptimer_dump(struct ha_worker *worker,
                                      struct ha_heap *heap,
                                      const char *variable,
                                      const char *trigger,
                                      const char *reason,
                                      const struct ha_dump_looked *looked,
                                      bool *low_space,
                                      void (*done)(void *arg,
                                                   const char *file),
                                      void *arg);

/* For an owner going away before its request's done: done will not be
 * called (the dump itself completes, and is logged). */
void ha_dump_req_forget(struct ha_dump_req *r);

#endif /* HA_DUMPTIMER_H */
