/* SPDX-License-Identifier: MIT
 *
 * How long objects live, per allocation site or per stack, from a
 * prof_log window (prof/proflog.h): what was freed in the window, how
 * fast, after how long, where and by whom.
 *
 * Per row, over the sampled allocations whose allocation trace has that
 * site (the allocation-site rule of heap_top, prof/aggregate.h) or that
 * collapsed stack:
 *   objects, bytes   freed in the window, scaled as jeprof scales
 *                    samples: a sample of usize u stands for
 *                    1/(1-exp(-u/period)) objects of u bytes;
 *   per second       those over the window's duration;
 *   lifetime         free time minus allocation time, p50/p90/p99/max,
 *                    percentiles of objects (each sample weighted as
 *                    above); as precise as jemalloc's clock
 *                    (prof_time_res: a few ms by default, ns with
 *                    prof_time_res:high);
 *   free site        the free trace's first frame after the
 *                    deallocator's (the same cut), the one that freed
 *                    the most objects, and its share;
 *   other thread     the share of objects freed by a thread other than
 *                    the one that allocated them;
 *   temporary        heaptrack's "temporary allocation": an object freed
 *                    before the process made any other allocation or
 *                    free. jemalloc logs only sampled objects, so the
 *                    share is estimated: an object freed by the thread
 *                    that made it counts exp(-rate * lifetime), the
 *                    chance that none of the process's other
 *                    allocations and frees (rate: their count per
 *                    second in the window, from jemalloc's statistics)
 *                    fell in its lifetime; one freed by another thread
 *                    counts 0. Unknown (NAN) without the rate.
 * Rows come most bytes freed first, then by key.
 *
 * Pure: no I/O; the log's traces are symbolized elsewhere (as a heap
 * profile: prof/traces.h), which is where names come from.
 */
#ifndef HA_LIFETIMES_H
#define HA_LIFETIMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/heapv2.h"
#include "prof/proflog.h"
#include "prof/syms.h"

struct ha_life_opts {
    bool per_stack;        /* key by collapsed allocation stack, not by
                              allocation site */
    double events_per_s;   /* the process's allocations and frees per
                              second in the window; <= 0 or NAN: unknown
                              (no temporary share) */
};

struct ha_life_row {
    uint32_t key;            /* site, or collapsed stack (names) */
    uint32_t site;           /* its allocation site (names) */
    uint64_t samples;        /* sampled allocations behind it */
    double objects;          /* freed in the window, scaled */
    double bytes;
    double lifetime_ns[4];   /* p50, p90, p99, max */
    uint32_t free_site;      /* where most were freed (names); 0: none */
    double free_site_share;  /* of objects */
    uint32_t free_stack;     /* per stack: the collapsed free stack that
                                freed the most (names); 0: none */
    double other_thread_share;
    double temporary_share;  /* NAN: unknown */
};

struct ha_lifetimes {
    struct ha_life_row *rows;
    size_t n_rows;
    struct ha_strtab names;
    double seconds;          /* the window's duration */
    double objects, bytes;   /* every row's, summed */
    uint64_t samples;
    bool time_high;          /* the log's clock had ns resolution */
};

/* Builds the rows of log, whose traces are the stacks of p (as
 * ha_traces_as_heapv2 made it) symbolized by syms. Returns 0, or -1 with
 * err set (allocation failure). */
int ha_lifetimes_build(const struct ha_proflog *log, const struct ha_heapv2 *p,
                       const struct ha_syms *syms,
                       const struct ha_life_opts *opts,
                       struct ha_lifetimes *out, char *err, size_t errlen);

void ha_lifetimes_free(struct ha_lifetimes *l);

static inline const char *
ha_life_str(const struct ha_lifetimes *l, uint32_t off)
{
    return ha_strtab_str(&l->names, off);
}

#endif /* HA_LIFETIMES_H */
