/* SPDX-License-Identifier: MIT
 *
 * Who may speak on an agent's HTTP socket without a password: the rule
 * a login applies to a peer of that socket (the registry socket a host
 * gateway asks, <dir>/<program>.<pid>.http, mode 0600), from what the
 * kernel says of the peer (SO_PEERCRED) and of this process, never from
 * what the peer says:
 *   - root (a host gateway runs as root): the role it speaks for, from
 *     its X-Heapadmin-Role header (admin, stats or profile; stats when
 *     absent or another word);
 *   - a process of this process's effective user: at most what the
 *     kernel would let it read of this process itself. Nothing when the
 *     process is not dumpable (PR_GET_DUMPABLE 0, as after a privilege
 *     drop or a set-user-ID exec: the kernel then denies that user its
 *     /proc/<pid>/maps and ptrace), else the stats role, whatever it
 *     asks;
 *   - anyone else: nothing.
 * A password (HTTP Basic) is checked as on any port instead, and gives
 * its account's role.
 */
#ifndef HA_AGENTROLE_H
#define HA_AGENTROLE_H

#include <stdbool.h>
#include <sys/types.h>

#include "engine/credentials.h"

/* The role of a password-less peer of uid peer_uid on the agent socket
 * of a process running as self_euid, dumpable or not, asking for role
 * asked (the header's value; NULL: none). Returns 0 with *role, or -1
 * with *why (a sentence for the 403 and the log). Pure. */
int ha_agentrole_decide(uid_t peer_uid, uid_t self_euid, bool dumpable,
                        const char *asked, enum ha_role *role,
                        const char **why);

/* Whether this process is dumpable now (prctl PR_GET_DUMPABLE). */
bool ha_agentrole_self_dumpable(void);

#endif /* HA_AGENTROLE_H */
