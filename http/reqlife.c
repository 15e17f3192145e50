/* SPDX-License-Identifier: MIT
 *
 * An HTTP request's life on its connection (see http_int.h): a client of
 * the engine's registry (a PROCESSLIST row, KILL, the reply bytes it
 * holds), its route run on its task, and its end: the task's, then the
 * reply's once evhttp wrote it whole or the connection went. A reply cut
 * short of its Content-Length is logged within a budget.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/lograte.h"
#include "core/util.h"
#include "http/http_int.h"
#include "http/routes.h"

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
    r->state = hr->sending || hr->streaming ? "Sending to client" : "executing";
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
            ha_http_conn_shutdown(hr->conn);
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

    return c != NULL && ha_http_conn_alive(c)
               ? evbuffer_get_length(bufferevent_get_output(c->bev))
               : 0;
}

const struct ha_client_ops ha_http_reqlife_client_ops = {
    .row = req_row,
    .kill = req_kill,
    .held = req_held,
};

void
ha_http_reqlife_free(struct ha_http_req *hr)
{
    ha_task_release(&hr->task);
    free(hr->path);
    free(hr->query);
    ha_buf_free(&hr->body);
    free(hr);
}

/* The request is over: its reply written, or its connection gone. */
void
ha_http_reqlife_finish(struct ha_http_req *hr)
{
    struct http_conn *c = hr->conn;

    ha_clients_remove(ha_engine_clients(hr->engine), &hr->client);
    if (c != NULL) {
        c->cur = NULL;
        if (!ha_http_conn_alive(c))
            ha_http_conn_arm(
                c, 0); /* evhttp freed it: released at the next turn */
        else if (c->closing)
            ; /* shut down already: evhttp frees it */
        else if (!hr->answered || hr->stream_broken)
            ha_http_conn_shutdown(c); /* nothing, or not all, could be sent */
        else
            /* After a reply with "Connection: close" (KILL), evhttp
             * closes it itself once the reply is written. */
            ha_http_conn_set_phase(c, PHASE_IDLE);
    }
    ha_http_reqlife_free(hr);
}

/* evhttp wrote a reply whole (its on_complete callback; arg: the
 * connection). */
void
ha_http_reqlife_sent(struct evhttp_request *req, void *arg)
{
    struct http_conn *c = arg;
    struct ha_http_req *hr = c->cur;

    (void)req;
    if (hr == NULL)
        return; /* a refusal's, answered without a task */
    hr->sent = true;
    if (hr->sending)
        ha_http_reqlife_finish(hr);
}

/* A reply that ended short of its Content-Length (its request killed,
 * past max_execution_time, the server stopping, out of memory): the
 * client sees the connection close early and can tell, and the log says
 * so, within a budget (a crowd of killed scrapes costs a few lines). */
void
ha_http_reqlife_cut_short(struct ha_http_req *hr)
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
void
ha_http_reqlife_done(void *arg)
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
        ha_http_conn_alive(c) && !c->closing) {
        hr->sending = true;
        return; /* ha_http_reqlife_sent or evcon_closed finishes it */
    }
    ha_http_reqlife_finish(hr);
}

void
ha_http_reqlife_run(void *arg)
{
    struct ha_http_req *hr = arg;

    ha_http_route(hr);
}

const char *
ha_http_reqlife_method(enum evhttp_cmd_type cmd)
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
