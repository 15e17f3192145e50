/* SPDX-License-Identifier: MIT
 *
 * accept() failures, once per burst (see acceptguard.h).
 */
#include "core/acceptguard.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/forkguard.h"
#include "core/log.h"

static void
open_reserve(struct ha_accept_guard *g)
{
    struct stat st;

    if (g->reserve_fd >= 0)
        return;
    /* An unbound socket, not /dev/null: its inode is ours alone, so a
     * fork child (and a host that reused the number) can tell it apart
     * from the host's own /dev/null. */
    g->reserve_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (g->reserve_fd >= 0 && fstat(g->reserve_fd, &st) == 0) {
        g->reserve_dev = st.st_dev;
        g->reserve_ino = st.st_ino;
    }
}

/* Closes the reserve only if it is still ours: inside a host that closed
 * it and reused the number, it is the host's now. */
static void
close_reserve(struct ha_accept_guard *g)
{
    struct stat st;

    if (g->reserve_fd >= 0 && fstat(g->reserve_fd, &st) == 0 &&
        S_ISSOCK(st.st_mode) && st.st_dev == g->reserve_dev &&
        st.st_ino == g->reserve_ino)
        close(g->reserve_fd);
    g->reserve_fd = -1;
}

static void
pause_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_accept_guard *g = arg;

    (void)fd;
    (void)what;
    open_reserve(g);
    for (size_t i = 0; i < g->n_ls && !g->stopped; i++)
        evconnlistener_enable(g->ls[i]);
}

/* Which guard watches which listener: the error callback's argument is
 * the listener's owner's (evhttp's, for HTTP), so the guard is found by
 * the listener. Taken only to add, remove and on accept() errors, always
 * inside the fork gate (core/forkguard.h): the lock is the process's, and
 * a host that forked while an agent's thread held it (adding its
 * listeners at start) left it held for ever in the child, whose agent
 * then hung at its own start (forkrace.sh under TSan, 1 child of 72). */
static pthread_mutex_t watched_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watched {
    struct evconnlistener *l;
    struct ha_accept_guard *g;
} watched[64];

static void
lock_watched(void)
{
    ha_forkguard_enter();
    pthread_mutex_lock(&watched_lock);
}

static void
unlock_watched(void)
{
    pthread_mutex_unlock(&watched_lock);
    ha_forkguard_leave();
}

static const char *
desc_of(const struct ha_accept_guard *g, const struct evconnlistener *l)
{
    for (size_t i = 0; i < g->n_ls; i++)
        if (g->ls[i] == l)
            return g->desc[i];
    return "?";
}

static struct ha_accept_guard *
guard_of(struct evconnlistener *l)
{
    struct ha_accept_guard *g = NULL;

    lock_watched();
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
        if (watched[i].l == l) {
            g = watched[i].g;
            break;
        }
    unlock_watched();
    return g;
}

static void
unwatch(struct ha_accept_guard *g)
{
    lock_watched();
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
        if (watched[i].g == g)
            watched[i].l = NULL, watched[i].g = NULL;
    unlock_watched();
}

static void
error_cb(struct evconnlistener *l, void *arg)
{
    struct ha_accept_guard *g = guard_of(l);
    int e = EVUTIL_SOCKET_ERROR();
    struct timeval pause = {0, HA_ACCEPTGUARD_PAUSE_MS * 1000};
    evutil_socket_t fd;

    (void)arg;
    if (g == NULL || e == EAGAIN || e == EWOULDBLOCK || e == EINTR ||
        e == ECONNABORTED)
        return;
    if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
        if (!g->refusing)
            ha_log_error("%saccept on %s failed: %s (one line per burst)",
                         g->who, desc_of(g, l),
                         evutil_socket_error_to_string(e));
        g->refusing = true;
        g->refused++;
        return;
    }
    if (!g->refusing)
        ha_log_error("%saccept on %s failed: %s: refusing new connections "
                     "until descriptors are free (one line per burst); "
                     "open sessions are still served",
                     g->who, desc_of(g, l), evutil_socket_error_to_string(e));
    g->refusing = true;
    if (g->reserve_fd >= 0) {
        close_reserve(g);
        fd = accept4(evconnlistener_get_fd(l), NULL, NULL,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            g->refused++;
            g->refuse(fd, g->arg);
        }
        open_reserve(g);
        if (fd >= 0)
            return;
    }
    if (g->pause == NULL)
        g->pause = evtimer_new(g->base, pause_cb, g);
    if (g->pause == NULL)
        return;
    for (size_t i = 0; i < g->n_ls; i++)
        evconnlistener_disable(g->ls[i]);
    evtimer_add(g->pause, &pause);
}

void
ha_accept_guard_init(struct ha_accept_guard *g, struct event_base *base,
                     const char *who, void (*refuse)(int, void *), void *arg)
{
    memset(g, 0, sizeof(*g));
    g->base = base;
    g->who = who != NULL ? who : "";
    g->refuse = refuse;
    g->arg = arg;
    g->reserve_fd = -1;
    open_reserve(g);
}

int
ha_accept_guard_add(struct ha_accept_guard *g, struct evconnlistener *l,
                    const char *desc)
{
    for (size_t i = 0; i < g->n_ls; i++)
        if (g->ls[i] == l)
            return 0;
    if (g->n_ls >= HA_ACCEPTGUARD_MAX)
        return -1;
    lock_watched();
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
        if (watched[i].l == NULL) {
            watched[i].l = l;
            watched[i].g = g;
            snprintf(g->desc[g->n_ls], sizeof(g->desc[0]), "%s",
                     desc != NULL ? desc : "?");
            g->ls[g->n_ls++] = l;
            break;
        }
    unlock_watched();
    if (g->n_ls == 0 || g->ls[g->n_ls - 1] != l)
        return -1;
    evconnlistener_set_error_cb(l, error_cb);
    return 0;
}

void
ha_accept_guard_remove(struct ha_accept_guard *g, struct evconnlistener *l)
{
    lock_watched();
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
        if (watched[i].l == l && watched[i].g == g)
            watched[i].l = NULL, watched[i].g = NULL;
    unlock_watched();
    for (size_t i = 0; i < g->n_ls; i++)
        if (g->ls[i] == l) {
            g->ls[i] = g->ls[--g->n_ls];
            memcpy(g->desc[i], g->desc[g->n_ls], sizeof(g->desc[i]));
            break;
        }
}

void
ha_accept_guard_ok(struct ha_accept_guard *g)
{
    if (!g->refusing)
        return;
    ha_log_info("%saccepting connections again (%llu refused while out "
                "of file descriptors)",
                g->who, (unsigned long long)g->refused);
    g->refusing = false;
    g->refused = 0;
    open_reserve(g);
}

void
ha_accept_guard_stop(struct ha_accept_guard *g)
{
    unwatch(g);
    g->stopped = true;
    g->n_ls = 0;
    if (g->pause != NULL)
        evtimer_del(g->pause);
}

void
ha_accept_guard_free(struct ha_accept_guard *g)
{
    unwatch(g);
    if (g->pause != NULL)
        event_free(g->pause);
    g->pause = NULL;
    close_reserve(g);
}

void
ha_accept_guard_abandon(struct ha_accept_guard *g)
{
    close_reserve(g);
}
