/* SPDX-License-Identifier: MIT
 *
 * What a front-end's listeners do when accept() fails, the same for
 * every front-end. Out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM)
 * the pending connection stays in the backlog and the listener would be
 * woken again at once, forever, each time a log line: instead, a reserve
 * descriptor held for this is given up to accept the connection and
 * refuse it with an answer (the front-end's: MySQL ERR 1040, HTTP 503),
 * then taken again; without one, the listeners pause briefly. The burst
 * is logged once when it starts and once when connections are accepted
 * again, with the count refused meanwhile, never a line per failure.
 *
 * Loop thread only.
 */
#ifndef HA_ACCEPTGUARD_H
#define HA_ACCEPTGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event;
struct event_base;
struct evconnlistener;

#define HA_ACCEPTGUARD_PAUSE_MS 100 /* listeners paused without a reserve */
#define HA_ACCEPTGUARD_MAX 16       /* listeners one guard pauses */

struct ha_accept_guard {
    struct event_base *base;
    const char *who;              /* "" or "http: ", before log lines */
    void (*refuse)(int fd, void *arg); /* answers fd once, closes it */
    void *arg;
    int reserve_fd;               /* an unbound socket of its own, or -1 */
    dev_t reserve_dev;            /* its identity: a host may close it */
    ino_t reserve_ino;            /* and reuse the number */
    struct evconnlistener *ls[HA_ACCEPTGUARD_MAX]; /* paused together */
    char desc[HA_ACCEPTGUARD_MAX][80];  /* ... what each listens on */
    size_t n_ls;
    struct event *pause;          /* re-enables them */
    bool stopped;                 /* no re-enabling any more */
    bool refusing;                /* in a burst */
    uint64_t refused;             /* connections refused in it */
};

/* A guard on base; refuse(fd, arg) answers a connection accepted with
 * the reserve and closes it. Opens the reserve descriptor. */
void ha_accept_guard_init(struct ha_accept_guard *g, struct event_base *base,
                          const char *who, void (*refuse)(int, void *),
                          void *arg);

/* Watches l: its accept() errors come to this guard, and it is paused
 * with the others. Returns 0, or -1 when the guard is full. */
int ha_accept_guard_add(struct ha_accept_guard *g, struct evconnlistener *l,
                        const char *desc);

/* Forgets l (before it is freed). */
void ha_accept_guard_remove(struct ha_accept_guard *g,
                            struct evconnlistener *l);

/* A connection was accepted: a burst, if any, is over (said once). */
void ha_accept_guard_ok(struct ha_accept_guard *g);

/* No listener is re-enabled any more (the front-end stops). */
void ha_accept_guard_stop(struct ha_accept_guard *g);

/* Frees the timer and closes the reserve if it is still ours; for a fork
 * child, only the reserve (the timer is the parent's loop's). */
void ha_accept_guard_free(struct ha_accept_guard *g);
void ha_accept_guard_abandon(struct ha_accept_guard *g);

#endif /* HA_ACCEPTGUARD_H */
