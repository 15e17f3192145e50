/* SPDX-License-Identifier: MIT
 *
 * Thread mode (heapadmin_start): the instance on a thread and event loop
 * of its own, which no signal of the host's reaches; stopped through a
 * pipe. The loop's own descriptors are noted as it is made, so that a
 * fork child can close them (abandon.c).
 */
#include "api/thread.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/arena.h"
#include "api/instance.h"
#include "api/serve.h"
#include "core/dirwalk.h"
#include "core/log.h"
#include "core/util.h"
#include "include/heapadmin.h"

static void
stop_cb(evutil_socket_t fd, short what, void *arg)
{
    struct heapadmin *h = arg;
    char c;

    (void)what;
    while (read(fd, &c, 1) > 0) {
    }
    ha_api_serve_quiesce(h);
    event_base_loopbreak(h->base);
}

static void
report_start(struct heapadmin *h, enum ha_api_state state, const char *err)
{
    pthread_mutex_lock(&h->mu);
    h->state = state;
    if (err != NULL)
        ha_strlcpy(h->start_err, err, sizeof(h->start_err));
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* The descriptors open now, into fds (sorted ascending, as the kernel
 * lists them); returns how many, up to max. */
struct fd_list {
    int *fds;
    size_t n, max;
};

static bool
add_fd(long fd, void *arg)
{
    struct fd_list *l = arg;

    l->fds[l->n++] = (int)fd;
    return l->n < l->max;
}

static size_t
list_fds(int *fds, size_t max)
{
    struct fd_list l = {.fds = fds, .n = 0, .max = max};

    if (max > 0)
        (void)ha_dirwalk_fds(add_fd, &l);
    return l.n;
}

/* The loop's own pipes and sockets (libevent's signal pipe), which it
 * does not name: the descriptors that appeared while it was made. A
 * host thread opening one at that moment could be counted too; each is
 * then closed in a fork child only while it is still the same pipe or
 * socket, which is never the host's. */
static struct event_base *
new_base(struct heapadmin *h)
{
    enum { MAX = 4096 };
    int *before = malloc(MAX * sizeof(int)), after[64];
    size_t nb = before != NULL ? list_fds(before, MAX) : 0, na;
    struct event_base *base = event_base_new();

    h->n_base_fds = 0;
    if (base == NULL || before == NULL || nb == MAX) {
        free(before);
        return base;
    }
    na = list_fds(after, sizeof(after) / sizeof(after[0]));
    for (size_t i = 0; i < na; i++) {
        bool old = false;
        struct stat st;

        for (size_t j = 0; j < nb && !old; j++)
            old = before[j] == after[i];
        if (old || h->n_base_fds == HA_ARRAY_SIZE(h->base_fds) ||
            fstat(after[i], &st) != 0 ||
            !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
            continue;
        h->base_fds[h->n_base_fds].fd = after[i];
        h->base_fds[h->n_base_fds].dev = st.st_dev;
        h->base_fds[h->n_base_fds].ino = st.st_ino;
        h->n_base_fds++;
    }
    free(before);
    return base;
}

static void *
run_thread(void *arg)
{
    struct heapadmin *h = arg;
    char err[HA_API_ERR_MAX] = "";

    pthread_setname_np(pthread_self(), "heapadmin");
    ha_log_bind(&h->sink);
    ha_api_arena_hide_thread(h);
    h->base = new_base(h);
    if (h->base == NULL) {
        ha_err_set(err, sizeof(err), "cannot create an event loop");
        goto fail;
    }
    h->stop_ev = event_new(h->base, h->stop_fds[0], EV_READ | EV_PERSIST,
                           stop_cb, h);
    if (h->stop_ev == NULL || event_add(h->stop_ev, NULL) != 0) {
        ha_err_set(err, sizeof(err), "cannot watch the stop pipe");
        goto fail;
    }
    if (ha_api_serve_setup(h, err, sizeof(err)) != 0)
        goto fail;
    report_start(h, HA_API_RUNNING, NULL);
    event_base_dispatch(h->base);
    ha_log_notice("heapadmin stopped");
    ha_api_serve_teardown(h);
    return NULL;

fail:
    ha_log_error("%s", err);
    ha_api_serve_teardown(h);
    report_start(h, HA_API_FAILED, err);
    return NULL;
}

static void
close_stop_pipe(struct heapadmin *h)
{
    for (int i = 0; i < 2; i++) {
        if (h->stop_fds[i] >= 0)
            close(h->stop_fds[i]);
        h->stop_fds[i] = -1;
    }
}

int
heapadmin_start(struct heapadmin *h, char *err, size_t errlen)
{
    sigset_t all, old;
    int rc;

    if (h->state != HA_API_STOPPED) {
        ha_err_set(err, errlen, "already started");
        return -1;
    }
    if (pipe2(h->stop_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        ha_err_set(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        struct stat st;

        if (fstat(h->stop_fds[i], &st) == 0) {
            h->stop_dev[i] = st.st_dev;
            h->stop_ino[i] = st.st_ino;
        }
    }
    h->own_thread = true;
    h->state = HA_API_STARTING;
    h->start_err[0] = '\0';
    /* The thread inherits this mask: no signal of the host's is ever
     * delivered to it (a host reading SIGTERM through signalfd, or one
     * that leaves SIGPIPE at its default, keeps working). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&h->thread, NULL, run_thread, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        h->state = HA_API_STOPPED;
        close_stop_pipe(h);
        ha_err_set(err, errlen, "cannot start the admin thread: %s",
                   strerror(rc));
        return -1;
    }
    pthread_mutex_lock(&h->mu);
    while (h->state == HA_API_STARTING)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (h->state == HA_API_FAILED) {
        pthread_join(h->thread, NULL);
        h->state = HA_API_STOPPED;
        close_stop_pipe(h);
        ha_err_set(err, errlen, "%s", h->start_err);
        return -1;
    }
    return 0;
}

void
ha_api_thread_stop(struct heapadmin *h)
{
    if (write(h->stop_fds[1], "x", 1) < 0) {
    }
    pthread_join(h->thread, NULL);
    close_stop_pipe(h);
}
