/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end (see http.h): evhttp listeners, the connections and
 * their bounds, authentication through the engine's accounts and
 * throttle, and requests run as tasks of the engine's executor.
 *
 * Connections. Every connection's bufferevent is one we create
 * (evhttp_set_bevcb), with BEV_OPT_CLOSE_ON_FREE, and hold a reference
 * to until a loop turn after evhttp let it go: evhttp then leaves the
 * socket to the bufferevent, which closes it (after removing its
 * events) only when our reference goes. So a descriptor number is never
 * reused while a bufferevent evhttp freed still has events registered on
 * it (which would leave a new connection on that number never woken),
 * and evhttp's own shutdown() after freeing still finds its socket.
 * evhttp tells us it frees a connection through the connection's close
 * callback, installed at its first loop turn (from the event callback's
 * argument, which is evhttp's connection); one freed sooner shows as
 * callbacks cleared, which a sweep (at each new connection and each
 * deadline) and the first loop turn both check. We never free a
 * connection under evhttp: to close one we shut its socket down and
 * evhttp frees it on the end of stream.
 *
 * Bounds nobody can hold without logging in:
 *   - deadlines: a new connection, and one whose next request has
 *     started to arrive, must deliver the request's headers within
 *     http_header_timeout; an idle keep-alive connection lives
 *     http_timeout; a request being answered has none (its task has
 *     max_execution_time);
 *   - at http_max_connections a new connection evicts the oldest one
 *     that has not delivered a request yet, then the oldest idle one;
 *     only when every connection is being answered is it refused;
 *   - one address holds at most http_max_per_peer connections, its own
 *     oldest waiting one evicted first.
 * Replies keep to the engine's output budget (request.h): while one is
 * being answered a connection has no read or write timeout of evhttp's
 * (a long download is not idle); its deadline checks instead that the
 * client takes reply bytes: one that takes none for net_write_timeout
 * is cut off, as on the MySQL port. Its output's drain wakes a streamed
 * reply's task once the client took half a window.
 *
 * A credential from an address whose logins failed too often waits as
 * long as the engine's throttle says before it is checked (the MySQL
 * port's rule: a few checks a second per address, however many
 * connections); a wrong one gets 401 and the connection closes.
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/acceptguard.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/lograte.h"
#include "core/util.h"
#include "engine/accounts.h"
#include "engine/login.h"
#include "engine/peer.h"
#include "http/parse.h"
#include "http/request.h"
#include "http/routes.h"

#define HTTP_MAX_HEADERS 8192   /* bytes of request headers */
#define HTTP_MAX_BODY (4 << 20) /* bytes of request body: a symbol
                                   request's addresses (~19 bytes each) */

struct http_listener {
    struct evhttp_bound_socket *bound;
    evutil_socket_t fd;
    dev_t dev;          /* fstat identity, for ha_http_abandon */
    ino_t ino;
    int port;
    char desc[300];
    char path[108];     /* the agent socket (unix), "" for TCP */
    struct ha_listen_file file; /* ... the file it was bound at */
};

/* Where a connection is in its life; what its deadline is. */
enum conn_phase {
    PHASE_NEW,          /* accepted, no byte yet: header deadline */
    PHASE_READING,      /* a request is arriving: header deadline */
    PHASE_BUSY,         /* a request is being answered: no deadline */
    PHASE_IDLE          /* between requests: http_timeout */
};

struct http_conn {
    struct ha_http *h;
    struct bufferevent *bev;   /* evhttp's, with our reference; NULL once
                                  evhttp freed it (gone) */
    bool gone;                 /* evhttp freed the connection */
    struct evhttp_connection *evcon; /* once its first request came */
    struct event *deadline;
    struct event *admit;       /* the next loop turn: socket known */
    enum conn_phase phase;
    bool admitted;             /* counted against the bounds */
    bool closing;              /* shut down, evhttp frees it */
    bool authed;               /* has delivered an authenticated request */
    int64_t blocked_ms;        /* the throttle's wait at admission, > 0:
                                  refused with 429 */
    int64_t progress_ms;       /* ha_clock_ms() when the client last took
                                  reply bytes, or output started */
    struct ha_peer peer;       /* the kernel's, once admitted */
    bool agent_socket;         /* came through the agent socket */
    struct ha_http_req *cur;   /* the request being answered, or NULL */
    struct http_conn *prev, *next; /* newest first */
};

struct ha_http {
    struct ha_engine *engine;
    struct event_base *base;
    const struct ha_config *cfg;
    struct evhttp *eh;
    struct http_listener *ls;
    size_t n_ls;
    struct http_conn *conns;
    size_t n_conns;            /* allocated (some may be freed by evhttp
                                  and not yet swept) */
    SSL_CTX *tls;              /* HTTPS (http_tls), or NULL */
    uint64_t evicted;          /* connections closed to admit others */
    uint64_t refused;          /* closed: everything busy */
    struct ha_lograte refused_log; /* refused requests' lines */
    uint64_t refused_unsaid;   /* ... not logged one by one */
    struct event *refused_say; /* says how many, once the window ends */
    char agent_path[108];      /* the agent socket's file, or "" */
    struct ha_accept_guard guard; /* accept() failures, once per burst */
    struct ha_lograte cut_log; /* clients cut off for not reading */
    struct ha_lograte short_log; /* replies cut short of their length */
};

static void conn_shutdown(struct http_conn *c);
static void input_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
                     void *arg);
static void output_cb(struct evbuffer *buf,
                      const struct evbuffer_cb_info *info, void *arg);
static void req_free(struct ha_http_req *hr);

/* ------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------ */

/* True while evhttp still uses c's bufferevent: bufferevent_free()
 * clears the callbacks evhttp set. */
static bool
conn_alive(const struct http_conn *c)
{
    bufferevent_data_cb r = NULL, w = NULL;
    bufferevent_event_cb e = NULL;
    void *arg = NULL;

    if (c->gone || c->bev == NULL)
        return false;
    bufferevent_getcb(c->bev, &r, &w, &e, &arg);
    return r != NULL || e != NULL;
}

/* Drops our reference to c's bufferevent: evhttp is done with it, so
 * this may close the socket (its events removed first). */
static void
conn_let_go(struct http_conn *c)
{
    if (c->bev == NULL)
        return;
    evbuffer_remove_cb(bufferevent_get_input(c->bev), input_cb, c);
    evbuffer_remove_cb(bufferevent_get_output(c->bev), output_cb, c);
    bufferevent_decref(c->bev);
    c->bev = NULL;
    c->gone = true;
}

static void
conn_release(struct ha_http *h, struct http_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    h->n_conns--;
    if (c->cur != NULL)
        c->cur->conn = NULL;
    event_free(c->deadline);
    event_free(c->admit);
    conn_let_go(c);
    free(c);
}

/* Releases the connections evhttp has freed (not one with a request
 * still running: its task holds it until it ends). */
static void
sweep(struct ha_http *h)
{
    struct http_conn *c = h->conns, *next;

    for (; c != NULL; c = next) {
        next = c->next;
        if (!conn_alive(c) && c->cur == NULL)
            conn_release(h, c);
    }
}

static void
arm(struct http_conn *c, int seconds)
{
    struct timeval tv = {seconds, 0};

    evtimer_add(c->deadline, &tv);
}

static void
arm_ms(struct http_conn *c, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};

    evtimer_add(c->deadline, &tv);
}

/* evhttp's socket timeouts: http_timeout between requests; none while
 * one is answered (a long reply to a reader is not idle: the deadline
 * watches that the client takes bytes). */
static void
socket_timeouts(struct http_conn *c, bool answering)
{
    struct timeval tv = {c->h->cfg->http_timeout, 0};

    if (conn_alive(c))
        bufferevent_set_timeouts(c->bev, answering ? NULL : &tv,
                                 answering ? NULL : &tv);
}

static void
set_phase(struct http_conn *c, enum conn_phase phase)
{
    enum conn_phase was = c->phase;

    c->phase = phase;
    if (c->gone) {
        arm(c, 0); /* its release, at the next loop turn */
        return;
    }
    if ((was == PHASE_BUSY) != (phase == PHASE_BUSY))
        socket_timeouts(c, phase == PHASE_BUSY);
    switch (phase) {
    case PHASE_NEW:
    case PHASE_READING:
        arm(c, c->h->cfg->http_header_timeout);
        break;
    case PHASE_IDLE:
        arm(c, c->h->cfg->http_timeout);
        break;
    default:
        /* Answering: the client must take what it is sent. */
        c->progress_ms = ha_clock_ms();
        arm(c, c->h->cfg->net_write_timeout);
        break;
    }
}

/* Closes c: evhttp reads the end of the stream and frees it. */
static void
conn_shutdown(struct http_conn *c)
{
    evutil_socket_t s = conn_alive(c) ? bufferevent_getfd(c->bev) : -1;

    if (c->gone)
        return; /* evhttp freed it; its release is armed */
    c->closing = true;
    evtimer_del(c->deadline);
    if (s >= 0)
        shutdown(s, SHUT_RDWR);
}

/* Writes a whole plain-text reply with "Connection: close" straight to
 * c's socket, one non-blocking try: for replies that go out where no
 * request can carry them (a refusal before anything is read, the server
 * stopping under a running request). Plain HTTP only: over TLS nothing
 * is sent. header: extra header lines, each ending in CRLF, or "". */
static void
conn_send_raw(struct http_conn *c, const char *status, const char *header,
              const char *text)
{
    evutil_socket_t s = conn_alive(c) ? bufferevent_getfd(c->bev) : -1;
    char reply[768];
    int n;

    if (s < 0 || c->h->tls != NULL)
        return;
    n = snprintf(reply, sizeof(reply),
                 "HTTP/1.1 %s\r\n%s"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: %zu\r\n"
                 "Connection: close\r\n\r\n%s",
                 status, header, strlen(text), text);
    if (n > 0 && (size_t)n < sizeof(reply))
        (void)send(s, reply, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

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
    conn_send_raw(c, "429 Too Many Requests", header, text);
    conn_shutdown(c);
}

/* The reply bytes c holds unsent. */
static size_t
conn_unsent(const struct http_conn *c)
{
    return conn_alive(c) ? evbuffer_get_length(bufferevent_get_output(c->bev))
                         : 0;
}

/* While a request is answered: true when its client took reply bytes
 * within net_write_timeout, or has none waiting (the deadline is then
 * armed again); false when it is to be cut off. */
static bool
client_takes(struct http_conn *c)
{
    int64_t limit = (int64_t)c->h->cfg->net_write_timeout * 1000;
    int64_t idle = ha_clock_ms() - c->progress_ms;

    if (conn_unsent(c) == 0) {
        c->progress_ms = ha_clock_ms();
        arm_ms(c, limit);
        return true;
    }
    if (idle < limit) {
        arm_ms(c, limit - idle);
        return true;
    }
    return false;
}

/* Cuts off a client that took no reply bytes for net_write_timeout: its
 * unsent bytes go with the connection. Logged within a budget (a crowd
 * of them costs a few lines). */
static void
cut_off(struct http_conn *c)
{
    struct ha_http *h = c->h;
    uint64_t flushed = 0;
    char info[160];

    if (ha_lograte_take(&h->cut_log, ha_clock_ms(), &flushed)) {
        if (flushed > 0)
            ha_log_warn("http: %llu more clients cut off for taking no "
                        "reply bytes (net_write_timeout; not logged one by "
                        "one)",
                        (unsigned long long)flushed);
        ha_log_warn("http: %s: %s: the client took no reply bytes for %d s "
                    "(net_write_timeout); closing, %zu bytes unsent",
                    c->peer.name,
                    c->cur != NULL
                        ? ha_http_printable(c->cur->info, info, sizeof(info))
                        : "a reply",
                    h->cfg->net_write_timeout, conn_unsent(c));
    }
    conn_shutdown(c);
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *c = arg;

    (void)fd;
    (void)what;
    if (!conn_alive(c) && c->cur == NULL) {
        conn_release(c->h, c);
        return;
    }
    if (c->phase == PHASE_BUSY && !c->closing) {
        if (!client_takes(c))
            cut_off(c);
        return;
    }
    if (c->phase == PHASE_NEW || c->phase == PHASE_READING)
        ha_log_debug("http: %s: no complete request within %d s "
                     "(http_header_timeout); closing",
                     c->peer.name, c->h->cfg->http_header_timeout);
    conn_shutdown(c);
}

/* Bytes arrived: an idle connection starts a request, whose headers now
 * have http_header_timeout to arrive. */
static void
input_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
         void *arg)
{
    struct http_conn *c = arg;

    (void)buf;
    if (info->n_added > 0 && c->phase == PHASE_IDLE)
        set_phase(c, PHASE_READING);
}

/* Reply bytes left (the client took some) or started to wait: progress
 * for the write deadline; a streamed reply waiting for room goes on once
 * half its window is free. */
static void
output_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
          void *arg)
{
    struct http_conn *c = arg;

    if (info->n_deleted > 0 || info->orig_size == 0)
        c->progress_ms = ha_clock_ms();
    if (info->n_deleted > 0 && c->cur != NULL && c->cur->stream_waiting &&
        evbuffer_get_length(buf) <= HA_CLIENTS_STREAM_BYTES / 2)
        ha_task_wake(&c->cur->task);
}

/* Whether c may be closed to make room: it holds nothing a logged-in
 * user asked for. */
static bool
evictable(const struct http_conn *c)
{
    return c->admitted && !c->closing && conn_alive(c) &&
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

        if (c == except || !evictable(c) || (c->authed && c->phase ==
                                                              PHASE_IDLE))
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
        if (c->admitted && !c->closing && conn_alive(c) &&
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
static bool
admit(struct http_conn *c, bool request)
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
        c->blocked_ms = ha_login_peek(ha_engine_accounts(h->engine),
                                      &c->peer);
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
        conn_shutdown(v);
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
        conn_shutdown(v);
    }
    c->admitted = true;
    set_phase(c, PHASE_NEW);
    return true;
refuse:
    if (h->refused++ % 100 == 0)
        ha_log_warn("http: %zu connections open and all are being "
                    "answered (http_max_connections %d, "
                    "http_max_per_peer %zu): closing new ones (%llu so "
                    "far)",
                    count_admitted(h, NULL), h->cfg->http_max_connections,
                    per_peer(h->cfg), (unsigned long long)h->refused);
    conn_shutdown(c);
    return false;
}

static void evcon_closed(struct evhttp_connection *evcon, void *arg);
static void req_finish(struct ha_http_req *hr);

/* evhttp's connection for c: the argument of the event callback evhttp
 * set on its bufferevent. */
static void
watch_close(struct http_conn *c)
{
    bufferevent_data_cb r = NULL, w = NULL;
    bufferevent_event_cb e = NULL;
    void *evcon = NULL;

    if (c->evcon != NULL || !conn_alive(c))
        return;
    bufferevent_getcb(c->bev, &r, &w, &e, &evcon);
    if (evcon == NULL)
        return;
    c->evcon = evcon;
    evhttp_connection_set_closecb(c->evcon, evcon_closed, c);
}

static void
admit_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *c = arg;

    (void)fd;
    (void)what;
    if (!conn_alive(c)) {
        conn_release(c->h, c);
        return;
    }
    watch_close(c);
    sweep(c->h);
    (void)admit(c, false);
}

/* evhttp's bufferevent for a new connection, as evhttp would make it
 * (no BEV_OPT_CLOSE_ON_FREE: evhttp closes the socket itself), plus our
 * reference. */
static struct bufferevent *
new_bev(struct event_base *base, void *arg)
{
    struct ha_http *h = arg;
    static const struct timeval now = {0, 0};
    struct http_conn *c;

    sweep(h);
    ha_accept_guard_ok(&h->guard);
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    c->h = h;
    c->deadline = evtimer_new(base, deadline_cb, c);
    c->admit = evtimer_new(base, admit_cb, c);
    if (h->tls != NULL) {
        /* BEV_OPT_CLOSE_ON_FREE: it frees the SSL, and evhttp, seeing
         * the flag, leaves the socket to it. */
        SSL *ssl = SSL_new(h->tls);

        c->bev = ssl != NULL ? bufferevent_openssl_socket_new(
                                   base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                   BEV_OPT_CLOSE_ON_FREE)
                             : NULL;
        if (c->bev == NULL && ssl != NULL)
            SSL_free(ssl);
        if (c->bev != NULL)
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        /* BEV_OPT_CLOSE_ON_FREE: the socket closes with the last
         * reference (ours, or evhttp's), never under live events. */
        c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (c->deadline == NULL || c->admit == NULL || c->bev == NULL) {
        if (c->bev != NULL)
            bufferevent_free(c->bev);
        if (c->deadline != NULL)
            event_free(c->deadline);
        if (c->admit != NULL)
            event_free(c->admit);
        free(c);
        return NULL;
    }
    bufferevent_incref(c->bev);
    evbuffer_add_cb(bufferevent_get_input(c->bev), input_cb, c);
    evbuffer_add_cb(bufferevent_get_output(c->bev), output_cb, c);
    c->next = h->conns;
    if (h->conns != NULL)
        h->conns->prev = c;
    h->conns = c;
    h->n_conns++;
    arm(c, h->cfg->http_header_timeout);
    evtimer_add(c->admit, &now);
    return c->bev;
}

static struct http_conn *
conn_of(struct ha_http *h, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev =
        evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;

    for (struct http_conn *c = h->conns; c != NULL; c = c->next)
        if (c->bev == bev)
            return c;
    return NULL;
}

/* evhttp frees the connection (client gone, or shut down): the request
 * being answered loses its evhttp_request, and its task stops. */
static void
evcon_closed(struct evhttp_connection *evcon, void *arg)
{
    struct http_conn *c = arg;

    (void)evcon;
    c->closing = true;
    c->gone = true;
    c->evcon = NULL;
    evhttp_connection_set_closecb(evcon, NULL, NULL);
    /* Our reference goes at the next loop turn (deadline_cb), once
     * evhttp is done with the socket. */
    arm(c, 0);
    if (c->cur == NULL)
        return;
    if (c->cur->sending) {
        /* Its reply was being written: nothing of it is held now. */
        req_finish(c->cur);
        return;
    }
    c->cur->req = NULL;
    /* Its task ends at its next check; req_done releases c. */
    ha_task_kill(&c->cur->task);
}

/* ------------------------------------------------------------------
 * Requests
 * ------------------------------------------------------------------ */

static void
req_row(const struct ha_client *cl, time_t now, struct ha_sessions_row *r)
{
    const struct ha_http_req *hr =
        HA_CONTAINER_OF(cl, const struct ha_http_req, client);

    r->id = cl->id;
    r->user = hr->user->name;
    r->host = hr->peer;
    r->db = NULL;
    r->command = "HTTP";
    r->time = now > hr->since ? (int64_t)(now - hr->since) : 0;
    /* MySQL's name for a reply the client has yet to take. */
    r->state = hr->sending || hr->streaming ? "Sending to client"
                                            : "executing";
    r->info = hr->info;
}

static void
req_kill(struct ha_client *cl, bool query_only)
{
    struct ha_http_req *hr = HA_CONTAINER_OF(cl, struct ha_http_req, client);

    if (hr->sending) {
        /* Its task is done: what is left is the client's to take, and
         * stopping that is closing the connection. */
        if (hr->conn != NULL)
            conn_shutdown(hr->conn);
        return;
    }
    if (!query_only)
        hr->close_after = true;
    ha_task_kill(&hr->task);
}

static size_t
req_held(const struct ha_client *cl)
{
    const struct ha_http_req *hr =
        HA_CONTAINER_OF(cl, const struct ha_http_req, client);
    const struct http_conn *c = hr->conn;

    return c != NULL && conn_alive(c)
               ? evbuffer_get_length(bufferevent_get_output(c->bev))
               : 0;
}

static const struct ha_client_ops req_client_ops = {
    .row = req_row,
    .kill = req_kill,
    .held = req_held,
};

static void
req_free(struct ha_http_req *hr)
{
    ha_task_release(&hr->task);
    free(hr->path);
    free(hr->query);
    ha_buf_free(&hr->body);
    free(hr);
}

/* The request is over: its reply written, or its connection gone. */
static void
req_finish(struct ha_http_req *hr)
{
    struct http_conn *c = hr->conn;

    ha_clients_remove(ha_engine_clients(hr->engine), &hr->client);
    if (c != NULL) {
        c->cur = NULL;
        if (!conn_alive(c))
            arm(c, 0); /* evhttp freed it: released at the next turn */
        else if (c->closing)
            ; /* shut down already: evhttp frees it */
        else if (!hr->answered || hr->stream_broken)
            conn_shutdown(c); /* nothing, or not all, could be sent */
        else
            /* After a reply with "Connection: close" (KILL), evhttp
             * closes it itself once the reply is written. */
            set_phase(c, PHASE_IDLE);
    }
    req_free(hr);
}

/* evhttp wrote a reply whole (its on_complete callback; arg: the
 * connection). */
static void
req_sent(struct evhttp_request *req, void *arg)
{
    struct http_conn *c = arg;
    struct ha_http_req *hr = c->cur;

    (void)req;
    if (hr == NULL)
        return; /* a refusal's, answered without a task */
    hr->sent = true;
    if (hr->sending)
        req_finish(hr);
}

/* A reply that ended short of its Content-Length (its request killed,
 * past max_execution_time, the server stopping, out of memory): the
 * client sees the connection close early and can tell, and the log says
 * so, within a budget (a crowd of killed scrapes costs a few lines). */
static void
say_cut_short(struct ha_http_req *hr)
{
    struct http_conn *c = hr->conn;
    struct ha_http *h;
    uint64_t flushed = 0;
    const char *why;

    if (c == NULL || hr->method == EVHTTP_REQ_HEAD)
        return;
    h = c->h;
    switch (ha_task_stopped(&hr->task)) {
    case HA_TASK_KILLED:
        why = "its request was killed (KILL)";
        break;
    case HA_TASK_TIMEOUT:
        why = "it passed max_execution_time";
        break;
    case HA_TASK_SHUTDOWN:
        why = "the server is stopping";
        break;
    default:
        why = "the rest of it could not be made";
        break;
    }
    if (!ha_lograte_take(&h->short_log, ha_clock_ms(), &flushed))
        return;
    if (flushed > 0)
        ha_log_warn("http: %llu more replies cut short of their "
                    "Content-Length (not logged one by one)",
                    (unsigned long long)flushed);
    ha_log_warn("http: %s: %s: the reply was cut after %llu of its %llu "
                "bytes: %s; the connection is closed",
                c->peer.name, hr->info, hr->stream_len - hr->stream_left,
                hr->stream_len, why);
}

/* The request's task ended (at once or after pauses). Its reply stays
 * counted, and the request listed, until it is written. */
static void
req_done(void *arg)
{
    struct ha_http_req *hr = arg;
    struct http_conn *c = hr->conn;

    ha_http_req_stream_end(hr);
    if (hr->req != NULL && !hr->answered) {
        if (ha_task_stopped(&hr->task) != HA_TASK_GO)
            ha_http_req_stopped(hr);
        else
            ha_http_req_text(hr, 500, "Internal Server Error",
                             "no reply was made\n");
    }
    if (c != NULL && hr->answered && !hr->sent && !hr->stream_broken &&
        conn_alive(c) && !c->closing) {
        hr->sending = true;
        return; /* req_sent or evcon_closed finishes it */
    }
    req_finish(hr);
}

static void
req_body(void *arg)
{
    struct ha_http_req *hr = arg;

    ha_http_route(hr);
}

/* A Basic password, in clear. */
struct clear_pw {
    const char *pw;
    size_t len;
};

static bool
prove_clear(const struct ha_user *u, void *arg)
{
    const struct clear_pw *given = arg;

    return ha_accounts_check_clear(u, (const uint8_t *)given->pw,
                                   given->len);
}

/* Checks the request's Basic credentials with the engine's login.
 * Returns the user, or NULL with *why (for the log) and *counted (a
 * password was tried: the throttle counted it). */
static const struct ha_user *
authenticate(struct ha_http *h, const struct http_conn *c,
             struct evhttp_request *req, const char **why, bool *counted,
             bool *say)
{
    const char *hdr = evhttp_find_header(evhttp_request_get_input_headers(req),
                                         "Authorization");
    char user[HA_USER_MAX + 1], pw[HA_HTTP_BASIC_MAX + 1];
    size_t pw_len = 0;
    const struct ha_user *u;
    struct clear_pw given;
    enum ha_login_result r;

    *counted = false;
    if (ha_http_basic_parse(hdr, user, sizeof(user), pw, sizeof(pw), &pw_len,
                            why) != 0)
        return NULL;
    *counted = true;
    given.pw = pw;
    given.len = pw_len;
    r = ha_login_check(ha_engine_accounts(h->engine), &c->peer, user,
                       prove_clear, &given, &u, say);
    OPENSSL_cleanse(pw, sizeof(pw));
    if (r != HA_LOGIN_OK) {
        *why = ha_login_result_text(r);
        return NULL;
    }
    return u;
}

static const char *
method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    default:
        return "OTHER";
    }
}

/* A refused request's line, within the log's budget: the first ones of
 * each window say who and why, the rest are counted and said in one line
 * when the window ends. */
static void refused_say_cb(evutil_socket_t fd, short what, void *arg);

static void
log_refused(struct ha_http *h, const struct http_conn *c,
            const struct ha_http_req *hr, int code, const char *why)
{
    uint64_t flushed;
    int64_t now = ha_clock_ms();
    struct timeval tv = {HA_LOGRATE_WINDOW_MS / 1000, 0};

    if (ha_lograte_take(&h->refused_log, now, &flushed)) {
        /* The path as sent, but never its raw control bytes. */
        char path[128];

        char uid[32] = "";

        ha_http_printable(hr->path, path, sizeof(path));
        if (c->peer.family == HA_PEER_UNIX)
            snprintf(uid, sizeof(uid), " (uid %u)", (unsigned)c->peer.uid);
        ha_log_warn("http: %s%s: %s %s refused: %s (HTTP %d)", c->peer.name,
                    uid, method_name(hr->method), path, why, code);
    } else {
        h->refused_unsaid++;
        if (h->refused_say == NULL)
            h->refused_say = evtimer_new(h->base, refused_say_cb, h);
        if (h->refused_say != NULL &&
            !evtimer_pending(h->refused_say, NULL))
            evtimer_add(h->refused_say, &tv);
    }
    (void)flushed;
}

static void
refused_say_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_http *h = arg;

    (void)fd;
    (void)what;
    (void)ha_lograte_due(&h->refused_log, ha_clock_ms());
    if (h->refused_unsaid > 0)
        ha_log_warn("http: %llu more requests refused in the last %d s "
                    "(not logged one by one)",
                    (unsigned long long)h->refused_unsaid,
                    HA_LOGRATE_WINDOW_MS / 1000);
    h->refused_unsaid = 0;
}

/* Answers hr with code and text without running it, and logs it within
 * the budget; close: the connection closes once it is written. */
static void
refuse_req(struct ha_http *h, struct http_conn *c, struct ha_http_req *hr,
           int code, const char *reason, const char *text, const char *why,
           bool close)
{
    log_refused(h, c, hr, code, why);
    hr->close_after = close;
    ha_http_req_text(hr, code, reason, text);
    c->cur = NULL;
    set_phase(c, PHASE_IDLE);
    req_free(hr);
}

/* The credential is checked: the route runs on a task, or 401 and
 * close. */
static void
check_and_run(struct ha_http *h, struct http_conn *c, struct ha_http_req *hr)
{
    const struct ha_user *u;
    const char *why;
    bool counted, say = false;

    /* Without a password the kernel's word on the peer decides
     * (engine/agentrole.h); a password is checked as on any port. */
    if (c->agent_socket &&
        evhttp_find_header(evhttp_request_get_input_headers(hr->req),
                           "Authorization") == NULL) {
        u = ha_login_agent_socket(
            &c->peer,
            evhttp_find_header(evhttp_request_get_input_headers(hr->req),
                               "X-Heapadmin-Role"),
            &why);
        if (u == NULL) {
            refuse_req(h, c, hr, 403, "Forbidden", why, why, true);
            return;
        }
        goto admitted;
    }
    u = authenticate(h, c, hr->req, &why, &counted, &say);
    if (u == NULL) {
        ha_http_req_add_header(hr, "WWW-Authenticate",
                               "Basic realm=\"heapadmin\", charset=\"UTF-8\"");
        /* Closed once written: a guesser reconnects, and pays for it. A
         * failed check is logged within the failures' budget (the
         * throttle's summary counts the rest); a request without
         * credentials within the refusals'. */
        if (counted && say) {
            char path[128];

            ha_log_warn("http: %s: %s %s refused: %s", c->peer.name,
                        method_name(hr->method),
                        ha_http_printable(hr->path, path, sizeof(path)), why);
        }
        if (counted) {
            hr->close_after = true;
            ha_http_req_text(hr, 401, "Unauthorized",
                             "authentication required: HTTP Basic with an "
                             "admin_credentials or stats_credentials "
                             "account\n");
            c->cur = NULL;
            set_phase(c, PHASE_IDLE);
            req_free(hr);
            return;
        }
        refuse_req(h, c, hr, 401, "Unauthorized",
                   "authentication required: HTTP Basic with an "
                   "admin_credentials or stats_credentials account\n",
                   why, false);
        return;
    }
admitted:
    c->authed = true;
    hr->user = u;
    /* Live profiles: admins, and the profile role, which reads
     * profiles and nothing else (routes.c keeps it to them). */
    hr->admin = u->role == HA_ROLE_ADMIN || u->role == HA_ROLE_PROFILE;
    hr->client.id = ha_clients_next_id(ha_engine_clients(h->engine));
    hr->client.role = u->role;
    hr->client.user = u->name;
    hr->client.ops = &req_client_ops;
    ha_clients_add(ha_engine_clients(h->engine), &hr->client);
    ha_engine_clients(h->engine)->http_requests++;
    ha_engine_clients(h->engine)->questions++;
    c->phase = PHASE_BUSY;
    ha_task_init(&hr->task, ha_engine_tasks(h->engine));
    if (h->cfg->max_execution_time > 0)
        ha_task_set_deadline(&hr->task,
                             ha_clock_ns() +
                                 (int64_t)h->cfg->max_execution_time *
                                     1000000);
    if (ha_task_run(&hr->task, req_body, req_done, hr) == 0)
        req_done(hr);
}

/* Answers 429 Too Many Requests (RFC 6585) with Retry-After, and
 * closes: the peer must wait wait_ms before its next credential is
 * checked, and holds nothing meanwhile. */
static void
too_many(struct ha_http *h, struct http_conn *c, struct ha_http_req *hr,
         int64_t wait_ms)
{
    char after[32], text[160];

    snprintf(after, sizeof(after), "%lld",
             (long long)ha_login_retry_s(wait_ms));
    snprintf(text, sizeof(text),
             "too many failed logins from %s: try again in %s s\n",
             c->peer.host, after);
    ha_http_req_add_header(hr, "Retry-After", after);
    refuse_req(h, c, hr, 429, "Too Many Requests", text,
               "its address must wait (the login throttle)", true);
}

/* A new request from an allocated hr (path, query, method, peer set):
 * the method, the throttle's word on its credential, then the check. */
static void
dispatch(struct ha_http *h, struct http_conn *c, struct ha_http_req *hr)
{
    char allow[64];
    int64_t wait = 0;

    /* A method the path does not take: 405 before any password is
     * checked (nothing to guess with). */
    if (!ha_http_route_allows(hr->path, hr->method, allow, sizeof(allow))) {
        ha_http_req_add_header(hr, "Allow", allow);
        refuse_req(h, c, hr, 405, "Method Not Allowed",
                   "this path takes only the methods in Allow\n",
                   "a method the path does not take", false);
        return;
    }
    if (evhttp_find_header(evhttp_request_get_input_headers(hr->req),
                           "Authorization") != NULL)
        wait = ha_login_admit(ha_engine_accounts(h->engine), &c->peer);
    if (wait > 0) {
        too_many(h, c, hr, wait);
        return;
    }
    check_and_run(h, c, hr);
}

static void
on_request(struct evhttp_request *req, void *arg)
{
    struct ha_http *h = arg;
    struct http_conn *c = conn_of(h, req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri != NULL ? evhttp_uri_get_query(uri) : NULL;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    struct ha_http_req *hr;

    if (c != NULL && !c->admitted && !c->closing && !admit(c, true) &&
        c->blocked_ms > 0) {
        /* Its peer must wait: told so in the reply to this request. */
        struct evkeyvalq *out = evhttp_request_get_output_headers(req);
        struct evbuffer *body = evbuffer_new();
        char after[32];

        snprintf(after, sizeof(after), "%lld",
                 (long long)ha_login_retry_s(c->blocked_ms));
        evhttp_add_header(out, "Retry-After", after);
        evhttp_add_header(out, "Connection", "close");
        evhttp_add_header(out, "Content-Type", "text/plain; charset=utf-8");
        if (body != NULL)
            evbuffer_add_printf(body,
                                "too many failed logins from %s: try again "
                                "in %s s\n",
                                c->peer.host, after);
        evhttp_send_reply(req, 429, "Too Many Requests", body);
        if (body != NULL)
            evbuffer_free(body);
        return;
    }
    if (c == NULL || c->closing || !c->admitted) {
        evhttp_send_error(req, 503, "Service Unavailable");
        return;
    }
    if (c->evcon == NULL) {
        c->evcon = evhttp_request_get_connection(req);
        evhttp_connection_set_closecb(c->evcon, evcon_closed, c);
    }
    set_phase(c, PHASE_BUSY);
    hr = calloc(1, sizeof(*hr));
    if (hr == NULL || (hr->path = strdup(path != NULL ? path : "/")) ==
                          NULL ||
        (query != NULL && (hr->query = strdup(query)) == NULL)) {
        if (hr != NULL)
            req_free(hr);
        evhttp_send_error(req, 500, "Internal Server Error");
        set_phase(c, PHASE_IDLE);
        return;
    }
    hr->engine = h->engine;
    hr->req = req;
    hr->conn = c;
    hr->cut_hook = say_cut_short;
    hr->method = evhttp_request_get_command(req);
    hr->since = time(NULL);
    ha_strlcpy(hr->peer, c->peer.name, sizeof(hr->peer));
    ha_strlcpy(hr->host, c->peer.host, sizeof(hr->host));
    snprintf(hr->info, sizeof(hr->info), "%s %s%s%s",
             method_name(hr->method), hr->path, query != NULL ? "?" : "",
             query != NULL ? query : "");
    if (evbuffer_get_length(in) > 0) {
        size_t len = evbuffer_get_length(in);

        if (ha_buf_reserve(&hr->body, len) != 0 ||
            evbuffer_remove(in, hr->body.data, len) != (int)len) {
            req_free(hr);
            evhttp_send_error(req, 500, "Internal Server Error");
            set_phase(c, PHASE_IDLE);
            return;
        }
        hr->body.len = len;
    }
    c->cur = hr;
    evhttp_request_set_on_complete_cb(req, req_sent, c);
    dispatch(h, c, hr);
}

/* ------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------ */

/* The accept guard's answer when descriptors ran out. */
static void
refuse_busy(int fd, void *arg)
{
    static const char reply[] =
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Retry-After: 1\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "Content-Length: 31\r\n"
        "Connection: close\r\n\r\n"
        "out of file descriptors: retry\n";
    const struct ha_http *h = arg;

    if (h->tls == NULL)
        (void)send(fd, reply, sizeof(reply) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
}

struct ha_http *
ha_http_new(struct ha_engine *engine, char *err, size_t errlen)
{
    struct ha_http *h = calloc(1, sizeof(*h));
    struct event_base *base = ha_engine_base(engine);
    const struct ha_config *cfg = ha_engine_config(engine);

    if (h == NULL || (h->eh = evhttp_new(base)) == NULL) {
        free(h);
        ha_err_set(err, errlen, "http: cannot create the listener");
        return NULL;
    }
    h->base = base;
    h->cfg = cfg;
    h->engine = engine;
    if (cfg->http_tls && (h->tls = ha_engine_tls(engine)->ctx) == NULL) {
        evhttp_free(h->eh);
        free(h);
        ha_err_set(err, errlen, "http: http_tls is on but the server has "
                                "no TLS certificate (have_ssl)");
        return NULL;
    }
    ha_accept_guard_init(&h->guard, base, "http: ", refuse_busy, h);
    evhttp_set_bevcb(h->eh, new_bev, h);
    evhttp_set_gencb(h->eh, on_request, h);
    evhttp_set_max_headers_size(h->eh, HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(h->eh, HTTP_MAX_BODY);
    /* Inactivity of a socket; the deadlines above are the real bounds. */
    evhttp_set_timeout(h->eh, cfg->http_timeout);
    /* Every method reaches on_request, which answers 405 itself (evhttp
     * would say 501). */
    evhttp_set_allowed_methods(
        h->eh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                   EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    return h;
}

/* Serves listening socket fd (ours now) as h's next listener, described
 * by desc; path is a unix socket's file ("" for TCP). Returns 0, or -1
 * with err (fd closed, the file removed). */
static int
serve_socket(struct ha_http *h, evutil_socket_t fd, int port,
             const char *desc, const char *path, char *err, size_t errlen)
{
    struct http_listener *l, *ls;
    struct stat st;

    ls = realloc(h->ls, (h->n_ls + 1) * sizeof(*ls));
    if (ls != NULL)
        h->ls = ls;
    if (ls == NULL ||
        (ls[h->n_ls].bound = evhttp_accept_socket_with_handle(h->eh, fd)) ==
            NULL) {
        ha_err_set(err, errlen, "http: cannot serve %s", desc);
        close(fd);
        if (path[0] != '\0')
            unlink(path);
        return -1;
    }
    l = &h->ls[h->n_ls++];
    (void)ha_accept_guard_add(&h->guard,
                              evhttp_bound_socket_get_listener(l->bound),
                              desc);
    l->fd = fd;
    l->dev = 0;
    l->ino = 0;
    if (fstat(fd, &st) == 0) {
        l->dev = st.st_dev;
        l->ino = st.st_ino;
    }
    l->port = port;
    ha_strlcpy(l->desc, desc, sizeof(l->desc));
    ha_strlcpy(l->path, path, sizeof(l->path));
    memset(&l->file, 0, sizeof(l->file));
    if (path[0] != '\0')
        ha_listen_file_record(path, &l->file);
    return 0;
}

int
ha_http_listen(struct ha_http *h, char *err, size_t errlen)
{
    for (size_t i = 0; i < h->cfg->n_http; i++) {
        const struct ha_iface *f = &h->cfg->http[i];
        char desc[300];
        evutil_socket_t fd;
        int port = 0;

        if (f->kind == HA_IFACE_UNIX) {
            mode_t mode = (mode_t)strtoul(
                h->cfg->unix_socket_mode[0] != '\0'
                    ? h->cfg->unix_socket_mode
                    : HA_DEFAULT_UNIX_SOCKET_MODE,
                NULL, 8);

            fd = ha_listen_unix(f->path, mode, 128, err, errlen);
            ha_strlcpy(desc, f->path, sizeof(desc));
        } else {
            fd = ha_listen_tcp(f->host, f->port,
                               ha_iface_dual_stack(h->cfg->http,
                                                   h->cfg->n_http, i),
                               128, &port, err, errlen);
            snprintf(desc, sizeof(desc), "%s%s%s:%d",
                     strchr(f->host, ':') ? "[" : "", f->host,
                     strchr(f->host, ':') ? "]" : "", port);
        }
        if (fd < 0) {
            char why[512];

            ha_strlcpy(why, err, sizeof(why));
            ha_err_set(err, errlen, "http_ifaces: %s", why);
            return -1;
        }
        if (serve_socket(h, fd, port, desc,
                         f->kind == HA_IFACE_UNIX ? f->path : "", err,
                         errlen) != 0)
            return -1;
        ha_log_info("http: listening on %s%s%s/ (/metrics, /debug/pprof/, "
                    "/pprof/, /heap)",
                    f->kind == HA_IFACE_UNIX ? "unix:" : "",
                    f->kind == HA_IFACE_UNIX
                        ? ""
                        : (h->tls != NULL ? "https://" : "http://"),
                    desc);
    }
    return 0;
}

int
ha_http_listen_agent(struct ha_http *h, const char *path, char *err,
                     size_t errlen)
{
    struct stat st;
    evutil_socket_t fd;

    /* A socket file at the name is a stale one of a process that had
     * this pid (the registry's owner removes those at start): replaced. */
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    /* 0600: only root and this user may speak here. */
    fd = ha_listen_unix(path, 0600, 16, err, errlen);
    if (fd < 0)
        return -1;
    if (serve_socket(h, fd, 0, path, path, err, errlen) != 0)
        return -1;
    ha_strlcpy(h->agent_path, path, sizeof(h->agent_path));
    ha_log_info("http: answering a host gateway on %s", path);
    return 0;
}

void
ha_http_agent_files(const struct ha_http *h, struct ha_listen_look *look)
{
    for (size_t i = 0; h != NULL && i < h->n_ls; i++) {
        const struct http_listener *l = &h->ls[i];

        if (l->path[0] != '\0' && l->bound != NULL)
            (void)ha_listen_look_add(look, l->path, &l->file);
    }
}

int
ha_http_check_agent(struct ha_http *h, const struct ha_listen_look *look,
                    char *err, size_t errlen)
{
    for (size_t i = 0; h != NULL && i < h->n_ls; i++) {
        struct http_listener *l = &h->ls[i];
        enum ha_listen_file_state fs;
        evutil_socket_t fd;
        uid_t owner = 0;

        if (l->path[0] == '\0' || l->bound == NULL)
            continue;
        /* As the look off the loop saw it (core/blockio.h). */
        fs = ha_listen_look_find(look, l->path, &l->file, &owner);
        if (fs == HA_LISTEN_FILE_OURS)
            continue;
        /* The gateway finds this process by that file: without it the
         * process drops out of the host's view, and a file another
         * process put there speaks under this pid. The directory is this
         * user's own: a file of this user at our name is taken back. */
        if (fs == HA_LISTEN_FILE_REPLACED && owner != geteuid()) {
            if (l->file.set)
                ha_log_warn("http: %s now belongs to another user; left "
                            "alone, no host gateway reaches this process",
                            l->path);
            l->file.set = false;
            continue;
        }
        ha_log_warn("http: %s %s; listening there again, so the host "
                    "gateway finds this process",
                    l->path,
                    fs == HA_LISTEN_FILE_GONE
                        ? "was deleted"
                        : "was replaced by another process's socket of "
                          "this user");
        ha_accept_guard_remove(&h->guard,
                               evhttp_bound_socket_get_listener(l->bound));
        evhttp_del_accept_socket(h->eh, l->bound); /* closes l->fd */
        l->bound = NULL;
        if (fs == HA_LISTEN_FILE_REPLACED)
            (void)unlink(l->path);
        fd = ha_listen_unix(l->path, 0600, 16, err, errlen);
        if (fd < 0)
            return -1;
        if ((l->bound = evhttp_accept_socket_with_handle(h->eh, fd)) ==
            NULL) {
            close(fd);
            unlink(l->path);
            ha_err_set(err, errlen, "http: cannot serve %s", l->path);
            return -1;
        }
        (void)ha_accept_guard_add(&h->guard,
                                  evhttp_bound_socket_get_listener(l->bound),
                                  l->desc);
        {
            struct stat st;

            l->fd = fd;
            if (fstat(fd, &st) == 0) {
                l->dev = st.st_dev;
                l->ino = st.st_ino;
            }
        }
        ha_listen_file_record(l->path, &l->file);
        return 1;
    }
    return 0;
}

size_t
ha_http_n_listeners(const struct ha_http *h)
{
    return h != NULL ? h->n_ls : 0;
}

int
ha_http_port(const struct ha_http *h, size_t i)
{
    return h != NULL && i < h->n_ls ? h->ls[i].port : -1;
}

void
ha_http_abandon(struct ha_http *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n_ls; i++) {
        struct stat st;

        if (fstat(h->ls[i].fd, &st) == 0 && st.st_dev == h->ls[i].dev &&
            st.st_ino == h->ls[i].ino)
            close(h->ls[i].fd);
    }
    ha_accept_guard_abandon(&h->guard);
}

void
ha_http_free(struct ha_http *h)
{
    if (h == NULL)
        return;
    /* Requests still running end now (they see the kill at their next
     * check), their replies going out as the connections close. */
    for (struct http_conn *c = h->conns; c != NULL; c = c->next) {
        struct ha_http_req *hr = c->cur;

        if (hr == NULL)
            continue;
        hr->conn = NULL; /* req_done must not touch c: it goes below */
        c->cur = NULL;
        /* Nothing of its reply went out, nor waits before it: the
         * client is told why it gets none, as a MySQL client gets ERR
         * 1053, rather than an empty reply (plain HTTP; over TLS the
         * connection just closes). */
        if (ha_task_busy(&hr->task) && !hr->answered && !hr->streaming &&
            conn_unsent(c) == 0)
            conn_send_raw(c, "503 Service Unavailable", "",
                          "heapadmin is stopping: this request was "
                          "interrupted\n");
        if (ha_task_busy(&hr->task)) {
            ha_task_abort(&hr->task);
            req_done(hr);
        } else if (hr->sending) {
            req_finish(hr);
        }
    }
    /* The agent socket's file goes with it (a fork child that never
     * served it has no ha_http to free). */
    for (size_t i = 0; i < h->n_ls; i++) {
        struct stat st;
        uid_t owner;

        if (h->ls[i].path[0] != '\0' && h->ls[i].bound != NULL &&
            fstat(h->ls[i].fd, &st) == 0 &&
            st.st_dev == h->ls[i].dev && st.st_ino == h->ls[i].ino &&
            ha_listen_file_check(h->ls[i].path, &h->ls[i].file, &owner) ==
                HA_LISTEN_FILE_OURS)
            unlink(h->ls[i].path);
    }
    if (h->refused_say != NULL)
        event_free(h->refused_say);
    ha_accept_guard_stop(&h->guard);
    /* Frees every connection and listener; then our references go. */
    evhttp_free(h->eh);
    ha_accept_guard_free(&h->guard);
    while (h->conns != NULL)
        conn_release(h, h->conns);
    free(h->ls);
    free(h);
}
