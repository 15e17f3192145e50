/* SPDX-License-Identifier: MIT
 *
 * The log's writer thread (see logq.h): a byte ring under a mutex.
 */
#include "daemon/logq.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ha_logq {
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* the writer waits for lines */
    pthread_cond_t idle_cv;        /* ha_logq_stop waits for the end
                                      (CLOCK_MONOTONIC) */
    char *ring;                    /* HA_LOGQ_BYTES */
    size_t head, len;              /* queued bytes: ring[head ..), wrapping */
    unsigned long dropped;         /* lines dropped since the last note */
    int fd;
    const char *reopen;            /* a path to open onto fd first */
    bool writing;                  /* the writer holds lines out of ring */
    bool stop;                     /* write what is left, then end */
    bool done;                     /* the writer ended */
    bool abandoned;                /* ha_logq_stop gave up: the writer
                                      frees q */
    pthread_t thread;
};

static void
free_q(struct ha_logq *q)
{
    pthread_cond_destroy(&q->idle_cv);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
    free(q);
}

/* Writes all of buf to fd; a failure (a full disk) loses the lines, as a
 * direct write would have. */
static void
write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        n -= (size_t)w;
    }
}

static void *
writer_main(void *arg)
{
    struct ha_logq *q = arg;
    char *chunk = malloc(HA_LOGQ_BYTES);
    bool abandoned;

    pthread_mutex_lock(&q->mu);
    for (;;) {
        size_t n, first;
        unsigned long dropped;
        int fd;

        while (q->len == 0 && q->dropped == 0 && q->reopen == NULL &&
               !q->stop)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->reopen != NULL) {
            const char *path = q->reopen;
            int old = q->fd, nfd;

            q->reopen = NULL;
            pthread_mutex_unlock(&q->mu);
            /* Onto the same descriptor: the daemon's own writes after
             * the stop go there too. */
            nfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
            if (nfd >= 0) {
                (void)dup2(nfd, STDERR_FILENO);
                if (old >= 0 && old != STDERR_FILENO)
                    (void)dup3(nfd, old, O_CLOEXEC);
                close(nfd);
            }
            pthread_mutex_lock(&q->mu);
            continue;
        }
        if (q->len == 0 && q->dropped == 0)
            break; /* stopping, all written */
        n = q->len;
        first = HA_LOGQ_BYTES - q->head < n ? HA_LOGQ_BYTES - q->head : n;
        if (chunk != NULL) {
            memcpy(chunk, q->ring + q->head, first);
            memcpy(chunk + first, q->ring, n - first);
        }
        q->head = (q->head + n) % HA_LOGQ_BYTES;
        q->len = 0;
        dropped = q->dropped;
        q->dropped = 0;
        fd = q->fd;
        q->writing = true;
        pthread_mutex_unlock(&q->mu);
        if (chunk != NULL)
            write_all(fd, chunk, n);
        if (dropped > 0) {
            char note[160];
            int m = snprintf(note, sizeof(note),
                             "(heapadmind: %lu log lines were dropped: the "
                             "log file did not take them in time)\n",
                             dropped);

            if (m > 0)
                write_all(fd, note, (size_t)m);
        }
        pthread_mutex_lock(&q->mu);
        q->writing = false;
        pthread_cond_broadcast(&q->idle_cv);
    }
    q->done = true;
    abandoned = q->abandoned;
    pthread_cond_broadcast(&q->idle_cv);
    pthread_mutex_unlock(&q->mu);
    free(chunk);
    if (abandoned)
        free_q(q);
    return NULL;
}

struct ha_logq *
ha_logq_start(int fd)
{
    struct ha_logq *q = calloc(1, sizeof(*q));
    pthread_condattr_t ca;
    sigset_t all, old;
    int rc;

    if (q == NULL || (q->ring = malloc(HA_LOGQ_BYTES)) == NULL) {
        free(q);
        return NULL;
    }
    q->fd = fd;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->idle_cv, &ca);
    pthread_condattr_destroy(&ca);
    /* No signal is ever delivered to it (SIGTERM is the loop's). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&q->thread, NULL, writer_main, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        free_q(q);
        return NULL;
    }
    pthread_setname_np(q->thread, "heapadmin-log");
    return q;
}

bool
ha_logq_put(struct ha_logq *q, const char *text, size_t len)
{
    bool kept = false;

    pthread_mutex_lock(&q->mu);
    if (len <= HA_LOGQ_BYTES - q->len) {
        size_t tail = (q->head + q->len) % HA_LOGQ_BYTES;
        size_t first = HA_LOGQ_BYTES - tail < len ? HA_LOGQ_BYTES - tail
                                                  : len;

        memcpy(q->ring + tail, text, first);
        memcpy(q->ring, text + first, len - first);
        q->len += len;
        kept = true;
    } else {
        q->dropped++;
    }
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return kept;
}

void
ha_logq_reopen(struct ha_logq *q, const char *path)
{
    pthread_mutex_lock(&q->mu);
    q->reopen = path;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void
ha_logq_set_fd(struct ha_logq *q, int fd)
{
    pthread_mutex_lock(&q->mu);
    q->fd = fd;
    pthread_mutex_unlock(&q->mu);
}

int
ha_logq_stop(struct ha_logq *q, int timeout_ms)
{
    struct timespec ts;
    bool done;

    if (q == NULL)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_signal(&q->cv);
    while (!q->done &&
           pthread_cond_timedwait(&q->idle_cv, &q->mu, &ts) == 0)
        ;
    done = q->done;
    if (!done)
        q->abandoned = true;
    pthread_mutex_unlock(&q->mu);
    if (!done) {
        pthread_detach(q->thread);
        return -1;
    }
    pthread_join(q->thread, NULL);
    free_q(q);
    return 0;
}
