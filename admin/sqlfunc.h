/* SPDX-License-Identifier: MIT
 *
 * The MySQL functions SQLite lacks, as SQL functions of one session's
 * connection: ha_sysvar(name) and ha_uservar(name) (what the dialect
 * rewrites @@name and @name to), ha_status(name) (SHOW STATUS),
 * ha_prometheus_metrics() (SHOW PROMETHEUS METRICS), ha_table_check,
 * ha_schema_check and ha_create_table (SHOW COLUMNS, SHOW CREATE TABLE),
 * and MySQL's VERSION(), DATABASE()/SCHEMA(), USER() and its synonyms,
 * CURRENT_USER(), CONNECTION_ID(), LAST_INSERT_ID(), CONCAT(),
 * CONCAT_WS(), IF() and NOW(). All are SQLITE_INNOCUOUS: they read the
 * session and change nothing.
 */
#ifndef HA_SQLFUNC_H
#define HA_SQLFUNC_H

#include <sqlite3.h>
#include <stddef.h>

#include "admin/session_state.h"

/* Registers every function on db with s as its user data (s must outlive
 * db's use of them: ha_session_close closes db first). Returns 0, or -1
 * with err naming the function SQLite refused. */
int ha_sqlfunc_register(sqlite3 *db, struct ha_session *s, char *err,
                        size_t errlen);

#endif /* HA_SQLFUNC_H */
