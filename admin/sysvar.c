/* SPDX-License-Identifier: MIT
 *
 * The table of MySQL system variables heapadmind reports (see sysvar.h).
 * Session-dependent ones (autocommit, the current schema) are answered by
 * the session layer before this table is consulted.
 */
#include "admin/sysvar.h"

#include <stddef.h>

#include "core/util.h"

#define INT(n, v) {n, HA_SYSVAR_INT, v, NULL, false}
#define TEXT(n, v) {n, HA_SYSVAR_TEXT, 0, v, false}
/* Fixed facts about the server: SET refuses them. */
#define RO_INT(n, v) {n, HA_SYSVAR_INT, v, NULL, true}
#define RO_TEXT(n, v) {n, HA_SYSVAR_TEXT, 0, v, true}

/* Read-only, shared by every instance: the limits that follow the config
 * are answered per instance by ha_sysvar_int. */
static const struct ha_sysvar sysvars[] = {
    RO_TEXT("version", HA_SERVER_VERSION),
    RO_TEXT("version_comment", HA_VERSION_COMMENT),
    RO_TEXT("version_compile_os", "Linux"),
    RO_TEXT("version_compile_machine", "x86_64"),
    INT("auto_increment_increment", 1),
    INT("auto_increment_offset", 1),
    TEXT("character_set_client", "utf8mb4"),
    TEXT("character_set_connection", "utf8mb4"),
    TEXT("character_set_database", "utf8mb4"),
    {"character_set_results", HA_SYSVAR_NULL, 0, NULL, false},
    TEXT("character_set_filesystem", "binary"),
    TEXT("character_set_server", "utf8mb4"),
    RO_TEXT("character_set_system", "utf8mb3"),
    TEXT("collation_connection", "utf8mb4_0900_ai_ci"),
    TEXT("collation_database", "utf8mb4_0900_ai_ci"),
    TEXT("collation_server", "utf8mb4_0900_ai_ci"),
    TEXT("init_connect", ""),
    INT("interactive_timeout", 28800),
    RO_TEXT("license", "MIT"),
    RO_INT("lower_case_table_names", 0),
    INT("max_allowed_packet", 67108864),
    INT("net_buffer_length", 16384),
    INT("net_write_timeout", 60),
    INT("net_read_timeout", 30),
    RO_INT("performance_schema", 0),
    RO_INT("query_cache_size", 0),
    TEXT("query_cache_type", "OFF"),
    TEXT("sql_mode", "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION"),
    RO_TEXT("system_time_zone", "UTC"),
    TEXT("time_zone", "SYSTEM"),
    TEXT("transaction_isolation", "SERIALIZABLE"),
    TEXT("tx_isolation", "SERIALIZABLE"),
    INT("transaction_read_only", 0),
    INT("tx_read_only", 0),
    INT("wait_timeout", 28800),
    INT("sql_select_limit", -1),
    INT("sql_auto_is_null", 0),
    INT("sql_safe_updates", 0),
    INT("max_execution_time", 0),
    RO_INT("have_ssl", 0),
    TEXT("default_storage_engine", "SQLite"),
    RO_TEXT("default_authentication_plugin", "mysql_native_password"),
    RO_TEXT("hostname", "localhost"),
    RO_INT("port", 6032),
    RO_TEXT("socket", ""),
    INT("read_only", 0),
    INT("super_read_only", 0),
    RO_INT("server_id", 0),
    RO_TEXT("protocol_version", "10"),
    RO_TEXT("tls_version", ""),
    INT("foreign_key_checks", 1),
    INT("unique_checks", 1),
    INT("sql_quote_show_create", 1),
    INT("sql_notes", 1),
    INT("sql_warnings", 0),
    INT("sql_log_bin", 1),
    INT("group_concat_max_len", 1024),
    INT("div_precision_increment", 4),
    INT("explicit_defaults_for_timestamp", 1),
    INT("lock_wait_timeout", 31536000),
    INT("innodb_lock_wait_timeout", 50),
    RO_INT("warning_count", 0),
    RO_INT("error_count", 0),
    RO_TEXT("gtid_mode", "OFF"),
    RO_TEXT("event_scheduler", "OFF"),
    TEXT("default_tmp_storage_engine", "SQLite"),
};

const struct ha_sysvar *
ha_sysvar_at(size_t i)
{
    return i < HA_ARRAY_SIZE(sysvars) ? &sysvars[i] : NULL;
}

int64_t
ha_sysvar_int(const struct ha_sysvar *sv, const struct ha_sysvar_limits *lim)
{
    int64_t v = 0;

    if (lim != NULL) {
        if (ha_str_ieq(sv->name, "max_allowed_packet"))
            v = lim->max_allowed_packet;
        else if (ha_str_ieq(sv->name, "wait_timeout"))
            v = lim->wait_timeout;
        else if (ha_str_ieq(sv->name, "net_write_timeout"))
            v = lim->net_write_timeout;
        else if (ha_str_ieq(sv->name, "max_execution_time"))
            v = lim->max_execution_time;
    }
    return v != 0 ? v : sv->ival;
}

const struct ha_sysvar *
ha_sysvar_find(const char *name)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(sysvars); i++)
        if (ha_str_ieq(sysvars[i].name, name))
            return &sysvars[i];
    return NULL;
}
