/* SPDX-License-Identifier: MIT
 *
 * The admin thread's stack, given back below where it runs (stacktrim.c).
 */
#ifndef HA_AGENT_STACKTRIM_H
#define HA_AGENT_STACKTRIM_H

/* Drops the pages of the calling thread's stack more than 16 KiB below
 * the caller's frame from the process's resident set. Only on a thread
 * of the agent's own, from a frame near the bottom of its calls (a
 * timer callback of its event loop): what lies below is no frame's. */
void ha_agent_stack_trim(void);

#endif /* HA_AGENT_STACKTRIM_H */
