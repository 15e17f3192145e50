/* SPDX-License-Identifier: MIT
 *
 * Latency histogram and the one-line result format shared by the load
 * generator (loadgen.c) and the loopback floor (floor.c), so both report
 * the same percentiles computed the same way.
 *
 * The histogram is log-linear, like HdrHistogram: values below 128 ns are
 * exact, above that each power of two is split into 64 sub-buckets, so a
 * reported percentile is within 1/64 (1.6%) of the true value. It is a
 * fixed array, so recording never allocates and a thread can record for
 * any duration in bounded memory. Each thread owns one; they are merged
 * after the threads are joined, so no locking or atomics are needed.
 */
#ifndef BENCH_LAT_H
#define BENCH_LAT_H

#include <stdint.h>
#include <stdio.h>

#define BENCH_LAT_SUB_BITS 6
#define BENCH_LAT_SUB (1u << BENCH_LAT_SUB_BITS)    /* sub-buckets/octave */
/* 2*SUB exact buckets, then SUB per octave for shifts 1..(63-SUB_BITS). */
#define BENCH_LAT_BUCKETS \
    (2 * BENCH_LAT_SUB + (63 - BENCH_LAT_SUB_BITS) * BENCH_LAT_SUB)

struct bench_lat {
    uint64_t count[BENCH_LAT_BUCKETS];  /* samples per bucket */
    uint64_t n;                         /* total samples */
    uint64_t errors;                    /* failed requests (not sampled) */
};

/* Monotonic clock in nanoseconds. */
uint64_t bench_lat_now_ns(void);

/* Adds one latency sample, in nanoseconds. */
void bench_lat_record(struct bench_lat *lat, uint64_t ns);

/* Adds every sample and error of src into dst. */
void bench_lat_merge(struct bench_lat *dst, const struct bench_lat *src);

/* The latency at quantile q (0 < q <= 1), in nanoseconds: the midpoint of
 * the bucket holding the ceil(q*n)-th smallest sample; 0 when empty. */
uint64_t bench_lat_quantile_ns(const struct bench_lat *lat, double q);

/* Prints the result line every bench tool ends with:
 *   qps=<q/s> p50_us=<µs> p99_us=<µs> errors=<n> queries=<n> conns=<n>
 *   seconds=<s>[ <extra>]
 * on one line to out. elapsed_ns is the measured interval (warm-up
 * excluded); extra (may be NULL) is more key=value pairs. bench/run
 * parses the line by key, so keys may be appended but never renamed. */
void bench_lat_print(FILE *out, const struct bench_lat *lat,
                     uint64_t elapsed_ns, int conns, const char *extra);

#endif /* BENCH_LAT_H */
