#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# jemalloc over SQL on the real daemon: stats_memory_jemalloc rows present,
# numeric and live (they grow after a workload stores blobs), ProxySQL's
# stats_memory_metrics names, global_variables read-write rows (prof_active
# on and off, boolean spellings, lg_prof_sample), the action rows, and every
# invalid write refused with the state unchanged. Needs a live jemalloc.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc

# The whole 0..62 range of lg_prof_sample is exercised here, so the floor
# that protects hosts is lowered on purpose; the floor itself is checked
# at the end with the default config.
HA_JEMALLOC='lg_prof_sample_min = 0;'
ha_start || ha_bail "heapadmind starts and takes logins"

# --- stats_memory_jemalloc ---------------------------------------------------

# heapadmin.* rows are heapadmin's own share, which heapadmind (whose
# memory is all heapadmin's) does not keep apart: absent here, checked
# below; the agent's are in test/agent/.
ha_sql "SELECT variable_name, variable_value FROM stats_memory_jemalloc WHERE variable_name NOT LIKE 'heapadmin.%'"
stats=$HA_OUT
ha_is "SELECT * FROM stats_memory_jemalloc succeeds" "0:" "$HA_RC:$HA_ERR"
for name in allocated active metadata metadata_thp resident mapped retained \
    zero_reallocs background_thread.num_threads background_thread.num_runs \
    background_thread.run_interval narenas; do
    ha_like "stats_memory_jemalloc has a numeric '$name' row" \
        "^${name//./\\.}	[0-9]+$" "$stats"
done
ha_unlike "every stats_memory_jemalloc value is a non-negative integer" \
    "	([^0-9]|$)" "$stats"
ha_sql_is "variable_value is typed INTEGER in SQL" \
    "SELECT count(*) FROM stats_memory_jemalloc WHERE typeof(variable_value) <> 'integer' AND variable_name NOT LIKE 'heapadmin.%'" 0
ha_sql_is "heapadmind keeps no share apart: no heapadmin.* rows" \
    "SELECT count(*) FROM stats_memory_jemalloc WHERE variable_name LIKE 'heapadmin.%'" 0
ha_sql_is "... nor does asking for one by name make it appear" \
    "SELECT count(*) FROM stats_memory_jemalloc WHERE variable_name = 'heapadmin.allocated'" 0
ha_sql_is "WHERE variable_name = 'allocated' reads one row" \
    "SELECT count(*) FROM stats_memory_jemalloc WHERE variable_name = 'allocated'" 1
ha_sql_is "jemalloc's invariants: 0 < allocated <= active <= resident, active <= mapped, narenas >= 1" \
    "SELECT (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'allocated') > 0
        AND (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'allocated')
         <= (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'active')
        AND (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'active')
         <= (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'resident')
        AND (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'active')
         <= (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'mapped')
        AND (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'narenas') >= 1" 1
ha_sql_err "stats_memory_jemalloc is read-only" \
    "UPDATE stats_memory_jemalloc SET variable_value = 0 WHERE variable_name = 'allocated'" \
    "^ERROR [0-9]+"

# Live values: 50 blobs of 1,000,000 bytes stored in another session.
allocated0=$(ha_stat allocated)
resident0=$(ha_stat resident)
ha_sql_ok "workload: store 50 blobs of 1 MB" \
    "CREATE TABLE blobs (b BLOB);
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)
     INSERT INTO blobs SELECT randomblob(1000000) FROM n"
allocated1=$(ha_stat allocated)
resident1=$(ha_stat resident)
if [[ $allocated0$allocated1$resident0$resident1 =~ ^[0-9]+$ ]] &&
    [ "$allocated1" -ge $((allocated0 + 40000000)) ]; then
    ha_pass "allocated grew by at least 40 MB ($allocated0 -> $allocated1)"
else
    ha_fail "allocated grew by at least 40 MB" \
        "before '$allocated0', after '$allocated1'"
fi
if [[ $resident0$resident1 =~ ^[0-9]+$ ]] &&
    [ "$resident1" -ge $((resident0 + 40000000)) ]; then
    ha_pass "resident grew by at least 40 MB ($resident0 -> $resident1)"
else
    ha_fail "resident grew by at least 40 MB" \
        "before '$resident0', after '$resident1'"
fi
# --- stats_memory_metrics: ProxySQL's names ------------------------------------

ha_sql "SELECT * FROM stats_memory_metrics"
metrics=$HA_OUT
ha_is "SELECT * FROM stats_memory_metrics succeeds" "0:" "$HA_RC:$HA_ERR"
for name in jemalloc_resident jemalloc_active jemalloc_allocated \
    jemalloc_mapped jemalloc_metadata jemalloc_retained SQLite3_memory_bytes; do
    ha_like "stats_memory_metrics has ProxySQL's numeric '$name' row" \
        "^$name	[0-9]+$" "$metrics"
done

# --- global_variables: read-write rows -------------------------------------------

var_is() { # DESC NAME EXPECTED
    local v
    v=$(ha_var "$2")
    ha_is "$1" "$3" "$v"
}
set_var() { # NAME VALUE: sets HA_OUT/HA_ERR/HA_RC
    ha_sql "UPDATE global_variables SET variable_value = '$2' WHERE variable_name = '$1'"
}

ha_sql "SELECT variable_name FROM global_variables"
names=$HA_OUT
for name in jemalloc-prof_active jemalloc-lg_prof_sample jemalloc-prof_gdump \
    jemalloc-prof_thread_active_init jemalloc-background_thread \
    jemalloc-dump_now jemalloc-reset_now jemalloc-purge_now jemalloc-prof \
    jemalloc-lg_prof_interval jemalloc-prof_prefix jemalloc-version; do
    ha_like "global_variables has a '$name' row" "^$name$" "$names"
done
creds=$(ha_var admin-admin_credentials)
ha_like "admin-admin_credentials names the user" "^admin:" "$creds"
ha_unlike "admin-admin_credentials masks the password" "admin:admin" "$creds"

var_is "jemalloc-prof reads 'true' (compiled-in prof:true)" jemalloc-prof true
var_is "jemalloc-prof_active starts 'false' (compiled-in prof_active:false)" \
    jemalloc-prof_active false
set_var jemalloc-prof_active true
ha_is "UPDATE jemalloc-prof_active = 'true' succeeds" "0:" "$HA_RC:$HA_ERR"
var_is "jemalloc-prof_active reads back 'true'" jemalloc-prof_active true
set_var jemalloc-prof_active false
ha_is "UPDATE jemalloc-prof_active = 'false' succeeds" "0:" "$HA_RC:$HA_ERR"
var_is "jemalloc-prof_active reads back 'false'" jemalloc-prof_active false
for pair in ON:true off:false 1:true 0:false True:true FALSE:false on:true \
    Off:false; do
    set_var jemalloc-prof_active "${pair%%:*}"
    v=$(ha_var jemalloc-prof_active)
    ha_is "boolean '${pair%%:*}' is accepted and reads back '${pair#*:}'" \
        "0:${pair#*:}" "$HA_RC:$v"
done

lg0=$(ha_var jemalloc-lg_prof_sample)
ha_is "jemalloc-lg_prof_sample starts at jemalloc's default 19" 19 "$lg0"
HA_OUT=$(ha_mysql -vvv -e "UPDATE global_variables SET variable_value = '12' WHERE variable_name = 'jemalloc-lg_prof_sample'" 2>&1)
ha_like "UPDATE jemalloc-lg_prof_sample = '12' succeeds (1 row)" \
    "^Query OK, 1 row affected" "$HA_OUT"
ha_like "UPDATE jemalloc-lg_prof_sample = '12': OK info says the samples were discarded" \
    "discard" "$HA_OUT"
var_is "jemalloc-lg_prof_sample reads back 12" jemalloc-lg_prof_sample 12
set_var jemalloc-lg_prof_sample 0
var_is "jemalloc-lg_prof_sample accepts 0 (lower bound)" \
    jemalloc-lg_prof_sample 0
set_var jemalloc-lg_prof_sample 62
var_is "jemalloc-lg_prof_sample accepts 62 (upper bound)" \
    jemalloc-lg_prof_sample 62
set_var jemalloc-lg_prof_sample 19

for name in prof_gdump prof_thread_active_init background_thread; do
    v0=$(ha_var "jemalloc-$name")
    if [ "$v0" = true ]; then v1=false; else v1=true; fi
    set_var "jemalloc-$name" "$v1"
    v=$(ha_var "jemalloc-$name")
    ha_is "jemalloc-$name: '$v0' -> '$v1' reads back" "0:$v1" "$HA_RC:$v"
    set_var "jemalloc-$name" "$v0"
    v=$(ha_var "jemalloc-$name")
    ha_is "jemalloc-$name: back to '$v0'" "0:$v0" "$HA_RC:$v"
done
set_var jemalloc-background_thread true
threads=$(ha_stat background_thread.num_threads)
ha_like "background_thread on: stats show background threads" "^[1-9][0-9]*$" \
    "$threads"
set_var jemalloc-background_thread false

for action in purge_now reset_now; do
    set_var "jemalloc-$action" true
    ha_is "UPDATE jemalloc-$action = 'true' succeeds" "0:" "$HA_RC:$HA_ERR"
    var_is "jemalloc-$action reads 'false' afterwards" "jemalloc-$action" false
done
ha_sql_ok "an UPDATE that matches no row changes nothing and succeeds" \
    "UPDATE global_variables SET variable_value = 'x' WHERE variable_name = 'no-such-variable'"

# --- every invalid write is refused, and nothing changes -----------------------

# refused DESC SQL REGEX: the statement fails with an ERR matching REGEX,
# and every global_variables row still reads as before.
refused() {
    local before after
    ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name NOT LIKE '%_now'"
    before=$HA_OUT
    ha_sql_err "$1: refused" "$2" "$3"
    ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name NOT LIKE '%_now'"
    after=$HA_OUT
    if [ "$before" = "$after" ]; then
        ha_pass "$1: nothing changed"
    else
        ha_fail "$1: nothing changed" \
            "changed rows: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ')"
    fi
}

set_var jemalloc-prof_active true
refused "prof_active = 'maybe'" \
    "UPDATE global_variables SET variable_value = 'maybe' WHERE variable_name = 'jemalloc-prof_active'" \
    "^ERROR [0-9]+ .*jemalloc-prof_active.*maybe"
refused "prof_active = NULL" \
    "UPDATE global_variables SET variable_value = NULL WHERE variable_name = 'jemalloc-prof_active'" \
    "^ERROR [0-9]+ .*jemalloc-prof_active"
refused "lg_prof_sample = 63 (allowed 0..62)" \
    "UPDATE global_variables SET variable_value = '63' WHERE variable_name = 'jemalloc-lg_prof_sample'" \
    "^ERROR [0-9]+ .*jemalloc-lg_prof_sample.*63.*62"
refused "lg_prof_sample = -1" \
    "UPDATE global_variables SET variable_value = '-1' WHERE variable_name = 'jemalloc-lg_prof_sample'" \
    "^ERROR [0-9]+ .*jemalloc-lg_prof_sample.*-1"
refused "lg_prof_sample = 'abc'" \
    "UPDATE global_variables SET variable_value = 'abc' WHERE variable_name = 'jemalloc-lg_prof_sample'" \
    "^ERROR [0-9]+ .*jemalloc-lg_prof_sample.*abc"
refused "lg_prof_sample = '12abc'" \
    "UPDATE global_variables SET variable_value = '12abc' WHERE variable_name = 'jemalloc-lg_prof_sample'" \
    "^ERROR [0-9]+ .*jemalloc-lg_prof_sample.*12abc"
refused "read-only jemalloc-prof" \
    "UPDATE global_variables SET variable_value = 'false' WHERE variable_name = 'jemalloc-prof'" \
    "^ERROR [0-9]+ .*jemalloc-prof"
refused "read-only jemalloc-lg_prof_interval" \
    "UPDATE global_variables SET variable_value = '20' WHERE variable_name = 'jemalloc-lg_prof_interval'" \
    "^ERROR [0-9]+ .*jemalloc-lg_prof_interval"
refused "read-only jemalloc-version" \
    "UPDATE global_variables SET variable_value = '1.0' WHERE variable_name = 'jemalloc-version'" \
    "^ERROR [0-9]+ .*jemalloc-version"
refused "dump_now = 'maybe'" \
    "UPDATE global_variables SET variable_value = 'maybe' WHERE variable_name = 'jemalloc-dump_now'" \
    "^ERROR [0-9]+ .*jemalloc-dump_now.*maybe"
refused "INSERT" \
    "INSERT INTO global_variables (variable_name, variable_value) VALUES ('jemalloc-new', '1')" \
    "^ERROR [0-9]+ "
refused "INSERT OR REPLACE of an existing row" \
    "INSERT OR REPLACE INTO global_variables VALUES ('jemalloc-prof_active', 'false')" \
    "^ERROR [0-9]+ "
refused "DELETE" \
    "DELETE FROM global_variables WHERE variable_name = 'jemalloc-prof_active'" \
    "^ERROR [0-9]+ "
refused "renaming a variable" \
    "UPDATE global_variables SET variable_name = 'jemalloc-other' WHERE variable_name = 'jemalloc-prof_active'" \
    "^ERROR [0-9]+ "
refused "all or nothing: one bad row fails the whole UPDATE" \
    "UPDATE global_variables SET variable_value = CASE variable_name WHEN 'jemalloc-prof_active' THEN 'false' ELSE '63' END WHERE variable_name IN ('jemalloc-prof_active', 'jemalloc-lg_prof_sample')" \
    "^ERROR [0-9]+ .*jemalloc-lg_prof_sample"
var_is "prof_active is still 'true' after the refused writes" \
    jemalloc-prof_active true
ha_sql_is "the row count of global_variables did not change" \
    "SELECT count(*) FROM global_variables WHERE variable_name = 'jemalloc-new'" 0
set_var jemalloc-prof_active false
var_is "prof_active switched off at the end" jemalloc-prof_active false
ha_sql_is "the daemon still serves" "SELECT 1+1" 2

# --- the lg_prof_sample floor and the statistics freshness window --------------

HA_JEMALLOC=
HA_DATADIR=$HA_TMP/floor
if ha_start; then
    var_is "jemalloc-lg_prof_sample_min defaults to 14" \
        jemalloc-lg_prof_sample_min 14
    HA_OUT=$(ha_mysql -e "UPDATE global_variables SET variable_value = '12' WHERE variable_name = 'jemalloc-lg_prof_sample'" 2>&1)
    ha_like "lg_prof_sample 12 is refused below the floor, with the memory cost explained" \
        "below the floor jemalloc-lg_prof_sample_min = 14.*16 KiB extent.*Allowed: 14..62" "$HA_OUT"
    var_is "the refused UPDATE changed nothing" jemalloc-lg_prof_sample 19
    set_var jemalloc-lg_prof_sample 14
    var_is "lg_prof_sample 14, the floor itself, is accepted" \
        jemalloc-lg_prof_sample 14
    HA_OUT=$(ha_mysql -e "UPDATE global_variables SET variable_value = '1' WHERE variable_name = 'jemalloc-lg_prof_sample_min'" 2>&1)
    ha_like "the floor cannot be lowered over SQL" \
        "jemalloc-lg_prof_sample_min is read-only" "$HA_OUT"

    ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'stats_age_ms'"
    ha_like "stats_age_ms: every scan refreshes by default (age under 100 ms)" \
        "^0:[0-9]{1,2}$" "$HA_RC:$HA_OUT"
    set_var jemalloc-stats_max_age_ms 60000
    var_is "jemalloc-stats_max_age_ms is settable" jemalloc-stats_max_age_ms 60000
    ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
    sleep 1.2
    ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'stats_age_ms'"
    ha_like "with a 60 s window, a scan 1.2 s later reuses the refresh (age >= 1000 ms)" \
        "^0:[1-9][0-9]{3,}$" "$HA_RC:$HA_OUT"
    set_var jemalloc-stats_max_age_ms 0
    ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'stats_age_ms'"
    ha_like "back to 0: the next scan refreshes again (age under 100 ms)" \
        "^0:[0-9]{1,2}$" "$HA_RC:$HA_OUT"
    HA_OUT=$(ha_mysql -e "UPDATE global_variables SET variable_value = '-5' WHERE variable_name = 'jemalloc-stats_max_age_ms'" 2>&1)
    ha_like "a negative window is refused, naming what is allowed" \
        "jemalloc-stats_max_age_ms = '-5': invalid value; allowed: milliseconds" "$HA_OUT"
fi

printf 'jemalloc_variables = { lg_prof_sample = 10 }\n' > "$HA_TMP/floorcfg.cnf"
HA_OUT=$(timeout 10 "$HA_DAEMON" -f -c "$HA_TMP/floorcfg.cnf" -D "$HA_TMP/floorcfg" 2>&1)
ha_like "a config asking for lg_prof_sample below the floor is refused at start" \
    "lg_prof_sample = 10 is below jemalloc_variables.lg_prof_sample_min = 14" "$HA_OUT"

ha_done
