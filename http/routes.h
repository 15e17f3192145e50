/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end's routes: which paths exist, which methods each
 * takes, and the handler each request runs (on its task):
 *
 *   /                       an index of what is served here
 *   /metrics                Prometheus text, or OpenMetrics 1.0 when the
 *                           scraper's Accept asks (engine/metrics.h)
 *   /debug/pprof/...        Go's net/http/pprof convention (pprof.h)
 *   /pprof/...              jeprof's remote protocol (pprof.h)
 *   /heap, /heap/..., /assets/...   the flame graph page (flame.h)
 */
#ifndef HA_HTTP_ROUTES_H
#define HA_HTTP_ROUTES_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/request.h"

/* Whether path takes method (paths.h's table, for evhttp's method). A
 * path no route has takes every method (it gets 404 once authenticated).
 * When false, allow holds the methods it takes ("GET, HEAD"). */
bool ha_http_route_allows(const char *path, enum evhttp_cmd_type method,
                          char *allow, size_t allow_len);

/* Runs hr's route (or answers 404), on hr's task. */
void ha_http_route(struct ha_http_req *hr);

#endif /* HA_HTTP_ROUTES_H */
