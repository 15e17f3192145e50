/* SPDX-License-Identifier: MIT
 *
 * The engine's stop: ha_engine_stopping's deadline for the datadir's
 * disk, ha_engine_free (the push first, then every worker told to stop
 * and waited for by one deadline, what the stop writes to the datadir on
 * the I/O thread, then the rest taken down; a thread that does not end
 * is left behind with the engine) and a fork child's ha_engine_abandon.
 */
#include "engine/engine.h"
#include "engine/engine_int.h"

#include <event2/event.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "engine/diskwatch.h"
#include "engine/dumptimer.h"
#include "engine/history.h"
#include "engine/hostmetrics.h"
#include "engine/leakrank.h"
#include "engine/leakwatch.h"
#include "engine/limitwatch.h"
#include "engine/logtimer.h"
#include "engine/push.h"
#include "heap/caches.h"
#include "heap/dumpfiles.h"
#include "heap/logwin.h"

/* What the stop writes to the datadir, on the I/O thread: a disk that
 * stopped answering holds that thread, never the stop. No job runs any
 * more (the workers are gone), so nothing races it. */
static void
stop_writes(void *arg)
{
    struct ha_engine *e = arg;

    /* A lifetime window still open is closed and published. */
    ha_logwin_shutdown(&e->heap);
    if (e->run_recorded)
        ha_runs_end(e->datadir, &e->run, "stopped");
    ha_history_free(e->history);
    e->history = NULL;
}

void
ha_engine_stopping(struct ha_engine *e)
{
    int64_t by = ha_clock_ns() + (int64_t)HA_ENGINE_STOP_DISK_MS * 1000000;
    int64_t zero = 0;

    if (e != NULL)
        (void)atomic_compare_exchange_strong(&e->blockio.stop_by_ns, &zero,
                                             by);
}

/* The loop's thread forgets e's I/O thread (ha_engine_new): its calls
 * run on it again, as before an engine. */
static void
unbind(struct ha_engine *e)
{
    if (e->bind_ev != NULL)
        event_free(e->bind_ev);
    e->bind_ev = NULL;
    if (e->bound)
        ha_blockio_unbind(&e->blockio);
    e->bound = false;
}

/* Whether a job running since since (CLOCK_MONOTONIC) has run past the
 * disk timeout. */
static bool
past_timeout(struct ha_engine *e, int64_t since)
{
    int64_t limit = atomic_load(&e->blockio.timeout_ms);

    return limit > 0 && ha_clock_ns() - since >= limit * 1000000;
}

int
ha_engine_free(struct ha_engine *e)
{
    char err[512];
    int64_t by, disk_by;

    if (e == NULL)
        return 0;
    ha_engine_stopping(e);
    disk_by = atomic_load(&e->blockio.stop_by_ns);
    /* The end is written below, or cannot be: never at the exit. */
    if (e->run_recorded)
        ha_runs_disarm_exit(&e->heap.run_exit);
    /* First: a job still running may use the tables' context. Both are
     * told to stop at once and get one deadline: a job blocked on a disk
     * that stopped answering (a heap dump to a hung mount) must not keep
     * the owner (SIGTERM, heapadmin_stop) waiting. */
    /* Its encoding waits on the worker: it goes first, and a push being
     * sent gets a share of the stop's wait (its outbox stays). */
    ha_push_free(e->push, ha_clock_ns() +
                              (int64_t)HA_ENGINE_STOP_WAIT_MS * 500000);
    e->push = NULL;
    ha_diskwatch_free(e->diskwatch);
    ha_diskwatch_free(e->iowatch);
    ha_worker_stop(e->worker);
    ha_worker_stop(e->dump_worker);
    for (size_t i = 0; i < HA_ENGINE_ASKERS; i++)
        ha_worker_stop(e->askers[i]);
    by = ha_clock_ns() + (int64_t)HA_ENGINE_STOP_WAIT_MS * 1000000;
    if (by > disk_by)
        by = disk_by;
    {
        const char *what = NULL;
        int64_t since = 0;
        bool stuck = ha_worker_running(e->dump_worker, &what, &since);
        int lost = 0;

        if (ha_worker_free_by(e->worker, by) != 0)
            lost++;
        /* A gateway's asks end by their own deadlines (seconds). */
        for (size_t i = 0; i < HA_ENGINE_ASKERS; i++)
            if (ha_worker_free_by(e->askers[i], by) != 0)
                lost++;
        /* One stuck past the disk timeout is not waited for at all:
         * the disk is not answering (core/blockio.h). */
        if (ha_worker_free_by(e->dump_worker,
                              stuck && past_timeout(e, since) ? ha_clock_ns()
                                                              : by) != 0) {
            ha_log_warn("stopping: the disk worker has been %s for %lld s "
                        "and does not end: left behind (what it was "
                        "writing stays in the staging directory, which "
                        "the next start cleans; this run's end record "
                        "and an open lifetime window are not written)",
                        stuck ? what : "busy",
                        stuck ? (long long)((ha_clock_ns() - since) /
                                            1000000000)
                              : 0LL);
            lost++;
        }
        if (lost > 0) {
            /* Its job may still use the engine (a history sample, the
             * heap's caches): all of it is left to it. */
            unbind(e);
            return -1;
        }
    }
    /* A ranking paused on a job ends while its task's fiber and the
     * scheduler are still there; the watch is told it is gone. */
    ha_leakrank_free(e->leakrank);
    e->leakrank = NULL;
    if (e->io_worker != NULL &&
        ha_blockio_call("writing what the stop leaves in the datadir",
                        stop_writes, NULL, e, err, sizeof(err)) != 0) {
        ha_log_warn("stopping: %s; not written: this run's end record "
                    "(the next start finds the run ended without one), "
                    "an open lifetime window, the last history samples "
                    "not yet on disk; the I/O thread is left behind",
                    err);
        unbind(e);
        return -1; /* its call still uses e */
    }
    if (ha_worker_free_by(e->io_worker, disk_by + 200000000) != 0) {
        ha_log_warn("stopping: the I/O thread does not end (a file of "
                    "the datadir still being closed): left behind");
        unbind(e);
        return -1;
    }
    unbind(e);
    ha_logtimer_free(e->logtimer);
    ha_dumpfiles_memory_stop();
    ha_fiber_pool_clear(&e->fibers);
    ha_task_sched_free(e->tasks.sched);
    ha_dumptimer_free(e->dumptimer);
    ha_leakwatch_free(e->leakwatch);
    ha_limitwatch_free(e->limitwatch);
    if (e->tick != NULL)
        event_free(e->tick);
    if (e->run_writing != NULL)
        e->run_writing->e = NULL;
    if (e->keeper != NULL)
        sqlite3_close_v2(e->keeper);
    ha_tls_free(&e->tls);
    ha_hostmetrics_free(e->hostmetrics);
    ha_accounts_free(&e->accounts);
    ha_heap_caches_free(&e->heap);
    free(e->datadir);
    free(e);
    return 0;
}

void
ha_engine_abandon(struct ha_engine *e)
{
    if (e != NULL) {
        ha_worker_abandon(e->worker);
        ha_worker_abandon(e->dump_worker);
        ha_worker_abandon(e->io_worker);
        for (size_t i = 0; i < HA_ENGINE_ASKERS; i++)
            ha_worker_abandon(e->askers[i]);
        ha_limitwatch_abandon(e->limitwatch);
        ha_push_abandon(e->push);
    }
}
