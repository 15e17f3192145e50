#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Go's delta profiles: what was allocated in the last N seconds, from
# any heapadmin endpoint. test/growthhost (heapadmin embedded, started
# with prof_accum, a sample every 16 KiB) allocates at known rates: its
# leak 1,050,000 B/s (105 blocks of 1000 bytes a tick), its temp site
# 1,024,000 B/s (200 blocks of 512 bytes a tick, freed at once), its
# burst 8 MiB every 4 s.
#   - `go tool pprof -sample_index=alloc_space -top
#     'http://.../debug/pprof/allocs?seconds=10'` gives the leak and the
#     temp site within 15 % of rate x 10 s, and within 5 % of
#     heap_profile_diff's alloc_bytes between two dumps 10 s apart (the
#     dumps bracket the delta's window); its Duration is the 10 s, while
#     the default max_execution_time is 10 s (the window does not count);
#     /debug/pprof/heap?seconds= gives in-use space as held at its end;
#   - the loop answers SELECT 1 meanwhile as fast as without it;
#   - heap_top('live', 10) and heap_threads('live', 10) give the same
#     allocation in SQL;
#   - seconds outside 1..60, or beside dump=, base= or the jemalloc
#     format, is a 400; a stats user gets 403; a process without
#     prof_accum, or a profile reset within the window (lg_prof_sample
#     changed), a 409 that says why.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require curl curl
ha_require go golang-go

host=$HA_BUILDDIR/test/growthhost
[ -x "$host" ] || ha_bail "no test host at $host (make test/growthhost)"
export PPROF_TMPDIR=$HA_TMP # go tool pprof keeps what it fetches there
LEAK=1050000  # B/s
TEMP=1024000

HA_DATADIR=$HA_TMP/data
mkdir -m 700 "$HA_DATADIR"
HA_LOG=$HA_DATADIR/heapadmind.log
cat >"$HA_TMP/host.tmpl" <<'EOF'
datadir = "@DATADIR@";
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; mysql_ifaces = "127.0.0.1:@PORT@"; http_ifaces = "127.0.0.1:@HPORT@"; };
jemalloc_variables = { prof_active = true; lg_prof_sample = 14; };
EOF
ha_start_host "$HA_TMP/host.tmpl" MALLOC_CONF=prof_accum:true -- -n ||
    ha_bail "the host's admin port answers"
ha_is "max_execution_time is the default 10 s" 10000 \
    "$(ha_var admin-max_execution_time)"
base=http://admin:admin@127.0.0.1:$hport
within() { # within VALUE WANT TOLERANCE
    awk -v v="$1" -v w="$2" -v t="$3" 'BEGIN { exit !(v != "" && v >= w * (1 - t) && v <= w * (1 + t)) }'
}
# flat FILE FUNCTION: a `pprof -top -unit=B` flat column, bytes.
flat() {
    awk -v f="$2" '$NF == f { sub(/B$/, "", $1); print $1; exit }' "$1"
}
dump() {
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
    ha_sql "SELECT file_name FROM stats_heap_dumps WHERE kind = 'manual' ORDER BY seq DESC LIMIT 1"
    printf '%s' "$HA_OUT"
}

# --- go tool pprof on a 10-second delta, two dumps around it ----------------------

quick=$(ha_quick_ms "$(ha_baseline_ms)")
d1=$(dump)
t0=$(date +%s%N)
timeout 120 go tool pprof -sample_index=alloc_space -unit=B -top \
    "$base/debug/pprof/allocs?seconds=10" >"$HA_TMP/delta.top" 2>&1 &
gp=$!
# Meanwhile the loop serves everyone else.
sleep 2
worst=0
for _ in 1 2 3 4 5; do
    t=$(date +%s%N)
    ha_sql "SELECT 1"
    ms=$((($(date +%s%N) - t) / 1000000))
    [ "$ms" -gt "$worst" ] && worst=$ms
    sleep 0.5
done
ha_ok "SELECT 1 answers within ${quick} ms while the delta waits (worst ${worst} ms)" \
    test "$worst" -le "$quick"
wait "$gp"
took=$((($(date +%s%N) - t0) / 1000000))
d2=$(dump)
ha_diag "$(head -20 "$HA_TMP/delta.top")"
ha_like "go tool pprof reads /debug/pprof/allocs?seconds=10 as alloc_space" \
    "Type: alloc_space" "$(cat "$HA_TMP/delta.top")"
ha_like "... its Duration is the window" "Duration: 10(\.[0-9]+)?s" \
    "$(cat "$HA_TMP/delta.top")"
ha_ok "... which took 10 s and more (${took} ms), past max_execution_time" \
    test "$took" -ge 10000
leak=$(flat "$HA_TMP/delta.top" growthhost_leak)
temp=$(flat "$HA_TMP/delta.top" growthhost_temp)
ha_ok "growthhost_leak allocated its rate x 10 s within 15 % ($leak of $((LEAK * 10)))" \
    within "$leak" $((LEAK * 10)) 0.15
ha_ok "growthhost_temp too ($temp of $((TEMP * 10)))" \
    within "$temp" $((TEMP * 10)) 0.15

# heap_profile_diff of the two dumps, per second of their own interval,
# times the delta's 10 s.
diff_rate() {
    ha_sql "SELECT sum(alloc_bytes_per_s) FROM heap_profile_diff('$d1', '$d2') WHERE site = '$1'"
    printf '%s' "$HA_OUT"
}
dl=$(diff_rate growthhost_leak)
dt=$(diff_rate growthhost_temp)
ha_ok "... within 5 % of heap_profile_diff between dumps around it: leak ($leak vs $dl B/s x 10)" \
    within "$leak" "$(awk -v r="$dl" 'BEGIN { printf "%.0f", r * 10 }')" 0.05
ha_ok "... temp ($temp vs $dt B/s x 10)" \
    within "$temp" "$(awk -v r="$dt" 'BEGIN { printf "%.0f", r * 10 }')" 0.05

# /heap?seconds=: in-use space as held at the end, not a difference.
timeout 120 go tool pprof -unit=B -top "$base/debug/pprof/heap?seconds=2" \
    >"$HA_TMP/heapdelta.top" 2>&1
ha_like "/debug/pprof/heap?seconds=2 is inuse_space by default" \
    "Type: inuse_space" "$(cat "$HA_TMP/heapdelta.top")"
held=$(flat "$HA_TMP/heapdelta.top" growthhost_leak)
ha_ok "... the leak holding what it leaked since start ($held), not 2 s of it" \
    awk -v v="$held" -v r="$LEAK" 'BEGIN { exit !(v > 8 * r) }'

# --- SQL ---------------------------------------------------------------------------

t0=$(date +%s%N)
ha_sql "SELECT function, alloc_bytes, flat_bytes FROM heap_top('live', 10) LIMIT 5"
took=$((($(date +%s%N) - t0) / 1000000))
ha_diag "the README's heap_top('live', 10):" "$HA_OUT"
HA_OUT=$(awk -F'\t' '$1 == "growthhost_leak" { print $2 }' <<<"$HA_OUT")
ha_ok "heap_top('live', 10): the leak's alloc_bytes, rate x 10 s within 15 % ($HA_OUT)" \
    within "$HA_OUT" $((LEAK * 10)) 0.15
ha_ok "... after 10 s (${took} ms), the statement not cut at max_execution_time" \
    test "$took" -ge 10000
ha_sql "SELECT sum(alloc_bytes) FROM heap_threads('live', 3) WHERE thread_name IS NULL OR thread_name <> 'heapadmin'"
ha_ok "heap_threads('live', 3): the host's thread allocated about 3 s of all its sites ($HA_OUT)" \
    awk -v v="$HA_OUT" -v r=$((LEAK + TEMP + 2097152)) \
    'BEGIN { exit !(v > 3 * r * 0.4 && v < 3 * r * 2) }'
ha_sql "SELECT * FROM heap_top('$d1', 10)"
ha_like "seconds on a dump is refused, saying the form" \
    "seconds makes a delta of the live profile: heap_top\('live', <whole seconds, 1 to 60>\)" \
    "$HA_ERR"
ha_sql "SELECT * FROM heap_top('live', 61)"
ha_like "61 seconds is refused" "seconds must be 1 to 60" "$HA_ERR"

# --- what is refused ---------------------------------------------------------------

code() { curl -s --max-time 90 -o "$HA_TMP/body" -w '%{http_code}' "$@"; }
for bad in 0 61 abc 1.5 -1 ''; do
    ha_is "?seconds=$bad is 400" 400 "$(code "$base/debug/pprof/allocs?seconds=$bad")"
done
ha_like "... saying what is allowed" "seconds: a whole number of seconds from 1 to 60" \
    "$(cat "$HA_TMP/body")"
ha_is "seconds= with dump= is 400" 400 \
    "$(code "$base/debug/pprof/allocs?seconds=1&dump=$d1")"
ha_is "seconds= with debug=1 is 400" 400 \
    "$(code "$base/debug/pprof/heap?seconds=1&debug=1")"
ha_is "a stats user may not (403)" 403 \
    "$(code -u stats:stats "http://127.0.0.1:$hport/debug/pprof/allocs?seconds=1")"
ha_is "jeprof's /pprof/profile?seconds=30 is the live text at once, as before" "200:heap_v2/" \
    "$(code "$base/pprof/profile?seconds=30"):$(head -c 8 "$HA_TMP/body")"

# The profile reset within the window: lg_prof_sample changed (prof.reset).
code "$base/debug/pprof/allocs?seconds=4" >"$HA_TMP/reset.code" &
rp=$!
sleep 1.5
ha_sql "UPDATE global_variables SET variable_value = '15' WHERE variable_name = 'jemalloc-lg_prof_sample'"
wait "$rp"
ha_is "a reset within the window is 409" 409 "$(cat "$HA_TMP/reset.code")"
ha_like "... saying so" "reset.*within the 4 s window" "$(cat "$HA_TMP/body")"

kill -TERM "$hpid"
ha_wait_gone "$hpid" 10
ha_forget "$hpid"

# Without prof_accum: 409 at once, saying how to start it.
HA_DATADIR=$HA_TMP/data2
mkdir -m 700 "$HA_DATADIR"
HA_LOG=$HA_DATADIR/heapadmind.log
ha_start_host "$HA_TMP/host.tmpl" -- -n || ha_bail "the host's admin port answers"
t0=$(date +%s%N)
ha_is "a process without prof_accum: 409" 409 \
    "$(code "http://admin:admin@127.0.0.1:$hport/debug/pprof/allocs?seconds=10")"
ha_ok "... at once" test $((($(date +%s%N) - t0) / 1000000)) -lt 5000
ha_like "... saying how to start it" "start it with prof_accum:true" \
    "$(cat "$HA_TMP/body")"
ha_sql "SELECT * FROM heap_top('live', 2)"
ha_like "heap_top('live', 2) says the same" "heap_top: .*prof_accum:true" "$HA_ERR"
ha_done
