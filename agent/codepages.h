/* SPDX-License-Identifier: MIT
 *
 * The agent's own code pages, given back to the page cache once the
 * agent is quiet (codepages.c).
 */
#ifndef HA_AGENT_CODEPAGES_H
#define HA_AGENT_CODEPAGES_H

/* Finds the read-only segments of the agent's file mapped at so_base.
 * In the constructor only (dl_iterate_phdr takes the loader's lock,
 * which a heapadmin thread must never hold while the host may fork). */
void ha_agent_code_find(unsigned long so_base);

/* At each tick of the admin thread: drops those pages from this
 * process's resident set once the work that faulted them in is over
 * (they stay in the page cache, shared). Returns 1 when it dropped them
 * (the agent was busy and is quiet now), else 0. */
int ha_agent_code_tick(void);

/* Drops them now. */
void ha_agent_code_drop(void);

#endif /* HA_AGENT_CODEPAGES_H */
