/* SPDX-License-Identifier: MIT
 *
 * User names without the name service on the agent's threads: NSS's
 * lock, held by another thread at a fork, hangs a child's lookup for
 * ever. The names are learnt once, in the constructor (before any thread
 * of the agent's, and before the host can fork).
 */
#ifndef HA_AGENT_USERS_H
#define HA_AGENT_USERS_H

#include <stdbool.h>
#include <stddef.h>

/* Constructor only (one thread, before the host runs): learns, through
 * NSS, the names of the process's own users and of those in list
 * (HEAPADMIN_USERS: comma- or space-separated names; up to 16 users). */
void ha_agent_users_learn(const char *list);

/* The name of uid into out: as the constructor learnt it, else from
 * /etc/passwd itself (never NSS); its number when unknown (false).
 * Safe on the agent's threads. */
bool ha_agent_user_name(long uid, char *out, size_t len);

#endif /* HA_AGENT_USERS_H */
