/* SPDX-License-Identifier: MIT
 *
 * A worker thread for work too long for an event loop's thread: reading
 * and symbolizing a heap dump, encoding a profile, scanning a directory.
 * Jobs run one at a time, in the order they were submitted; when one has
 * run, its done callback runs on the loop's thread (woken through an
 * eventfd watched by an event on the loop's base). The loop never waits
 * for the worker, except in ha_worker_free().
 *
 * Jobs run one at a time, so whatever only jobs touch (the symbolizer's
 * caches, the dumps' totals) needs no lock of its own: the worker's
 * run_lock is it. A job that cannot be queued and runs on the caller's
 * thread instead (core/task.h's fallbacks) goes through
 * ha_worker_run_here, which takes that lock too. The thread is started at the first submission: an instance
 * that never reads a profile never has it. It is created with every
 * signal blocked (a host's signals are never delivered to it) and calls
 * the owner's thread_init first (log sink, jemalloc arena and profiling
 * switches of the owner's choosing).
 *
 * Not for use across fork(): a child has no worker thread; it must not
 * submit and may only ha_worker_abandon() it.
 */
#ifndef HA_WORKER_H
#define HA_WORKER_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct ha_worker;

/* One piece of work. The submitter owns it; it must stay alive until its
 * done callback has run. */
struct ha_job {
    void (*run)(void *arg);    /* on the worker thread */
    void (*done)(void *arg);   /* on the loop's thread, once run returned
                                  (ran true), or when the worker was
                                  freed before running it (ran false) */
    void *arg;
    bool ran;                  /* set before done is called */
    struct ha_job *next;       /* the worker's queues */
};

/* Creates a worker whose done callbacks run on base's thread. thread_init
 * (may be NULL) runs first on the worker thread with init_arg. Returns
 * NULL with err set. */
struct ha_worker *ha_worker_new(struct event_base *base,
                                void (*thread_init)(void *),
                                void *init_arg, char *err, size_t errlen);

/* Names the thread (at most 15 bytes kept; default "heapadmin-work");
 * before the first submission. */
void ha_worker_set_name(struct ha_worker *w, const char *name);

/* Queues job; starts the thread at the first call. Returns 0, or -1 with
 * err set when the thread cannot be started (the job is not queued).
 * Loop thread only. */
int ha_worker_submit(struct ha_worker *w, struct ha_job *job, char *err,
                     size_t errlen);

/* Runs run(arg) on the calling thread in the worker's place: never while
 * the worker runs a job (it waits for the running one to end), so what
 * jobs own stays one thread's at a time. For work that could not be
 * queued; not from a job (that would wait for itself). NULL w: runs
 * run(arg) at once. */
void ha_worker_run_here(struct ha_worker *w, void (*run)(void *), void *arg);

/* Jobs submitted and not yet done (queued, running or finished awaiting
 * the loop). */
size_t ha_worker_pending(const struct ha_worker *w);

/* Waits for the running job to end, then calls done (ran false) for the
 * jobs still queued and frees w. Loop thread only. NULL is a no-op. */
void ha_worker_free(struct ha_worker *w);

/* For a fork child: forgets w without joining, locking or closing
 * anything that is not provably ours (the eventfd, by its identity). */
void ha_worker_abandon(struct ha_worker *w);

#endif /* HA_WORKER_H */
