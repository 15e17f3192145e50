/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end's bounds on connections, applied once a new one's
 * socket (and so its address) is known (see http_int.h). Nobody can hold
 * them without logging in:
 *   - at http_max_connections a new connection evicts the oldest one
 *     that has not delivered a request yet, then the oldest idle one;
 *     only when every connection is being answered is it refused;
 *   - one address holds at most http_max_per_peer connections, its own
 *     oldest waiting one evicted first.
 * A peer that must wait before its next credential is checked (the
 * engine's throttle) is told so with 429 and holds nothing.
 */
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "core/log.h"
#include "engine/login.h"
#include "engine/peer.h"
#include "http/http_int.h"

/* Refuses c, whose peer must wait c->blocked_ms before its next
 * credential is checked: 429 with Retry-After written straight to the
 * socket (no request needed, nothing read), then closed. Over TLS no
 * reply can go out before a handshake, which a blocked peer is not
 * worth: it is closed. */
static void
conn_shutdown_after_429(struct http_conn *c)
{
    long long after = (long long)ha_login_retry_s(c->blocked_ms);
    char text[160], header[64];

    snprintf(text, sizeof(text),
             "too many failed logins from %s: try again in %lld s\n",
             c->peer.host, after);
    snprintf(header, sizeof(header), "Retry-After: %lld\r\n", after);
    ha_http_conn_send_raw(c, "429 Too Many Requests", header, text);
    ha_http_conn_shutdown(c);
}

/* Whether c may be closed to make room: it holds nothing a logged-in
 * user asked for. */
static bool
evictable(const struct http_conn *c)
{
    return c->admitted && !c->closing && ha_http_conn_alive(c) &&
           (c->phase == PHASE_NEW || c->phase == PHASE_READING ||
            c->phase == PHASE_IDLE);
}

/* The oldest connection (of host, when not NULL) that may be closed,
 * preferring one that never delivered an authenticated request over an
 * idle one that did. */
static struct http_conn *
oldest_of(struct ha_http *h, const struct ha_peer *host,
          const struct http_conn *except, bool *fresh_out)
{
    struct http_conn *fresh = NULL, *idle = NULL;

    for (struct http_conn *c = h->conns; c != NULL; c = c->next) {
        if (c == except || !evictable(c) ||
            (host != NULL && !ha_peer_same_host(&c->peer, host)))
            continue;
        /* The list is newest first: the last seen is the oldest. */
        if (!c->authed || c->phase != PHASE_IDLE)
            fresh = c;
        else
            idle = c;
    }
    if (fresh_out != NULL)
        *fresh_out = fresh != NULL;
    return fresh != NULL ? fresh : idle;
}

/* The best victim among the connections of host, or, with host NULL,
 * of the address that holds the most connections that never delivered
 * an authenticated request (a flood from one or a few addresses closes
 * its own, not a scraper's from elsewhere); then the oldest idle one. */
static struct http_conn *
victim(struct ha_http *h, const struct ha_peer *host,
       const struct http_conn *except)
{
    struct http_conn *best = NULL;
    size_t best_n = 0;

    if (host != NULL)
        return oldest_of(h, host, except, NULL);
    for (struct http_conn *c = h->conns; c != NULL; c = c->next) {
        size_t n = 0;

        if (c == except || !evictable(c) ||
            (c->authed && c->phase == PHASE_IDLE))
            continue;
        for (struct http_conn *o = h->conns; o != NULL; o = o->next)
            if (o != except && evictable(o) &&
                !(o->authed && o->phase == PHASE_IDLE) &&
                ha_peer_same_host(&o->peer, &c->peer))
                n++;
        if (n > best_n) {
            best_n = n;
            best = c;
        }
    }
    if (best != NULL)
        return oldest_of(h, &best->peer, except, NULL);
    return oldest_of(h, NULL, except, NULL);
}

static size_t
count_admitted(const struct ha_http *h, const struct ha_peer *host)
{
    size_t n = 0;

    for (const struct http_conn *c = h->conns; c != NULL; c = c->next)
        if (c->admitted && !c->closing && ha_http_conn_alive(c) &&
            (host == NULL || ha_peer_same_host(&c->peer, host)))
            n++;
    return n;
}

static size_t
per_peer(const struct ha_config *cfg)
{
    size_t cap = (size_t)cfg->http_max_connections;

    if (cfg->http_max_per_peer > 0)
        return (size_t)cfg->http_max_per_peer;
    return cap / 4 > 0 ? cap / 4 : 1;
}

/* Who c's peer is (the kernel's word), and whether it came through the
 * agent socket: a unix socket's accepted end has the listener's path as
 * its own name. */
static void
describe_peer(struct http_conn *c)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    struct sockaddr_un sun;
    socklen_t sl = sizeof(sun);

    (void)ha_peer_from_fd(&c->peer, fd);
    c->agent_socket = false;
    if (c->peer.family != HA_PEER_UNIX || c->h->agent_path[0] == '\0')
        return;
    memset(&sun, 0, sizeof(sun));
    if (getsockname(fd, (struct sockaddr *)&sun, &sl) == 0 &&
        sun.sun_family == AF_UNIX &&
        strncmp(sun.sun_path, c->h->agent_path, sizeof(sun.sun_path)) == 0)
        c->agent_socket = true;
}

/* Applies the bounds to a new connection once its socket (and so its
 * address) is known: at its first loop turn, or at its first request if
 * that comes sooner (request: then a refused peer's 429 is that
 * request's reply, not written to the socket here). Returns false when
 * c was refused. */
bool
ha_http_admit(struct http_conn *c, bool request)
{
    struct ha_http *h = c->h;
    struct http_conn *v;

    evtimer_del(c->admit);
    if (c->admitted)
        return true;
    describe_peer(c);
    /* A peer that must wait before its next credential is checked is
     * told so now and holds nothing (the caller answers 429). */
    if (!c->agent_socket) {
        c->blocked_ms = ha_login_peek(ha_engine_accounts(h->engine), &c->peer);
        if (c->blocked_ms > 0) {
            if (!request)
                conn_shutdown_after_429(c);
            return false;
        }
    }
    if (count_admitted(h, &c->peer) >= per_peer(h->cfg)) {
        /* One address holds its share: its own oldest waiting
         * connection makes room, or this one goes. */
        if ((v = victim(h, &c->peer, c)) == NULL)
            goto refuse;
        ha_http_conn_shutdown(v);
        h->evicted++;
    }
    if (count_admitted(h, NULL) >= (size_t)h->cfg->http_max_connections) {
        if ((v = victim(h, NULL, c)) == NULL)
            goto refuse;
        if (h->evicted++ % 100 == 0)
            ha_log_warn("http: http_max_connections (%d) reached: closing "
                        "connections that sent no request to admit new "
                        "ones (%llu so far)",
                        h->cfg->http_max_connections,
                        (unsigned long long)h->evicted);
        ha_http_conn_shutdown(v);
    }
    c->admitted = true;
    ha_http_conn_set_phase(c, PHASE_NEW);
    return true;
refuse:
    if (h->refused++ % 100 == 0)
        ha_log_warn("http: %zu connections open and all are being "
                    "answered (http_max_connections %d, "
                    "http_max_per_peer %zu): closing new ones (%llu so "
                    "far)",
                    count_admitted(h, NULL), h->cfg->http_max_connections,
                    per_peer(h->cfg), (unsigned long long)h->refused);
    ha_http_conn_shutdown(c);
    return false;
}
