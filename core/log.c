/* SPDX-License-Identifier: MIT
 *
 * Log sink: one line per event with a UTC timestamp (milliseconds) and the
 * level, written with a single write() so lines from a forked child or a
 * concurrent writer never interleave mid-line.
 */
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int log_fd = STDERR_FILENO;
static enum ha_log_level log_level = HA_LOG_INFO;

static const char *const level_names[HA_LOG_LEVEL_MAX] = {
    "error", "warn", "notice", "info", "debug",
};

int
ha_log_open_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);

    if (fd < 0)
        return -1;
    if (log_fd != STDERR_FILENO)
        close(log_fd);
    log_fd = fd;
    return 0;
}

void
ha_log_use_stderr(void)
{
    if (log_fd != STDERR_FILENO)
        close(log_fd);
    log_fd = STDERR_FILENO;
}

void
ha_log_set_level(enum ha_log_level level)
{
    log_level = level;
}

void
ha_log_close(void)
{
    ha_log_use_stderr();
}

void
ha_log(enum ha_log_level level, const char *fmt, ...)
{
    char line[2048];
    struct timeval tv;
    struct tm tm;
    size_t n;
    int m;
    va_list ap;
    int saved_errno = errno;

    if (level >= HA_LOG_LEVEL_MAX || level > log_level)
        return;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
    m = snprintf(line + n, sizeof(line) - n, ".%03dZ [%s] ",
                 (int)(tv.tv_usec / 1000), level_names[level]);
    if (m > 0)
        n += (size_t)m;
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    n += (size_t)m;
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2; /* truncated; still one whole line */
    line[n++] = '\n';
    /* Best effort: a log write failure has nowhere to be reported. */
    if (write(log_fd, line, n) < 0) {
    }
    errno = saved_errno;
}
