/* SPDX-License-Identifier: MIT
 *
 * Talking to the agents of a datadir (core/agentreg.h): one HTTP/1.0
 * request per connection over each agent's registry socket (the agent
 * closes after its reply), to many agents at once, with blocking I/O
 * under one deadline. Each connection is believed only once SO_PEERCRED
 * shows the process and user the registry promises
 * (ha_agentreg_connect), before a byte is sent. Callers run it on a
 * worker thread (core/task.h ha_task_offload), never on an event loop.
 */
#ifndef HA_AGENTHTTP_H
#define HA_AGENTHTTP_H

#include <stddef.h>
#include <sys/types.h>

#include "core/agentreg.h"
#include "core/buf.h"

/* One agent's answer to ha_agenthttp_get. */
struct ha_agent_reply {
    int status;                 /* HTTP status; 0: no answer (err) */
    char content_type[128];     /* "" when none */
    char content_disposition[160];
    int retry_after_s;          /* Retry-After in seconds (RFC 9110
                                   10.2.3, the delay form only), 0..3600;
                                   -1: none, or not such a number */
    struct ha_buf body;         /* the body (the caller frees it) */
    char err[256];
    bool too_large;             /* the answer passed max_body */
};

/* Sends "GET target" (HTTP/1.0, headers appended: "Name: value\r\n"
 * lines, may be NULL; body for a POST when not NULL) to each of the n
 * agents at once and reads their answers, all within timeout_ms; a body
 * over max_body bytes fails that agent. replies[i] is agent i's. Agents
 * not serving are not asked (status 0, err says why). Blocks: a worker
 * thread's job. */
void ha_agenthttp_get(const struct ha_agent *agents, size_t n,
                     const char *method, const char *target,
                     const char *headers, const struct ha_buf *body,
                     int timeout_ms, size_t max_body,
                     struct ha_agent_reply *replies);

/* Frees the bodies of n replies. */
void ha_agenthttp_replies_free(struct ha_agent_reply *replies, size_t n);

/* The agents of a datadir, each with its answer to one request
 * (ha_agenthttp_fan). */
struct ha_agent_fan {
    struct ha_agent *agents;        /* as ha_agentreg_list lists them */
    struct ha_agent_reply *replies; /* replies[i]: agents[i]'s answer */
    size_t n;
};

/* Lists the agents of datadir (ha_agentreg_list) and sends each one
 * "method target" at once (ha_agenthttp_get: body when not NULL, within
 * timeout_ms, max_body bytes each) with the headers
 *     X-Heapadmin-Role: <role>   what the gateway's caller may do there
 *                                (admin, stats or profile;
 *                                engine/agentrole.h)
 *     Accept: text/plain         Prometheus text, not OpenMetrics
 * only: 0 asks every agent listed; a pid asks that process's entry
 * alone (its serving one when the registry has more than one of that
 * pid, as after a stale entry in another user's directory): n is then
 * 0 or 1. *fan is set in every case; ha_agenthttp_fan_free frees it.
 * Returns 0, or -1 with err (an unreadable datadir, out of memory).
 * Blocks: a worker thread's job. */
int ha_agenthttp_fan(const char *datadir, pid_t only, const char *role,
                     const char *method, const char *target,
                     const struct ha_buf *body, int timeout_ms,
                     size_t max_body, struct ha_agent_fan *fan, char *err,
                     size_t errlen);

/* Frees what ha_agenthttp_fan set, and zeroes *fan. */
void ha_agenthttp_fan_free(struct ha_agent_fan *fan);

#endif /* HA_AGENTHTTP_H */
