/* SPDX-License-Identifier: MIT
 *
 * SHOW statements -> SELECTs over the admin schema, so SQLite evaluates
 * LIKE and WHERE exactly as for any query. Pure text building: the
 * SELECTs read tables and functions the session provides:
 *
 *   session_variables, mysql_variables   this session's / the server's
 *                                        MySQL variables (vtab/sessions.c)
 *   stats_admin_sessions                 connected sessions (PROCESSLIST)
 *   global_variables, stats_memory_jemalloc
 *   ha_status(name)                      Uptime, Threads_connected, ...
 *   ha_prometheus_metrics()              the /metrics text (engine/metrics.h)
 *   ha_table_check(db, t)                t, or "no such table: db.t"
 *   ha_create_table(db, t)               CREATE TABLE text
 *
 * Schemas (SHOW DATABASES): main (global_variables and the tables users
 * create) and stats (the stats_* tables, which are also reachable
 * unqualified, as in ProxySQL's admin).
 *
 * Supported: DATABASES|SCHEMAS, [FULL] TABLES, TABLE STATUS,
 * [FULL] COLUMNS|FIELDS, INDEX|INDEXES|KEYS, CREATE TABLE|DATABASE,
 * [GLOBAL|SESSION] VARIABLES, [GLOBAL|SESSION] STATUS, WARNINGS, ERRORS,
 * COUNT(*) WARNINGS|ERRORS, [FULL] PROCESSLIST, COLLATION,
 * CHARACTER SET|CHARSET, [STORAGE] ENGINES, PROMETHEUS METRICS (ProxySQL's:
 * one row, the Prometheus text), each with the optional
 * FROM/IN db and LIKE 'pattern' | WHERE expr that MySQL allows.
 */
#ifndef HA_SHOW_H
#define HA_SHOW_H

#include <stddef.h>

#include "core/buf.h"
#include "admin/lex.h"


/* Appends to out the SELECT for the SHOW statement whose SHOW keyword is
 * token i of lx; schema is the session's current schema ("" or NULL:
 * main). Returns 0, or -1 with *bad set to the index of the token where
 * the statement stops making sense (lx->n: it ended early). */
int ha_show_rewrite(const struct ha_lex *lx, size_t i, const char *schema,
                    struct ha_buf *out, size_t *bad);

#endif /* HA_SHOW_H */
