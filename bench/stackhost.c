/* SPDX-License-Identifier: MIT
 *
 * bench/stackhost: a host whose heap profile has 65,536 distinct live
 * stacks, heapadmin embedded through the public library (its admin port
 * on a thread of its own), for bench/stall's dump_now row: a dump of it
 * writes ~65k stack records, which holds jemalloc's profiler locks for
 * as long as it takes. Every allocation is sampled while the stacks are
 * built (MALLOC_CONF lg_prof_sample:0), then sampling is switched off,
 * so the admin port's own work is not slowed by it; the samples stay.
 *
 * Each stack is a path through a binary tree of calls, 16 levels of one
 * of two functions (left, right): 2^16 distinct return-address chains.
 *
 *   stackhost -c CONFIG      builds the stacks, prints "ready", serves
 *                            until SIGTERM or SIGINT
 */
#include <heapadmin.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

const char *malloc_conf = "prof:true,prof_active:true,lg_prof_sample:0";

#define LEVELS 16
#define STACKS (1u << LEVELS)

static void *volatile kept[STACKS];
static volatile unsigned sink;

static void descend(unsigned level, unsigned path);

__attribute__((noinline)) static void
left(unsigned level, unsigned path)
{
    descend(level + 1, path << 1);
    sink++; /* no tail call: this frame stays on the stack */
}

__attribute__((noinline)) static void
right(unsigned level, unsigned path)
{
    descend(level + 1, (path << 1) | 1);
    sink++;
}

__attribute__((noinline)) static void
descend(unsigned level, unsigned path)
{
    if (level == LEVELS) {
        kept[path] = malloc(64 + (path % 7) * 16);
        sink++;
        return;
    }
    left(level, path);
    right(level, path);
    sink++;
}

int
main(int argc, char **argv)
{
    struct heapadmin_options opt;
    struct heapadmin *ha = NULL;
    bool off = false;
    sigset_t sigs;
    char err[512];
    int sig;

    if (argc != 3 || strcmp(argv[1], "-c") != 0) {
        fprintf(stderr, "usage: stackhost -c CONFIG\n");
        return 2;
    }
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    descend(0, 0);
    if (mallctl("prof.active", NULL, NULL, &off, sizeof(off)) != 0) {
        fprintf(stderr, "stackhost: cannot switch sampling off\n");
        return 1;
    }
    memset(&opt, 0, sizeof(opt));
    opt.config_file = argv[2];
    if (heapadmin_new(&opt, &ha, err, sizeof(err)) != 0 ||
        heapadmin_start(ha, err, sizeof(err)) != 0) {
        fprintf(stderr, "stackhost: %s\n", err);
        return 1;
    }
    printf("ready: %u stacks\n", STACKS);
    fflush(stdout);
    sigwait(&sigs, &sig);
    heapadmin_free(ha);
    return 0;
}
