/* SPDX-License-Identifier: MIT
 *
 * The settings a configuration file may hold (see config.h): one table,
 * config_keys[], gives each key its group, type, range, validator and
 * field in struct ha_config, and drives loading (config_read.c) and
 * writing back (config_write.c) alike. Adding a setting is a row here, a
 * field and a default in config.h/config.c, and a line in the shipped
 * configs. Checks that span several keys live in config.c
 * (ha_config_derive()).
 */
#include "engine/config.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "core/util.h"
#include "engine/limitrule.h"
#include "prof/wrappers.h"

static int validate_dump_prefix(const char *val, char *why, size_t whylen);
static int validate_auth_plugin(const char *val, char *why, size_t whylen);
static int validate_socket_mode(const char *val, char *why, size_t whylen);
static int validate_debug_root(const char *val, char *why, size_t whylen);
static int validate_debuginfod_urls(const char *val, char *why,
                                    size_t whylen);
static int validate_fractions(const char *val, char *why, size_t whylen);
static int validate_wrappers(const char *val, char *why, size_t whylen);

#define ADMIN HA_CONFIG_ADMIN
#define JEMALLOC HA_CONFIG_JEMALLOC
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
     * the table pass (ha_config_derive()), because duplicate user names
     * are checked across both credential lists. */
    {ADMIN, "admin_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(admin_credentials), 0},
    {ADMIN, "stats_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(stats_credentials), 0},
    {ADMIN, "profile_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(profile_credentials), 0},
    /* The fleet: parsed after the table pass too (ha_config_derive());
     * push_targets may be a list of groups in a file, which the loader
     * writes as its text form (engine/pushcfg.h). Bytes from 64 KiB,
     * seconds. */
    {ADMIN, "service_names", HA_KEY_STRING, 0, 65535, NULL,
     OFF(service_names), 0},
    {ADMIN, "push_targets", HA_KEY_STRING, 0, 65535, NULL,
     OFF(push_targets), 0},
    {ADMIN, "push_outbox_max_bytes", HA_KEY_INT64, 64 << 10, 1LL << 40, NULL,
     OFF(push_outbox_max_bytes), 0},
    {ADMIN, "push_timeout_s", HA_KEY_INT, 1, 600, NULL, OFF(push_timeout_s),
     0},
    {ADMIN, "push_retry_max_s", HA_KEY_INT, 1, 86400, NULL,
     OFF(push_retry_max_s), 0},
    {ADMIN, "push_live_interval_s", HA_KEY_INT, 0, 86400, NULL,
     OFF(push_live_interval_s), 0},
    {ADMIN, "mysql_ifaces", HA_KEY_STRING, 0, 65535, NULL, OFF(mysql_ifaces),
     0},
    /* HTTP (Prometheus /metrics): off unless listed. */
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
    /* Connections that have not logged in: what an outsider without a
     * password can hold. */
    {ADMIN, "max_pending_logins", HA_KEY_INT, 1, 100000, NULL,
     OFF(max_pending_logins), 0},
    {ADMIN, "max_pending_logins_per_host", HA_KEY_INT, 1, 100000, NULL,
     OFF(max_pending_logins_per_host), 0},
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
    /* Allocation sites: the operator's edits of the wrappers the site
     * rule looks past (jemalloc-alloc_wrappers at run time). */
    {JEMALLOC, "alloc_wrappers", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->alloc_wrappers) - 1,
     validate_wrappers, OFF(jemalloc.alloc_wrappers),
     sizeof(((struct ha_jemalloc_config *)0)->alloc_wrappers)},
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
    /* The limit watch (engine/limitwatch.h): shares of the memory limit,
     * a PSI percent (0 = off), events, seconds between its dumps, where
     * sampling goes on (percent of the limit, 0 = never) and its rate. */
    {JEMALLOC, "limit_dump_fractions", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->limit_dump_fractions) - 1,
     validate_fractions, OFF(jemalloc.limit_dump_fractions),
     sizeof(((struct ha_jemalloc_config *)0)->limit_dump_fractions)},
    {JEMALLOC, "limit_dump_psi_pct", HA_KEY_INT, 0, 100, NULL,
     OFF(jemalloc.limit_dump_psi_pct), 0},
    {JEMALLOC, "limit_dump_events", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.limit_dump_events), 0},
    {JEMALLOC, "limit_dump_min_interval_s", HA_KEY_INT64, 0, 86400, NULL,
     OFF(jemalloc.limit_dump_min_interval_s), 0},
    {JEMALLOC, "limit_watch_sample_pct", HA_KEY_INT, 0, 100, NULL,
     OFF(jemalloc.limit_watch_sample_pct), 0},
    {JEMALLOC, "limit_watch_lg_prof_sample", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.limit_watch_lg_prof_sample), 0},
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

/* ------------------------------------------------------------------------
 * Validators of single values
 * --------------------------------------------------------------------- */

static int
validate_fractions(const char *val, char *why, size_t whylen)
{
    double f[HA_LIMITWATCH_FRACTIONS_MAX];
    size_t n;

    return ha_limitwatch_parse_fractions(val, f, HA_LIMITWATCH_FRACTIONS_MAX,
                                         &n, why, whylen);
}

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

/* The syntax of jemalloc-alloc_wrappers (prof/wrappers.h). */
static int
validate_wrappers(const char *val, char *why, size_t whylen)
{
    struct ha_wrap_conf conf;

    if (ha_wrap_conf_parse(val, &conf, why, whylen) != 0)
        return -1;
    ha_wrap_conf_free(&conf);
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
