/* SPDX-License-Identifier: MIT
 *
 * The agent socket's password-less roles (see agentrole.h).
 */
#include "engine/agentrole.h"

#include <string.h>
#include <sys/prctl.h>

int
ha_agentrole_decide(uid_t peer_uid, uid_t self_euid, bool dumpable,
                    const char *asked, enum ha_role *role, const char **why)
{
    if (peer_uid == 0) {
        *role = asked != NULL && strcmp(asked, "admin") == 0 ? HA_ROLE_ADMIN
                : asked != NULL && strcmp(asked, "profile") == 0
                    ? HA_ROLE_PROFILE
                    : HA_ROLE_STATS;
        return 0;
    }
    if (peer_uid != self_euid) {
        *why = "this socket answers a host gateway running as root, or "
               "this process's own user with the stats role; others need "
               "a password (HTTP Basic)";
        return -1;
    }
    if (!dumpable) {
        *why = "this process is not dumpable (it dropped privileges): "
               "the kernel denies its own user its memory, and so does "
               "this socket without a password (HTTP Basic)";
        return -1;
    }
    *role = HA_ROLE_STATS;
    return 0;
}

bool
ha_agentrole_self_dumpable(void)
{
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1;
}
