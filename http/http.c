/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end (see http.h): evhttp set up and its listeners, the
 * agent socket, the whole torn down; and the callbacks evhttp calls it
 * through: a new connection's bufferevent, its first loop turn, its close,
 * a request arriving. The rest is by job (http_int.h): connections and
 * their deadlines (conn.c), the bounds on them (admit.c), who may ask
 * (auth.c), and a request's life as the engine's client and task
 * (reqlife.c).
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/acceptguard.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/login.h"
#include "http/http_int.h"

#define HTTP_MAX_HEADERS 8192   /* bytes of request headers */
#define HTTP_MAX_BODY (4 << 20) /* bytes of request body: a symbol
                                   request's addresses (~19 bytes each) */

/* ------------------------------------------------------------------
 * Connections and requests, as evhttp hands them over
 * ------------------------------------------------------------------ */

static void evcon_closed(struct evhttp_connection *evcon, void *arg);

/* evhttp's connection for c: the argument of the event callback evhttp
 * set on its bufferevent. */
static void
watch_close(struct http_conn *c)
{
    bufferevent_data_cb r = NULL, w = NULL;
    bufferevent_event_cb e = NULL;
    void *evcon = NULL;

    if (c->evcon != NULL || !ha_http_conn_alive(c))
        return;
    bufferevent_getcb(c->bev, &r, &w, &e, &evcon);
    if (evcon == NULL)
        return;
    c->evcon = evcon;
    evhttp_connection_set_closecb(c->evcon, evcon_closed, c);
}

static void
admit_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *c = arg;

    (void)fd;
    (void)what;
    if (!ha_http_conn_alive(c)) {
        ha_http_conn_release(c->h, c);
        return;
    }
    watch_close(c);
    ha_http_conn_sweep(c->h);
    (void)ha_http_admit(c, false);
}

/* evhttp's bufferevent for a new connection, as evhttp would make it
 * (no BEV_OPT_CLOSE_ON_FREE: evhttp closes the socket itself), plus our
 * reference. */
static struct bufferevent *
new_bev(struct event_base *base, void *arg)
{
    struct ha_http *h = arg;
    static const struct timeval now = {0, 0};
    struct http_conn *c;

    ha_http_conn_sweep(h);
    ha_accept_guard_ok(&h->guard);
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    c->h = h;
    c->deadline = evtimer_new(base, ha_http_conn_deadline_cb, c);
    c->admit = evtimer_new(base, admit_cb, c);
    if (h->tls != NULL) {
        /* BEV_OPT_CLOSE_ON_FREE: it frees the SSL, and evhttp, seeing
         * the flag, leaves the socket to it. */
        SSL *ssl = SSL_new(h->tls);

        c->bev = ssl != NULL ? bufferevent_openssl_socket_new(
                                   base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                   BEV_OPT_CLOSE_ON_FREE)
                             : NULL;
        if (c->bev == NULL && ssl != NULL)
            SSL_free(ssl);
        if (c->bev != NULL)
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        /* BEV_OPT_CLOSE_ON_FREE: the socket closes with the last
         * reference (ours, or evhttp's), never under live events. */
        c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (c->deadline == NULL || c->admit == NULL || c->bev == NULL) {
        if (c->bev != NULL)
            bufferevent_free(c->bev);
        if (c->deadline != NULL)
            event_free(c->deadline);
        if (c->admit != NULL)
            event_free(c->admit);
        free(c);
        return NULL;
    }
    bufferevent_incref(c->bev);
    evbuffer_add_cb(bufferevent_get_input(c->bev), ha_http_conn_input_cb, c);
    evbuffer_add_cb(bufferevent_get_output(c->bev), ha_http_conn_output_cb, c);
    c->next = h->conns;
    if (h->conns != NULL)
        h->conns->prev = c;
    h->conns = c;
    h->n_conns++;
    ha_http_conn_arm(c, h->cfg->http_header_timeout);
    evtimer_add(c->admit, &now);
    return c->bev;
}

static struct http_conn *
conn_of(struct ha_http *h, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev =
        evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;

    for (struct http_conn *c = h->conns; c != NULL; c = c->next)
        if (c->bev == bev)
            return c;
    return NULL;
}

/* evhttp frees the connection (client gone, or shut down): the request
 * being answered loses its evhttp_request, and its task stops. */
static void
evcon_closed(struct evhttp_connection *evcon, void *arg)
{
    struct http_conn *c = arg;

    (void)evcon;
    c->closing = true;
    c->gone = true;
    c->evcon = NULL;
    evhttp_connection_set_closecb(evcon, NULL, NULL);
    /* Our reference goes at the next loop turn (ha_http_conn_deadline_cb),
     * once evhttp is done with the socket. */
    ha_http_conn_arm(c, 0);
    if (c->cur == NULL)
        return;
    if (c->cur->sending) {
        /* Its reply was being written: nothing of it is held now. */
        ha_http_reqlife_finish(c->cur);
        return;
    }
    c->cur->req = NULL;
    /* Its task ends at its next check; ha_http_reqlife_done releases c. */
    ha_task_kill(&c->cur->task);
}

static void
on_request(struct evhttp_request *req, void *arg)
{
    struct ha_http *h = arg;
    struct http_conn *c = conn_of(h, req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri != NULL ? evhttp_uri_get_query(uri) : NULL;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    struct ha_http_req *hr;

    if (c != NULL && !c->admitted && !c->closing && !ha_http_admit(c, true) &&
        c->blocked_ms > 0) {
        /* Its peer must wait: told so in the reply to this request. */
        struct evkeyvalq *out = evhttp_request_get_output_headers(req);
        struct evbuffer *body = evbuffer_new();
        char after[32];

        snprintf(after, sizeof(after), "%lld",
                 (long long)ha_login_retry_s(c->blocked_ms));
        evhttp_add_header(out, "Retry-After", after);
        evhttp_add_header(out, "Connection", "close");
        evhttp_add_header(out, "Content-Type", "text/plain; charset=utf-8");
        if (body != NULL)
            evbuffer_add_printf(body,
                                "too many failed logins from %s: try again "
                                "in %s s\n",
                                c->peer.host, after);
        evhttp_send_reply(req, 429, "Too Many Requests", body);
        if (body != NULL)
            evbuffer_free(body);
        return;
    }
    if (c == NULL || c->closing || !c->admitted) {
        evhttp_send_error(req, 503, "Service Unavailable");
        return;
    }
    if (c->evcon == NULL) {
        c->evcon = evhttp_request_get_connection(req);
        evhttp_connection_set_closecb(c->evcon, evcon_closed, c);
    }
    ha_http_conn_set_phase(c, PHASE_BUSY);
    hr = calloc(1, sizeof(*hr));
    if (hr == NULL || (hr->path = strdup(path != NULL ? path : "/")) ==
                          NULL ||
        (query != NULL && (hr->query = strdup(query)) == NULL)) {
        if (hr != NULL)
            ha_http_reqlife_free(hr);
        evhttp_send_error(req, 500, "Internal Server Error");
        ha_http_conn_set_phase(c, PHASE_IDLE);
        return;
    }
    hr->engine = h->engine;
    hr->req = req;
    hr->conn = c;
    hr->cut_hook = ha_http_reqlife_cut_short;
    hr->method = evhttp_request_get_command(req);
    hr->since = time(NULL);
    ha_strlcpy(hr->peer, c->peer.name, sizeof(hr->peer));
    ha_strlcpy(hr->host, c->peer.host, sizeof(hr->host));
    snprintf(hr->info, sizeof(hr->info), "%s %s%s%s",
             ha_http_reqlife_method(hr->method), hr->path,
             query != NULL ? "?" : "",
             query != NULL ? query : "");
    if (evbuffer_get_length(in) > 0) {
        size_t len = evbuffer_get_length(in);

        if (ha_buf_reserve(&hr->body, len) != 0 ||
            evbuffer_remove(in, hr->body.data, len) != (int)len) {
            ha_http_reqlife_free(hr);
            evhttp_send_error(req, 500, "Internal Server Error");
            ha_http_conn_set_phase(c, PHASE_IDLE);
            return;
        }
        hr->body.len = len;
    }
    c->cur = hr;
    evhttp_request_set_on_complete_cb(req, ha_http_reqlife_sent, c);
    ha_http_auth_dispatch(h, c, hr);
}

/* ------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------ */

/* The accept guard's answer when descriptors ran out. */
static void
refuse_busy(int fd, void *arg)
{
    static const char reply[] =
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Retry-After: 1\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "Content-Length: 31\r\n"
        "Connection: close\r\n\r\n"
        "out of file descriptors: retry\n";
    const struct ha_http *h = arg;

    if (h->tls == NULL)
        (void)send(fd, reply, sizeof(reply) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
}

struct ha_http *
ha_http_new(struct ha_engine *engine, char *err, size_t errlen)
{
    struct ha_http *h = calloc(1, sizeof(*h));
    struct event_base *base = ha_engine_base(engine);
    const struct ha_config *cfg = ha_engine_config(engine);

    if (h == NULL || (h->eh = evhttp_new(base)) == NULL) {
        free(h);
        ha_err_set(err, errlen, "http: cannot create the listener");
        return NULL;
    }
    h->base = base;
    h->cfg = cfg;
    h->engine = engine;
    if (cfg->http_tls && (h->tls = ha_engine_tls(engine)->ctx) == NULL) {
        evhttp_free(h->eh);
        free(h);
        ha_err_set(err, errlen, "http: http_tls is on but the server has "
                                "no TLS certificate (have_ssl)");
        return NULL;
    }
    ha_accept_guard_init(&h->guard, base, "http: ", refuse_busy, h);
    evhttp_set_bevcb(h->eh, new_bev, h);
    evhttp_set_gencb(h->eh, on_request, h);
    evhttp_set_max_headers_size(h->eh, HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(h->eh, HTTP_MAX_BODY);
    /* Inactivity of a socket; the deadlines above are the real bounds. */
    evhttp_set_timeout(h->eh, cfg->http_timeout);
    /* Every method reaches on_request, which answers 405 itself (evhttp
     * would say 501). */
    evhttp_set_allowed_methods(
        h->eh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                   EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    return h;
}

/* Serves listening socket fd (ours now) as h's next listener, described
 * by desc; path is a unix socket's file ("" for TCP). Returns 0, or -1
 * with err (fd closed, the file removed). */
static int
serve_socket(struct ha_http *h, evutil_socket_t fd, int port,
             const char *desc, const char *path, char *err, size_t errlen)
{
    struct http_listener *l, *ls;
    struct stat st;

    ls = realloc(h->ls, (h->n_ls + 1) * sizeof(*ls));
    if (ls != NULL)
        h->ls = ls;
    if (ls == NULL ||
        (ls[h->n_ls].bound = evhttp_accept_socket_with_handle(h->eh, fd)) ==
            NULL) {
        ha_err_set(err, errlen, "http: cannot serve %s", desc);
        close(fd);
        if (path[0] != '\0')
            unlink(path);
        return -1;
    }
    l = &h->ls[h->n_ls++];
    (void)ha_accept_guard_add(&h->guard,
                              evhttp_bound_socket_get_listener(l->bound),
                              desc);
    l->fd = fd;
    l->dev = 0;
    l->ino = 0;
    if (fstat(fd, &st) == 0) {
        l->dev = st.st_dev;
        l->ino = st.st_ino;
    }
    l->port = port;
    ha_strlcpy(l->desc, desc, sizeof(l->desc));
    ha_strlcpy(l->path, path, sizeof(l->path));
    memset(&l->file, 0, sizeof(l->file));
    if (path[0] != '\0')
        ha_listen_file_record(path, &l->file);
    return 0;
}

int
ha_http_listen(struct ha_http *h, char *err, size_t errlen)
{
    for (size_t i = 0; i < h->cfg->n_http; i++) {
        const struct ha_iface *f = &h->cfg->http[i];
        char desc[300];
        evutil_socket_t fd;
        int port = 0;

        if (f->kind == HA_IFACE_UNIX) {
            mode_t mode = (mode_t)strtoul(
                h->cfg->unix_socket_mode[0] != '\0'
                    ? h->cfg->unix_socket_mode
                    : HA_DEFAULT_UNIX_SOCKET_MODE,
                NULL, 8);

            fd = ha_listen_unix(f->path, mode, 128, err, errlen);
            ha_strlcpy(desc, f->path, sizeof(desc));
        } else {
            fd = ha_listen_tcp(f->host, f->port,
                               ha_iface_dual_stack(h->cfg->http,
                                                   h->cfg->n_http, i),
                               128, &port, err, errlen);
            snprintf(desc, sizeof(desc), "%s%s%s:%d",
                     strchr(f->host, ':') ? "[" : "", f->host,
                     strchr(f->host, ':') ? "]" : "", port);
        }
        if (fd < 0) {
            char why[512];

            ha_strlcpy(why, err, sizeof(why));
            ha_err_set(err, errlen, "http_ifaces: %s", why);
            return -1;
        }
        if (serve_socket(h, fd, port, desc,
                         f->kind == HA_IFACE_UNIX ? f->path : "", err,
                         errlen) != 0)
            return -1;
        ha_log_info("http: listening on %s%s%s/ (/metrics, /debug/pprof/, "
                    "/pprof/, /heap)",
                    f->kind == HA_IFACE_UNIX ? "unix:" : "",
                    f->kind == HA_IFACE_UNIX
                        ? ""
                        : (h->tls != NULL ? "https://" : "http://"),
                    desc);
    }
    return 0;
}

int
ha_http_listen_agent(struct ha_http *h, const char *path, char *err,
                     size_t errlen)
{
    struct stat st;
    evutil_socket_t fd;

    /* A socket file at the name is a stale one of a process that had
     * this pid (the registry's owner removes those at start): replaced. */
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    /* 0600: only root and this user may speak here. */
    fd = ha_listen_unix(path, 0600, 16, err, errlen);
    if (fd < 0)
        return -1;
    if (serve_socket(h, fd, 0, path, path, err, errlen) != 0)
        return -1;
    ha_strlcpy(h->agent_path, path, sizeof(h->agent_path));
    ha_log_info("http: answering a host gateway on %s", path);
    return 0;
}

void
ha_http_agent_files(const struct ha_http *h, struct ha_listen_look *look)
{
    for (size_t i = 0; h != NULL && i < h->n_ls; i++) {
        const struct http_listener *l = &h->ls[i];

        if (l->path[0] != '\0' && l->bound != NULL)
            (void)ha_listen_look_add(look, l->path, &l->file);
    }
}

int
ha_http_check_agent(struct ha_http *h, const struct ha_listen_look *look,
                    char *err, size_t errlen)
{
    for (size_t i = 0; h != NULL && i < h->n_ls; i++) {
        struct http_listener *l = &h->ls[i];
        enum ha_listen_file_state fs;
        evutil_socket_t fd;
        uid_t owner = 0;

        if (l->path[0] == '\0' || l->bound == NULL)
            continue;
        /* As the look off the loop saw it (core/blockio.h). */
        fs = ha_listen_look_find(look, l->path, &l->file, &owner);
        if (fs == HA_LISTEN_FILE_OURS)
            continue;
        /* The gateway finds this process by that file: without it the
         * process drops out of the host's view, and a file another
         * process put there speaks under this pid. The directory is this
         * user's own: a file of this user at our name is taken back. */
        if (fs == HA_LISTEN_FILE_REPLACED && owner != geteuid()) {
            if (l->file.set)
                ha_log_warn("http: %s now belongs to another user; left "
                            "alone, no host gateway reaches this process",
                            l->path);
            l->file.set = false;
            continue;
        }
        ha_log_warn("http: %s %s; listening there again, so the host "
                    "gateway finds this process",
                    l->path,
                    fs == HA_LISTEN_FILE_GONE
                        ? "was deleted"
                        : "was replaced by another process's socket of "
                          "this user");
        ha_accept_guard_remove(&h->guard,
                               evhttp_bound_socket_get_listener(l->bound));
        evhttp_del_accept_socket(h->eh, l->bound); /* closes l->fd */
        l->bound = NULL;
        if (fs == HA_LISTEN_FILE_REPLACED)
            (void)unlink(l->path);
        fd = ha_listen_unix(l->path, 0600, 16, err, errlen);
        if (fd < 0)
            return -1;
        if ((l->bound = evhttp_accept_socket_with_handle(h->eh, fd)) ==
            NULL) {
            close(fd);
            unlink(l->path);
            ha_err_set(err, errlen, "http: cannot serve %s", l->path);
            return -1;
        }
        (void)ha_accept_guard_add(&h->guard,
                                  evhttp_bound_socket_get_listener(l->bound),
                                  l->desc);
        {
            struct stat st;

            l->fd = fd;
            if (fstat(fd, &st) == 0) {
                l->dev = st.st_dev;
                l->ino = st.st_ino;
            }
        }
        ha_listen_file_record(l->path, &l->file);
        return 1;
    }
    return 0;
}

size_t
ha_http_n_listeners(const struct ha_http *h)
{
    return h != NULL ? h->n_ls : 0;
}

int
ha_http_port(const struct ha_http *h, size_t i)
{
    return h != NULL && i < h->n_ls ? h->ls[i].port : -1;
}

void
ha_http_abandon(struct ha_http *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n_ls; i++) {
        struct stat st;

        if (fstat(h->ls[i].fd, &st) == 0 && st.st_dev == h->ls[i].dev &&
            st.st_ino == h->ls[i].ino)
            close(h->ls[i].fd);
    }
    ha_accept_guard_abandon(&h->guard);
}

void
ha_http_free(struct ha_http *h)
{
    if (h == NULL)
        return;
    /* Requests still running end now (they see the kill at their next
     * check), their replies going out as the connections close. */
    for (struct http_conn *c = h->conns; c != NULL; c = c->next) {
        struct ha_http_req *hr = c->cur;

        if (hr == NULL)
            continue;
        hr->conn = NULL; /* ha_http_reqlife_done must not touch c: it
                            goes below */
        c->cur = NULL;
        /* Nothing of its reply went out, nor waits before it: the
         * client is told why it gets none, as a MySQL client gets ERR
         * 1053, rather than an empty reply (plain HTTP; over TLS the
         * connection just closes). */
        if (ha_task_busy(&hr->task) && !hr->answered && !hr->streaming &&
            ha_http_conn_unsent(c) == 0)
            ha_http_conn_send_raw(c, "503 Service Unavailable", "",
                          "heapadmin is stopping: this request was "
                          "interrupted\n");
        if (ha_task_busy(&hr->task)) {
            ha_task_abort(&hr->task);
            ha_http_reqlife_done(hr);
        } else if (hr->sending) {
            ha_http_reqlife_finish(hr);
        }
    }
    /* The agent socket's file goes with it (a fork child that never
     * served it has no ha_http to free). */
    for (size_t i = 0; i < h->n_ls; i++) {
        struct stat st;
        uid_t owner;

        if (h->ls[i].path[0] != '\0' && h->ls[i].bound != NULL &&
            fstat(h->ls[i].fd, &st) == 0 &&
            st.st_dev == h->ls[i].dev && st.st_ino == h->ls[i].ino &&
            ha_listen_file_check(h->ls[i].path, &h->ls[i].file, &owner) ==
                HA_LISTEN_FILE_OURS)
            unlink(h->ls[i].path);
    }
    if (h->refused_say != NULL)
        event_free(h->refused_say);
    ha_accept_guard_stop(&h->guard);
    /* Frees every connection and listener; then our references go. */
    evhttp_free(h->eh);
    ha_accept_guard_free(&h->guard);
    while (h->conns != NULL)
        ha_http_conn_release(h, h->conns);
    free(h->ls);
    free(h);
}
