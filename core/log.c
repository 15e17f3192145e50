/* SPDX-License-Identifier: MIT
 *
 * Log lines with a UTC timestamp (milliseconds) and the level, formatted
 * here and handed to the sink bound to the calling thread (log.h).
 */
#include "core/log.h"
#include "core/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Thread_local const struct ha_log_sink *thread_sink;

static const char *const level_names[HA_LOG_LEVEL_MAX] = {
    "error", "warn", "notice", "info", "debug",
};

const struct ha_log_sink *
ha_log_bind(const struct ha_log_sink *sink)
{
    const struct ha_log_sink *prev = thread_sink;

    thread_sink = sink;
    return prev;
}

void
ha_log_write_fd(int fd, const char *line)
{
    char buf[2100];
    size_t n = strlen(line);

    if (n > sizeof(buf) - 1)
        n = sizeof(buf) - 1;
    memcpy(buf, line, n);
    buf[n++] = '\n';
    /* Best effort: a log write failure has nowhere to be reported. */
    if (write(fd, buf, n) < 0) {
    }
}

size_t
ha_log_prefix(char *line, size_t len, enum ha_log_level level)
{
    struct timespec now;
    size_t n;
    int m;

    clock_gettime(CLOCK_REALTIME, &now);
    n = (size_t)ha_utc_stamp(line, len, now.tv_sec, 'T');
    m = snprintf(line + n, len - n, ".%03dZ [%s] ",
                 (int)(now.tv_nsec / 1000000),
                 level < HA_LOG_LEVEL_MAX ? level_names[level] : "info");
    if (m > 0)
        n += (size_t)m < len - n ? (size_t)m : len - n - 1;
    return n;
}

void
ha_log(enum ha_log_level level, const char *fmt, ...)
{
    const struct ha_log_sink *sink = thread_sink;
    char line[2048];
    size_t n;
    int m;
    va_list ap;
    int saved_errno;

    if (sink == NULL || sink->fn == NULL || level >= HA_LOG_LEVEL_MAX ||
        level > sink->level)
        return;
    saved_errno = errno;
    n = ha_log_prefix(line, sizeof(line), level);
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    (void)m; /* truncated lines stay one whole line */
    sink->fn((int)level, line, sink->arg);
    errno = saved_errno;
}
