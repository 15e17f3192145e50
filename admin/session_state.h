/* SPDX-License-Identifier: MIT
 *
 * What one admin session is (struct ha_session) and what every session
 * shares (struct ha_session_shared). Apart from session.h, which opens
 * and closes sessions, so that what runs on a session and is installed
 * by session.c (the MySQL functions of sqlfunc.c) can read its state
 * without including the lifecycle that registers it.
 */
#ifndef HA_SESSION_STATE_H
#define HA_SESSION_STATE_H

#include <stdatomic.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "admin/schemas.h"
#include "admin/stmtcache.h"
#include "admin/sysvar.h"
#include "admin/vars.h"
#include "engine/authorizer.h"
#include "engine/clients.h"
#include "engine/config.h"
#include "engine/credentials.h"
#include "engine/engine.h"
#include "vtab/sessions.h"
#include "vtab/vtab.h"

struct ha_session;

/* What every session shares; owned by the MySQL server over the engine
 * (or a test). */
struct ha_session_shared {
    char db_uri[128];            /* the engine's scratch database, where
                                    admin sessions' own tables live */
    struct ha_vtab_ctx *vtab;    /* jemalloc access, config, datadir */
    struct ha_clients *clients;  /* the engine's: PROCESSLIST, KILL and
                                    SHOW STATUS see both front-ends;
                                    NULL: sessions not listed */
    struct ha_kill_req **pending_kills; /* the list of KILLs waiting
                                           for the loop's next pass
                                           (conn.c), the server's: it
                                           cancels them when it stops */
    struct ha_sysvar_limits limits; /* @@max_allowed_packet and the
                                       timeouts this server enforces;
                                       zero: the table's defaults */
    const struct ha_config *config; /* as loaded (SAVE CONFIG TO FILE);
                                       NULL: none */
    const _Atomic bool *shutdown; /* set when the owner stops: running
                                     statements end with ERR 1053 at
                                     their next progress check; NULL:
                                     never */
    struct ha_engine *engine;    /* the instance (a gateway's merged
                                    exposition); NULL in unit fixtures */
};

#define HA_SESSION_INFO_MAX 4096 /* bytes of a statement PROCESSLIST keeps */
#define HA_SESSION_SLICE_NS 5000000 /* 5 ms: a running command's turn
                                        before it yields (s->yield) */

struct ha_session {
    /* Identity */
    sqlite3 *db;                 /* this session's connection */
    const struct ha_session_shared *shared;
    uint32_t id;                 /* connection id (CONNECTION_ID()) */
    char user[HA_USER_MAX + 1];  /* authenticated user */
    enum ha_role role;           /* set with ha_session_set_role */
    char host[64];               /* client address, for USER() */
    char peer[80];               /* "address:port" for PROCESSLIST; ""
                                    shows host */
    char ssl_version[16];        /* "TLSv1.3", or "" without TLS */
    char ssl_cipher[64];         /* SHOW STATUS Ssl_cipher */
    char ctes[HA_AUTHZ_MAX_CTES][HA_AUTHZ_CTE_NAME]; /* the running
                                    statement's CTE names (authz.ctes) */
    int client_fd;               /* the client's socket, peeked while a
                                    statement runs: a client that went
                                    away ends it; -1: none */
    int64_t peeked_ns;           /* when client_fd was last peeked */
    int64_t deadline_ns;         /* CLOCK_MONOTONIC ns the running
                                    statement must end by; 0: none */
    bool killed;                 /* KILL QUERY: the running command
                                    stops at its next VM check (ERR 1317);
                                    cleared when a command starts */
    /* Optional: called from SQLite's progress handler once the running
     * command has had HA_SESSION_SLICE_NS, and from its busy handler,
     * so the caller can serve others (admin/conn.c runs commands on a
     * fiber and yields it). NULL: statements run to their end. */
    void (*yield)(void *yield_arg);
    void *yield_arg;
    int64_t slice_from_ns;       /* when the current slice began; 0: the
                                    next check starts one */
    bool running;                /* a command other than Sleep is on */
    bool sending;                /* paused until the client takes a
                                    streamed result: PROCESSLIST's State
                                    says "Sending to client" */

    /* MySQL session state */
    char schema[64];             /* current schema; "" = none selected */
    bool autocommit;             /* SET autocommit; SERVER_STATUS_AUTOCOMMIT */
    bool multi_statements;       /* CLIENT_MULTI_STATEMENTS now */
    bool multi_statements_login; /* ... as negotiated at login */
    bool multi_statements_known; /* the login value was recorded */
    struct ha_session_var *vars; /* SET [SESSION] overrides, malloc'd */
    size_t n_vars;
    struct ha_session_var *user_vars; /* SET @x, malloc'd */
    size_t n_user_vars;

    /* PROCESSLIST */
    char command[24];            /* "Sleep", "Query", "Execute", ... */
    char *info;                  /* statement running, malloc'd, or NULL */
    time_t command_since;        /* when command started */
    time_t opened_at;

    /* Reply being built: SERVER_MORE_RESULTS_EXISTS for this result */
    bool more_results;

    struct ha_stmtcache cache;   /* COM_QUERY statements, compiled once */
    struct ha_schemas schemas;   /* disk, stats_history (schemas.h) */
    struct ha_authz_who authz;   /* what the authorizer checks against */
    struct ha_vtab_conn *vtab;   /* virtual tables' handle (info
                                    messages); NULL without shared->vtab */
    struct ha_sessions_source sessions_src; /* what the PROCESSLIST and
                                    VARIABLES tables read (vtab/sessions.h) */

    struct ha_client client;     /* in shared->clients while open; its
                                    ops are session_client_ops until the
                                    owner (conn.c) sets its own */
};

#endif /* HA_SESSION_STATE_H */
