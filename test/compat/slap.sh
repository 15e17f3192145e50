#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mariadb-slap (mariadb-client): concurrent clients running SELECT * FROM
# stats_memory_jemalloc, the prof_active UPDATEs, a multi-statement query
# (mariadb-slap connects with CLIENT_MULTI_STATEMENTS and reads every
# result with mysql_next_result) and an SQL error. --create-schema names
# the admin schema "main" and --no-drop keeps mariadb-slap from dropping
# it: by default it would create and drop a scratch schema "mysqlslap",
# which an admin interface has no reason to accept. mariadb-slap exits 0
# even when queries fail, so every run must also leave stderr empty.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

hc_require_cmd mariadb-slap mariadb-client
hc_start

# slap NAME ARGS...: HC_RC, $HA_TMP/NAME.out and NAME.err
slap() {
    local name=$1
    shift
    timeout -k 2 30 mariadb-slap --no-defaults --protocol=TCP -h"$HC_HOST" \
        -P"$HC_PORT" --skip-ssl -u"$HC_USER" -p"$HC_PASS" \
        --create-schema="$HC_DB" --no-drop "$@" \
        >"$HA_TMP/$name.out" 2>"$HA_TMP/$name.err"
    HC_RC=$?
}

# slap_ok DESC NAME ARGS...: exit 0, nothing on stderr.
slap_ok() {
    local desc=$1 name=$2
    shift 2
    slap "$name" "$@"
    ha_is "$desc" "0:" "$HC_RC:$(cat "$HA_TMP/$name.err")"
}

slap_ok "mariadb-slap: 4 clients x 2 iterations of SELECT * FROM stats_memory_jemalloc" \
    select --concurrency=4 --iterations=2 --number-of-queries=200 \
    --query="SELECT * FROM stats_memory_jemalloc"
out=$(cat "$HA_TMP/select.out")
ha_like "mariadb-slap: the benchmark ran 4 clients" \
    "Number of clients running queries: 4$" "$out"
ha_like "mariadb-slap: 50 queries per client" \
    "Average number of queries per client: 50$" "$out"

for value in true false; do
    slap_ok "mariadb-slap: UPDATE jemalloc-prof_active to '$value' from 2 clients" \
        "update-$value" --concurrency=2 --iterations=1 \
        --query="UPDATE global_variables SET variable_value = '$value' WHERE variable_name = 'jemalloc-prof_active'"
    ha_is "jemalloc-prof_active reads back '$value'" "$value" \
        "$(ha_var jemalloc-prof_active)"
done

slap_ok "mariadb-slap: a multi-statement query (two result sets per COM_QUERY)" \
    multi --concurrency=2 --iterations=2 --number-of-queries=20 \
    --query="SELECT * FROM stats_memory_jemalloc; SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'"

slap error --concurrency=1 --iterations=1 --query="SELECT * FROM no_such_table"
ha_like "mariadb-slap: SELECT from a missing table reports the server's message" \
    "Cannot run query SELECT \* FROM no_such_table ERROR : .*no_such_table" \
    "$(cat "$HA_TMP/error.err")"
ha_sql_is "the daemon still answers after the mariadb-slap runs" "SELECT 1" 1
hc_done
