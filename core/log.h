/* SPDX-License-Identifier: MIT
 *
 * Log lines: "2026-11-21T01:02:03.123Z [info] text". One sink at a time:
 * stderr (foreground) or a file opened in append mode (daemon).
 */
#ifndef HA_LOG_H
#define HA_LOG_H

enum ha_log_level {
    HA_LOG_ERROR,
    HA_LOG_WARN,
    HA_LOG_NOTICE,
    HA_LOG_INFO,
    HA_LOG_DEBUG,
    HA_LOG_LEVEL_MAX
};

/* Sends log lines to path (append, created 0640). Returns 0, or -1 with
 * errno set; the previous sink stays in use on failure. */
int ha_log_open_file(const char *path);
/* Sends log lines to stderr (the default). */
void ha_log_use_stderr(void);
void ha_log_set_level(enum ha_log_level level);
void ha_log_close(void);
void ha_log(enum ha_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define ha_log_error(...) ha_log(HA_LOG_ERROR, __VA_ARGS__)
#define ha_log_warn(...) ha_log(HA_LOG_WARN, __VA_ARGS__)
#define ha_log_notice(...) ha_log(HA_LOG_NOTICE, __VA_ARGS__)
#define ha_log_info(...) ha_log(HA_LOG_INFO, __VA_ARGS__)
#define ha_log_debug(...) ha_log(HA_LOG_DEBUG, __VA_ARGS__)

#endif /* HA_LOG_H */
