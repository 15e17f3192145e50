/* SPDX-License-Identifier: MIT
 *
 * A jemalloc host for heapadmin-attach's tests (test/agent/attach.sh),
 * which builds it four ways: linked with libjemalloc.so, with
 * libjemalloc_pic.a exported (-rdynamic, or mallctl alone with
 * --export-dynamic-symbol), and with libjemalloc_pic.a not exported.
 * Before it says "ready" it allocates, and keeps, from two call sites of
 * its own: keep_large() 768 blocks of 64 KiB (48 MiB) and keep_small()
 * 1024 blocks of 4 KiB (4 MiB), both jemalloc size classes, so with
 * MALLOC_CONF=prof:true,lg_prof_sample:0 (every allocation sampled) a
 * heap profile taken after the attach holds exactly 50331648 and
 * 4194304 bytes at those sites.
 *
 *   attachhost loop     an event loop: epoll_wait (100 ms) on a pipe,
 *                       for ever
 *   attachhost regs     the main thread waits in raw nanosleep system
 *                       calls (20 ms) with known values in rbx, r12-r15
 *                       and xmm15 and the C library's errno, checked
 *                       after each: an attach taken there must give
 *                       every one of them back (a mismatch: "ANOMALY"
 *                       on stderr, exit 3)
 *   attachhost nodump   prctl(PR_SET_DUMPABLE, 0), then loop
 *
 * SIGTERM ends it with exit 0 (a handler, so a signal the injector held
 * and sent again is seen to arrive).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LARGE_N 768
#define LARGE_SIZE 65536
#define SMALL_N 1024
#define SMALL_SIZE 4096

static void *large[LARGE_N], *small[SMALL_N];
static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
    (void)sig;
    stop = 1;
}

__attribute__((noinline)) static void
keep_large(void)
{
    for (int i = 0; i < LARGE_N; i++) {
        large[i] = malloc(LARGE_SIZE);
        memset(large[i], 1, LARGE_SIZE);
    }
}

__attribute__((noinline)) static void
keep_small(void)
{
    for (int i = 0; i < SMALL_N; i++) {
        small[i] = malloc(SMALL_SIZE);
        memset(small[i], 2, SMALL_SIZE);
    }
}

static int
loop(void)
{
    int p[2], ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};

    if (pipe(p) != 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev))
        return 1;
    while (!stop) {
        struct epoll_event out;
        int n = epoll_wait(ep, &out, 1, 100);

        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "ANOMALY: epoll_wait: %s\n", strerror(errno));
            return 3;
        }
        free(malloc(100)); /* a little churn each turn */
    }
    return 0;
}

/* One raw nanosleep of 20 ms with known values in the registers a
 * function call would not keep (xmm15) or would (rbx, r12-r15); 0 when
 * all came back, the kernel's result in *ret. */
static int
raw_sleep(long *ret)
{
    static const struct timespec ts = {0, 20000000};
    uint64_t want = 0x1122334455667788ull, x = 0, b = 0, r12 = 0, r13 = 0,
             r14 = 0, r15 = 0;
    long r;

    __asm__ volatile("movq %[w], %%xmm15\n\t"
                     "movq %[w], %%rbx\n\t"
                     "movq %[w], %%r12\n\t"
                     "movq %[w], %%r13\n\t"
                     "movq %[w], %%r14\n\t"
                     "movq %[w], %%r15\n\t"
                     "syscall\n\t"
                     "movq %%xmm15, %[x]\n\t"
                     "movq %%rbx, %[b]\n\t"
                     "movq %%r12, %[r12]\n\t"
                     "movq %%r13, %[r13]\n\t"
                     "movq %%r14, %[r14]\n\t"
                     "movq %%r15, %[r15]\n\t"
                     : "=a"(r), [x] "=m"(x), [b] "=m"(b), [r12] "=m"(r12),
                       [r13] "=m"(r13), [r14] "=m"(r14), [r15] "=m"(r15)
                     : "0"((long)SYS_nanosleep), "D"(&ts), "S"(NULL),
                       [w] "r"(want)
                     : "rcx", "r11", "rbx", "r12", "r13", "r14", "r15",
                       "xmm15", "memory");
    *ret = r;
    return x == want && b == want && r12 == want && r13 == want &&
                   r14 == want && r15 == want
               ? 0
               : -1;
}

static int
regs(void)
{
    while (!stop) {
        struct timespec a, b;
        long r;
        double ms;

        errno = 4242;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (raw_sleep(&r) != 0) {
            fprintf(stderr, "ANOMALY: a register changed across nanosleep\n");
            return 3;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +
             (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        if (errno != 4242) {
            fprintf(stderr, "ANOMALY: errno changed to %d\n", errno);
            return 3;
        }
        if (r != 0 && !(stop && r == -EINTR)) {
            fprintf(stderr, "ANOMALY: nanosleep returned %ld\n", r);
            return 3;
        }
        if (r == 0 && ms < 19.9) {
            fprintf(stderr, "ANOMALY: nanosleep slept %.3f ms of 20\n", ms);
            return 3;
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "loop";
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    keep_large();
    keep_small();
    if (strcmp(mode, "nodump") == 0 && prctl(PR_SET_DUMPABLE, 0) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    if (strcmp(mode, "regs") == 0)
        return regs();
    return loop();
}
