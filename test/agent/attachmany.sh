#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# heapadmin-attach again and again (issue 39): ATTACH_RUNS (default 4)
# fresh Debian redis-server processes, each started as many services
# run (MALLOC_CONF=prof:true,prof_active:false, no LD_PRELOAD) and
# attached while redis-benchmark drives SETs and GETs at it. Each must be
# served (SQL on its socket), keep answering, finish its load without an
# error and end on SIGTERM with 0: no crash, and no hang (heapadmin-attach
# runs under timeout(1): one that does not return in 30 s is a hang). The
# worst PING latency during an attach stays under 500 ms more than the
# worst of the same load without one, measured first in the same run.
# Prints each run's held time and the summary; bench/attach-stress runs
# 20 beside stress-ng.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require redis-cli redis-tools
ha_require mariadb mariadb-client
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP attachmany.sh: needs root (ptrace)"
    echo "1..0 # SKIP needs root"
    exit 77
fi
# HA_ATTACH names another heapadmin-attach to measure (bench/attach-stress).
ATTACH=${HA_ATTACH:-$HA_BUILDDIR/attach/heapadmin-attach}
[ -x "$ATTACH" ] || ha_bail "no $ATTACH (configure disabled the agent?)"
runs=${ATTACH_RUNS:-4}
data=$HA_TMP/data

# start_redis: a fresh redis-server with prof:true, idle profiler; sets
# port and rpid.
start_redis() {
    port=$(ha_free_port)
    MALLOC_CONF=prof:true,prof_active:false redis-server --port "$port" \
        --save '' --appendonly no --dir "$HA_TMP" >>"$HA_TMP/redis.out" 2>&1 &
    rpid=$!
    HA_PIDS+=("$rpid")
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
}

# load: SETs and GETs at $port until unload, in the background (as
# many as the machine serves: the window is timed, not counted).
load() {
    timeout 60 redis-benchmark -p "$port" -t set,get -n 100000000 -d 200 \
        -r 100000 -c 20 --csv >"$HA_TMP/load.out" 2>&1 &
    lpid=$!
}

unload() {
    kill "$lpid" 2>/dev/null
    wait "$lpid" 2>/dev/null
}

# The same load without an attach: the machine's own worst latency now.
start_redis
load
base=$(redis-cli -p "$port" --latency --raw -i 3 | awk '{print $2}')
unload
kill -TERM "$rpid"
ha_wait_gone "$rpid" 10
ha_diag "worst PING latency under load without an attach: ${base:-?} ms"

attached=0 crashes=0 hangs=0 failed=0 worst=0 held=()
for i in $(seq "$runs"); do
    start_redis
    load
    redis-cli -p "$port" --latency --raw -i 3 >"$HA_TMP/lat.out" &
    lat=$!
    sleep 0.5
    out=$(timeout -k 5 30 "$ATTACH" --agent "$HA_AGENT" --datadir "$data" \
        --log "$HA_TMP/agent.log" "$rpid" 2>&1)
    rc=$?
    wait "$lat"
    unload
    ms=$(awk '{print $2}' "$HA_TMP/lat.out")
    [ "${ms:-0}" -gt "$worst" ] && worst=${ms:-0}
    h=$(sed -n 's/.* held \([0-9.]*\) ms.*/\1/p' <<<"$out")
    held+=("${h:-?}")
    echo "# run $i: pid $rpid, exit $rc," \
        "$(sed -n 's/.*\(held .* ms)\).*/\1/p' <<<"$out"), worst latency ${ms:-?} ms"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        hangs=$((hangs + 1))
        ha_diag "$out"
    elif [ "$rc" = 0 ]; then
        attached=$((attached + 1))
    else
        failed=$((failed + 1))
        ha_diag "$out"
    fi
    ag_sql "$data/redis-server.$rpid.sock" "SELECT 1"
    if grep -qi error "$HA_TMP/load.out" ||
        [ "$(redis-cli -p "$port" ping 2>&1)" != PONG ] || [ "$HA_OUT" != 1 ]; then
        failed=$((failed + 1))
        ha_diag "run $i: SQL '$HA_OUT' $HA_ERR" "$(grep -i error "$HA_TMP/load.out" | head -3)"
    fi
    if ! ha_alive "$rpid"; then
        crashes=$((crashes + 1))
        continue
    fi
    kill -TERM "$rpid"
    if ha_wait_gone "$rpid" 10; then
        wait "$rpid"
        [ "$?" = 0 ] || crashes=$((crashes + 1))
    else
        hangs=$((hangs + 1))
    fi
done
echo "# $runs runs: $attached attached, $crashes crashes, $hangs hangs," \
    "$failed failures; held ms: ${held[*]}; worst latency $worst ms" \
    "(${base:-?} ms without an attach)"
ha_is "every fresh redis under load is attached" "$runs" "$attached"
ha_is "no crash, no hang, no failed request or query" "0 0 0" \
    "$crashes $hangs $failed"
ha_ok "the worst latency during the attaches is under 500 ms more than without ($worst vs ${base:-?} ms)" \
    test "$worst" -lt $((500 + ${base:-0}))
ha_done
