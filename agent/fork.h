/* SPDX-License-Identifier: MIT
 *
 * What the agent does around the host's fork() (fork.c): the policies,
 * the atfork handlers, and the count of forks children.c looks after.
 * It calls nothing above it: what a child does to serve comes in as
 * hooks from agent.c.
 */
#ifndef HA_AGENT_FORK_H
#define HA_AGENT_FORK_H

#include <stdbool.h>
#include <sys/types.h>

enum ha_agent_fork {
    HA_AGENT_FORK_FOLLOW,      /* a daemonizing parent's surviving child */
    HA_AGENT_FORK_PER_PROCESS, /* every process its own endpoint */
    HA_AGENT_FORK_NONE,        /* children never serve */
    HA_AGENT_FORK_MAX
};

/* What a fork child is told to do, fixed in the constructor. */
struct ha_agent_fork_hooks {
    enum ha_agent_fork policy;  /* HEAPADMIN_FORK */
    unsigned delay_ms;          /* the start delay */
    /* Forgets the instance inherited from the parent: its thread does
     * not exist in the child. */
    void (*forget_inherited)(void);
    /* Starts serving from this process after delay_ms; with
     * wait_parent, only once parent is gone (getppid() changes). */
    void (*launch)(unsigned delay_ms, bool wait_parent, pid_t parent);
};

/* Registers the pthread_atfork handlers, with what a child does (copied:
 * hooks need not outlive the call). */
void ha_agent_fork_init(const struct ha_agent_fork_hooks *hooks);

/* Forks this process made, counted by the atfork parent handler (which
 * may run on any of the host's threads: an atomic, nothing else). */
unsigned long ha_agent_forks(void);
void ha_agent_count_fork(void);

#endif /* HA_AGENT_FORK_H */
