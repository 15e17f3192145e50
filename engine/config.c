/* SPDX-License-Identifier: MIT
 *
 * The configuration as a value (see config.h): its defaults, what the raw
 * credential and listener specs become (users, ifaces), the rules that
 * span several settings, and freeing. Reading a file is config_read.c,
 * the settings and their single-value checks config_keys.c, showing the
 * effective configuration (log lines, global_variables rows)
 * config_show.c, writing it back config_write.c; the listener lists are
 * parsed by iface.c.
 */
#include "engine/config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/credentials.h"
#include "core/util.h"

#define ADMIN HA_CONFIG_ADMIN
#define JEMALLOC HA_CONFIG_JEMALLOC

/* ------------------------------------------------------------------------
 * Errors
 * --------------------------------------------------------------------- */

void
ha_config_err_at(char *err, size_t errlen, const char *file, unsigned line,
                 const char *fmt, ...)
{
    char what[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (line > 0)
        ha_err_set(err, errlen, "%s:%u: %s", file, line, what);
    else
        ha_err_set(err, errlen, "%s: %s", file, what);
}

/* ------------------------------------------------------------------------
 * Lifecycle
 * --------------------------------------------------------------------- */

/* Sets the scalar defaults; the owned strings are set by the caller. */
static void
init_scalars(struct ha_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_connections = HA_DEFAULT_MAX_CONNECTIONS;
    cfg->max_pending_logins = HA_DEFAULT_MAX_PENDING_LOGINS;
    cfg->max_pending_logins_per_host = HA_DEFAULT_MAX_PENDING_LOGINS_PER_HOST;
    cfg->http_max_connections = HA_DEFAULT_HTTP_MAX_CONNECTIONS;
    cfg->max_execution_time = HA_DEFAULT_MAX_EXECUTION_TIME;
    cfg->disk_timeout_ms = HA_DEFAULT_DISK_TIMEOUT_MS;
    cfg->http_timeout = HA_DEFAULT_HTTP_TIMEOUT;
    cfg->http_header_timeout = HA_DEFAULT_HTTP_HEADER_TIMEOUT;
    cfg->connect_timeout = HA_DEFAULT_CONNECT_TIMEOUT;
    cfg->wait_timeout = HA_DEFAULT_WAIT_TIMEOUT;
    cfg->net_write_timeout = HA_DEFAULT_NET_WRITE_TIMEOUT;
    cfg->max_allowed_packet = HA_DEFAULT_MAX_ALLOWED_PACKET;
    cfg->max_output_buffer = HA_DEFAULT_MAX_OUTPUT_BUFFER;
    cfg->jemalloc.prof_active = HA_UNSET;
    cfg->jemalloc.lg_prof_sample = HA_UNSET;
    cfg->jemalloc.lg_prof_interval = HA_LG_INTERVAL_UNSET;
    cfg->jemalloc.prof_gdump = HA_UNSET;
    cfg->have_ssl = 1;
    cfg->push_outbox_max_bytes = HA_DEFAULT_PUSH_OUTBOX_MAX_BYTES;
    cfg->push_timeout_s = HA_DEFAULT_PUSH_TIMEOUT_S;
    cfg->push_retry_max_s = HA_DEFAULT_PUSH_RETRY_MAX_S;
    ha_strlcpy(cfg->unix_socket_mode, HA_DEFAULT_UNIX_SOCKET_MODE,
               sizeof(cfg->unix_socket_mode));
    ha_strlcpy(cfg->default_auth_plugin, HA_DEFAULT_AUTH_PLUGIN,
               sizeof(cfg->default_auth_plugin));
    cfg->jemalloc.prof_final = HA_UNSET;
    cfg->jemalloc.prof_leak = HA_UNSET;
    cfg->jemalloc.prof_accum = HA_UNSET;
    cfg->jemalloc.lg_prof_sample_min = HA_DEFAULT_LG_PROF_SAMPLE_MIN;
    cfg->jemalloc.stats_max_age_ms = 0;
    cfg->jemalloc.dump_symbolized = 0;
    cfg->jemalloc.debuginfod_timeout_ms = HA_DEFAULT_DEBUGINFOD_TIMEOUT_MS;
    cfg->jemalloc.dump_min_free_bytes = HA_DEFAULT_DUMP_MIN_FREE_BYTES;
    cfg->jemalloc.dirty_decay_ms = HA_DECAY_UNSET;
    cfg->jemalloc.muzzy_decay_ms = HA_DECAY_UNSET;
    cfg->jemalloc.leak_watch_window_s = HA_DEFAULT_LEAK_WATCH_WINDOW_S;
    cfg->jemalloc.leak_watch_dump_interval_s =
        HA_DEFAULT_LEAK_WATCH_DUMP_INTERVAL_S;
    cfg->jemalloc.leak_watch_dumps = HA_DEFAULT_LEAK_WATCH_DUMPS;
    cfg->jemalloc.leak_watch_sites = HA_DEFAULT_LEAK_WATCH_SITES;
    cfg->jemalloc.leak_watch_lg_prof_sample = HA_UNSET;
    ha_strlcpy(cfg->jemalloc.limit_dump_fractions,
               HA_DEFAULT_LIMIT_DUMP_FRACTIONS,
               sizeof(cfg->jemalloc.limit_dump_fractions));
    cfg->jemalloc.limit_dump_psi_pct = HA_DEFAULT_LIMIT_DUMP_PSI_PCT;
    cfg->jemalloc.limit_dump_events = 1;
    cfg->jemalloc.limit_dump_min_interval_s =
        HA_DEFAULT_LIMIT_DUMP_MIN_INTERVAL_S;
    cfg->jemalloc.limit_watch_sampling = 1;
    cfg->jemalloc.limit_watch_lg_prof_sample = HA_UNSET;
    cfg->stats_system_memory = HA_DEFAULT_STATS_SYSTEM_MEMORY;
    cfg->sql_memory_limit = HA_DEFAULT_SQL_MEMORY_LIMIT;
    cfg->max_output_total = HA_DEFAULT_MAX_OUTPUT_TOTAL;
    ha_strlcpy(cfg->jemalloc.dump_prefix, HA_DEFAULT_DUMP_PREFIX,
               sizeof(cfg->jemalloc.dump_prefix));
}

int
ha_config_derive(struct ha_config *cfg, const char *name,
                 const unsigned lines[HA_CONFIG_LINES], char *err,
                 size_t errlen)
{
    char why[512];
    unsigned line = 0;

    free(cfg->users);
    cfg->users = NULL;
    cfg->n_users = 0;
    free(cfg->ifaces);
    cfg->ifaces = NULL;
    cfg->n_ifaces = 0;
    free(cfg->http);
    cfg->http = NULL;
    cfg->n_http = 0;

    line = lines[0];
    if (ha_credentials_parse(cfg->admin_credentials, HA_ROLE_ADMIN, &cfg->users,
                             &cfg->n_users, why, sizeof(why)) < 0) {
        ha_config_err_at(err, errlen, name, line,
                         ADMIN ".admin_credentials: %s", why);
        return -1;
    }
    if (cfg->n_users == 0) {
        ha_config_err_at(err, errlen, name, line,
                         ADMIN ".admin_credentials has no user:password "
                               "pair; at least one admin user is required");
        return -1;
    }
    line = lines[1];
    if (ha_credentials_parse(cfg->stats_credentials, HA_ROLE_STATS, &cfg->users,
                             &cfg->n_users, why, sizeof(why)) < 0) {
        ha_config_err_at(err, errlen, name, line,
                         ADMIN ".stats_credentials: %s", why);
        return -1;
    }
    line = lines[5];
    if (cfg->profile_credentials != NULL &&
        cfg->profile_credentials[0] != '\0' &&
        ha_credentials_parse(cfg->profile_credentials, HA_ROLE_PROFILE,
                             &cfg->users, &cfg->n_users, why,
                             sizeof(why)) < 0) {
        ha_config_err_at(err, errlen, name, line,
                         ADMIN ".profile_credentials: %s", why);
        return -1;
    }
    free(cfg->push);
    cfg->push = NULL;
    cfg->n_push = 0;
    line = lines[6];
    if (ha_pushcfg_parse(cfg->push_targets, &cfg->push, &cfg->n_push, why,
                         sizeof(why)) < 0) {
        ha_config_err_at(err, errlen, name, line, ADMIN ".push_targets: %s",
                         why);
        return -1;
    }
    free(cfg->services);
    cfg->services = NULL;
    cfg->n_services = 0;
    line = lines[7];
    if (ha_pushcfg_parse_services(cfg->service_names, &cfg->services,
                                  &cfg->n_services, why, sizeof(why)) < 0) {
        ha_config_err_at(err, errlen, name, line, ADMIN ".service_names: %s",
                         why);
        return -1;
    }
    line = lines[2];
    if (ha_iface_parse(cfg->mysql_ifaces, &cfg->ifaces, &cfg->n_ifaces, why,
                       sizeof(why)) < 0) {
        ha_config_err_at(err, errlen, name, line, ADMIN ".mysql_ifaces: %s",
                         why);
        return -1;
    }
    line = lines[4];
    if (cfg->http_ifaces != NULL && cfg->http_ifaces[0] != '\0') {
        if (ha_iface_parse(cfg->http_ifaces, &cfg->http, &cfg->n_http, why,
                           sizeof(why)) < 0) {
            ha_config_err_at(err, errlen, name, line, ADMIN ".http_ifaces: %s",
                             why);
            return -1;
        }
        if (cfg->http_tls && !cfg->have_ssl) {
            ha_config_err_at(err, errlen, name, line,
                             ADMIN ".http_tls = true needs the TLS "
                                   "certificate: set have_ssl = true as well "
                                   "(the MySQL port's certificate serves "
                                   "HTTPS too)");
            return -1;
        }
    }
    line = 0;
    if (cfg->jemalloc.leak_watch_growth_bytes > 0 &&
        cfg->stats_system_memory == 0) {
        ha_config_err_at(err, errlen, name, line,
                         JEMALLOC ".leak_watch_growth_bytes is set but "
                         ADMIN ".stats_system_memory = 0: the leak watch "
                         "reads resident memory from stats_history's "
                         "samples; set stats_system_memory (seconds between "
                         "samples) or leak_watch_growth_bytes = 0");
        return -1;
    }
    if (cfg->jemalloc.leak_watch_growth_bytes > 0 &&
        cfg->jemalloc.leak_watch_window_s < cfg->stats_system_memory) {
        ha_config_err_at(err, errlen, name, line,
                         JEMALLOC ".leak_watch_window_s = %lld is shorter "
                         "than " ADMIN ".stats_system_memory = %d: the "
                         "window must hold at least two samples",
                         cfg->jemalloc.leak_watch_window_s,
                         cfg->stats_system_memory);
        return -1;
    }
    if (cfg->jemalloc.leak_watch_growth_bytes > 0 &&
        cfg->jemalloc.dump_retention_count > 0 &&
        cfg->jemalloc.dump_retention_count < cfg->jemalloc.leak_watch_dumps) {
        ha_config_err_at(err, errlen, name, line,
                         JEMALLOC ".dump_retention_count = %lld would "
                         "remove the leak watch's own series "
                         "(leak_watch_dumps = %lld): keep at least as many "
                         "dumps as a series holds",
                         cfg->jemalloc.dump_retention_count,
                         cfg->jemalloc.leak_watch_dumps);
        return -1;
    }
    if (cfg->jemalloc.leak_watch_lg_prof_sample != HA_UNSET &&
        cfg->jemalloc.leak_watch_lg_prof_sample <
            cfg->jemalloc.lg_prof_sample_min) {
        ha_config_err_at(err, errlen, name, line,
                         JEMALLOC ".leak_watch_lg_prof_sample = %d is below "
                         JEMALLOC ".lg_prof_sample_min = %d (each sampled "
                         "small allocation costs a 16 KiB extent); "
                         "allowed: %d..62",
                         cfg->jemalloc.leak_watch_lg_prof_sample,
                         cfg->jemalloc.lg_prof_sample_min,
                         cfg->jemalloc.lg_prof_sample_min);
        return -1;
    }
    if (cfg->jemalloc.limit_watch_lg_prof_sample != HA_UNSET &&
        cfg->jemalloc.limit_watch_lg_prof_sample <
            cfg->jemalloc.lg_prof_sample_min) {
        ha_config_err_at(err, errlen, name, line,
                         JEMALLOC ".limit_watch_lg_prof_sample = %d is below "
                         JEMALLOC ".lg_prof_sample_min = %d (each sampled "
                         "small allocation costs a 16 KiB extent); "
                         "allowed: %d..62",
                         cfg->jemalloc.limit_watch_lg_prof_sample,
                         cfg->jemalloc.lg_prof_sample_min,
                         cfg->jemalloc.lg_prof_sample_min);
        return -1;
    }
    if (cfg->jemalloc.lg_prof_sample != HA_UNSET &&
        cfg->jemalloc.lg_prof_sample < cfg->jemalloc.lg_prof_sample_min) {
        line = lines[3];
        ha_config_err_at(err, errlen, name, line,
                         JEMALLOC ".lg_prof_sample = %d is below "
                         JEMALLOC ".lg_prof_sample_min = %d: jemalloc "
                         "promotes each sampled small allocation to a 16 "
                         "KiB extent, so sampling that often can multiply "
                         "resident memory; allowed: %d..62, or lower "
                         "lg_prof_sample_min on purpose",
                         cfg->jemalloc.lg_prof_sample,
                         cfg->jemalloc.lg_prof_sample_min,
                         cfg->jemalloc.lg_prof_sample_min);
        return -1;
    }
    return 0;
}

bool
ha_config_default_exposed(const struct ha_config *cfg, char *why, size_t len)
{
    const struct ha_user *u = NULL;
    const struct ha_iface *f = NULL;

    for (size_t i = 0; i < cfg->n_users && u == NULL; i++)
        if (cfg->users[i].is_default)
            u = &cfg->users[i];
    for (size_t i = 0; i < cfg->n_ifaces && f == NULL; i++)
        if (!ha_iface_is_local(&cfg->ifaces[i]))
            f = &cfg->ifaces[i];
    if (u == NULL || f == NULL)
        return false;
    ha_err_set(why, len,
               "user '%s' has the default password and mysql_ifaces "
               "listens on %s%s%s:%d, beyond loopback: logins with default "
               "credentials are accepted only over loopback or the unix "
               "socket; give the user a password of its own",
               u->name, strchr(f->host, ':') ? "[" : "",
               f->host[0] ? f->host : "0.0.0.0",
               strchr(f->host, ':') ? "]" : "", f->port);
    return true;
}

void
ha_config_init(struct ha_config *cfg)
{
    static const unsigned no_lines[HA_CONFIG_LINES] = {0};

    init_scalars(cfg);
    cfg->datadir = strdup(".");
    cfg->admin_credentials = strdup(HA_DEFAULT_ADMIN_CREDENTIALS);
    cfg->stats_credentials = strdup(HA_DEFAULT_STATS_CREDENTIALS);
    cfg->mysql_ifaces = strdup(HA_DEFAULT_MYSQL_IFACES);
    /* The defaults always parse; only allocation can fail, which leaves
     * no users and no listeners: a daemon that refuses everyone. */
    if (cfg->admin_credentials != NULL && cfg->stats_credentials != NULL &&
        cfg->mysql_ifaces != NULL)
        (void)ha_config_derive(cfg, "<defaults>", no_lines, NULL, 0);
}

void
ha_config_free(struct ha_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->path);
    free(cfg->datadir);
    free(cfg->errorlog);
    free(cfg->admin_credentials);
    free(cfg->stats_credentials);
    free(cfg->profile_credentials);
    free(cfg->service_names);
    free(cfg->services);
    free(cfg->push_targets);
    if (cfg->push != NULL) /* tokens and passwords */
        memset(cfg->push, 0, cfg->n_push * sizeof(*cfg->push));
    free(cfg->push);
    if (cfg->users != NULL) {
        /* stage2 hashes are password equivalents for this protocol. */
        memset(cfg->users, 0, cfg->n_users * sizeof(*cfg->users));
        free(cfg->users);
    }
    free(cfg->mysql_ifaces);
    free(cfg->ifaces);
    free(cfg->http_ifaces);
    free(cfg->http);
    for (size_t i = 0; i < cfg->n_messages; i++)
        free(cfg->messages[i].text);
    free(cfg->messages);
    memset(cfg, 0, sizeof(*cfg));
}
