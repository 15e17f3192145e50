/* SPDX-License-Identifier: MIT
 *
 * Replies and request parameters for route handlers (see request.h).
 */
#include "http/request.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/lograte.h"
#include "core/util.h"
#include "heap/heap.h"
#include "http/parse.h"
#include "prof/dumpfile.h"

/* Bytes copied into one evbuffer chain of a streamed body: a 64 KiB
 * chain less evbuffer's header. */
#define STREAM_PIECE (65536u - 256u)

int
ha_http_req_param(const struct ha_http_req *hr, const char *name,
                  char **out, char *err, size_t errlen)
{
    return ha_http_query_param(hr->query, name, out, err, errlen);
}

const char *
ha_http_req_header(const struct ha_http_req *hr, const char *name)
{
    if (hr->req == NULL)
        return NULL;
    return evhttp_find_header(evhttp_request_get_input_headers(hr->req),
                              name);
}

void
ha_http_req_add_header(struct ha_http_req *hr, const char *name,
                       const char *value)
{
    if (hr->req != NULL)
        evhttp_add_header(evhttp_request_get_output_headers(hr->req), name,
                          value);
}

bool
ha_http_req_gone(const struct ha_http_req *hr)
{
    return hr->req == NULL;
}

/* Sends the reply and lets go of the request: evhttp frees it once
 * written. */
static void
reply_send(struct ha_http_req *hr, int code, const char *reason,
     struct evbuffer *b)
{
    if (hr->close_after)
        ha_http_req_add_header(hr, "Connection", "close");
    evhttp_send_reply(hr->req, code, reason, b);
    hr->req = NULL;
    hr->answered = true;
}

/* An error text as one line: every control byte but a final newline
 * written as \xNN (http/parse.h), so that a parameter quoted in it
 * ("?dump=x%0d%0aX-Injected:%201") carries no CR/LF into what shows
 * it. Returns a malloc'd string, or NULL. */
static char *
one_line(const char *text)
{
    size_t len = strlen(text), cap = 4 * len + 2;
    bool nl = len > 0 && text[len - 1] == '\n';
    char *copy = strndup(text, nl ? len - 1 : len), *out = malloc(cap);

    if (copy == NULL || out == NULL) {
        free(copy);
        free(out);
        return NULL;
    }
    ha_http_printable(copy, out, cap - 1);
    free(copy);
    if (nl)
        strcat(out, "\n");
    return out;
}

/* A 403 to a password-less peer of this process's own user on the agent
 * socket (engine/login.h): said, within a budget, as the socket's own
 * refusals are (a neighbour probing a served process is worth a line). */
static void
peer_refused(const struct ha_http_req *hr, const char *why)
{
    static struct ha_lograte budget; /* loop thread only */
    uint64_t held = 0;
    char path[128];
    size_t n = strcspn(why, "\n");

    if (!ha_lograte_take(&budget, ha_clock_ms(), &held))
        return;
    if (held > 0)
        ha_log_warn("http: %llu more refusals to same-user peers on the "
                    "agent socket were not logged",
                    (unsigned long long)held);
    ha_log_warn("http: a same-user peer on the agent socket was refused "
                "%s: %.*s",
                ha_http_printable(hr->path, path, sizeof(path)),
                (int)(n > 200 ? 200 : n), why);
}

void
ha_http_req_text(struct ha_http_req *hr, int code, const char *reason,
                 const char *text)
{
    struct evbuffer *b;
    char *line = NULL;

    if (hr->req == NULL)
        return;
    if (code == 403 && hr->user != NULL &&
        strcmp(hr->user->name, "peer") == 0)
        peer_refused(hr, text);
    if (code >= 400 && (line = one_line(text)) != NULL)
        text = line;
    b = evbuffer_new();
    ha_http_req_add_header(hr, "Content-Type", "text/plain; charset=utf-8");
    if (b != NULL)
        evbuffer_add(b, text, strlen(text));
    reply_send(hr, code, reason, b);
    if (b != NULL)
        evbuffer_free(b);
    free(line);
}

/* The reply bytes hr's connection holds unsent, or 0 once it is gone. */
static size_t
unsent(const struct ha_http_req *hr)
{
    struct evhttp_connection *evcon =
        hr->req != NULL ? evhttp_request_get_connection(hr->req) : NULL;
    struct bufferevent *bev =
        evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;

    return bev != NULL ? evbuffer_get_length(bufferevent_get_output(bev))
                       : 0;
}

/* Whether hr's task can pause here to wait for its client. */
static bool
can_wait(struct ha_http_req *hr)
{
    return hr->task.fiber != NULL && ha_task_current() == &hr->task;
}

int
ha_http_req_stream_start(struct ha_http_req *hr, const char *content_type,
                         unsigned long long len)
{
    char n[32];

    if (hr->req == NULL)
        return -1;
    snprintf(n, sizeof(n), "%llu", len);
    ha_http_req_add_header(hr, "Content-Type", content_type);
    ha_http_req_add_header(hr, "Content-Length", n);
    if (hr->close_after)
        ha_http_req_add_header(hr, "Connection", "close");
    evhttp_send_reply_start(hr->req, 200, "OK");
    hr->answered = true;
    hr->streaming = true;
    hr->stream_left = hr->stream_len = len;
    /* The reply is built: what is left is the client's to take, bounded
     * by net_write_timeout (conn.c), not max_execution_time. */
    ha_task_set_deadline(&hr->task, 0);
    if (hr->method == EVHTTP_REQ_HEAD) {
        hr->stream_left = 0;
        return 1;
    }
    return 0;
}

static void
free_piece(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)data);
}

/* Queues b (len bytes) as the stream's next piece and waits, the task
 * paused, while more than the window is unsent. Frees b. */
static int
stream_queue(struct ha_http_req *hr, struct evbuffer *b, size_t len)
{
    evhttp_send_reply_chunk(hr->req, b);
    evbuffer_free(b);
    hr->stream_left -= len;
    /* The per-client budget: a window unsent, then wait for the client
     * (conn.c wakes the task as its output drains). */
    while (hr->req != NULL && unsent(hr) > HA_CLIENTS_STREAM_BYTES &&
           can_wait(hr) && ha_task_stopped(&hr->task) == HA_TASK_GO) {
        hr->stream_waiting = true;
        ha_task_wait(&hr->task);
        hr->stream_waiting = false;
    }
    return hr->req != NULL && ha_task_stopped(&hr->task) == HA_TASK_GO
               ? 0
               : -1;
}

/* Whether len more bytes may go out on hr's stream now. */
static bool
stream_open(struct ha_http_req *hr, size_t len)
{
    if (!hr->streaming || hr->req == NULL ||
        ha_task_stopped(&hr->task) != HA_TASK_GO)
        return false;
    if (len > hr->stream_left) {
        hr->stream_broken = true;
        return false;
    }
    return true;
}

int
ha_http_req_stream_write(struct ha_http_req *hr, const void *data,
                         size_t len)
{
    struct evbuffer *b;

    if (!stream_open(hr, len))
        return -1;
    if (len == 0)
        return 0;
    /* Copied in pieces that fill evbuffer's power-of-two chains, so the
     * window costs its size in memory, not twice it. */
    if ((b = evbuffer_new()) == NULL)
        goto fail;
    for (size_t off = 0; off < len;) {
        size_t n = len - off < STREAM_PIECE ? len - off : STREAM_PIECE;

        if (evbuffer_add(b, (const char *)data + off, n) != 0)
            goto fail;
        off += n;
    }
    return stream_queue(hr, b, len);
fail:
    if (b != NULL)
        evbuffer_free(b);
    hr->stream_broken = true;
    return -1;
}

int
ha_http_req_stream_give(struct ha_http_req *hr, void *data, size_t len)
{
    struct evbuffer *b;

    if (!stream_open(hr, len)) {
        free(data);
        return -1;
    }
    if (len == 0) {
        free(data);
        return 0;
    }
    if ((b = evbuffer_new()) == NULL ||
        evbuffer_add_reference(b, data, len, free_piece, NULL) != 0) {
        if (b != NULL)
            evbuffer_free(b);
        free(data);
        hr->stream_broken = true;
        return -1;
    }
    return stream_queue(hr, b, len);
}

void
ha_http_req_stream_end(struct ha_http_req *hr)
{
    struct evhttp_request *req = hr->req;

    if (!hr->streaming)
        return;
    hr->streaming = false;
    if (req == NULL)
        return;
    if (hr->stream_left != 0) {
        /* Short of its Content-Length: never end it as if whole. The
         * request stays evhttp's until the connection closes. */
        if (hr->cut_hook != NULL)
            hr->cut_hook(hr);
        hr->stream_broken = true;
        hr->req = NULL;
        return;
    }
    hr->req = NULL;
    evhttp_send_reply_end(req); /* may call the reply's completion now */
}

void
ha_http_req_body(struct ha_http_req *hr, const char *content_type,
                 const void *body, size_t len)
{
    const struct ha_config *cfg = ha_engine_config(hr->engine);
    struct evbuffer *b;
    long long left;

    if (hr->req == NULL)
        return;
    if (len > HA_CLIENTS_STREAM_BYTES && can_wait(hr)) {
        const char *p = body;

        if (ha_http_req_stream_start(hr, content_type, len) == 0)
            for (size_t off = 0; off < len;) {
                size_t n = len - off < HA_CLIENTS_STREAM_BYTES
                               ? len - off
                               : HA_CLIENTS_STREAM_BYTES;

                if (ha_http_req_stream_write(hr, p + off, n) != 0)
                    break;
                off += n;
            }
        ha_http_req_stream_end(hr);
        return;
    }
    left = ha_clients_output_left(ha_engine_clients(hr->engine),
                                  cfg->max_output_total);
    if (left < 0 || (unsigned long long)len > (unsigned long long)left) {
        char msg[256];

        snprintf(msg, sizeof(msg),
                 "the reply (%zu bytes) would pass "
                 "admin_variables.max_output_total (%lld bytes, for all "
                 "clients' unsent replies); try again later\n",
                 len, cfg->max_output_total);
        ha_http_req_text(hr, 503, "Service Unavailable", msg);
        return;
    }
    b = evbuffer_new();
    if (b == NULL || evbuffer_add(b, body, len) != 0) {
        if (b != NULL)
            evbuffer_free(b);
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    ha_http_req_add_header(hr, "Content-Type", content_type);
    reply_send(hr, 200, "OK", b);
    evbuffer_free(b);
}

bool
ha_http_req_dump_refused(struct ha_http_req *hr, const char *name)
{
    char why[512], msg[600];

    if (name == NULL || ha_dumpfile_name_ok(name, HA_DUMPFILE_DUMP, why,
                                            sizeof(why)))
        return false;
    snprintf(msg, sizeof(msg), "%s\n", why);
    /* The profile role reads dumps and nothing else: a name that is not
     * a dump's is a file it may not read. */
    if (hr->user != NULL && hr->user->role == HA_ROLE_PROFILE)
        ha_http_req_text(hr, 403, "Forbidden", msg);
    else
        ha_http_req_text(hr, 400, "Bad Request", msg);
    return true;
}

void
ha_http_req_heap_failed(struct ha_http_req *hr, int rc, const char *err)
{
    char msg[1100];

    if (rc == HA_HEAP_STOPPED) {
        ha_http_req_stopped(hr);
        return;
    }
    snprintf(msg, sizeof(msg), "%s\n", err);
    if (rc == HA_HEAP_BUSY) {
        ha_http_req_add_header(hr, "Retry-After", "1");
        ha_http_req_text(hr, 503, "Service Unavailable", msg);
        return;
    }
    if (rc == HA_HEAP_CONFLICT) {
        ha_http_req_text(hr, 409, "Conflict", msg);
        return;
    }
    ha_http_req_text(hr, 404, "Not Found", msg);
}

void
ha_http_req_stopped(struct ha_http_req *hr)
{
    char msg[256];

    switch (ha_task_stopped(&hr->task)) {
    case HA_TASK_SHUTDOWN:
        ha_http_req_text(hr, 503, "Service Unavailable",
                         "the server is shutting down\n");
        break;
    case HA_TASK_KILLED:
        snprintf(msg, sizeof(msg), "request %u was killed (KILL)\n",
                 hr->client.id);
        ha_http_req_text(hr, 503, "Service Unavailable", msg);
        break;
    default:
        snprintf(msg, sizeof(msg),
                 "the request took longer than max_execution_time (%d ms)\n",
                 ha_engine_config(hr->engine)->max_execution_time);
        ha_http_req_text(hr, 503, "Service Unavailable", msg);
        break;
    }
}
