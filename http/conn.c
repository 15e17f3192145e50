/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end's connections (see http_int.h): our reference to
 * each one's bufferevent beside evhttp's, its phase and deadline, shut
 * down, raw replies where no request can carry one, and a client cut off
 * for taking no reply bytes.
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
 * Deadlines: a new connection, and one whose next request has started to
 * arrive, must deliver the request's headers within http_header_timeout;
 * an idle keep-alive connection lives http_timeout; a request being
 * answered has none (its task has max_execution_time).
 *
 * Replies keep to the engine's output budget (request.h): while one is
 * being answered a connection has no read or write timeout of evhttp's
 * (a long download is not idle); its deadline checks instead that the
 * client takes reply bytes: one that takes none for net_write_timeout
 * is cut off, as on the MySQL port. Its output's drain wakes a streamed
 * reply's task once the client took half a window.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/lograte.h"
#include "http/http_int.h"
#include "http/parse.h"

/* True while evhttp still uses c's bufferevent: bufferevent_free()
 * clears the callbacks evhttp set. */
bool
ha_http_conn_alive(const struct http_conn *c)
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
    evbuffer_remove_cb(bufferevent_get_input(c->bev), ha_http_conn_input_cb, c);
    evbuffer_remove_cb(bufferevent_get_output(c->bev), ha_http_conn_output_cb,
                       c);
    bufferevent_decref(c->bev);
    c->bev = NULL;
    c->gone = true;
}

void
ha_http_conn_release(struct ha_http *h, struct http_conn *c)
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
void
ha_http_conn_sweep(struct ha_http *h)
{
    struct http_conn *c = h->conns, *next;

    for (; c != NULL; c = next) {
        next = c->next;
        if (!ha_http_conn_alive(c) && c->cur == NULL)
            ha_http_conn_release(h, c);
    }
}

void
ha_http_conn_arm(struct http_conn *c, int seconds)
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

    if (ha_http_conn_alive(c))
        bufferevent_set_timeouts(c->bev, answering ? NULL : &tv,
                                 answering ? NULL : &tv);
}

void
ha_http_conn_set_phase(struct http_conn *c, enum conn_phase phase)
{
    enum conn_phase was = c->phase;

    c->phase = phase;
    if (c->gone) {
        ha_http_conn_arm(c, 0); /* its release, at the next loop turn */
        return;
    }
    if ((was == PHASE_BUSY) != (phase == PHASE_BUSY))
        socket_timeouts(c, phase == PHASE_BUSY);
    switch (phase) {
    case PHASE_NEW:
    case PHASE_READING:
        ha_http_conn_arm(c, c->h->cfg->http_header_timeout);
        break;
    case PHASE_IDLE:
        ha_http_conn_arm(c, c->h->cfg->http_timeout);
        break;
    default:
        /* Answering: the client must take what it is sent. */
        c->progress_ms = ha_clock_ms();
        ha_http_conn_arm(c, c->h->cfg->net_write_timeout);
        break;
    }
}

/* Closes c: evhttp reads the end of the stream and frees it. */
void
ha_http_conn_shutdown(struct http_conn *c)
{
    evutil_socket_t s = ha_http_conn_alive(c) ? bufferevent_getfd(c->bev) : -1;

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
void
ha_http_conn_send_raw(struct http_conn *c, const char *status,
                      const char *header, const char *text)
{
    evutil_socket_t s = ha_http_conn_alive(c) ? bufferevent_getfd(c->bev) : -1;
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

/* The reply bytes c holds unsent. */
size_t
ha_http_conn_unsent(const struct http_conn *c)
{
    return ha_http_conn_alive(c)
               ? evbuffer_get_length(bufferevent_get_output(c->bev))
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

    if (ha_http_conn_unsent(c) == 0) {
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
                    h->cfg->net_write_timeout, ha_http_conn_unsent(c));
    }
    ha_http_conn_shutdown(c);
}

void
ha_http_conn_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *c = arg;

    (void)fd;
    (void)what;
    if (!ha_http_conn_alive(c) && c->cur == NULL) {
        ha_http_conn_release(c->h, c);
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
    ha_http_conn_shutdown(c);
}

/* Bytes arrived: an idle connection starts a request, whose headers now
 * have http_header_timeout to arrive. */
void
ha_http_conn_input_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
                      void *arg)
{
    struct http_conn *c = arg;

    (void)buf;
    if (info->n_added > 0 && c->phase == PHASE_IDLE)
        ha_http_conn_set_phase(c, PHASE_READING);
}

/* Reply bytes left (the client took some) or started to wait: progress
 * for the write deadline; a streamed reply waiting for room goes on once
 * half its window is free. */
void
ha_http_conn_output_cb(struct evbuffer *buf,
                       const struct evbuffer_cb_info *info, void *arg)
{
    struct http_conn *c = arg;

    if (info->n_deleted > 0 || info->orig_size == 0)
        c->progress_ms = ha_clock_ms();
    if (info->n_deleted > 0 && c->cur != NULL && c->cur->stream_waiting &&
        evbuffer_get_length(buf) <= HA_CLIENTS_STREAM_BYTES / 2)
        ha_task_wake(&c->cur->task);
}
