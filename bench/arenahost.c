/* SPDX-License-Identifier: MIT
 *
 * arenahost: a host with many populated jemalloc arenas, to price reading
 * jemalloc's per-arena and per-size-class statistics from it (bench/
 * stats-cost, with the LD_PRELOAD agent attached and
 * MALLOC_CONF=narenas:64). Every refresh of those statistics (the
 * "epoch" mallctl) visits each arena and takes each bin's lock in turn;
 * what that costs the host is measured here, from the inside:
 *
 *   - throughput: worker threads that malloc and free small blocks as
 *     fast as they can (a ring of LIVE blocks each, sizes 16..4096), ops
 *     per second over the measured window;
 *   - how long the host's threads waited for jemalloc's locks meanwhile:
 *     jemalloc's own mutex profiling (stats.arenas.<i>.bins.<j>.mutex.*
 *     and stats.arenas.<i>.mutexes.*), summed over every arena: total and
 *     longest wait, number of waits;
 *   - how long one refresh holds the host's allocator: the time of an
 *     "epoch" mallctl with every arena populated (mean and max of 200).
 *
 *   arenahost [-a ARENA_THREADS] [-w WORKERS] [-s SECONDS]
 *
 * ARENA_THREADS threads (default 64) each allocate a working set and
 * then sleep, so that many arenas hold slabs of many size classes; then
 * WORKERS threads (default 1) run the loop for SECONDS (default 10) after
 * a 2 s warm-up. Output, one line: ops_per_s=... wait_total_ns=...
 * wait_max_ns=... waits=... epoch_mean_us=... epoch_max_us=...
 * arenas=... Prints "ready" first, once the arenas are populated.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#define LIVE 4096          /* blocks a worker keeps */
#define WORKING_SET 3000   /* blocks an arena thread keeps */

static atomic_bool stop;
static atomic_ulong ops;
static pthread_barrier_t populated;
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static bool done;

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
next_rand(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void *
arena_thread(void *arg)
{
    void **keep = calloc(WORKING_SET, sizeof(*keep));
    uint64_t seed = (uintptr_t)arg * 2654435761u + 1;

    for (int i = 0; keep != NULL && i < WORKING_SET; i++) {
        size_t n = 16 + next_rand(&seed) % 4080;

        keep[i] = malloc(n);
        if (keep[i] != NULL)
            memset(keep[i], 1, n);
    }
    pthread_barrier_wait(&populated);
    pthread_mutex_lock(&done_mu);
    while (!done)
        pthread_cond_wait(&done_cv, &done_mu);
    pthread_mutex_unlock(&done_mu);
    for (int i = 0; keep != NULL && i < WORKING_SET; i++)
        free(keep[i]);
    free(keep);
    return NULL;
}

static void *
worker(void *arg)
{
    void **ring = calloc(LIVE, sizeof(*ring));
    uint64_t seed = (uintptr_t)arg * 40503u + 7;
    unsigned long n = 0;
    size_t i = 0;

    while (ring != NULL && !atomic_load_explicit(&stop, memory_order_relaxed)) {
        free(ring[i]);
        ring[i] = malloc(16 + next_rand(&seed) % 4080);
        if (ring[i] != NULL)
            *(volatile char *)ring[i] = 1;
        i = (i + 1) % LIVE;
        if (++n % 1024 == 0)
            atomic_fetch_add_explicit(&ops, 1024, memory_order_relaxed);
    }
    for (size_t k = 0; ring != NULL && k < LIVE; k++)
        free(ring[k]);
    free(ring);
    return NULL;
}

/* The host's lock waits so far, summed over every arena's bins and
 * arena-wide mutexes. */
struct waits {
    uint64_t total_ns, max_ns, n;
};

static void
add_mutex(const char *prefix, struct waits *w)
{
    char name[160];
    uint64_t v;
    size_t sz = sizeof(v);

    snprintf(name, sizeof(name), "%s.total_wait_time", prefix);
    if (mallctl(name, &v, &sz, NULL, 0) == 0)
        w->total_ns += v;
    snprintf(name, sizeof(name), "%s.max_wait_time", prefix);
    sz = sizeof(v);
    if (mallctl(name, &v, &sz, NULL, 0) == 0 && v > w->max_ns)
        w->max_ns = v;
    snprintf(name, sizeof(name), "%s.num_wait", prefix);
    sz = sizeof(v);
    if (mallctl(name, &v, &sz, NULL, 0) == 0)
        w->n += v;
}

static struct waits
read_waits(unsigned *n_arenas)
{
    static const char *const arena_mutexes[] = {
        "large", "extent_avail", "extents_dirty", "extents_muzzy",
        "extents_retained", "decay_dirty", "decay_muzzy", "base",
        "tcache_list",
    };
    struct waits w = {0, 0, 0};
    uint64_t epoch = 1;
    unsigned narenas = 0, nbins = 0;
    size_t sz = sizeof(epoch);
    char prefix[128];

    mallctl("epoch", NULL, NULL, &epoch, sz);
    sz = sizeof(narenas);
    mallctl("arenas.narenas", &narenas, &sz, NULL, 0);
    sz = sizeof(nbins);
    mallctl("arenas.nbins", &nbins, &sz, NULL, 0);
    *n_arenas = 0;
    for (unsigned i = 0; i < narenas; i++) {
        unsigned nthreads;

        snprintf(prefix, sizeof(prefix), "stats.arenas.%u.nthreads", i);
        sz = sizeof(nthreads);
        if (mallctl(prefix, &nthreads, &sz, NULL, 0) != 0)
            continue; /* not initialized */
        (*n_arenas)++;
        for (unsigned j = 0; j < nbins; j++) {
            snprintf(prefix, sizeof(prefix), "stats.arenas.%u.bins.%u.mutex",
                     i, j);
            add_mutex(prefix, &w);
        }
        for (size_t k = 0; k < sizeof(arena_mutexes) / sizeof(*arena_mutexes);
             k++) {
            snprintf(prefix, sizeof(prefix), "stats.arenas.%u.mutexes.%s", i,
                     arena_mutexes[k]);
            add_mutex(prefix, &w);
        }
    }
    return w;
}

int
main(int argc, char **argv)
{
    int arena_threads = 64, workers = 1, seconds = 10, opt;
    pthread_t *at, *wt;
    struct waits w0, w1;
    uint64_t t0, t1, ops0, ops1, emax = 0, esum = 0;
    unsigned narenas = 0;

    while ((opt = getopt(argc, argv, "a:w:s:")) != -1) {
        switch (opt) {
        case 'a':
            arena_threads = atoi(optarg);
            break;
        case 'w':
            workers = atoi(optarg);
            break;
        case 's':
            seconds = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: arenahost [-a N] [-w N] [-s SECONDS]\n");
            return 2;
        }
    }
    at = calloc((size_t)arena_threads, sizeof(*at));
    wt = calloc((size_t)workers, sizeof(*wt));
    if (at == NULL || wt == NULL)
        return 1;
    pthread_barrier_init(&populated, NULL, (unsigned)arena_threads + 1);
    for (int i = 0; i < arena_threads; i++)
        pthread_create(&at[i], NULL, arena_thread, (void *)(uintptr_t)i);
    pthread_barrier_wait(&populated);
    for (int i = 0; i < workers; i++)
        pthread_create(&wt[i], NULL, worker, (void *)(uintptr_t)i);
    printf("ready\n");
    fflush(stdout);

    sleep(2);
    w0 = read_waits(&narenas);
    ops0 = atomic_load(&ops);
    t0 = now_ns();
    sleep((unsigned)seconds);
    t1 = now_ns();
    ops1 = atomic_load(&ops);
    w1 = read_waits(&narenas);
    atomic_store(&stop, true);
    for (int i = 0; i < workers; i++)
        pthread_join(wt[i], NULL);

    /* One refresh with every arena populated, timed on its own. */
    for (int i = 0; i < 200; i++) {
        uint64_t e = 1, s = now_ns(), d;

        mallctl("epoch", NULL, NULL, &e, sizeof(e));
        d = now_ns() - s;
        esum += d;
        if (d > emax)
            emax = d;
    }
    printf("ops_per_s=%.0f wait_total_ns=%llu wait_max_ns=%llu waits=%llu "
           "epoch_mean_us=%.1f epoch_max_us=%.1f arenas=%u\n",
           (double)(ops1 - ops0) * 1e9 / (double)(t1 - t0),
           (unsigned long long)(w1.total_ns - w0.total_ns),
           (unsigned long long)w1.max_ns,
           (unsigned long long)(w1.n - w0.n), (double)esum / 200 / 1000,
           (double)emax / 1000, narenas);
    fflush(stdout);
    pthread_mutex_lock(&done_mu);
    done = true;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&done_mu);
    for (int i = 0; i < arena_threads; i++)
        pthread_join(at[i], NULL);
    return 0;
}
