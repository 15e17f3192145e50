#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified redis-server under the agent in a memory cgroup
# limited to 160 MiB, filled with SETs (no maxmemory: redis takes what it
# is given) until the kernel's OOM killer ends it. The agent, never
# configured for it, must take its limit dumps on the way (sampling
# switched on by the watch); restarted in the same group, redis's agent
# must say the last run was OOM-killed, and the limit dumps must name
# redis's own functions: its allocator wrapper (zmalloc_usable) as the
# allocation site, and the string code that called it.
#
# cgroup v1 or v2, whichever the machine has; skipped, and said so, where
# it has neither.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require mariadb mariadb-client

LIMIT=$((160 << 20))
trap 'ag_cg_cleanup; ha_cleanup' EXIT

v=
for try in 1 2; do
    if mp=$(ag_cg_mount "$try"); then
        v=$try
        break
    fi
    echo "# cgroup v$try: $mp"
done
if [ -z "$v" ]; then
    echo "1..0 # SKIP this machine offers no memory cgroup to make groups in"
    exit 77
fi
if ! ag_cg_make "$v" "$mp" "heapadmin-redis.$$" "$LIMIT"; then
    echo "1..0 # SKIP cgroup v$v: $AG_CG_WHY"
    exit 77
fi
ha_pass "cgroup v$v: $AG_CG_PARENT limited to 160 MiB"

data=$HA_TMP/data
mkdir -p "$data"
port=$(ha_free_port)

# start_redis LOG: redis-server in the group under the agent, as its
# drop-in would start it (sampling armed, off); sets rpid and sock.
start_redis() {
    ag_env
    AG_ENV+=(HEAPADMIN_LOG="$HA_TMP/$1" HEAPADMIN_DATADIR="$data"
        HEAPADMIN_START_DELAY_MS=0)
    ag_in_cgroup "$AG_CG_CHILD" env "${AG_ENV[@]}" redis-server \
        --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
        >>"$HA_TMP/redis.out" 2>&1
    rpid=$!
    HA_PIDS+=("$rpid")
    sock=$data/redis-server.$rpid.sock
}

start_redis agent.log
if ! ag_wait_socket "$sock" 15; then
    ha_file_tail "$HA_TMP/agent.log"
    ha_bail "the agent serves redis-server $rpid"
fi
ha_file_like "the agent found the limit on its own" "$HA_TMP/agent.log" \
    "memory cgroup: v$v .*memory limit 160\.0 MiB"

# Fill it: 3000 SETs of 2000 bytes at a time (about 6 MiB), so the
# watch sees the climb, until the kernel kills it.
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
ha_is "... by the OOM killer" 1 "$(ag_cg_oom_kills "$v" "$AG_CG_CHILD")"
n=$(grep -Ec "limit watch: working set .* reached 0\.[0-9]+ of the memory limit 160\.0 MiB.*: a limit dump" \
    "$HA_TMP/agent.log")
ha_ok "the watch took limit dumps on the way ($n)" test "$n" -ge 2
ha_file_like "... having switched sampling on by itself" "$HA_TMP/agent.log" \
    "limit watch: working set at [0-9]+% of the memory limit, past limit_watch_sample_pct = 50: sampling switched on"
dead=$rpid

# Restarted in the same group: what the dumps say.
start_redis agent2.log
if ! ag_wait_socket "$sock" 15; then
    ha_file_tail "$HA_TMP/agent2.log"
    ha_bail "the restarted redis-server is served"
fi
ag_sql "$sock" "SELECT how FROM stats_previous_runs WHERE pid = $dead"
ha_is "the restarted redis says the last run was OOM-killed" \
    "0:oom-killed" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT file_name FROM stats_heap_dumps WHERE pid = $dead AND kind = 'limit' ORDER BY mtime DESC LIMIT 1"
last=$HA_OUT
ha_like "its limit dumps are listed" "^proxysql\.$dead\.[0-9]+\.m[0-9]+\.heap$" "$last"
ag_sql "$sock" "SELECT function FROM heap_top('$last') LIMIT 1"
ha_is "the last limit dump's top allocation site is redis's own allocator wrapper" \
    "0:zmalloc_usable" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT count(*) FROM heap_top('$last') WHERE function IN ('_sdsnewlen', 'sdsnewlen', 'createStringObject', 'createRawStringObject', 'createEmbeddedStringObject', 'sdsMakeRoomFor', 'dictAddRaw', 'setKey', 'dbAdd') AND cum_pct > 10"
ha_like "... called from redis's string and keyspace code" "^0:[1-9]" \
    "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT round(flat_pct) > 50 FROM heap_top('$last') WHERE function = 'zmalloc_usable'"
ha_is "... which holds most of the heap" "0:1" "$HA_RC:$HA_OUT"

kill -TERM "$rpid"
ha_wait_gone "$rpid" 10
ha_done
