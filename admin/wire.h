/* SPDX-License-Identifier: MIT
 *
 * What one MySQL client connection is (struct ha_conn, with what it needs
 * from its server, struct ha_conn_env) and how a packet leaves it: framed
 * into c->out with the connection's sequence ids, an ERR that closes it,
 * an OK, a change of state (logged). Below both phases of the protocol:
 * handshake.c (the connection phase) and conn.c (transport, lifecycle and the
 * command phase) work on the same struct; conn.c moves c->out to the
 * socket.
 */
#ifndef HA_WIRE_H
#define HA_WIRE_H

#include <event2/event.h>
#include <event2/util.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "admin/proto.h"
#include "admin/session.h"
#include "admin/stmt.h"
#include "core/buf.h"
#include "core/task.h"
#include "engine/clients.h"
#include "engine/accounts.h"
#include "engine/credentials.h"
#include "engine/peer.h"

struct bufferevent;
struct ha_conn;
struct ssl_ctx_st;
struct evbuffer_cb_entry;
struct evp_pkey_st;

enum ha_conn_state {
    HA_CONN_HANDSHAKE,     /* greeting sent, awaiting HandshakeResponse41 */
    HA_CONN_AUTH_SWITCH,   /* AuthSwitchRequest sent, awaiting its answer */
    HA_CONN_AUTH_FULL,     /* caching_sha2 full authentication under way */
    HA_CONN_COMMAND,       /* authenticated: command phase */
    HA_CONN_CLOSING,       /* last reply queued; close once written */
    HA_CONN_STATE_MAX
};

/* What a connection needs from its server; owned by the server. */
struct ha_conn_env {
    struct event_base *base;
    const struct ha_session_shared *shared;
    size_t max_packet;                    /* largest logical payload, bytes */

    /* TLS and authentication (tls.h) */
    struct ssl_ctx_st *ssl_ctx;           /* NULL: CLIENT_SSL not offered */
    struct evp_pkey_st *rsa_key;          /* caching_sha2 full auth key */
    const char *rsa_public_pem;           /* its public half, sent on 0x02 */
    size_t rsa_public_len;
    bool require_tls;                     /* refuse plain-TCP logins */
    const char *auth_plugin;              /* named in HandshakeV10 */
    int connect_timeout;                  /* s to finish the login */
    int wait_timeout;                     /* s idle in the command phase */
    int net_write_timeout;                /* s unsent replies may stall */
    size_t max_output;                    /* unsent bytes above which no
                                           * further request is read */
    /* The engine's accounts and throttle: every login goes through
     * engine/login.h (the throttle's word before a credential is looked
     * at, the account, the local-only rule of default credentials). */
    struct ha_accounts *accounts;
    /* Whether a user with role may have a session now (max_connections
     * keeps one slot for admin users, as MySQL does for SUPER). NULL:
     * always. */
    bool (*admit)(void *arg, enum ha_role role);
    /* The engine's output budget (engine/clients.h
     * ha_clients_output_left): bytes a reply may still add under
     * max_output_total (admin_variables; 0: none) counting every client's
     * unsent bytes, both front-ends'; negative when over. A result set
     * gets only what is left. NULL: no budget. */
    long long (*output_left)(void *arg);
    size_t max_output_total;
    /* Tasks for running commands (core/task.h), the engine's executor: a
     * COM_QUERY or COM_STMT_EXECUTE runs as one and yields to the loop
     * every HA_SESSION_SLICE_NS (and while the worker thread does its
     * long work), so a slow statement delays the other sessions by a
     * slice, not by its length. NULL: commands run to their end on the
     * loop's stack. */
    const struct ha_task_env *tasks;
    /* Called once when the connection is about to be freed. */
    void (*on_close)(struct ha_conn *c, void *arg);
    void *arg;
};

struct ha_conn {
    /* Identity */
    uint32_t id;                          /* connection id, from 1 */
    struct ha_peer peer;                  /* the kernel's: name for the
                                           * log, host for ERR texts,
                                           * local, family */
    time_t connected_at;

    /* Transport */
    const struct ha_conn_env *env;
    struct bufferevent *bev;
    enum ha_conn_state state;
    struct ha_pkt_reader reader;          /* input framing */
    struct ha_buf out;                    /* replies not yet queued */
    struct event *login_timer;            /* connect_timeout; NULL after */
    bool login_admitted;                  /* the throttle was asked (once
                                           * per connection) */
    bool read_paused;                     /* output over env->max_output:
                                           * requests wait until it drains */

    /* Connection phase */
    uint8_t scramble[HA_SCRAMBLE_LEN];
    uint8_t seq;                          /* next server sequence id */
    uint32_t caps;                        /* client & server capabilities */
    uint32_t server_caps;                 /* what HandshakeV10 offered */
    bool tls;                             /* bev is a TLS filter */
    struct evbuffer_cb_entry *raw_drained; /* on the socket's output */
    const char *auth_plugin;              /* plugin of the exchange under
                                           * way (HA_AUTH_*_PLUGIN) */
    char user[HA_USER_MAX + 1];
    char db[HA_PROTO_MAX_DB + 1];         /* schema asked for at login */
    bool changing_user;                   /* the auth exchange belongs to
                                           * COM_CHANGE_USER */
    bool opening;                         /* the password proven, its
                                           * session opens in steps: it
                                           * holds a session's slot and is
                                           * no longer a pending login */

    /* Command phase */
    struct ha_session session;
    bool session_open;
    const struct ha_client_ops *client_ops; /* the session's in the
                                           * engine's registry once
                                           * logged in (conn.c's: KILL,
                                           * held bytes) */
    struct ha_stmt_table stmts;           /* prepared statements */
    struct ha_task task;                  /* the command running or paused
                                           * (ha_task_busy); reading waits
                                           * while there is one */
    bool free_pending;                    /* freed when its command ends */
    bool waiting_drain;                   /* ... paused until its streamed
                                           * result is taken (conn_drain) */
    bool no_drain;                        /* ... cannot pause: its result
                                           * is built whole */

    struct ha_conn *prev, *next;          /* the server's list */
};

const char *ha_wire_state_name(enum ha_conn_state state);

/* Moves c to state (HA_CONN_CLOSING for an out-of-range value), logging
 * the transition at debug level. */
void ha_wire_set_state(struct ha_conn *c, enum ha_conn_state state);

/* Frames payload as c's next packet into c->out (the sequence id is
 * c->seq, which moves on). */
void ha_wire_send(struct ha_conn *c, const struct ha_buf *payload);

/* Sends ERR code (with SQLSTATE once capabilities are negotiated) and
 * msg, and moves c to HA_CONN_CLOSING: it closes once that is written. */
void ha_wire_fail(struct ha_conn *c, uint16_t code, const char *sqlstate,
                  const char *msg);

/* Sends an OK packet with status flags and info (NULL: none). */
void ha_wire_ok(struct ha_conn *c, uint16_t status, const char *info);

#endif /* HA_WIRE_H */
