/* SPDX-License-Identifier: MIT
 *
 * What the agent does in a fork() child (pthread_atfork). The child
 * inherits the admin instance but not its thread, whose event loop, locks
 * and epoll descriptor are the parent's (epoll instances are shared
 * across fork: a DEL from the child would remove the parent's
 * registration). So the child never touches it: heapadmin_abandon()
 * closes only the listening sockets it proves are its own, and the rest
 * is leaked. Then, by policy:
 *
 *   follow       the child serves once the parent it was forked from has
 *                exited: the daemonizing fork (redis --daemonize yes) gets
 *                the endpoint, a child whose parent lives on (redis'
 *                BGSAVE, a helper) never does.
 *   per-process  every child serves on its own endpoint (its pid in the
 *                socket name), after the start delay: varnishd's cache
 *                process and nghttpx's workers hold the heap that matters.
 *   none         children never serve.
 */
#include "agent/agent.h"

#include <pthread.h>
#include <unistd.h>

static pid_t parent_at_fork;

static void
before_fork(void)
{
    parent_at_fork = getpid();
}

static void
in_child(void)
{
    ha_agent_forget_inherited();
    switch (ha_agent_fork_policy()) {
    case HA_AGENT_FORK_FOLLOW:
        ha_agent_launch(ha_agent_start_delay_ms(), true, parent_at_fork);
        break;
    case HA_AGENT_FORK_PER_PROCESS:
        ha_agent_launch(ha_agent_start_delay_ms(), false, 0);
        break;
    case HA_AGENT_FORK_NONE:
    case HA_AGENT_FORK_MAX:
        break;
    }
}

void
ha_agent_fork_init(void)
{
    (void)pthread_atfork(before_fork, NULL, in_child);
}
