/* SPDX-License-Identifier: MIT
 *
 * One admin session: its own SQLite connection to the shared in-memory
 * admin database (so each session has its own transaction state and its
 * own authorizer), the virtual tables and MySQL functions registered on
 * it, and the session state MySQL clients expect (current schema,
 * autocommit, session and user variables, multi-statements, what SHOW
 * PROCESSLIST shows). The struct is in session_state.h; statements run on
 * a session through exec.h.
 */
#ifndef HA_SESSION_H
#define HA_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "admin/session_state.h"
#include "admin/vars.h"
#include "engine/authorizer.h"
#include "engine/clients.h"
#include "vtab/sessions.h"

/* Opens the session's SQLite connection on shared->db_uri, registers the
 * virtual tables and MySQL compatibility functions (sqlfunc.h), and lists
 * the session in shared->clients (id: from the registry's id space).
 * Returns 0, or -1 with err set (the connection is closed again). */
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

/* COM_RESET_CONNECTION / COM_CHANGE_USER: rolls back an open transaction,
 * drops session and user variables, autocommit back on, multi-statements
 * back to the login setting. The schema is kept. */
void ha_session_reset(struct ha_session *s);

/* What SHOW PROCESSLIST shows for the session: command ("Query",
 * "Sleep", "Execute", "Prepare", ...) and info (the statement, info_len
 * bytes, kept up to HA_SESSION_INFO_MAX; NULL for none). Restarts the
 * Time column. ha_exec_query sets "Query" and then "Sleep" itself. */
void ha_session_set_command(struct ha_session *s, const char *command,
                            const char *info, size_t info_len);

/* Turns multi-statement COM_QUERY on or off (COM_SET_OPTION). The first
 * call after ha_session_open must pass the login's CLIENT_MULTI_STATEMENTS:
 * it is also the value ha_session_reset returns to. */
void ha_session_set_multi_statements(struct ha_session *s, bool on);

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
 * SET), as a malloc'd array of *n entries that ha_vars_free() releases.
 * Returns 0, or -1 on OOM. */
int ha_session_vars_snapshot(const struct ha_session *s, bool global,
                             struct ha_session_var **vars, size_t *n);

#endif /* HA_SESSION_H */
