#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The lifetime window on the real daemon, as an unlucky operator meets it:
# values out of bounds are refused naming what is allowed; a second
# window while one is open is refused; closing with 0 publishes at once;
# a window whose log outgrows jemalloc-log_max_bytes closes early, said
# so; a window open when heapadmind stops is published on the way out; a
# log is read by heap_lifetimes and refused by heap_top (and the other
# way round); stats users read, admins switch. Every published log comes
# with its side files, private.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc

# Every allocation sampled: a log fills fast.
HA_JEMALLOC='prof_active = true; lg_prof_sample_min = 0; lg_prof_sample = 0;'
ha_start || ha_bail "heapadmind starts and takes logins"
datadir=$(realpath "$HA_DATADIR")

workload() {
    ha_sql "CREATE TABLE IF NOT EXISTS w(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${1:-3000}) INSERT INTO w SELECT randomblob(200) FROM n; DELETE FROM w"
}

# wait_log N: until N logs are listed (10 s).
wait_log() {
    for _ in $(seq 100); do
        ha_sql "SELECT count(*) FROM stats_heap_dumps WHERE kind = 'log'"
        [ "$HA_OUT" = "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

# --- refused values ---------------------------------------------------------

ha_sql_err "601 s is past the bound" \
    "UPDATE global_variables SET variable_value = '601' WHERE variable_name = 'jemalloc-log_now'" \
    "jemalloc-log_now = '601': invalid value; allowed: seconds from 1 to 600"
ha_sql_err "a negative window is refused" \
    "UPDATE global_variables SET variable_value = '-1' WHERE variable_name = 'jemalloc-log_now'" \
    "allowed: seconds from 1 to 600"
ha_sql_err "log_max_bytes below 1 MiB is refused" \
    "UPDATE global_variables SET variable_value = '4096' WHERE variable_name = 'jemalloc-log_max_bytes'" \
    "allowed: bytes from 1048576 \\(1 MiB\\)"
ha_sql_err "jemalloc's unbounded recent list (-1) is refused" \
    "UPDATE global_variables SET variable_value = '-1' WHERE variable_name = 'jemalloc-recent_alloc_max'" \
    "jemalloc's -1, no bound, is refused"
ha_sql "UPDATE global_variables SET variable_value = '0' WHERE variable_name = 'jemalloc-log_now'" -vv
ha_like "0 with no window open closes nothing, and says so" \
    "no lifetime window is open" "$HA_RC:$HA_OUT"
HA_USER=stats HA_PASS=stats ha_sql "UPDATE global_variables SET variable_value = '5' WHERE variable_name = 'jemalloc-log_now'"
ha_like "a stats user may not open a window" "^1:" "$HA_RC:$HA_ERR"
ha_is "... and none opened" "closed" "$(ha_var jemalloc-log_state)"

# --- closed by the operator -----------------------------------------------------

ha_sql "UPDATE global_variables SET variable_value = '300' WHERE variable_name = 'jemalloc-log_now'"
ha_is "a 300 s window opens" "0" "$HA_RC"
ha_sql_err "a second window while one is open is refused" \
    "UPDATE global_variables SET variable_value = '10' WHERE variable_name = 'jemalloc-log_now'" \
    "a lifetime window is already open in this process"
workload 2000
ha_sql "UPDATE global_variables SET variable_value = '0' WHERE variable_name = 'jemalloc-log_now'" -vv
log=proxysql.$HA_PID.0.json
ha_like "0 closes it now, naming the published log" \
    "lifetime window closed: log published as $datadir/$log" "$HA_RC:$HA_OUT"
ha_file_like "... closed by the operator" "$datadir/$log.window" "closed_by=operator"
ha_ok "... the log is not world-readable (0600)" \
    test "$(stat -c %a "$datadir/$log")" = 600
ha_ok "... nothing is left in the staging directory" \
    test -z "$(ls -A "$datadir/.heapadmin-staging" 2>/dev/null)"
ha_sql "SELECT count(*) > 0, sum(samples) > 100 FROM heap_lifetimes('$log')"
ha_is "heap_lifetimes reads it" "0:1	1" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) > 0 FROM heap_lifetimes_stacks('$log') WHERE stack LIKE '%ha_conn_command_run%'"
ha_is "... heap_lifetimes_stacks names the statements' stacks" "0:1" "$HA_RC:$HA_OUT"
ha_sql_err "heap_top refuses a log, naming the table that reads it" \
    "SELECT * FROM heap_top('$log')" \
    "is a lifetime log \\(stats_heap_dumps kind 'log'\\), not a heap dump: read it with heap_lifetimes"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps WHERE kind = 'manual' LIMIT 1"
dump=$HA_OUT
ha_sql_err "heap_lifetimes refuses a heap dump" \
    "SELECT * FROM heap_lifetimes('$dump')" "is a heap dump, not a lifetime log"
ha_sql_err "heap_lifetimes needs its argument" \
    "SELECT * FROM heap_lifetimes" "heap_lifetimes needs a lifetime log"
ha_sql_err "... and only logs of the datadir" \
    "SELECT * FROM heap_lifetimes('../x.1.2.json')" "no '/', no '..'"
HA_USER=stats HA_PASS=stats ha_sql "SELECT count(*) > 0 FROM heap_lifetimes('$log')"
ha_is "a stats user reads it" "0:1" "$HA_RC:$HA_OUT"
cp "$datadir/$log" "$datadir/proxysql.$HA_PID.7.json"
printf '{"info":{},"allocations":[{"alloc_thread":3}]}' >"$datadir/proxysql.$HA_PID.8.json"
ha_sql_err "a corrupt log is refused with where and what, never its content" \
    "SELECT * FROM heap_lifetimes('proxysql.$HA_PID.8.json')" \
    "expected an allocation with alloc_thread"
ha_sql "SELECT count(*) > 0, sum(function LIKE '0x%') = count(*) FROM heap_lifetimes('proxysql.$HA_PID.7.json')"
ha_is "a log without its .maps still reads (its frames as addresses)" \
    "0:1	1" "$HA_RC:$HA_OUT"
rm -f "$datadir/proxysql.$HA_PID.7.json" "$datadir/proxysql.$HA_PID.8.json"

# --- closed by its memory bound ---------------------------------------------------------

ha_sql "UPDATE global_variables SET variable_value = '1048576' WHERE variable_name = 'jemalloc-log_max_bytes'; UPDATE global_variables SET variable_value = '120' WHERE variable_name = 'jemalloc-log_now'"
ha_is "a 120 s window with a 1 MiB bound opens" "0" "$HA_RC"
for _ in $(seq 20); do
    workload 5000
    ha_sql "SELECT count(*) FROM stats_heap_dumps WHERE kind = 'log'"
    [ "$HA_OUT" = 2 ] && break
done
wait_log 2
log2=proxysql.$HA_PID.1.json
ha_file_like "its log outgrew 1 MiB of jemalloc's memory and closed early" \
    "$datadir/$log2.window" "closed_by=memory"
ha_like "jemalloc-log_state says why" "closed by memory" \
    "$(ha_var jemalloc-log_state)"
ha_file_like "... and the log says so" "$HA_LOG" \
    "lifetime window $log2 closes early: jemalloc holds [0-9]+ bytes for it"

# --- open when heapadmind stops -----------------------------------------------------------

ha_sql "UPDATE global_variables SET variable_value = '600' WHERE variable_name = 'jemalloc-log_now'"
workload 500
ha_stop
log3=proxysql.$HA_PID.2.json
ha_ok "a window open at shutdown is published on the way out" \
    test -s "$datadir/$log3" -a -s "$datadir/$log3.maps"
ha_file_like "... closed by the stop" "$datadir/$log3.window" "closed_by=stop"
ha_ok "... nothing is left in the staging directory" \
    test -z "$(ls -A "$datadir/.heapadmin-staging" 2>/dev/null)"

ha_done
