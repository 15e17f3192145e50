/* SPDX-License-Identifier: MIT
 *
 * The lifetime window: jemalloc's prof_log (prof.log_start, then
 * prof.log_stop) run for a bounded time, its file published in the
 * datadir as a dump is, for heap_lifetimes to read.
 *
 * While a window is open jemalloc records every sampled allocation that
 * is freed (with both stacks, threads, times and size) in its own memory
 * (jemalloc's internal allocations: stats_memory_breakdown shows it as
 * jemalloc.internal.prof_log), and writes the whole log when the window
 * closes. So a window is bounded twice: by time (at most
 * HA_LOGWIN_MAX_S) and by that memory (heap->log_max_bytes; checked every
 * second by the owner's timer, ha_logwin_tick), and it closes on
 * whichever comes first, or when an operator closes it.
 *
 * Files. jemalloc's name for the log is kept: <prefix>.<pid>.<seq>.json
 * (its own numbering: one past the highest log of this pid in the
 * datadir). jemalloc creat()s the file at the stop in place, so it is
 * written into the staging directory (heap/dumpfiles.h) through a
 * descriptor heapadmin opened 0600 (jemalloc is given /proc/self/fd/<n>),
 * and published with the sidecars a reader needs: <log>.maps (this
 * process's mappings at the stop: the log has only addresses),
 * <log>.window (when, how long, why it closed, the process's allocation
 * requests in the window, the memory it held) and <log>.buildid. Then
 * dump_retention_* applies as after a dump.
 *
 * Threads. Opening and closing run on the heap's dump worker (the
 * datadir's writes); the loop only reads the window's state and decides
 * (ha_logwin_tick), never waiting for the worker: the state has a lock
 * of its own, held for copies only. jemalloc's log is one per process,
 * and so is the window: a second instance in the same process (or the
 * host itself) cannot open one while another is open. A window open
 * when the owner stops (ha_logwin_shutdown) or when the process exits
 * (an atexit handler, run before jemalloc's own) is closed and
 * published. In a fork child the log jemalloc inherited is stopped
 * without writing the parent's file (ha_logwin_fork_child): the child
 * would otherwise record its frees for the rest of its life.
 */
#ifndef HA_LOGWIN_H
#define HA_LOGWIN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "heap/heap.h"

#define HA_LOGWIN_MAX_S 600                        /* longest window */
#define HA_LOGWIN_DEFAULT_MAX_BYTES (64ll << 20)   /* its memory, by
                                                      default */
#define HA_LOGWIN_MIN_MAX_BYTES (1ll << 20)
#define HA_LOGWIN_MAX_MAX_BYTES (1ll << 32)

/* The window as the loop sees it (ha_logwin_state). */
struct ha_logwin_state {
    bool open;                /* jemalloc is logging */
    bool closing;             /* its close is queued or running */
    bool ours;                /* opened through this heap */
    long long seconds;        /* how long it was opened for */
    long long seconds_left;   /* until it closes on its own */
    long long bytes;          /* jemalloc's memory it holds now: growth of
                                 stats.arenas.<all>.internal since it
                                 opened (an estimate: the profiler's
                                 other records are internal too); -1:
                                 unknown */
    long long max_bytes;      /* the bound it closes at */
    char file[NAME_MAX + 1];  /* the log's name once published */

    char last[NAME_MAX + 1];  /* the last window's log ("": none yet) */
    char last_why[96];        /* why it closed */
    long long last_seconds;   /* how long it ran */
    long long last_bytes;     /* the memory it held at the end */
    char last_err[512];       /* its close failed: why ("": it did not) */
};

/* Opens a window of seconds (1 .. HA_LOGWIN_MAX_S) from a task: the
 * start runs on heap->dump_worker while the task waits. info gets what
 * was done (the file it will be, when it closes). Then calls
 * heap->window_opened so the owner ticks it. Returns 0, HA_HEAP_ERROR
 * with err naming what was wrong (profiling off, a window already open,
 * the datadir), or HA_HEAP_STOPPED (the start still completes, and the
 * window runs). */
int ha_logwin_open(struct ha_heap *heap, unsigned seconds, char *info,
                   size_t infolen, char *err, size_t errlen);

/* Closes the open window now and publishes its log, from a task (on the
 * dump worker, waited for). info names the file. Returns 0 (also when no
 * window was open: info says so), HA_HEAP_ERROR or HA_HEAP_STOPPED (the
 * close still completes). */
int ha_logwin_close(struct ha_heap *heap, char *info, size_t infolen,
                    char *err, size_t errlen);

/* For the owner's timer, on the loop: when the window's time is up or its
 * memory passed heap->log_max_bytes, queues its close on the dump worker
 * (not waited for). Returns the ms after which to tick again, or -1 when
 * no window of this heap is open. */
long ha_logwin_tick(struct ha_heap *heap);

/* The window's state (one short lock; loop or any thread). */
void ha_logwin_state(const struct ha_heap *heap, struct ha_logwin_state *st);

/* When the owner stops, after its workers stopped: closes and publishes
 * a window this heap opened, on the calling thread. */
void ha_logwin_shutdown(struct ha_heap *heap);

/* In a fork child (its only thread, before anything else): stops the log
 * the child inherited, its copy written to /dev/null rather than to the
 * parent's file, and forgets the window and its locks. */
void ha_logwin_fork_child(void);

#endif /* HA_LOGWIN_H */
