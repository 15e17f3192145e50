/* SPDX-License-Identifier: MIT
 *
 * An instance's log (see log.h): the host's sink, none, or the errorlog
 * file; and heapadmin_log(), heapadmin_log_format(), heapadmin_log_path()
 * of the public API.
 */
#include "api/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/instance.h"
#include "core/log.h"
#include "core/util.h"
#include "include/heapadmin.h"

static void
file_sink(int level, const char *line, void *arg)
{
    struct heapadmin *h = arg;
    const char *lv;
    char buf[2200];

    (void)level;
    if (h->log_fd < 0)
        return;
    /* An agent's processes (a master's workers) share one errorlog as
     * they share HEAPADMIN_LOG (agent/log.c): each line says whose it
     * is, after its level ("... [info] [pid 1234] ..."). */
    if (h->agent_socket[0] != '\0' && (lv = strstr(line, "] ")) != NULL) {
        int head = (int)(lv - line) + 2;

        snprintf(buf, sizeof(buf), "%.*s[pid %ld] %s", head, line,
                 (long)getpid(), line + head);
        ha_log_write_fd(h->log_fd, buf);
        return;
    }
    ha_log_write_fd(h->log_fd, line);
}

int
ha_api_log_open(struct heapadmin *h, const struct heapadmin_options *o,
                char *err, size_t errlen)
{
    const char *el = h->cfg.errorlog;
    int n;

    if (el != NULL && *el != '\0')
        n = el[0] == '/'
                ? snprintf(h->log_path, sizeof(h->log_path), "%s", el)
                : snprintf(h->log_path, sizeof(h->log_path), "%s/%s",
                           h->datadir, el);
    else
        n = snprintf(h->log_path, sizeof(h->log_path), "%s/heapadmind.log",
                     h->datadir);
    if (n < 0 || (size_t)n >= sizeof(h->log_path)) {
        ha_err_set(err, errlen, "errorlog path too long");
        return -1;
    }
    h->sink.level = o->log_level > 0 && o->log_level < HA_LOG_LEVEL_MAX
                        ? (enum ha_log_level)o->log_level
                        : HA_LOG_INFO;
    if (o->log != NULL && o->log_name != NULL)
        ha_strlcpy(h->log_name, o->log_name, sizeof(h->log_name));
    if (o->no_log)
        return 0;
    if (o->log != NULL) {
        h->sink.fn = o->log;
        h->sink.arg = o->log_arg;
        return 0;
    }
    h->log_fd = open(h->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                     0640);
    if (h->log_fd < 0) {
        ha_err_set(err, errlen, "cannot open the log %s: %s", h->log_path,
                   strerror(errno));
        return -1;
    }
    {
        struct stat st;

        if (fstat(h->log_fd, &st) == 0) {
            h->log_dev = st.st_dev;
            h->log_ino = st.st_ino;
        }
    }
    h->sink.fn = file_sink;
    h->sink.arg = h;
    return 0;
}

void
heapadmin_log(struct heapadmin *h, int level, const char *fmt, ...)
{
    const struct ha_log_sink *prev;
    char line[2048];
    va_list ap;

    if (h == NULL || level < 0 || level >= HA_LOG_LEVEL_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    prev = ha_log_bind(&h->sink);
    ha_log((enum ha_log_level)level, "%s", line);
    ha_log_bind(prev);
}

size_t
heapadmin_log_format(char *out, size_t len, int level, const char *fmt, ...)
{
    size_t n;
    va_list ap;
    int m;

    if (out == NULL || len == 0)
        return 0;
    out[0] = '\0';
    if (len < 40)
        return 0;
    n = ha_log_prefix(out, len,
                      level >= 0 && level < HA_LOG_LEVEL_MAX
                          ? (enum ha_log_level)level
                          : HA_LOG_INFO);
    va_start(ap, fmt);
    m = vsnprintf(out + n, len - n, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += (size_t)m < len - n ? (size_t)m : len - n - 1;
    return n;
}

const char *
heapadmin_log_path(const struct heapadmin *h)
{
    return h->log_path;
}
