/* SPDX-License-Identifier: MIT
 *
 * The attach request's lines (see attachreq.h).
 */
#include "agent/attachreq.h"

#include <string.h>

bool
ha_agent_attachreq_get(const char *req, const char *name, char *out,
                       size_t len)
{
    size_t k = strlen(name);

    out[0] = '\0';
    for (const char *p = req; *p != '\0' && *p != '\n';) {
        size_t n = strcspn(p, "\n");

        if (n > k && p[k] == '=' && memcmp(p, name, k) == 0) {
            if (n - k - 1 >= len)
                return false;
            memcpy(out, p + k + 1, n - k - 1);
            out[n - k - 1] = '\0';
            return true;
        }
        p += n;
        if (*p == '\n')
            p++;
    }
    return false;
}

const char *
ha_agent_attachreq_body(const char *req)
{
    const char *p = req;

    for (;;) {
        if (*p == '\n')
            return p[1] != '\0' ? p + 1 : NULL;
        p = strchr(p, '\n');
        if (p == NULL)
            return NULL;
        p++;
    }
}
