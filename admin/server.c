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
#include "core/acceptguard.h"
#include "core/clock.h"
#include "core/listen.h"
#include "core/lograte.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/login.h"


struct listener {
    struct evconnlistener *l;
    evutil_socket_t fd;            /* the listening socket, or -1 */
    dev_t dev;                     /* its identity when bound: a host may */
    ino_t ino;                     /* close it and reuse the number */
    struct ha_iface iface;
    int port;                      /* bound TCP port; 0 for unix */
    char desc[300];                /* "127.0.0.1:6032" or the socket path */
    struct ha_listen_file file;    /* unix: the file bound, to tell when
                                      it is deleted or replaced */
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
    struct ha_accept_guard guard;  /* accept() failures (core/acceptguard.h) */
    bool refusing_max;             /* in a max_connections burst (logged) */
    uint64_t n_evicted;            /* connections still logging in closed
                                      to admit new ones (make_room) */
    struct ha_lograte evict_log;   /* ... their lines' budget */
    uint64_t n_refused;            /* connections refused in the burst */
};

/* Connections in the connection phase: what an outsider without a
 * password can hold, within max_pending_logins(_per_host). */
static bool
pending(const struct ha_conn *c)
{
    return !c->opening &&
           (c->state == HA_CONN_HANDSHAKE || c->state == HA_CONN_AUTH_SWITCH ||
            c->state == HA_CONN_AUTH_FULL);
}

static size_t
count_sessions(const struct ha_server *s)
{
    size_t n = 0;

    for (const struct ha_conn *c = s->conns; c != NULL; c = c->next)
        if (c->state == HA_CONN_COMMAND || c->opening)
            n++;
    return n;
}

/* MySQL's rule for SUPER: past max_connections sessions only an admin
 * may log in, once, so monitoring that fills every slot never locks the
 * admin out. Connections still logging in take no slot. */
static bool
server_admit(void *arg, enum ha_role role)
{
    struct ha_server *s = arg;
    size_t n = count_sessions(s);

    return n < (size_t)s->cfg->max_connections ||
           (role == HA_ROLE_ADMIN && n == (size_t)s->cfg->max_connections);
}

/* One output budget for every client of the engine, both front-ends
 * (connections still logging in hold no reply worth counting). */
static long long
server_output_left(void *arg)
{
    struct ha_server *s = arg;

    return ha_clients_output_left(ha_engine_clients(s->engine),
                                  (long long)s->env.max_output_total);
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

/* The accept guard's answer when descriptors ran out: ERR 1040. */
static void
refuse_fd(int fd, void *arg)
{
    (void)arg;
    refuse(fd);
}

/* Sends ERR 1129 as the first and only packet (no SQLSTATE: nothing is
 * negotiated yet), then closes fd: the peer must wait before its next
 * credential is checked, so it is told when to come back instead of
 * being held (MySQL's ER_HOST_IS_BLOCKED). Counted in the throttle's
 * summary, never logged one by one. */
static void
refuse_blocked(evutil_socket_t fd, const struct ha_peer *peer, int64_t ms)
{
    struct ha_buf p = HA_BUF_INIT, out = HA_BUF_INIT;
    uint8_t seq = 0;
    char msg[160];

    snprintf(msg, sizeof(msg),
             "Host '%s' is blocked because of failed logins; try again in "
             "%lld s",
             peer->host, (long long)ha_login_retry_s(ms));
    ha_proto_encode_err(&p, 1129, NULL, msg);
    ha_proto_write_packet(&out, &seq, p.data, p.len);
    if (!ha_buf_failed(&out))
        (void)send(fd, out.data, out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
    ha_buf_free(&p);
    ha_buf_free(&out);
    evutil_closesocket(fd);
}

/* Closes pending connection old to make room for a new one, saying why
 * within the log's budget. */
static void
evict(struct ha_server *s, struct ha_conn *old, const char *why)
{
    uint64_t flushed;

    s->n_evicted++;
    if (ha_lograte_take(&s->evict_log, ha_clock_ms(), &flushed))
        ha_log_warn("closing connection %u (%s), which had not logged in, "
                    "to admit a new one: %s (%llu so far)",
                    old->id, old->peer.name, why,
                    (unsigned long long)s->n_evicted);
    ha_conn_free(old);
}

/* Keeps the connections still logging in within max_pending_logins in
 * all and max_pending_logins_per_host for peer's address: the oldest of
 * peer's own makes room first, then the oldest of the address holding
 * the most. A flood from one address, or from many, so closes its own
 * sockets, never an admin's from elsewhere that is logging in. */
static void
make_room(struct ha_server *s, const struct ha_peer *peer)
{
    size_t total = 0, same = 0, best_n = 0;
    struct ha_conn *oldest_same = NULL, *victim = NULL;

    for (struct ha_conn *c = s->conns; c != NULL; c = c->next) {
        if (!pending(c))
            continue;
        total++;
        if (ha_peer_same_host(&c->peer, peer)) {
            same++;
            oldest_same = c; /* newest first: the last is the oldest */
        }
    }
    if (oldest_same != NULL &&
        same >= (size_t)s->cfg->max_pending_logins_per_host) {
        evict(s, oldest_same,
              "max_pending_logins_per_host reached for its address");
        return;
    }
    if (total < (size_t)s->cfg->max_pending_logins)
        return;
    for (struct ha_conn *c = s->conns; c != NULL; c = c->next) {
        size_t n = 0;
        struct ha_conn *last = NULL;

        if (!pending(c))
            continue;
        for (struct ha_conn *o = s->conns; o != NULL; o = o->next)
            if (pending(o) && ha_peer_same_host(&o->peer, &c->peer)) {
                n++;
                last = o;
            }
        if (n > best_n) {
            best_n = n;
            victim = last;
        }
    }
    if (victim != NULL)
        evict(s, victim, "max_pending_logins reached; its address held "
                         "the most");
}

static void
accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
          int salen, void *arg)
{
    struct listener *li = arg;
    struct ha_server *s = li->server;
    struct ha_peer peer;
    struct ha_conn *c;
    int64_t wait;
    uint32_t id;

    (void)l;
    if (s->stopped) {
        evutil_closesocket(fd);
        return;
    }
    ha_accept_guard_ok(&s->guard);
    ha_peer_from_addr(&peer, sa, (socklen_t)salen);
    if (peer.family == HA_PEER_UNIX)
        (void)ha_peer_from_fd(&peer, fd); /* its uid: SO_PEERCRED */
    /* A peer that must wait before its next check is told so now, and
     * holds nothing meanwhile. */
    wait = ha_login_peek(ha_engine_accounts(s->engine), &peer);
    if (wait > 0) {
        refuse_blocked(fd, &peer, wait);
        return;
    }
    if (count_sessions(s) >= (size_t)s->cfg->max_connections + 1) {
        /* Every slot, the admin's too, holds a logged-in session: nobody
         * could log in. */
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
    make_room(s, &peer);
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
    s->shared.engine = e;
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
    ha_accept_guard_init(&s->guard, s->base, "", refuse_fd, s);
    s->env.on_close = server_on_close;
    s->env.admit = server_admit;
    s->env.output_left = server_output_left;
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
        ha_listen_file_record(ifc->path, &li->file);
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
    (void)ha_accept_guard_add(&s->guard, li->l, li->desc);
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
    ha_accept_guard_remove(&li->server->guard, li->l);
    evconnlistener_free(li->l);
    li->l = NULL;
    if (ours) {
        uid_t owner;

        close(li->fd);
        /* Only our own file: one that replaced it is not ours. */
        if (unlink_path && li->iface.kind == HA_IFACE_UNIX &&
            ha_listen_file_check(li->iface.path, &li->file, &owner) ==
                HA_LISTEN_FILE_OURS)
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

void
ha_server_listen_files(const struct ha_server *s, struct ha_listen_look *look)
{
    for (size_t i = 0; s != NULL && !s->stopped && i < s->n_listeners; i++) {
        const struct listener *li = &s->listeners[i];

        if (li->l != NULL && li->iface.kind == HA_IFACE_UNIX)
            (void)ha_listen_look_add(look, li->iface.path, &li->file);
    }
}

int
ha_server_check_listeners(struct ha_server *s,
                          const struct ha_listen_look *look, char *err,
                          size_t errlen)
{
    int lost = 0;

    if (s == NULL || s->stopped)
        return 0;
    for (size_t i = 0; i < s->n_listeners; i++) {
        struct listener *li = &s->listeners[i];
        enum ha_listen_file_state fs = HA_LISTEN_FILE_OURS;
        uid_t owner = 0;

        /* What the look off the loop saw of its file (an lstat in the
         * datadir waits for its disk: core/blockio.h). */
        if (li->l != NULL && li->iface.kind == HA_IFACE_UNIX)
            fs = ha_listen_look_find(look, li->iface.path, &li->file,
                                     &owner);
        if (fs != HA_LISTEN_FILE_OURS) {
            /* Its clients reach it by name: a socket without one (a tmp
             * cleaner deleted the file) or under a name another process
             * took serves nobody. The name is ours to take back only
             * from our own user; another's file is left, and said. */
            if (fs == HA_LISTEN_FILE_REPLACED && owner != geteuid()) {
                if (li->file.set)
                    ha_log_warn("listener %s: another user's file now "
                                "has its name; left alone, this "
                                "listener is unreachable by name",
                                li->desc);
                li->file.set = false;
                continue;
            }
            ha_log_warn("listener %s: its socket file %s; listening "
                        "there again",
                        li->desc,
                        fs == HA_LISTEN_FILE_GONE
                            ? "was deleted"
                            : "was replaced by another process's socket "
                              "of this user");
            lost++;
            close_listener(li, false);
            if (fs == HA_LISTEN_FILE_REPLACED)
                (void)unlink(li->iface.path);
            if (listen_one(s, li, err, errlen) != 0)
                return -1;
            continue;
        }
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
    ha_accept_guard_abandon(&s->guard);
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
    ha_accept_guard_stop(&s->guard);
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
    ha_accept_guard_free(&s->guard);
    free(s->listeners);
    free(s);
}
