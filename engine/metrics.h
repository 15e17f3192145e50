/* SPDX-License-Identifier: MIT
 *
 * The whole Prometheus exposition of one admin server: jemalloc and its
 * profiler (heap/metrics.h), the admin port's own counters and build
 * information. What `SHOW PROMETHEUS METRICS` returns and the HTTP
 * listener serves at /metrics.
 *
 *   heapadmin_info{version="..."}                1
 *   heapadmin_uptime_seconds                     gauge
 *   heapadmin_admin_sessions                     gauge    open now
 *   heapadmin_admin_sessions_max                 gauge    most at once
 *   heapadmin_admin_connections_total            counter  sessions opened
 *   heapadmin_admin_questions_total              counter  statements run
 *   heapadmin_http_requests_total                counter  (when HTTP is on)
 */
#ifndef HA_ADMIN_METRICS_H
#define HA_ADMIN_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/expo.h"
#include "engine/clients.h"
#include "heap/heap.h"

/* The admin port's counters (ha_admin_counters_of fills them). */
struct ha_admin_counters {
    uint64_t uptime_s;
    size_t sessions;
    size_t sessions_max;
    uint64_t connections;
    uint64_t questions;
    bool http;               /* the HTTP listener is on: */
    uint64_t http_requests;  /* requests answered */
    bool proxysql_names;     /* ProxySQL's family names beside ours, for
                                its dashboards (true from
                                ha_admin_counters_of; a host gateway's own
                                figures leave them out: it is no ProxySQL) */
};

/* c's counters from the clients' registry (engine/clients.h), for
 * /metrics and SHOW PROMETHEUS METRICS alike; http: the HTTP front-end is
 * serving (its request counter is shown). */
void ha_admin_counters_of(const struct ha_clients *reg, bool http,
                          struct ha_admin_counters *c);

/* Appends the exposition in fmt to out. Returns 0, or -1 when out could
 * not grow. */
int ha_admin_metrics(struct ha_heap *heap, const struct ha_admin_counters *c,
                     enum ha_expo_format fmt, struct ha_buf *out);

#endif /* HA_ADMIN_METRICS_H */
