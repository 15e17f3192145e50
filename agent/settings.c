/* SPDX-License-Identifier: MIT
 *
 * The agent's settings, in one place below all its start-up files: they
 * are read once, before the host runs (or from heapadmin-attach's
 * request), and every later step must see the same values, including a
 * fork child's agent, which inherits them. What each HEAPADMIN_*
 * variable means is at the top of agent.c.
 */
#include "agent/agent_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "agent/attachreq.h"

struct ha_agent_settings ha_agent_settings;

/* While heapadmin_agent_attach() runs: its request, read instead of
 * the environment (an attached process's is its own). */
const char *ha_agent_attach_req;

/* A setting: the environment's variable, or the attach request's line
 * of that name (buf, len bytes, holds it then). NULL when unset. */
const char *
ha_agent_setting(const char *name, char *buf, size_t len)
{
    if (ha_agent_attach_req != NULL)
        return ha_agent_attachreq_get(ha_agent_attach_req, name, buf, len)
                   ? buf
                   : NULL;
    return getenv(name);
}

void
ha_agent_copy_env(char *dst, size_t len, const char *name)
{
    char buf[PATH_MAX];
    const char *v = ha_agent_setting(name, buf, sizeof(buf));

    dst[0] = '\0';
    if (v != NULL && strlen(v) < len)
        memcpy(dst, v, strlen(v) + 1);
}
