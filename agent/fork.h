/* SPDX-License-Identifier: MIT
 *
 * What the agent does around the host's fork() (fork.c): the policies,
 * the atfork handlers, and the count of forks children.c looks after.
 * It calls nothing above it: what a child does to serve comes in as
 * hooks from agent.c (launch.c and instance.c).
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
     * wait_parent, only once parent is gone (ha_agent_await_parent);
     * a child whose parent lives on never serves, its thread ends. */
    void (*launch)(unsigned delay_ms, bool wait_parent, pid_t parent);
};

/* HEAPADMIN_FORK=follow: how long past its start delay a fork child
 * waits for its parent to exit before it is known not to be served (a
 * daemonizing parent exits at once, but its exit handlers can take
 * seconds on a loaded machine; the wait costs no wake-up). */
#define HA_AGENT_FOLLOW_WAIT_MS 30000

/* In a fork child's agent thread: waits, with no timer (a pidfd the
 * kernel wakes it on; getppid() every 100 ms without one), until parent
 * (the process it was forked from) has exited, for at most delay_ms +
 * HA_AGENT_FOLLOW_WAIT_MS. True once it has (this process takes over);
 * false when it lives on (logged: the thread then ends, and the child
 * costs nothing more: a BGSAVE, nginx's workers). */
bool ha_agent_await_parent(pid_t parent, unsigned delay_ms);

/* Registers the pthread_atfork handlers, with what a child does (copied:
 * hooks need not outlive the call). */
void ha_agent_fork_init(const struct ha_agent_fork_hooks *hooks);

/* Forks this process made, counted by the atfork parent handler (which
 * may run on any of the host's threads: an atomic, nothing else). */
unsigned long ha_agent_forks(void);
void ha_agent_count_fork(void);

#endif /* HA_AGENT_FORK_H */
