/* SPDX-License-Identifier: MIT
 *
 * Replies and request parameters for route handlers (see request.h).
 */
#include "http/request.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "http/parse.h"
#include "prof/dumpfile.h"

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

void
ha_http_req_text(struct ha_http_req *hr, int code, const char *reason,
                 const char *text)
{
    struct evbuffer *b;

    if (hr->req == NULL)
        return;
    b = evbuffer_new();
    ha_http_req_add_header(hr, "Content-Type", "text/plain; charset=utf-8");
    if (b != NULL)
        evbuffer_add(b, text, strlen(text));
    reply_send(hr, code, reason, b);
    if (b != NULL)
        evbuffer_free(b);
}

void
ha_http_req_body(struct ha_http_req *hr, const char *content_type,
                 const void *body, size_t len)
{
    const struct ha_config *cfg = ha_engine_config(hr->engine);
    struct evbuffer *b;

    if (hr->req == NULL)
        return;
    if (cfg->max_output_total > 0 &&
        len + ha_clients_held(ha_engine_clients(hr->engine)) >
            (unsigned long long)cfg->max_output_total) {
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
    ha_http_req_text(hr, 400, "Bad Request", msg);
    return true;
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
