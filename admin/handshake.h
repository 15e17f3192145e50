/* SPDX-License-Identifier: MIT
 *
 * The connection phase of a MySQL connection (MySQL protocol: Connection
 * Phase): HandshakeV10, the client's HandshakeResponse41 or SSLRequest,
 * AuthSwitchRequest when the client answered for another plugin or with
 * a proof of the wrong size, caching_sha2_password's fast and full
 * authentication (the password in clear over TLS or the unix socket, or
 * RSA-encrypted), and the login throttle's word before a credential is
 * checked (engine/login.h). COM_CHANGE_USER runs the same exchange on
 * an open connection.
 *
 * A login is accepted only once the account's digest matches, the
 * account may log in from the peer (default credentials: loopback and
 * the unix socket only), max_connections leaves room for its role and
 * the database asked for exists; then the session is opened (reset, for
 * COM_CHANGE_USER) and OK sent. Every refusal is ERR and a close, and
 * the log says why. Replies go into c->out (wire.h); conn.c sends them.
 */
#ifndef HA_HANDSHAKE_H
#define HA_HANDSHAKE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admin/wire.h"

/* Sends HandshakeV10 with a fresh scramble, offering TLS on TCP when the
 * server has a certificate. Returns 0, or -1 when no scramble could be
 * made (logged; the connection must be dropped). */
int ha_handshake_greet(struct ha_conn *c);

/* Handles one packet of the connection phase, as c->state says: the
 * HandshakeResponse41 (or SSLRequest), the answer to an
 * AuthSwitchRequest, or a step of full authentication. Replies (or moves
 * c to HA_CONN_COMMAND or HA_CONN_CLOSING) through wire.h. Returns 1
 * when the packet was an SSLRequest the server offered TLS for: the
 * caller starts TLS on the socket, and the handshake response comes
 * inside it; else 0. */
int ha_handshake_packet(struct ha_conn *c, const uint8_t *p, size_t len);

/* COM_CHANGE_USER: authenticate again on this connection (MySQL
 * protocol: COM_CHANGE_USER; the reply continues the command's sequence
 * ids). On success the session is reset for the new user. */
void ha_handshake_change_user(struct ha_conn *c, const uint8_t *p,
                              size_t len);

/* A packet that carries a credential, from a peer the throttle says
 * must wait (engine/login.h ha_login_admit), is not even looked at: ERR
 * 1129 naming the wait goes out at once and the connection closes (the
 * client may come back then). Asked once per connection. Returns true
 * when c was refused so. */
bool ha_handshake_refused(struct ha_conn *c);

#endif /* HA_HANDSHAKE_H */
