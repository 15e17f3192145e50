/* SPDX-License-Identifier: MIT
 *
 * How long objects live, per allocation site or per stack, from a
 * prof_log window (prof/proflog.h): what was freed in the window, how
 * fast, after how long, where and by whom, and how much of it was
 * temporary.
 *
 * Per row, over the sampled allocations whose allocation trace has that
 * site (the allocation-site rule of heap_top, prof/aggregate.h) or that
 * collapsed stack:
 *   objects, bytes   freed in the window, scaled as jeprof scales
 *                    samples: a sample of usize u stands for
 *                    w = 1/(1-exp(-u/period)) objects of u bytes;
 *   per second       those over the window's duration;
 *   lifetime         free time minus allocation time, p50/p90/p99/max,
 *                    percentiles of objects (each sample weighted by w).
 *                    As precise as jemalloc's profiling clock: with
 *                    prof_time_resolution:high it is CLOCK_REALTIME (ns);
 *                    by default CLOCK_MONOTONIC_COARSE, whose readings
 *                    move a tick at a time (4 ms on a HZ=250 kernel), so
 *                    a lifetime of 0 ticks is "under one tick": NAN here,
 *                    never 0. With the fine clock a lifetime also holds
 *                    some of jemalloc's work for the sampled object and
 *                    all of it for every other sampled allocation or
 *                    free inside it (a backtrace and a log record: about
 *                    3 us each on Debian 12);
 *   free site        the free trace's first frame after the
 *                    deallocator's (the same cut), the one that freed
 *                    the most objects, and its share;
 *   other thread     the share of objects freed by a thread other than
 *                    the one that allocated them;
 *   temporary        an object freed before the process made any other
 *                    allocation or free (on any thread): heaptrack's
 *                    "temporary allocation" as its manual defines it.
 *                    heaptrack 1.4's code (heaptrack_print) tests less:
 *                    a free counts when the allocation just before it
 *                    had the same size and stack, the same object or
 *                    not, so it also counts a value freed right after
 *                    its replacement was made (redis overwriting a
 *                    3-byte value with SET: 49,999 of 50,000). Not that.
 *
 * The temporary share is estimated from what the log shows, as follows.
 * k(X) is the number of other allocations and frees of the process
 * during object X's life; X is temporary when k(X) = 0.
 *   1. Evidence: another logged allocation or free whose timestamp lies
 *      strictly inside X's life proves k(X) >= 1. Logged events are a
 *      sample: each stands for w events like it (Horvitz-Thompson), so
 *      k^(X) = sum of their w is an unbiased count of the events inside.
 *      Not inside, as heaptrack orders a realloc (free, then malloc):
 *      the new block of the realloc that freed X, and the old block
 *      freed by the realloc that made X (same thread, next to X's own
 *      event, same stack past the allocator's frames).
 *      With the coarse clock only events in the ticks strictly between
 *      X's allocation and free can be placed (k^ is scaled up by that
 *      share of its life, (d-1)/d for d ticks), plus the frees
 *      logged before X's in X's own free tick (allocations[] is in the
 *      order of the frees: prof_try_log appends under log_mtx).
 *   2. Model: within a path (one allocation trace and one free trace)
 *      the program runs the same code between allocation and free, so
 *      its objects hold about the same number of events. With M the
 *      path's mean k^, its temporary share is max(0, 1 - M): exact when
 *      the path's other objects each hold one event, a lower bound when
 *      they hold more (measured on redis-server 7.0: paths are all or
 *      nothing, e.g. an iterator freed at once, or argv strings holding
 *      2 to 9 events). A Poisson model on the process's event rate is
 *      not used: events come in bursts (argv strings of 1 us hold 2 or
 *      more events while the window's mean rate predicts 0.4).
 *   3. Range: M is known as well as its sightings S (the logged events
 *      counted inside) allow: their 95% Poisson range, scaled; with none
 *      seen, M is at most what one event per object would have shown
 *      3.7 times (at the sampling chance p of a typical event: the
 *      weighted median of 1/w over the logged events), so a path needs
 *      about 74/p samples to be called all temporary within 0.05. The
 *      share's range is 1 - M's, capped at 1 minus the proven share.
 *      Objects too short for the coarse clock to place an event in
 *      (under two ticks) range from 0 to 1.
 *   The row's share and range are its paths' weighted by objects. A
 *   range wider than HA_LIFE_TOLERANCE gets a reason (why: the cause that
 *   widened it most); wider than HA_LIFE_UNKNOWN, the share is NAN.
 * Assumptions, besides the per-path one: the sampling of one object does
 * not depend on another's (jemalloc's byte-counted sampling is
 * memoryless); allocations still live when the window closes are not in
 * the log, so an object whose life holds only such allocations looks
 * temporary; heaptrack's size+stack quirk above is not modelled.
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

/* The normal quantile of the ranges: 95% two-sided. */
#define HA_LIFE_Z 1.96
/* A range of temporary shares wider than this gets a note (why), ... */
#define HA_LIFE_TOLERANCE 0.05
/* ... and wider than this no share at all: the window cannot tell. */
#define HA_LIFE_UNKNOWN 0.5

struct ha_life_opts {
    bool per_stack;        /* key by collapsed allocation stack, not by
                              allocation site */
    uint64_t tick_ns;      /* the default clock's tick, when the log's
                              clock is not "high"; 0: take it from the
                              log (ha_proflog_tick_ns), else 4 ms */
};

/* Why a row's temporary share is unknown. */
enum ha_life_why {
    HA_LIFE_KNOWN,         /* temporary_share is a number */
    HA_LIFE_SUBTICK,       /* lives too short for the coarse clock */
    HA_LIFE_FEW,           /* too few samples to see an event */
    HA_LIFE_WHY_MAX
};

struct ha_life_row {
    uint32_t key;            /* site, or collapsed stack (names) */
    uint32_t site;           /* its allocation site (names) */
    uint64_t samples;        /* sampled allocations behind it */
    double objects;          /* freed in the window, scaled */
    double bytes;
    double lifetime_ns[4];   /* p50, p90, p99, max; NAN: under one tick
                                of the coarse clock */
    uint32_t free_site;      /* where most were freed (names); 0: none */
    double free_site_share;  /* of objects */
    uint32_t free_stack;     /* per stack: the collapsed free stack that
                                freed the most (names); 0: none */
    double other_thread_share;
    double temporary_share;  /* NAN: the range is wider than
                                HA_LIFE_UNKNOWN */
    double temporary_min;    /* the range the evidence leaves (95%) */
    double temporary_max;
    enum ha_life_why why;    /* HA_LIFE_KNOWN unless the range is wider
                                than HA_LIFE_TOLERANCE: what widened it
                                most */
    uint64_t subtick;        /* samples too short for the clock to place
                                an event in (coarse clock) */
    double sightings;        /* over its uncertain paths: how many events
                                their samples would have shown had each
                                object held one */
};

struct ha_lifetimes {
    struct ha_life_row *rows;
    size_t n_rows;
    struct ha_strtab names;
    double seconds;          /* the window's duration */
    double objects, bytes;   /* every row's, summed */
    uint64_t samples;
    bool time_high;          /* the log's clock had ns resolution */
    uint64_t tick_ns;        /* the clock's resolution: 1 (high), or
                                the coarse clock's tick */
    double p_event;          /* sampling chance of a typical event */
    double temporary_share;  /* over every row; NAN when the range is
                                wider than HA_LIFE_UNKNOWN */
    double temporary_min, temporary_max;
};

/* Builds the rows of log, whose traces are the stacks of p (as
 * ha_traces_as_heapv2 made it) symbolized by syms. Returns 0, or -1 with
 * err set (allocation failure). */
int ha_lifetimes_build(const struct ha_proflog *log, const struct ha_heapv2 *p,
                       const struct ha_syms *syms,
                       const struct ha_life_opts *opts,
                       struct ha_lifetimes *out, char *err, size_t errlen);

void ha_lifetimes_free(struct ha_lifetimes *l);

/* Why a row's temporary share is uncertain (why != HA_LIFE_KNOWN), as
 * one sentence into out (outlen bytes), with its range when a share is
 * given; "" when it is known within HA_LIFE_TOLERANCE. */
void ha_lifetimes_note(const struct ha_lifetimes *l,
                       const struct ha_life_row *r, char *out,
                       size_t outlen);

static inline const char *
ha_life_str(const struct ha_lifetimes *l, uint32_t off)
{
    return ha_strtab_str(&l->names, off);
}

#endif /* HA_LIFETIMES_H */
