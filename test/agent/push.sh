#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Push (issue 37): Debian's redis-server under the agent in a memory
# cgroup, pushing to a Pyroscope-compatible and a Parca-compatible
# receiver written in the test (test/agent/pushrecv.py: Pyroscope's
# /ingest form, Parca's /profiles/writeraw JSON), each profile read back
# with an independent decoder (go tool pprof -raw).
#
# Filled past its limit, redis is OOM-killed; every limit dump its agent
# took on the way arrives exactly once at each receiver, with the label
# contract (service_name, program, host, build_id) and kind=limit, and
# the last one's total is heap_top's total for that dump. Then the
# receiver is stopped for 60 s while redis (restarted) takes dumps: they
# wait in the outbox and arrive, once each, after it returns.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-300}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require mariadb mariadb-client
ha_require go golang-go
ha_require eu-readelf elfutils
ha_require curl curl

LIMIT=$((160 << 20))
trap 'ag_cg_cleanup; ha_cleanup' EXIT

ag_cg_limited "heapadmin-push.$$" "$LIMIT"
group=$AG_CG_CHILD

rx=$HA_TMP/rx
rxport=$(ha_free_port)
rxpid=
start_receiver() {
    python3 "$HA_SRCDIR/test/agent/pushrecv.py" "$rxport" "$rx" &
    rxpid=$!
    HA_PIDS+=("$rxpid")
    for _ in $(seq 50); do
        curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$rxport/" && return 0
        sleep 0.1
    done
    ha_bail "the receiver listens on $rxport"
}
start_receiver

data=$HA_TMP/data
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = {
    service_names = "redis-server=cache"
    push_targets = (
        { type = "pyroscope"; url = "http://127.0.0.1:$rxport"; kinds = "limit,manual"; tenant = "ops"; },
        { type = "parca"; url = "http://127.0.0.1:$rxport/"; kinds = "limit"; bearer_token = "t0ken"; }
    )
    push_retry_max_s = 2
    push_timeout_s = 5
}
EOF
chmod 600 "$HA_TMP/agent.cnf"
port=$(ha_free_port)

# start_redis: redis-server in $group under the agent; sets rpid, sock.
start_redis() {
    ag_env
    AG_ENV+=(HEAPADMIN_CONF="$HA_TMP/agent.cnf" HEAPADMIN_START_DELAY_MS=0)
    ag_in_cgroup "$group" env "${AG_ENV[@]}" redis-server \
        --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
        >>"$HA_TMP/redis.out" 2>&1
    rpid=$!
    HA_PIDS+=("$rpid")
    sock=$data/redis-server.$rpid.sock
    ag_wait_socket "$sock" 15 || ha_bail "the agent serves redis-server $rpid"
}

# received API KEY [ACKED]: how many times KEY (a dump's name) reached
# API; with ACKED (true, false) only those whose answer the sender read
# (false: it was killed with the push in flight).
received() {
    python3 - "$rx/log.jsonl" "$1" "$2" "${3:-}" <<'PY'
import json, sys
n = 0
try:
    for line in open(sys.argv[1]):
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line being written
        n += (r["api"] == sys.argv[2] and r["key"] == sys.argv[3] and
              (sys.argv[4] == "" or str(r["acked"]).lower() == sys.argv[4]))
except FileNotFoundError:
    pass
print(n)
PY
}

# record API KEY FIELD: FIELD of KEY's first record at API (labels.x,
# app, tenant, auth, file).
record() {
    python3 - "$rx/log.jsonl" "$1" "$2" "$3" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["api"] == sys.argv[2] and r["key"] == sys.argv[3]:
        v = r
        for k in sys.argv[4].split("."):
            v = v.get(k) if isinstance(v, dict) else None
        print(v if v is not None else "")
        break
PY
}

# wait_all API KEYS...: 0 once every KEY reached API, 1 after 60 s.
wait_all() {
    local api=$1
    shift
    for _ in $(seq 120); do
        python3 - "$rx/log.jsonl" "$api" "$@" <<'PY' && return 0
import json, sys
got = set()
try:
    for line in open(sys.argv[1]):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r["api"] == sys.argv[2]:
            got.add(r["key"])
except FileNotFoundError:
    pass
sys.exit(0 if set(sys.argv[3:]) <= got else 1)
PY
        sleep 0.5
    done
    return 1
}

# inuse FILE: the inuse_space total of a profile, by go tool pprof -raw
# (its sample types head the samples; alloc_* only with prof_accum).
inuse() {
    timeout 120 go tool pprof -raw "$1" 2>/dev/null | awk '
        /^Samples:/ { s = 1; next }
        s == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^inuse_space/) col = i
                 s = 2; next }
        s == 2 && /^[A-Za-z]/ { exit }
        s == 2 && /^ *-?[0-9]+ .*:/ { sub(/:.*/, ""); t += $col }
        END { print t + 0 }'
}

# --- an OOM kill: the limit dumps arrive, once each --------------------------------

start_redis
killed=
for _ in $(seq 400); do
    if ! ha_alive "$rpid"; then
        { wait "$rpid"; } 2>/dev/null
        killed=$?
        break
    fi
    timeout 20 redis-benchmark -p "$port" -t set -n 3000 -d 2000 \
        -r 100000000 -c 4 -q >/dev/null 2>&1
done
ha_forget "$rpid"
ha_is "redis filled past its limit is killed (SIGKILL, 137)" 137 "$killed"
dead=$rpid
# Restarted in the same datadir: it says which limit dumps the dead run
# took, and takes over what that run left in the outbox.
start_redis
ag_sql "$sock" "SELECT file_name FROM stats_heap_dumps WHERE pid = $dead AND kind = 'limit' ORDER BY mtime"
mapfile -t limits <<<"$HA_OUT"
ha_ok "the dead run took limit dumps (${#limits[@]}: ${limits[*]})" \
    test -n "${limits[0]}"
wait_all pyroscope "${limits[@]}"
ha_is "every limit dump reached the Pyroscope receiver" 0 "$?"
wait_all parca "${limits[@]}"
ha_is "... and the Parca receiver" 0 "$?"
sleep 3 # a second copy would come within push_retry_max_s
# Exactly once, as a receiver sees it: one arrival whose answer the agent
# read. A push the OOM kill cut in flight (sent, its answer never read)
# cannot be known to have been taken: the next start sends it again,
# with the same Idempotency-Key.
cut=0
for k in "${limits[@]}"; do
    ha_is "$k arrived exactly once at each" "1 1" \
        "$(received pyroscope "$k" true) $(received parca "$k" true)"
    cut=$((cut + $(received pyroscope "$k" false) + $(received parca "$k" false)))
done
ha_ok "... and a second time only where the kill cut a push in flight ($cut)" \
    test "$cut" -le 1
total_arrivals=0
for k in "${limits[@]}"; do
    total_arrivals=$((total_arrivals + $(received pyroscope "$k") + $(received parca "$k")))
done
ha_is "... so that arrivals are two per dump plus the cut ones" \
    $((2 * ${#limits[@]} + cut)) "$total_arrivals"
last=${limits[${#limits[@]} - 1]}
bid=$(eu-readelf -n "$(readlink -f /usr/bin/redis-server)" | awk '/Build ID:/ { print $3 }')
ha_is "Pyroscope's: application cache, the label contract, kind limit, the tenant" \
    "cache redis-server $(uname -n) $bid limit pprof ops" \
    "$(for f in app labels.program labels.host labels.build_id labels.kind format tenant; do record pyroscope "$last" "$f"; done | xargs)"
ha_like "... and the reason the limit watch gave (spaces as _)" "reached_0\.[0-9]+_of_the_memory_limit" \
    "$(record pyroscope "$last" labels.reason)"
ha_is "Parca's: __name__ memory, the label contract, kind limit, the token" \
    "memory cache redis-server $(uname -n) $bid limit Bearer t0ken" \
    "$(for f in labels.__name__ labels.service_name labels.program labels.host labels.build_id labels.kind auth; do record parca "$last" "$f"; done | xargs)"
# pprof's samples are heap_stacks' stacks, rounded alike; heap_top's
# total is jeprof's, rounded once: the same within a byte a stack.
ag_sql "$sock" "SELECT sum(bytes), count(*) FROM heap_stacks('$last')"
read -r stacks_total n_stacks <<<"$HA_OUT"
ag_sql "$sock" "SELECT sum(flat_bytes) FROM heap_top('$last')"
total=$HA_OUT
for api in pyroscope parca; do
    got=$(inuse "$(record "$api" "$last" file)")
    ha_is "$api: go tool pprof reads the last limit dump's total as heap_stacks' sum" \
        "$stacks_total" "$got"
    ha_ok "... and as heap_top's total, $total, within rounding ($got, $n_stacks stacks)" \
        test $(((got - total) * (got - total))) -le $((n_stacks * n_stacks))
done
ag_sql "$sock" "SELECT type, queued, failed, dropped FROM stats_push ORDER BY type"
ha_is "stats_push: nothing waits, nothing failed" \
    "parca	0	0	0
pyroscope	0	0	0" "$HA_OUT"

# --- the receiver stopped for 60 s ------------------------------------------------

kill "$rxpid"
ha_wait_gone "$rxpid" 10
ha_forget "$rxpid"
down=()
for _ in 1 2 3; do
    f=$(ag_dump "$sock")
    down+=("${f##*/}")
    sleep 1
done
ha_ok "three dumps taken while the receiver is down (${down[*]})" \
    test -n "${down[2]}"
sleep 8
ag_sql "$sock" "SELECT queued, failed > 0, last_error IS NOT NULL FROM stats_push WHERE type = 'pyroscope'"
ha_is "they wait in the outbox; the failures are counted with a reason" \
    "0:3	1	1" "$HA_RC:$HA_OUT"
ha_file_like "... and said once in the log" "$HA_TMP/agent.log" \
    "push: http://127.0.0.1:$rxport: .*profiles? wait in the outbox"
sleep 50 # 60 s down in all
start_receiver
wait_all pyroscope "${down[@]}"
ha_is "after 60 s the receiver gets every one" 0 "$?"
sleep 3
for k in "${down[@]}"; do
    ha_is "$k arrived exactly once" "1 0" \
        "$(received pyroscope "$k") $(received pyroscope "$k" false)"
done
ag_sql "$sock" "SELECT queued, sent >= 3, dropped FROM stats_push WHERE type = 'pyroscope'"
ha_is "stats_push: the outbox is empty again" "0:0	1	0" "$HA_RC:$HA_OUT"
ha_ok "... and the outbox holds only claims" \
    test -z "$(find "$data/push-outbox" -name '*.push')"
ha_done
