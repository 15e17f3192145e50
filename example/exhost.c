/* SPDX-License-Identifier: MIT
 *
 * exhost: the smallest service that embeds the heapadmin admin port, and
 * the way to embed it. It uses nothing but <heapadmin.h>:
 *
 *   cc -O1 -g -fno-omit-frame-pointer -pthread exhost.c -o exhost \
 *      $(pkg-config --cflags --libs heapadmin) -ljemalloc
 *   ./exhost -c admin.cnf            # admin port on its own thread
 *   ./exhost -c admin.cnf --on-base  # on the host's libevent loop
 *   mariadb -h127.0.0.1 -P6032 -uadmin -padmin
 *
 * Its workload, four threads that fill a bounded cache, grow sessions and
 * parse requests, has distinctively named functions so that a heap
 * profile taken over the admin port shows whose memory it is. It stops on
 * SIGTERM or SIGINT, read with sigwait() on the main thread (the library
 * blocks every signal in its own thread), and exits 0.
 */
#include <heapadmin.h>

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* opt.prof is fixed when jemalloc starts: the profiler is compiled in and
 * idle until an operator activates it over SQL. Defined here, in the
 * executable, because a definition in a library wins or loses by link
 * order. */
HEAPADMIN_DEFINE_MALLOC_CONF;

#define CACHE_SLOTS 512          /* entries the cache keeps */
#define ENTRY_BYTES (16 << 10)   /* bytes per cache entry */
#define SESSIONS 64              /* sessions that grow and reset */

static atomic_bool stopping;

static void
pause_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* The functions below are what a heap profile should name: not static,
 * not inlined, so that jeprof and the symbolizer find them. */
__attribute__((noinline)) char *
exhost_cache_fill(size_t n)
{
    char *p = malloc(n);

    if (p != NULL)
        memset(p, 'c', n);
    return p;
}

__attribute__((noinline)) char *
exhost_session_grow(char *s, size_t n)
{
    char *p = realloc(s, n);

    if (p != NULL)
        memset(p, 's', n);
    return p;
}

__attribute__((noinline)) char *
exhost_parse_request(unsigned i)
{
    char *p = malloc(256 + i % 4096);

    if (p != NULL)
        snprintf(p, 256, "GET /item/%u HTTP/1.1", i);
    return p;
}

static void *
cache_worker(void *arg)
{
    static char *cache[CACHE_SLOTS];
    unsigned i = 0;

    (void)arg;
    while (!atomic_load(&stopping)) {
        unsigned slot = i++ % CACHE_SLOTS;

        free(cache[slot]);
        cache[slot] = exhost_cache_fill(ENTRY_BYTES);
        pause_ms(1);
    }
    for (unsigned k = 0; k < CACHE_SLOTS; k++)
        free(cache[k]);
    return NULL;
}

static void *
session_worker(void *arg)
{
    char *sessions[SESSIONS] = {NULL};
    size_t sizes[SESSIONS] = {0};
    unsigned i = 0;

    (void)arg;
    while (!atomic_load(&stopping)) {
        unsigned k = i++ % SESSIONS;

        sizes[k] = sizes[k] >= (256 << 10) ? 4096 : sizes[k] + 4096;
        sessions[k] = exhost_session_grow(sessions[k], sizes[k]);
        pause_ms(1);
    }
    for (unsigned k = 0; k < SESSIONS; k++)
        free(sessions[k]);
    return NULL;
}

static void *
request_worker(void *arg)
{
    unsigned i = 0;

    (void)arg;
    while (!atomic_load(&stopping)) {
        char *r = exhost_parse_request(i++);

        free(r);
        if (i % 64 == 0)
            pause_ms(1);
    }
    return NULL;
}

/* The host's own event loop in --on-base mode: the admin port runs on
 * it, in the main thread. */
struct loop {
    struct event_base *base;
    struct event *tick;
};

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct loop *l = arg;

    (void)fd;
    (void)what;
    /* Nothing to do: the tick only bounds how long EVLOOP_ONCE waits. */
    (void)l;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: exhost [-c CONFIG] [-D DATADIR] [--on-base]\n");
}

int
main(int argc, char **argv)
{
    struct heapadmin_options opt;
    struct heapadmin *ha = NULL;
    struct loop loop = {NULL, NULL};
    pthread_t threads[4];
    sigset_t sigs;
    bool on_base = false;
    char err[512];
    int sig = 0;

    memset(&opt, 0, sizeof(opt));
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            opt.config_file = argv[++i];
        } else if (strcmp(argv[i], "-D") == 0 && i + 1 < argc) {
            opt.datadir = argv[++i];
        } else if (strcmp(argv[i], "--on-base") == 0) {
            on_base = true;
        } else {
            usage(stderr);
            return 2;
        }
    }

    /* SIGTERM/SIGINT are read with sigwait; every thread started from
     * here on inherits the mask. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    if (heapadmin_new(&opt, &ha, err, sizeof(err)) != 0) {
        fprintf(stderr, "exhost: admin port disabled: %s\n", err);
        return 1;
    }
    if (on_base) {
        struct timeval tv = {0, 100000};

        /* The library's precondition for the host's loop. */
        signal(SIGPIPE, SIG_IGN);
        loop.base = event_base_new();
        loop.tick = event_new(loop.base, -1, EV_PERSIST, on_tick, &loop);
        event_add(loop.tick, &tv);
        if (heapadmin_start_on_base(ha, loop.base, err, sizeof(err)) != 0) {
            fprintf(stderr, "exhost: admin port disabled: %s\n", err);
            return 1;
        }
    } else if (heapadmin_start(ha, err, sizeof(err)) != 0) {
        fprintf(stderr, "exhost: admin port disabled: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < heapadmin_listener_count(ha); i++) {
        const char *path = heapadmin_listener_path(ha, i);

        if (path != NULL)
            printf("admin socket %s\n", path);
        else
            printf("admin port %d\n", heapadmin_listener_port(ha, i));
    }
    fflush(stdout);

    pthread_create(&threads[0], NULL, cache_worker, NULL);
    pthread_create(&threads[1], NULL, session_worker, NULL);
    pthread_create(&threads[2], NULL, request_worker, NULL);
    pthread_create(&threads[3], NULL, request_worker, NULL);

    if (!on_base) {
        sigwait(&sigs, &sig);
        atomic_store(&stopping, true);
    } else {
        /* The host's loop runs here, waking every 100 ms (the tick) to
         * look for a pending signal. */
        while (!atomic_load(&stopping)) {
            struct timespec zero = {0, 0};

            if (sigtimedwait(&sigs, NULL, &zero) > 0)
                atomic_store(&stopping, true);
            else
                event_base_loop(loop.base, EVLOOP_ONCE);
        }
    }
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    heapadmin_free(ha);
    if (loop.tick != NULL)
        event_free(loop.tick);
    if (loop.base != NULL)
        event_base_free(loop.base);
    return 0;
}
