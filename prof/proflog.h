/* SPDX-License-Identifier: MIT
 *
 * jemalloc 5.3's prof_log file (prof.log_start / prof.log_stop; writer
 * prof_log_emit_* in src/prof_log.c), read into arrays. While a log is
 * started jemalloc records every *sampled* allocation that is *freed*,
 * and writes them at the stop as one compact JSON object:
 *
 *   {"info": {"duration": <ns since log_start>, "version": "...",
 *             "lg_sample_rate": <lg>, "prof_time_resolution":
 *             "default" | "high", "pid": <pid>},
 *    "threads": [{"thr_uid": <uid>, "thr_name": "..."}, ...],
 *    "stack_traces": [["0x...", ...], ...],     allocation site first
 *    "allocations": [{"alloc_thread": <i>, "free_thread": <i>,
 *                     "alloc_trace": <i>, "free_trace": <i>,
 *                     "alloc_timestamp": <ns>, "free_timestamp": <ns>,
 *                     "usize": <bytes>}, ...]}   in the order freed
 *
 * The thread and trace fields are indices into "threads" and
 * "stack_traces". Timestamps come from jemalloc's profiling clock:
 * CLOCK_MONOTONIC_COARSE (ticks of a few ms) unless the process started
 * with prof_time_resolution:high (CLOCK_REALTIME, ns). Objects allocated before
 * the start and freed in the window are in it; objects still live at the
 * stop are not (a heap dump covers those). A free on a thread that has
 * never had a sampled allocation of its own is not logged by jemalloc
 * (it has no profiling data to log it with).
 *
 * Trust: safe on hostile input (prof/json.h); every index is checked
 * against its array, every number range-checked, memory is O(len). An
 * error names the byte offset and what was expected, never the content.
 *
 * Pure: no I/O.
 */
#ifndef HA_PROFLOG_H
#define HA_PROFLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/syms.h"
#include "prof/traces.h"

/* Largest log accepted (a ten-minute window of a busy host at a high
 * sampling rate stays far below). */
#define HA_PROFLOG_MAX_LEN (1024u * 1024u * 1024u)

struct ha_proflog_thread {
    uint64_t uid;      /* jemalloc's thread uid */
    uint32_t name;     /* in ha_proflog.names; 0 = "" */
};

struct ha_proflog_alloc {
    uint32_t alloc_thread; /* index into threads */
    uint32_t free_thread;
    uint32_t alloc_trace;  /* index into traces */
    uint32_t free_trace;
    uint64_t alloc_ns;     /* jemalloc's profiling clock */
    uint64_t free_ns;
    uint64_t usize;        /* usable size, bytes */
};

struct ha_proflog {
    bool has_info;
    uint64_t duration_ns;      /* from log_start to the stop */
    int lg_sample;             /* lg_sample_rate: period 2^lg bytes */
    bool time_high;            /* prof_time_resolution "high" */
    int64_t pid;
    char version[80];          /* jemalloc's version */

    struct ha_proflog_thread *threads;
    size_t n_threads;
    struct ha_strtab names;    /* thread names */
    struct ha_traces traces;   /* stack_traces, in the document's order */
    struct ha_proflog_alloc *allocs;
    size_t n_allocs;
};

/* Parses buf[0 .. len) into *out (zeroed first). Returns 0, or -1 with
 * "byte N: expected ..." (or the allocation and index that is out of
 * range) in err and *out empty. */
int ha_proflog_parse(const char *buf, size_t len, struct ha_proflog *out,
                     char *err, size_t errlen);

void ha_proflog_free(struct ha_proflog *p);

/* The sample period of the log's samples, 2^lg_sample bytes (0 when the
 * log has no info, or lg_sample is out of range). */
uint64_t ha_proflog_period(const struct ha_proflog *p);

/* How many objects one sample of usize bytes stands for: the same
 * scaling jeprof applies to a heap dump's samples (ha_heapv2_scale for
 * one object), 1 with period 0. */
double ha_proflog_weight(uint64_t period, uint64_t usize);

/* The tick of the log's clock in ns: 1 with prof_time_resolution
 * "high"; for jemalloc's default clock (CLOCK_MONOTONIC_COARSE, whose
 * readings move a tick at a time) the smallest step between two of its
 * timestamps, 0 when it has fewer than two distinct ones. */
uint64_t ha_proflog_tick_ns(const struct ha_proflog *p);

/* A thread's name ("" when none was recorded). */
static inline const char *
ha_proflog_thread_name(const struct ha_proflog *p, size_t i)
{
    return ha_strtab_str(&p->names, p->threads[i].name);
}

/* ------------------------------------------------------------------ */
/* The window's side file                                              */
/* ------------------------------------------------------------------ */

/* `<log>.window`, written beside a log heapadmin published: what the log
 * itself does not say about its window. "key=value" lines, '#' comments,
 * unknown keys ignored:
 *   opened_ns=<unix ns>       closed_ns=<unix ns>
 *   seconds=<asked for>       closed_by=time|memory|operator|stop|exit
 *   alloc_requests=<n>        the process's allocation requests in the
 *                             window (jemalloc's small and large
 *                             nrequests over every arena)
 *   internal_bytes=<n>        jemalloc's memory the log held at the end
 *   clock_tick_ns=<n>         the resolution of the clock jemalloc
 *                             stamped it with (clock_getres: 1 for
 *                             CLOCK_REALTIME, the tick of
 *                             CLOCK_MONOTONIC_COARSE)
 */
struct ha_proflog_window {
    int64_t opened_ns, closed_ns;  /* 0: not recorded */
    long long seconds;
    long long alloc_requests;      /* -1: not recorded */
    long long internal_bytes;      /* -1: not recorded */
    long long clock_tick_ns;       /* 0: not recorded */
    char closed_by[16];
};

/* Reads a window side file (zeroing *w first; unknown figures stay -1 or
 * 0). Returns 0, or -1 with "window line N: expected ..." in err. */
int ha_proflog_window_parse(const char *buf, size_t len,
                            struct ha_proflog_window *w, char *err,
                            size_t errlen);

#endif /* HA_PROFLOG_H */
