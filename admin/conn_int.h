/* SPDX-License-Identifier: MIT
 *
 * A client connection's insides, shared by its files and private to
 * them: conn.c (replies out, the streaming window, the end),
 * conn_client.c (the connection as the engine's client: KILL, held
 * bytes), conn_command.c (the command phase's COM_* handlers) and
 * conn_state.c (the bufferevent's callbacks, commands as tasks, TLS,
 * ha_conn_new). What callers use is conn.h, which this header does not
 * include: the files below conn_state.c do not reach up to it.
 */
#ifndef HA_CONN_INT_H
#define HA_CONN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admin/wire.h"
#include "engine/clients.h"

/* Reply bytes still waiting to be written, under TLS the socket's too
 * (conn.c). */
size_t ha_conn_unsent_bytes(struct ha_conn *c);
bool ha_conn_output_pending(struct ha_conn *c);

/* Moves c->out to the socket, or what it does not take to the
 * bufferevent. Returns -1 (logged) when the connection failed and must
 * be freed; c is never freed here. */
int ha_conn_queue_out(struct ha_conn *c);

/* Queues c->out on the bufferevent. Returns -1 if the connection was
 * freed (the caller must not touch c again). */
int ha_conn_flush(struct ha_conn *c);

/* Whether the server is stopping. */
bool ha_conn_stopping(const struct ha_conn *c);

/* struct ha_reply.drain for a command running as a task; see conn.c. */
int ha_conn_drain(void *arg);

/* Whether the output a paused command waits for has drained enough. */
bool ha_conn_drained(struct ha_conn *c);

/* One command packet p (len bytes, the command byte first) handled on
 * the calling stack: its reply built in c->out (conn_command.c). */
void ha_conn_command_run(struct ha_conn *c, const uint8_t *p, size_t len);

/* What the engine's registry calls on a connection (conn_client.c). */
extern const struct ha_client_ops ha_conn_client_ops;

#endif
