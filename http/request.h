/* SPDX-License-Identifier: MIT
 *
 * One HTTP request being answered: what every route handler gets. A
 * handler runs as a task of the engine's executor (core/task.h), like a
 * MySQL command: it may hand long work to the worker thread
 * (ha_task_offload) and wait, is bounded by max_execution_time, shows in
 * SHOW PROCESSLIST as Command "HTTP" with the request line as Info, and
 * stops on KILL. The client may go away meanwhile: every reply function
 * here is then a no-op, and ha_http_req_gone() says so.
 *
 * Replies keep to the engine's output budget (engine/clients.h), as a
 * MySQL result set does: a body over HA_CLIENTS_STREAM_BYTES streams
 * (ha_http_req_stream_*: the task hands on a window and waits until the
 * client has taken it, so a client that stops reading holds a window,
 * never the reply); a smaller one built whole gets what
 * max_output_total leaves, or 503. The request stays in the engine's
 * registry (PROCESSLIST state "Sending to client") until its last byte
 * is written; a client that takes nothing for net_write_timeout is cut
 * off (conn.c).
 *
 * Loop thread only (handlers run on the loop's thread, on a fiber).
 */
#ifndef HA_HTTP_REQUEST_H
#define HA_HTTP_REQUEST_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "core/buf.h"
#include "core/task.h"
#include "engine/clients.h"
#include "engine/engine.h"

#define HA_HTTP_INFO_MAX 512 /* bytes of the request line PROCESSLIST keeps */

struct ha_http_req {
    /* Identity */
    struct ha_engine *engine;
    const struct ha_user *user;     /* authenticated */
    bool admin;                     /* may take live profiles */
    char peer[80];                  /* "address:port" */
    char host[64];                  /* address */

    /* The request (copied: evhttp frees its own when the client goes) */
    struct evhttp_request *req;     /* NULL once gone or answered */
    enum evhttp_cmd_type method;
    char *path;                     /* decoded path, malloc'd */
    char *query;                    /* raw query string or NULL */
    struct ha_buf body;             /* POST body */
    char info[HA_HTTP_INFO_MAX];    /* "GET /debug/pprof/heap?dump=x" */

    /* Running */
    struct ha_task task;
    struct ha_client client;        /* in the engine's registry */
    time_t since;
    bool answered;                  /* a reply went out (or was meant to) */
    bool close_after;               /* KILL: close the connection too */

    /* Sending (the engine's output budget, engine/clients.h) */
    bool streaming;                 /* a reply started: its body goes out
                                       a window at a time */
    bool stream_waiting;            /* ... the task waits for the client
                                       to take some (conn.c wakes it) */
    bool stream_broken;             /* ... it ended short of its
                                       Content-Length: the connection
                                       must close */
    unsigned long long stream_left; /* ... body bytes still announced */
    unsigned long long stream_len; /* ... its Content-Length */
    bool sending;                   /* the task ended, its reply is still
                                       being written: listed until then */
    bool sent;                      /* evhttp wrote the whole reply */
    void (*gone_hook)(struct ha_http_req *hr); /* the front-end's */
    void (*cut_hook)(struct ha_http_req *hr); /* the front-end's: a reply
                                       ends short of its Content-Length */
    void *conn;                     /* the front-end's connection */
};

/* The value of query parameter name: returns 1 with *out malloc'd (URL
 * decoded), 0 when absent (*out NULL), or -1 when it is malformed: bad
 * escapes, or a NUL inside ("dump=x%00.txt" is not cut to "x") — with
 * err saying so. */
int ha_http_req_param(const struct ha_http_req *hr, const char *name,
                      char **out, char *err, size_t errlen);

/* A request header's value, or NULL (also when the client is gone). */
const char *ha_http_req_header(const struct ha_http_req *hr,
                               const char *name);

/* Adds a header to the reply. */
void ha_http_req_add_header(struct ha_http_req *hr, const char *name,
                            const char *value);

/* Replies text/plain (charset utf-8) with code and reason. */
void ha_http_req_text(struct ha_http_req *hr, int code, const char *reason,
                      const char *text);

/* Replies 200 with body[0..len) as content_type. Over
 * HA_CLIENTS_STREAM_BYTES (and on the request's task) it streams, a
 * window at a time, the task waiting for the client; else it is queued
 * whole within the engine's output budget (max_output_total, shared with
 * every MySQL session's unsent replies): over it, 503 saying so. body
 * is copied; the caller keeps it. */
void ha_http_req_body(struct ha_http_req *hr, const char *content_type,
                      const void *body, size_t len);

/* Starts a streamed 200 reply of len body bytes (Content-Length) as
 * content_type. Sending is not executing: max_execution_time no longer
 * applies, net_write_timeout does. Returns 0 when the body is to follow,
 * 1 when none is wanted (HEAD: call ha_http_req_stream_end at once),
 * -1 when the client is gone. */
int ha_http_req_stream_start(struct ha_http_req *hr, const char *content_type,
                             unsigned long long len);

/* Queues data[0..len) of a streamed body (copied) and waits, the task
 * paused, while more than HA_CLIENTS_STREAM_BYTES of the reply are
 * unsent. Returns 0, or -1 when the caller must stop: the client went
 * away or was cut off, the task was stopped (KILL, shutdown), or len is
 * more than was announced. */
int ha_http_req_stream_write(struct ha_http_req *hr, const void *data,
                             size_t len);

/* The same for data (malloc'd, len bytes) handed over: queued as it is,
 * freed once sent (or at once on failure). */
int ha_http_req_stream_give(struct ha_http_req *hr, void *data, size_t len);

/* Ends a streamed reply. One that got fewer bytes than it announced
 * closes the connection (the client sees a short body, never a whole
 * one). */
void ha_http_req_stream_end(struct ha_http_req *hr);

/* Whether name (a dump= or base= parameter; NULL passes) is one the
 * datadir's file rule refuses (prof/dumpfile.h): the client's mistake,
 * answered here with 400 saying what is allowed, and never looked up. */
bool ha_http_req_dump_refused(struct ha_http_req *hr, const char *name);

/* Replies for a task that stopped (ha_task_stopped): 503 naming
 * max_execution_time, KILL or shutdown. */
void ha_http_req_stopped(struct ha_http_req *hr);

/* Replies for a heap call that failed (heap/heap.h): HA_HEAP_STOPPED as
 * ha_http_req_stopped; HA_HEAP_BUSY (a live profile while a heap dump is
 * being written) 503 with Retry-After: 1 (RFC 9110 15.6.4: the service
 * is there, not now); HA_HEAP_CONFLICT (a delta the process cannot
 * give: no prof_accum, a reset in its window) 409 with err, what to
 * change (RFC 9110 15.5.10: the target's state); anything else 404 with
 * err, the name that was not found or could not be read. */
void ha_http_req_heap_failed(struct ha_http_req *hr, int rc,
                             const char *err);

/* True when the client went away (or the reply was sent): stop working. */
bool ha_http_req_gone(const struct ha_http_req *hr);

#endif /* HA_HTTP_REQUEST_H */
