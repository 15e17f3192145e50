/* SPDX-License-Identifier: MIT
 *
 * How this process came to be served, when that was not at its start:
 * the LD_PRELOAD agent loaded later by heapadmin-attach records when,
 * and which of the process's children were forked before (they never
 * got the agent and are not served). The HTTP front-end's /agent answer
 * carries it to a host gateway, whose stats_agents says so in its
 * detail column. Process-wide, as what it describes is; set from the
 * agent's threads, read from the admin thread's. Atomics, no lock: a
 * host may fork at any moment, and a reader racing a writer sees a
 * list of the old and new pids, each of them real (it is a note).
 */
#ifndef HA_AGENTNOTE_H
#define HA_AGENTNOTE_H

#include <stddef.h>
#include <stdint.h>

#define HA_AGENTNOTE_CHILDREN_MAX 64

/* Marks this process as attached at when (Unix seconds, > 0). */
void ha_agentnote_set_attached(int64_t when);

/* When this process was attached, or 0 when it was served from its
 * start. */
int64_t ha_agentnote_attached(void);

/* The children forked before the attach that still live (pids, n of
 * them; at most HA_AGENTNOTE_CHILDREN_MAX kept, and *more tells how many
 * did not fit). */
void ha_agentnote_set_unserved(const long *pids, size_t n, size_t more);

/* Copies them into pids (max of them); returns how many, with *more the
 * count left out. */
size_t ha_agentnote_unserved(long *pids, size_t max, size_t *more);

#endif /* HA_AGENTNOTE_H */
