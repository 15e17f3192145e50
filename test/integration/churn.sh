#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# "What allocates the most per second, and how long do those objects
# live?" answered inside a real host with known rates: test/growthhost
# embeds heapadmin through the library; its burst site allocates and
# frees 8 MiB every 4 s (2 MiB/s, each block living 1.5 s), its leak site
# adds 1 MiB/s and never frees, its temp site frees every block at once.
# Started with prof_accum:
#   - two dumps 12 s apart, timed between bursts: heap_profile_diff's
#     alloc_bytes_per_s gives the burst about 2 MiB/s and the leak about
#     1 MiB/s (within sampling error); heap_top and heap_stacks carry
#     alloc_bytes; heap_growth its rate too;
#   - go tool pprof -sample_index=alloc_space -top on /debug/pprof/allocs
#     (alloc_space its default there, inuse_space on /heap) ranks them as
#     SQL does;
#   - a 20 s lifetime window (jemalloc-log_now), no restart: its log is
#     published as jemalloc names it, kind 'log'; heap_lifetimes ranks the
#     burst first by bytes freed, with a median lifetime near its 1.5 s
#     hold, and the leak is absent; the temp site is temporary as
#     heaptrack defines it and the burst is not;
#   - stats_jemalloc_recent shows the last burst's blocks with their free
#     times;
#   - the /heap page draws the allocation view of a dump and the lifetime
#     view of the log (headless Chromium);
#   - the same host under Debian's heaptrack (every call from launch):
#     heaptrack_print's top allocator by calls and its top temporary
#     allocator are heap_lifetimes' first by objects freed and by
#     temporary objects.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require curl curl
ha_require go golang-go
ha_require heaptrack heaptrack
ha_require heaptrack_print heaptrack
ha_require chromium chromium

host=$HA_BUILDDIR/test/growthhost
if [ ! -x "$host" ]; then
    ha_bail "no test host at $host (make test/growthhost)"
fi
MIB=1048576

# --- the host ------------------------------------------------------------

HA_DATADIR=$HA_TMP/data
mkdir -m 700 "$HA_DATADIR"
HA_LOG=$HA_DATADIR/heapadmind.log
# A sample every 16 KiB: the temp site's 512-byte blocks then give the
# lifetime window enough samples to call them temporary (a range under
# 0.1, prof/lifetimes.h) rather than unknown.
cat >"$HA_TMP/host.tmpl" <<'EOF'
datadir = "@DATADIR@";
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; mysql_ifaces = "127.0.0.1:@PORT@"; http_ifaces = "127.0.0.1:@HPORT@"; };
jemalloc_variables =
{
    prof_active = true;
    lg_prof_sample = 14;
};
EOF
ha_start_host "$HA_TMP/host.tmpl" MALLOC_CONF=prof_accum:true ||
    ha_bail "the host's admin port answers"
ha_pass "growthhost $hpid serves the admin port"
ha_is "it runs with prof_accum" "true" "$(ha_var jemalloc-prof_accum)"

# The same host under heaptrack, meanwhile, for its own account of calls
# and temporary allocations (without the fragment step's 512 Ki calls at
# start: heaptrack counts from launch).
ht_port=$(ha_free_port) || ha_bail "no free port"
mkdir -m 700 "$HA_TMP/htdata"
sed -e "s|$HA_DATADIR|$HA_TMP/htdata|" -e "s|127.0.0.1:$HA_PORT|127.0.0.1:$ht_port|" \
    -e "s|http_ifaces = \"[^\"]*\"; ||" "$HA_TMP/host.cnf" >"$HA_TMP/ht.cnf"
timeout -s INT 16 heaptrack -o "$HA_TMP/trace" "$host" -c "$HA_TMP/ht.cnf" -n \
    >"$HA_TMP/heaptrack.out" 2>&1 &
ht_pid=$!
HA_PIDS+=("$ht_pid")

# The last allocations, kept from now on.
ha_sql "UPDATE global_variables SET variable_value = '2000' WHERE variable_name = 'jemalloc-recent_alloc_max'"
ha_is "jemalloc-recent_alloc_max switched on at run time" "0:2000" \
    "$HA_RC:$(ha_var jemalloc-recent_alloc_max)"

bursts() { grep -c '^burst' "$HA_TMP/host.out"; }

# wait_burst [N]: returns once the host has started burst N (default: its
# next one).
wait_burst() {
    local n=${1:-$(($(bursts) + 1))}
    for _ in $(seq $((n * 60))); do
        [ "$(bursts)" -ge "$n" ] && return 0
        sleep 0.1
    done
    return 1
}

# dump: dump_now; prints the new dump's file name.
dump() {
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
    ha_sql "SELECT file_name FROM stats_heap_dumps WHERE kind = 'manual' ORDER BY seq DESC LIMIT 1"
    printf '%s' "$HA_OUT"
}

# --- the allocation rate from two dumps' cumulative counters -------------------

# Midway between bursts, then three bursts later: exactly three bursts
# (24 MiB) and twelve seconds of leak (12 MiB) lie between the dumps.
wait_burst || ha_bail "no burst from the host"
sleep 2
d1=$(dump)
b1=$(bursts)
# The lifetime window opens with the first dump and runs 20 s.
ha_sql "UPDATE global_variables SET variable_value = '20' WHERE variable_name = 'jemalloc-log_now'" -vv
ha_like "jemalloc-log_now = 20 opens a lifetime window, naming its log" \
    "lifetime window open for 20 s.*published as proxysql\.$hpid\.0\.json" "$HA_RC:$HA_OUT"
ha_like "... jemalloc-log_state says so" "^open: proxysql\.$hpid\.0\.json, (20|19) of 20 s left" \
    "$(ha_var jemalloc-log_state)"
wait_burst $((b1 + 3))
# Three bursts' frees later the log holds records: jemalloc's memory for
# them is more than nothing (the row exists only while a window is open).
ha_sql "SELECT bytes > 0 FROM stats_memory_breakdown WHERE component = 'jemalloc.internal.prof_log'"
ha_is "... and stats_memory_breakdown what jemalloc holds for it" "1" "$HA_OUT"
sleep 2
d2=$(dump)
ha_like "two dumps" "^proxysql\.$hpid\.[0-9]+\.m[0-9]+\.heap proxysql" "$d1 $d2"

# rate SITE: the site's alloc_bytes_per_s between the two dumps, MiB/s.
rate() {
    ha_sql "SELECT round(sum(alloc_bytes_per_s) / $MIB, 3) FROM heap_profile_diff('$d1', '$d2') WHERE site = '$1'"
    printf '%s' "$HA_OUT"
}
near() { # near VALUE WANT TOLERANCE
    awk -v v="$1" -v w="$2" -v t="$3" 'BEGIN { exit !(v != "" && v >= w * (1 - t) && v <= w * (1 + t)) }'
}
b=$(rate growthhost_burst)
l=$(rate growthhost_leak)
ha_ok "heap_profile_diff: the burst allocates about 2 MiB/s ($b)" near "$b" 2 0.25
ha_ok "... and the leak about 1 MiB/s ($l)" near "$l" 1 0.25
# At least three bursts' 12 s apart, longer on a loaded machine: the
# span is the dumps' own, as their files' times say (whole seconds).
ha_sql "SELECT round(seconds) FROM heap_profile_diff('$d1', '$d2') LIMIT 1"
secs=${HA_OUT%.0}
ha_sql "SELECT max(mtime) - min(mtime) FROM stats_heap_dumps WHERE file_name IN ('$d1', '$d2')"
ha_ok "... over the dumps' span ($secs s; their files' times ${HA_OUT} s apart; at least 11)" \
    awk -v s="$secs" -v m="$HA_OUT" 'BEGIN { exit !(s != "" && s >= 11 && s - m <= 1 && m - s <= 1) }'

ha_sql "SELECT site FROM heap_profile_diff('$d1', '$d2') GROUP BY site ORDER BY sum(alloc_bytes_per_s) DESC LIMIT 1"
ha_is "per site, the burst allocates the most" "growthhost_burst" "$HA_OUT"
ha_sql "SELECT alloc_bytes > 0, alloc_bytes >= flat_bytes, alloc_cum_bytes >= alloc_bytes FROM heap_top('$d2') WHERE function = 'growthhost_burst'"
ha_is "heap_top: alloc_bytes beside the live figures" "1	1	1" "$HA_OUT"
ha_sql "SELECT flat_bytes, alloc_bytes > 0 FROM heap_top('$d2') WHERE function = 'growthhost_temp'"
ha_like "... a site that holds nothing still shows what it allocated" "^0	1$" "$HA_OUT"
ha_sql "SELECT count(*) > 0, count(*) = count(alloc_bytes) FROM heap_stacks('$d2')"
ha_is "heap_stacks: alloc_bytes on every stack" "1	1" "$HA_OUT"
ha_sql "SELECT alloc_bytes > 0 FROM stats_heap_dumps WHERE file_name = '$d2'"
ha_is "stats_heap_dumps: the dump's alloc_bytes" "1" "$HA_OUT"
ha_sql "SELECT round(alloc_bytes_per_s / $MIB, 3) FROM heap_growth('$d1', '$d2') WHERE function = 'growthhost_leak'"
ha_ok "heap_growth: the leak's allocation rate over the series ($HA_OUT)" near "$HA_OUT" 1 0.25

# --- the lifetime window ---------------------------------------------------------

log=proxysql.$hpid.0.json
for _ in $(seq 150); do
    ha_sql "SELECT count(*) FROM stats_heap_dumps WHERE kind = 'log'"
    [ "$HA_OUT" = 1 ] && break
    sleep 0.2
done
ha_sql "SELECT file_name, pid, seq, kind_seq IS NULL, bytes > 0 FROM stats_heap_dumps WHERE kind = 'log'"
ha_is "the window closed on its own and its log is listed as kind 'log'" \
    "$log	$hpid	0	1	1" "$HA_OUT"
for f in "$log" "$log.maps" "$log.window" "$log.buildid"; do
    ha_is "$f is published, private (0600)" 600 \
        "$(stat -c %a "$HA_DATADIR/$f" 2>/dev/null)"
done
ha_file_like "... its window's figures" "$HA_DATADIR/$log.window" "closed_by=time"
ha_like "jemalloc-log_state names the last window" \
    "^closed; last: $log \((19|20|21) s, closed by time" "$(ha_var jemalloc-log_state)"
ha_is "jemalloc-log_now reads 0 again" "0" "$(ha_var jemalloc-log_now)"

ha_sql "SELECT function FROM heap_lifetimes('$log') ORDER BY bytes DESC LIMIT 1"
ha_is "heap_lifetimes ranks the burst first by bytes freed" "growthhost_burst" "$HA_OUT"
ha_sql "SELECT lifetime_p50_ms, round(bytes_per_s / $MIB, 2), free_function, other_thread_share FROM heap_lifetimes('$log') WHERE function = 'growthhost_burst'"
p50=${HA_OUT%%	*}
ha_ok "... with a median lifetime near its 1.5 s hold ($HA_OUT)" \
    awk -v v="$p50" 'BEGIN { exit !(v >= 1300 && v <= 1800) }'
ha_like "... freed by tick() on the thread that made it" \
    "	tick( \(inline\))?	0(\.0)?$" "$HA_OUT"
ha_sql "SELECT count(*) FROM heap_lifetimes('$log') WHERE function = 'growthhost_leak'"
ha_is "the leak frees nothing: it is absent from the freed rows" "0" "$HA_OUT"
ha_sql "SELECT round(temporary_share, 2) >= 0.9, temporary_min >= 0.8, clock_tick_ms < 0.001 FROM heap_lifetimes('$log') WHERE function = 'growthhost_temp'"
ha_is "the temp site is temporary (heaptrack's definition, estimated; the ns clock of HEAPADMIN_DEFINE_MALLOC_CONF)" "1	1	1" "$HA_OUT"
ha_sql "SELECT temporary_share < 0.05 FROM heap_lifetimes('$log') WHERE function = 'growthhost_burst'"
ha_is "... the burst is not" "1" "$HA_OUT"
ha_sql "SELECT count(*) FROM heap_lifetimes_stacks('$log') WHERE function = 'growthhost_burst' AND stack GLOB '*;tick*;growthhost_burst' AND free_stack GLOB '*;tick*'"
ha_like "heap_lifetimes_stacks: the burst's stack and where it was freed" "^[1-9]" "$HA_OUT"
HA_USER=stats HA_PASS=stats ha_sql "SELECT count(*) > 0 FROM heap_lifetimes('$log')"
ha_is "a stats user reads heap_lifetimes" "0:1" "$HA_RC:$HA_OUT"
HA_USER=stats HA_PASS=stats ha_sql "UPDATE global_variables SET variable_value = '5' WHERE variable_name = 'jemalloc-log_now'"
ha_like "... but may not open a window" "^1:" "$HA_RC:$HA_ERR"

# --- the last allocations ------------------------------------------------------------

# The host's 100 ms ticks run on an absolute schedule: a late burst is
# freed on time, so a block may live a tick or three less than 1.5 s.
# On a loaded machine a late burst's blocks live less (their free is on
# schedule): the mean is held to the ends' bounds, and shown.
ha_sql "SELECT count(*), min(lifetime_ms) >= 1000, max(lifetime_ms) <= 2000, min(free_function), round(avg(lifetime_ms)) FROM stats_jemalloc_recent WHERE function = 'growthhost_burst' AND released = 1"
ha_like "stats_jemalloc_recent: the last bursts' blocks, freed about 1.5 s later (mean ${HA_OUT##*	} ms)" \
    "^[1-9][0-9]*	1	1	tick( \(inline\))?	1[0-9][0-9][0-9](\.0)?$" "$HA_OUT"
ha_sql "SELECT count(*) FROM stats_jemalloc_recent WHERE free_time IS NOT NULL AND (free_time < alloc_time OR abs(alloc_time + age_ms / 1000 - unixepoch('now')) > 5)"
ha_is "... on the wall clock" "0" "$HA_OUT"
HA_USER=stats HA_PASS=stats ha_sql "SELECT count(*) > 0 FROM stats_jemalloc_recent"
ha_is "... which stats users read" "0:1" "$HA_RC:$HA_OUT"

# --- the page's views ----------------------------------------------------------------

# browse PATH OUT: the DOM after the page's scripts ran.
browse() {
    timeout 90 chromium --headless --no-sandbox --disable-gpu \
        --disable-dev-shm-usage --no-first-run --user-data-dir="$HA_TMP/chrome" \
        --virtual-time-budget=15000 --window-size=1280,900 \
        --dump-dom "http://stats:stats@127.0.0.1:$hport$1" >"$2" 2>"$HA_TMP/chrome.err"
}
browse "/heap?view=lifetimes&log=$log" "$HA_TMP/life.html"
ha_file_like "the /heap page draws the lifetime view" "$HA_TMP/life.html" \
    'data-rendered="yes"'
ha_file_like "... heap_lifetimes' rows in its table" "$HA_TMP/life.html" \
    '<td class="f">growthhost_burst</td>'
ha_file_like "... and the freed bytes as a flame graph" "$HA_TMP/life.html" \
    '<title>growthhost_burst: '
browse "/heap?dump=$d2&weight=alloc" "$HA_TMP/alloc.html"
ha_file_like "the profile view draws bytes allocated (prof_accum)" \
    "$HA_TMP/alloc.html" 'allocated since profiling began'
ha_file_like "... in which the temp site, which holds nothing, has its width" \
    "$HA_TMP/alloc.html" '<title>growthhost_temp: '

# --- heaptrack's account ---------------------------------------------------------------

wait "$ht_pid" 2>/dev/null
trace=$(ls "$HA_TMP"/trace*.zst 2>/dev/null | head -1)
if [ -z "$trace" ]; then
    ha_fail "heaptrack wrote no trace: $(tail -3 "$HA_TMP/heaptrack.out")"
else
    # -n 400: on a loaded machine the host runs fewer ticks in its 16 s,
    # and start-up's allocators can fill a shorter list; only the order
    # among growthhost_ functions is compared.
    ht=$(heaptrack_print -f "$trace" -n 400 -s 0 --print-peaks 0 \
        --print-allocators 1 --print-temporary 1 --print-leaks 0 2>&1)
    # The first growthhost_ function after each section's heading.
    first_in() {
        awk -v h="$1" '$0 ~ h { on = 1; next } on && /^[A-Z ]+$/ { on = 0 }
            on && /^growthhost_/ { print; exit }' <<<"$ht"
    }
    ht_calls=$(first_in "MOST CALLS TO ALLOCATION FUNCTIONS")
    ht_temp=$(first_in "MOST TEMPORARY ALLOCATIONS")
    ha_sql "SELECT function FROM heap_lifetimes('$log') WHERE function LIKE 'growthhost_%' ORDER BY objects DESC LIMIT 1"
    ha_is "heaptrack's top allocator by calls is heap_lifetimes' first by objects freed" \
        "$ht_calls" "$HA_OUT"
    ha_sql "SELECT function FROM heap_lifetimes('$log') WHERE function LIKE 'growthhost_%' ORDER BY objects * temporary_share DESC LIMIT 1"
    ha_is "... and its top temporary allocator heap_lifetimes' first by temporary objects" \
        "$ht_temp" "$HA_OUT"
fi

# --- Go's allocation profile ---------------------------------------------------

export GOCACHE=$HA_TMP/gocache GOPATH=$HA_TMP/gopath HOME=$HA_TMP
url="http://stats:stats@127.0.0.1:$hport"
pp=$(timeout 120 go tool pprof -top -sample_index=alloc_space \
    "$url/debug/pprof/allocs?dump=$d2" 2>&1)
ha_like "go tool pprof -sample_index=alloc_space reads /debug/pprof/allocs" \
    "Type: alloc_space" "$pp"
ha_sql "SELECT function FROM heap_top('$d2') WHERE function LIKE 'growthhost_%' ORDER BY alloc_bytes DESC"
want=$(tr '\n' ' ' <<<"$HA_OUT")
got=$(awk '$NF ~ /^growthhost_/ { printf "%s ", $NF }' <<<"$pp")
ha_is "... in the order of heap_top's alloc_bytes" "$want" "$got"
pp=$(timeout 120 go tool pprof -raw "$url/debug/pprof/allocs?dump=$d2" 2>&1)
ha_like "/debug/pprof/allocs: Go's four sample types" \
    "alloc_objects/count alloc_space/bytes\\[dflt\\] inuse_objects/count inuse_space/bytes" \
    "$(tr -s ' \n' ' ' <<<"$pp")"
pp=$(timeout 120 go tool pprof -top "$url/debug/pprof/allocs?dump=$d2" 2>&1)
ha_like "... alloc_space its default there" "Type: alloc_space" "$pp"
pp=$(timeout 120 go tool pprof -top "$url/debug/pprof/heap?dump=$d2" 2>&1)
ha_like "... inuse_space on /debug/pprof/heap" "Type: inuse_space" "$pp"

ha_done
