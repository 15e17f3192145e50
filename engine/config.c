/* SPDX-License-Identifier: MIT
 *
 * Configuration loading: a libconfig file in proxysql.cnf layout becomes a
 * struct ha_config. ha_config_load_string() does all the work so tests
 * need no files; ha_config_load_file() only reads the file. Known keys are
 * described by one table (config_keys[]) that drives type checks, range
 * checks and storage; the other proxysql.cnf sections and ProxySQL admin
 * variables are recognised by name so an existing proxysql.cnf loads with
 * notices instead of errors. Parsing goes into a temporary struct that is
 * swapped in only when everything validated, so a failed load never leaves
 * a half-applied configuration. The listener lists are parsed by iface.c;
 * config_write.c writes a configuration back from the same key table.
 */
#include "engine/config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "engine/credentials.h"
#include "core/log.h"
#include "core/util.h"

/* A config file is a few kilobytes; refusing anything huge keeps a wrong
 * -c argument (a log, /dev/zero) from eating memory. */
#define CONFIG_FILE_MAX (16u * 1024 * 1024)

/* ------------------------------------------------------------------------
 * Key table
 * --------------------------------------------------------------------- */

static int validate_dump_prefix(const char *val, char *why, size_t whylen);
static int validate_auth_plugin(const char *val, char *why, size_t whylen);
static int validate_socket_mode(const char *val, char *why, size_t whylen);
static int validate_debug_root(const char *val, char *why, size_t whylen);
static int validate_debuginfod_urls(const char *val, char *why,
                                    size_t whylen);

#define ADMIN "admin_variables"
#define JEMALLOC "jemalloc_variables"
#define OFF(field) offsetof(struct ha_config, field)

static const struct ha_config_key config_keys[] = {
    {NULL, "datadir", HA_KEY_STRING, 1, PATH_MAX - 1, NULL, OFF(datadir), 0},
    {NULL, "errorlog", HA_KEY_STRING, 1, PATH_MAX - 1, NULL, OFF(errorlog), 0},
    /* TLS and authentication: certificate paths are relative to the
     * datadir; empty means "generate one there on first start". */
    {ADMIN, "have_ssl", HA_KEY_BOOL, 0, 1, NULL, OFF(have_ssl), 0},
    {ADMIN, "ssl_cert", HA_KEY_STRING, 0, 1023, NULL, OFF(ssl_cert), 1024},
    {ADMIN, "ssl_key", HA_KEY_STRING, 0, 1023, NULL, OFF(ssl_key), 1024},
    {ADMIN, "require_tls", HA_KEY_BOOL, 0, 1, NULL, OFF(require_tls), 0},
    {ADMIN, "default_authentication_plugin", HA_KEY_STRING, 1, 31,
     validate_auth_plugin, OFF(default_auth_plugin), 32},
    {ADMIN, "unix_socket_mode", HA_KEY_STRING, 1, 15, validate_socket_mode,
     OFF(unix_socket_mode), 16},
    /* Credentials and interfaces are stored raw here and parsed after
     * the table pass (derive()), because duplicate user names are checked
     * across both credential lists. */
    {ADMIN, "admin_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(admin_credentials), 0},
    {ADMIN, "stats_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(stats_credentials), 0},
    {ADMIN, "mysql_ifaces", HA_KEY_STRING, 0, 65535, NULL, OFF(mysql_ifaces),
     0},
    /* HTTP (Prometheus /metrics): off unless listed; TCP only. */
    {ADMIN, "http_ifaces", HA_KEY_STRING, 0, 65535, NULL, OFF(http_ifaces), 0},
    {ADMIN, "http_max_connections", HA_KEY_INT, 1, 100000, NULL,
     OFF(http_max_connections), 0},
    {ADMIN, "http_timeout", HA_KEY_INT, 1, 3600, NULL, OFF(http_timeout), 0},
    {ADMIN, "http_header_timeout", HA_KEY_INT, 1, 3600, NULL,
     OFF(http_header_timeout), 0},
    {ADMIN, "http_max_per_peer", HA_KEY_INT, 0, 100000, NULL,
     OFF(http_max_per_peer), 0},
    {ADMIN, "http_tls", HA_KEY_BOOL, 0, 1, NULL, OFF(http_tls), 0},
    /* Limits. Timeouts are seconds, up to a year; sizes are bytes:
     * max_allowed_packet 1 MiB..1 GiB as in MySQL, max_output_buffer
     * from 64 KiB. */
    {ADMIN, "max_connections", HA_KEY_INT, 1, 100000, NULL,
     OFF(max_connections), 0},
    {ADMIN, "connect_timeout", HA_KEY_INT, 1, 31536000, NULL,
     OFF(connect_timeout), 0},
    {ADMIN, "wait_timeout", HA_KEY_INT, 1, 31536000, NULL, OFF(wait_timeout),
     0},
    {ADMIN, "net_write_timeout", HA_KEY_INT, 1, 31536000, NULL,
     OFF(net_write_timeout), 0},
    {ADMIN, "max_allowed_packet", HA_KEY_INT, 1 << 20, 1 << 30, NULL,
     OFF(max_allowed_packet), 0},
    {ADMIN, "max_output_buffer", HA_KEY_INT, 64 << 10, 1 << 30, NULL,
     OFF(max_output_buffer), 0},
    /* ms, up to a day; 0 = no limit (MySQL's name and unit). */
    {ADMIN, "max_execution_time", HA_KEY_INT, 0, 86400000, NULL,
     OFF(max_execution_time), 0},
    /* ProxySQL's admin-stats_system_memory: seconds, up to a day. */
    {ADMIN, "stats_system_memory", HA_KEY_INT, 0, 86400, NULL,
     OFF(stats_system_memory), 0},
    /* Bytes; 0 = none, else at least 1 MiB (SQLite needs some). */
    {ADMIN, "sql_memory_limit", HA_KEY_INT64, 0, 1LL << 40, NULL,
     OFF(sql_memory_limit), 0},
    {ADMIN, "max_output_total", HA_KEY_INT64, 0, 1LL << 40, NULL,
     OFF(max_output_total), 0},
    /* Ranges are jemalloc's: lg_prof_sample below 64 bits, and
     * lg_prof_interval -1 meaning "no interval dumps". */
    {JEMALLOC, "prof_active", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_active), 0},
    {JEMALLOC, "lg_prof_sample", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.lg_prof_sample), 0},
    {JEMALLOC, "lg_prof_interval", HA_KEY_INT, -1, 62, NULL,
     OFF(jemalloc.lg_prof_interval), 0},
    {JEMALLOC, "prof_gdump", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_gdump), 0},
    {JEMALLOC, "prof_final", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_final), 0},
    {JEMALLOC, "prof_leak", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_leak), 0},
    {JEMALLOC, "prof_accum", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_accum), 0},
    {JEMALLOC, "lg_prof_sample_min", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.lg_prof_sample_min), 0},
    /* Up to an hour: figures older than that would mislead. */
    {JEMALLOC, "stats_max_age_ms", HA_KEY_INT, 0, 3600000, NULL,
     OFF(jemalloc.stats_max_age_ms), 0},
    {JEMALLOC, "dump_symbolized", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.dump_symbolized), 0},
    /* Names in heap profiles: another debug root beside /usr/lib/debug,
     * and debuginfod (off unless asked: it loads libcurl into the
     * process and talks to the network). The timeout bounds one query's
     * wait, 0.1 s .. 10 min. */
    {JEMALLOC, "debug_root", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->debug_root) - 1,
     validate_debug_root, OFF(jemalloc.debug_root),
     sizeof(((struct ha_jemalloc_config *)0)->debug_root)},
    {JEMALLOC, "debuginfod", HA_KEY_BOOL, 0, 1, NULL, OFF(jemalloc.debuginfod),
     0},
    {JEMALLOC, "debuginfod_urls", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->debuginfod_urls) - 1,
     validate_debuginfod_urls, OFF(jemalloc.debuginfod_urls),
     sizeof(((struct ha_jemalloc_config *)0)->debuginfod_urls)},
    {JEMALLOC, "debuginfod_timeout_ms", HA_KEY_INT, 100, 600000, NULL,
     OFF(jemalloc.debuginfod_timeout_ms), 0},
    /* Dump housekeeping: counts, bytes (libconfig's 64-bit ints: write
     * 1073741824L), seconds up to a week. */
    {JEMALLOC, "dump_retention_count", HA_KEY_INT64, 0, 1000000, NULL,
     OFF(jemalloc.dump_retention_count), 0},
    {JEMALLOC, "dump_retention_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.dump_retention_bytes), 0},
    {JEMALLOC, "dump_min_free_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.dump_min_free_bytes), 0},
    {JEMALLOC, "dump_interval_s", HA_KEY_INT64, 0, 604800, NULL,
     OFF(jemalloc.dump_interval_s), 0},
    {JEMALLOC, "dump_resident_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.dump_resident_bytes), 0},
    /* Decay, applied to every arena at start: -1 (never) to a year in
     * ms; absent: jemalloc's own (opt.*_decay_ms, MALLOC_CONF). */
    {JEMALLOC, "dirty_decay_ms", HA_KEY_INT64, -1, 31536000000LL, NULL,
     OFF(jemalloc.dirty_decay_ms), 0},
    {JEMALLOC, "muzzy_decay_ms", HA_KEY_INT64, -1, 31536000000LL, NULL,
     OFF(jemalloc.muzzy_decay_ms), 0},
    /* The leak watch (engine/leakwatch.h): bytes (0 = off), seconds up
     * to a week, a series of 2 to 1000 dumps, a sampling rate. */
    {JEMALLOC, "leak_watch_growth_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.leak_watch_growth_bytes), 0},
    {JEMALLOC, "leak_watch_window_s", HA_KEY_INT64, 1, 604800, NULL,
     OFF(jemalloc.leak_watch_window_s), 0},
    {JEMALLOC, "leak_watch_dump_interval_s", HA_KEY_INT64, 1, 86400, NULL,
     OFF(jemalloc.leak_watch_dump_interval_s), 0},
    {JEMALLOC, "leak_watch_dumps", HA_KEY_INT64, 2, 1000, NULL,
     OFF(jemalloc.leak_watch_dumps), 0},
    {JEMALLOC, "leak_watch_lg_prof_sample", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.leak_watch_lg_prof_sample), 0},
    {JEMALLOC, "dump_prefix", HA_KEY_STRING, 1,
     sizeof(((struct ha_jemalloc_config *)0)->dump_prefix) - 1,
     validate_dump_prefix, OFF(jemalloc.dump_prefix),
     sizeof(((struct ha_jemalloc_config *)0)->dump_prefix)},
    {JEMALLOC, "dump_group", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->dump_group) - 1, NULL,
     OFF(jemalloc.dump_group),
     sizeof(((struct ha_jemalloc_config *)0)->dump_group)},
};

/* Groups heapadmin reads; their unknown members get a warning. */
static const char *const known_groups[] = {ADMIN, JEMALLOC};

const struct ha_config_key *
ha_config_keys(size_t *n)
{
    *n = HA_ARRAY_SIZE(config_keys);
    return config_keys;
}

const char *const *
ha_config_groups(size_t *n)
{
    *n = HA_ARRAY_SIZE(known_groups);
    return known_groups;
}

/* proxysql.cnf sections heapadmin does not use (ProxySQL 2.7/3.0,
 * lib/ProxySQL_Config.cpp and the *_variables groups). */
/* clang-format off */
static const char *const proxysql_sections[] = {
    "mysql_variables", "pgsql_variables", "ldap_variables",
    "sqliteserver_variables", "clickhouse_variables", "mysql_servers",
    "mysql_users", "mysql_query_rules", "mysql_query_rules_fast_routing",
    "scheduler", "mysql_replication_hostgroups",
    "mysql_group_replication_hostgroups", "mysql_galera_hostgroups",
    "mysql_aws_aurora_hostgroups", "mysql_hostgroup_attributes",
    "mysql_servers_ssl_params", "mysql_firewall_whitelist_rules",
    "mysql_firewall_whitelist_users",
    "mysql_firewall_whitelist_sqli_fingerprints", "mysql_ldap_mapping",
    "proxysql_servers", "restapi", "clickhouse_users", "pgsql_servers",
    "pgsql_users", "pgsql_query_rules", "pgsql_replication_hostgroups",
    "pgsql_hostgroup_attributes",
};
/* clang-format on */

/* Root-level keys of ProxySQL's src/main.cpp that heapadmin ignores. */
/* clang-format off */
static const char *const proxysql_root_keys[] = {
    "pidfile", "restart_on_missing_heartbeats", "execute_on_exit_failure",
    "uuid", "cluster_sync_interfaces", "sqlite3_plugin",
    "web_interface_plugin", "ldap_auth_plugin",
};
/* clang-format on */

/* ProxySQL 2.7 admin_variables_names[] minus the three heapadmin uses,
 * plus hash_passwords, still found in older configs. */
/* clang-format off */
static const char *const proxysql_admin_keys[] = {
    "stats_mysql_connections", "stats_mysql_connection_pool",
    "stats_mysql_query_cache", "stats_mysql_query_digest_to_disk",
    "stats_system_cpu", "stats_system_memory", "pgsql_ifaces",
    "telnet_admin_ifaces", "telnet_stats_ifaces", "refresh_interval",
    "read_only", "hash_passwords", "vacuum_stats", "version",
    "cluster_username", "cluster_password", "cluster_check_interval_ms",
    "cluster_check_status_frequency",
    "cluster_mysql_query_rules_diffs_before_sync",
    "cluster_mysql_servers_diffs_before_sync",
    "cluster_mysql_users_diffs_before_sync",
    "cluster_proxysql_servers_diffs_before_sync",
    "cluster_mysql_variables_diffs_before_sync",
    "cluster_admin_variables_diffs_before_sync",
    "cluster_ldap_variables_diffs_before_sync",
    "cluster_mysql_query_rules_save_to_disk",
    "cluster_mysql_servers_save_to_disk", "cluster_mysql_users_save_to_disk",
    "cluster_proxysql_servers_save_to_disk",
    "cluster_mysql_variables_save_to_disk",
    "cluster_admin_variables_save_to_disk",
    "cluster_ldap_variables_save_to_disk",
    "cluster_mysql_servers_sync_algorithm", "checksum_mysql_query_rules",
    "checksum_mysql_servers", "checksum_mysql_users",
    "checksum_mysql_variables", "checksum_admin_variables",
    "checksum_ldap_variables", "restapi_enabled", "restapi_port",
    "web_enabled", "web_port", "web_verbosity",
    "prometheus_memory_metrics_interval", "debug", "debug_output",
    "coredump_generation_interval_ms", "coredump_generation_threshold",
    "ssl_keylog_file",
};
/* clang-format on */

static int
validate_auth_plugin(const char *val, char *why, size_t whylen)
{
    if (strcmp(val, "mysql_native_password") == 0 ||
        strcmp(val, "caching_sha2_password") == 0)
        return 0;
    ha_err_set(why, whylen,
               "'%s' is not an authentication plugin heapadmin offers; use "
               "mysql_native_password or caching_sha2_password",
               val);
    return -1;
}

/* An octal permission mode such as "0660": the socket file's mode decides
 * which local users may connect (connect(2) needs write permission). */
static int
validate_socket_mode(const char *val, char *why, size_t whylen)
{
    size_t n = strlen(val);

    if (n >= 3 && n <= 4 && strspn(val, "01234567") == n &&
        (n == 3 || val[0] == '0'))
        return 0;
    ha_err_set(why, whylen,
               "'%s' is not a permission mode; use 3 or 4 octal digits "
               "such as \"0660\" (owner and group may connect) or "
               "\"0600\" (owner only)",
               val);
    return -1;
}

/* ------------------------------------------------------------------------
 * Small helpers
 * --------------------------------------------------------------------- */

/* Where a setting came from, for "file:line: " prefixes. */
struct loc {
    const char *file;
    unsigned line; /* 0: not from the file (a default) */
};

static bool
in_list(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i], name) == 0)
            return true;
    }
    return false;
}

static const struct ha_config_key *
find_key(const char *group, const char *name)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(config_keys); i++) {
        const struct ha_config_key *k = &config_keys[i];

        if (strcmp(k->name, name) != 0)
            continue;
        if ((group == NULL) != (k->group == NULL))
            continue;
        if (group == NULL || strcmp(group, k->group) == 0)
            return k;
    }
    return NULL;
}

/* The known name closest to name among the root keys and groups (group
 * NULL) or the keys of group, or NULL when nothing is close enough to be
 * a plausible typo: at most a third of the known name's length, and at
 * least 2, so "mysql_iface" -> "mysql_ifaces" but "foo" -> nothing. */
static const char *
suggest(const char *group, const char *name)
{
    const char *best = NULL;
    int best_d = INT_MAX;

    for (size_t i = 0; i < HA_ARRAY_SIZE(config_keys); i++) {
        const struct ha_config_key *k = &config_keys[i];

        if ((group == NULL) != (k->group == NULL))
            continue;
        if (group != NULL && strcmp(group, k->group) != 0)
            continue;
        int d = ha_str_distance(name, k->name);
        if (d < best_d) {
            best_d = d;
            best = k->name;
        }
    }
    if (group == NULL) {
        for (size_t i = 0; i < HA_ARRAY_SIZE(known_groups); i++) {
            int d = ha_str_distance(name, known_groups[i]);
            if (d < best_d) {
                best_d = d;
                best = known_groups[i];
            }
        }
    }
    if (best == NULL)
        return NULL;
    int limit = (int)strlen(best) / 3;
    if (limit < 2)
        limit = 2;
    return best_d <= limit && best_d < (int)strlen(name) ? best : NULL;
}

static struct loc
setting_loc(const config_setting_t *s, const char *name)
{
    struct loc l;
    const char *file = config_setting_source_file(s);

    /* libconfig names the file only for @include'd settings; everything
     * else came from the text we were given. */
    l.file = file != NULL ? file : name;
    l.line = config_setting_source_line(s);
    return l;
}

static void loc_err(char *err, size_t errlen, struct loc l, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));

/* err = "file:line: <fmt>", or "file: <fmt>" for defaults. */
static void
loc_err(char *err, size_t errlen, struct loc l, const char *fmt, ...)
{
    char what[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (l.line > 0)
        ha_err_set(err, errlen, "%s:%u: %s", l.file, l.line, what);
    else
        ha_err_set(err, errlen, "%s: %s", l.file, what);
}

static int add_message(struct ha_config *cfg,
                       enum ha_config_severity severity, struct loc l,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends "file:line: <fmt>" with severity to cfg->messages. Returns 0,
 * or -1 when out of memory. */
static int
add_message(struct ha_config *cfg, enum ha_config_severity severity,
            struct loc l, const char *fmt, ...)
{
    char what[1024];
    struct ha_config_message *grown;
    char *msg;
    va_list ap;
    int n;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    n = snprintf(NULL, 0, "%s:%u: %s", l.file, l.line, what);
    if (n < 0)
        return -1;
    msg = malloc((size_t)n + 1);
    if (msg == NULL)
        return -1;
    snprintf(msg, (size_t)n + 1, "%s:%u: %s", l.file, l.line, what);
    grown =
        realloc(cfg->messages, (cfg->n_messages + 1) * sizeof(*cfg->messages));
    if (grown == NULL) {
        free(msg);
        return -1;
    }
    cfg->messages = grown;
    cfg->messages[cfg->n_messages].severity = severity;
    cfg->messages[cfg->n_messages++].text = msg;
    return 0;
}

static const char *
type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP:
        return "a group";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        return "an integer";
    case CONFIG_TYPE_FLOAT:
        return "a float";
    case CONFIG_TYPE_STRING:
        return "a string";
    case CONFIG_TYPE_BOOL:
        return "a boolean";
    case CONFIG_TYPE_ARRAY:
        return "an array";
    case CONFIG_TYPE_LIST:
        return "a list";
    default:
        return "an unknown type";
    }
}

static int
validate_dump_prefix(const char *val, char *why, size_t whylen)
{
    for (const char *p = val; *p != '\0'; p++) {
        char c = *p;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
            continue;
        /* '/' gets its own wording: it is the likely mistake, and the
         * reason is that dumps always go into the datadir. */
        if (c == '/')
            ha_err_set(why, whylen,
                       "'%s' contains '/'; dumps are written into the "
                       "datadir, so only a file name stem of "
                       "[A-Za-z0-9_.-] is allowed",
                       val);
        else
            ha_err_set(why, whylen,
                       "'%s' has a character outside [A-Za-z0-9_.-]", val);
        return -1;
    }
    return 0;
}

/* A directory searched like /usr/lib/debug: absolute, and without ':',
 * which separates libdwfl's search path. */
static int
validate_debug_root(const char *val, char *why, size_t whylen)
{
    if (*val == '\0')
        return 0;
    if (val[0] != '/') {
        ha_err_set(why, whylen,
                   "'%s' is not an absolute path; give a directory such "
                   "as \"/srv/debug\" that holds .build-id/xx/yyyy.debug "
                   "files, or \"\" for none",
                   val);
        return -1;
    }
    for (const char *p = val; *p != '\0'; p++)
        if (*p == ':' || (unsigned char)*p < 0x20) {
            ha_err_set(why, whylen,
                       "'%s' has a %s; a directory path without ':' or "
                       "control characters is allowed",
                       val, *p == ':' ? "':'" : "control character");
            return -1;
        }
    return 0;
}

/* DEBUGINFOD_URLS' syntax: http://, https:// or file:// URLs separated
 * by spaces. */
static int
validate_debuginfod_urls(const char *val, char *why, size_t whylen)
{
    static const char *const schemes[] = {"http://", "https://", "file://"};
    const char *p = val;

    while (*p != '\0') {
        size_t n;
        bool ok = false;

        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        n = strcspn(p, " ");
        for (size_t k = 0; k < HA_ARRAY_SIZE(schemes); k++)
            if (n > strlen(schemes[k]) &&
                strncmp(p, schemes[k], strlen(schemes[k])) == 0)
                ok = true;
        for (size_t k = 0; ok && k < n; k++)
            if ((unsigned char)p[k] < 0x20 || p[k] == 0x7f)
                ok = false;
        if (!ok) {
            ha_err_set(why, whylen,
                       "'%.*s' is not a debuginfod server URL; allowed: "
                       "http://, https:// or file:// URLs separated by "
                       "spaces, or \"\" for DEBUGINFOD_URLS of the "
                       "environment",
                       (int)(n > 200 ? 200 : n), p);
            return -1;
        }
        p += n;
    }
    return 0;
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
    cfg->http_max_connections = HA_DEFAULT_HTTP_MAX_CONNECTIONS;
    cfg->max_execution_time = HA_DEFAULT_MAX_EXECUTION_TIME;
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
    cfg->jemalloc.leak_watch_lg_prof_sample = HA_UNSET;
    cfg->stats_system_memory = HA_DEFAULT_STATS_SYSTEM_MEMORY;
    cfg->sql_memory_limit = HA_DEFAULT_SQL_MEMORY_LIMIT;
    cfg->max_output_total = HA_DEFAULT_MAX_OUTPUT_TOTAL;
    ha_strlcpy(cfg->jemalloc.dump_prefix, HA_DEFAULT_DUMP_PREFIX,
               sizeof(cfg->jemalloc.dump_prefix));
}

/* Parses the raw credential and interface specs into users and ifaces.
 * lines[] holds where each came from (0 for a default). */
static int
derive(struct ha_config *cfg, const char *name, const unsigned lines[5],
       char *err, size_t errlen)
{
    char why[512];
    struct loc l = {name, 0};

    free(cfg->users);
    cfg->users = NULL;
    cfg->n_users = 0;
    free(cfg->ifaces);
    cfg->ifaces = NULL;
    cfg->n_ifaces = 0;
    free(cfg->http);
    cfg->http = NULL;
    cfg->n_http = 0;

    l.line = lines[0];
    if (ha_credentials_parse(cfg->admin_credentials, HA_ROLE_ADMIN, &cfg->users,
                             &cfg->n_users, why, sizeof(why)) < 0) {
        loc_err(err, errlen, l, ADMIN ".admin_credentials: %s", why);
        return -1;
    }
    if (cfg->n_users == 0) {
        loc_err(err, errlen, l,
                ADMIN ".admin_credentials has no user:password pair; at "
                      "least one admin user is required");
        return -1;
    }
    l.line = lines[1];
    if (ha_credentials_parse(cfg->stats_credentials, HA_ROLE_STATS, &cfg->users,
                             &cfg->n_users, why, sizeof(why)) < 0) {
        loc_err(err, errlen, l, ADMIN ".stats_credentials: %s", why);
        return -1;
    }
    l.line = lines[2];
    if (ha_iface_parse(cfg->mysql_ifaces, &cfg->ifaces, &cfg->n_ifaces, why,
                       sizeof(why)) < 0) {
        loc_err(err, errlen, l, ADMIN ".mysql_ifaces: %s", why);
        return -1;
    }
    l.line = lines[4];
    if (cfg->http_ifaces != NULL && cfg->http_ifaces[0] != '\0') {
        if (ha_iface_parse(cfg->http_ifaces, &cfg->http, &cfg->n_http, why,
                           sizeof(why)) < 0) {
            loc_err(err, errlen, l, ADMIN ".http_ifaces: %s", why);
            return -1;
        }
        if (cfg->http_tls && !cfg->have_ssl) {
            loc_err(err, errlen, l,
                    ADMIN ".http_tls = true needs the TLS certificate: set "
                          "have_ssl = true as well (the MySQL port's "
                          "certificate serves HTTPS too)");
            return -1;
        }
    }
    l.line = 0;
    if (cfg->jemalloc.leak_watch_growth_bytes > 0 &&
        cfg->stats_system_memory == 0) {
        loc_err(err, errlen, l,
                JEMALLOC ".leak_watch_growth_bytes is set but "
                ADMIN ".stats_system_memory = 0: the leak watch reads "
                "resident memory from stats_history's samples; set "
                "stats_system_memory (seconds between samples) or "
                "leak_watch_growth_bytes = 0");
        return -1;
    }
    if (cfg->jemalloc.leak_watch_growth_bytes > 0 &&
        cfg->jemalloc.leak_watch_window_s < cfg->stats_system_memory) {
        loc_err(err, errlen, l,
                JEMALLOC ".leak_watch_window_s = %lld is shorter than "
                ADMIN ".stats_system_memory = %d: the window must hold at "
                "least two samples",
                cfg->jemalloc.leak_watch_window_s, cfg->stats_system_memory);
        return -1;
    }
    if (cfg->jemalloc.leak_watch_growth_bytes > 0 &&
        cfg->jemalloc.dump_retention_count > 0 &&
        cfg->jemalloc.dump_retention_count < cfg->jemalloc.leak_watch_dumps) {
        loc_err(err, errlen, l,
                JEMALLOC ".dump_retention_count = %lld would remove the "
                "leak watch's own series (leak_watch_dumps = %lld): keep "
                "at least as many dumps as a series holds",
                cfg->jemalloc.dump_retention_count,
                cfg->jemalloc.leak_watch_dumps);
        return -1;
    }
    if (cfg->jemalloc.leak_watch_lg_prof_sample != HA_UNSET &&
        cfg->jemalloc.leak_watch_lg_prof_sample <
            cfg->jemalloc.lg_prof_sample_min) {
        loc_err(err, errlen, l,
                JEMALLOC ".leak_watch_lg_prof_sample = %d is below "
                JEMALLOC ".lg_prof_sample_min = %d (each sampled small "
                "allocation costs a 16 KiB extent); allowed: %d..62",
                cfg->jemalloc.leak_watch_lg_prof_sample,
                cfg->jemalloc.lg_prof_sample_min,
                cfg->jemalloc.lg_prof_sample_min);
        return -1;
    }
    if (cfg->jemalloc.lg_prof_sample != HA_UNSET &&
        cfg->jemalloc.lg_prof_sample < cfg->jemalloc.lg_prof_sample_min) {
        l.line = lines[3];
        loc_err(err, errlen, l,
                   JEMALLOC ".lg_prof_sample = %d is below "
                   JEMALLOC ".lg_prof_sample_min = %d: jemalloc promotes "
                   "each sampled small allocation to a 16 KiB extent, so "
                   "sampling that often can multiply resident memory; "
                   "allowed: %d..62, or lower lg_prof_sample_min on purpose",
                   cfg->jemalloc.lg_prof_sample,
                   cfg->jemalloc.lg_prof_sample_min,
                   cfg->jemalloc.lg_prof_sample_min);
        return -1;
    }
    return 0;
}

bool
ha_config_default_exposed(const struct ha_config *cfg, char *why,
                          size_t len)
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
    static const unsigned no_lines[5] = {0, 0, 0, 0, 0};

    init_scalars(cfg);
    cfg->datadir = strdup(".");
    cfg->admin_credentials = strdup(HA_DEFAULT_ADMIN_CREDENTIALS);
    cfg->stats_credentials = strdup(HA_DEFAULT_STATS_CREDENTIALS);
    cfg->mysql_ifaces = strdup(HA_DEFAULT_MYSQL_IFACES);
    /* The defaults always parse; only allocation can fail, which leaves
     * no users and no listeners: a daemon that refuses everyone. */
    if (cfg->admin_credentials != NULL && cfg->stats_credentials != NULL &&
        cfg->mysql_ifaces != NULL)
        (void)derive(cfg, "<defaults>", no_lines, NULL, 0);
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

/* ------------------------------------------------------------------------
 * Parsing
 * --------------------------------------------------------------------- */

/* Reads a boolean the ways proxysql.cnf files write them. Returns 0/1, or
 * -1 when s is none of them. */
static int
bool_value(const config_setting_t *s)
{
    static const struct {
        const char *word;
        int value;
    } words[] = {
        {"true", 1}, {"false", 0}, {"on", 1}, {"off", 0}, {"1", 1}, {"0", 0},
    };
    const char *str;
    long long v;

    switch (config_setting_type(s)) {
    case CONFIG_TYPE_BOOL:
        return config_setting_get_bool(s) ? 1 : 0;
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        v = config_setting_get_int64(s);
        return v == 0 || v == 1 ? (int)v : -1;
    case CONFIG_TYPE_STRING:
        str = config_setting_get_string(s);
        for (size_t i = 0; i < HA_ARRAY_SIZE(words); i++) {
            if (ha_str_ieq(str, words[i].word))
                return words[i].value;
        }
        return -1;
    default:
        return -1;
    }
}

static const char *
key_label(const struct ha_config_key *k, char *buf, size_t len)
{
    if (k->group == NULL)
        snprintf(buf, len, "%s", k->name);
    else
        snprintf(buf, len, "%s.%s", k->group, k->name);
    return buf;
}

/* Checks setting s against k and stores it into cfg. */
static int
apply_key(struct ha_config *cfg, const struct ha_config_key *k,
          const config_setting_t *s, struct loc l, char *err, size_t errlen)
{
    char label[128], why[512];
    char *field = (char *)cfg + k->offset;
    int type = config_setting_type(s);

    key_label(k, label, sizeof(label));
    switch (k->type) {
    case HA_KEY_STRING: {
        const char *val;
        size_t len;

        if (type != CONFIG_TYPE_STRING) {
            loc_err(err, errlen, l,
                    "%s must be a string in double quotes, not %s", label,
                    type_name(type));
            return -1;
        }
        val = config_setting_get_string(s);
        len = strlen(val);
        if ((long long)len < k->min || (long long)len > k->max) {
            if (len == 0)
                loc_err(err, errlen, l,
                        "%s is empty; it must be %lld..%lld "
                        "characters",
                        label, k->min, k->max);
            else
                loc_err(err, errlen, l,
                        "%s is %zu characters long; it must "
                        "be %lld..%lld",
                        label, len, k->min, k->max);
            return -1;
        }
        if (k->validate != NULL && k->validate(val, why, sizeof(why)) < 0) {
            loc_err(err, errlen, l, "%s: %s", label, why);
            return -1;
        }
        if (k->size > 0) {
            memcpy(field, val, len + 1); /* len <= max < size */
        } else {
            char *copy = strdup(val);

            if (copy == NULL) {
                loc_err(err, errlen, l, "%s: out of memory", label);
                return -1;
            }
            free(*(char **)field);
            *(char **)field = copy;
        }
        return 0;
    }
    case HA_KEY_INT:
    case HA_KEY_INT64: {
        long long v;

        if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64) {
            loc_err(err, errlen, l,
                    "%s must be an integer in %lld..%lld, not %s", label,
                    k->min, k->max, type_name(type));
            return -1;
        }
        v = config_setting_get_int64(s);
        if (v < k->min || v > k->max) {
            loc_err(err, errlen, l,
                    "%s = %lld is out of range; allowed %lld..%lld", label, v,
                    k->min, k->max);
            return -1;
        }
        if (k->type == HA_KEY_INT64)
            *(long long *)field = v;
        else
            *(int *)field = (int)v;
        return 0;
    }
    case HA_KEY_BOOL: {
        int v = bool_value(s);

        if (v < 0) {
            loc_err(err, errlen, l,
                    "%s must be a boolean: true/false, 1/0, \"on\"/\"off\" "
                    "(%s given)",
                    label, type_name(type));
            return -1;
        }
        *(int *)field = v;
        return 0;
    }
    default:
        loc_err(err, errlen, l, "%s: internal error: bad key type", label);
        return -1;
    }
}

/* Where derive() finds the line of each spec it parses. */
static unsigned *
derive_line(unsigned lines[5], const struct ha_config_key *k)
{
    if (k->offset == OFF(admin_credentials))
        return &lines[0];
    if (k->offset == OFF(stats_credentials))
        return &lines[1];
    if (k->offset == OFF(mysql_ifaces))
        return &lines[2];
    if (k->offset == OFF(jemalloc.lg_prof_sample))
        return &lines[3];
    if (k->offset == OFF(http_ifaces))
        return &lines[4];
    return NULL;
}

static int
parse_group(struct ha_config *cfg, const config_setting_t *group,
            const char *gname, const char *name, unsigned lines[5], char *err,
            size_t errlen)
{
    int n = config_setting_length(group);

    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *key = config_setting_name(s);
        struct loc l = setting_loc(s, name);
        const struct ha_config_key *k = find_key(gname, key);
        const char *hint;
        int rc;

        if (k != NULL) {
            unsigned *line = derive_line(lines, k);

            if (apply_key(cfg, k, s, l, err, errlen) < 0)
                return -1;
            if (line != NULL)
                *line = l.line;
            continue;
        }
        if (strcmp(gname, ADMIN) == 0 &&
            in_list(proxysql_admin_keys, HA_ARRAY_SIZE(proxysql_admin_keys),
                    key)) {
            rc = add_message(cfg, HA_CONFIG_NOTICE, l,
                             "%s.%s is a ProxySQL setting not used by "
                             "heapadmin; ignored",
                             gname, key);
        } else if ((hint = suggest(gname, key)) != NULL) {
            rc = add_message(cfg, HA_CONFIG_WARNING, l,
                             "unknown key '%s' in %s, ignored; did you "
                             "mean '%s'?",
                             key, gname, hint);
        } else {
            rc = add_message(cfg, HA_CONFIG_WARNING, l,
                             "unknown key '%s' in %s, ignored", key, gname);
        }
        if (rc < 0) {
            loc_err(err, errlen, l, "out of memory");
            return -1;
        }
    }
    return 0;
}

static int
parse_root(struct ha_config *cfg, const config_setting_t *root,
           const char *name, unsigned lines[5], char *err, size_t errlen)
{
    int n = config_setting_length(root);

    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
        const char *key = config_setting_name(s);
        struct loc l = setting_loc(s, name);
        const struct ha_config_key *k = find_key(NULL, key);
        int type = config_setting_type(s);
        const char *hint;
        int rc;

        if (k != NULL) {
            if (apply_key(cfg, k, s, l, err, errlen) < 0)
                return -1;
            continue;
        }
        if (in_list(known_groups, HA_ARRAY_SIZE(known_groups), key)) {
            if (type != CONFIG_TYPE_GROUP) {
                loc_err(err, errlen, l,
                        "%s must be a group, %s = { ... }, not %s", key, key,
                        type_name(type));
                return -1;
            }
            if (parse_group(cfg, s, key, name, lines, err, errlen) < 0)
                return -1;
            continue;
        }
        if (in_list(proxysql_sections, HA_ARRAY_SIZE(proxysql_sections), key)) {
            rc = add_message(cfg, HA_CONFIG_NOTICE, l,
                             "section '%s' is not used by heapadmin; "
                             "ignored",
                             key);
        } else if (in_list(proxysql_root_keys,
                           HA_ARRAY_SIZE(proxysql_root_keys), key)) {
            rc = add_message(cfg, HA_CONFIG_NOTICE, l,
                             "'%s' is a ProxySQL setting not used by "
                             "heapadmin; ignored",
                             key);
        } else {
            const char *what = type == CONFIG_TYPE_GROUP ||
                                       type == CONFIG_TYPE_LIST ||
                                       type == CONFIG_TYPE_ARRAY
                                   ? "section"
                                   : "setting";

            hint = suggest(NULL, key);
            if (hint != NULL)
                rc = add_message(cfg, HA_CONFIG_WARNING, l,
                                 "unknown %s '%s', ignored; did you mean "
                                 "'%s'?",
                                 what, key, hint);
            else
                rc = add_message(cfg, HA_CONFIG_WARNING, l,
                                 "unknown %s '%s', ignored", what, key);
        }
        if (rc < 0) {
            loc_err(err, errlen, l, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Writes " in 'text of line'" for syntax errors (Redis echoes the bad
 * line too), or "" when the line is empty or missing. A line that looks
 * like it holds a password is cut after its '=' so the log never shows
 * one. */
static void
quote_line(const char *text, int line, char *out, size_t outlen)
{
    const char *p = text, *end, *eq;
    size_t len;
    bool secret;

    out[0] = '\0';
    for (int i = 1; i < line && p != NULL; i++) {
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    if (line < 1)
        return;
    /* libconfig reports an unclosed string, group or list at the end of
     * the text, far from the cause; say so instead of quoting nothing. */
    if (p == NULL || p[strspn(p, " \t\r\n")] == '\0') {
        snprintf(out, outlen,
                 " at the end of the file (an unclosed string, group or "
                 "list?)");
        return;
    }
    end = strchr(p, '\n');
    if (end == NULL)
        end = p + strlen(p);
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    if (p == end)
        return;
    len = (size_t)(end - p);
    secret = false;
    for (const char *q = p; q + 8 <= end; q++) {
        if (strncmp(q, "credenti", 8) == 0 || strncmp(q, "password", 8) == 0)
            secret = true;
    }
    eq = memchr(p, '=', len);
    if (secret)
        len = eq != NULL ? (size_t)(eq - p) + 1 : 0;
    if (len == 0)
        return;
    if (len > 60)
        snprintf(out, outlen, " in '%.60s...'", p);
    else
        snprintf(out, outlen, " in '%.*s%s'", (int)len, p,
                 secret ? " ..." : "");
}

/* The body of ha_config_load_string(); include_dir resolves relative
 * @include paths (NULL: the working directory). */
static int
load_text(struct ha_config *cfg, const char *text, const char *name,
          const char *include_dir, char *err, size_t errlen)
{
    struct ha_config tmp;
    unsigned lines[5] = {0, 0, 0, 0, 0};
    config_t lc;
    bool lc_live = false;

    if (name == NULL)
        name = "<string>";
    init_scalars(&tmp);
    tmp.datadir = strdup(".");
    tmp.admin_credentials = strdup(HA_DEFAULT_ADMIN_CREDENTIALS);
    tmp.stats_credentials = strdup(HA_DEFAULT_STATS_CREDENTIALS);
    tmp.mysql_ifaces = strdup(HA_DEFAULT_MYSQL_IFACES);
    tmp.path = strdup(name);
    if (tmp.datadir == NULL || tmp.admin_credentials == NULL ||
        tmp.stats_credentials == NULL || tmp.mysql_ifaces == NULL ||
        tmp.path == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    if (text == NULL) {
        ha_err_set(err, errlen, "%s: no configuration text", name);
        goto fail;
    }

    config_init(&lc);
    lc_live = true;
    if (include_dir != NULL)
        config_set_include_dir(&lc, include_dir);
    if (config_read_string(&lc, text) != CONFIG_TRUE) {
        const char *file = config_error_file(&lc), *what;
        char near[96];

        /* The offending line is only known for our own text, not for an
         * @include'd file. */
        near[0] = '\0';
        if (file == NULL)
            quote_line(text, config_error_line(&lc), near, sizeof(near));
        what = config_error_text(&lc) != NULL ? config_error_text(&lc)
                                              : "parse error";
        ha_err_set(err, errlen, "%s:%d: %s%s%s", file != NULL ? file : name,
                   config_error_line(&lc), what, near,
                   strstr(what, "syntax") != NULL
                       ? "; expected libconfig syntax: name = value, "
                         "groups in { }, lists in ( ), strings in double "
                         "quotes"
                       : "");
        goto fail;
    }
    if (parse_root(&tmp, config_root_setting(&lc), name, lines, err, errlen) <
        0)
        goto fail;
    if (derive(&tmp, name, lines, err, errlen) < 0)
        goto fail;
    config_destroy(&lc);

    ha_config_free(cfg);
    *cfg = tmp;
    return 0;

fail:
    if (lc_live)
        config_destroy(&lc);
    ha_config_free(&tmp);
    ha_config_free(cfg);
    ha_config_init(cfg);
    return -1;
}

int
ha_config_load_string(struct ha_config *cfg, const char *text, const char *name,
                      char *err, size_t errlen)
{
    return load_text(cfg, text, name, NULL, err, errlen);
}

/* Reads all of path into a malloc'd NUL-terminated string. */
static char *
read_file(const char *path, char *err, size_t errlen)
{
    FILE *f;
    char *text = NULL, *grown;
    size_t len = 0, cap = 0, n;

    f = fopen(path, "r");
    if (f == NULL) {
        ha_err_set(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (cap - len < 4096) {
            cap = cap == 0 ? 8192 : cap * 2;
            if (cap > CONFIG_FILE_MAX + 1) {
                ha_err_set(err, errlen,
                           "%s: cannot read: larger than %u bytes, which "
                           "is no configuration file",
                           path, CONFIG_FILE_MAX);
                goto fail;
            }
            grown = realloc(text, cap);
            if (grown == NULL) {
                ha_err_set(err, errlen, "%s: cannot read: %s", path,
                           strerror(ENOMEM));
                goto fail;
            }
            text = grown;
        }
        n = fread(text + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        ha_err_set(err, errlen, "%s: cannot read: %s", path,
                   strerror(errno != 0 ? errno : EIO));
        goto fail;
    }
    fclose(f);
    text[len] = '\0';
    return text;

fail:
    fclose(f);
    free(text);
    return NULL;
}

int
ha_config_load_file(struct ha_config *cfg, const char *path, char *err,
                    size_t errlen)
{
    char *text, *dir;
    const char *slash;
    int ret;

    text = read_file(path, err, errlen);
    if (text == NULL) {
        ha_config_free(cfg);
        ha_config_init(cfg);
        return -1;
    }
    /* @include "x.cnf" inside /etc/heapadmin.cnf means /etc/x.cnf, not
     * x.cnf in whatever directory the daemon was started from. */
    slash = strrchr(path, '/');
    dir = slash != NULL ? strndup(path, (size_t)(slash - path) + 1) : NULL;
    ret = load_text(cfg, text, path, dir, err, errlen);
    free(dir);
    free(text);
    return ret;
}

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
ha_config_log(const struct ha_config *cfg)
{
    const struct ha_jemalloc_config *j = &cfg->jemalloc;

    ha_log_info("config: loaded from %s",
                cfg->path != NULL ? cfg->path : "(built-in defaults)");
    ha_log_info("config: datadir = \"%s\"",
                cfg->datadir != NULL ? cfg->datadir : ".");
    if (cfg->errorlog != NULL)
        ha_log_info("config: errorlog = \"%s\"", cfg->errorlog);
    else
        ha_log_info("config: errorlog = <datadir>/heapadmind.log (default)");
    log_credentials("admin_credentials", cfg->admin_credentials);
    log_credentials("stats_credentials", cfg->stats_credentials);
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
                "leak_watch_lg_prof_sample = %d (-1: the current rate)",
                j->leak_watch_growth_bytes, j->leak_watch_window_s,
                j->leak_watch_dump_interval_s, j->leak_watch_dumps,
                j->leak_watch_lg_prof_sample);
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
        {"admin-stats_system_memory",
         offsetof(struct ha_config, stats_system_memory)},
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
