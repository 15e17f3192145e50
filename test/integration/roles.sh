#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Who may do what, with the real daemon and the mariadb client: the stats
# user reads the stats tables and runs the compatibility queries but
# cannot write, SET module variables, read credentials or touch files;
# admins cannot touch files either; hashed credentials log in; a default
# credential next to a non-loopback interface is warned about at start-up.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

denied() { # COMMAND TABLE
    printf "^ERROR 1142 \\(42000\\).*: %s command denied to user 'stats'@'127\\.0\\.0\\.1' for table '%s'$" "$1" "$2"
}
no_files='^ERROR 1227 \(42000\).*: Access denied; ATTACH, DETACH and VACUUM INTO are not allowed: SQL on the admin interface cannot touch files$'

template=$HA_TMP/roles.cnf
cat >"$template" <<'CNF'
datadir = "@DATADIR@";
admin_variables =
{
    # ops's password is "secret", as MySQL's PASSWORD('secret') shows it
    admin_credentials = "admin:admin;ops:*14E65567ABDB5135D0CFD9A70B3032C179A49EE7";
    stats_credentials = "stats:stats";
    mysql_ifaces = "0.0.0.0:@PORT@;@SOCK@";
};
CNF
ha_start -C "$template" || ha_bail "heapadmind starts with a 0.0.0.0 interface"

ha_file_like "start-up warns: default credential on a non-loopback interface" \
    "$HA_LOG" "user 'admin' has the default password and mysql_ifaces listens on 0\.0\.0\.0:"

# --- stats user: what works -------------------------------------------
for q in "SELECT count(*) > 0 FROM stats_memory_metrics" \
    "SELECT count(*) > 0 FROM stats_memory_jemalloc" \
    "SELECT count(*) > 0 FROM stats.stats_admin_sessions" \
    "SHOW DATABASES" "SHOW TABLES" "SHOW VARIABLES" "SHOW STATUS" \
    "SHOW PROCESSLIST" "SHOW COLUMNS FROM stats_memory_metrics" \
    "SELECT @@version" "SELECT @@version_comment LIMIT 1" "SELECT DATABASE()"; do
    ha_sql_ok "stats: $q" "$q" -ustats -pstats
done

# --- stats user: refusals ---------------------------------------------
ha_sql_err "stats: UPDATE global_variables is ERR 1142" \
    "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-prof_active'" \
    "$(denied UPDATE global_variables)" -ustats -pstats
ha_sql_err "stats: SET jemalloc-prof_active is ERR 1142" \
    "SET jemalloc-prof_active = 'true'" \
    "$(denied UPDATE global_variables)" -ustats -pstats
ha_sql_is "stats: prof_active unchanged" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'" \
    "false"
ha_sql_err "stats: CREATE TABLE is ERR 1142" "CREATE TABLE t(a)" \
    "$(denied CREATE t)" -ustats -pstats
ha_sql_err "stats: PRAGMA is ERR 1227" "PRAGMA table_list" \
    '^ERROR 1227 \(42000\).*: Access denied; you need \(at least one of\) the SUPER privilege\(s\) for this operation$' \
    -ustats -pstats
ha_sql_err "stats: ATTACH is ERR 1227" "ATTACH '$HA_TMP/a.db' AS a" \
    "$no_files" -ustats -pstats
ha_sql_err "stats: load_extension() is ERR 1227" "SELECT load_extension('x')" \
    '^ERROR 1227 \(42000\).*function load_extension\(\) is not allowed' \
    -ustats -pstats
ha_sql_is "stats: credential values read as NULL (admin, stats, profile)" \
    "SELECT ifnull(variable_value, 'NULL') FROM global_variables WHERE variable_name LIKE 'admin-%credentials'" \
    "NULL
NULL
NULL" -ustats -pstats
ha_sql_is "stats: ... and through runtime_global_variables alike" \
    "SELECT ifnull(variable_value, 'NULL') FROM runtime_global_variables WHERE variable_name LIKE 'admin-%credentials'" \
    "NULL
NULL
NULL" -ustats -pstats
ha_sql_is "stats: no runtime_global_variables value at all, as global_variables" \
    "SELECT (SELECT count(variable_value) FROM runtime_global_variables) || ':' || (SELECT count(variable_value) FROM global_variables) || ':' || (SELECT count(*) > 20 FROM runtime_global_variables)" \
    "0:0:1" -ustats -pstats
ha_sql_is "admin: runtime_global_variables shows the values" \
    "SELECT count(variable_value) > 20 FROM runtime_global_variables" 1

# --- every user: no files ----------------------------------------------
ha_sql_err "admin: VACUUM INTO is ERR 1227" "VACUUM INTO '$HA_TMP/v.db'" \
    "$no_files"
ha_sql_err "admin: ATTACH is ERR 1227" "ATTACH '$HA_TMP/a.db' AS a" "$no_files"
ha_sql_err "admin: PRAGMA writable_schema is ERR 1227" \
    "PRAGMA writable_schema = 1" \
    '^ERROR 1227 \(42000\).*PRAGMA writable_schema is not allowed'
ha_sql_err "admin: load_extension() is ERR 1227" "SELECT load_extension('x')" \
    'function load_extension\(\) is not allowed'
ha_ok "no file was created through SQL" \
    test ! -e "$HA_TMP/v.db" -a ! -e "$HA_TMP/a.db"
ha_sql_is "admin: credential list shown masked" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'admin-admin_credentials'" \
    "admin:****;ops:****"

# --- hashed credentials --------------------------------------------------
ha_sql_is "a user given as a native hash logs in" "SELECT CURRENT_USER()" \
    "ops@%" -uops -psecret
ha_sql "SELECT 1" -uops -pwrong
ha_is "a native-hash user with a wrong password is refused" 1 "$HA_RC"

# --- no password in the log ------------------------------------------------
ha_unlike "the log holds no password" \
    'admin:admin|stats:stats|14E65567ABDB5135D0CFD9A70B3032C179A49EE7' \
    "$(cat "$HA_LOG")"

ha_stop
ha_done
