/* SPDX-License-Identifier: MIT
 *
 * The engine's insides, shared by its files and private to them:
 * engine.c (its parts handed to the owner and the front-ends, and what
 * the owner sets once it is made), engine_new.c (ha_engine_new: what it
 * sets up, in order), engine_stop.c (the stop: the threads waited for
 * by one deadline, what the stop writes, what is taken down) and
 * engine_runrec.c (this run's record, kept up by the watches' tick and
 * the limit watch's looks). What callers use is engine.h. Loop thread.
 *
 * Include engine/engine.h before this header: the askers' array is
 * HA_ENGINE_ASKERS long, and including it here would make the two
 * modules include each other (test/layering.sh).
 */
#ifndef HA_ENGINE_INT_H
#define HA_ENGINE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "core/blockio.h"
#include "core/fiber.h"
#include "core/task.h"
#include "core/worker.h"
#include "engine/accounts.h"
#include "engine/clients.h"
#include "engine/labels.h"
#include "engine/tls.h"
#include "heap/heap.h"
#include "heap/runs.h"
#include "vtab/vtab.h"

struct ha_engine {
    struct event_base *base;
    const struct ha_config *cfg;
    char *datadir;

    struct ha_heap heap;           /* jemalloc, dumps, profiles */
    struct ha_vtab_ctx vtab;       /* the tables' context: heap and the
                                      rows this layer owns */
    char scratch_uri[128];         /* admin sessions' shared tables */
    sqlite3 *keeper;               /* holds that database open */

    struct ha_accounts accounts;   /* logins of both front-ends */
    struct ha_clients clients;     /* PROCESSLIST, KILL, counters */
    struct ha_tls tls;             /* certificate, RSA key */

    struct ha_fiber_pool fibers;   /* stacks for tasks */
    struct ha_worker *worker;      /* long work off the loop */
    struct ha_worker *askers[HA_ENGINE_ASKERS]; /* a gateway's: asking
                                       its agents (ha_task_offload_ask) */
    struct ha_diskwatch *diskwatch; /* the dump worker in PROCESSLIST and
                                       the log when a job runs long */
    struct ha_worker *dump_worker; /* writes to the datadir that a disk may
                                      stall: heap dumps, history samples */
    struct ha_worker *io_worker;   /* the loop's own disk calls: a login's
                                      ATTACH, a dump's checks, SQLite's
                                      file calls (core/blockio.h) */
    struct ha_blockio blockio;     /* ... and how long they are waited for */
    bool bound;                    /* blockio is bound to the loop's thread */
    struct event *bind_ev;         /* binds it at the loop's first pass */
    struct ha_diskwatch *iowatch;  /* the I/O thread in PROCESSLIST */
    struct ha_task_env tasks;      /* what every task shares */

    struct ha_dumptimer *dumptimer; /* automatic dumps; NULL: none */
    struct ha_history *history;    /* stats_history sampler; NULL: none */

    bool gateway;                  /* serves the datadir's agents too */
    struct ha_hostmetrics *hostmetrics; /* a gateway's merged exposition */
    char endpoint[PATH_MAX];       /* where the MySQL front-end listens */
    char program[64];              /* this process's program name */
    struct ha_labels labels;       /* the label contract (labels.h) */
    struct ha_push *push;          /* dumps pushed (push.h); NULL: none */
    struct ha_leakwatch *leakwatch; /* on the sampler's samples; NULL:
                                       off */
    struct ha_leakrank *leakrank;  /* ranks its complete series for the
                                      metrics; NULL: none */
    struct ha_limitwatch *limitwatch; /* on the sampler's ticks; NULL:
                                         off */
    struct ha_runrec run;          /* this run's record (heap/runs.h) */
    bool run_recorded;             /* written at start: kept up, ended */
    struct run_job *run_writing;   /* a refresh on the disk worker */
    bool run_dirty;                /* ... and newer figures to write */
    int64_t run_written_usage;     /* the usage the last refresh wrote */
    struct event *tick;            /* the watches' tick when no sampler
                                      serves; NULL: the sampler's */
    struct ha_logtimer *logtimer;  /* ticks an open lifetime window */
};

/* A refresh of this run's record, on the disk worker. */
struct run_job {
    struct ha_job job;             /* the worker's */
    struct ha_engine *e;           /* NULL: the engine went first */
    char datadir[PATH_MAX];
    struct ha_runrec r;
};

/* This run recorded (heap/runs.h), the limit watch made with the hooks
 * that keep the record up, and the watches' tick set going: the history
 * sampler's when it samples, else the engine's own each minute. Once,
 * from ha_engine_new (engine_runrec.c). */
void ha_engine_runrec_start(struct ha_engine *e);

#endif /* HA_ENGINE_INT_H */
