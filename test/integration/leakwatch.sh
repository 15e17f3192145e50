#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The leak watch, triggered by real growth: test/growthhost (heapadmin
# embedded through the library; a 1 MiB/s leak, 8 MiB bursts) with
# sampling off and the watch set to 6 MiB within 10 s, stats_history
# sampling every second. The watch must switch sampling on by itself,
# take a series of 6 dumps 2 s apart, switch sampling off again, say so
# in the log and in jemalloc-leak_watch_state, and leave a series that
# heap_growth ranks with the leak first.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc

host=$HA_BUILDDIR/test/growthhost
[ -x "$host" ] || ha_bail "no test host at $host (make test/growthhost)"

HA_DATADIR=$HA_TMP/data
mkdir -m 700 "$HA_DATADIR"
HA_LOG=$HA_DATADIR/heapadmind.log
cat >"$HA_TMP/host.tmpl" <<'EOF'
datadir = "@DATADIR@";
admin_variables = { admin_credentials = "admin:admin"; mysql_ifaces = "127.0.0.1:@PORT@"; stats_system_memory = 1; };
jemalloc_variables =
{
    leak_watch_growth_bytes = 6291456L;
    leak_watch_window_s = 10L;
    leak_watch_dump_interval_s = 2L;
    leak_watch_dumps = 6L;
    leak_watch_lg_prof_sample = 16;
};
EOF
# -w: the host grows only once told, after the state at start is read
# (a slow start on a loaded machine must not look like growth).
ha_start_host "$HA_TMP/host.tmpl" -- -w ||
    ha_bail "the host's admin port answers"

ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name LIKE 'jemalloc-leak_watch_%' AND variable_name <> 'jemalloc-leak_watch_state' ORDER BY 1"
ha_is "the watch's settings read back" \
    "jemalloc-leak_watch_dump_interval_s	2
jemalloc-leak_watch_dumps	6
jemalloc-leak_watch_growth_bytes	6291456
jemalloc-leak_watch_lg_prof_sample	16
jemalloc-leak_watch_sites	5
jemalloc-leak_watch_window_s	10" "$HA_OUT"
ha_like "it starts watching, sampling off" "^watching" \
    "$(ha_var jemalloc-leak_watch_state)"
ha_is "sampling is off before" "false" "$(ha_var jemalloc-prof_active)"
ha_sql "UPDATE global_variables SET variable_value = '1' WHERE variable_name = 'jemalloc-leak_watch_dumps'"
ha_like "the watch's settings are read-only" "is read-only.*leak_watch" \
    "$HA_ERR"
kill -USR1 "$hpid" # now it leaks and bursts

# The growth starts a series: sampling goes on while it is taken.
collecting=
for _ in $(seq 300); do
    state=$(ha_var jemalloc-leak_watch_state)
    case $state in collecting*) collecting=$state; break ;; esac
    sleep 0.1
done
ha_like "resident growth starts a series within 30 s" \
    "^collecting since .* \(resident grew \+[0-9.]+ MiB over [0-9]+ s\)" \
    "$collecting"
ha_is "sampling is on while it collects" "true" \
    "$(ha_var jemalloc-prof_active)"
ha_is "at the configured rate" "16" "$(ha_var jemalloc-lg_prof_sample)"

done_state=
for _ in $(seq 300); do
    state=$(ha_var jemalloc-leak_watch_state)
    case $state in *"last series"*) done_state=$state; break ;; esac
    sleep 0.1
done
ha_like "the series completes and the state names its query" \
    "^watching: .*last series 6 dumps, done .*SELECT \* FROM heap_growth\('proxysql\.$hpid\.[0-9]+\.m[0-9]+\.heap', 'proxysql\.$hpid\.[0-9]+\.m[0-9]+\.heap'\)$" \
    "$done_state"
ha_is "sampling is off again" "false" "$(ha_var jemalloc-prof_active)"
ha_is "and the rate is what it was" "19" "$(ha_var jemalloc-lg_prof_sample)"
ha_file_like "the log says why the series started" "$HA_LOG" \
    "leak watch: resident memory grew \+[0-9.]+ MiB over [0-9]+ s, more than leak_watch_growth_bytes = 6291456: sampling switched on \(lg_prof_sample 16\), 6 dumps, one every 2 s"
ha_file_like "the log names each dump" "$HA_LOG" \
    "automatic dump \(leak watch, dump 6 of 6\): heap profile written to"
ha_file_like "the log gives the query" "$HA_LOG" \
    "leak watch: series complete, 6 dumps .* rank it with: SELECT \* FROM heap_growth"

query=$(sed -n 's/.*\(SELECT \* FROM heap_growth([^)]*)\).*/\1/p' <<<"$done_state")
ha_sql "SELECT rank, function, pattern, dumps FROM (${query:-SELECT 1}) LIMIT 3"
ha_diag "$query:" "$HA_OUT"
ha_like "heap_growth ranks the watch's series: the leak first, steady, 6 dumps" \
    "^1	growthhost_leak	steady	6$" "$(head -1 <<<"$HA_OUT")"

kill -TERM "$hpid"
if ha_wait_gone "$hpid" 10; then
    wait "$hpid"
    ha_is "SIGTERM stops the host cleanly" 0 "$?"
else
    ha_fail "the host stops on SIGTERM"
fi
ha_forget "$hpid"
ha_done
