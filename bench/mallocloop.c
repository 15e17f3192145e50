/* SPDX-License-Identifier: MIT
 *
 * A malloc-heavy loop, to price jemalloc's profiler when it is compiled
 * in and enabled but switched off: MALLOC_CONF=prof:true,prof_active:false
 * (what heapadmind needs so prof_active can be toggled at run time)
 * against prof:false. jemalloc documents the inactive cost as small;
 * bench/run runs this both ways and reports the ratio.
 *
 *   MALLOC_CONF=... mallocloop [-n ops] [-r rounds]
 *
 * One op is one malloc of a pseudo-random small size (16..4096 bytes)
 * plus the free of the block allocated LIVE ops earlier, so the heap
 * holds a steady working set instead of recycling one block from the
 * tcache. Each round runs n ops; the fastest round is reported, since
 * noise on a shared machine only ever adds time.
 *
 * Output: ns_per_op=<ns> ops=<n> rounds=<r> opt_prof=<bool>
 *         prof_active=<bool>, read back from mallctl so a MALLOC_CONF
 *         that jemalloc ignored cannot pass for a measurement.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#define MALLOCLOOP_LIVE 4096u           /* blocks alive at once */
#define MALLOCLOOP_MIN_SIZE 16u         /* bytes */
#define MALLOCLOOP_MAX_SIZE 4096u       /* bytes */

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64: a size sequence that is the same on every run and costs a
 * few cycles, unlike rand(), which takes a lock. */
static uint64_t
next_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

/* Runs ops malloc/free pairs over ring. Returns elapsed nanoseconds. The
 * checksum keeps the compiler from deleting the allocations. */
static uint64_t
run_round(void **ring, unsigned long long ops, uint64_t *checksum)
{
    uint64_t state = 0x9e3779b97f4a7c15u;
    uint64_t t0 = now_ns();

    for (unsigned long long i = 0; i < ops; i++) {
        unsigned slot = (unsigned)(i % MALLOCLOOP_LIVE);
        size_t size = MALLOCLOOP_MIN_SIZE +
                      next_rand(&state) %
                          (MALLOCLOOP_MAX_SIZE - MALLOCLOOP_MIN_SIZE + 1);

        free(ring[slot]);
        ring[slot] = malloc(size);
        if (ring[slot] == NULL) {
            fprintf(stderr, "mallocloop: out of memory\n");
            exit(EXIT_FAILURE);
        }
        /* Touch the block, as a real caller would. */
        *(volatile char *)ring[slot] = (char)i;
        *checksum += (uintptr_t)ring[slot] & 0xff;
    }
    return now_ns() - t0;
}

static bool
read_bool(const char *name)
{
    bool v = false;
    size_t len = sizeof(v);

    /* ENOENT means jemalloc was built without profiling: report false. */
    if (mallctl(name, &v, &len, NULL, 0) != 0)
        return false;
    return v;
}

int
main(int argc, char **argv)
{
    unsigned long long ops = 2000000;
    unsigned rounds = 5;
    uint64_t best = UINT64_MAX, checksum = 0;
    void **ring;
    int c;

    while ((c = getopt(argc, argv, "n:r:")) != -1) {
        char *end;

        errno = 0;
        if (c == 'n')
            ops = strtoull(optarg, &end, 10);
        else if (c == 'r')
            rounds = (unsigned)strtoul(optarg, &end, 10);
        else
            goto usage;
        if (errno != 0 || *end != '\0' || ops == 0 || rounds == 0)
            goto usage;
    }
    if (optind != argc)
        goto usage;

    ring = calloc(MALLOCLOOP_LIVE, sizeof(*ring));
    if (ring == NULL)
        return EXIT_FAILURE;
    /* One unmeasured round fills the ring and faults the pages in. */
    run_round(ring, MALLOCLOOP_LIVE * 4ull, &checksum);
    for (unsigned r = 0; r < rounds; r++) {
        uint64_t ns = run_round(ring, ops, &checksum);

        if (ns < best)
            best = ns;
    }
    for (unsigned i = 0; i < MALLOCLOOP_LIVE; i++)
        free(ring[i]);
    free(ring);

    printf("ns_per_op=%.2f ops=%llu rounds=%u opt_prof=%s prof_active=%s "
           "checksum=%llu\n",
           (double)best / (double)ops, ops, rounds,
           read_bool("opt.prof") ? "true" : "false",
           read_bool("prof.active") ? "true" : "false",
           (unsigned long long)checksum);
    return EXIT_SUCCESS;

usage:
    fprintf(stderr, "usage: mallocloop [-n ops] [-r rounds]\n");
    return 2;
}
