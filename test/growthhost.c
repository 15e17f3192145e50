/* SPDX-License-Identifier: MIT
 *
 * growthhost: a host for test/integration/growth.sh, embedding heapadmin
 * through its public header as a service would (heapadmin_start: the
 * admin port on a thread of its own), whose memory does four things on
 * its own timer (a 100 ms tick on the main thread), each from a function
 * of its own so heap profiles tell them apart:
 *
 *   growthhost_leak      leaks steadily: 1 MiB a second in 1000-byte
 *                        blocks, never freed;
 *   growthhost_burst     every 4 s allocates 8 MiB in 32 KiB blocks,
 *                        holds them 1.5 s, frees them all;
 *   growthhost_oneoff    once, GROWTHHOST_ONEOFF_S seconds in, allocates
 *                        12 MiB and keeps it;
 *   growthhost_fragment  at start, fills 32 MiB of slabs of the 64-byte
 *                        class and frees 31 of every 32 regions: slabs
 *                        about 3% used that jemalloc cannot give back;
 *   growthhost_temp      churns: 2000 blocks of 512 bytes a second, each
 *                        freed right after it was made, before anything
 *                        else is allocated (heaptrack's "temporary
 *                        allocation"); it never holds memory.
 *
 * Known rates, for the allocation views (test/integration/churn.sh): the
 * burst allocates 2 MiB/s (8 MiB per 4 s) and frees it all, each block
 * living 1.5 s; the leak allocates 1 MiB/s and frees nothing; the temp
 * site allocates 1000 KiB/s and frees it at once. Each burst prints
 * "burst <n>" when it starts, so a test can time its dumps between
 * bursts.
 *
 *   growthhost -c CONFIG [-n] [-w] runs until SIGTERM or SIGINT, exits
 *                             0; -n skips the fragment step (512 Ki
 *                             allocations at start), for a tool that
 *                             counts every call from launch (heaptrack);
 *                             -w holds the first tick until SIGUSR1
 *                             (a test that looks at the start first,
 *                             however slowly, then lets it grow)
 *   growthhost -a [-w]        the same without heapadmin embedded: for
 *                             the LD_PRELOAD agent to serve (-w: a test
 *                             lets it grow once the agent answers)
 *
 * Environment, for the memory-limit tests (test/agent/oomkill.sh):
 *   GROWTHHOST_LEAK_X=N       the leak N times as fast (0: none)
 *   GROWTHHOST_BURST=0        no bursts: memory only climbs, a step at a
 *                             time
 *   GROWTHHOST_TICK_MS=N      a tick every N ms (1..100) with the leak's
 *                             share of it: the same rate in finer steps
 *                             (a fill of 100 MB/s in 1 MiB steps at 10)
 *   GROWTHHOST_ROUND=N        at start, N objects of 33 bytes from
 *                             growthhost_round33 (kept): rounded up to
 *                             the 48-byte class, 15 bytes lost each
 *
 * Every block is written (so its pages are resident) and kept in a
 * volatile array: GCC drops allocations it can prove unused. It prints
 * "ready" once the admin port listens.
 */
#include <heapadmin.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

HEAPADMIN_DEFINE_MALLOC_CONF;

#define TICK_MS 100
#define LEAK_BLOCK 1000                /* bytes */
#define LEAK_PER_TICK 105              /* ~1 MiB/s */
#define LEAK_MAX (LEAK_PER_TICK * 10 * 600) /* ten minutes' worth */
#define BURST_BLOCK (32 << 10)
#define BURST_BLOCKS 256               /* 8 MiB */
#define BURST_EVERY_TICKS 40           /* 4 s */
#define BURST_HOLD_TICKS 15            /* 1.5 s */
#define ONEOFF_BYTES (12 << 20)
#define ONEOFF_TICK 200                /* 20 s */
#define FRAG_SIZE 64
#define FRAG_COUNT (512 * 1024)        /* 32 MiB of 64-byte regions */
#define FRAG_KEEP_EVERY 32
#define TEMP_BLOCK 512
#define TEMP_PER_TICK 200              /* 2000/s */

static char *volatile leaked[LEAK_MAX];
static int leak_x = 1;
static long tick_ms = TICK_MS;
static int bursts = 1;
static char *volatile burst[BURST_BLOCKS];
static char *volatile oneoff;
static char *volatile *frag;

__attribute__((noinline)) char *
growthhost_leak(size_t n)
{
    char *p = malloc(n);

    if (p != NULL)
        memset(p, 'l', n);
    return p;
}

__attribute__((noinline)) char *
growthhost_burst(size_t n)
{
    char *p = malloc(n);

    if (p != NULL)
        memset(p, 'b', n);
    return p;
}

__attribute__((noinline)) char *
growthhost_oneoff(size_t n)
{
    char *p = malloc(n);

    if (p != NULL)
        memset(p, 'o', n);
    return p;
}

__attribute__((noinline)) char *
growthhost_fragment(size_t n)
{
    char *p = malloc(n);

    if (p != NULL)
        memset(p, 'f', n);
    return p;
}

/* One block made, written, read back and freed: nothing is allocated in
 * between. */
__attribute__((noinline)) size_t
growthhost_temp(size_t n)
{
    char *volatile p = malloc(n);
    size_t sum = 0;

    if (p == NULL)
        return 0;
    memset(p, 't', n);
    sum = (size_t)p[n / 2];
    free(p);
    return sum;
}

__attribute__((noinline)) char *
growthhost_round33(void)
{
    char *p = malloc(33);

    if (p != NULL)
        memset(p, 'r', 33);
    return p;
}

/* n objects of 33 bytes, kept: the 48-byte class's rounding waste. */
static void
round33(size_t n)
{
    char *volatile *keep = calloc(n ? n : 1, sizeof(*keep));

    for (size_t i = 0; keep != NULL && i < n; i++)
        keep[i] = growthhost_round33();
}

/* Fills the 64-byte class, then frees all but one region in 32. */
static void
fragment(void)
{
    frag = calloc(FRAG_COUNT, sizeof(*frag));
    if (frag == NULL)
        return;
    for (size_t i = 0; i < FRAG_COUNT; i++)
        frag[i] = growthhost_fragment(FRAG_SIZE);
    for (size_t i = 0; i < FRAG_COUNT; i++)
        if (i % FRAG_KEEP_EVERY != 0) {
            free(frag[i]);
            frag[i] = NULL;
        }
}

static void
tick(unsigned long t, size_t *n_leaked)
{
    unsigned long phase = t % BURST_EVERY_TICKS;
    long n = (long)LEAK_PER_TICK * leak_x * tick_ms / TICK_MS;

    static volatile size_t temp_sum;

    for (long i = 0; i < n && *n_leaked < LEAK_MAX; i++)
        leaked[(*n_leaked)++] = growthhost_leak(LEAK_BLOCK);
    for (int i = 0; i < TEMP_PER_TICK; i++)
        temp_sum += growthhost_temp(TEMP_BLOCK);
    if (phase == 0 && bursts) {
        printf("burst %lu\n", t / BURST_EVERY_TICKS);
        fflush(stdout);
        for (int i = 0; i < BURST_BLOCKS; i++)
            burst[i] = growthhost_burst(BURST_BLOCK);
    } else if (phase == BURST_HOLD_TICKS && bursts) {
        for (int i = 0; i < BURST_BLOCKS; i++) {
            free(burst[i]);
            burst[i] = NULL;
        }
    }
    if (t == ONEOFF_TICK)
        oneoff = growthhost_oneoff(ONEOFF_BYTES);
}

int
main(int argc, char **argv)
{
    struct heapadmin_options opt;
    struct heapadmin *ha = NULL;
    struct timespec next;
    unsigned long t = 0;
    size_t n_leaked = 0;
    sigset_t sigs, go;
    bool no_fragment = false, hold = false, agent;
    char err[512];

    memset(&opt, 0, sizeof(opt));
    agent = argc >= 2 && strcmp(argv[1], "-a") == 0;
    if (!agent && (argc < 3 || strcmp(argv[1], "-c") != 0)) {
        fprintf(stderr, "usage: growthhost -c CONFIG [-n] [-w] | -a [-w]\n");
        return 2;
    }
    for (int i = agent ? 2 : 3; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && !agent) {
            no_fragment = true;
        } else if (strcmp(argv[i], "-w") == 0) {
            hold = true;
        } else {
            fprintf(stderr,
                    "usage: growthhost -c CONFIG [-n] [-w] | -a [-w]\n");
            return 2;
        }
    }
    if (getenv("GROWTHHOST_LEAK_X") != NULL)
        leak_x = atoi(getenv("GROWTHHOST_LEAK_X"));
    if (getenv("GROWTHHOST_BURST") != NULL)
        bursts = atoi(getenv("GROWTHHOST_BURST"));
    if (getenv("GROWTHHOST_TICK_MS") != NULL)
        tick_ms = atol(getenv("GROWTHHOST_TICK_MS"));
    if (tick_ms < 1 || tick_ms > TICK_MS)
        tick_ms = TICK_MS;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigemptyset(&go);
    sigaddset(&go, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    pthread_sigmask(SIG_BLOCK, &go, NULL);
    if (!agent) {
        opt.config_file = argv[2];
        if (heapadmin_new(&opt, &ha, err, sizeof(err)) != 0) {
            fprintf(stderr, "growthhost: %s\n", err);
            return 1;
        }
    }
    /* Before heapadmin's first memory sample: the 32 MiB it leaves
     * resident is where the host starts, not growth a watch should see
     * (on a loaded machine the first sample came before it was done,
     * and the leak watch fired at start: leakwatch.sh #2). */
    if (!no_fragment)
        fragment();
    if (getenv("GROWTHHOST_ROUND") != NULL)
        round33((size_t)strtoul(getenv("GROWTHHOST_ROUND"), NULL, 10));
    if (!agent && heapadmin_start(ha, err, sizeof(err)) != 0) {
        fprintf(stderr, "growthhost: %s\n", err);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    if (hold) {
        int sig = 0;

        sigaddset(&go, SIGTERM);
        sigaddset(&go, SIGINT);
        if (sigwait(&go, &sig) != 0 || sig != SIGUSR1) {
            heapadmin_free(ha);
            return 0;
        }
    }

    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        struct timespec zero = {0, 0};

        if (sigtimedwait(&sigs, NULL, &zero) > 0)
            break;
        tick(t++, &n_leaked);
        next.tv_nsec += tick_ms * 1000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    if (ha != NULL)
        heapadmin_free(ha);
    printf("stopped after %lu ticks, %zu blocks leaked\n", t, n_leaked);
    return 0;
}
