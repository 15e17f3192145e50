/* SPDX-License-Identifier: MIT
 *
 * Shared HTTP replies (see reply.h).
 */
#include "http/reply.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <stdlib.h>
#include <string.h>

void
ha_http_reply_text(struct evhttp_request *req, int code, const char *reason,
                   const char *text)
{
    struct evbuffer *b = evbuffer_new();

    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; charset=utf-8");
    if (b != NULL)
        evbuffer_add(b, text, strlen(text));
    evhttp_send_reply(req, code, reason, b);
    if (b != NULL)
        evbuffer_free(b);
}

void
ha_http_reply_body(struct evhttp_request *req, const char *content_type,
                   const void *body, size_t len)
{
    struct evbuffer *b = evbuffer_new();

    if (b == NULL || evbuffer_add(b, body, len) != 0) {
        if (b != NULL)
            evbuffer_free(b);
        ha_http_reply_text(req, 500, "Internal Server Error",
                           "out of memory\n");
        return;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      content_type);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

char *
ha_http_query(struct evhttp_request *req, const char *name)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *q = uri != NULL ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq params;
    const char *v;
    char *ret = NULL;

    if (q == NULL)
        return NULL;
    TAILQ_INIT(&params);
    if (evhttp_parse_query_str(q, &params) == 0 &&
        (v = evhttp_find_header(&params, name)) != NULL)
        ret = strdup(v);
    evhttp_clear_headers(&params);
    return ret;
}

const char *
ha_http_path(struct evhttp_request *req)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);

    return uri != NULL ? evhttp_uri_get_path(uri) : NULL;
}
