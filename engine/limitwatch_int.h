/* SPDX-License-Identifier: MIT
 *
 * The limit watch's insides, shared by its files and private to them:
 * limitwatch.c (the looks and what wakes them), limitwatch_dump.c (a
 * limit dump queued on the disk worker and recorded once written) and
 * limitwatch_state.c (jemalloc-limit_watch_state's text). What callers
 * use is limitwatch.h. Loop thread only.
 *
 * Include engine/limitwatch.h before this header: struct
 * ha_limitwatch_hooks is a member of the watch, and including it here
 * would make the two modules include each other (test/layering.sh).
 */
#ifndef HA_LIMITWATCH_INT_H
#define HA_LIMITWATCH_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "heap/dumpjob.h"

#define RATE_RING 8
#define DUMPS_QUEUED 4 /* limit dumps waiting for the disk worker */

/* Recent (time, bytes) pairs, for a climb measured over at least
 * RATE_WINDOW_MS. */
struct rate_ring {
    int64_t ms[RATE_RING], v[RATE_RING];
    unsigned n, next;
};

/* A limit dump asked of the disk worker, with what it was decided on. */
struct limit_dump {
    struct ha_limitwatch *w;
    struct ha_dump_req *req;
    char reason[256];
    struct ha_dump_looked looked;
};

struct ha_limitwatch {
    struct event_base *base;
    struct ha_worker *worker;         /* where the dumps are written */
    struct ha_heap *heap;             /* jemalloc, je, cgroup */
    struct ha_limitwatch_hooks hooks; /* the owner's, told of each look */
    struct ha_limitwatch_rule rule;
    struct ha_limitwatch_arm arm;
    bool sampling;   /* hold sampling on under a limit */
    int sample_rate; /* at this lg_prof_sample; HA_UNSET:
                        the current one */

    struct ha_cgroup_state last; /* the last look */
    bool have_last;
    bool holding;            /* holds sampling on */
    bool limited;            /* a limit applied at the last look */
    char sampling_note[160]; /* why the watch does not sample, for
                                its state; "": it does */

    struct event *fast; /* the next look near the limit */
    bool fast_pending;
    struct event *glance; /* far from it, without thresholds */
    bool glance_pending;
    struct rate_ring glances; /* the glances' usage, for its rate */
    double glance_rate;       /* usage climb, bytes/s */
    bool glance_rate_known;
    struct rate_ring looks; /* the looks' working set */
    double rate;            /* working set climb, bytes/s */
    bool rate_known;        /* ... measured (else taken from the
                               glances, or not known) */

    /* The usage file of the limiting group: the v1 thresholds' and the
     * glance's. */
    int usage_fd;
    char usage_dir[PATH_MAX];
    int usage_version;

    /* What the kernel offers to wake the watch. */
    int v1_efd;       /* cgroup.event_control thresholds */
    int64_t v1_limit; /* ... set for this limit, in v1_dir */
    char v1_dir[PATH_MAX];
    struct event *v1_ev;
    int ino_fd; /* v2 memory.events changes */
    char ino_dir[PATH_MAX];
    struct event *ino_ev;
    int psi_fd, psi_epfd; /* PSI trigger */
    char psi_file[PATH_MAX];
    struct event *psi_ev;
    bool psi_fired;
    char psi_note[PATH_MAX + 160]; /* the pressure the watch reads, or
                                      why none, for its state */

    /* The descriptors above as they were made, so a fork child closes
     * only what is provably still this watch's (ha_limitwatch_abandon). */
    struct owned {
        const int *fd;
        dev_t dev;
        ino_t ino;
    } owned[5];

    /* Dumps. */
    struct limit_dump *queued[DUMPS_QUEUED]; /* asked of the worker */
    bool low_space;
    long long dumps; /* limit dumps written */
    char last_file[PATH_MAX];
    char last_reason[256];
    time_t last_time;
};
/* A limit dump, decided on st (read at looked_ns, unix ns), queued on
 * the disk worker (limitwatch_dump.c); logged when it cannot be. */
void ha_limitwatch_dump_take(struct ha_limitwatch *w, const char *reason,
                             const struct ha_cgroup_state *st,
                             int64_t looked_ns);

#endif
