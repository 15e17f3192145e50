/* SPDX-License-Identifier: MIT
 *
 * Disk calls off the loop, with a bounded wait (see blockio.h).
 */
#include "core/blockio.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "core/worker.h"

/* The loop's binding of this thread (ha_blockio_bind). */
static _Thread_local struct ha_blockio *bound;

struct ha_blockio *
ha_blockio_bind(struct ha_blockio *b)
{
    struct ha_blockio *prev = bound;

    bound = b;
    return prev;
}

void
ha_blockio_unbind(const struct ha_blockio *b)
{
    if (bound == b)
        bound = NULL;
}

/* The I/O thread serving a call made here now, or NULL (run here). */
static struct ha_blockio *
serving(struct ha_task **task)
{
    struct ha_task *t = ha_task_current();

    *task = NULL;
    if (t != NULL && t->fiber != NULL && t->env->blockio != NULL &&
        t->env->blockio->worker != NULL) {
        *task = t;
        return t->env->blockio;
    }
    return bound != NULL && bound->worker != NULL ? bound : NULL;
}

bool
ha_blockio_offloading(void)
{
    struct ha_task *t;

    return serving(&t) != NULL;
}

int64_t
ha_blockio_deadline(int64_t *timeout_ms)
{
    struct ha_task *t;
    struct ha_blockio *b = serving(&t);
    int64_t limit, deadline = 0, stop_by;

    if (timeout_ms != NULL)
        *timeout_ms = 0;
    if (b == NULL)
        return 0;
    limit = atomic_load(&b->timeout_ms);
    if (timeout_ms != NULL)
        *timeout_ms = limit;
    if (limit > 0)
        deadline = ha_clock_ns() + limit * 1000000;
    stop_by = atomic_load(&b->stop_by_ns);
    if (stop_by != 0 && (deadline == 0 || stop_by < deadline))
        deadline = stop_by;
    return deadline;
}

bool
ha_blockio_worker_stuck(struct ha_worker *w, const char **what,
                        int64_t *for_ms)
{
    struct ha_task *t;
    struct ha_blockio *b = serving(&t);
    int64_t since, limit;

    if (b == NULL || w == NULL ||
        (limit = atomic_load(&b->timeout_ms)) <= 0 ||
        !ha_worker_running(w, what, &since))
        return false;
    *for_ms = (ha_clock_ns() - since) / 1000000;
    return *for_ms >= limit;
}

bool
ha_blockio_stuck(const struct ha_blockio *b, const char **what,
                 int64_t *for_ms)
{
    int64_t since, limit = atomic_load(&b->timeout_ms);

    if (b->worker == NULL || limit <= 0 ||
        !ha_worker_running(b->worker, what, &since))
        return false;
    *for_ms = (ha_clock_ns() - since) / 1000000;
    return *for_ms >= limit;
}

/* ------------------------------------------------------------------
 * The loop's thread outside a task: a bounded blocking wait
 * ------------------------------------------------------------------ */

struct call {
    struct ha_job job;
    void (*run)(void *);
    void (*discard)(void *);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* CLOCK_MONOTONIC */
    bool finished;                 /* run returned (mu) */
    bool abandoned;                /* the caller stopped waiting (mu) */
    int refs;                      /* the waiter's and the job's done
                                      callback's, which runs on the
                                      worker's loop: another thread when
                                      the one bound is not the loop's
                                      (mu) */
};

static void
call_free(struct call *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Drops one reference; the last frees c. */
static void
call_put(struct call *c)
{
    bool last;

    pthread_mutex_lock(&c->mu);
    last = --c->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (last)
        call_free(c);
}

static void
call_run(void *p)
{
    struct call *c = p;

    c->run(c->arg);
    pthread_mutex_lock(&c->mu);
    c->finished = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* On the worker's loop once run ended (or never ran: the worker was
 * freed first): an abandoned call's arg goes to its discard. */
static void
call_done(void *p)
{
    struct call *c = p;
    bool abandoned;

    pthread_mutex_lock(&c->mu);
    abandoned = c->abandoned;
    pthread_mutex_unlock(&c->mu);
    if (abandoned && c->discard != NULL)
        c->discard(c->arg);
    call_put(c);
}

/* Submits run(arg) to b's thread and blocks until it has run or the
 * deadline (0: none) passed. Returns 0, 1 when late (arg is discard's),
 * or -1 when it could not be queued (not run). */
static int
call_blocking(struct ha_blockio *b, const char *what, int64_t deadline_ns,
              void (*run)(void *), void (*discard)(void *), void *arg)
{
    struct call *c = calloc(1, sizeof(*c));
    pthread_condattr_t ca;
    int late = 0;

    if (c == NULL)
        return -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->run = run;
    c->discard = discard;
    c->arg = arg;
    c->refs = 2;
    c->job.run = call_run;
    c->job.done = call_done;
    c->job.arg = c;
    c->job.what = what;
    if (ha_worker_submit(b->worker, &c->job, NULL, 0) != 0) {
        call_free(c);
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    while (!c->finished) {
        struct timespec ts;

        if (deadline_ns == 0) {
            pthread_cond_wait(&c->cv, &c->mu);
            continue;
        }
        ts.tv_sec = (time_t)(deadline_ns / 1000000000);
        ts.tv_nsec = (long)(deadline_ns % 1000000000);
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) != 0 &&
            !c->finished) {
            c->abandoned = true;
            late = 1;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    call_put(c);
    return late;
}

/* ------------------------------------------------------------------
 * Calls
 * ------------------------------------------------------------------ */

/* Why a call was given up: its deadline passed. */
static void
late_text(char *err, size_t errlen, bool at_stop, int64_t limit,
          const char *what)
{
    if (at_stop)
        ha_err_set(err, errlen,
                   "the datadir's disk did not answer before the stop's "
                   "deadline (%s)",
                   what);
    else
        ha_err_set(err, errlen,
                   "the datadir's disk did not answer within "
                   "disk_timeout_ms = %lld (%s)",
                   (long long)limit, what);
}

int
ha_blockio_call(const char *what, void (*run)(void *),
                void (*discard)(void *), void *arg, char *err,
                size_t errlen)
{
    struct ha_task *t;
    struct ha_blockio *b = serving(&t);
    const char *busy;
    int64_t limit, deadline = 0, for_ms, stop_by;
    bool at_stop = false;
    bool late = false;
    int rc;

    if (b == NULL) {
        run(arg);
        return 0;
    }
    limit = atomic_load(&b->timeout_ms);
    if (ha_blockio_stuck(b, &busy, &for_ms)) {
        ha_err_set(err, errlen,
                   "the datadir's disk has not answered for %lld s (the "
                   "I/O thread has been %s since; disk_timeout_ms = %lld), "
                   "so %s was not tried",
                   (long long)(for_ms / 1000), busy, (long long)limit,
                   what);
        if (discard != NULL)
            discard(arg);
        return -1;
    }
    if (limit > 0)
        deadline = ha_clock_ns() + limit * 1000000;
    stop_by = atomic_load(&b->stop_by_ns);
    if (stop_by != 0 && (deadline == 0 || stop_by < deadline)) {
        deadline = stop_by;
        at_stop = true;
    }
    if (t != NULL) {
        rc = ha_task_offload_until(b->worker, what, deadline, run, discard,
                                   arg, &late);
        if (rc == 0)
            return 0;
        if (late)
            late_text(err, errlen, at_stop, limit, what);
        else
            ha_err_set(err, errlen,
                       "the statement stopped waiting for the disk (KILL, "
                       "max_execution_time or shutdown) while %s",
                       what);
        return -1;
    }
    rc = call_blocking(b, what, deadline, run, discard, arg);
    if (rc < 0) {
        /* No thread to be had: as before there was one. */
        run(arg);
        return 0;
    }
    if (rc == 0)
        return 0;
    late_text(err, errlen, at_stop, limit, what);
    ha_log_warn("%s, on the loop's thread outside a statement: abandoned",
                err);
    return -1;
}

int
ha_blockio_call_on(struct ha_worker *w, const char *what,
                   void (*run)(void *), void (*discard)(void *), void *arg,
                   char *err, size_t errlen)
{
    const char *busy;
    int64_t for_ms, limit, deadline;
    bool late = false;

    if (ha_blockio_worker_stuck(w, &busy, &for_ms)) {
        ha_err_set(err, errlen,
                   "the disk worker has been %s for %lld s: the datadir's "
                   "disk is not answering, so %s was not tried",
                   busy, (long long)(for_ms / 1000), what);
        if (discard != NULL)
            discard(arg);
        return -1;
    }
    deadline = ha_blockio_deadline(&limit);
    if (ha_task_offload_until(w, what, deadline, run, discard, arg,
                              &late) == 0)
        return 0;
    if (late)
        ha_err_set(err, errlen,
                   "the datadir's disk did not answer within "
                   "disk_timeout_ms = %lld (%s); it goes on, and is done "
                   "if the disk answers",
                   (long long)limit, what);
    else
        ha_err_set(err, errlen,
                   "the statement stopped waiting (KILL, max_execution_time "
                   "or shutdown) while %s; it goes on",
                   what);
    return -1;
}

/* ------------------------------------------------------------------
 * Posts
 * ------------------------------------------------------------------ */

struct post {
    struct ha_job job;
    void (*run)(void *);
    void (*done)(void *);
    void *arg;
};

static void
post_run(void *p)
{
    struct post *o = p;

    o->run(o->arg);
}

static void
post_done(void *p)
{
    struct post *o = p;

    if (o->done != NULL)
        o->done(o->arg);
    free(o);
}

void
ha_blockio_post(const char *what, void (*run)(void *), void (*done)(void *),
                void *arg)
{
    struct ha_task *t;
    struct ha_blockio *b = serving(&t);
    struct post *o;

    if (b != NULL && (o = calloc(1, sizeof(*o))) != NULL) {
        o->run = run;
        o->done = done;
        o->arg = arg;
        o->job.run = post_run;
        o->job.done = post_done;
        o->job.arg = o;
        o->job.what = what;
        if (ha_worker_submit(b->worker, &o->job, NULL, 0) == 0)
            return;
        free(o);
    }
    run(arg);
    if (done != NULL)
        done(arg);
}

static void
close_run(void *arg)
{
    (void)close((int)(intptr_t)arg);
}

void
ha_blockio_close(int fd)
{
    if (fd >= 0)
        ha_blockio_post("closing a file of the datadir", close_run, NULL,
                        (void *)(intptr_t)fd);
}

/* ------------------------------------------------------------------
 * Detached
 * ------------------------------------------------------------------ */

struct detached {
    void (*run)(void *);
    void (*free_fn)(void *);
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* CLOCK_MONOTONIC */
    bool finished;                 /* run returned (mu) */
    bool abandoned;                /* the caller went (mu); the thread
                                      frees this */
};

static void
detached_free(struct detached *d)
{
    if (d->free_fn != NULL)
        d->free_fn(d->arg);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

static void *
detached_main(void *p)
{
    struct detached *d = p;
    bool gone;

    d->run(d->arg);
    pthread_mutex_lock(&d->mu);
    d->finished = true;
    gone = d->abandoned;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    if (gone)
        detached_free(d);
    return NULL;
}

int
ha_blockio_run_detached(void (*run)(void *), void (*free_fn)(void *),
                        void *arg, int64_t timeout_ms)
{
    struct detached *d = calloc(1, sizeof(*d));
    pthread_condattr_t ca;
    sigset_t all, old;
    pthread_t th;
    int64_t deadline = ha_clock_ns() + timeout_ms * 1000000;
    bool done;
    int rc;

    if (d == NULL) {
        if (free_fn != NULL)
            free_fn(arg);
        return -1;
    }
    d->run = run;
    d->free_fn = free_fn;
    d->arg = arg;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* None of the host's signals is ever delivered to it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&th, NULL, detached_main, d);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        detached_free(d);
        return -1;
    }
    pthread_mutex_lock(&d->mu);
    while (!d->finished) {
        struct timespec ts = {(time_t)(deadline / 1000000000),
                              (long)(deadline % 1000000000)};

        if (pthread_cond_timedwait(&d->cv, &d->mu, &ts) != 0 &&
            !d->finished)
            break;
    }
    done = d->finished;
    if (!done)
        d->abandoned = true;
    pthread_mutex_unlock(&d->mu);
    if (!done) {
        pthread_detach(th);
        return -1;
    }
    pthread_join(th, NULL);
    detached_free(d);
    return 0;
}
