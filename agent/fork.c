/* SPDX-License-Identifier: MIT
 *
 * What the agent does in a fork() child (pthread_atfork). The child
 * inherits the admin instance but not its thread, whose event loop, locks
 * and epoll descriptor are the parent's (epoll instances are shared
 * across fork: a DEL from the child would remove the parent's
 * registration). So the child never touches it: heapadmin_abandon()
 * closes only the descriptors it proves are its own (listeners, the
 * loop's epoll and pipe, the log), and the rest is leaked. Then, by
 * policy:
 *
 *   follow       the child serves once the parent it was forked from has
 *                exited: the daemonizing fork (redis --daemonize yes) gets
 *                the endpoint, a child whose parent lives on (redis'
 *                BGSAVE, a helper) never does.
 *   per-process  every child serves on its own endpoint (its pid in the
 *                socket name), after the start delay: varnishd's cache
 *                process, nghttpx's and nginx's workers hold the heap
 *                that matters.
 *   none         children never serve.
 *
 * The parent only counts its forks (children.c looks at the children
 * later, from the admin thread): the handler runs on whichever of the
 * host's threads forked.
 */
#include "agent/fork.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <unistd.h>

#include "agent/log.h"
#include "include/heapadmin.h"

static struct ha_agent_fork_hooks hooks;
static pid_t parent_at_fork;
static _Atomic unsigned long forks;

/* The fork waits until no thread of the agent's holds a lock the child
 * needs (heapadmin_fork_prepare: SQLite's, the C library's), so the
 * child never inherits one held by a thread it does not have: nginx
 * forks its workers, and daemonizes, while the agent's thread is
 * starting. */
static void
before_fork(void)
{
    parent_at_fork = getpid();
    (void)heapadmin_fork_prepare();
}

static void
in_parent(void)
{
    heapadmin_fork_parent();
    atomic_fetch_add(&forks, 1);
}

static void
in_child(void)
{
    bool usable = heapadmin_fork_child() != 0;

    hooks.forget_inherited();
    if (!usable && hooks.policy != HA_AGENT_FORK_NONE) {
        ha_agent_log(1, "not served: forked while a thread of the "
                        "parent's agent was inside a call that holds a "
                        "lock the child would need (SQLite's, the C "
                        "library's) for over a second; a later fork "
                        "child is served as usual");
        return;
    }
    switch (hooks.policy) {
    case HA_AGENT_FORK_FOLLOW:
        hooks.launch(hooks.delay_ms, true, parent_at_fork);
        break;
    case HA_AGENT_FORK_PER_PROCESS:
        hooks.launch(hooks.delay_ms, false, 0);
        break;
    case HA_AGENT_FORK_NONE:
    case HA_AGENT_FORK_MAX:
        break;
    }
}

unsigned long
ha_agent_forks(void)
{
    return atomic_load(&forks);
}

void
ha_agent_count_fork(void)
{
    atomic_fetch_add(&forks, 1);
}

void
ha_agent_fork_init(const struct ha_agent_fork_hooks *h)
{
    hooks = *h;
    (void)pthread_atfork(before_fork, in_parent, in_child);
}
