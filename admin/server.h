/* SPDX-License-Identifier: MIT
 *
 * The admin server: listeners for every mysql_ifaces entry (TCP over IPv4
 * and IPv6, unix sockets), the list of live connections, and the shared
 * in-memory admin database. It runs on the caller's event_base in the
 * caller's thread, so it can be embedded in a host process as well as run
 * by heapadmind.
 */
#ifndef HA_SERVER_H
#define HA_SERVER_H

#include <event2/event.h>
#include <openssl/ssl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/config.h"
#include "admin/session.h"
#include "vtab/mallctl.h"

struct ha_server;

/* Creates a server for cfg (which must outlive it); dumps go to datadir
 * (absolute path, copied). ops is jemalloc's mallctl (or a fake). Returns
 * NULL with err set. Nothing listens until ha_server_listen(). */
struct ha_server *ha_server_new(struct event_base *base,
                                const struct ha_config *cfg,
                                const char *datadir,
                                const struct ha_mallctl_ops *ops, char *err,
                                size_t errlen);

/* Loads or generates the key material in the datadir (tls.h): the TLS
 * certificate when admin_variables.have_ssl is on, then CLIENT_SSL is
 * offered on TCP; and the RSA key pair caching_sha2_password's full
 * authentication uses over plain TCP. Without this call neither is
 * available. Returns 0, or -1 with err naming the file and the reason. */
int ha_server_enable_tls(struct ha_server *s, char *err, size_t errlen);

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

/* Re-checks that every listening descriptor is still the socket it bound
 * (fstat identity). A host that closes descriptors it does not own (e.g.
 * varnishd's close_range() at start-up) and reuses the number would
 * otherwise have its own socket closed by us later; such a listener is
 * forgotten without closing and bound anew. Returns the number rebound,
 * or -1 with err when a rebind failed. */
int ha_server_check_listeners(struct ha_server *s, char *err,
                              size_t errlen);

/* For a fork child: closes the listening sockets that are provably ours
 * and touches nothing else (no libevent call: the event loop belongs to
 * the parent's thread). s must not be used afterwards; it is leaked. */
void ha_server_abandon(struct ha_server *s);

/* Counters for COM_STATISTICS and SHOW STATUS: the server's session
 * registry (ha_session_stats), the one set both report. */
void ha_server_stats(const struct ha_server *s, struct ha_session_stats *out);

/* The TLS context ha_server_enable_tls() made (NULL: have_ssl is off):
 * the HTTP front-end serves HTTPS with the same certificate. */
SSL_CTX *ha_server_ssl_ctx(struct ha_server *s);

/* The tables' shared context (jemalloc, datadir, caches): what the HTTP
 * front-end (http/http.h) serves from, on the same loop thread. */
struct ha_vtab_ctx *ha_server_vtab(struct ha_server *s);

/* Lets SHOW PROMETHEUS METRICS report the HTTP listener's request count
 * (NULL: HTTP is off). counter must outlive the server or be unset. */
void ha_server_set_http_counter(struct ha_server *s, const uint64_t *counter);

/* KILL [QUERY|CONNECTION] id, COM_PROCESS_KILL. Queries run to completion
 * before the next command is read, so KILL QUERY finds nothing running
 * and only checks that id exists. KILL CONNECTION closes connection id
 * after the current callback, once what was queued for it is written (so
 * a session may kill itself and still get its reply). Returns 0, or -1
 * with err "Unknown thread id: <id>" (MySQL ERR 1094). */
int ha_server_kill(struct ha_server *srv, uint32_t id, bool query_only,
                   char *err, size_t errlen);

/* Start-up precedence: applies the jemalloc variables saved on disk
 * (<datadir>/heapadmin.db) over what the config set, each one logged, or
 * with initial discards them. Call once after ha_server_new. Returns the
 * number applied or -1 (logged). */
int ha_server_apply_saved(struct ha_server *s, bool initial);

/* flag, once set (from any thread or a signal handler), ends every
 * statement running on this server at its next progress check with ERR
 * 1053 (Server shutdown in progress). The owner keeps flag alive as long
 * as the server. */
void ha_server_set_shutdown_flag(struct ha_server *s,
                                 const _Atomic bool *flag);

/* Stops accepting, closes every session and removes the unix socket
 * files. Safe to call twice. */
void ha_server_stop(struct ha_server *s);
void ha_server_free(struct ha_server *s);

#endif /* HA_SERVER_H */
