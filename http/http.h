/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end of one admin server, on the server's event_base
 * (libevent's evhttp), for what HTTP tools read:
 *
 *   GET /metrics   Prometheus text exposition, or OpenMetrics 1.0 when
 *                  the scraper's Accept asks for it (engine/metrics.h)
 *   GET /          a short index of the endpoints
 *
 * Listeners: admin_variables.http_ifaces (host:port, [ipv6]:port and
 * unix socket paths, as mysql_ifaces; off when empty). Authentication:
 * HTTP Basic (RFC 7617) through the engine's one login (engine/login.h):
 * the same accounts, throttle and peer rules as the MySQL port (the
 * default passwords only from loopback or a unix socket). Stats users
 * may read everything served here.
 *
 * Bounds, so a slow or hostile client cannot hold the port (the same
 * guarantees as the MySQL listeners):
 *   - at most http_max_connections connections; more are closed at once;
 *   - a connection gets http_timeout seconds to send a complete request,
 *     and again after each response (slowloris cannot trickle headers
 *     forever; an idle keep-alive connection is closed);
 *   - request headers up to 8 KiB and bodies up to 1 KiB (answers 4xx);
 *   - only GET and HEAD (405 with Allow otherwise).
 * Nothing here blocks: a scrape is answered in the loop's callback.
 */
#ifndef HA_HTTP_H
#define HA_HTTP_H

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

struct ha_http;

/* Creates the front-end for the http_ifaces of engine e (which must
 * outlive it), on e's loop, with e's accounts, clients and executor.
 * Returns NULL with err set. Nothing listens yet. */
struct ha_http *ha_http_new(struct ha_engine *e, char *err, size_t errlen);

/* Binds every http_ifaces entry, logging each. All or nothing: returns 0,
 * or -1 with err naming the interface and the reason. */
int ha_http_listen(struct ha_http *h, char *err, size_t errlen);

/* Also answers a host gateway on the unix socket path (the agents'
 * registry, core/agentreg.h), mode 0600: requests there come from root
 * or this process's user (SO_PEERCRED), who say whose behalf with
 * X-Heapadmin-Role (admin or stats); no password. The file is removed
 * when h is freed. Returns 0, or -1 with err. */
int ha_http_listen_agent(struct ha_http *h, const char *path, char *err,
                         size_t errlen);

/* Adds the agent socket's file to look (core/listen.h), for a look off
 * the loop. */
struct ha_listen_look;
void ha_http_agent_files(const struct ha_http *h,
                         struct ha_listen_look *look);

/* The agent socket's file (ha_http_listen_agent) as look (of
 * ha_http_agent_files' files) saw it: deleted (a tmp cleaner), or
 * replaced by a socket of this process's user, it is bound again and the
 * log says so. Returns 1 when it was, 0 when nothing was wrong, -1 with
 * err when it could not be bound again. */
int ha_http_check_agent(struct ha_http *h, const struct ha_listen_look *look,
                        char *err, size_t errlen);

/* Listeners, and the TCP port listener i is bound to. */
size_t ha_http_n_listeners(const struct ha_http *h);
int ha_http_port(const struct ha_http *h, size_t i);

/* For a fork child: closes the listening sockets that are provably ours
 * (fstat identity) and nothing else; h is leaked. */
void ha_http_abandon(struct ha_http *h);

/* Closes every listener and connection. NULL is a no-op. */
void ha_http_free(struct ha_http *h);

#endif /* HA_HTTP_H */
