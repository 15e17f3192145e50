#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# max_execution_time, honoured: admin_variables.max_execution_time (ms)
# interrupts a statement that runs too long with MySQL's ERR 3024, a
# session may lower it with SET max_execution_time but not raise it
# (ERR 1231 names the ceiling), the limit shows in @@max_execution_time
# and global_variables, and the session and the others go on answering.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

cat >"$HA_TMP/t.tmpl" <<CNF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credentials = "stats:stats";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    max_execution_time = 1500;
};
CNF
ha_start -C "$HA_TMP/t.tmpl" || ha_bail "heapadmind starts"

forever="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
quick=$(ha_quick_ms "$(ha_baseline_ms)")
t0=$(date +%s%N)
ha_sql "$forever"
t1=$(date +%s%N)
ha_like "a statement that would run forever gets ERR 3024" \
    "ERROR 3024 \(HY000\).*maximum statement execution time exceeded \(max_execution_time = 1500 ms\)" \
    "$HA_ERR"
ms=$(( (t1 - t0) / 1000000 ))
ha_ok "... after about 1.5 s ($ms ms; at most 1.5 s + $quick ms)" \
    test "$ms" -ge 1400 -a "$ms" -lt $((1500 + quick))

t0=$(date +%s%N)
ha_sql "SET max_execution_time = 200; $forever"
t1=$(date +%s%N)
ha_like "SET max_execution_time lowers it for the session" \
    "ERROR 3024 .*max_execution_time = 200 ms" "$HA_ERR"
ms=$(( (t1 - t0) / 1000000 ))
ha_ok "... (cut after $ms ms; at most 200 ms + $quick ms)" \
    test "$ms" -lt $((200 + quick))

ha_sql "SET max_execution_time = 60000"
ha_like "raising it past admin_variables.max_execution_time is refused, naming the ceiling" \
    "ERROR 1231 .*allowed 0\.\.1500 ms" "$HA_ERR"
ha_sql "SET max_execution_time = -1"
ha_like "... as is a negative value" "ERROR 1231" "$HA_ERR"

ha_sql "SELECT @@max_execution_time, (SELECT variable_value FROM global_variables WHERE variable_name = 'admin-max_execution_time')"
ha_is "the limit shows in @@max_execution_time and global_variables" "0:1500	1500" "$HA_RC:$HA_OUT"

ha_sql "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT x FROM c)"
ha_is "a statement within the limit runs to the end" "0:100000" "$HA_RC:$HA_OUT"
HA_USER=stats HA_PASS=stats
# The issue's example: a 7-way join of stats_memory_jemalloc ran 86 s.
ha_sql "SELECT count(*) FROM stats_memory_jemalloc a, stats_memory_jemalloc b, stats_memory_jemalloc c, stats_memory_jemalloc d, stats_memory_jemalloc e, stats_memory_jemalloc f, stats_memory_jemalloc g"
ha_like "a stats user's 7-way join is bounded the same way" "ERROR 3024" "$HA_ERR"
HA_USER=admin HA_PASS=admin
ha_sql "SELECT 1"
ha_is "the daemon answers afterwards" "0:1" "$HA_RC:$HA_OUT"
ha_stop

# SIGTERM while a statement runs, with no max_execution_time to end it:
# the daemon stops at once (the statement is interrupted, its client told
# ERR 1053), not when the statement would end (here: never).
sed -e 's/max_execution_time = 1500;/max_execution_time = 0;/' \
    "$HA_TMP/t.tmpl" >"$HA_TMP/none.tmpl"
ha_start -C "$HA_TMP/none.tmpl" || ha_bail "heapadmind starts with no limit"

# running N: polls (5 s at most) until N other sessions run a statement;
# prints how many do.
running() {
    for _ in $(seq 50); do
        ha_sql "SELECT count(*) FROM stats_admin_sessions WHERE command = 'Query' AND id <> CONNECTION_ID()"
        [ "$HA_OUT" = "$1" ] && break
        sleep 0.1
    done
    printf '%s' "$HA_OUT"
}

# A client that goes away mid-statement: the statement ends (its socket
# is peeked every 100 ms while it runs) rather than running on for
# nobody. The client is found by a marker on its command line (it runs
# under timeout(1) in a subshell).
ha_mysql -e "$forever /* client-to-vanish */" >/dev/null 2>&1 &
gone=$!
ha_is "the endless statement runs (PROCESSLIST)" 1 "$(running 1)"
pkill -9 -f "client-to-vanish"
wait "$gone" 2>/dev/null
ha_is "after its client was killed, the endless statement stopped" \
    0 "$(running 0)"
ha_file_like "... and the log says why" "$HA_LOG" \
    "connection [0-9]+: the client went away; its statement is interrupted"

# Two of them: they take turns, so when the stop comes one is paused
# between its slices (its reply is built after the loop's last write)
# and the other runs.
ha_mysql -e "$forever" >"$HA_TMP/forever.out" 2>&1 &
client=$!
ha_mysql -e "$forever" >"$HA_TMP/forever2.out" 2>&1 &
client2=$!
# Statements yield to the loop (admin/conn_state.c runs them on fibers), so
# the test can ask whether they started.
ha_is "two other endless statements run" 2 "$(running 2)"
t0=$(date +%s%N)
kill -TERM "$HA_PID"
ha_wait_gone "$HA_PID" 10
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
ha_ok "SIGTERM during a statement that never ends: stopped within 1 s + $quick ms ($ms ms)" \
    test "$ms" -lt $((1000 + quick))
wait "$client" "$client2"
ha_file_like "... both clients got ERR 1053 (first)" "$HA_TMP/forever.out" \
    "ERROR 1053 \(08S01\).*Server shutdown in progress"
ha_file_like "... both clients got ERR 1053 (second)" "$HA_TMP/forever2.out" \
    "ERROR 1053 \(08S01\).*Server shutdown in progress"
ha_forget "$HA_PID"

# The memory ceiling for admin SQL (SQLite's hard heap limit): a statement
# that needs more gets ERR 1041 naming the limit, and the daemon goes on.
sed -e 's/max_execution_time = 1500;/sql_memory_limit = 8388608;/' \
    "$HA_TMP/t.tmpl" >"$HA_TMP/mem.tmpl"
ha_start -C "$HA_TMP/mem.tmpl" || ha_bail "heapadmind starts with an 8 MiB SQL limit"
ha_sql_is "admin-sql_memory_limit shows it" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'admin-sql_memory_limit'" 8388608
HA_USER=stats HA_PASS=stats
ha_sql "SELECT length(group_concat(hex(randomblob(1000)))) FROM (WITH RECURSIVE stats_c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM stats_c WHERE x < 20000) SELECT x FROM stats_c)"
ha_like "a stats user's 40 MB string gets ERR 1041 naming the limit" \
    "ERROR 1041 \(HY000\).*admin SQL may hold 8388608 bytes \(admin_variables\.sql_memory_limit\)" \
    "$HA_ERR"
HA_USER=admin HA_PASS=admin
ha_sql "SELECT count(*) FROM stats_memory_jemalloc"
ha_like "... and the daemon answers afterwards" "^0:[0-9]+$" "$HA_RC:$HA_OUT"
ha_stop

ha_done
