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
#     SQL does.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require curl curl
ha_require go golang-go

host=$HA_BUILDDIR/test/growthhost
if [ ! -x "$host" ]; then
    ha_bail "no test host at $host (make test/growthhost)"
fi
MIB=1048576

# --- the host ------------------------------------------------------------

HA_DATADIR=$HA_TMP/data
mkdir -m 700 "$HA_DATADIR"
HA_PORT=$(ha_free_port) || ha_bail "no free port"
hport=$(ha_free_port) || ha_bail "no free port"
HA_LOG=$HA_DATADIR/heapadmind.log
cat >"$HA_TMP/host.cnf" <<EOF
datadir = "$HA_DATADIR";
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; mysql_ifaces = "127.0.0.1:$HA_PORT"; http_ifaces = "127.0.0.1:$hport"; };
jemalloc_variables =
{
    prof_active = true;
    lg_prof_sample = 16;
};
EOF
MALLOC_CONF=prof_accum:true \
    "$host" -c "$HA_TMP/host.cnf" >"$HA_TMP/host.out" 2>&1 &
hpid=$!
HA_PIDS+=("$hpid")
for _ in $(seq 100); do
    grep -q ready "$HA_TMP/host.out" && ha_mysql -N -B -e 'SELECT 1' \
        >/dev/null 2>&1 && break
    sleep 0.1
done
ha_sql "SELECT 1"
[ "$HA_OUT" = 1 ] || ha_bail "the host's admin port does not answer: $(cat "$HA_TMP/host.out")"
ha_pass "growthhost $hpid serves the admin port"
ha_is "it runs with prof_accum" "true" "$(ha_var jemalloc-prof_accum)"

# wait_burst: returns once the host has started its next burst.
wait_burst() {
    local n
    n=$(grep -c '^burst' "$HA_TMP/host.out")
    for _ in $(seq 100); do
        [ "$(grep -c '^burst' "$HA_TMP/host.out")" -gt "$n" ] && return 0
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
wait_burst; wait_burst; wait_burst
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
ha_sql "SELECT round(seconds) FROM heap_profile_diff('$d1', '$d2') LIMIT 1"
ha_like "... over the dumps' 12 s" "^1[1-3](\.0)?$" "$HA_OUT"
ha_sql "SELECT site FROM heap_profile_diff('$d1', '$d2') GROUP BY site ORDER BY sum(alloc_bytes_per_s) DESC LIMIT 3"
sql_order=$(tr '\n' ' ' <<<"$HA_OUT")
ha_like "per site, the burst allocates the most, then the temp site and the leak" \
    "^growthhost_burst (growthhost_temp growthhost_leak|growthhost_leak growthhost_temp) $" "$sql_order"

ha_sql "SELECT alloc_bytes > 0, alloc_bytes >= flat_bytes, alloc_cum_bytes >= alloc_bytes FROM heap_top('$d2') WHERE function = 'growthhost_burst'"
ha_is "heap_top: alloc_bytes beside the live figures" "1	1	1" "$HA_OUT"
ha_sql "SELECT flat_bytes, alloc_bytes > 0 FROM heap_top('$d2') WHERE function = 'growthhost_temp'"
ha_like "... a site that holds nothing still shows what it allocated" "^0	1$" "$HA_OUT"
ha_sql "SELECT count(*) FROM heap_stacks('$d2') WHERE alloc_bytes IS NULL"
ha_is "heap_stacks: alloc_bytes on every stack" "0" "$HA_OUT"
ha_sql "SELECT alloc_bytes > 0 FROM stats_heap_dumps WHERE file_name = '$d2'"
ha_is "stats_heap_dumps: the dump's alloc_bytes" "1" "$HA_OUT"
ha_sql "SELECT round(alloc_bytes_per_s / $MIB, 3) FROM heap_growth('$d1', '$d2') WHERE function = 'growthhost_leak'"
ha_ok "heap_growth: the leak's allocation rate over the series ($HA_OUT)" near "$HA_OUT" 1 0.25

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
