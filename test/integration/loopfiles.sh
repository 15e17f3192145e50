#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# No system call of the event loop's thread touches the datadir once the
# daemon is ready (issue 35): what may block on its disk (a login's
# ATTACH, dump_now's checks, a dump's identity, SQLite's reads of
# stats_history and disk.*, a live profile, SAVE, the stop's writes)
# goes to a worker, so a disk that stops answering can hold a worker,
# never the loop. Proved with strace -f -y (each descriptor shown with
# its path) over a session of everything an operator does: logins on TCP
# and the unix socket, the statistics, the history, the disk schema,
# SAVE and LOAD, SAVE CONFIG TO FILE, dump_now, every table that reads a
# dump or a lifetime log, live profiles, the HTTP pages, the timers'
# dumps and samples, and SIGTERM. Any line of the loop's thread (the
# process's first) that names the datadir fails the test, with the
# lines.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require strace strace
ha_require curl curl

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
hport=$(ha_free_port)
HA_HTTP_PORT=$hport
HA_ADMIN="stats_system_memory = 1;"
HA_JEMALLOC="prof_active = true; dump_interval_s = 2;"
HA_DATADIR=$HA_TMP/data
mkdir -p "$HA_DATADIR"
datadir=$(realpath "$HA_DATADIR")

# The daemon under strace: ha_start starts what HA_DAEMON names.
cat >"$HA_TMP/traced" <<EOF
#!/bin/sh
exec strace -f -qq -y -tt -e trace=%file,%desc,mmap -o "$HA_TMP/trace" \\
    "$HA_DAEMON" "\$@"
EOF
chmod +x "$HA_TMP/traced"
daemon=$HA_DAEMON
HA_DAEMON=$HA_TMP/traced
ha_start || ha_bail "heapadmind starts under strace"
HA_DAEMON=$daemon
# The traced process: strace's child, the daemon itself.
pid=$(pgrep -P "$HA_PID" -f "$daemon" | head -1)
[ -n "$pid" ] || ha_bail "no daemon under strace (pid $HA_PID)"
ready=$(grep -m1 "ready for connections" "$HA_LOG" | cut -c12-23)

url=http://127.0.0.1:$hport
get() { curl -s -o /dev/null -w '%{http_code}' --max-time 30 -u admin:admin "$url$1"; }

ha_sql_ok "a login and SELECT 1" "SELECT 1"
ha_is "a login on the unix socket" 1 "$(ha_mysql_sock -N -B -e "SELECT 1" 2>&1)"
ha_sql_ok "the statistics" "SELECT count(*) FROM stats_memory_jemalloc; SELECT count(*) FROM stats_jemalloc_arenas; SELECT count(*) FROM stats_jemalloc_bins"
ha_sql_wait 1 "SELECT count(*) > 0 FROM stats_history.system_memory"
ha_is "the history" 1 "$HA_OUT"
ha_sql_ok "SAVE and LOAD, and the disk schema" "SAVE JEMALLOC VARIABLES TO DISK; LOAD JEMALLOC VARIABLES FROM DISK; SELECT count(*) FROM disk.global_variables"
ha_sql_ok "SAVE CONFIG TO FILE" "SAVE CONFIG TO FILE 'saved.cnf'"
ha_sql_ok "dump_now" "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql_ok "dump_now again" "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
d0=$(cd "$HA_DATADIR" && ls proxysql.*.m0.heap)
d1=$(cd "$HA_DATADIR" && ls proxysql.*.m1.heap)
ha_sql_ok "the dumps' tables" "SELECT count(*) FROM stats_heap_dumps; SELECT count(*) FROM stats_previous_runs; SELECT count(*) FROM heap_top('$d0'); SELECT count(*) FROM heap_stacks('$d0'); SELECT count(*) FROM heap_modules('$d0'); SELECT count(*) FROM heap_profile('$d1'); SELECT count(*) FROM heap_profile_diff('$d0', '$d1'); SELECT count(*) FROM heap_growth(); SELECT count(*) FROM heap_fragmentation('$d1')"
ha_sql_ok "a live profile" "SELECT count(*) FROM heap_top('live')"
ha_sql_ok "a lifetime window" "UPDATE global_variables SET variable_value = '1' WHERE variable_name = 'jemalloc-log_now'"
ha_sql_wait 1 "SELECT count(*) FROM stats_heap_dumps WHERE kind = 'log'"
log=$(cd "$HA_DATADIR" && ls proxysql.*.json | head -1)
ha_sql_ok "the lifetime tables" "SELECT count(*) FROM heap_lifetimes('$log'); SELECT count(*) FROM heap_lifetimes_stacks('$log')"
for p in /metrics /debug/pprof/heap "/debug/pprof/heap?debug=1" \
    "/pprof/heap?dump=$d0" "/debug/pprof/heap?dump=$d0&debug=1" /heap \
    /debug/pprof/cmdline; do
    ha_is "HTTP $p" 200 "$(get "$p")"
done
# A timed dump at least (every 2 s), on its worker.
sleep 2.5
kill -TERM "$pid"
ha_ok "SIGTERM stops it" ha_wait_gone "$HA_PID" 10
wait "$HA_PID" 2>/dev/null
ha_forget "$HA_PID"

# The loop's thread is the process's first: strace names it by the pid.
awk -v p="$pid" -v t="$ready" '$1 == p && $2 > t' "$HA_TMP/trace" |
    grep -F "$datadir" |
    grep -v '^[0-9]* *[0-9:.]* readlink("/proc/self/fd/' \
        >"$HA_TMP/loop-datadir" || true
n=$(wc -l <"$HA_TMP/loop-datadir")
ha_is "no system call of the loop's thread touches the datadir after the start" 0 "$n"
[ "$n" -eq 0 ] || ha_diag "$(cut -c1-200 "$HA_TMP/loop-datadir" | head -20)"
ha_ok "... while its other threads did ($(grep -cF "$datadir" "$HA_TMP/trace") lines)" \
    test "$(grep -cF "$datadir" "$HA_TMP/trace")" -gt 100
ha_done
