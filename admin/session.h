/* SPDX-License-Identifier: MIT
 *
 * One admin session: its own SQLite connection to the shared in-memory
 * admin database (so each session has its own transaction state and,
 * later, its own authorizer), the virtual tables and MySQL functions
 * registered on it, and the session state MySQL clients expect (current
 * schema, autocommit, session and user variables, multi-statements, what
 * SHOW PROCESSLIST shows). Runs COM_QUERY text and replies through
 * query.h; SET, USE, SHOW, KILL and transaction control are answered here
 * (the MySQL dialect layer: dialect.c, show.c, setvar.c).
 */
#ifndef HA_SESSION_H
#define HA_SESSION_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "engine/authorizer.h"
#include "engine/clients.h"
#include "engine/config.h"
#include "admin/lex.h"
#include "engine/credentials.h"
#include "admin/query.h"
#include "admin/schemas.h"
#include "admin/stmtcache.h"
#include "admin/sysvar.h"
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
    struct ha_sysvar_limits limits; /* @@max_allowed_packet and the
                                       timeouts this server enforces;
                                       zero: the table's defaults */
    const struct ha_config *config; /* as loaded (SAVE CONFIG TO FILE);
                                       NULL: none */
    const _Atomic bool *shutdown; /* set when the owner stops: running
                                     statements end with ERR 1053 at
                                     their next progress check; NULL:
                                     never */
};

/* A session or user variable set with SET. */
struct ha_session_var {
    char name[128];              /* lower case */
    enum ha_sysvar_type type;
    int64_t ival;                /* HA_SYSVAR_INT */
    char *sval;                  /* HA_SYSVAR_TEXT, malloc'd */
};

#define HA_SESSION_INFO_MAX 4096 /* bytes of a statement PROCESSLIST keeps */
#define HA_SESSION_SLICE_NS 10000000 /* 10 ms: a running command's turn
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

/* Schemas a client may select (COM_INIT_DB, USE, handshake). */
bool ha_session_schema_exists(const char *name);

/* Opens the session's SQLite connection on shared->db_uri and registers
 * the virtual tables and MySQL compatibility functions, and lists the
 * session in shared->clients (id: from the registry's id space). Returns 0, or -1 with err set (the
 * connection is closed again). */
int ha_session_open(struct ha_session *s,
                    const struct ha_session_shared *shared, uint32_t id,
                    char *err, size_t errlen);
void ha_session_close(struct ha_session *s);

/* Sets the session's role after login (or COM_CHANGE_USER) and re-arms
 * the authorizer for it (authorizer.h), expiring compiled statements.
 * ha_session_open arms the admin policy, which already refuses what no
 * user may do; user and host must be set before this call. */
void ha_session_set_role(struct ha_session *s, enum ha_role role);

/* max_execution_time: arms the running statement's deadline from the
 * session's SET max_execution_time (ms; may lower, never raise) and the
 * server's admin_variables.max_execution_time, and returns the limit in
 * ms (0: none). SQLite's progress handler interrupts the statement past
 * it; the reply then says ERR 3024 (struct ha_reply.timeout_ms).
 * Disarm after the statement. */
int64_t ha_session_arm_deadline(struct ha_session *s);
void ha_session_disarm_deadline(struct ha_session *s);

/* Server status flags for OK/EOF packets: AUTOCOMMIT and IN_TRANS. */
uint16_t ha_session_status(const struct ha_session *s);

/* Selects schema name. Returns 0, or -1 if it does not exist. */
int ha_session_use(struct ha_session *s, const char *name);

/* Runs one COM_QUERY text (sql, len bytes) and writes the whole reply
 * through r: one result (set, OK or ERR) per statement when the session
 * has multi-statements on, each but the last with
 * SERVER_MORE_RESULTS_EXISTS; an error ends the batch. Without
 * multi-statements a text with more than one statement gets ERR 1064. */
void ha_session_query(struct ha_session *s, const char *sql, size_t len,
                      struct ha_reply *r);

/* COM_RESET_CONNECTION / COM_CHANGE_USER: rolls back an open transaction,
 * drops session and user variables, autocommit back on, multi-statements
 * back to the login setting. The schema is kept. */
void ha_session_reset(struct ha_session *s);

/* COM_FIELD_LIST reply for table in the current schema: one column
 * definition per column (with a default value field), then EOF (an 0xFE
 * OK with CLIENT_DEPRECATE_EOF); columns whose name does not match
 * wildcard (LIKE syntax; NULL or "" = all) are left out. ERR 1146 when the
 * table does not exist. */
void ha_session_field_list(struct ha_session *s, const char *table,
                           const char *wildcard, struct ha_reply *r);

/* What SHOW PROCESSLIST shows for the session: command ("Query",
 * "Sleep", "Execute", "Prepare", ...) and info (the statement, info_len
 * bytes, kept up to HA_SESSION_INFO_MAX; NULL for none). Restarts the
 * Time column. ha_session_query sets "Query" and then "Sleep" itself. */
void ha_session_set_command(struct ha_session *s, const char *command,
                            const char *info, size_t info_len);

/* Turns multi-statement COM_QUERY on or off (COM_SET_OPTION). The first
 * call after ha_session_open must pass the login's CLIENT_MULTI_STATEMENTS:
 * it is also the value ha_session_reset returns to. */
void ha_session_set_multi_statements(struct ha_session *s, bool on);

/* For COM_STMT_PREPARE/EXECUTE of statement text SQLite cannot prepare
 * (SET, USE, BEGIN, COMMIT, ROLLBACK, KILL, `select $$`, empty): runs it
 * and writes the text-protocol reply (OK or ERR) through r, returning 1.
 * Returns 0 without replying for ordinary SQL and SHOW, which prepare as
 * the SELECT ha_dialect_rewrite_in(sql, len, s->schema, ...) gives. */
int ha_session_special(struct ha_session *s, const char *sql, size_t len,
                       struct ha_reply *r);
/* The same on a statement already lexed (stmt.c lexes at prepare time,
 * so an execute never lexes again). */
int ha_session_special_lexed(struct ha_session *s, const struct ha_lex *lx,
                             struct ha_reply *r);

/* KILL [QUERY] id on behalf of session s (COM_PROCESS_KILL and the KILL
 * statement), through the engine's registry: any client of either
 * front-end; a stats user only its own user's. Returns 0, or -1 with
 * *code (MySQL's 1094 or 1095) and err set. */
int ha_session_kill(struct ha_session *s, uint32_t id, bool query_only,
                    int *code, char *err, size_t errlen);

/* The PROCESSLIST row of the session that embeds client (struct
 * ha_client_ops.row), for owners that set their own ops. */
void ha_session_client_row(const struct ha_client *client, time_t now,
                           struct ha_sessions_row *out);

/* For the sessions virtual tables (vtab/sessions.c): every variable the
 * session sees (global = the server's defaults, without this session's
 * SET), as a malloc'd array of *n entries that
 * ha_session_vars_free() releases. Returns 0, or -1 on OOM. */
int ha_session_vars_snapshot(const struct ha_session *s, bool global,
                             struct ha_session_var **vars, size_t *n);
void ha_session_vars_free(struct ha_session_var *vars, size_t n);

#endif /* HA_SESSION_H */
