/* SPDX-License-Identifier: MIT
 *
 * Tasks on fibers (see task.h).
 */
#include "core/task.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/fiber.h"
#include "core/worker.h"

/* The task whose body runs on this thread now. */
static _Thread_local struct ha_task *current;

struct ha_task_sched {
    struct event *ev;              /* gives the first in line its slice */
    struct ha_task *head, *tail;   /* ready to go on, in turn */
};

static void resume_cb(evutil_socket_t fd, short what, void *arg);

/* Takes t out of its scheduler's line (it ended or is released). */
static void
unqueue(struct ha_task *t)
{
    struct ha_task_sched *s;
    struct ha_task **p;

    /* A request refused before its task was set up is released too,
     * with no env (http/auth.c frees it on the wrong-password path). */
    if (!t->queued || t->env == NULL || (s = t->env->sched) == NULL)
        return;
    for (p = &s->head; *p != NULL; p = &(*p)->next_turn)
        if (*p == t) {
            *p = t->next_turn;
            break;
        }
    s->tail = NULL;
    for (struct ha_task *q = s->head; q != NULL; q = q->next_turn)
        s->tail = q;
    t->queued = false;
    t->next_turn = NULL;
}

/* One slice: the first in line goes on. The event is armed again before
 * it does, so the next one's turn comes at the next pass, after the
 * sockets that became ready meanwhile. */
static void
turn_cb(evutil_socket_t fd, short what, void *arg)
{
    static const struct timeval now = {0, 0};
    struct ha_task_sched *s = arg;
    struct ha_task *t = s->head;

    (void)fd;
    (void)what;
    if (t == NULL)
        return;
    s->head = t->next_turn;
    if (s->head == NULL)
        s->tail = NULL;
    t->queued = false;
    t->next_turn = NULL;
    if (s->head != NULL)
        evtimer_add(s->ev, &now);
    resume_cb(-1, 0, t);
}

struct ha_task_sched *
ha_task_sched_new(struct event_base *base)
{
    struct ha_task_sched *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->ev = evtimer_new(base, turn_cb, s);
    if (s->ev == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

void
ha_task_sched_free(struct ha_task_sched *s)
{
    if (s == NULL)
        return;
    event_free(s->ev);
    free(s);
}

void
ha_task_init(struct ha_task *t, const struct ha_task_env *env)
{
    memset(t, 0, sizeof(*t));
    t->env = env;
}

void
ha_task_release(struct ha_task *t)
{
    unqueue(t);
    if (t->resume_ev != NULL)
        event_free(t->resume_ev);
    if (t->deadline_ev != NULL)
        event_free(t->deadline_ev);
    t->resume_ev = t->deadline_ev = NULL;
}

struct ha_task *
ha_task_current(void)
{
    return current;
}

bool
ha_task_busy(const struct ha_task *t)
{
    return t != NULL && t->fiber != NULL;
}

static void
body_entry(void *arg)
{
    struct ha_task *t = arg;

    t->body(t->arg);
}

/* Switches into t's fiber (started or paused) with t current. */
static enum ha_fiber_status
enter(struct ha_task *t, bool start)
{
    struct ha_task *prev = current;
    enum ha_fiber_status st;

    current = t;
    st = start ? ha_fiber_start(t->fiber, body_entry, t)
               : ha_fiber_resume(t->fiber);
    current = prev;
    return st;
}

/* The body ended: the fiber goes back to the pool. */
static void
ended(struct ha_task *t)
{
    ha_fiber_pool_put(t->env->fibers, t->fiber);
    t->fiber = NULL;
    t->waiting = false;
    unqueue(t);
    t->deadline_ns = 0;
    if (t->deadline_ev != NULL)
        event_del(t->deadline_ev);
    if (t->resume_ev != NULL)
        event_del(t->resume_ev);
}

static void
resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_task *t = arg;

    (void)fd;
    (void)what;
    if (t->fiber == NULL || !ha_fiber_paused(t->fiber))
        return;
    if (enter(t, false) == HA_FIBER_PAUSED)
        return; /* whoever paused it scheduled its resumption */
    ended(t);
    if (t->finished != NULL)
        t->finished(t->arg); /* may free t */
}

/* Resumes t at the loop's next pass: a zero timeout, not event_active,
 * so the sockets ready meanwhile are served first. Returns -1 when that
 * cannot be scheduled. */
static int
schedule(struct ha_task *t, bool first)
{
    static const struct timeval now = {0, 0};
    struct ha_task_sched *s = t->env->sched;

    if (s != NULL) {
        if (t->queued)
            return 0;
        t->queued = true;
        t->next_turn = NULL;
        if (first && s->head != NULL) {
            t->next_turn = s->head;
            s->head = t;
        } else {
            if (s->tail != NULL)
                s->tail->next_turn = t;
            else
                s->head = t;
            s->tail = t;
        }
        if (!evtimer_pending(s->ev, NULL))
            evtimer_add(s->ev, &now);
        return 0;
    }
    if (t->resume_ev == NULL)
        t->resume_ev = evtimer_new(t->env->base, resume_cb, t);
    return t->resume_ev != NULL && evtimer_add(t->resume_ev, &now) == 0
               ? 0
               : -1;
}

int
ha_task_run(struct ha_task *t, void (*body)(void *),
            void (*finished)(void *), void *arg)
{
    t->body = body;
    t->finished = finished;
    t->arg = arg;
    /* A deadline set before the run is this run's (the HTTP front-end
     * sets max_execution_time so); the last run's ended with it. */
    t->killed = t->timed_out = t->waiting = false;
    t->fiber = t->env->fibers != NULL ? ha_fiber_pool_get(t->env->fibers)
                                      : NULL;
    if (t->fiber == NULL) {
        struct ha_task *prev = current;

        /* No stack to be had: the body runs to its end here, its slices
         * and waits returning at once. */
        current = NULL;
        body(arg);
        current = prev;
        t->deadline_ns = 0;
        if (t->deadline_ev != NULL)
            event_del(t->deadline_ev);
        return 0;
    }
    if (enter(t, true) == HA_FIBER_PAUSED)
        return 1;
    ended(t);
    return 0;
}

/* ha_task_slice and ha_task_step: first puts t's turn at the head. */
static void
pause_for_turn(struct ha_task *t, bool first)
{
    if (t == NULL || t->fiber == NULL || current != t)
        return;
    if (schedule(t, first) != 0)
        return; /* cannot pause: it runs on */
    ha_fiber_yield(t->fiber);
}

void
ha_task_slice(struct ha_task *t)
{
    pause_for_turn(t, false);
}

void
ha_task_step(struct ha_task *t)
{
    pause_for_turn(t, true);
}

void
ha_task_wait(struct ha_task *t)
{
    if (t == NULL || t->fiber == NULL || current != t)
        return;
    if (ha_task_stopped(t) != HA_TASK_GO)
        return;
    t->waiting = true;
    ha_fiber_yield(t->fiber);
    t->waiting = false;
}

void
ha_task_wake(struct ha_task *t)
{
    if (t != NULL && t->fiber != NULL && t->waiting)
        (void)schedule(t, false);
}

void
ha_task_kill(struct ha_task *t)
{
    if (t == NULL)
        return;
    t->killed = true;
    ha_task_wake(t);
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_task *t = arg;

    (void)fd;
    (void)what;
    t->timed_out = true;
    ha_task_wake(t);
}

void
ha_task_set_deadline(struct ha_task *t, int64_t deadline_ns)
{
    int64_t left;
    struct timeval tv;

    t->deadline_ns = deadline_ns;
    t->timed_out = false;
    if (t->deadline_ev != NULL)
        event_del(t->deadline_ev);
    if (deadline_ns == 0 || t->env->base == NULL)
        return;
    if (t->deadline_ev == NULL &&
        (t->deadline_ev = evtimer_new(t->env->base, deadline_cb, t)) == NULL)
        return; /* checked at each slice all the same */
    left = deadline_ns - ha_clock_ns();
    if (left < 0)
        left = 0;
    tv.tv_sec = (time_t)(left / 1000000000);
    tv.tv_usec = (suseconds_t)(left % 1000000000 / 1000);
    evtimer_add(t->deadline_ev, &tv);
}

static void
sleep_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ha_task_wake(arg);
}

int
ha_task_sleep(struct ha_task *t, int64_t ns)
{
    int64_t until = ha_clock_ns() + ns;
    struct event *ev;

    if (t == NULL || t->fiber == NULL || current != t ||
        t->env->base == NULL ||
        (ev = evtimer_new(t->env->base, sleep_cb, t)) == NULL)
        return -1;
    while (ha_task_stopped(t) == HA_TASK_GO) {
        int64_t left = until - ha_clock_ns();
        struct timeval tv;

        if (left <= 0)
            break;
        tv.tv_sec = (time_t)(left / 1000000000);
        tv.tv_usec = (suseconds_t)(left % 1000000000 / 1000);
        evtimer_add(ev, &tv);
        ha_task_wait(t); /* a wake may come early: look again */
    }
    event_free(ev);
    return ha_task_stopped(t) == HA_TASK_GO ? 0 : -1;
}

enum ha_task_stop
ha_task_stopped(const struct ha_task *t)
{
    if (t == NULL)
        return HA_TASK_GO;
    if (t->env->shutdown != NULL && atomic_load(t->env->shutdown))
        return HA_TASK_SHUTDOWN;
    if (t->killed)
        return HA_TASK_KILLED;
    if (t->timed_out ||
        (t->deadline_ns != 0 && ha_clock_ns() > t->deadline_ns))
        return HA_TASK_TIMEOUT;
    return HA_TASK_GO;
}

void
ha_task_abort(struct ha_task *t)
{
    if (t->fiber == NULL)
        return;
    t->killed = true;
    if (t->resume_ev != NULL)
        event_del(t->resume_ev);
    while (enter(t, false) == HA_FIBER_PAUSED) {
        if (t->resume_ev != NULL)
            event_del(t->resume_ev);
    }
    ended(t);
}

/* ------------------------------------------------------------------
 * Offloading to the worker thread
 * ------------------------------------------------------------------ */

struct offload {
    struct ha_job job;
    struct ha_task *task;          /* waiting for it; NULL: abandoned */
    void (*run)(void *);
    void (*discard)(void *);
    void *arg;
    bool finished;
    bool late;                     /* its own deadline passed */
};

static void
offload_run(void *arg)
{
    struct offload *o = arg;

    o->run(o->arg);
}

static void
offload_done(void *arg)
{
    struct offload *o = arg;

    o->finished = true;
    if (o->task == NULL) {
        /* Nobody waits any more: its result goes. */
        if (o->discard != NULL)
            o->discard(o->arg);
        free(o);
        return;
    }
    ha_task_wake(o->task);
}

int
ha_task_offload(void (*run)(void *), void (*discard)(void *), void *arg)
{
    return ha_task_offload_to(NULL, run, discard, arg);
}

int
ha_task_offload_ask(void (*run)(void *), void (*discard)(void *), void *arg)
{
    const struct ha_task_env *env = current != NULL ? current->env : NULL;
    struct ha_worker *w = NULL;

    if (env != NULL)
        for (size_t i = 0; i < env->n_askers; i++)
            if (w == NULL || ha_worker_pending(env->askers[i]) <
                                 ha_worker_pending(w))
                w = env->askers[i];
    return ha_task_offload_to(w, run, discard, arg);
}

int
ha_task_offload_to(struct ha_worker *w, void (*run)(void *),
                   void (*discard)(void *), void *arg)
{
    return ha_task_offload_named(w, NULL, run, discard, arg);
}

int
ha_task_offload_named(struct ha_worker *w, const char *what,
                      void (*run)(void *), void (*discard)(void *),
                      void *arg)
{
    return ha_task_offload_until(w, what, 0, run, discard, arg, NULL);
}

/* Wakes the task of an offload whose own deadline passed. */
static void
offload_late_cb(evutil_socket_t fd, short what, void *arg)
{
    struct offload *o = arg;

    (void)fd;
    (void)what;
    o->late = true;
    if (o->task != NULL)
        ha_task_wake(o->task);
}

int
ha_task_offload_until(struct ha_worker *w, const char *what,
                      int64_t deadline_ns, void (*run)(void *),
                      void (*discard)(void *), void *arg, bool *late)
{
    struct ha_task *t = current;
    struct event *timer = NULL;
    struct offload *o;
    bool ran;

    if (late != NULL)
        *late = false;
    if (w == NULL && t != NULL)
        w = t->env->worker;
    /* Where the task cannot wait, the caller's thread runs the job, but
     * never beside one of w's: what jobs own (the symbolizer) is one
     * thread's at a time (core/worker.h). */
    if (t == NULL || w == NULL || t->fiber == NULL) {
        ha_worker_run_here(w, run, arg);
        return 0;
    }
    if (ha_task_stopped(t) != HA_TASK_GO) {
        if (discard != NULL)
            discard(arg);
        return -1;
    }
    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        ha_worker_run_here(w, run, arg); /* no memory to wait with */
        return 0;
    }
    o->job.run = offload_run;
    o->job.done = offload_done;
    o->job.arg = o;
    o->job.what = what;
    o->task = t;
    o->run = run;
    o->discard = discard;
    o->arg = arg;
    if (ha_worker_submit(w, &o->job, NULL, 0) != 0) {
        free(o);
        ha_worker_run_here(w, run, arg); /* no thread to be had */
        return 0;
    }
    if (deadline_ns != 0) {
        int64_t left = deadline_ns - ha_clock_ns();
        struct timeval tv;

        if (left < 0)
            left = 0;
        tv.tv_sec = (time_t)(left / 1000000000);
        tv.tv_usec = (suseconds_t)(left % 1000000000 / 1000);
        if (t->env->base != NULL)
            timer = evtimer_new(t->env->base, offload_late_cb, o);
        if (timer == NULL || evtimer_add(timer, &tv) != 0)
            o->late = left == 0; /* checked at each wake all the same */
    }
    while (!o->finished && !o->late && ha_task_stopped(t) == HA_TASK_GO) {
        ha_task_wait(t);
        if (deadline_ns != 0 && ha_clock_ns() >= deadline_ns)
            o->late = true;
    }
    if (timer != NULL)
        event_free(timer);
    if (!o->finished) {
        if (late != NULL)
            *late = o->late && ha_task_stopped(t) == HA_TASK_GO;
        o->task = NULL; /* offload_done discards it */
        return -1;
    }
    ran = o->job.ran;
    free(o);
    if (!ran) {
        if (discard != NULL)
            discard(arg);
        return -1;
    }
    return 0;
}
