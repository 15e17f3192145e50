/* SPDX-License-Identifier: MIT
 *
 * The agent's log: this process's instance's log once it serves, else
 * the file HEAPADMIN_LOG names (never stdout or stderr). The bottom of
 * the agent: every other file of it logs, and this one calls none of
 * them. Safe in a fork child (no glibc time conversion, no allocation).
 */
#ifndef HA_AGENT_LOG_H
#define HA_AGENT_LOG_H

#include <stdbool.h>
#include <stddef.h>

struct heapadmin;

/* The constructor: HEAPADMIN_LOG's path ("" or NULL: none). Opens
 * nothing yet (the host may close every descriptor at start-up). */
void ha_agent_log_init(const char *path);

/* The file written instead when HEAPADMIN_LOG cannot be opened (another
 * user's, after a privilege drop): <dir>/agent.log. */
void ha_agent_log_fallback(const char *dir);

/* From now on, lines go through instance h's log, in this process only
 * (a fork child inherits h without its thread); NULL: no instance, the
 * file again. */
void ha_agent_log_serving(struct heapadmin *h);

/* In a fork child: forgets the parent's instance, and closes the
 * parent's log descriptor while it is still that file (when the number
 * is the host's now, it is left alone). */
void ha_agent_log_forget_inherited(void);

/* The instance's sink (heapadmin_options.log) when HEAPADMIN_LOG is
 * set: one formatted line, tagged with this process's pid after its
 * level, appended to the file; the file reopened when the host closed
 * or replaced its descriptor. */
void ha_agent_log_sink(int level, const char *line, void *arg);

/* Logs at level (heapadmin_log's levels) with "agent: " before it. */
void ha_agent_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A constructor's message: kept (up to 8) until ha_agent_log_flush(),
 * once there is a log to write it to. */
void ha_agent_log_later(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ha_agent_log_flush(void);

/* snprintf that says whether all of it fit (false: cut). */
bool ha_agent_fmt(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* HA_AGENT_LOG_H */
