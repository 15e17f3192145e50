#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A dump that never finishes (its file made a FIFO where jemalloc will
# create it: prof.dump blocks in open() holding jemalloc's dump lock, as
# on a hung NFS mount or a dying disk) costs one worker and nothing else:
#   - SELECT 1, the statistics tables and /metrics answer at once, with
#     the statistics of the last refresh (jemalloc's "epoch" would wait
#     for the dump: issue 26 saw MySQL and HTTP frozen for 1,265 s);
#   - the stuck dump shows in SHOW PROCESSLIST (the waiting statement and
#     the disk worker's row) and, past 10 s, in the log;
#   - prof.reset, which would wait too, is refused with a clear error;
#   - SIGTERM ends the daemon within 5 s, the writer left behind, and the
#     next start cleans what it left.
# Timed checks are bounded by this run's baseline (lib.sh ha_quick_ms).

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require curl curl

hport=$(ha_free_port)
HA_HTTP_PORT=$hport
HA_JEMALLOC="prof_active = true;"
HA_DATADIR=$HA_TMP/data
ha_start || ha_bail "heapadmind starts with profiling on"
quick=$(ha_quick_ms "$(ha_baseline_ms)")

# A scrape refreshes the statistics before the dump.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -u stats:stats \
    "http://127.0.0.1:$hport/metrics")
ha_is "a scrape before the dump" 200 "$code"

# One dump, for jemalloc's counters; the next one's file becomes a FIFO.
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_is "a first dump is written" 0 "$HA_RC"
last=$(find "$HA_DATADIR" -maxdepth 1 -name 'proxysql.*.m*.heap' -printf '%f\n' |
    sort -t. -k3,3n | tail -1)
IFS=. read -r _ dpid seq mseq _ <<<"$last"
mseq=${mseq#m}
stage=$(find /dev/shm -maxdepth 1 -type d -name "heapadmin.$dpid.*" | head -1)
ha_ok "jemalloc writes heapadmin's dumps in memory (${stage:-/dev/shm/heapadmin.$dpid.*}), never on the datadir's disk" \
    test -n "$stage" -a -d "$stage"
[ -n "$stage" ] && [ -d "$stage" ] || stage=$HA_DATADIR/.heapadmin-staging
fifo=$stage/proxysql.$dpid.$((seq + 1)).m$((mseq + 1)).heap
mkfifo "$fifo" || ha_bail "cannot make $fifo"

# dump_now now blocks in jemalloc, holding its dump lock.
ha_mysql -N -B -e "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'" \
    >"$HA_TMP/dump.out" 2>&1 &
dumper=$!
ha_sql_wait 1 "SELECT count(*) FROM stats_admin_sessions WHERE state = 'writing a heap dump (dump_now)'"
ha_is "SHOW PROCESSLIST shows the disk worker writing the dump" 1 "$HA_OUT"
ha_sql "SELECT user, command FROM stats_admin_sessions WHERE state = 'writing a heap dump (dump_now)'"
ha_is "... as a system thread, as MySQL shows its own" "system user	Daemon" "$HA_OUT"
ha_sql "SELECT count(*) FROM stats_admin_sessions WHERE info LIKE 'UPDATE global_variables%dump_now%'"
ha_is "... and the statement waiting for it" 1 "$HA_OUT"

# Everything else answers at once, while the dump stays stuck.
worst=0
for _ in $(seq 5); do
    for q in "SELECT 1" \
        "SELECT variable_value > 0 FROM stats_memory_jemalloc WHERE variable_name = 'allocated'" \
        "SELECT count(*) > 0 FROM stats_jemalloc_arenas"; do
        t0=$(date +%s%N)
        ha_sql "$q"
        ms=$((($(date +%s%N) - t0) / 1000000))
        [ "$ms" -gt "$worst" ] && worst=$ms
        [ "$HA_RC:$HA_OUT" = "0:1" ] || ha_fail "'$q' during the stuck dump" "$HA_RC $HA_OUT $HA_ERR"
    done
    t0=$(date +%s%N)
    code=$(curl -s -o "$HA_TMP/metrics.txt" -w '%{http_code}' --max-time 20 \
        -u stats:stats "http://127.0.0.1:$hport/metrics")
    ms=$((($(date +%s%N) - t0) / 1000000))
    [ "$ms" -gt "$worst" ] && worst=$ms
    [ "$code" = 200 ] || ha_fail "/metrics during the stuck dump" "HTTP $code"
    sleep 0.3
done
ha_ok "SELECT 1, the statistics tables and /metrics answer within $quick ms during a stuck dump (worst $worst ms)" \
    test "$worst" -lt "$quick"
age=$(sed -n 's/^heapadmin_jemalloc_stats_age_seconds //p' "$HA_TMP/metrics.txt")
ha_ok "... with the figures of the last refresh, before the dump, and says how old ($age s)" \
    awk -v a="${age:-0}" 'BEGIN { exit !(a >= 1) }'
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-reset_now'"
ha_like "prof.reset, which would wait for the dump, is refused at once, saying why" \
    "a heap dump is being written, and prof.reset would wait for it; nothing was changed" \
    "$HA_ERR"
# A live profile would wait for the dump too: refused at once, as a
# service that is there but busy (503 with Retry-After), never 404.
t0=$(date +%s%N)
hdr=$(curl -s -D - -o "$HA_TMP/live.txt" --max-time 20 -u admin:admin \
    "http://127.0.0.1:$hport/debug/pprof/heap")
ms=$((($(date +%s%N) - t0) / 1000000))
ha_like "a live /debug/pprof/heap during the stuck dump is 503 Service Unavailable" \
    "HTTP/1.1 503 Service Unavailable" "$hdr"
ha_like "... with Retry-After" "Retry-After: 1" "$hdr"
ha_file_like "... saying a heap dump is being written" "$HA_TMP/live.txt" \
    "live profile: .*a heap dump is being written, and prof.dump would wait for it"
ha_ok "... at once ($ms ms)" test "$ms" -lt "$quick"
code=$(curl -s -o "$HA_TMP/live.txt" -w '%{http_code}' --max-time 20 -u admin:admin \
    "http://127.0.0.1:$hport/debug/pprof/heap?debug=1")
ha_is "... and its text form (debug=1) too" 503 "$code"
ha_sql "SELECT count(*) FROM heap_top('live')"
ha_like "heap_top('live') is refused at once, saying why" \
    "a heap dump is being written, and prof.dump would wait for it" "$HA_ERR"
if grep -q "the disk worker has been writing a heap dump (dump_now) for" "$HA_LOG"; then
    ha_pass "the log already says the disk worker is stuck"
else
    for _ in $(seq 150); do
        grep -q "the disk worker has been writing a heap dump (dump_now) for" "$HA_LOG" && break
        sleep 0.1
    done
    ha_file_like "past 10 s the log says the disk worker is stuck, once" "$HA_LOG" \
        "the disk worker has been writing a heap dump \(dump_now\) for [0-9]+ s: the datadir's disk may not be answering"
fi
ha_is "... once" 1 "$(grep -c 'the disk worker has been writing' "$HA_LOG")"
ha_ok "the daemon is alive" ha_alive "$HA_PID"

# SIGTERM ends it within 5 s, whatever the dump does.
t0=$(date +%s%N)
ha_stop 10
gone=$?
ms=$((($(date +%s%N) - t0) / 1000000))
ha_is "SIGTERM ends the daemon while the dump is stuck" 0 "$gone"
ha_ok "... within 5 s ($ms ms)" test "$ms" -lt 5000
ha_file_like "... leaving the stuck writer behind, and saying so" "$HA_LOG" \
    "stopping: the disk worker has been writing a heap dump \(dump_now\) for [0-9]+ s and does not end: left behind"
kill "$dumper" 2>/dev/null
wait "$dumper" 2>/dev/null

# The next start cleans what it left. Every heapadmind's start clears
# the in-memory dumps of processes that are gone, so under make -j a
# daemon of a test running beside this one may be that next start: the
# removal is looked for in this test's log and in theirs.
ha_start || ha_bail "heapadmind starts again"
ha_ok "the next start removes the dead writer's leftover" test ! -e "$fifo"
ha_ok "... and its directory" test ! -e "$stage"
removed="dump housekeeping: removed .*proxysql\.$dpid\.$((seq + 1))\.m$((mseq + 1))\.heap"
if grep -Eq "$removed" "$HA_LOG"; then
    ha_pass "... and says so in its log"
else
    ha_ok "... and says so in its log (a daemon of another test started first)" \
        grep -Eqs "$removed" "${TMPDIR:-/tmp}"/ha-*/*.log
fi
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_is "dumps work again" 0 "$HA_RC"
ha_stop

ha_done
