/* SPDX-License-Identifier: MIT
 *
 * The last sampled allocations of this process, as jemalloc keeps them
 * (experimental.prof_recent: jemalloc-recent_alloc_max of them, freed or
 * not), read for stats_jemalloc_recent: jemalloc emits them as JSON
 * through a write callback (experimental.prof_recent.alloc_dump), which
 * is parsed (prof/recent.h) and symbolized in this process's mappings
 * now, all on the worker thread while the asking task waits.
 *
 * Times: jemalloc's profiling clock is CLOCK_MONOTONIC_COARSE (a few ms)
 * unless the process started with prof_time_resolution:high (CLOCK_REALTIME);
 * the rows carry wall-clock times, the monotonic ones moved by the
 * clocks' offset when they were read.
 */
#ifndef HA_RECENTALLOCS_H
#define HA_RECENTALLOCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/livesizes.h"
#include "prof/recent.h"
#include "prof/syms.h"
#include "heap/heap.h"

/* One record as the table shows it. */
struct ha_recent_row {
    const struct ha_recent_rec *rec;
    double alloc_s;        /* unix seconds */
    double free_s;         /* unix seconds; released only */
    double age_ms;         /* since it was allocated */
    double objects;        /* objects it stands for, scaled as jeprof
                              scales samples */
    uint32_t site, stack;  /* names: allocation site, collapsed stack */
    uint32_t free_site, free_stack; /* 0: not freed (or no trace) */
};

struct ha_recent_allocs {
    struct ha_recent recent;     /* as jemalloc wrote it */
    struct ha_recent_row *rows;  /* recent.n, oldest first */
    struct ha_strtab names;      /* sites and stacks */
};

/* Reads, parses and symbolizes the recent allocations (off the loop).
 * *out malloc'd: free with ha_recent_allocs_free; with profiling off or
 * recording off (jemalloc-recent_alloc_max = 0, jemalloc's default) it
 * holds none, and *why (may be NULL) says which. Returns 0,
 * HA_HEAP_ERROR with err set (jemalloc's document unreadable, out of
 * memory) or HA_HEAP_STOPPED. */
int ha_heap_recent_allocs(struct ha_heap *heap, struct ha_recent_allocs **out,
                          const char **why, char *err, size_t errlen);

void ha_recent_allocs_free(struct ha_recent_allocs *r);

/* The usable sizes of the live samples jemalloc's records hold, per
 * allocation backtrace (prof/livesizes.h), read now, for a heap profile
 * taken just before: the records' JSON read and parsed here, on the
 * calling thread (a dump job's or a load job's, never the loop's: about
 * 1 KiB of JSON per record). With profiling unavailable, recording off
 * (recent_alloc_max 0) or a document that does not read, *out is
 * HA_LIVESIZES_OFF saying why. Returns 0, or -1 when out of memory (*out
 * then says so too). */
int ha_recent_live_sizes(const struct ha_mallctl_ops *ops,
                         struct ha_livesizes *out);

static inline const char *
ha_recent_allocs_str(const struct ha_recent_allocs *r, uint32_t off)
{
    return ha_strtab_str(&r->names, off);
}

#endif /* HA_RECENTALLOCS_H */
