/* SPDX-License-Identifier: MIT
 *
 * Makes a real jemalloc prof_log file and a real recent-allocations
 * document, with known shapes, for test/check_proflog.c: with every
 * allocation sampled (MALLOC_CONF=prof:true,lg_prof_sample:0),
 *
 *   site_temp      500 blocks of 4000 bytes, each freed at once on the
 *                  thread that made it;
 *   site_held      100 blocks of 16000 bytes held for 60 ms, then freed
 *                  by the main thread;
 *   site_handoff   64 blocks of 1000 bytes made by the thread named
 *                  "producer", freed by the thread named "consumer";
 *   site_live      32 blocks of 500 bytes never freed: not in the log;
 *
 * all between prof.log_start(DIR/proflog.json) and prof.log_stop, then
 * DIR/proflog.maps (this process's /proc/self/maps, what heapadmin
 * records beside a log it publishes). Then, with
 * experimental.prof_recent.alloc_max = 8, eight more allocations of 700
 * bytes (site_recent) of which the first four are freed, and
 * experimental.prof_recent.alloc_dump into DIR/recent.json.
 *
 * Built -O0 -g with frame pointers, like test/data/heap/gen.c, so the
 * stacks are the ones written here. The committed fixtures under
 * test/data/proflog/ came from this program and Debian's libjemalloc2
 * (5.3.0); check_proflog also runs it anew.
 *
 * usage: proflog_gen DIR
 */
#pragma GCC optimize("O0")

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#define N_TEMP 500
#define N_HELD 100
#define N_HANDOFF 64
#define N_LIVE 32
#define N_RECENT 8

extern void *keep_held[], *keep_handoff[], *keep_live[], *keep_recent[];
void *keep_held[N_HELD];
void *keep_handoff[N_HANDOFF];
void *keep_live[N_LIVE];
void *keep_recent[N_RECENT];
extern volatile char sink;
volatile char sink;

__attribute__((noinline)) void *
site_temp(void)
{
    return malloc(4000);
}

__attribute__((noinline)) void *
site_held(void)
{
    return malloc(16000);
}

__attribute__((noinline)) void *
site_handoff(void)
{
    return malloc(1000);
}

__attribute__((noinline)) void *
site_live(void)
{
    return malloc(500);
}

__attribute__((noinline)) void *
site_recent(void)
{
    return malloc(700);
}

static void
name_thread(const char *name)
{
    const char *p = name;

    /* jemalloc's own name for the thread, as the log records it. */
    (void)mallctl("thread.prof.name", NULL, NULL, (void *)&p, sizeof(p));
}

static void *
producer(void *arg)
{
    (void)arg;
    name_thread("producer");
    for (int i = 0; i < N_HANDOFF; i++)
        keep_handoff[i] = site_handoff();
    return NULL;
}

static void *
consumer(void *arg)
{
    void *own;

    (void)arg;
    name_thread("consumer");
    /* A thread's frees are logged only once it has profiling data of
     * its own: a sampled allocation gives it that. */
    own = malloc(64);
    sink = *(volatile char *)own;
    for (int i = 0; i < N_HANDOFF; i++)
        free(keep_handoff[i]);
    free(own);
    return NULL;
}

static void
write_cb(void *arg, const char *s)
{
    fputs(s, (FILE *)arg);
}

static int
copy_maps(const char *path)
{
    char buf[65536];
    size_t n;
    FILE *in = fopen("/proc/self/maps", "r"), *out = fopen(path, "w");

    if (in == NULL || out == NULL)
        return -1;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

int
main(int argc, char **argv)
{
    char path[4096];
    const char *p = path;
    struct timespec hold = {0, 60 * 1000 * 1000};
    pthread_t t;
    ssize_t max = N_RECENT;
    FILE *f;
    struct {
        void (*cb)(void *, const char *);
        void *arg;
    } dump;

    if (argc != 2) {
        fprintf(stderr, "usage: proflog_gen DIR\n");
        return 2;
    }
    name_thread("main");
    snprintf(path, sizeof(path), "%s/proflog.json", argv[1]);
    if (mallctl("prof.log_start", NULL, NULL, (void *)&p, sizeof(p)) != 0) {
        fprintf(stderr, "proflog_gen: prof.log_start failed (run with "
                        "MALLOC_CONF=prof:true,lg_prof_sample:0)\n");
        return 1;
    }
    for (int i = 0; i < N_TEMP; i++) {
        char *b = site_temp();

        b[0] = 1;
        sink = b[0];
        free(b);
    }
    for (int i = 0; i < N_HELD; i++)
        keep_held[i] = site_held();
    for (int i = 0; i < N_LIVE; i++)
        keep_live[i] = site_live();
    nanosleep(&hold, NULL);
    for (int i = 0; i < N_HELD; i++)
        free(keep_held[i]);
    pthread_create(&t, NULL, producer, NULL);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, consumer, NULL);
    pthread_join(t, NULL);
    if (mallctl("prof.log_stop", NULL, NULL, NULL, 0) != 0)
        return 1;
    snprintf(path, sizeof(path), "%s/proflog.maps", argv[1]);
    if (copy_maps(path) != 0)
        return 1;

    /* Opened first: stdio's buffer is an allocation too. */
    snprintf(path, sizeof(path), "%s/recent.json", argv[1]);
    if ((f = fopen(path, "w")) == NULL || setvbuf(f, NULL, _IONBF, 0) != 0)
        return 1;
    if (mallctl("experimental.prof_recent.alloc_max", NULL, NULL, &max,
                sizeof(max)) != 0)
        return 1;
    for (int i = 0; i < N_RECENT; i++)
        keep_recent[i] = site_recent();
    for (int i = 0; i < N_RECENT / 2; i++)
        free(keep_recent[i]);
    dump.cb = write_cb;
    dump.arg = f;
    if (mallctl("experimental.prof_recent.alloc_dump", NULL, NULL, &dump,
                sizeof(dump)) != 0)
        return 1;
    fclose(f);
    return 0;
}
