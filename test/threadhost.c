/* SPDX-License-Identifier: MIT
 *
 * threadhost: a host for test/integration/threads.sh, embedding heapadmin
 * through its public header, whose memory is held by named threads in
 * known amounts, each from threadhost_hold (128 KiB blocks: at
 * lg_prof_sample 14 each is sampled with probability 1 - e^-8, so what a
 * thread holds is known to well under 1 %):
 *
 *   t1mib          1 MiB
 *   t2mib          2 MiB, then exits (its memory stays, held by the
 *                  process: jemalloc keeps the thread's record)
 *   t4mib          4 MiB
 *   pool x 4       512 KiB each: a pool of one name, 2 MiB together
 *
 *   threadhost -c CONFIG kernel   names the threads with
 *                                 pthread_setname_np (the kernel's name:
 *                                 jemalloc's prof_sys_thread_name reads
 *                                 it at each sampled allocation)
 *   threadhost -c CONFIG api      names them with
 *                                 heapadmin_set_thread_name (jemalloc's
 *                                 thread.prof.name) and prints what it
 *                                 returned: "api <rc> <errno name>";
 *                                 the main thread is named "main"
 *
 * The threads allocate once heapadmin has started (its settings applied:
 * sampling on); it prints "ready" once they all hold their memory, and
 * runs until SIGTERM or SIGINT. Blocks are written and kept in a
 * volatile array.
 */
#include <heapadmin.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

HEAPADMIN_DEFINE_MALLOC_CONF;

#define BLOCK (128 << 10)
#define KIB 1024
#define MAX_BLOCKS 64

struct holder {
    const char *name;
    size_t bytes;
    bool exits; /* returns once it holds its memory */
    void *volatile blocks[MAX_BLOCKS];
    pthread_t th;
};

static struct holder holders[] = {
    {"t1mib", 1024 * KIB, false, {0}, 0}, {"t2mib", 2048 * KIB, true, {0}, 0},
    {"t4mib", 4096 * KIB, false, {0}, 0}, {"pool", 512 * KIB, false, {0}, 0},
    {"pool", 512 * KIB, false, {0}, 0},   {"pool", 512 * KIB, false, {0}, 0},
    {"pool", 512 * KIB, false, {0}, 0},
};
#define N_HOLDERS (sizeof(holders) / sizeof(holders[0]))

static bool by_api;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static size_t holding;        /* threads that hold their memory */
static int api_rc, api_errno; /* the last heapadmin_set_thread_name */

/* Where the memory comes from: one function for every thread, so only
 * the thread tells them apart. */
__attribute__((noinline)) static void *
threadhost_hold(size_t n)
{
    void *p = malloc(n);

    if (p != NULL)
        memset(p, 0x5a, n);
    return p;
}

static void *
run(void *arg)
{
    struct holder *h = arg;
    int rc = 0, e = 0;

    if (by_api) {
        rc = heapadmin_set_thread_name(h->name);
        e = errno;
    } else {
        pthread_setname_np(pthread_self(), h->name);
    }
    for (size_t i = 0; i < h->bytes / BLOCK && i < MAX_BLOCKS; i++)
        h->blocks[i] = threadhost_hold(BLOCK);
    pthread_mutex_lock(&lock);
    holding++;
    if (rc != 0) {
        api_rc = rc;
        api_errno = e;
    }
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    if (h->exits)
        return NULL;
    for (;;)
        pause();
    return NULL;
}

int
main(int argc, char **argv)
{
    struct heapadmin_options opt;
    struct heapadmin *ha = NULL;
    sigset_t sigs;
    char err[512];
    int sig;

    if (argc != 4 || strcmp(argv[1], "-c") != 0 ||
        (strcmp(argv[3], "kernel") != 0 && strcmp(argv[3], "api") != 0)) {
        fprintf(stderr, "usage: threadhost -c CONFIG kernel|api\n");
        return 2;
    }
    by_api = strcmp(argv[3], "api") == 0;
    /* Every thread of the host named, the main one too: a thread without
     * a name holding memory is then none of the host's. */
    if (by_api)
        (void)heapadmin_set_thread_name("main");
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    memset(&opt, 0, sizeof(opt));
    opt.config_file = argv[2];
    if (heapadmin_new(&opt, &ha, err, sizeof(err)) != 0 ||
        heapadmin_start(ha, err, sizeof(err)) != 0) {
        fprintf(stderr, "threadhost: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < N_HOLDERS; i++)
        if (pthread_create(&holders[i].th, NULL, run, &holders[i]) != 0) {
            fprintf(stderr, "threadhost: pthread_create failed\n");
            return 1;
        }
    pthread_mutex_lock(&lock);
    while (holding < N_HOLDERS)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < N_HOLDERS; i++)
        if (holders[i].exits)
            pthread_join(holders[i].th, NULL);
    if (by_api)
        printf("api %d %s\n", api_rc,
               api_rc == 0           ? "0"
               : api_errno == ENOENT ? "ENOENT"
               : api_errno == ENOSYS ? "ENOSYS"
                                     : "other");
    printf("ready\n");
    fflush(stdout);
    sigwait(&sigs, &sig);
    heapadmin_free(ha);
    return 0;
}
