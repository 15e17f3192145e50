/* SPDX-License-Identifier: MIT
 *
 * Memory by thread, from a parsed heap_v2 profile's per-thread lines
 * (prof/heapv2.h: the header's `t<uid>:` lines with their names, and
 * each backtrace's): which thread, or pool of threads of one name, holds
 * the memory, allocated it, or took part in a stack.
 *
 * A thread's figures are sums over backtraces of its share of each one's
 * scaled figures (jeprof's scaling, per backtrace): the thread line's raw
 * counter over the sum of that counter over the backtrace's thread lines
 * (ha_heapv2_stack_thread_sums). Summed over threads they give the
 * backtrace's figures back, and summed over backtraces the profile's
 * total, whatever jemalloc's per-line unbiasing did to the raw lines.
 * As integers (what the tables show), each figure of the whole profile
 * (its jeprof total, truncated as jeprof prints it) is shared out among
 * the threads by largest remainder, so per-thread integers add up to the
 * dump's total exactly.
 *
 * Pure: no I/O.
 */
#ifndef HA_THREADS_H
#define HA_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/heapv2.h"

/* One thread of a profile. */
struct ha_threads_row {
    bool has_uid;       /* false: the part of backtraces with no thread
                           line to share it (hostile input only) */
    uint64_t uid;       /* jemalloc's thread number */
    const char *name;   /* into the profile's names; NULL: none */
    double objs, bytes; /* in use, scaled shares */
    double accum_objs, accum_bytes; /* allocated since profiling began
                           (prof_accum), scaled shares; 0 without */
    long long i_objs, i_bytes;      /* the same as integers that add up */
    long long i_accum_objs, i_accum_bytes; /* to the profile's totals */
    uint32_t stacks; /* backtraces with a line of this thread */
};

/* Which threads a filter keeps. */
struct ha_threads_match {
    bool by_uid; /* uid, else every thread named name */
    uint64_t uid;
    const char *name; /* NULL or "": threads with no name */
};

/* The threads of p: one row per thread of the header (uid order), then
 * any uid only backtraces name, then the unattributed part when there is
 * one. *rows is malloc'd (free it); names point into p. Returns 0, or
 * -1 on allocation failure. */
int ha_threads_rows(const struct ha_heapv2 *p, struct ha_threads_row **rows,
                    size_t *n);

/* Whether thread line tl of p (its uid, and the header's name for it)
 * is one m keeps. */
bool ha_threads_matches(const struct ha_heapv2 *p,
                        const struct ha_heapv2_tline *tl,
                        const struct ha_threads_match *m);

/* The share of backtrace s of p that the threads m keeps hold, per
 * counter (objs, bytes, accum_objs, accum_bytes: 0..1 each). */
void ha_threads_stack_share(const struct ha_heapv2 *p, size_t s,
                            const struct ha_threads_match *m, double share[4]);

/* p restricted to the threads m keeps, into *out (zeroed first): every
 * backtrace with any share, its scaled figures (and raw counters, cut
 * the same way) multiplied by that share, its thread lines those of the
 * kept threads; the header and frames as in p, so the same symbols read
 * it. Free with ha_heapv2_free. Returns 0, or -1 on allocation
 * failure. */
int ha_threads_filter(const struct ha_heapv2 *p,
                      const struct ha_threads_match *m, struct ha_heapv2 *out);

/* One name's part of a backtrace (ha_threads_split). */
struct ha_threads_part {
    const char *name; /* NULL: threads with no name */
    int64_t v[4];     /* the totals' share: objs, bytes, accum_objs,
                         accum_bytes */
};

/* Backtrace s of p split by thread name: the integers totals[0..3]
 * (objs, bytes, accum_objs, accum_bytes, as the caller rounded them)
 * shared out among the names of its thread lines by largest remainder,
 * so the parts add up to the totals; a part of threads with no name
 * gets name NULL. parts must hold st->n_threads + 1 entries; *n gets
 * how many were written (at least 1: a backtrace with no thread lines
 * is one unnamed part). Returns 0, or -1 on allocation failure. */
int ha_threads_split(const struct ha_heapv2 *p, size_t s,
                     const int64_t totals[4], struct ha_threads_part *parts,
                     size_t *n);

/* Shares the integer total (>= 0) among n weights (w[i] >= 0) by largest
 * remainder into out[], so out adds up to total exactly when the
 * weights' sum is positive (else every out[i] is 0). Returns 0, or -1 on
 * allocation failure. */
int ha_threads_apportion(long long total, const double *w, size_t n,
                         long long *out);

#endif /* HA_THREADS_H */
