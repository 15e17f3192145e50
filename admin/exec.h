/* SPDX-License-Identifier: MIT
 *
 * Statements and commands run on an open session (session.h), replying
 * through query.h:
 *   - COM_QUERY text: split into statements (multi-statements), each
 *     rewritten to SQLite's dialect (dialect.c) and answered: SET
 *     (setexec.c), USE, KILL, SAVE/LOAD (persist_stmt.c) and transaction
 *     control here, everything else prepared (stmtcache.c) and run;
 *   - the statements of the prepared-statement protocol that SQLite
 *     cannot prepare (stmt.c hands them here);
 *   - COM_FIELD_LIST.
 * Every SQLite statement of either protocol runs by one path,
 * ha_exec_step: the authorizer's scope, the max_execution_time deadline,
 * the reply (rows, OK with the tables' info message, or the MySQL error
 * for SQLite's), and no info message left for the next statement. Each
 * statement answered, whatever the answer, is one of SHOW STATUS'
 * Questions (ha_exec_done).
 */
#ifndef HA_EXEC_H
#define HA_EXEC_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "admin/lex.h"
#include "admin/query.h"
#include "admin/session.h"

/* What the authorizer must know of the statement being prepared or run
 * (struct ha_authz_who). */
struct ha_exec_scope {
    bool is_show;                /* a SHOW rewrite: the schema table is
                                    hidden, not refused (in_show) */
    const char (*ctes)[HA_AUTHZ_CTE_NAME]; /* its CTE names */
    size_t n_ctes;
};

/* Starts answering a command of s through r: r reports authorizer
 * refusals with the session's text, an interrupted statement as
 * shutdown (1053) or KILL QUERY (1317), and carries s's status flags. */
void ha_exec_begin(struct ha_session *s, struct ha_reply *r);

/* Puts scope in force for what s prepares or runs next, and takes it
 * away again. */
void ha_exec_scope_set(struct ha_session *s,
                       const struct ha_exec_scope *scope);
void ha_exec_scope_clear(struct ha_session *s);

/* Runs stmt (prepared on s->db, parameters bound) to its end under scope
 * and the session's max_execution_time, and replies: a result set (text,
 * or binary when r->binary), an OK with the virtual tables' info message,
 * or ERR (3024 past the deadline, 1317 killed, 1053 shutdown, else the
 * MySQL error for SQLite's). Returns 0, or -1 when the reply ended in
 * ERR. stmt is left as SQLite left it (reset is the caller's). */
int ha_exec_step(struct ha_session *s, sqlite3_stmt *stmt,
                 const struct ha_exec_scope *scope, struct ha_reply *r);

/* A statement was answered: one more of SHOW STATUS' Questions, and r
 * carries s's status flags as they are now. */
void ha_exec_done(struct ha_session *s, struct ha_reply *r);

/* Runs one COM_QUERY text (sql, len bytes) and writes the whole reply
 * through r: one result (set, OK or ERR) per statement when the session
 * has multi-statements on, each but the last with
 * SERVER_MORE_RESULTS_EXISTS; an error ends the batch. Without
 * multi-statements a text with more than one statement gets ERR 1064.
 * PROCESSLIST shows "Query" and the text meanwhile, "Sleep" after. */
void ha_exec_query(struct ha_session *s, const char *sql, size_t len,
                   struct ha_reply *r);

/* For COM_STMT_PREPARE/EXECUTE of statement text SQLite cannot prepare
 * (SET, USE, BEGIN, COMMIT, ROLLBACK, KILL, SAVE/LOAD, `select $$`,
 * empty): runs it and writes the text-protocol reply (OK or ERR) through
 * r, returning 1. Returns 0 without replying for ordinary SQL and SHOW,
 * which prepare as the SELECT ha_dialect_rewrite_lexed() gives. */
int ha_exec_special(struct ha_session *s, const char *sql, size_t len,
                    struct ha_reply *r);
/* The same on a statement already lexed (stmt.c lexes at prepare time,
 * so an execute never lexes again). */
int ha_exec_special_lexed(struct ha_session *s, const struct ha_lex *lx,
                          struct ha_reply *r);

/* COM_FIELD_LIST reply for table in the current schema: one column
 * definition per column (with a default value field), then EOF (an 0xFE
 * OK with CLIENT_DEPRECATE_EOF); columns whose name does not match
 * wildcard (LIKE syntax; NULL or "" = all) are left out. ERR 1146 when
 * the table does not exist. */
void ha_exec_field_list(struct ha_session *s, const char *table,
                        const char *wildcard, struct ha_reply *r);

#endif /* HA_EXEC_H */
