/* SPDX-License-Identifier: MIT
 *
 * A host gateway's targets for Prometheus' HTTP service discovery
 * (http_sd_configs; Grafana Alloy's discovery.http; Parca's scrape
 * configs take the same): GET /sd answers 200, application/json, the
 * whole list every time, "[]" when there is nothing to scrape:
 *
 *   [{"targets": ["<gateway>"],
 *     "labels": {"__meta_heapadmin_scope": "host", "host": "<node>"}},
 *    {"targets": ["<gateway>"],
 *     "labels": {"__metrics_path__": "/metrics", "__param_pid": "<N>",
 *                "__meta_heapadmin_scope": "process",
 *                "__meta_heapadmin_pid": "<N>",
 *                "instance": "<gateway>/<service>[/<N>]",
 *                "service_name": "<service>", "program": "<program>",
 *                "user": "<user>", "host": "<node>" [, "pid": "<N>"]}},
 *    ...]
 *
 * The first entry is the host's merged /metrics; then one entry per
 * process served now (stats_agents' serving ones; a gone or mismatched
 * one is not a target). <gateway> is the address the scraper reached
 * the gateway by (its Host header, checked), so the targets are
 * reachable from where the list was fetched. __param_pid=N reaches
 * process N's /metrics and, for a profile scraper, its
 * /debug/pprof/allocs?pid=N, through the gateway's accounts: no
 * process's own password. pid is a target label, and part of instance,
 * only when its program runs several processes of one user here (nginx's
 * workers); otherwise a restarted process keeps its series
 * (engine/labels.h).
 */
#ifndef HA_HTTP_SD_H
#define HA_HTTP_SD_H

#include <stddef.h>
#include <sys/types.h>

#include "core/buf.h"
#include "http/request.h"

/* One served process, as the document lists it. */
struct ha_sd_process {
    pid_t pid;
    const char *program;
    const char *service;   /* its service_name */
    const char *user;
};

/* The document for gateway (the address targets name), node (the host
 * label) and procs (n, in the order to list them) into out. Pure. */
void ha_sd_document(const char *gateway, const char *node,
                    const struct ha_sd_process *procs, size_t n,
                    struct ha_buf *out);

/* Whether host (a Host header's value) is a host[:port] the document may
 * name: letters, digits, '.', '-', ':', '[' and ']', 1..255 bytes. */
bool ha_sd_host_ok(const char *host);

/* GET /sd; 404 but on a gateway. */
void ha_http_sd(struct ha_http_req *hr);

#endif /* HA_HTTP_SD_H */
