/* SPDX-License-Identifier: MIT
 *
 * Log-linear latency histogram and result line; see lat.h.
 */
#include "lat.h"

#include <math.h>
#include <time.h>

uint64_t
bench_lat_now_ns(void)
{
    struct timespec ts;

    /* MONOTONIC, not REALTIME: an NTP step mid-run must not become a
     * latency sample. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bucket of a value: exact below 2*SUB; above, the octave's shift times
 * SUB plus the top SUB_BITS+1 bits of the value (which lie in
 * [SUB, 2*SUB)), which packs the octaves contiguously after the exact
 * range. */
static unsigned
bucket_of(uint64_t ns)
{
    unsigned msb, shift;

    if (ns < 2 * BENCH_LAT_SUB)
        return (unsigned)ns;
    msb = 63u - (unsigned)__builtin_clzll(ns);
    shift = msb - BENCH_LAT_SUB_BITS;
    return shift * BENCH_LAT_SUB + (unsigned)(ns >> shift);
}

/* Midpoint of a bucket, in nanoseconds: the inverse of bucket_of(). */
static uint64_t
bucket_mid(unsigned idx)
{
    unsigned shift;
    uint64_t top;

    if (idx < 2 * BENCH_LAT_SUB)
        return idx;
    shift = idx / BENCH_LAT_SUB - 1;
    top = idx % BENCH_LAT_SUB + BENCH_LAT_SUB;
    return (top << shift) + ((uint64_t)1 << shift) / 2;
}

void
bench_lat_record(struct bench_lat *lat, uint64_t ns)
{
    lat->count[bucket_of(ns)]++;
    lat->n++;
}

void
bench_lat_merge(struct bench_lat *dst, const struct bench_lat *src)
{
    for (unsigned i = 0; i < BENCH_LAT_BUCKETS; i++)
        dst->count[i] += src->count[i];
    dst->n += src->n;
    dst->errors += src->errors;
}

uint64_t
bench_lat_quantile_ns(const struct bench_lat *lat, double q)
{
    uint64_t rank, seen = 0;

    if (lat->n == 0)
        return 0;
    rank = (uint64_t)ceil(q * (double)lat->n);
    if (rank < 1)
        rank = 1;
    for (unsigned i = 0; i < BENCH_LAT_BUCKETS; i++) {
        seen += lat->count[i];
        if (seen >= rank)
            return bucket_mid(i);
    }
    return bucket_mid(BENCH_LAT_BUCKETS - 1);
}

void
bench_lat_print(FILE *out, const struct bench_lat *lat, uint64_t elapsed_ns,
                int conns, const char *extra)
{
    double seconds = (double)elapsed_ns / 1e9;
    double qps = seconds > 0 ? (double)lat->n / seconds : 0;

    fprintf(out,
            "qps=%.1f p50_us=%.1f p99_us=%.1f errors=%llu queries=%llu "
            "conns=%d seconds=%.3f%s%s\n",
            qps, (double)bench_lat_quantile_ns(lat, 0.50) / 1000.0,
            (double)bench_lat_quantile_ns(lat, 0.99) / 1000.0,
            (unsigned long long)lat->errors, (unsigned long long)lat->n,
            conns, seconds, extra ? " " : "", extra ? extra : "");
    fflush(out);
}
