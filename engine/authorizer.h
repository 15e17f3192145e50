/* SPDX-License-Identifier: MIT
 *
 * Who may do what on a session's SQLite connection: an authorizer
 * (sqlite3_set_authorizer) chosen by the session's role, plus the
 * connection settings and limits that keep SQL away from files and the
 * process. Enforcement is by SQLite's own callbacks (every table, column,
 * function, pragma and statement kind a statement uses), never by matching
 * statement text.
 *
 * Every user (admin_credentials and stats_credentials):
 *   - ATTACH, DETACH and VACUUM INTO (an ATTACH of the target file) are
 *     refused; SQLITE_LIMIT_ATTACHED is 0 as a second wall.
 *   - load_extension() (also off in sqlite3_db_config) and, by name for
 *     defence though none is compiled in, readfile(), writefile(), edit(),
 *     fts3_tokenizer(), zipfile() and the sqlar functions; the fsdir,
 *     zipfile and sqlite_dbpage/dbdata/dbptr tables.
 *   - PRAGMA is an allow-list of read-only introspection pragmas (see
 *     authorizer.c); writable_schema, temp_store_directory,
 *     data_store_directory, journal_mode and every other pragma that
 *     changes state or names a file are refused.
 *   - SQLITE_DBCONFIG_DEFENSIVE on, TRUSTED_SCHEMA off, temp_store MEMORY;
 *     sqlite3_limit bounds statement length, string/blob size, expression
 *     depth, compound SELECTs, LIKE patterns, host parameters and
 *     trigger depth (HA_AUTHZ_* below).
 *
 * Stats users (stats_credentials), read-only:
 *   - SELECT on the stats_* tables, session_variables, mysql_variables and
 *     the schema catalog, which is what the compatibility queries (SHOW
 *     DATABASES/TABLES/COLUMNS/VARIABLES/STATUS/PROCESSLIST, SELECT @@x,
 *     DATABASE(), ...) read. Other tables: ERR 1142.
 *   - global_variables: variable_name readable, variable_value always NULL
 *     (SQLITE_IGNORE), so SHOW VARIABLES lists the names while no value,
 *     the credential lists included, reaches a stats user (ProxySQL
 *     likewise shows stats users only a filtered global_variables).
 *   - INSERT, UPDATE, DELETE and DDL: ERR 1142 naming command and table;
 *     so `SET jemalloc-...` (an UPDATE of global_variables) and dumps are
 *     refused. PRAGMA: only table_info/table_xinfo, which SHOW COLUMNS,
 *     SHOW CREATE TABLE and COM_FIELD_LIST run through pragma_table_xinfo()
 *     (SQLite reports the table-valued function and the PRAGMA statement
 *     alike); others ERR 1227.
 *
 * Errors: SQLite answers a refusal with SQLITE_AUTH "not authorized"; the
 * authorizer records why (MySQL code and message) in the asking session's
 * struct ha_authz_who, and ha_reply_sqlite_err takes that record
 * (ha_authorizer_take_denial) to send the MySQL error. Nothing is kept
 * process-wide, so sessions of several servers on several threads never
 * see each other's refusals.
 */
#ifndef HA_AUTHORIZER_H
#define HA_AUTHORIZER_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/credentials.h"

#define HA_AUTHZ_MAX_LENGTH (64 << 20)    /* bytes: SQL text, strings, blobs
                                             (MySQL's max_allowed_packet
                                             default) */
#define HA_AUTHZ_MAX_EXPR_DEPTH 200
#define HA_AUTHZ_MAX_COMPOUND 64          /* SELECTs in one compound */
#define HA_AUTHZ_MAX_LIKE 10000           /* bytes of a LIKE/GLOB pattern */
#define HA_AUTHZ_MAX_VARIABLES 10000      /* ?NNN host parameters */
#define HA_AUTHZ_MAX_TRIGGER_DEPTH 16

#define HA_AUTHZ_MSG_MAX 512

/* Why the authorizer refused: the MySQL error to send. */
struct ha_authz_denial {
    uint16_t code;               /* 1142 or 1227 */
    char sqlstate[6];            /* "42000" */
    char msg[HA_AUTHZ_MSG_MAX];  /* the whole MySQL message */
};

/* Who is asking, for the decision and the message; also where the
 * callback leaves its most recent refusal (one per session). */
#define HA_AUTHZ_CTE_NAME 64 /* bytes of a CTE name kept */
#define HA_AUTHZ_MAX_CTES 16  /* CTE names kept per statement */

struct ha_authz_who {
    enum ha_role role;
    const char *user;            /* "stats" */
    const char *host;            /* "127.0.0.1" */

    bool in_show;                /* preparing or running a SHOW rewrite:
                                    the schema table reads as NULL for
                                    stats users instead of being refused */
    /* The common table expressions the statement names (WITH x AS ...):
     * SQLite reports a read of one with no database, as it does a real
     * table read without columns, so these names are let through then. */
    const char (*ctes)[HA_AUTHZ_CTE_NAME];
    size_t n_ctes;

    struct ha_authz_denial denial; /* the last refusal, if has_denial */
    bool has_denial;             /* cleared by ha_authorizer_take_denial */
};

/* The pure decision for one authorizer callback (arguments as SQLite
 * passes them to the callback). Returns SQLITE_OK, SQLITE_IGNORE (the
 * column reads as NULL) or SQLITE_DENY with *d filled. */
int ha_authorizer_decide(const struct ha_authz_who *who, int action,
                         const char *arg1, const char *arg2,
                         const char *dbname, const char *inner,
                         struct ha_authz_denial *d);

/* Applies the settings and limits above to db (before any statement runs
 * on it; PRAGMA temp_store runs here, so before ha_authorizer_arm).
 * Returns 0, or -1 with err set. */
int ha_authorizer_harden(sqlite3 *db, char *err, size_t errlen);

/* Installs the authorizer on db; who is read at every callback, so the
 * caller may change who->role later (then call this again: re-arming
 * expires db's prepared statements so none keeps an old decision), and
 * refusals are written to who->denial. who must outlive db or the next
 * arm. */
void ha_authorizer_arm(sqlite3 *db, struct ha_authz_who *who);

/* Moves the most recent refusal recorded in who into *d and forgets it.
 * Returns false when there is none (or who is NULL). A session runs one
 * statement at a time, so its last refusal is the one behind the
 * SQLITE_AUTH being reported. */
bool ha_authorizer_take_denial(struct ha_authz_who *who,
                               struct ha_authz_denial *d);

#endif /* HA_AUTHORIZER_H */
