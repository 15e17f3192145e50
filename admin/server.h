/* SPDX-License-Identifier: MIT
 *
 * The MySQL front-end's server: listeners for every mysql_ifaces entry
 * (TCP over IPv4 and IPv6, unix sockets) and the list of live
 * connections, over the engine (engine/engine.h), whose accounts,
 * clients, executor and tables every session uses. It runs on the
 * engine's event_base in the caller's thread.
 */
#ifndef HA_SERVER_H
#define HA_SERVER_H

#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

struct ha_server;

/* Creates the MySQL server over engine e (which must outlive it), with
 * e's config, accounts, clients and executor. Returns NULL with err set.
 * Nothing listens until ha_server_listen(). */
struct ha_server *ha_server_new(struct ha_engine *e, char *err,
                                size_t errlen);

/* Binds and listens on every configured interface, logging each with its
 * bound address (a configured port 0 shows the port chosen). All or
 * nothing: returns 0, or -1 with err naming the interface and the reason
 * (and nothing left listening). */
int ha_server_listen(struct ha_server *s, char *err, size_t errlen);

/* Number of listeners and the TCP port of listener i (0 for a unix
 * socket); lets a caller that asked for port 0 learn the port. */
size_t ha_server_n_listeners(const struct ha_server *s);
int ha_server_port(const struct ha_server *s, size_t i);

/* The socket path of listener i, or NULL for TCP. */
const char *ha_server_listener_path(const struct ha_server *s, size_t i);

/* Adds every unix listener's file to look (core/listen.h), for a look
 * off the loop. */
struct ha_listen_look;
void ha_server_listen_files(const struct ha_server *s,
                            struct ha_listen_look *look);

/* Re-checks that every listening descriptor is still the socket it bound
 * (fstat identity). A host that closes descriptors it does not own (e.g.
 * varnishd's close_range() at start-up) and reuses the number would
 * otherwise have its own socket closed by us later; such a listener is
 * forgotten without closing and bound anew. With look (the files of
 * ha_server_listen_files, looked at since), a unix listener whose file
 * was deleted, or replaced by a socket of this user, is bound again too
 * (another user's is left, and said once). Returns the number rebound,
 * or -1 with err when a rebind failed. */
int ha_server_check_listeners(struct ha_server *s,
                              const struct ha_listen_look *look, char *err,
                              size_t errlen);

/* For a fork child: closes the listening sockets and the reserve
 * descriptor that are provably ours and touches nothing else (no libevent call: the event loop belongs to
 * the parent's thread). s must not be used afterwards; it is leaked. */
void ha_server_abandon(struct ha_server *s);

/* Stops accepting, closes every session and removes the unix socket
 * files. Safe to call twice. */
void ha_server_stop(struct ha_server *s);
void ha_server_free(struct ha_server *s);

#endif /* HA_SERVER_H */
