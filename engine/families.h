/* SPDX-License-Identifier: MIT
 *
 * heapadmin's Prometheus families: the fixed list a host gateway accepts
 * from its agents (core/exposcan.h), with the type, label names and HELP
 * it announces them with. Every family engine/metrics.c and
 * heap/metrics.c write is here (test/check_core.c compares the list with
 * a live exposition: a new family fails the test until it is listed);
 * the gateway's own (heapadmin_agent_up, heapadmin_agents,
 * heapadmin_gateway_refused_samples_total) are not: no agent may send
 * them.
 */
#ifndef HA_FAMILIES_H
#define HA_FAMILIES_H

#include <stddef.h>

#include "core/exposcan.h"

extern const struct ha_exposcan_rule ha_families[];
extern const size_t ha_families_n;

#endif /* HA_FAMILIES_H */
