/* SPDX-License-Identifier: MIT
 *
 * Reading a configuration: libconfig text in proxysql.cnf layout becomes
 * a struct ha_config. ha_config_load_string() does all the work so tests
 * need no files; ha_config_load_file() only reads the file. Each setting
 * is checked against its row of the key table (config_keys.c) for type,
 * range and value; the other proxysql.cnf sections and ProxySQL admin
 * variables are recognised by name so an existing proxysql.cnf loads with
 * notices instead of errors. Parsing goes into a temporary struct that is
 * swapped in only when everything validated (config.c's rules across
 * keys included), so a failed load never leaves a half-applied
 * configuration.
 */
#include "engine/config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libconfig.h>

#include "core/buf.h"
#include "core/util.h"


/* A config file is a few kilobytes; refusing anything huge keeps a wrong
 * -c argument (a log, /dev/zero) from eating memory. */
#define CONFIG_FILE_MAX (16u * 1024 * 1024)

#define ADMIN HA_CONFIG_ADMIN
#define OFF(field) offsetof(struct ha_config, field)

/* ------------------------------------------------------------------------
 * Names of ProxySQL that heapadmin tolerates
 * --------------------------------------------------------------------- */

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

/* Keys an earlier heapadmin read and this one does not: a config that
 * has one still loads, told what took its place. */
static const struct {
    const char *group, *key;
    const char *instead;
} removed_keys[] = {
    {HA_CONFIG_JEMALLOC, "limit_watch_sample_pct",
     "the limit watch no longer waits for a share of the limit to switch "
     "sampling on: it samples from the start wherever a memory limit binds "
     "the process, so that its dumps hold the whole heap "
     "(limit_watch_sampling = true, the default; false leaves sampling as "
     "it is)"},
};

/* ------------------------------------------------------------------------
 * Small helpers
 * --------------------------------------------------------------------- */

/* Where a setting came from, for "file:line: " prefixes. */
struct loc {
    const char *file;
    unsigned line; /* 0: not from the file (a default) */
};

/* What took the place of a removed key, or NULL. */
static const char *
removed_key(const char *group, const char *key)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(removed_keys); i++)
        if (strcmp(removed_keys[i].group, group) == 0 &&
            strcmp(removed_keys[i].key, key) == 0)
            return removed_keys[i].instead;
    return NULL;
}

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
    size_t n_keys;
    const struct ha_config_key *keys = ha_config_keys(&n_keys);

    for (size_t i = 0; i < n_keys; i++) {
        const struct ha_config_key *k = &keys[i];

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
    size_t n_keys, n_groups;
    const struct ha_config_key *keys = ha_config_keys(&n_keys);
    const char *const *groups = ha_config_groups(&n_groups);
    const char *best = NULL;
    int best_d = INT_MAX;

    for (size_t i = 0; i < n_keys; i++) {
        const struct ha_config_key *k = &keys[i];

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
        for (size_t i = 0; i < n_groups; i++) {
            int d = ha_str_distance(name, groups[i]);
            if (d < best_d) {
                best_d = d;
                best = groups[i];
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

/* err = "file:line: <fmt>" (ha_config_err_at) for the setting at l. */
static void
loc_err(char *err, size_t errlen, struct loc l, const char *fmt, ...)
{
    char what[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    ha_config_err_at(err, errlen, l.file, l.line, "%s", what);
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

/* push_targets given as a list of groups of strings, ( { type =
 * "pyroscope"; url = "..."; }, ... ), into its text form "type=pyroscope
 * url=...; ..." (*out malloc'd). A value may hold no space, ';' or
 * control character (the text form could not say it). */
static int
targets_spec(const config_setting_t *list, const char *label, struct loc l,
             char **out, char *err, size_t errlen)
{
    struct ha_buf b = HA_BUF_INIT;
    int n = config_setting_length(list);

    for (int i = 0; i < n; i++) {
        const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
        int m;

        if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
            loc_err(err, errlen, setting_loc(g, l.file),
                    "%s: element %d must be a group { type = \"...\"; url "
                    "= \"...\"; }, not %s",
                    label, i + 1, type_name(config_setting_type(g)));
            goto fail;
        }
        if (i > 0)
            ha_buf_append_str(&b, "; ");
        m = config_setting_length(g);
        for (int j = 0; j < m; j++) {
            const config_setting_t *f = config_setting_get_elem(g, (unsigned)j);
            const char *v;

            if (config_setting_type(f) != CONFIG_TYPE_STRING) {
                loc_err(err, errlen, setting_loc(f, l.file),
                        "%s: element %d: %s must be a string in double "
                        "quotes",
                        label, i + 1, config_setting_name(f));
                goto fail;
            }
            v = config_setting_get_string(f);
            for (const char *c = v; *c != '\0'; c++)
                if ((unsigned char)*c <= 0x20 || *c == ';' || *c == 0x7f) {
                    loc_err(err, errlen, setting_loc(f, l.file),
                            "%s: element %d: %s holds a space, ';' or "
                            "control character, which a push target's "
                            "value may not",
                            label, i + 1, config_setting_name(f));
                    goto fail;
                }
            ha_buf_printf(&b, "%s%s=%s", j > 0 ? " " : "",
                          config_setting_name(f), v);
        }
    }
    ha_buf_append_u8(&b, 0);
    if (ha_buf_failed(&b) || (*out = strdup((const char *)b.data)) == NULL) {
        loc_err(err, errlen, l, "%s: out of memory", label);
        goto fail;
    }
    ha_buf_free(&b);
    return 0;
fail:
    ha_buf_free(&b);
    return -1;
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
        char *spec = NULL;

        if (type == CONFIG_TYPE_LIST && k->offset == OFF(push_targets)) {
            /* The readable form of a list of targets: its text form
             * (engine/pushcfg.h) is what is kept, shown and saved. */
            if (targets_spec(s, label, l, &spec, err, errlen) != 0)
                return -1;
            free(*(char **)field);
            *(char **)field = spec;
            return 0;
        }
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

/* Where ha_config_derive() finds the line of each spec it parses. */
static unsigned *
derive_line(unsigned lines[HA_CONFIG_LINES],
            const struct ha_config_key *k)
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
    if (k->offset == OFF(profile_credentials))
        return &lines[5];
    if (k->offset == OFF(push_targets))
        return &lines[6];
    if (k->offset == OFF(service_names))
        return &lines[7];
    return NULL;
}

static int
parse_group(struct ha_config *cfg, const config_setting_t *group,
            const char *gname, const char *name,
            unsigned lines[HA_CONFIG_LINES], char *err,
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
        if ((hint = removed_key(gname, key)) != NULL) {
            /* limit_watch_sample_pct = 0 said "never": kept as such. */
            bool never = strcmp(key, "limit_watch_sample_pct") == 0 &&
                         config_setting_type(s) == CONFIG_TYPE_INT &&
                         config_setting_get_int(s) == 0;

            if (never)
                cfg->jemalloc.limit_watch_sampling = 0;
            rc = add_message(cfg, HA_CONFIG_NOTICE, l,
                             "%s.%s is no longer read: %s%s", gname, key,
                             hint,
                             never ? "; its 0 (never) is taken as "
                                     "limit_watch_sampling = false"
                                   : "; ignored");
        } else if (strcmp(gname, ADMIN) == 0 &&
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
           const char *name, unsigned lines[HA_CONFIG_LINES], char *err,
           size_t errlen)
{
    size_t n_groups;
    const char *const *groups = ha_config_groups(&n_groups);
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
        if (in_list(groups, n_groups, key)) {
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
    unsigned lines[HA_CONFIG_LINES] = {0};
    config_t lc;
    bool lc_live = false;

    if (name == NULL)
        name = "<string>";
    ha_config_init(&tmp);
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
    if (ha_config_derive(&tmp, name, lines, err, errlen) < 0)
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
    struct stat st;
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
    if (ret == 0 && stat(path, &st) == 0) {
        cfg->has_file_id = true;
        cfg->file_dev = st.st_dev;
        cfg->file_ino = st.st_ino;
    }
    return ret;
}
