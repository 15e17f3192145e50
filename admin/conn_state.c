/* SPDX-License-Identifier: MIT
 *
 * A client connection's state machine (see conn.h): the bufferevent's
 * callbacks, the dispatch of each packet by the connection's state, TLS
 * after an SSLRequest, timeouts, and ha_conn_new.
 *
 * The read callback loops decode -> dispatch -> encode while whole packets
 * are buffered and stops once a close is pending.
 *
 * COM_QUERY and COM_STMT_EXECUTE run as a task (core/task.h). When the
 * command pauses (its 5 ms slice is used up, its streamed result waits
 * for the client, or work it handed to the worker thread is not done),
 * reading stops on that connection until it ends; the task layer goes
 * on with it from the loop, and the write callback wakes a command that
 * waits for its client to take rows. A packet of the connection phase
 * that may end the login runs as a task too (run_login): opening the
 * session pauses between its steps (admin/session.c).
 */
#include "admin/conn.h"
#include "admin/conn_int.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "admin/handshake.h"
#include "core/log.h"
#include "core/task.h"

static void conn_read_cb(struct bufferevent *bev, void *arg);
static void conn_write_cb(struct bufferevent *bev, void *arg);
static void conn_event_cb(struct bufferevent *bev, short what, void *arg);
static void conn_login_timeout_cb(evutil_socket_t fd, short what, void *arg);
static void read_on(struct ha_conn *c);
static void run_login(struct ha_conn *c);

/* ------------------------------------------------------------------ */
/* TLS                                                                  */
/* ------------------------------------------------------------------ */

/* Fires when the socket's output under a TLS filter shrinks, which the
 * filter does not report: conn_write_cb is run (deferred) once a closing
 * connection's last reply has reached the socket, or a client that had
 * reading paused (max_output) has drained below the bound. */
static void
raw_drained_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
               void *arg)
{
    struct ha_conn *c = arg;

    (void)buf;
    if (info->n_deleted == 0)
        return;
    if ((c->state == HA_CONN_CLOSING && !ha_conn_output_pending(c)) ||
        (c->read_paused && ha_conn_unsent_bytes(c) <= c->env->max_output) ||
        ha_conn_drained(c))
        bufferevent_trigger(c->bev, EV_WRITE,
                            BEV_TRIG_IGNORE_WATERMARKS |
                                BEV_TRIG_DEFER_CALLBACKS);
}

/* After an SSLRequest (MySQL protocol: Protocol::SSLRequest) the rest of
 * the connection phase runs inside TLS, continuing the sequence ids (the
 * response comes with seq 2). The TLS filter reads from the socket
 * bufferevent's input, where the start of the ClientHello may already
 * sit (a client may send it in the same segment as the SSLRequest):
 * nothing is lost, but no new bytes may ever arrive to wake the filter,
 * so it is woken here. */
static void
start_tls(struct ha_conn *c)
{
    struct bufferevent *raw = c->bev, *tls;
    SSL *ssl = SSL_new(c->env->ssl_ctx);

    tls = ssl == NULL
              ? NULL
              : bufferevent_openssl_filter_new(c->env->base, raw, ssl,
                                               BUFFEREVENT_SSL_ACCEPTING,
                                               BEV_OPT_CLOSE_ON_FREE);
    if (tls == NULL) {
        ha_log_error("connection %u (%s): cannot start TLS", c->id,
                     c->peer.name);
        SSL_free(ssl);
        ha_wire_fail(c, 1105, "HY000", "Cannot start TLS");
        return;
    }
    /* Clients often close without close_notify; that is an EOF. */
    bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
    c->bev = tls;
    c->tls = true;
    c->raw_drained =
        evbuffer_add_cb(bufferevent_get_output(raw), raw_drained_cb, c);
    bufferevent_setcb(tls, conn_read_cb, conn_write_cb, conn_event_cb, c);
    bufferevent_enable(tls, EV_READ | EV_WRITE);
    if (evbuffer_get_length(bufferevent_get_input(raw)) > 0)
        bufferevent_trigger(raw, EV_READ, BEV_TRIG_DEFER_CALLBACKS);
    ha_log_debug("connection %u (%s): TLS handshake", c->id, c->peer.name);
}

/* ------------------------------------------------------------------ */
/* Commands as tasks                                                    */
/* ------------------------------------------------------------------ */

static void
command_fiber_fn(void *arg)
{
    struct ha_conn *c = arg;

    ha_conn_command_run(c, c->reader.payload.data, c->reader.payload.len);
}

/* struct ha_session.yield: the command had its slice; the loop serves
 * the others and goes on with it at its next pass. */
static void
conn_yield(void *arg)
{
    struct ha_conn *c = arg;

    ha_task_slice(&c->task);
}

/* A paused command ended: its reply goes out and the requests that came
 * meanwhile are read. */
static void
finish_command(void *arg)
{
    struct ha_conn *c = arg;

    c->session.yield = NULL;
    if (c->free_pending) {
        ha_conn_free(c);
        return;
    }
    read_on(c); /* may free c */
}

/* After a held or paused packet was handled: its reply goes out and the
 * requests that came meanwhile are read. */
static void
read_on(struct ha_conn *c)
{
    ha_proto_reader_next(&c->reader);
    if (ha_conn_flush(c) != 0)
        return;
    if (c->state == HA_CONN_CLOSING)
        return;
    if (!c->read_paused)
        bufferevent_enable(c->bev, EV_READ);
    conn_read_cb(c->bev, c); /* may free c */
}

/* Runs COM_QUERY and COM_STMT_EXECUTE, the commands that run SQL of any
 * length, as a task; the rest on the loop's stack. When the command
 * pauses, no more input is read from c until it ends (its payload is
 * the reader's); finish_command then goes on. */
static void
run_command(struct ha_conn *c, const uint8_t *p, size_t len)
{
    c->session.killed = false;
    c->no_drain = false;
    if (c->env->tasks == NULL ||
        (p[0] != HA_COM_QUERY && p[0] != HA_COM_STMT_EXECUTE)) {
        ha_conn_command_run(c, p, len);
        return;
    }
    c->session.yield = conn_yield;
    c->session.yield_arg = c;
    c->session.slice_from_ns = 0;
    if (ha_task_run(&c->task, command_fiber_fn, finish_command, c) == 1) {
        bufferevent_disable(c->bev, EV_READ);
        return;
    }
    c->session.yield = NULL;
    /* conn_read_cb goes on with the next request. */
}

static void
login_fiber_fn(void *arg)
{
    struct ha_conn *c = arg;

    (void)ha_handshake_packet(c, c->reader.payload.data, c->reader.payload.len);
}

/* Runs a packet of the connection phase that may end the login as a
 * task: opening the session costs a few ms of SQLite work (attaching the
 * datadir's files, one virtual table each), which ha_session_open cuts
 * into steps, so a burst of logins never holds the loop that long in
 * one go. While it opens, no more input is read from c (as for a paused
 * command); finish_command goes on. */
static void
run_login(struct ha_conn *c)
{
    if (c->env->tasks == NULL) {
        login_fiber_fn(c);
        return;
    }
    if (ha_task_run(&c->task, login_fiber_fn, finish_command, c) == 1)
        bufferevent_disable(c->bev, EV_READ);
    /* else conn_read_cb goes on with the next packet. */
}

/* ------------------------------------------------------------------ */
/* Callbacks                                                            */
/* ------------------------------------------------------------------ */

static void dispatch(struct ha_conn *c);

static void
dispatch(struct ha_conn *c)
{
    const uint8_t *p = c->reader.payload.data;
    size_t len = c->reader.payload.len;
    /* Commands start a new sequence at 0; the connection phase continues
     * the numbering (MySQL protocol: Sequence ID). */
    uint8_t want = c->state == HA_CONN_COMMAND ? 0 : c->seq;

    if (c->reader.first_seq != want) {
        char msg[128];
        ha_log_warn("connection %u (%s): packet with sequence id %u, "
                    "expected %u; closing",
                    c->id, c->peer.name, c->reader.first_seq, want);
        snprintf(msg, sizeof(msg),
                 "Got packets out of order (sequence id %u, expected %u)",
                 c->reader.first_seq, want);
        c->seq = (uint8_t)(c->reader.last_seq + 1);
        ha_wire_fail(c, 1156, "08S01", msg);
        return;
    }
    c->seq = (uint8_t)(c->reader.last_seq + 1);
    /* An SSLRequest (32 bytes) carries no credential; everything else
     * of the connection phase may. Refused before anything of it is
     * taken when its peer must wait: with the next sequence id, after
     * the packet's own (ERR 1129 went out with the packet's id when the
     * throttle began between the greeting and the reply, and drivers
     * reported a protocol error instead of "try again in N s"). */
    if (c->state != HA_CONN_COMMAND &&
        !(c->state == HA_CONN_HANDSHAKE && len == 32) &&
        ha_handshake_refused(c))
        return;
    switch (c->state) {
    case HA_CONN_HANDSHAKE:
    case HA_CONN_AUTH_SWITCH:
    case HA_CONN_AUTH_FULL:
        if (c->state == HA_CONN_HANDSHAKE && len == 32) {
            if (ha_handshake_packet(c, p, len) == 1)
                start_tls(c); /* an SSLRequest: nothing to open */
            break;
        }
        run_login(c);
        break;
    case HA_CONN_COMMAND:
        if (len == 0) {
            ha_wire_fail(c, 1047, "08S01", "Empty command packet");
            break;
        }
        run_command(c, p, len);
        break;
    default:
        break;
    }
}

static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct ha_conn *c = arg;
    struct evbuffer *input = bufferevent_get_input(bev);
    char err[256];

    if (ha_task_busy(&c->task))
        return; /* a command is paused; its end reads on */
    while (c->state != HA_CONN_CLOSING) {
        struct evbuffer_iovec v;
        bool ready = false;
        ssize_t used;

        if (evbuffer_peek(input, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
            break;
        /* A client that does not read its replies gets no more of them:
         * no request is read while the unsent output is over the bound
         * (one reply may exceed it, so a big result still goes out to a
         * client that reads). conn_write_cb resumes once it drained;
         * the write timeout drops a client that never reads. */
        if (c->env->max_output > 0 &&
            ha_conn_unsent_bytes(c) > c->env->max_output) {
            if (!c->read_paused)
                ha_log_debug("connection %u (%s): %zu reply bytes unsent; "
                             "reading paused",
                             c->id, c->peer.name, ha_conn_unsent_bytes(c));
            c->read_paused = true;
            bufferevent_disable(bev, EV_READ);
            return;
        }
        /* Connection phase: a peer that is not a MySQL client is refused
         * as soon as its first header is in, not after the bytes that
         * header announces (an HTTP request's "GET " reads as a 2 MiB
         * packet with sequence id 0x20). */
        if (c->state != HA_CONN_COMMAND && c->reader.hdr_have == 0 &&
            !c->reader.in_chunk && c->reader.payload.len == 0 &&
            evbuffer_get_length(input) >= HA_PROTO_HEADER_LEN) {
            uint8_t h[HA_PROTO_HEADER_LEN];
            char msg[128];

            evbuffer_copyout(input, h, sizeof(h));
            if (h[3] != c->seq) {
                ha_log_warn("connection %u (%s): packet with sequence id "
                            "%u during login, expected %u (not a MySQL "
                            "client?); closing",
                            c->id, c->peer.name, h[3], c->seq);
                snprintf(msg, sizeof(msg),
                         "Got packets out of order (sequence id %u, "
                         "expected %u)",
                         h[3], c->seq);
                ha_wire_fail(c, 1156, "08S01", msg);
                evbuffer_drain(input, evbuffer_get_length(input));
                break;
            }
        }
        used = ha_proto_reader_feed(&c->reader, v.iov_base, v.iov_len, &ready,
                                    err, sizeof(err));
        if (used < 0) {
            ha_log_warn("connection %u (%s): malformed input: %s; closing",
                        c->id, c->peer.name, err);
            if (c->reader.error == HA_PROTO_READER_TOO_LARGE)
                ha_wire_fail(c, 1153, "08S01",
                             "Got a packet bigger than "
                             "'max_allowed_packet' bytes");
            else
                ha_wire_fail(c, 1156, "08S01", err);
            evbuffer_drain(input, evbuffer_get_length(input));
            break;
        }
        evbuffer_drain(input, (size_t)used);
        if (ready) {
            dispatch(c);
            if (ha_task_busy(&c->task))
                return; /* paused: finish_command goes on */
            ha_proto_reader_next(&c->reader);
            if (ha_conn_flush(c) != 0)
                return;
            if (c->bev != bev)
                return; /* TLS took over; the filter reads from now on */
        }
    }
    ha_conn_flush(c);
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct ha_conn *c = arg;

    if (c->state == HA_CONN_CLOSING && !ha_conn_output_pending(c)) {
        ha_conn_free(c);
        return;
    }
    if (ha_task_busy(&c->task) && ha_conn_drained(c)) {
        /* A streaming result's client took enough: more rows. */
        ha_task_wake(&c->task);
        return;
    }
    if (c->read_paused && !ha_task_busy(&c->task)) {
        /* The output drained: serve the requests that waited. */
        c->read_paused = false;
        bufferevent_enable(bev, EV_READ);
        conn_read_cb(bev, c); /* may free c */
    }
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct ha_conn *c = arg;

    if (what & BEV_EVENT_TIMEOUT) {
        if (what & BEV_EVENT_WRITING) {
            ha_log_warn("connection %u (%s): client not reading: %zu reply "
                        "bytes unsent for %d s (net_write_timeout); "
                        "closing",
                        c->id, c->peer.name,
                        evbuffer_get_length(bufferevent_get_output(bev)),
                        c->env->net_write_timeout);
            ha_conn_free(c);
            return;
        }
        if (c->state == HA_CONN_CLOSING)
            return; /* reading is off; the write timeout still runs */
        if (c->state != HA_CONN_COMMAND) {
            /* The login timer covers the connection phase. */
            bufferevent_enable(bev, EV_READ);
            return;
        }
        ha_log_info("connection %u (%s): idle for %d s (wait_timeout); "
                    "closing",
                    c->id, c->peer.name, c->env->wait_timeout);
        /* MySQL 8.0.24+ tells the client why (ER_CLIENT_INTERACTION_
         * TIMEOUT) as an unsolicited packet. */
        c->seq = 0;
        ha_wire_fail(c, 4031, "HY000",
                     "The client was disconnected by the server because "
                     "of inactivity. See wait_timeout and "
                     "interactive_timeout for configuring this behavior.");
        ha_conn_flush(c);
        return;
    }
    if ((what & BEV_EVENT_ERROR) && c->tls &&
        bufferevent_get_openssl_error(bev) != 0) {
        char reason[256];

        ERR_error_string_n(bufferevent_get_openssl_error(bev), reason,
                           sizeof(reason));
        ha_log_info("connection %u (%s): TLS error: %s", c->id, c->peer.name,
                    reason);
    } else if (what & BEV_EVENT_ERROR)
        ha_log_info("connection %u (%s): closed: %s", c->id, c->peer.name,
                    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    else if (what & BEV_EVENT_EOF)
        ha_log_debug("connection %u (%s): closed by the client", c->id,
                     c->peer.name);
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        ha_conn_free(c);
}

/* connect_timeout: the login (and, with TLS, its handshake) did not
 * finish in time. */
static void
conn_login_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_conn *c = arg;

    (void)fd;
    (void)what;
    if (c->session_open || c->opening || c->state == HA_CONN_CLOSING)
        return;
    ha_log_warn("connection %u (%s): login not finished within %d s "
                "(connect_timeout, state %s); closing",
                c->id, c->peer.name, c->env->connect_timeout,
                ha_wire_state_name(c->state));
    ha_conn_free(c);
}

struct ha_conn *
ha_conn_new(const struct ha_conn_env *env, evutil_socket_t fd,
            const struct sockaddr *addr, int addrlen, uint32_t id)
{
    struct ha_conn *c = calloc(1, sizeof(*c));
    int one = 1;

    if (c == NULL) {
        ha_log_error("out of memory accepting a connection");
        evutil_closesocket(fd);
        return NULL;
    }
    c->env = env;
    c->id = id;
    c->connected_at = time(NULL);
    c->state = HA_CONN_HANDSHAKE;
    ha_peer_from_addr(&c->peer, addr, (socklen_t)addrlen);
    if (c->peer.family == HA_PEER_UNIX)
        (void)ha_peer_from_fd(&c->peer, fd); /* SO_PEERCRED */
    ha_proto_reader_init(&c->reader, env->max_packet);
    ha_buf_init(&c->out);
    ha_stmt_table_init(&c->stmts);
    ha_task_init(&c->task, env->tasks);
    c->client_ops = &ha_conn_client_ops;
    if (addr->sa_family != AF_UNIX)
        /* Replies are written whole; don't let Nagle hold the last one. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->bev = bufferevent_socket_new(env->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL) {
        ha_log_error("connection %u (%s): cannot create a bufferevent", id,
                     c->peer.name);
        evutil_closesocket(fd);
        ha_proto_reader_free(&c->reader);
        free(c);
        return NULL;
    }
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    {
        struct timeval rd = {env->wait_timeout, 0};
        struct timeval wr = {env->net_write_timeout, 0};
        struct timeval login = {env->connect_timeout, 0};

        /* Idle sessions (read) and stalled replies (write); zero means
         * none, for embedders that leave the env fields unset. */
        bufferevent_set_timeouts(c->bev, env->wait_timeout > 0 ? &rd : NULL,
                                 env->net_write_timeout > 0 ? &wr : NULL);
        if (env->connect_timeout > 0) {
            c->login_timer = evtimer_new(env->base, conn_login_timeout_cb, c);
            if (c->login_timer == NULL ||
                evtimer_add(c->login_timer, &login) != 0) {
                ha_log_error("connection %u (%s): cannot arm the login "
                             "timer",
                             id, c->peer.name);
                bufferevent_free(c->bev);
                if (c->login_timer != NULL)
                    event_free(c->login_timer);
                ha_proto_reader_free(&c->reader);
                free(c);
                return NULL;
            }
        }
    }
    ha_log_debug("connection %u from %s", id, c->peer.name);
    if (ha_handshake_greet(c) != 0 ||
        bufferevent_enable(c->bev, EV_READ | EV_WRITE) != 0) {
        bufferevent_free(c->bev);
        ha_proto_reader_free(&c->reader);
        ha_buf_free(&c->out);
        free(c);
        return NULL;
    }
    if (ha_conn_flush(c) != 0)
        return NULL;
    return c;
}
