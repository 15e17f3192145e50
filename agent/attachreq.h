/* SPDX-License-Identifier: MIT
 *
 * The request heapadmin-attach hands the agent it loads into a running
 * process (heapadmin_agent_attach), whose environment the agent cannot
 * read its settings from: the tool writes the settings it was given as
 * the environment's names, one "NAME=value" line each, then an empty
 * line, then the config file's text (which the tool read: a root-only
 * file is readable to it, not to a worker that dropped privileges).
 *
 *   HEAPADMIN_DATADIR=/var/lib/heapadmin
 *   HEAPADMIN_CONF=/etc/heapadmin/agent.cnf
 *
 *   admin_variables = { ... }
 *
 * Pure: the text is the tool's, parsed without trusting it further than
 * its bounds (a value longer than the caller's buffer is not found).
 */
#ifndef HA_AGENT_ATTACHREQ_H
#define HA_AGENT_ATTACHREQ_H

#include <stdbool.h>
#include <stddef.h>

/* The value of NAME among the request's lines before the empty line,
 * into out (len bytes). Returns false, out "", when absent or too
 * long. */
bool ha_agent_attachreq_get(const char *req, const char *name, char *out,
                            size_t len);

/* The config text after the empty line, or NULL when there is none (no
 * empty line, or nothing after it). */
const char *ha_agent_attachreq_body(const char *req);

#endif /* HA_AGENT_ATTACHREQ_H */
