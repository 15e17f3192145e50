/* SPDX-License-Identifier: MIT
 *
 * The effective configuration shown to people, passwords masked: one log
 * line per setting at start-up (ha_config_log), and the admin-* rows of
 * global_variables (ha_config_admin_value).
 */
#include "engine/config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/credentials.h"
#include "core/log.h"
#include "core/util.h"

#define ADMIN HA_CONFIG_ADMIN
#define JEMALLOC HA_CONFIG_JEMALLOC

/* ------------------------------------------------------------------------
 * Logging
 * --------------------------------------------------------------------- */

static const char *
tri_name(int v)
{
    return v == HA_UNSET ? "unset (jemalloc default)" : v ? "true" : "false";
}

static void
log_credentials(const char *key, const char *spec)
{
    size_t cap;
    char *masked;

    if (spec == NULL) {
        ha_log_info("config: " ADMIN ".%s = (none)", key);
        return;
    }
    /* Each item "u:p" becomes "u:****": at most 4 more bytes per item,
     * and there are fewer items than bytes. */
    cap = strlen(spec) * 5 + 5;
    masked = malloc(cap);
    if (masked == NULL) {
        ha_log_info("config: " ADMIN ".%s = (masked)", key);
        return;
    }
    ha_credentials_mask(spec, masked, cap);
    ha_log_info("config: " ADMIN ".%s = \"%s\"", key, masked);
    free(masked);
}

void
ha_config_log(const struct ha_config *cfg, const char *log_elsewhere)
{
    const struct ha_jemalloc_config *j = &cfg->jemalloc;

    ha_log_info("config: loaded from %s",
                cfg->path != NULL ? cfg->path : "(built-in defaults)");
    ha_log_info("config: datadir = \"%s\"",
                cfg->datadir != NULL ? cfg->datadir : ".");
    if (log_elsewhere != NULL)
        ha_log_info("config: errorlog not used: lines go to %s",
                    log_elsewhere);
    else if (cfg->errorlog != NULL)
        ha_log_info("config: errorlog = \"%s\"", cfg->errorlog);
    else
        ha_log_info("config: errorlog = <datadir>/heapadmind.log (default)");
    log_credentials("admin_credentials", cfg->admin_credentials);
    log_credentials("stats_credentials", cfg->stats_credentials);
    if (cfg->profile_credentials != NULL && cfg->profile_credentials[0])
        log_credentials("profile_credentials", cfg->profile_credentials);
    ha_log_info("config: " ADMIN ".mysql_ifaces = \"%s\" (%zu listener%s)",
                cfg->mysql_ifaces != NULL ? cfg->mysql_ifaces : "",
                cfg->n_ifaces, cfg->n_ifaces == 1 ? "" : "s");
    if (cfg->n_http > 0)
        ha_log_info("config: " ADMIN ".http_ifaces = \"%s\" (%zu "
                    "listener%s), http_max_connections = %d, "
                    "http_max_per_peer = %d, http_timeout = %d s, "
                    "http_header_timeout = %d s, http_tls = %s",
                    cfg->http_ifaces, cfg->n_http, cfg->n_http == 1 ? "" : "s",
                    cfg->http_max_connections, cfg->http_max_per_peer,
                    cfg->http_timeout, cfg->http_header_timeout,
                    cfg->http_tls ? "true (HTTPS)" : "false");
    else
        ha_log_info("config: " ADMIN ".http_ifaces = \"\" (HTTP off)");
    ha_log_info("config: " ADMIN ".max_connections = %d, connect_timeout = "
                "%d s, wait_timeout = %d s, net_write_timeout = %d s, "
                "max_allowed_packet = %d, max_output_buffer = %d",
                cfg->max_connections, cfg->connect_timeout,
                cfg->wait_timeout, cfg->net_write_timeout,
                cfg->max_allowed_packet, cfg->max_output_buffer);
    ha_log_info("config: " ADMIN ".max_pending_logins = %d, "
                "max_pending_logins_per_host = %d",
                cfg->max_pending_logins, cfg->max_pending_logins_per_host);
    ha_log_info("config: " ADMIN ".max_execution_time = %d ms, "
                "disk_timeout_ms = %d (0: no limit)",
                cfg->max_execution_time, cfg->disk_timeout_ms);
    if (cfg->n_services > 0)
        ha_log_info("config: " ADMIN ".service_names = \"%s\"",
                    cfg->service_names);
    if (cfg->n_push > 0) {
        char masked[4096];

        ha_pushcfg_mask(cfg->push_targets, masked, sizeof(masked));
        ha_log_info("config: " ADMIN ".push_targets = \"%s\" (%zu "
                    "target%s), push_outbox_max_bytes = %lld, "
                    "push_timeout_s = %d, push_retry_max_s = %d, "
                    "push_live_interval_s = %d (0: none)",
                    masked, cfg->n_push, cfg->n_push == 1 ? "" : "s",
                    cfg->push_outbox_max_bytes, cfg->push_timeout_s,
                    cfg->push_retry_max_s, cfg->push_live_interval_s);
    }
    ha_log_info("config: " JEMALLOC ".prof_active = %s",
                tri_name(j->prof_active));
    if (j->lg_prof_sample == HA_UNSET)
        ha_log_info("config: " JEMALLOC ".lg_prof_sample = %s",
                    tri_name(HA_UNSET));
    else
        ha_log_info("config: " JEMALLOC ".lg_prof_sample = %d",
                    j->lg_prof_sample);
    if (j->lg_prof_interval == HA_LG_INTERVAL_UNSET)
        ha_log_info("config: " JEMALLOC ".lg_prof_interval = %s",
                    tri_name(HA_UNSET));
    else
        ha_log_info("config: " JEMALLOC ".lg_prof_interval = %d",
                    j->lg_prof_interval);
    ha_log_info("config: " JEMALLOC ".prof_gdump = %s",
                tri_name(j->prof_gdump));
    ha_log_info("config: " JEMALLOC ".prof_final = %s",
                tri_name(j->prof_final));
    ha_log_info("config: " JEMALLOC ".prof_leak = %s", tri_name(j->prof_leak));
    ha_log_info("config: " JEMALLOC ".prof_accum = %s",
                tri_name(j->prof_accum));
    ha_log_info("config: " JEMALLOC ".lg_prof_sample_min = %d, "
                "stats_max_age_ms = %d, dump_symbolized = %s",
                j->lg_prof_sample_min, j->stats_max_age_ms,
                j->dump_symbolized ? "true" : "false");
    ha_log_info("config: " JEMALLOC ".dump_prefix = \"%s\"", j->dump_prefix);
    ha_log_info("config: " JEMALLOC ".debug_root = \"%s\" (then "
                "/usr/lib/debug), debuginfod = %s, debuginfod_urls = "
                "\"%s\"%s, debuginfod_timeout_ms = %d",
                j->debug_root, j->debuginfod ? "true" : "false",
                j->debuginfod_urls,
                j->debuginfod_urls[0] ? "" : " (the environment's)",
                j->debuginfod_timeout_ms);
    ha_log_info("config: " JEMALLOC ".alloc_wrappers = \"%s\" (\"\": the "
                "built-in list and detection alone)",
                j->alloc_wrappers);
    ha_log_info("config: " JEMALLOC ".dump_retention_count = %lld, "
                "dump_retention_bytes = %lld, dump_min_free_bytes = %lld, "
                "dump_interval_s = %lld, dump_resident_bytes = %lld "
                "(0: off)",
                j->dump_retention_count, j->dump_retention_bytes,
                j->dump_min_free_bytes, j->dump_interval_s,
                j->dump_resident_bytes);
    ha_log_info("config: " JEMALLOC ".dirty_decay_ms = %lld, "
                "muzzy_decay_ms = %lld (-2: jemalloc's own)",
                j->dirty_decay_ms, j->muzzy_decay_ms);
    ha_log_info("config: " JEMALLOC ".leak_watch_growth_bytes = %lld "
                "(0: off), leak_watch_window_s = %lld, "
                "leak_watch_dump_interval_s = %lld, leak_watch_dumps = %lld, "
                "leak_watch_lg_prof_sample = %d (-1: the current rate), "
                "leak_watch_sites = %lld",
                j->leak_watch_growth_bytes, j->leak_watch_window_s,
                j->leak_watch_dump_interval_s, j->leak_watch_dumps,
                j->leak_watch_lg_prof_sample, j->leak_watch_sites);
    ha_log_info("config: " JEMALLOC ".limit_dump_fractions = \"%s\" "
                "(\"\": off), limit_dump_psi_pct = %d (0: off), "
                "limit_dump_events = %s, limit_dump_min_interval_s = %lld, "
                "limit_watch_sampling = %s, "
                "limit_watch_lg_prof_sample = %d (-1: the current rate)",
                j->limit_dump_fractions, j->limit_dump_psi_pct,
                j->limit_dump_events ? "true" : "false",
                j->limit_dump_min_interval_s,
                j->limit_watch_sampling ? "true" : "false",
                j->limit_watch_lg_prof_sample);
}

/* ------------------------------------------------------------------ */
/* admin-* rows of global_variables                                     */
/* ------------------------------------------------------------------ */

bool
ha_config_admin_value(const void *arg, const char *name, char *buf,
                      size_t len)
{
    static const struct {
        const char *name;
        size_t offset;
    } ints[] = {
        {"admin-max_connections", offsetof(struct ha_config, max_connections)},
        {"admin-max_pending_logins",
         offsetof(struct ha_config, max_pending_logins)},
        {"admin-max_pending_logins_per_host",
         offsetof(struct ha_config, max_pending_logins_per_host)},
        {"admin-connect_timeout", offsetof(struct ha_config, connect_timeout)},
        {"admin-wait_timeout", offsetof(struct ha_config, wait_timeout)},
        {"admin-net_write_timeout",
         offsetof(struct ha_config, net_write_timeout)},
        {"admin-max_allowed_packet",
         offsetof(struct ha_config, max_allowed_packet)},
        {"admin-max_output_buffer",
         offsetof(struct ha_config, max_output_buffer)},
        {"admin-max_execution_time",
         offsetof(struct ha_config, max_execution_time)},
        {"admin-disk_timeout_ms",
         offsetof(struct ha_config, disk_timeout_ms)},
        {"admin-stats_system_memory",
         offsetof(struct ha_config, stats_system_memory)},
        {"admin-push_timeout_s", offsetof(struct ha_config, push_timeout_s)},
        {"admin-push_retry_max_s",
         offsetof(struct ha_config, push_retry_max_s)},
        {"admin-push_live_interval_s",
         offsetof(struct ha_config, push_live_interval_s)},
    };
    const struct ha_config *cfg = arg;

    buf[0] = '\0';
    if (cfg == NULL || name == NULL)
        return false;
    if (strcmp(name, "admin-admin_credentials") == 0) {
        ha_credentials_mask(cfg->admin_credentials, buf, len);
        return cfg->admin_credentials != NULL;
    }
    if (strcmp(name, "admin-stats_credentials") == 0) {
        ha_credentials_mask(cfg->stats_credentials, buf, len);
        return cfg->stats_credentials != NULL;
    }
    if (strcmp(name, "admin-profile_credentials") == 0) {
        ha_credentials_mask(cfg->profile_credentials != NULL
                                ? cfg->profile_credentials
                                : "",
                            buf, len);
        return true;
    }
    if (strcmp(name, "admin-push_targets") == 0) {
        ha_pushcfg_mask(cfg->push_targets, buf, len);
        return true;
    }
    if (strcmp(name, "admin-service_names") == 0) {
        ha_strlcpy(buf, cfg->service_names != NULL ? cfg->service_names : "",
                   len);
        return true;
    }
    if (strcmp(name, "admin-push_outbox_max_bytes") == 0) {
        snprintf(buf, len, "%lld", cfg->push_outbox_max_bytes);
        return true;
    }
    if (strcmp(name, "admin-mysql_ifaces") == 0) {
        if (cfg->mysql_ifaces == NULL)
            return false;
        ha_strlcpy(buf, cfg->mysql_ifaces, len);
        return true;
    }
    for (size_t i = 0; i < HA_ARRAY_SIZE(ints); i++) {
        if (strcmp(name, ints[i].name) == 0) {
            snprintf(buf, len, "%d",
                     *(const int *)((const char *)cfg + ints[i].offset));
            return true;
        }
    }
    if (strcmp(name, "admin-sql_memory_limit") == 0) {
        snprintf(buf, len, "%lld", cfg->sql_memory_limit);
        return true;
    }
    if (strcmp(name, "admin-max_output_total") == 0) {
        snprintf(buf, len, "%lld", cfg->max_output_total);
        return true;
    }
    if (strcmp(name, "admin-unix_socket_mode") == 0) {
        ha_strlcpy(buf, cfg->unix_socket_mode, len);
        return true;
    }
    if (strcmp(name, "admin-have_ssl") == 0) {
        ha_strlcpy(buf, cfg->have_ssl ? "true" : "false", len);
        return true;
    }
    if (strcmp(name, "admin-require_tls") == 0) {
        ha_strlcpy(buf, cfg->require_tls ? "true" : "false", len);
        return true;
    }
    if (strcmp(name, "admin-default_authentication_plugin") == 0) {
        ha_strlcpy(buf, cfg->default_auth_plugin, len);
        return true;
    }
    return false;
}
