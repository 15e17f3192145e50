/* SPDX-License-Identifier: MIT
 *
 * Client connections (see conn.h): transport, lifecycle and the command
 * phase; the connection phase is handshake.c's.
 *
 * The read callback loops decode -> dispatch -> encode while whole packets
 * are buffered and stops once a close is pending. Replies are built in
 * c->out and queued on the bufferevent after each packet; a connection
 * that must close (QUIT, failed login, malformed packet) is freed only
 * when its last reply has been written.
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

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "admin/exec.h"
#include "admin/handshake.h"
#include "admin/query.h"
#include "admin/sysvar.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"

static void conn_read_cb(struct bufferevent *bev, void *arg);
static void conn_write_cb(struct bufferevent *bev, void *arg);
static void conn_event_cb(struct bufferevent *bev, short what, void *arg);
static void conn_login_timeout_cb(evutil_socket_t fd, short what, void *arg);
static int conn_drain(void *arg);
static bool stopping(const struct ha_conn *c);
static bool drained(struct ha_conn *c);
static void read_on(struct ha_conn *c);
static void run_login(struct ha_conn *c);
static const struct ha_client_ops conn_client_ops;

/* ------------------------------------------------------------------ */
/* Low level: peers, output, teardown                                   */
/* ------------------------------------------------------------------ */



/* Sends what c has to send with one non-blocking try, for a connection
 * about to be freed: what the socket does not take is lost, and nothing
 * waits. The bufferevent's output is peeked at, not drained: libevent
 * lets only the bufferevent take from it (evbuffer_write refuses). Under
 * TLS the filter has already encrypted its output into the socket
 * bufferevent below it. */
static void
send_last_reply(struct ha_conn *c)
{
    struct bufferevent *raw;
    struct evbuffer_iovec v[8];
    struct msghdr m = {0};
    int n;

    if (c->bev == NULL)
        return;
    if (c->out.len > 0 && !ha_buf_failed(&c->out) &&
        bufferevent_write(c->bev, c->out.data, c->out.len) == 0)
        ha_buf_reset(&c->out);
    raw = c->tls ? bufferevent_get_underlying(c->bev) : c->bev;
    if (raw == NULL)
        return;
    n = evbuffer_peek(bufferevent_get_output(raw), -1, NULL, v, 8);
    if (n <= 0)
        return;
    m.msg_iov = (struct iovec *)v; /* evbuffer_iovec is laid out as iovec */
    m.msg_iovlen = (size_t)(n < 8 ? n : 8);
    (void)sendmsg(bufferevent_getfd(raw), &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void
ha_conn_free(struct ha_conn *c)
{
    if (c == NULL)
        return;
    if (ha_task_busy(&c->task)) {
        if (ha_task_current() == &c->task) {
            /* From within c's own command: its end frees c. */
            c->free_pending = true;
            return;
        }
        /* A paused command's frames hold the session's statements: end
         * it now (it stops at its next VM check). */
        c->session.killed = true;
        ha_task_abort(&c->task);
        /* When the server stops, its last reply (ERR 1053) was built
         * after the loop's last write: send what the socket takes now,
         * or the client sees only a closed connection. A connection
         * KILLed is closed without one, as MySQL closes it. */
        if (stopping(c))
            send_last_reply(c);
    }
    ha_task_release(&c->task);
    if (c->env->on_close != NULL)
        c->env->on_close(c, c->env->arg);
    /* Statements first: they belong to the session's SQLite connection. */
    ha_stmt_table_free(&c->stmts);
    if (c->session_open)
        ha_session_close(&c->session);
    if (c->login_timer != NULL)
        event_free(c->login_timer);
    if (c->raw_drained != NULL)
        evbuffer_remove_cb_entry(
            bufferevent_get_output(bufferevent_get_underlying(c->bev)),
            c->raw_drained);
    if (c->bev != NULL)
        bufferevent_free(c->bev);
    ha_proto_reader_free(&c->reader);
    ha_buf_free(&c->out);
    free(c);
}

void
ha_conn_close_after_reply(struct ha_conn *c)
{
    if (c->state == HA_CONN_CLOSING)
        return;
    ha_log_info("connection %u (%s): killed", c->id, c->peer.name);
    /* conn_write_cb frees it once written */
    ha_wire_set_state(c, HA_CONN_CLOSING);
    bufferevent_disable(c->bev, EV_READ);
    if (ha_task_busy(&c->task))
        ha_conn_kill_query(c); /* its command ends at its next check */
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        ha_conn_free(c);
}

/* Whether reply bytes still wait to be written. Under TLS the filter
 * hands its output to the socket bufferevent below it at once, so that
 * one's output is checked too: freeing the filter frees it (and would
 * drop the last reply, an ERR before closing). */
static size_t
unsent_bytes(struct ha_conn *c)
{
    size_t n = evbuffer_get_length(bufferevent_get_output(c->bev));
    struct bufferevent *raw = c->tls ? bufferevent_get_underlying(c->bev)
                                     : NULL;

    return raw != NULL ? n + evbuffer_get_length(bufferevent_get_output(raw))
                       : n;
}

size_t
ha_conn_held_bytes(struct ha_conn *c)
{
    return c->out.len + unsent_bytes(c);
}

static bool
output_pending(struct ha_conn *c)
{
    return unsent_bytes(c) > 0;
}

/* Moves c->out to the socket, or what it does not take to the
 * bufferevent. Returns -1 (logged) when the connection failed and must
 * be freed; c is never freed here. */
static int
queue_out(struct ha_conn *c)
{
    struct evbuffer *output = bufferevent_get_output(c->bev);

    if (ha_buf_failed(&c->out)) {
        ha_log_error("connection %u (%s): out of memory building a reply; "
                     "closing",
                     c->id, c->peer.name);
        return -1;
    }
    if (c->out.len > 0 && !c->tls && evbuffer_get_length(output) == 0) {
        /* Nothing is queued ahead of this reply: write it now, from the
         * read callback. Queueing it instead costs an event-loop pass and
         * two epoll_ctl calls per query (bench/PROFILE.md); only what the
         * socket does not take goes to the bufferevent. */
        ssize_t n = send(bufferevent_getfd(c->bev), c->out.data, c->out.len,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            ha_buf_consume(&c->out, (size_t)n);
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                   errno != EINTR) {
            ha_log_info("connection %u (%s): closed: %s", c->id, c->peer.name,
                        strerror(errno));
            return -1;
        }
    }
    if (c->out.len > 0) {
        if (bufferevent_write(c->bev, c->out.data, c->out.len) != 0) {
            ha_log_error("connection %u (%s): cannot queue %zu bytes; "
                         "closing",
                         c->id, c->peer.name, c->out.len);
            return -1;
        }
        ha_buf_reset(&c->out);
    }
    /* Large replies: give the memory back instead of keeping the
     * high-water mark per idle connection. */
    if (c->out.len == 0 && c->out.cap > (1u << 20))
        ha_buf_free(&c->out);
    return 0;
}

/* Queues c->out on the bufferevent. Returns -1 if the connection was
 * freed (the caller must not touch c again). */
static int
conn_flush(struct ha_conn *c)
{
    if (queue_out(c) != 0) {
        ha_conn_free(c);
        return -1;
    }
    if (c->state == HA_CONN_CLOSING) {
        bufferevent_disable(c->bev, EV_READ);
        if (!output_pending(c)) {
            ha_conn_free(c);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The connection as a client of the engine                             */
/* ------------------------------------------------------------------ */

static struct ha_conn *
conn_of_client(const struct ha_client *cl)
{
    struct ha_session *s = HA_CONTAINER_OF(cl, struct ha_session, client);

    return HA_CONTAINER_OF(s, struct ha_conn, session);
}

/* A KILL deferred to the loop's next pass, listed in the shared state
 * so that a server stopping before that pass cancels it. */
struct ha_kill_req {
    struct ha_kill_req **head;   /* the server's list */
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
    if (cl != NULL && cl->ops == &conn_client_ops)
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

static const struct ha_client_ops conn_client_ops = {
    .row = ha_session_client_row,
    .kill = conn_client_kill,
    .held = conn_client_held,
};

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
    if ((c->state == HA_CONN_CLOSING && !output_pending(c)) ||
        (c->read_paused && unsent_bytes(c) <= c->env->max_output) ||
        drained(c))
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

    tls = ssl == NULL ? NULL
                      : bufferevent_openssl_filter_new(
                            c->env->base, raw, ssl,
                            BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (tls == NULL) {
        ha_log_error("connection %u (%s): cannot start TLS", c->id, c->peer.name);
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
/* Command phase                                                        */
/* ------------------------------------------------------------------ */

/* Copies a name of n bytes into dst (size bytes) as a C string. Returns
 * -1 if it does not fit or holds a NUL. */
static int
copy_name(char *dst, size_t size, const uint8_t *src, size_t n)
{
    if (n >= size || memchr(src, '\0', n) != NULL)
        return -1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

static void
on_field_list(struct ha_conn *c, const uint8_t *p, size_t len,
              struct ha_reply *r)
{
    const uint8_t *t, *w;
    size_t tn, wn;
    char table[HA_PROTO_MAX_DB + 1], wild[HA_PROTO_MAX_DB + 1];
    char err[128];

    if (ha_proto_decode_field_list(p, len, &t, &tn, &w, &wn, err,
                                   sizeof(err)) != 0 ||
        copy_name(table, sizeof(table), t, tn) != 0 ||
        copy_name(wild, sizeof(wild), w, wn) != 0) {
        ha_reply_err(r, 1146, "42S02", "Table '%.*s' doesn't exist",
                     (int)(tn > 64 ? 64 : tn), (const char *)t);
        return;
    }
    ha_session_set_command(&c->session, "Field List", table, tn);
    ha_exec_field_list(&c->session, table, wn > 0 ? wild : NULL, r);
}

/* COM_STATISTICS: a bare string<EOF>, never an OK (MySQL protocol:
 * COM_STATISTICS); the mysql CLI's status command reads the leading
 * "Uptime: N". */
static void
on_statistics(struct ha_conn *c, struct ha_reply *r)
{
    struct ha_clients_stats st;
    char text[256];
    int n;

    ha_clients_stats(c->env->shared->clients, &st);
    n = snprintf(text, sizeof(text),
                 "Uptime: %llu  Threads: %zu  Questions: %llu  Slow "
                 "queries: 0  Opens: 0  Flush tables: 1  Open tables: 0  "
                 "Queries per second avg: %.3f",
                 (unsigned long long)st.uptime, st.threads,
                 (unsigned long long)st.questions,
                 st.uptime > 0 ? (double)st.questions / (double)st.uptime
                               : 0.0);
    ha_reply_raw(r, text, n > 0 && (size_t)n < sizeof(text) ? (size_t)n
                                                             : strlen(text));
}

/* struct ha_reply.budget: bytes the reply being built may still add,
 * counting every connection's unsent bytes (this one's, the reply so far
 * included); negative when they are over already. */
static long long
conn_output_left(void *arg)
{
    struct ha_conn *c = arg;

    return c->env->output_left(c->env->arg);
}

static void
on_command(struct ha_conn *c, const uint8_t *p, size_t len)
{
    struct ha_reply r;
    char name[HA_PROTO_MAX_DB + 1];
    char err[256];
    uint32_t v;

    ha_reply_init(&r, &c->out, c->seq, c->caps,
                  ha_session_status(&c->session));
    if (ha_task_busy(&c->task)) {
        /* Results stream: big ones hold a window, not their size. */
        r.drain = conn_drain;
        r.drain_arg = c;
    }
    if (c->env->output_left != NULL && c->env->max_output_total > 0) {
        /* One budget for every session's unsent replies: a client that
         * never reads holds at most what was left when it asked. */
        r.budget = conn_output_left;
        r.budget_arg = c;
        r.why_limit = "admin_variables.max_output_total, for all sessions' "
                      "unsent replies";
    }
    switch (p[0]) {
    case HA_COM_QUIT:
        ha_wire_set_state(c, HA_CONN_CLOSING);
        break;
    case HA_COM_PING:
        ha_reply_ok(&r, 0, 0, NULL);
        break;
    case HA_COM_INIT_DB:
        if (len - 1 >= sizeof(name)) {
            ha_reply_err(&r, 1049, "42000", "Unknown database (name longer "
                         "than %d bytes)", HA_PROTO_MAX_DB);
            break;
        }
        memcpy(name, p + 1, len - 1);
        name[len - 1] = '\0';
        ha_session_set_command(&c->session, "Init DB", name, len - 1);
        if (ha_session_use(&c->session, name) != 0)
            ha_reply_err(&r, 1049, "42000", "Unknown database '%s'", name);
        else
            ha_reply_ok(&r, 0, 0, NULL);
        break;
    case HA_COM_QUERY:
        ha_log_debug("connection %u: query: %.*s", c->id,
                     (int)(len - 1 > 200 ? 200 : len - 1),
                     (const char *)p + 1);
        ha_exec_query(&c->session, (const char *)p + 1, len - 1, &r);
        break;
    case HA_COM_FIELD_LIST:
        on_field_list(c, p, len, &r);
        break;
    case HA_COM_STATISTICS:
        on_statistics(c, &r);
        break;
    case HA_COM_PROCESS_KILL:
        if (ha_proto_decode_u32_arg(p, len, 4, &v, err, sizeof(err)) != 0) {
            ha_reply_err(&r, 1835, "HY000",
                         "Malformed communication packet: %s", err);
            break;
        }
        /* Killing itself: the server closes this connection once the
         * OK is written. */
        ha_session_set_command(&c->session, "Kill", NULL, 0);
        {
            int code = 0;

            if (ha_session_kill(&c->session, v, false, &code, err,
                                sizeof(err)) != 0)
                ha_reply_err(&r, (uint16_t)code, "HY000", "%s", err);
            else
                ha_reply_ok(&r, 0, 0, NULL);
        }
        break;
    case HA_COM_DEBUG:
        ha_reply_eof(&r);
        break;
    case HA_COM_SET_OPTION:
        if (ha_proto_decode_u32_arg(p, len, 2, &v, err, sizeof(err)) != 0 ||
            v > 1) {
            ha_reply_err(&r, 1047, "08S01", "Unknown command");
            break;
        }
        /* MYSQL_OPTION_MULTI_STATEMENTS_ON = 0, _OFF = 1. The reply is an
         * EOF, not an OK (MySQL protocol: COM_SET_OPTION). */
        ha_session_set_multi_statements(&c->session, v == 0);
        ha_reply_eof(&r);
        break;
    case HA_COM_RESET_CONNECTION:
        ha_stmt_table_clear(&c->stmts);
        ha_session_reset(&c->session);
        r.status = ha_session_status(&c->session);
        ha_reply_ok(&r, 0, 0, NULL);
        break;
    case HA_COM_CHANGE_USER:
        ha_handshake_change_user(c, p, len);
        break;
    case HA_COM_STMT_PREPARE:
        ha_log_debug("connection %u: prepare: %.*s", c->id,
                     (int)(len - 1 > 200 ? 200 : len - 1),
                     (const char *)p + 1);
        ha_session_set_command(&c->session, "Prepare", (const char *)p + 1,
                               len - 1);
        ha_stmt_prepare(&c->stmts, &c->session, (const char *)p + 1,
                        len - 1, &r);
        break;
    case HA_COM_STMT_EXECUTE:
        ha_stmt_execute(&c->stmts, &c->session, p, len, &r);
        break;
    case HA_COM_STMT_SEND_LONG_DATA:
        /* No reply, ever (MySQL protocol: COM_STMT_SEND_LONG_DATA); a
         * problem surfaces at execute. */
        if (ha_stmt_send_long_data(&c->stmts, p, len, err, sizeof(err)) != 0)
            ha_log_debug("connection %u: COM_STMT_SEND_LONG_DATA ignored: "
                         "%s",
                         c->id, err);
        break;
    case HA_COM_STMT_CLOSE:
        (void)ha_stmt_close(&c->stmts, p, len); /* no reply */
        break;
    case HA_COM_STMT_RESET:
        ha_stmt_reset(&c->stmts, p, len, &r);
        break;
    case HA_COM_STMT_FETCH:
        if (ha_proto_decode_u32_arg(p, len, 4, &v, err, sizeof(err)) != 0)
            v = 0;
        ha_reply_err(&r, 1421, "HY000",
                     "The statement (%u) has no open cursor: this server "
                     "does not support cursors",
                     v);
        break;
    default:
        ha_reply_err(&r, 1047, "08S01", "Unknown command 0x%02x", p[0]);
        break;
    }
    if (c->state == HA_CONN_COMMAND)
        ha_session_set_command(&c->session, "Sleep", NULL, 0);
    /* COM_CHANGE_USER wrote through ha_wire_send and moved c->seq. */
    if (p[0] != HA_COM_CHANGE_USER)
        c->seq = r.seq;
    ha_reply_free(&r);
}

/* ------------------------------------------------------------------ */
/* Commands as tasks                                                    */
/* ------------------------------------------------------------------ */

static void
command_fiber_fn(void *arg)
{
    struct ha_conn *c = arg;

    on_command(c, c->reader.payload.data, c->reader.payload.len);
}

/* struct ha_session.yield: the command had its slice; the loop serves
 * the others and goes on with it at its next pass. */
static void
conn_yield(void *arg)
{
    struct ha_conn *c = arg;

    ha_task_slice(&c->task);
}

static bool
stopping(const struct ha_conn *c)
{
    const _Atomic bool *flag = c->env->shared->shutdown;

    return flag != NULL && atomic_load(flag);
}

/* struct ha_reply.drain, for a command running as a task: the result
 * built so far goes out, and the command waits while more than
 * HA_REPLY_STREAM_BYTES of it wait unsent; conn_write_cb (or, under TLS,
 * raw_drained_cb) wakes it. Returns -1 when the connection failed (it
 * is freed once the command ends), or the statement was killed, passed
 * its max_execution_time (the task's deadline: a wait would return at
 * once) or the server stops meanwhile. */
static int
conn_drain(void *arg)
{
    struct ha_conn *c = arg;

    if (queue_out(c) != 0) {
        c->free_pending = true;
        return -1;
    }
    if (c->no_drain)
        return 0; /* cannot pause: built whole, as without a task */
    while (unsent_bytes(c) > HA_REPLY_STREAM_BYTES && !c->free_pending &&
           !c->session.killed && !stopping(c) &&
           ha_task_stopped(&c->task) == HA_TASK_GO) {
        c->waiting_drain = c->session.sending = true;
        ha_task_wait(&c->task);
        c->waiting_drain = c->session.sending = false;
        if (ha_task_stopped(&c->task) == HA_TASK_KILLED)
            c->session.killed = true;
    }
    return c->free_pending || c->session.killed || stopping(c) ||
                   ha_task_stopped(&c->task) != HA_TASK_GO
               ? -1
               : 0;
}

/* Whether the output a paused command waits for has drained enough. */
static bool
drained(struct ha_conn *c)
{
    return c->waiting_drain && unsent_bytes(c) <= HA_REPLY_STREAM_BYTES;
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
    if (conn_flush(c) != 0)
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
        on_command(c, p, len);
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

void
ha_conn_kill_query(struct ha_conn *c)
{
    if (!ha_task_busy(&c->task))
        return;
    c->session.killed = true;
    /* A command waiting for its client or for the worker would not
     * notice before they answer: it is woken to end. */
    ha_task_kill(&c->task);
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
        if (c->env->max_output > 0 && unsent_bytes(c) > c->env->max_output) {
            if (!c->read_paused)
                ha_log_debug("connection %u (%s): %zu reply bytes unsent; "
                             "reading paused",
                             c->id, c->peer.name, unsent_bytes(c));
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
        used = ha_proto_reader_feed(&c->reader, v.iov_base, v.iov_len,
                                    &ready, err, sizeof(err));
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
            if (conn_flush(c) != 0)
                return;
            if (c->bev != bev)
                return; /* TLS took over; the filter reads from now on */
        }
    }
    conn_flush(c);
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct ha_conn *c = arg;

    if (c->state == HA_CONN_CLOSING && !output_pending(c)) {
        ha_conn_free(c);
        return;
    }
    if (ha_task_busy(&c->task) && drained(c)) {
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
        conn_flush(c);
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
    c->client_ops = &conn_client_ops;
    if (addr->sa_family != AF_UNIX)
        /* Replies are written whole; don't let Nagle hold the last one. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->bev = bufferevent_socket_new(env->base, fd,
                                    BEV_OPT_CLOSE_ON_FREE);
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
    if (conn_flush(c) != 0)
        return NULL;
    return c;
}
