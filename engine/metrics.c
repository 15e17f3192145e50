/* SPDX-License-Identifier: MIT
 *
 * One admin server's Prometheus exposition (see metrics.h).
 */
#include "engine/metrics.h"

#include <string.h>

#include "engine/labels.h"
#include "heap/metrics.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

void
ha_admin_counters_of(const struct ha_clients *reg, bool http,
                     struct ha_admin_counters *c)
{
    struct ha_clients_stats st;

    ha_clients_stats(reg, &st);
    memset(c, 0, sizeof(*c));
    c->uptime_s = st.uptime;
    c->sessions = st.threads;
    c->sessions_max = st.max_used;
    c->connections = st.connections;
    c->questions = st.questions;
    c->http = http;
    c->http_requests = st.http_requests;
    c->proxysql_names = true;
}

int
ha_admin_metrics(struct ha_heap *heap, const struct ha_admin_counters *c,
                 enum ha_expo_format fmt, struct ha_buf *out)
{
    static const char *const info[] = {"version", PACKAGE_VERSION, NULL};
    struct ha_expo e;

    ha_expo_init(&e, out, fmt);
    ha_expo_family(&e, "heapadmin_info", HA_EXPO_GAUGE,
                   "heapadmin's build; always 1.");
    ha_expo_sample(&e, info, 1);
    if (heap != NULL && heap->labels != NULL)
        ha_labels_expo(heap->labels, &e);
    ha_expo_one(&e, "heapadmin_uptime_seconds", HA_EXPO_GAUGE,
                "Seconds since the admin server started.",
                (double)c->uptime_s);
    ha_expo_one(&e, "heapadmin_admin_sessions", HA_EXPO_GAUGE,
                "Admin sessions (MySQL protocol) open now.",
                (double)c->sessions);
    ha_expo_one(&e, "heapadmin_admin_sessions_max", HA_EXPO_GAUGE,
                "Most admin sessions open at once since the start.",
                (double)c->sessions_max);
    ha_expo_one(&e, "heapadmin_admin_connections", HA_EXPO_COUNTER,
                "Admin sessions opened since the start.",
                (double)c->connections);
    ha_expo_one(&e, "heapadmin_admin_questions", HA_EXPO_COUNTER,
                "Statements the admin sessions ran since the start.",
                (double)c->questions);
    if (c->http)
        ha_expo_one(&e, "heapadmin_http_requests", HA_EXPO_COUNTER,
                    "HTTP requests answered since the start.",
                    (double)c->http_requests);
    if (heap != NULL && heap->ops != NULL)
        ha_metrics_jemalloc(heap, c->proxysql_names, &e);
    return ha_expo_finish(&e);
}
