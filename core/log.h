/* SPDX-License-Identifier: MIT
 *
 * Log lines: "2026-11-21T01:02:03.123Z [info] text", handed to a sink.
 *
 * The sink is bound per thread, not per process, because the library runs
 * inside hosts and possibly as several instances: an instance binds its
 * sink on the thread that runs its event loop (its own thread, or the
 * host's thread in host-base mode) and around each public API call. A
 * thread with no sink bound logs nothing, so nothing ever reaches the
 * host's stdout or stderr by default.
 */
#ifndef HA_LOG_H
#define HA_LOG_H

#include <stddef.h>

enum ha_log_level {
    HA_LOG_ERROR,
    HA_LOG_WARN,
    HA_LOG_NOTICE,
    HA_LOG_INFO,
    HA_LOG_DEBUG,
    HA_LOG_LEVEL_MAX
};

struct ha_log_sink {
    /* One formatted line, no newline; errno is preserved around it. */
    void (*fn)(int level, const char *line, void *arg);
    void *arg;
    enum ha_log_level level;   /* most verbose level passed on */
};

/* Binds sink (which must outlive the binding; NULL = silent) to the
 * calling thread and returns the previous binding, for the caller to
 * restore. */
const struct ha_log_sink *ha_log_bind(const struct ha_log_sink *sink);

/* Writes line and a newline to fd with one write(), so lines from several
 * threads or a forked child never interleave mid-line. Best effort. */
void ha_log_write_fd(int fd, const char *line);

/* Writes the line's head, "2026-11-24T10:00:00.123Z [info] " (now, UTC),
 * into line (len bytes, at least 40) and returns its length. Takes no
 * lock (no glibc time conversion): safe in a fork child. */
size_t ha_log_prefix(char *line, size_t len, enum ha_log_level level);

void ha_log(enum ha_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define ha_log_error(...) ha_log(HA_LOG_ERROR, __VA_ARGS__)
#define ha_log_warn(...) ha_log(HA_LOG_WARN, __VA_ARGS__)
#define ha_log_notice(...) ha_log(HA_LOG_NOTICE, __VA_ARGS__)
#define ha_log_info(...) ha_log(HA_LOG_INFO, __VA_ARGS__)
#define ha_log_debug(...) ha_log(HA_LOG_DEBUG, __VA_ARGS__)

#endif /* HA_LOG_H */
