/* SPDX-License-Identifier: MIT
 *
 * Replies and request helpers every HTTP route shares (http.c and the
 * route files above it).
 */
#ifndef HA_HTTP_REPLY_H
#define HA_HTTP_REPLY_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

/* A text/plain reply (charset utf-8). */
void ha_http_reply_text(struct evhttp_request *req, int code,
                        const char *reason, const char *text);

/* A 200 reply with body[0..len) and content_type. */
void ha_http_reply_body(struct evhttp_request *req, const char *content_type,
                        const void *body, size_t len);

/* The value of query parameter name (URL-decoded, malloc'd), or NULL. */
char *ha_http_query(struct evhttp_request *req, const char *name);

/* The request's path, or NULL. */
const char *ha_http_path(struct evhttp_request *req);

#endif /* HA_HTTP_REPLY_H */
