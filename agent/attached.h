/* SPDX-License-Identifier: MIT
 *
 * The agent loaded into a process that was already running, by
 * heapadmin-attach, rather than with it (LD_PRELOAD): how it tells the
 * two apart, and what it records of the process as it found it.
 */
#ifndef HA_AGENT_ATTACHED_H
#define HA_AGENT_ATTACHED_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the loader mapped the object that holds self (a function of
 * the agent's) at the process's start, from LD_PRELOAD or
 * /etc/ld.so.preload: preloaded objects come before the C library in
 * the link map, one dlopen()ed later comes after it. */
bool ha_agent_preloaded(void *self);

/* At the attach, on the host's thread that heapadmin-attach holds: the
 * time, and this process's children now (forked before the agent was
 * there: they never get it). Reads /proc only; allocates nothing. */
void ha_agent_attached_begin(void);

/* Every second on the admin thread: which of those children live on,
 * for the /agent answer (core/agentnote.h), and a line in the log the
 * first time. */
void ha_agent_attached_tick(void);

/* The entry heapadmin-attach calls after dlopen() (agent.c; exported,
 * unlike any other function of the agent's). */
int heapadmin_agent_attach(const char *request, char *msg, size_t msglen);

#endif /* HA_AGENT_ATTACHED_H */
