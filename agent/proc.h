/* SPDX-License-Identifier: MIT
 *
 * What /proc says of another process, as the agent's threads may ask it:
 * no allocation, no lock of the C library's.
 */
#ifndef HA_AGENT_PROC_H
#define HA_AGENT_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* True when a thread of pid is named name (its comm, at most 15
 * characters). "heapadmin" marks a process the agent serves or is about
 * to: its start-up thread has that name from the constructor on.
 * /proc/<pid>/task/<tid>/comm is readable for any process, whatever its
 * user. */
bool ha_agent_proc_has_thread(pid_t pid, const char *name);

#endif /* HA_AGENT_PROC_H */
