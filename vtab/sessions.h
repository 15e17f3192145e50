/* SPDX-License-Identifier: MIT
 *
 * Per-session virtual tables (sessions.c): stats_admin_sessions (the
 * connected sessions, behind SHOW PROCESSLIST) and session_variables /
 * mysql_variables (behind SHOW [GLOBAL] VARIABLES). Unlike the jemalloc
 * tables they read the admin layer's session state, so the session
 * registers them itself (ha_session_open), with itself as client data.
 */
#ifndef HA_SESSIONS_H
#define HA_SESSIONS_H

#include <sqlite3.h>

struct ha_session;

/* Registers the three modules on db for session s (which must outlive
 * db). Returns SQLITE_OK, or an SQLite error code with *pzErr set
 * (sqlite3_malloc'd). */
int ha_sessions_register(sqlite3 *db, struct ha_session *s, char **pzErr);

#endif /* HA_SESSIONS_H */
