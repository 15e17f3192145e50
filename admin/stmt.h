/* SPDX-License-Identifier: MIT
 *
 * Server-side prepared statements (MySQL protocol: COM_STMT_PREPARE,
 * COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA, COM_STMT_RESET,
 * COM_STMT_CLOSE), mapped onto sqlite3_prepare/bind/step on a session's
 * connection. The text goes through the dialect rewrite first, as
 * COM_QUERY's does; the parameter count is sqlite3_bind_parameter_count
 * and the column count sqlite3_column_count, both known without running
 * anything. Statements SQLite cannot run (SET, USE, BEGIN, COMMIT,
 * ROLLBACK, KILL: sysbench prepares BEGIN and COMMIT) are kept as text and
 * handed to ha_exec_special() at execute time.
 *
 * Each connection owns one table; statement ids count from 1 and are
 * never reused within it. Execute replies in the binary protocol.
 */
#ifndef HA_STMT_H
#define HA_STMT_H

#include <stddef.h>
#include <stdint.h>

#include "admin/query.h"
#include "admin/session.h"

/* Statements one connection may hold open at once (MySQL's
 * max_prepared_stmt_count is server-wide; 16382 by default). */
#define HA_STMT_MAX_PER_CONN 16384

/* Bytes COM_STMT_SEND_LONG_DATA may accumulate for one parameter. */
#define HA_STMT_MAX_LONG_DATA (64u << 20)

struct ha_stmt;

struct ha_stmt_table {
    struct ha_stmt **v;      /* open statements, ascending ids */
    size_t n;
    size_t cap;
    size_t max;              /* limit on n (HA_STMT_MAX_PER_CONN) */
    uint32_t last_id;        /* id of the last statement prepared */
};

void ha_stmt_table_init(struct ha_stmt_table *t);
/* Finalizes and frees every statement (COM_RESET_CONNECTION, change of
 * user, connection close: call it before ha_session_close()). The table
 * stays usable; ids keep counting. */
void ha_stmt_table_clear(struct ha_stmt_table *t);
void ha_stmt_table_free(struct ha_stmt_table *t);

/* COM_STMT_PREPARE: sql (len bytes, no command byte). Replies
 * COM_STMT_PREPARE_OK with its parameter and column definitions, or ERR
 * (the SQL error, 1461 past the statement limit). */
void ha_stmt_prepare(struct ha_stmt_table *t, struct ha_session *s,
                     const char *sql, size_t len, struct ha_reply *r);

/* COM_STMT_EXECUTE: p is the whole payload, command byte included.
 * Replies OK, ERR (1243 unknown statement, 1835 malformed payload, the SQL
 * error) or a binary result set. */
void ha_stmt_execute(struct ha_stmt_table *t, struct ha_session *s,
                     const uint8_t *p, size_t len, struct ha_reply *r);

/* COM_STMT_SEND_LONG_DATA: appends to the parameter's buffer. Sends
 * nothing, as the protocol wants; a bad statement or parameter id, or too
 * much data, is remembered and reported by the next execute. Returns 0,
 * or -1 (with err set) when the packet was ignored, for the log. */
int ha_stmt_send_long_data(struct ha_stmt_table *t, const uint8_t *p,
                           size_t len, char *err, size_t errlen);

/* COM_STMT_RESET: drops long data and resets the statement; OK or ERR
 * 1243. */
void ha_stmt_reset(struct ha_stmt_table *t, const uint8_t *p, size_t len,
                   struct ha_reply *r);

/* COM_STMT_CLOSE: frees the statement; sends nothing. Returns 0, or -1
 * if no such statement was open. */
int ha_stmt_close(struct ha_stmt_table *t, const uint8_t *p, size_t len);

/* The MySQL text of statement id (for PROCESSLIST), or NULL. */
const char *ha_stmt_sql(const struct ha_stmt_table *t, uint32_t id,
                        size_t *len);

#endif /* HA_STMT_H */
