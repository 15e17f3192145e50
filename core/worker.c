/* SPDX-License-Identifier: MIT
 *
 * The worker thread (see worker.h): a queue under a mutex, a condition
 * variable the thread sleeps on, and an eventfd that wakes the loop when
 * a job is done.
 */
#include "core/worker.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

struct ha_worker {
    struct event_base *base;
    void (*thread_init)(void *);
    void *init_arg;

    pthread_mutex_t mu;            /* guards queue, done, stop and each
                                      job's ran */
    pthread_cond_t cv;             /* the thread waits here for jobs */
    struct ha_job *queue, *tail;   /* submitted, not yet run (mu) */
    struct ha_job *done, *done_tail; /* run, done not yet called (mu) */
    bool stop;                     /* ha_worker_free: the thread ends (mu) */
    size_t pending;                /* submitted and not yet done (loop) */
    pthread_mutex_t run_lock;      /* held while a job runs, here or in
                                      the worker's place: what jobs own
                                      (ha_worker_run_here) */

    bool started;                  /* the thread exists */
    pthread_t thread;
    int efd;                       /* eventfd: jobs done; -1 until the
                                      thread starts */
    dev_t efd_dev;                 /* its identity, for abandon */
    ino_t efd_ino;
    struct event *ev;              /* reads efd on the loop */
    char name[16];                 /* the thread's (ps -L, top -H) */
};

static void *
worker_main(void *arg)
{
    struct ha_worker *w = arg;

    if (w->thread_init != NULL)
        w->thread_init(w->init_arg);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        struct ha_job *j;
        uint64_t one = 1;

        while (w->queue == NULL && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop)
            break;
        j = w->queue;
        w->queue = j->next;
        if (w->queue == NULL)
            w->tail = NULL;
        j->next = NULL;
        pthread_mutex_unlock(&w->mu);
        pthread_mutex_lock(&w->run_lock);
        j->run(j->arg);
        pthread_mutex_unlock(&w->run_lock);
        pthread_mutex_lock(&w->mu);
        j->ran = true;
        if (w->done_tail != NULL)
            w->done_tail->next = j;
        else
            w->done = j;
        w->done_tail = j;
        /* Best effort: a full counter (never in practice) still reads
         * as readable, so the loop wakes anyway. */
        if (write(w->efd, &one, sizeof(one)) < 0) {
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Takes the finished jobs and calls their done callbacks, in order. */
static void
drain_done(struct ha_worker *w)
{
    struct ha_job *j;

    pthread_mutex_lock(&w->mu);
    j = w->done;
    w->done = w->done_tail = NULL;
    pthread_mutex_unlock(&w->mu);
    while (j != NULL) {
        struct ha_job *next = j->next;

        j->next = NULL;
        w->pending--;
        j->done(j->arg); /* may free j */
        j = next;
    }
}

static void
efd_cb(evutil_socket_t fd, short what, void *arg)
{
    uint64_t n;

    (void)what;
    if (read(fd, &n, sizeof(n)) < 0) {
    }
    drain_done(arg);
}

struct ha_worker *
ha_worker_new(struct event_base *base, void (*thread_init)(void *),
              void *init_arg, char *err, size_t errlen)
{
    struct ha_worker *w = calloc(1, sizeof(*w));

    if (w == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return NULL;
    }
    w->base = base;
    w->thread_init = thread_init;
    w->init_arg = init_arg;
    w->efd = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_mutex_init(&w->run_lock, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

static int
start(struct ha_worker *w, char *err, size_t errlen)
{
    sigset_t all, old;
    struct stat st;
    int rc;

    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->efd < 0) {
        ha_err_set(err, errlen, "worker: eventfd: %s", strerror(errno));
        return -1;
    }
    if (fstat(w->efd, &st) == 0) {
        w->efd_dev = st.st_dev;
        w->efd_ino = st.st_ino;
    }
    w->ev = event_new(w->base, w->efd, EV_READ | EV_PERSIST, efd_cb, w);
    if (w->ev == NULL || event_add(w->ev, NULL) != 0) {
        ha_err_set(err, errlen, "worker: cannot watch its eventfd");
        goto fail;
    }
    /* The thread inherits this mask: none of the host's signals is ever
     * delivered to it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        ha_err_set(err, errlen, "worker: cannot start a thread: %s",
                   strerror(rc));
        goto fail;
    }
    pthread_setname_np(w->thread, w->name[0] ? w->name : "heapadmin-work");
    w->started = true;
    return 0;
fail:
    if (w->ev != NULL)
        event_free(w->ev);
    w->ev = NULL;
    close(w->efd);
    w->efd = -1;
    return -1;
}

int
ha_worker_submit(struct ha_worker *w, struct ha_job *job, char *err,
                 size_t errlen)
{
    if (!w->started && start(w, err, errlen) != 0)
        return -1;
    job->ran = false;
    job->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (w->tail != NULL)
        w->tail->next = job;
    else
        w->queue = job;
    w->tail = job;
    w->pending++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void
ha_worker_run_here(struct ha_worker *w, void (*run)(void *), void *arg)
{
    if (w == NULL) {
        run(arg);
        return;
    }
    pthread_mutex_lock(&w->run_lock);
    run(arg);
    pthread_mutex_unlock(&w->run_lock);
}

size_t
ha_worker_pending(const struct ha_worker *w)
{
    return w != NULL ? w->pending : 0;
}

/* True when efd is still the eventfd we opened (a host may close
 * descriptors it does not own and reuse the number). */
static bool
efd_is_ours(const struct ha_worker *w)
{
    struct stat st;

    return w->efd >= 0 && fstat(w->efd, &st) == 0 &&
           st.st_dev == w->efd_dev && st.st_ino == w->efd_ino;
}

void
ha_worker_free(struct ha_worker *w)
{
    struct ha_job *q;

    if (w == NULL)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        drain_done(w);
    }
    q = w->queue;
    w->queue = w->tail = NULL;
    while (q != NULL) {
        struct ha_job *next = q->next;

        q->next = NULL;
        q->ran = false;
        w->pending--;
        q->done(q->arg);
        q = next;
    }
    if (w->ev != NULL)
        event_free(w->ev);
    if (efd_is_ours(w))
        close(w->efd);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->run_lock);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void
ha_worker_abandon(struct ha_worker *w)
{
    if (w == NULL)
        return;
    if (efd_is_ours(w))
        close(w->efd);
    w->efd = -1;
}

void
ha_worker_set_name(struct ha_worker *w, const char *name)
{
    size_t n = strlen(name);

    if (n >= sizeof(w->name))
        n = sizeof(w->name) - 1;
    memcpy(w->name, name, n);
    w->name[n] = '\0';
}
