/* SPDX-License-Identifier: MIT
 *
 * The runs of the datadir's processes, kept so that a start can say how
 * the last one ended (prof/runrec.h has the records): the OOM killer's
 * SIGKILL leaves no chance to write anything, so each run writes its
 * record at start and at each history sample, a clean stop or exit
 * writes an end file, and the next start settles a run with neither by
 * what the kernel says (its cgroup's oom_kill count). Files in
 * <datadir>/runs/ (mode 0700), the newest HA_RUNS_KEEP runs kept.
 *
 * A run's dumps are found by its pid and its time (from its start to
 * the next start of the same pid), in the datadir and, where the pid-1
 * rule moved them at the next start, in earlier-runs/ (heap/dumpfiles.h;
 * names as the file rule reads them: "earlier-runs/<dir>/<dump>").
 */
#ifndef HA_RUNS_H
#define HA_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap/cgroup.h"
#include "heap/heap.h"
#include "prof/runrec.h"

#define HA_RUNS_DIR "runs"
#define HA_RUNS_KEEP 50

/* A run with what its dumps say. */
struct ha_run_entry {
    struct ha_runrec r;
    bool alive;                 /* its process still runs */
    bool self;                  /* this process's run */
    bool settled_now;           /* settled by this listing (new news) */
    long n_dumps;
    int64_t peak_resident;      /* the most of the record's and its
                                   dumps'; -1 unknown */
    char peak_dump[512];        /* its dump of highest resident memory,
                                   as heap_top takes it; "" none */
    char last_dump[512];
    char limit_dumps[2048];     /* ", "-joined; "" none */
    long n_limit_dumps;
};

struct ha_run_list {
    struct ha_run_entry *e;     /* newest start first */
    size_t n;
};

/* Start-up, before this run writes anything: settles the earlier runs
 * of datadir whose process is gone (each verdict written into its
 * record and logged once, with its peak and limit dumps and the query
 * that reads them), then records this run (self, filled by the caller:
 * pid, program, start, prefix, cgroup). Removes runs past HA_RUNS_KEEP.
 * Also arms x, the instance's (struct ha_heap run_exit), with where
 * this run's end file goes, for the exit (ha_runs_end); x stays armed
 * until ha_runs_disarm_exit. Returns 0, or -1 when the runs directory
 * cannot be made (logged; x is not armed). */
int ha_runs_start(const char *datadir, struct ha_runrec *self,
                  struct ha_runs_exit *x);

/* Rewrites this run's record (r: refreshed figures). Any thread (the
 * disk worker's); the file is replaced whole. Returns 0 or an errno
 * value. */
int ha_runs_write(const char *datadir, const struct ha_runrec *r);

/* The end file of run r: how is "stopped" (a clean stop) or "exited"
 * (heapadmin's destructor writes it at the process's exit for each run
 * still armed in it, never in a fork child). The first one written
 * stays. Allocation-free. */
void ha_runs_end(const char *datadir, const struct ha_runrec *r,
                 const char *how);

/* The owner of x stopped (its end written, or given up on a disk that
 * does not answer): the destructor writes no "exited" end for its run,
 * which on such a disk would hold the process's exit in open(2). Other
 * instances' runs stay armed. x may be freed after. */
void ha_runs_disarm_exit(struct ha_runs_exit *x);

/* The datadir's runs with their dumps, settling the ones newly over (and
 * writing that down), on the worker thread while the calling task waits.
 * Returns 0 with *out filled (free with ha_run_list_free),
 * HA_HEAP_ERROR (err) or HA_HEAP_STOPPED. */
int ha_runs_list(struct ha_heap *heap, struct ha_run_list *out, char *err,
                 size_t errlen);

void ha_run_list_free(struct ha_run_list *l);

/* When process pid started, unix ns (/proc/<pid>/stat's starttime after
 * the boot time): a run's start, which a reused pid does not share.
 * -1 when it does not run. */
int64_t ha_runs_process_start_ns(long pid);

/* The same, here and now (start-up; tests). */
int ha_runs_list_now(const char *datadir, struct ha_run_list *out);

#endif /* HA_RUNS_H */
