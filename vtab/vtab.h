/* SPDX-License-Identifier: MIT
 *
 * Registers heapadmin's virtual tables on one SQLite connection:
 *   stats_memory_jemalloc  (read-only, jemalloc scalars; stats.c)
 *   stats_memory_metrics   (read-only, ProxySQL's row names; stats.c)
 *   global_variables       (admin-* and jemalloc-* settings; UPDATE acts;
 *                           globals.c)
 * All are eponymous: they exist in every connection the modules are
 * registered on, with no CREATE VIRTUAL TABLE in the shared schema.
 *
 * What the SQL/session layer does, per connection:
 *   1. after sqlite3_open: ha_vtab_register_all(db, &ctx, &conn, &zErr),
 *      keeping conn (the connection's handle; nothing here is global, so
 *      servers on several threads share no state and no lock);
 *   2. after every statement that succeeded: ha_vtab_take_info(conn, buf,
 *      sizeof(buf)); a non-zero return is the text for the OK packet's
 *      info field (the mysql CLI prints it), e.g. the file dump_now wrote
 *      or "samples were discarded" after lg_prof_sample changed;
 *   3. sqlite3_close(db), then ha_vtab_release(conn).
 * Errors need nothing special: a refused UPDATE/INSERT/DELETE is an
 * ordinary SQLITE_ERROR whose sqlite3_errmsg() names the variable, the
 * value and what is allowed.
 */
#ifndef HA_VTAB_H
#define HA_VTAB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "vtab/vtab_util.h"

/* One registered connection's state (its info-message slot); opaque. */
struct ha_vtab_conn;

/* Registers all modules on db with ctx as their client data, and creates
 * db's info-message slot. On SQLITE_OK, *conn is the connection's handle,
 * holding a reference the caller drops with ha_vtab_release once done
 * with it (the modules hold their own until sqlite3_close). Otherwise
 * returns an SQLite error code with *conn NULL and *pzErr set
 * (sqlite3_malloc'd; the caller sqlite3_free()s it). */
int ha_vtab_register_all(sqlite3 *db, struct ha_vtab_ctx *ctx,
                         struct ha_vtab_conn **conn, char **pzErr);

/* Moves the info message the last committed global_variables change left
 * on conn into buf (len bytes, NUL-terminated, may be truncated) and
 * clears the slot. Returns the message length, 0 when there is none
 * (buf = ""). Call it after every successful statement, so a message
 * never outlives the statement that produced it. conn may be NULL (no
 * tables registered): returns 0. Not locked: call it on the thread that
 * runs the connection's statements. */
size_t ha_vtab_take_info(struct ha_vtab_conn *conn, char *buf, size_t len);

/* Marks conn's session as an admin's (true) or not: admin sessions may
 * take live heap profiles (heap_top('live') etc.). New connections are
 * not admin. NULL is a no-op. */
void ha_vtab_set_admin(struct ha_vtab_conn *conn, bool admin);

/* Names conn's user and peer ("admin@127.0.0.1:5555") in the log lines
 * every control write (global_variables UPDATE, dump_now) leaves. NULL
 * conn is a no-op. */
void ha_vtab_set_who(struct ha_vtab_conn *conn, const char *who);

/* What conn's tables call after waiting on purpose ns nanoseconds (a
 * delta profile's window), so the statement's deadline can move by as
 * much (struct ha_vtab_conn.waited). NULL conn is a no-op. */
void ha_vtab_set_waited(struct ha_vtab_conn *conn,
                        void (*waited)(void *arg, int64_t ns), void *arg);

/* Drops the caller's reference from ha_vtab_register_all. NULL is a
 * no-op. */
void ha_vtab_release(struct ha_vtab_conn *conn);

#endif /* HA_VTAB_H */
