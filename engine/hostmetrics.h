/* SPDX-License-Identifier: MIT
 *
 * A host gateway's exposition (heapadmind --gateway): its own metrics
 * and every agent's of its datadir as one text, for /metrics and for
 * SHOW PROMETHEUS METRICS alike.
 *
 * Nothing an agent says is copied through (core/exposcan.h): each
 * process's samples are parsed and re-emitted under the families of
 * engine/families.h, labelled with the pid, program and user the kernel
 * proves (core/agentreg.h), never the agent's own; an agent whose
 * program is not the one its socket's name claims is not asked. What is
 * refused is counted per process,
 *   heapadmin_gateway_refused_samples_total{pid,reason}
 * (reason: exposcan's, or "identity" for a process that is not what its
 * name says, one per scrape), and logged once per process. So whatever
 * one agent answers, the merged text passes `promtool check metrics` and
 * every other process's series are untouched.
 *
 *   heapadmin_agent_up{pid,program,user}   1 answered, 0 not (or gone,
 *                                          or its socket is missing);
 *                                          none for an entry the kernel
 *                                          says is not that pid's
 *   heapadmin_agents                       agents registered, gone ones
 *                                          included
 */
#ifndef HA_HOSTMETRICS_H
#define HA_HOSTMETRICS_H

#include <stddef.h>

#include "core/buf.h"
#include "core/expo.h"
#include "engine/pushcfg.h"

#define HA_HOSTMETRICS_MAX_SERIES 2000          /* per agent */
#define HA_HOSTMETRICS_MAX_BYTES (1u << 20)     /* per agent's answer */

struct ha_hostmetrics;

/* What the gateway keeps between scrapes: refusals per process. */
struct ha_hostmetrics *ha_hostmetrics_new(void);
void ha_hostmetrics_free(struct ha_hostmetrics *hm);

/* The host's exposition in fmt into out: own (this process's Prometheus
 * text, labelled pid = self_pid, program = self_program) and every
 * agent's of datadir, asked within timeout_ms. Runs on the worker
 * thread (ha_task_offload) from a task: the loop is never held. Returns
 * 0, or -1 with err (out of memory, the task stopped, an unreadable
 * datadir). */
int ha_hostmetrics_collect(struct ha_hostmetrics *hm, const char *datadir,
                           const char *own, size_t own_len, long self_pid,
                           const char *self_program, enum ha_expo_format fmt,
                           int timeout_ms, struct ha_buf *out, char *err,
                           size_t errlen);

/* One served process's exposition, for a scraper that found it through
 * the gateway's /sd (http/sd.h): process pid's samples under the same
 * policy, without pid, program or service labels (its target's labels
 * say them; an agent's own program or service_name label is dropped
 * when it agrees with the registry's program and its service under
 * services, n_services entries, and renamed exported_* when not).
 * Returns 0, -2 with err when no such process is served here now, or
 * -1 with err. Like ha_hostmetrics_collect, from a task. */
int ha_hostmetrics_collect_one(struct ha_hostmetrics *hm,
                               const char *datadir, long pid,
                               const struct ha_service_name *services,
                               size_t n_services, enum ha_expo_format fmt,
                               int timeout_ms, struct ha_buf *out, char *err,
                               size_t errlen);

#endif /* HA_HOSTMETRICS_H */
