/* SPDX-License-Identifier: MIT
 *
 * What a served process says of the children it starts (children.c),
 * and which programs are served at all: the rule both a child and its
 * parent apply.
 */
#ifndef HA_AGENT_CHILDREN_H
#define HA_AGENT_CHILDREN_H

#include <stdbool.h>

#include "agent/fork.h"

/* What children.c needs to know of this process. */
struct ha_agent_self {
    const char *program;       /* the registry's name for it */
    const char *so_path;       /* this agent's file, as mapped */
    unsigned long so_base;     /* where it is mapped here */
    const char *datadir;       /* the datadir (top) */
    const char *programs;      /* HEAPADMIN_PROGRAMS, "" if unset */
    enum ha_agent_fork fork;
    unsigned delay_ms;
};

/* Called every second on the admin thread: after this process forks,
 * looks at its children (twice: once they had time to exec, and once
 * their start delay has passed) and says once, in this process's log,
 * which are not served and why: AT_SECURE (the loader ignored
 * LD_PRELOAD), no jemalloc, not the served program, no directory for its
 * user, or a fork child under HEAPADMIN_FORK=follow. */
void ha_agent_children_tick(const struct ha_agent_self *self);

/* Whether a program name is a shell or launcher, which passes the agent
 * on to the program it starts and is never served itself. Pure. */
bool ha_agent_is_launcher(const char *program);

/* Whether program is in list (comma- or space-separated names, "*" for
 * every one). Pure. */
bool ha_agent_in_list(const char *list, const char *program);

#endif /* HA_AGENT_CHILDREN_H */
