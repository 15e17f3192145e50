/* SPDX-License-Identifier: MIT
 *
 * One endpoint per host: the HTTP side of the host gateway (heapadmind
 * --gateway) and of the agents it speaks for (core/agentreg.h).
 *
 * In the gateway:
 *   /metrics          the gateway's own metrics and every serving
 *                     agent's, each sample labelled pid="N" and
 *                     program="name", families merged (one scrape target
 *                     per host), plus heapadmin_agent_up{pid,program,
 *                     user} (1: it answered, 0: it did not, or is gone)
 *   /metrics?pid=N    process N's alone, without pid, program or service
 *                     labels: the target /sd gives for it says them
 *                     (engine/hostmetrics.h ha_hostmetrics_collect_one)
 *   /sd               the targets for Prometheus' HTTP service discovery
 *                     (http/sd.h)
 *   ...?pid=N         on /debug/pprof/..., /pprof/... and /heap/...:
 *                     process N answers (its live profile, its dumps),
 *                     relayed as it answered; the gateway's own
 *                     accounts and roles apply (a live profile needs an
 *                     admin or a profile account), and the agent is told
 *                     only the role
 * In every process:
 *   /agent            what the gateway's stats_agents shows of it: pid,
 *                     program, user, started, endpoint, allocated,
 *                     resident (the host's figures)
 *
 * The gateway asks its agents from the worker thread (ha_task_offload),
 * all at once and within a deadline, so the loop never waits on an agent
 * and a stuck one costs a scrape its timeout, not the port.
 */
#ifndef HA_HTTP_GATEWAY_H
#define HA_HTTP_GATEWAY_H

#include <stdbool.h>

#include "http/request.h"

/* The merged /metrics (the gateway's route for it). */
void ha_gateway_metrics(struct ha_http_req *hr);

/* When hr carries pid=N for another process and this is a gateway:
 * answers it from process N and returns true; false otherwise (the
 * route serves it here). */
bool ha_gateway_proxy(struct ha_http_req *hr);

/* GET /agent. */
void ha_gateway_agent_info(struct ha_http_req *hr);

#endif /* HA_HTTP_GATEWAY_H */
