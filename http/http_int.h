/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end's insides, shared by its files and private to them:
 * http.c (evhttp set up, listeners, the callbacks evhttp calls), conn.c
 * (connections, their phases and deadlines), admit.c (the bounds on
 * connections), auth.c (who may ask: the method, the login, refusals)
 * and reqlife.c (a request as the engine's client and task, until its
 * reply is written). What callers use is http.h. Loop thread only.
 */
#ifndef HA_HTTP_INT_H
#define HA_HTTP_INT_H

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/acceptguard.h"
#include "core/listen.h"
#include "core/lograte.h"
#include "engine/clients.h"
#include "engine/engine.h"
#include "engine/peer.h"
#include "http/request.h"

struct http_listener {
    struct evhttp_bound_socket *bound;
    evutil_socket_t fd;
    dev_t dev; /* fstat identity, for ha_http_abandon */
    ino_t ino;
    int port;
    char desc[300];
    char path[108];             /* the agent socket (unix), "" for TCP */
    struct ha_listen_file file; /* ... the file it was bound at */
};

/* Where a connection is in its life; what its deadline is. */
enum conn_phase {
    PHASE_NEW,     /* accepted, no byte yet: header deadline */
    PHASE_READING, /* a request is arriving: header deadline */
    PHASE_BUSY,    /* a request is being answered: no deadline */
    PHASE_IDLE     /* between requests: http_timeout */
};

struct http_conn {
    struct ha_http *h;
    struct bufferevent *bev;         /* evhttp's, with our reference; NULL once
                                        evhttp freed it (gone) */
    bool gone;                       /* evhttp freed the connection */
    struct evhttp_connection *evcon; /* once its first request came */
    struct event *deadline;
    struct event *admit; /* the next loop turn: socket known */
    enum conn_phase phase;
    bool admitted;                 /* counted against the bounds */
    bool closing;                  /* shut down, evhttp frees it */
    bool authed;                   /* has delivered an authenticated request */
    int64_t blocked_ms;            /* the throttle's wait at admission, > 0:
                                      refused with 429 */
    int64_t progress_ms;           /* ha_clock_ms() when the client last took
                                      reply bytes, or output started */
    struct ha_peer peer;           /* the kernel's, once admitted */
    bool agent_socket;             /* came through the agent socket */
    struct ha_http_req *cur;       /* the request being answered, or NULL */
    struct http_conn *prev, *next; /* newest first */
};

struct ha_http {
    struct ha_engine *engine;
    struct event_base *base;
    const struct ha_config *cfg;
    struct evhttp *eh;
    struct http_listener *ls;
    size_t n_ls;
    struct http_conn *conns;
    size_t n_conns;                /* allocated (some may be freed by evhttp
                                      and not yet swept) */
    SSL_CTX *tls;                  /* HTTPS (http_tls), or NULL */
    uint64_t evicted;              /* connections closed to admit others */
    uint64_t refused;              /* closed: everything busy */
    struct ha_lograte refused_log; /* refused requests' lines */
    uint64_t refused_unsaid;       /* ... not logged one by one */
    struct event *refused_say;     /* says how many, once the window ends */
    char agent_path[108];          /* the agent socket's file, or "" */
    struct ha_accept_guard guard;  /* accept() failures, once per burst */
    struct ha_lograte cut_log;     /* clients cut off for not reading */
    struct ha_lograte short_log;   /* replies cut short of their length */
};

/* ------------------------------------------------------------------
 * Connections (conn.c)
 * ------------------------------------------------------------------ */

/* True while evhttp still uses c's bufferevent: bufferevent_free()
 * clears the callbacks evhttp set. */
bool ha_http_conn_alive(const struct http_conn *c);

/* Unlinks c from h's list and frees it, dropping our reference to its
 * bufferevent (which may close the socket). */
void ha_http_conn_release(struct ha_http *h, struct http_conn *c);

/* Releases the connections evhttp has freed (not one with a request
 * still running: its task holds it until it ends). */
void ha_http_conn_sweep(struct ha_http *h);

/* Arms c's deadline seconds from now (0: at the next loop turn). */
void ha_http_conn_arm(struct http_conn *c, int seconds);

/* Moves c to phase, arming the deadline that phase has. */
void ha_http_conn_set_phase(struct http_conn *c, enum conn_phase phase);

/* Closes c: evhttp reads the end of the stream and frees it. */
void ha_http_conn_shutdown(struct http_conn *c);

/* Writes a whole plain-text reply with "Connection: close" straight to
 * c's socket, one non-blocking try (plain HTTP only). header: extra
 * header lines, each ending in CRLF, or "". */
void ha_http_conn_send_raw(struct http_conn *c, const char *status,
                           const char *header, const char *text);

/* The reply bytes c holds unsent. */
size_t ha_http_conn_unsent(const struct http_conn *c);

/* c's deadline (arg: c), and its input's and output's callbacks (arg:
 * c), which new connections are made with (http.c). */
void ha_http_conn_deadline_cb(evutil_socket_t fd, short what, void *arg);
void ha_http_conn_input_cb(struct evbuffer *buf,
                           const struct evbuffer_cb_info *info, void *arg);
void ha_http_conn_output_cb(struct evbuffer *buf,
                            const struct evbuffer_cb_info *info, void *arg);

/* ------------------------------------------------------------------
 * Bounds (admit.c)
 * ------------------------------------------------------------------ */

/* Applies the bounds to a new connection once its socket (and so its
 * address) is known: at its first loop turn, or at its first request if
 * that comes sooner (request: then a refused peer's 429 is that
 * request's reply, not written to the socket here). Returns false when
 * c was refused. */
bool ha_http_admit(struct http_conn *c, bool request);

/* ------------------------------------------------------------------
 * A request's life (reqlife.c)
 * ------------------------------------------------------------------ */

/* A request as a client of the engine's registry: its PROCESSLIST row,
 * KILL, the reply bytes it holds. */
extern const struct ha_client_ops ha_http_reqlife_client_ops;

/* Frees hr (its task released). */
void ha_http_reqlife_free(struct ha_http_req *hr);

/* The request is over: its reply written, or its connection gone. */
void ha_http_reqlife_finish(struct ha_http_req *hr);

/* evhttp wrote a reply whole (its on_complete callback; arg: the
 * connection). */
void ha_http_reqlife_sent(struct evhttp_request *req, void *arg);

/* A reply that ended short of its Content-Length: said in the log,
 * within a budget (hr->cut_hook). */
void ha_http_reqlife_cut_short(struct ha_http_req *hr);

/* The request's task ended (arg: hr). Its reply stays counted, and the
 * request listed, until it is written. */
void ha_http_reqlife_done(void *arg);

/* The request's task's body (arg: hr): its route. */
void ha_http_reqlife_run(void *arg);

/* The method's name, for the log and PROCESSLIST ("GET"; "OTHER"). */
const char *ha_http_reqlife_method(enum evhttp_cmd_type cmd);

/* ------------------------------------------------------------------
 * Who may ask (auth.c)
 * ------------------------------------------------------------------ */

/* A new request from an allocated hr (path, query, method, peer set):
 * the method, the throttle's word on its credential, then the check;
 * admitted, its route runs on a task. */
void ha_http_auth_dispatch(struct ha_http *h, struct http_conn *c,
                           struct ha_http_req *hr);

#endif /* HA_HTTP_INT_H */
