/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end (see http.h): evhttp listeners, Basic
 * authentication, connection bounds and the routes.
 *
 * Connection bounds need to know when evhttp frees a connection, which
 * evhttp 2.1 does not tell for connections that never sent a request.
 * So every connection's bufferevent is one we create (evhttp_set_bevcb)
 * and hold a reference to: when evhttp frees it, bufferevent_free()
 * clears its callbacks but our reference keeps it allocated, and a sweep
 * (at each new connection and each deadline) that finds the callbacks
 * gone drops it from the count and releases it. A timer per connection
 * enforces http_timeout by shutting the socket down; evhttp then sees
 * the end of the stream and frees the connection itself (never freed
 * under it).
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/accounts.h"
#include "engine/metrics.h"
#include "core/buf.h"
#include "core/expo.h"
#include "core/log.h"
#include "core/util.h"
#include "http/flame.h"
#include "http/pprof.h"
#include "http/reply.h"

#define HTTP_MAX_HEADERS 8192 /* bytes of request headers */
#define HTTP_MAX_BODY (4 << 20) /* bytes of request body: a symbol
                                   request's addresses (~19 bytes each) */

struct http_listener {
    struct evhttp_bound_socket *bound;
    evutil_socket_t fd;
    dev_t dev;          /* fstat identity, for ha_http_abandon */
    ino_t ino;
    int port;
    char desc[300];
};

struct http_conn {
    struct ha_http *h;
    struct bufferevent *bev; /* evhttp's, with our reference */
    struct event *deadline;
    bool over;               /* beyond http_max_connections: waits one
                                loop turn for a slot, then is closed */
    struct http_conn *prev, *next;
};

struct ha_http {
    struct event_base *base;
    const struct ha_config *cfg;
    struct ha_engine *engine;
    struct evhttp *eh;
    struct http_listener *ls;
    size_t n_ls;
    struct http_conn *conns;
    size_t n_conns;
    size_t n_active;         /* connections within the cap */
    SSL_CTX *tls;            /* HTTPS (http_tls), or NULL */
    uint64_t refused;        /* closed for the connection cap */
};

/* ------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------ */

/* True while evhttp still uses c's bufferevent: bufferevent_free()
 * clears the callbacks evhttp set. */
static bool
conn_alive(const struct http_conn *c)
{
    bufferevent_data_cb r = NULL, w = NULL;
    bufferevent_event_cb e = NULL;
    void *arg = NULL;

    bufferevent_getcb(c->bev, &r, &w, &e, &arg);
    return r != NULL || e != NULL;
}

static void
conn_release(struct ha_http *h, struct http_conn *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    h->n_conns--;
    if (!c->over)
        h->n_active--;
    event_free(c->deadline);
    bufferevent_decref(c->bev);
    free(c);
}

/* Releases the connections evhttp has freed. */
static void
sweep(struct ha_http *h)
{
    struct http_conn *c = h->conns, *next;

    for (; c != NULL; c = next) {
        next = c->next;
        if (!conn_alive(c))
            conn_release(h, c);
    }
}

static void
arm(struct http_conn *c, int seconds)
{
    struct timeval tv = {seconds, 0};

    evtimer_add(c->deadline, &tv);
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http_conn *c = arg;
    struct ha_http *h = c->h;
    evutil_socket_t s;

    (void)fd;
    (void)what;
    if (!conn_alive(c)) { /* evhttp is done with it */
        conn_release(h, c);
        return;
    }
    s = bufferevent_getfd(c->bev);
    sweep(h); /* c is alive: the sweep keeps it */
    /* Connections that ended in the same loop turn as this one arrived
     * have been freed by now: if a slot is free, take it. */
    if (c->over && h->n_active < (size_t)h->cfg->http_max_connections) {
        c->over = false;
        h->n_active++;
        arm(c, h->cfg->http_timeout);
        return;
    }
    if (c->over && h->refused++ % 100 == 0)
        ha_log_warn("http: %zu connections open, http_max_connections is "
                    "%d: closing new ones (%llu so far)",
                    h->n_active, h->cfg->http_max_connections,
                    (unsigned long long)h->refused);
    /* evhttp reads the end of the stream and frees the connection. */
    if (s >= 0)
        shutdown(s, SHUT_RDWR);
}

/* evhttp's bufferevent for a new connection, as evhttp would make it
 * (no BEV_OPT_CLOSE_ON_FREE: evhttp closes the socket itself), plus our
 * reference. */
static struct bufferevent *
new_bev(struct event_base *base, void *arg)
{
    struct ha_http *h = arg;
    struct http_conn *c;

    sweep(h);
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return NULL;
    c->h = h;
    c->deadline = evtimer_new(base, deadline_cb, c);
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
        c->bev = bufferevent_socket_new(base, -1, 0);
    }
    if (c->deadline == NULL || c->bev == NULL) {
        if (c->bev != NULL)
            bufferevent_free(c->bev);
        if (c->deadline != NULL)
            event_free(c->deadline);
        free(c);
        return NULL;
    }
    bufferevent_incref(c->bev);
    c->next = h->conns;
    if (h->conns != NULL)
        h->conns->prev = c;
    h->conns = c;
    h->n_conns++;
    c->over = h->n_active >= (size_t)h->cfg->http_max_connections;
    if (!c->over)
        h->n_active++;
    /* Over the cap: looked at again on the next loop turn, once evhttp
     * has set the socket (deadline_cb). */
    arm(c, c->over ? 0 : h->cfg->http_timeout);
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

/* ------------------------------------------------------------------
 * Authentication
 * ------------------------------------------------------------------ */

static bool
peer_is_local(struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    char *addr = NULL;
    ev_uint16_t port = 0;

    if (evcon == NULL)
        return false;
    evhttp_connection_get_peer(evcon, &addr, &port);
    return addr != NULL &&
           (strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0 ||
            strncmp(addr, "::ffff:127.", 11) == 0);
}

/* The user a request's Basic credentials (RFC 7617) name, or NULL;
 * *why says what was wrong, for the log. */
static const struct ha_user *
authenticate(struct ha_http *h, struct evhttp_request *req,
             const char **why)
{
    const char *hdr = evhttp_find_header(evhttp_request_get_input_headers(req),
                                         "Authorization");
    unsigned char dec[512];
    const struct ha_user *u;
    size_t n, len;
    int got;
    char *colon;

    *why = "no credentials";
    if (hdr == NULL || strncasecmp(hdr, "Basic ", 6) != 0)
        return NULL;
    hdr += 6;
    while (*hdr == ' ')
        hdr++;
    n = strlen(hdr);
    *why = "malformed credentials";
    if (n == 0 || n % 4 != 0 || n / 4 * 3 >= sizeof(dec))
        return NULL;
    got = EVP_DecodeBlock(dec, (const unsigned char *)hdr, (int)n);
    if (got < 0)
        return NULL;
    len = (size_t)got;
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    if (n >= 1 && hdr[n - 1] == '=')
        len--;
    if (n >= 2 && hdr[n - 2] == '=')
        len--;
    dec[len] = '\0';
    colon = memchr(dec, ':', len);
    if (colon == NULL || memchr(dec, '\0', len) != NULL)
        return NULL;
    *colon = '\0';
    *why = "unknown user or wrong password";
    u = ha_accounts_find(ha_engine_accounts(h->engine), (const char *)dec);
    if (u == NULL ||
        !ha_accounts_check_clear(u, (const uint8_t *)colon + 1,
                                 len - (size_t)(colon + 1 - (char *)dec))) {
        OPENSSL_cleanse(dec, sizeof(dec));
        return NULL;
    }
    OPENSSL_cleanse(dec, sizeof(dec));
    if (!ha_credentials_allows_from(u, peer_is_local(req))) {
        *why = "default credentials, which are accepted only from "
               "loopback";
        return NULL;
    }
    return u;
}

/* ------------------------------------------------------------------
 * Replies and routes
 * ------------------------------------------------------------------ */

static void
serve_metrics(struct ha_http *h, struct evhttp_request *req)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    enum ha_expo_format fmt =
        ha_expo_negotiate(evhttp_find_header(in, "Accept"));
    struct ha_clients_stats st;
    struct ha_admin_counters c = {0};
    struct ha_buf out = HA_BUF_INIT;
    struct evbuffer *b;

    ha_clients_stats(ha_engine_clients(h->engine), &st);
    c.uptime_s = st.uptime;
    c.sessions = st.threads;
    c.sessions_max = st.max_used;
    c.connections = st.connections;
    c.questions = st.questions;
    c.http = true;
    c.http_requests = st.http_requests;
    if (ha_admin_metrics(ha_engine_vtab(h->engine), &c, fmt, &out) != 0 ||
        (b = evbuffer_new()) == NULL) {
        ha_buf_free(&out);
        ha_http_reply_text(req, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    evbuffer_add(b, out.data, out.len);
    ha_buf_free(&out);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      ha_expo_content_type(fmt));
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void
on_request(struct evhttp_request *req, void *arg)
{
    struct ha_http *h = arg;
    struct http_conn *c = conn_of(h, req);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    const struct ha_user *u;
    const char *why;

    ha_engine_clients(h->engine)->http_requests++;
    if (c != NULL && !c->over) /* the next request: a full http_timeout */
        arm(c, h->cfg->http_timeout);
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD &&
        !(cmd == EVHTTP_REQ_POST && path != NULL &&
          strcmp(path, "/debug/pprof/symbol") == 0)) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                          path != NULL &&
                                  strcmp(path, "/debug/pprof/symbol") == 0
                              ? "GET, HEAD, POST"
                              : "GET, HEAD");
        ha_http_reply_text(req, 405, "Method Not Allowed",
                           "only GET and HEAD are served here (and POST to "
                           "/debug/pprof/symbol)\n");
        return;
    }
    u = authenticate(h, req, &why);
    if (u == NULL) {
        struct evhttp_connection *evcon = evhttp_request_get_connection(req);
        char *addr = NULL;
        ev_uint16_t port = 0;

        if (evcon != NULL)
            evhttp_connection_get_peer(evcon, &addr, &port);
        if (strcmp(why, "no credentials") != 0)
            ha_log_warn("http: %s:%u: %s %s refused: %s",
                        addr ? addr : "?", port, "GET",
                        path ? path : "?", why);
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "WWW-Authenticate",
                          "Basic realm=\"heapadmin\", charset=\"UTF-8\"");
        ha_http_reply_text(req, 401, "Unauthorized",
                   "authentication required: HTTP Basic with an "
                   "admin_credentials or stats_credentials account\n");
        return;
    }
    if (path != NULL && strcmp(path, "/metrics") == 0) {
        serve_metrics(h, req);
        return;
    }
    if (ha_http_pprof(req, ha_engine_vtab(h->engine),
                      u->role == HA_ROLE_ADMIN) ||
        ha_http_flame(req, ha_engine_vtab(h->engine),
                      u->role == HA_ROLE_ADMIN))
        return;
    if (path != NULL && strcmp(path, "/") == 0) {
        ha_http_reply_text(req, 200, "OK",
                   "heapadmin\n"
                   "  /metrics              Prometheus metrics "
                   "(OpenMetrics on request)\n"
                   "  /debug/pprof/heap     heap profile (live: admin; "
                   "?dump=<file>, ?base=<file>, ?format=pprof|jemalloc)\n"
                   "  /debug/pprof/symbol   jeprof's remote symbols\n"
                   "  /heap                 flame graph, top functions, "
                   "diffs\n");
        return;
    }
    ha_http_reply_text(req, 404, "Not Found",
               "no such page; see / for what is served here\n");
}

/* ------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------ */

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
    evhttp_set_bevcb(h->eh, new_bev, h);
    evhttp_set_gencb(h->eh, on_request, h);
    evhttp_set_max_headers_size(h->eh, HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(h->eh, HTTP_MAX_BODY);
    evhttp_set_timeout(h->eh, cfg->http_timeout);
    /* Every method reaches on_request, which answers 405 itself (evhttp
     * would say 501). */
    evhttp_set_allowed_methods(
        h->eh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                   EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                   EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    return h;
}

int
ha_http_listen(struct ha_http *h, char *err, size_t errlen)
{
    h->ls = calloc(h->cfg->n_http ? h->cfg->n_http : 1, sizeof(*h->ls));
    if (h->ls == NULL) {
        ha_err_set(err, errlen, "http: out of memory");
        return -1;
    }
    for (size_t i = 0; i < h->cfg->n_http; i++) {
        const struct ha_iface *f = &h->cfg->http[i];
        struct http_listener *l = &h->ls[h->n_ls];
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        struct stat st;

        snprintf(l->desc, sizeof(l->desc), "%s%s%s:%d",
                 strchr(f->host, ':') ? "[" : "", f->host,
                 strchr(f->host, ':') ? "]" : "", f->port);
        l->bound = evhttp_bind_socket_with_handle(h->eh, f->host,
                                                  (ev_uint16_t)f->port);
        if (l->bound == NULL) {
            ha_err_set(err, errlen, "http_ifaces: cannot listen on %s: %s",
                       l->desc, strerror(errno));
            return -1;
        }
        l->fd = evhttp_bound_socket_get_fd(l->bound);
        if (fstat(l->fd, &st) == 0) {
            l->dev = st.st_dev;
            l->ino = st.st_ino;
        }
        l->port = f->port;
        if (getsockname(l->fd, (struct sockaddr *)&ss, &sl) == 0)
            l->port = ntohs(ss.ss_family == AF_INET6
                                ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                : ((struct sockaddr_in *)&ss)->sin_port);
        h->n_ls++;
        ha_log_info("http: listening on %s://%s%s%s:%d/ (/metrics, "
                    "/debug/pprof/, /heap)",
                    h->tls != NULL ? "https" : "http",
                    strchr(f->host, ':') ? "[" : "", f->host,
                    strchr(f->host, ':') ? "]" : "", l->port);
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
}

void
ha_http_free(struct ha_http *h)
{
    if (h == NULL)
        return;
    /* Frees every connection and listener; then our references go. */
    evhttp_free(h->eh);
    while (h->conns != NULL)
        conn_release(h, h->conns);
    free(h->ls);
    free(h);
}
