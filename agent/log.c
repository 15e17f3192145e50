/* SPDX-License-Identifier: MIT
 *
 * The agent's log (see log.h). Several processes (a master's workers)
 * may share one file: each line says whose it is. The descriptor is
 * known by its identity, not its number: a host that closes every
 * descriptor may reuse the number for a file of its own, which is then
 * never written to nor closed.
 */
#include "agent/log.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "include/heapadmin.h"

#define PENDING_MAX 8          /* constructor messages kept for the log */

static char log_path[PATH_MAX];     /* HEAPADMIN_LOG, "" if none */
static char fallback_log[PATH_MAX]; /* HEAPADMIN_LOG could not be opened
                                       (another user's): <dir>/agent.log */
static int log_fd = -1;
static dev_t log_dev;               /* the log file's identity */
static ino_t log_ino;

/* The instance serving this process, and the process it belongs to (a
 * fork child inherits both values but not the thread behind them). */
static _Atomic(struct heapadmin *) serving;
static _Atomic pid_t serving_pid;

/* Messages of the constructor, logged once the log exists. */
static struct {
    int level;
    char text[400];
} pending[PENDING_MAX];
static int n_pending;

void
ha_agent_log_init(const char *path)
{
    log_path[0] = '\0';
    if (path != NULL && strlen(path) < sizeof(log_path))
        memcpy(log_path, path, strlen(path) + 1);
}

void
ha_agent_log_fallback(const char *dir)
{
    ha_agent_fmt(fallback_log, sizeof(fallback_log), "%s/agent.log", dir);
}

void
ha_agent_log_serving(struct heapadmin *h)
{
    atomic_store(&serving_pid, getpid());
    atomic_store(&serving, h);
}

void
ha_agent_log_forget_inherited(void)
{
    struct stat st;

    atomic_store(&serving, NULL);
    if (log_fd >= 0 && fstat(log_fd, &st) == 0 && st.st_dev == log_dev &&
        st.st_ino == log_ino)
        close(log_fd);
    log_fd = -1;
}

static void
open_log(void)
{
    struct stat st;

    if (log_fd >= 0 || log_path[0] == '\0')
        return;
    log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    /* Another user's file (a worker after its privilege drop): its own
     * directory's log instead. */
    if (log_fd < 0 && fallback_log[0] != '\0')
        log_fd = open(fallback_log,
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
                      0600);
    if (log_fd >= 0 && fstat(log_fd, &st) == 0) {
        log_dev = st.st_dev;
        log_ino = st.st_ino;
    } else if (log_fd >= 0) {
        close(log_fd);
        log_fd = -1;
    }
}

void
ha_agent_log_sink(int level, const char *line, void *arg)
{
    char buf[2100];
    size_t n = strlen(line);
    struct stat st;

    (void)level;
    (void)arg;
    if (log_fd >= 0 && (fstat(log_fd, &st) != 0 || st.st_dev != log_dev ||
                        st.st_ino != log_ino))
        log_fd = -1; /* not ours any more: never write to it, never close */
    if (log_fd < 0)
        open_log();
    if (log_fd < 0)
        return;
    /* Several processes (a master's workers) share one log: each line
     * says whose it is, after its level ("... [info] [pid 1234] ..."). */
    {
        const char *lv = strstr(line, "] ");
        size_t head = lv != NULL ? (size_t)(lv - line) + 2 : 0, k;
        char tag[32];

        k = (size_t)snprintf(tag, sizeof(tag), "[pid %ld] ", (long)getpid());
        if (head + k + n - head > sizeof(buf) - 1)
            n = sizeof(buf) - 1 - k;
        memcpy(buf, line, head);
        memcpy(buf + head, tag, k);
        memcpy(buf + head + k, line + head, n - head);
        n += k;
    }
    buf[n++] = '\n';
    if (write(log_fd, buf, n) < 0) {
    }
}

void
ha_agent_log(int level, const char *fmt, ...)
{
    struct heapadmin *h = atomic_load(&serving);
    char text[1024], line[1200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (h != NULL && atomic_load(&serving_pid) == getpid()) {
        heapadmin_log(h, level, "agent: %s", text);
        return;
    }
    if (log_path[0] == '\0')
        return;
    /* No glibc time conversion: this runs in fork children too, which
     * may inherit its lock held. */
    (void)heapadmin_log_format(line, sizeof(line), level, "agent: %s", text);
    ha_agent_log_sink(level, line, NULL);
}

void
ha_agent_log_later(int level, const char *fmt, ...)
{
    va_list ap;

    if (n_pending >= PENDING_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(pending[n_pending].text, sizeof(pending[n_pending].text), fmt,
              ap);
    va_end(ap);
    pending[n_pending++].level = level;
}

void
ha_agent_log_flush(void)
{
    for (int i = 0; i < n_pending; i++)
        ha_agent_log(pending[i].level, "%s", pending[i].text);
    n_pending = 0;
}

bool
ha_agent_fmt(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
}
