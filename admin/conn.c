/* SPDX-License-Identifier: MIT
 *
 * Client connections (see conn.h), their ground floor: replies out and
 * a connection's end. Replies are built in c->out and queued on the
 * bufferevent after each packet; a connection that must close (QUIT,
 * failed login, malformed packet) is freed only when its last reply has
 * been written. A streamed result waits here for its client to take
 * rows (ha_conn_drain). The rest: conn_state.c (the callbacks, commands
 * as tasks, TLS, ha_conn_new), conn_command.c (COM_*), conn_client.c
 * (the engine's registry, KILL); the connection phase is handshake.c's.
 */
#include "admin/conn.h"
#include "admin/conn_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/task.h"
#include "core/util.h"

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
        if (ha_conn_stopping(c))
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
size_t
ha_conn_unsent_bytes(struct ha_conn *c)
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
    return c->out.len + ha_conn_unsent_bytes(c);
}

bool
ha_conn_output_pending(struct ha_conn *c)
{
    return ha_conn_unsent_bytes(c) > 0;
}

/* Moves c->out to the socket, or what it does not take to the
 * bufferevent. Returns -1 (logged) when the connection failed and must
 * be freed; c is never freed here. */
int
ha_conn_queue_out(struct ha_conn *c)
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
int
ha_conn_flush(struct ha_conn *c)
{
    if (ha_conn_queue_out(c) != 0) {
        ha_conn_free(c);
        return -1;
    }
    if (c->state == HA_CONN_CLOSING) {
        bufferevent_disable(c->bev, EV_READ);
        if (!ha_conn_output_pending(c)) {
            ha_conn_free(c);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Streaming results and stopping                                     */
/* ------------------------------------------------------------------ */

bool
ha_conn_stopping(const struct ha_conn *c)
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
int
ha_conn_drain(void *arg)
{
    struct ha_conn *c = arg;

    if (ha_conn_queue_out(c) != 0) {
        c->free_pending = true;
        return -1;
    }
    if (c->no_drain)
        return 0; /* cannot pause: built whole, as without a task */
    while (ha_conn_unsent_bytes(c) > HA_REPLY_STREAM_BYTES &&
           !c->free_pending &&
           !c->session.killed && !ha_conn_stopping(c) &&
           ha_task_stopped(&c->task) == HA_TASK_GO) {
        c->waiting_drain = c->session.sending = true;
        ha_task_wait(&c->task);
        c->waiting_drain = c->session.sending = false;
        if (ha_task_stopped(&c->task) == HA_TASK_KILLED)
            c->session.killed = true;
    }
    return c->free_pending || c->session.killed || ha_conn_stopping(c) ||
                   ha_task_stopped(&c->task) != HA_TASK_GO
               ? -1
               : 0;
}

/* Whether the output a paused command waits for has drained enough. */
bool
ha_conn_drained(struct ha_conn *c)
{
    return c->waiting_drain && ha_conn_unsent_bytes(c) <= HA_REPLY_STREAM_BYTES;
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
