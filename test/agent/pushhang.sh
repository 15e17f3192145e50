#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Push to receivers that misbehave (issue 37), from Debian's redis-server
# under the agent (test/agent/pushrecv.py in its bad modes): one that
# accepts and never answers, one that answers 500, one 413. The host
# pays nothing beyond the outbox's bound: redis's latency
# (redis-cli --latency) is what it is beside an identical redis that
# pushes nothing, measured in the same run; the outbox stays at
# push_outbox_max_bytes with the oldest entries dropped and said; a 500
# is retried, a 413 given up at once and said.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-cli redis-tools
ha_require mariadb mariadb-client
ha_require curl curl

BOUND=$((64 << 10))

receiver() { # PORT MODE
    python3 "$HA_SRCDIR/test/agent/pushrecv.py" "$1" "$HA_TMP/rx.$2" "$2" &
    HA_PIDS+=("$!")
}
hang=$(ha_free_port)
p500=$(ha_free_port)
p413=$(ha_free_port)
receiver "$hang" hang
receiver "$p500" 500
receiver "$p413" 413

# start_redis NAME CONF: redis-server NAME under the agent with CONF's
# admin_variables, its own datadir; sets rpid, rport and sock.
start_redis() {
    local name=$1
    mkdir -p "$HA_TMP/$name"
    cat >"$HA_TMP/$name/agent.cnf" <<EOF
datadir = "$HA_TMP/$name/data"
admin_variables = { $2 }
EOF
    rport=$(ha_free_port)
    ag_env
    env "${AG_ENV[@]}" MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:14 \
        HEAPADMIN_CONF="$HA_TMP/$name/agent.cnf" \
        HEAPADMIN_LOG="$HA_TMP/$name/agent.log" \
        redis-server --port "$rport" --save '' --appendonly no --enable-debug-command yes \
        --dir "$HA_TMP/$name" >"$HA_TMP/$name/redis.out" 2>&1 &
    rpid=$!
    HA_PIDS+=("$rpid")
    sock=$HA_TMP/$name/data/redis-server.$rpid.sock
    ag_wait_socket "$sock" 15 || ha_bail "the agent serves $name"
    redis-cli -p "$rport" debug populate 200000 >/dev/null
    [ "$(redis-cli -p "$rport" dbsize)" = 200000 ] ||
        ha_bail "$name holds 200,000 keys"
}

# latency PORT: redis-cli --latency for 8 s: "min max avg samples" (ms).
latency() {
    timeout -s INT 8 redis-cli -p "$1" --latency --raw 2>/dev/null | tail -1
}

start_redis quiet ""
qport=$rport
qsock=$sock
start_redis pushing "
    push_targets = (
        { type = \"pyroscope\"; url = \"http://127.0.0.1:$hang\"; kinds = \"live,manual\"; }
    )
    push_live_interval_s = 1
    push_timeout_s = 2
    push_retry_max_s = 1
    push_outbox_max_bytes = $BOUND"
pport=$rport
psock=$sock

# Both measured at once, the pushing one while its outbox fills.
sleep 2
latency "$qport" >"$HA_TMP/lat.quiet" &
lq=$!
latency "$pport" >"$HA_TMP/lat.push"
wait "$lq"
read -r _ qmax qavg qn <"$HA_TMP/lat.quiet"
read -r _ pmax pavg pn <"$HA_TMP/lat.push"
echo "# redis-cli --latency: quiet avg $qavg ms max $qmax ms ($qn samples); pushing to a receiver that never answers avg $pavg ms max $pmax ms ($pn samples)"
ha_ok "redis's latency beside a receiver that never answers is the quiet redis's (avg $pavg ms <= 3 x $qavg + 0.3 ms)" \
    awk -v p="$pavg" -v q="$qavg" 'BEGIN { exit !(p <= 3 * q + 0.3) }'
for _ in $(seq 30); do
    ag_sql "$psock" "SELECT dropped > 0 FROM stats_push"
    [ "$HA_OUT" = 1 ] && break
    sleep 1
done
outbox=$(find "$HA_TMP/pushing/data/push-outbox" -name '*.push' -printf '%s\n' | awk '{ t += $1 } END { print t + 0 }')
ag_sql "$psock" "SELECT queued > 0, queued_bytes <= $BOUND, dropped > 0, failed > 0, last_error FROM stats_push"
ha_like "the outbox stays at its bound, the oldest dropped (on disk: $outbox bytes)" \
    "^1	1	1	1	Timeout was reached" "$HA_OUT"
ha_ok "... $outbox <= $BOUND bytes on disk" test "$outbox" -le "$BOUND"
ha_file_like "... and each drop is said" "$HA_TMP/pushing/agent.log" \
    "push: the outbox holds more than push_outbox_max_bytes \($BOUND\): dropped its oldest entry"
ag_sql "$psock" "SELECT 1"
ha_is "the agent answers meanwhile" "0:1" "$HA_RC:$HA_OUT"
qpid=$(sed -n 's/.*redis-server\.\([0-9]*\)\.sock$/\1/p' <<<"$qsock")
rss=$(awk '/VmRSS/ { print $2 }' "/proc/$rpid/status")
qrss=$(awk '/VmRSS/ { print $2 }' "/proc/$qpid/status")
echo "# VmRSS: pushing redis $rss kB, quiet redis $qrss kB"
ha_ok "libcurl is loaded into the redis that pushes" \
    grep -q 'libcurl' "/proc/$rpid/maps"
ha_ok "... and never into the one that does not" \
    sh -c "! grep -q libcurl /proc/$qpid/maps"

# --- 500: retried; 413: given up at once ------------------------------------------

start_redis refusing "
    push_targets = (
        { type = \"pyroscope\"; url = \"http://127.0.0.1:$p500\"; kinds = \"manual\"; },
        { type = \"parca\"; url = \"http://127.0.0.1:$p413\"; kinds = \"manual\"; }
    )
    push_timeout_s = 2
    push_retry_max_s = 1"
f=$(ag_dump "$sock")
ha_ok "a dump to push (${f##*/})" test -n "$f"
sleep 6
ag_sql "$sock" "SELECT type, queued, failed > 1, dropped, last_error FROM stats_push ORDER BY type"
ha_is "500 is retried and the dump kept; 413 is given up at once" \
    "parca	0	0	1	the receiver answered HTTP 413
pyroscope	1	1	0	the receiver answered HTTP 500" "$HA_OUT"
ha_file_like "... the 413 said in the log" "$HA_TMP/refusing/agent.log" \
    "push: http://127.0.0.1:$p413 refused ${f##*/} for good \(the receiver answered HTTP 413\)"
ha_done
