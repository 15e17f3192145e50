/* SPDX-License-Identifier: MIT
 *
 * One admin session: its own SQLite connection to the shared in-memory
 * admin database (so each session has its own transaction state and,
 * later, its own authorizer), the virtual tables and MySQL functions
 * registered on it, and the session state MySQL clients expect (current
 * schema, autocommit). Runs COM_QUERY text and replies through query.h.
 */
#ifndef HA_SESSION_H
#define HA_SESSION_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credentials.h"
#include "query.h"
#include "vtab.h"

/* What every session shares; owned by the server. */
struct ha_session_shared {
    char db_uri[128];            /* "file:/heapadmin-<pid>-<n>?vfs=memdb" */
    struct ha_vtab_ctx *vtab;    /* jemalloc access, config, datadir */
};

struct ha_session {
    sqlite3 *db;                 /* this session's connection */
    const struct ha_session_shared *shared;
    uint32_t id;                 /* connection id (CONNECTION_ID()) */
    char user[HA_USER_MAX + 1];  /* authenticated user */
    enum ha_role role;
    char host[64];               /* client address, for USER() */
    char schema[64];             /* current schema; "" = none selected */
    bool autocommit;             /* SET autocommit; SERVER_STATUS_AUTOCOMMIT */
};

/* Schemas a client may select (COM_INIT_DB, USE, handshake). */
bool ha_session_schema_exists(const char *name);

/* Opens the session's SQLite connection on shared->db_uri and registers
 * the virtual tables and MySQL compatibility functions. Returns 0, or -1
 * with err set (the connection is closed again). */
int ha_session_open(struct ha_session *s,
                    const struct ha_session_shared *shared, uint32_t id,
                    char *err, size_t errlen);
void ha_session_close(struct ha_session *s);

/* Server status flags for OK/EOF packets: AUTOCOMMIT and IN_TRANS. */
uint16_t ha_session_status(const struct ha_session *s);

/* Selects schema name. Returns 0, or -1 if it does not exist. */
int ha_session_use(struct ha_session *s, const char *name);

/* Runs one COM_QUERY statement text (sql, len bytes) and writes the whole
 * reply (result set, OK or ERR) through r. */
void ha_session_query(struct ha_session *s, const char *sql, size_t len,
                      struct ha_reply *r);

#endif /* HA_SESSION_H */
