/* SPDX-License-Identifier: MIT
 *
 * A heap dump and the file work around it, as one piece of work for the
 * worker thread (core/worker.h, the timers' dumps) or for a statement
 * that waits (ha_task_offload, dump_now): the free-space floor, prof.dump
 * with jemalloc's naming (ha_mallctl_dump), the build-ids recorded beside
 * it, retention's directory scan. Or, for the watch on jemalloc's own
 * dumps, the floor and retention alone. prof.dump writes the whole
 * profile (megabytes for a big host) and the rest reads directories and
 * ELF notes: never on the loop. Everything here is mallctl and file I/O,
 * safe on any thread (ha_mallctl_dump serializes dumps itself); what the
 * job reads of the configuration is copied into it on the loop.
 */
#ifndef HA_DUMPJOB_H
#define HA_DUMPJOB_H

#include <limits.h>
#include <stdbool.h>
#include <time.h>

#include "heap/cgroup.h"
#include "prof/dumpmem.h"
#include "heap/mallctl.h"

/* The memory cgroup as a watch saw it when it decided on a dump: what
 * <dump>.mem records for it, so a limit dump says what it was taken on
 * (the group read again as the dump is written may say less: a burst
 * freed, page cache the kernel moved between its lists). */
struct ha_dump_looked {
    int64_t ns;                  /* unix ns of the look; 0: none */
    int64_t limit;               /* bytes; -1: none */
    int64_t usage, working_set;  /* bytes; -1 unknown */
};

struct ha_dump_job {
    /* In, set on the loop. */
    const struct ha_mallctl_ops *ops;
    const char *variable;        /* names the trigger in messages: static */
    char what[256];              /* for the log: "automatic dump (why)";
                                    "" logs nothing of its own (dump_now
                                    answers its statement instead) */
    bool dump;                   /* false: housekeeping only (no dump) */
    long long min_free_bytes;    /* the floor; <= 0: none */
    bool retain;                 /* apply retention afterwards */
    long long retention_count, retention_bytes;
    time_t drop_since;           /* housekeeping: jemalloc's own dumps
                                    newer than this are dropped when below
                                    the floor */
    bool low_space;              /* in/out: a low-space episode is on
                                    (its end is logged) */
    const char *trigger;         /* for <dump>.mem (prof/dumpmem.h):
                                    "manual", "automatic", "leak-watch",
                                    "limit"; static; NULL: "manual" */
    char reason[256];            /* why, for <dump>.mem */
    struct ha_cgroup_where cgroup; /* heap->cgroup, copied on the loop */
    struct ha_dump_looked looked; /* ns 0: the group is read at the dump */

    /* Out. */
    int rc;                      /* 0: written (or housekeeping done) */
    bool skipped;                /* below the floor: no dump */
    char file[PATH_MAX];         /* the dump written */
    long long bytes;             /* ... its size; -1: unknown */
    char err[PATH_MAX + 512];    /* why not, when rc is -1 */
    struct ha_dumpmem mem;       /* what was recorded beside it */
};

/* Fills a job's copy of what it needs of heap: ops, the cgroup. */
struct ha_heap;
void ha_dump_job_init(struct ha_dump_job *j, const struct ha_heap *heap,
                      const char *variable, const char *trigger);

/* Runs job (a struct ha_dump_job *) on the calling thread. */
void ha_dump_job_run(void *job);

#endif /* HA_DUMPJOB_H */
