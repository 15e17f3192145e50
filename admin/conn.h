/* SPDX-License-Identifier: MIT
 *
 * One client connection: a state machine on a libevent bufferevent that
 * runs the connection phase (handshake.h: HandshakeV10, HandshakeResponse41,
 * optional AuthSwitchRequest, OK/ERR) and then the command phase, handing
 * COM_QUERY to the session (exec.h) and the COM_STMT_* commands to its
 * prepared statements (stmt.h); COM_CHANGE_USER re-runs authentication
 * on the same connection. It never blocks: input is decoded as whole
 * packets arrive and replies are queued on the bufferevent. The struct
 * is in wire.h, below both phases.
 */
#ifndef HA_CONN_H
#define HA_CONN_H

#include <event2/util.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "admin/wire.h"

/* Takes ownership of fd (accepted from addr) and sends HandshakeV10.
 * Returns the connection, or NULL (fd closed, reason logged). */
struct ha_conn *ha_conn_new(const struct ha_conn_env *env,
                            evutil_socket_t fd, const struct sockaddr *addr,
                            int addrlen, uint32_t id);

/* Closes the connection at once (server shutdown): no more callbacks,
 * memory freed, env->on_close called. A paused command is first ended
 * there and then (interrupted at its next VM check, as KILL QUERY does);
 * called from within that command, the free waits for its end. */
void ha_conn_free(struct ha_conn *c);

/* Reply bytes c holds: built and not yet queued, and queued but not yet
 * written to the socket. */
size_t ha_conn_held_bytes(struct ha_conn *c);

/* KILL QUERY: the command c is running, if any, stops at its next VM
 * check and answers ERR 1317; the session goes on. */
void ha_conn_kill_query(struct ha_conn *c);

/* KILL: stops reading from c and closes it once what is queued for it is
 * written (at once, freeing c, when nothing is). Call it outside c's own
 * callbacks (the server defers it with event_base_once); c must not be
 * used afterwards. No-op when c is already closing. */
void ha_conn_close_after_reply(struct ha_conn *c);

/* Cancels the KILLs still waiting for the loop's next pass: the server
 * is stopping, and the registry they would look the victim up in is
 * about to go (a KILL just before a SIGTERM read it after the engine
 * was freed: soak.sh under ASan). */
struct ha_kill_req;
void ha_conn_cancel_kills(struct ha_kill_req **pending);

#endif /* HA_CONN_H */
