/* SPDX-License-Identifier: MIT
 *
 * The MySQL server (see server.h): evconnlistener per interface,
 * connections in a doubly linked list, the engine underneath.
 */
#include "admin/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin/conn.h"
#include "admin/session.h"
#include "admin/sysvar.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/util.h"

/* How long listeners pause when descriptors ran out and the reserve
 * descriptor could not be used to refuse the connection, ms. */
#define HA_SERVER_ACCEPT_PAUSE_MS 100

struct listener {
    struct evconnlistener *l;
    evutil_socket_t fd;            /* the listening socket, or -1 */
    dev_t dev;                     /* its identity when bound: a host may */
    ino_t ino;                     /* close it and reuse the number */
    struct ha_iface iface;
    int port;                      /* bound TCP port; 0 for unix */
    char desc[300];                /* "127.0.0.1:6032" or the socket path */
    struct ha_server *server;
};

struct ha_server {
    struct ha_engine *engine;
    struct event_base *base;
    const struct ha_config *cfg;

    struct ha_session_shared shared;
    struct ha_kill_req *kills;   /* deferred KILLs (conn.c) */
    struct ha_conn_env env;

    struct listener *listeners;
    size_t n_listeners;

    struct ha_conn *conns;         /* live connections */
    size_t n_conns;                /* sockets open, logged in or not: what
                                    * max_connections admits; the reported
                                    * counters are the registry's */
    bool stopped;

    /* Refusing connections (max_connections, descriptor exhaustion) */
    dev_t reserve_dev;             /* its identity when opened */
    ino_t reserve_ino;
    int reserve_fd;                /* a socket of its own, given up to
                                      accept and
                                    * refuse one connection at EMFILE */
    struct event *accept_pause;    /* re-enables paused listeners */
    bool refusing_max;             /* in a max_connections burst (logged) */
    uint64_t n_evicted;            /* unauthenticated connections closed
                                      to admit new ones at the cap */
    bool refusing_fds;             /* in an EMFILE burst (logged) */
    uint64_t n_refused;            /* connections refused in the burst */
};

/* MySQL's rule for SUPER: max_connections + 1 sockets are accepted, and
 * past max_connections only an admin may log in, so monitoring that
 * fills every slot never locks the admin out. */
static bool
server_admit(void *arg, enum ha_role role)
{
    struct ha_server *s = arg;

    return role == HA_ROLE_ADMIN ||
           s->n_conns <= (size_t)s->cfg->max_connections;
}

/* One output budget for every client of the engine, both front-ends
 * (connections still logging in hold no reply worth counting). */
static size_t
server_output_held(void *arg)
{
    struct ha_server *s = arg;

    return ha_clients_held(ha_engine_clients(s->engine));
}

static void
server_on_close(struct ha_conn *c, void *arg)
{
    struct ha_server *s = arg;

    if (c->prev != NULL)
        c->prev->next = c->next;
    else if (s->conns == c)
        s->conns = c->next;
    else
        return; /* never linked */
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    s->n_conns--;
}

/* Sends ERR 1040 as the first and only packet, then closes fd. No
 * SQLSTATE: capabilities are not negotiated yet (MySQL does the same). */
static void
refuse(evutil_socket_t fd)
{
    struct ha_buf p = HA_BUF_INIT, out = HA_BUF_INIT;
    uint8_t seq = 0;

    ha_proto_encode_err(&p, 1040, NULL, "Too many connections");
    ha_proto_write_packet(&out, &seq, p.data, p.len);
    if (!ha_buf_failed(&out))
        (void)send(fd, out.data, out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
    ha_buf_free(&p);
    ha_buf_free(&out);
    evutil_closesocket(fd);
}

static void
open_reserve(struct ha_server *s)
{
    struct stat st;

    if (s->reserve_fd >= 0)
        return;
    /* An unbound socket, not /dev/null: its inode is ours alone, so a
     * fork child (and a host that reused the number) can tell it apart
     * from the host's own /dev/null. */
    s->reserve_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s->reserve_fd >= 0 && fstat(s->reserve_fd, &st) == 0) {
        s->reserve_dev = st.st_dev;
        s->reserve_ino = st.st_ino;
    }
}

/* Closes the reserve descriptor only if it is still ours: inside a host
 * that closed it and reused the number, it is the host's now. */
static void
close_reserve(struct ha_server *s)
{
    struct stat st;

    if (s->reserve_fd >= 0 && fstat(s->reserve_fd, &st) == 0 &&
        S_ISSOCK(st.st_mode) && st.st_dev == s->reserve_dev &&
        st.st_ino == s->reserve_ino)
        close(s->reserve_fd);
    s->reserve_fd = -1;
}

static void
accept_pause_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_server *s = arg;

    (void)fd;
    (void)what;
    open_reserve(s);
    for (size_t i = 0; i < s->n_listeners && !s->stopped; i++)
        if (s->listeners[i].l != NULL)
            evconnlistener_enable(s->listeners[i].l);
}

static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
          int salen, void *arg)
{
    struct listener *li = arg;
    struct ha_server *s = li->server;
    struct ha_conn *c;
    uint32_t id;

    (void)l;
    if (s->stopped) {
        evutil_closesocket(fd);
        return;
    }
    if (s->refusing_fds) {
        ha_log_info("accepting connections again (%llu refused while out "
                    "of file descriptors)",
                    (unsigned long long)s->n_refused);
        s->refusing_fds = false;
        s->n_refused = 0;
        open_reserve(s);
    }
    if (s->n_conns >= (size_t)s->cfg->max_connections + 1) {
        /* Full (max_connections and the admin's extra one). Sockets
         * that never finished a login must not lock everyone out (256
         * silent ones did, the admin included): the oldest still
         * logging in makes room. Logged-in sessions are
         * never evicted; with only those, the new one is refused. */
        struct ha_conn *old = NULL;

        for (struct ha_conn *o = s->conns; o != NULL; o = o->next)
            if (o->state == HA_CONN_HANDSHAKE ||
                o->state == HA_CONN_AUTH_SWITCH ||
                o->state == HA_CONN_AUTH_FULL)
                old = o; /* the list is newest first: keep the last */
        if (old != NULL) {
            if (s->n_evicted++ % 100 == 0)
                ha_log_warn("max_connections (%d) reached: closing "
                            "connection %u (%s), which had not logged in, "
                            "to admit a new one (%llu so far)",
                            s->cfg->max_connections, old->id, old->peer.name,
                            (unsigned long long)s->n_evicted);
            ha_conn_free(old);
        }
    }
    if (s->n_conns >= (size_t)s->cfg->max_connections + 1) {
        if (!s->refusing_max)
            ha_log_warn("max_connections (%d) reached: refusing new "
                        "connections with ERR 1040 until one closes",
                        s->cfg->max_connections);
        s->refusing_max = true;
        s->n_refused++;
        refuse(fd);
        return;
    }
    if (s->refusing_max) {
        ha_log_info("accepting connections again (%llu refused at "
                    "max_connections)",
                    (unsigned long long)s->n_refused);
        s->refusing_max = false;
        s->n_refused = 0;
    }
    id = ha_clients_next_id(ha_engine_clients(s->engine));
    c = ha_conn_new(&s->env, fd, sa, salen, id);
    if (c == NULL)
        return;
    c->next = s->conns;
    if (s->conns != NULL)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
}

/* accept() failed. Out of descriptors, the pending connection would
 * stay in the backlog and libevent would call again at once, forever: the
 * reserve descriptor is given up to accept it and refuse it with ERR 1040;
 * without one, the listeners pause briefly. Logged once per burst. */
static void
accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct listener *li = arg;
    struct ha_server *s = li->server;
    int e = EVUTIL_SOCKET_ERROR();
    struct timeval pause = {0, HA_SERVER_ACCEPT_PAUSE_MS * 1000};
    evutil_socket_t fd;

    if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
        ha_log_error("accept on %s failed: %s", li->desc,
                     evutil_socket_error_to_string(e));
        return;
    }
    if (!s->refusing_fds)
        ha_log_error("accept on %s failed: %s: refusing new connections "
                     "with ERR 1040 until descriptors are free; open "
                     "sessions are still served",
                     li->desc, evutil_socket_error_to_string(e));
    s->refusing_fds = true;
    if (s->reserve_fd >= 0) {
        close_reserve(s);
        fd = accept4(evconnlistener_get_fd(l), NULL, NULL,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            s->n_refused++;
            refuse(fd);
        }
        open_reserve(s);
        if (fd >= 0)
            return;
    }
    if (s->accept_pause == NULL)
        s->accept_pause = evtimer_new(s->base, accept_pause_cb, s);
    if (s->accept_pause == NULL)
        return;
    for (size_t i = 0; i < s->n_listeners; i++)
        if (s->listeners[i].l != NULL)
            evconnlistener_disable(s->listeners[i].l);
    evtimer_add(s->accept_pause, &pause);
}

struct ha_server *
ha_server_new(struct ha_engine *e, char *err, size_t errlen)
{
    struct ha_server *s = calloc(1, sizeof(*s));
    const struct ha_config *cfg = ha_engine_config(e);
    const struct ha_tls *tls = ha_engine_tls(e);

    if (s == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return NULL;
    }
    s->reserve_fd = -1;
    s->engine = e;
    s->base = ha_engine_base(e);
    s->cfg = cfg;
    ha_strlcpy(s->shared.db_uri, ha_engine_scratch_uri(e),
               sizeof(s->shared.db_uri));
    s->shared.vtab = ha_engine_vtab(e);
    s->shared.clients = ha_engine_clients(e);
    s->shared.pending_kills = &s->kills;
    s->shared.config = cfg;
    s->shared.shutdown = ha_engine_shutdown_flag(e);
    /* @@max_allowed_packet and friends report what is enforced. */
    s->shared.limits.max_allowed_packet = cfg->max_allowed_packet;
    s->shared.limits.wait_timeout = cfg->wait_timeout;
    s->shared.limits.max_execution_time = cfg->max_execution_time;
    s->shared.limits.net_write_timeout = cfg->net_write_timeout;
    s->env.base = s->base;
    s->env.accounts = ha_engine_accounts(e);
    s->env.shared = &s->shared;
    s->env.max_packet = (size_t)cfg->max_allowed_packet;
    s->env.connect_timeout = cfg->connect_timeout;
    s->env.wait_timeout = cfg->wait_timeout;
    s->env.net_write_timeout = cfg->net_write_timeout;
    s->env.max_output = (size_t)cfg->max_output_buffer;
    s->env.ssl_ctx = tls->ctx;
    s->env.rsa_key = tls->rsa;
    s->env.rsa_public_pem = tls->rsa_public_pem;
    s->env.rsa_public_len = tls->rsa_public_len;
    open_reserve(s);
    s->env.on_close = server_on_close;
    s->env.admit = server_admit;
    s->env.output_held = server_output_held;
    s->env.tasks = ha_engine_tasks(e);
    s->env.max_output_total = cfg->max_output_total > 0
                                  ? (size_t)cfg->max_output_total
                                  : 0;
    s->env.require_tls = cfg->require_tls != 0;
    s->env.auth_plugin = cfg->default_auth_plugin;
    s->env.arg = s;
    return s;
}

static int
listen_one(struct ha_server *s, struct listener *li, char *err,
           size_t errlen)
{
    const struct ha_iface *ifc = &li->iface;
    /* No LEV_OPT_CLOSE_ON_FREE: the descriptor is closed only once
     * fstat() proves it is still ours (close_listener()). */
    unsigned flags = LEV_OPT_CLOSE_ON_EXEC;
    struct stat st;

    li->server = s;
    li->fd = -1;
    if (ifc->kind == HA_IFACE_UNIX) {
        mode_t mode =
            (mode_t)strtoul(s->cfg->unix_socket_mode[0] != '\0'
                                ? s->cfg->unix_socket_mode
                                : HA_DEFAULT_UNIX_SOCKET_MODE,
                            NULL, 8);
        evutil_socket_t fd = ha_listen_unix(ifc->path, mode, 128, err,
                                            errlen);
        if (fd < 0)
            return -1;
        li->l = evconnlistener_new(s->base, accept_cb, li, flags, -1, fd);
        if (li->l == NULL) {
            ha_err_set(err, errlen, "%s: cannot create a listener",
                       ifc->path);
            close(fd);
            unlink(ifc->path);
            return -1;
        }
        ha_strlcpy(li->desc, ifc->path, sizeof(li->desc));
    } else {
        size_t i = (size_t)(li - s->listeners);
        bool dual = ha_iface_dual_stack(s->cfg->ifaces, s->cfg->n_ifaces, i);
        evutil_socket_t fd = ha_listen_tcp(ifc->host, ifc->port, dual, 128,
                                           &li->port, err, errlen);

        if (fd < 0)
            return -1;
        li->l = evconnlistener_new(s->base, accept_cb, li, flags, -1, fd);
        if (li->l == NULL) {
            ha_err_set(err, errlen, "%s:%d: cannot create a listener",
                       ifc->host, ifc->port);
            close(fd);
            return -1;
        }
        snprintf(li->desc, sizeof(li->desc), "%s%s%s:%d",
                 strchr(ifc->host, ':') != NULL ? "[" : "", ifc->host,
                 strchr(ifc->host, ':') != NULL ? "]" : "", li->port);
    }
    li->fd = evconnlistener_get_fd(li->l);
    if (fstat(li->fd, &st) == 0) {
        li->dev = st.st_dev;
        li->ino = st.st_ino;
    }
    evconnlistener_set_error_cb(li->l, accept_error_cb);
    ha_log_info("listening on %s", li->desc);
    return 0;
}

/* True when fd is still the socket a listener bound. */
static bool
listener_is_ours(const struct listener *li)
{
    struct stat st;

    return li->fd >= 0 && fstat(li->fd, &st) == 0 && st.st_dev == li->dev &&
           st.st_ino == li->ino;
}

/* Frees the listener and closes its socket if it is still ours; a
 * descriptor number the host took over is left alone. */
static void
close_listener(struct listener *li, bool unlink_path)
{
    bool ours;

    if (li->l == NULL)
        return;
    ours = listener_is_ours(li);
    evconnlistener_free(li->l);
    li->l = NULL;
    if (ours) {
        close(li->fd);
        if (unlink_path && li->iface.kind == HA_IFACE_UNIX)
            unlink(li->iface.path);
    }
    li->fd = -1;
}

static void
close_listeners(struct ha_server *s)
{
    for (size_t i = 0; i < s->n_listeners; i++)
        close_listener(&s->listeners[i], true);
}

int
ha_server_listen(struct ha_server *s, char *err, size_t errlen)
{
    s->listeners = calloc(s->cfg->n_ifaces ? s->cfg->n_ifaces : 1,
                          sizeof(*s->listeners));
    if (s->listeners == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    s->n_listeners = s->cfg->n_ifaces;
    for (size_t i = 0; i < s->n_listeners; i++) {
        s->listeners[i].iface = s->cfg->ifaces[i];
        if (listen_one(s, &s->listeners[i], err, errlen) != 0) {
            close_listeners(s);
            return -1;
        }
    }
    return 0;
}

int
ha_server_check_listeners(struct ha_server *s, char *err, size_t errlen)
{
    int lost = 0;

    if (s->stopped)
        return 0;
    for (size_t i = 0; i < s->n_listeners; i++) {
        struct listener *li = &s->listeners[i];

        if (li->l == NULL || listener_is_ours(li))
            continue;
        ha_log_warn("listener %s: descriptor %d is no longer our socket "
                    "(the host closed it); binding a new one",
                    li->desc, (int)li->fd);
        lost++;
        close_listener(li, false);
        if (listen_one(s, li, err, errlen) != 0)
            return -1;
    }
    return lost;
}

void
ha_server_abandon(struct ha_server *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_listeners; i++) {
        struct listener *li = &s->listeners[i];

        if (listener_is_ours(li))
            close(li->fd);
        li->fd = -1;
    }
    close_reserve(s);
}

const char *
ha_server_listener_path(const struct ha_server *s, size_t i)
{
    if (i >= s->n_listeners || s->listeners[i].iface.kind != HA_IFACE_UNIX)
        return NULL;
    return s->listeners[i].iface.path;
}

size_t
ha_server_n_listeners(const struct ha_server *s)
{
    return s->n_listeners;
}

int
ha_server_port(const struct ha_server *s, size_t i)
{
    return i < s->n_listeners ? s->listeners[i].port : 0;
}

void
ha_server_stop(struct ha_server *s)
{
    if (s->stopped)
        return;
    s->stopped = true;
    close_listeners(s);
    ha_conn_cancel_kills(&s->kills);
    if (s->n_conns > 0)
        ha_log_info("closing %zu session%s", s->n_conns,
                    s->n_conns == 1 ? "" : "s");
    while (s->conns != NULL)
        ha_conn_free(s->conns); /* unlinks itself via server_on_close */
}

void
ha_server_free(struct ha_server *s)
{
    if (s == NULL)
        return;
    ha_server_stop(s);
    if (s->accept_pause != NULL)
        event_free(s->accept_pause);
    close_reserve(s);
    free(s->listeners);
    free(s);
}
