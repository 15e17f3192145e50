/* SPDX-License-Identifier: MIT
 *
 * The connection as a client of the engine (engine/clients.h): the ops
 * its registry calls for PROCESSLIST's row, KILL (deferred to the loop's
 * next pass, so the killer's own reply goes out first) and the reply
 * bytes it holds.
 */
#include "admin/conn.h"
#include "admin/conn_int.h"

#include <event2/event.h>
#include <stdlib.h>

#include "core/util.h"

static struct ha_conn *
conn_of_client(const struct ha_client *cl)
{
    struct ha_session *s = HA_CONTAINER_OF(cl, struct ha_session, client);

    return HA_CONTAINER_OF(s, struct ha_conn, session);
}

/* A KILL deferred to the loop's next pass, listed in the shared state
 * so that a server stopping before that pass cancels it. */
struct ha_kill_req {
    struct ha_kill_req **head; /* the server's list */
    struct ha_clients *clients;
    struct event *ev;
    uint32_t id;
    struct ha_kill_req *prev, *next;
};

static void
kill_unlink_free(struct ha_kill_req *k)
{
    if (k->prev != NULL)
        k->prev->next = k->next;
    else if (k->head != NULL)
        *k->head = k->next;
    if (k->next != NULL)
        k->next->prev = k->prev;
    event_free(k->ev);
    free(k);
}

/* Runs after the callback that asked for the kill: the connection may
 * be the caller, whose reply must go out before it closes. Looked up
 * again by id: it may have gone meanwhile. */
static void
kill_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_kill_req *k = arg;
    struct ha_client *cl = ha_clients_find(k->clients, k->id);

    (void)fd;
    (void)what;
    kill_unlink_free(k);
    if (cl != NULL && cl->ops == &ha_conn_client_ops)
        ha_conn_close_after_reply(conn_of_client(cl));
}

void
ha_conn_cancel_kills(struct ha_kill_req **pending)
{
    while (pending != NULL && *pending != NULL)
        kill_unlink_free(*pending);
}

static void
conn_client_kill(struct ha_client *cl, bool query_only)
{
    struct ha_conn *c = conn_of_client(cl);
    struct timeval now = {0, 0};
    struct ha_kill_req *k;

    if (c->state == HA_CONN_CLOSING)
        return;
    if (query_only) {
        ha_conn_kill_query(c);
        return;
    }
    k = calloc(1, sizeof(*k));
    if (k != NULL) {
        k->head = c->env->shared->pending_kills;
        k->clients = c->env->shared->clients;
        k->id = cl->id;
        k->ev = evtimer_new(c->env->base, kill_cb, k);
        if (k->ev != NULL && evtimer_add(k->ev, &now) == 0) {
            if (k->head != NULL) { /* NULL: a test's shared state */
                k->next = *k->head;
                if (k->next != NULL)
                    k->next->prev = k;
                *k->head = k;
            }
            return;
        }
        if (k->ev != NULL)
            event_free(k->ev);
        free(k);
    }
    /* Cannot defer: its command stops at least. */
    ha_conn_kill_query(c);
}

static size_t
conn_client_held(const struct ha_client *cl)
{
    return ha_conn_held_bytes(conn_of_client(cl));
}

const struct ha_client_ops ha_conn_client_ops = {
    .row = ha_session_client_row,
    .kill = conn_client_kill,
    .held = conn_client_held,
};
