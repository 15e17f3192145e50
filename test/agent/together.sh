#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Agents starting together on one datadir (a host of several processes,
# or several services sharing one): settings saved with SAVE JEMALLOC
# VARIABLES TO DISK are applied in every one of 8 redis-servers started
# at once, twice over, none logs "database is locked", and the memory
# history keeps every process's own rows (rows carry the pid).

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server

data=$HA_TMP/data
cat >"$HA_TMP/agent.cnf" <<CNF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; stats_system_memory = 1; }
CNF
ag_env
start_redis() {
    local port
    port=$(ha_free_port)
    env "${AG_ENV[@]}" HEAPADMIN_CONF="$HA_TMP/agent.cnf" \
        HEAPADMIN_START_DELAY_MS=0 HEAPADMIN_LOG="$HA_TMP/agent.log" \
        redis-server --port "$port" --save '' --appendonly no \
        --dir "$HA_TMP" >/dev/null 2>&1 &
    echo $!
}

# One redis saves the settings.
pid=$(start_redis)
HA_PIDS+=("$pid")
ag_wait_socket "$data/redis-server.$pid.sock" 15 || ha_bail "the first redis is served"
sock=$data/redis-server.$pid.sock
ag_set "$sock" jemalloc-lg_prof_sample 15
ag_set "$sock" jemalloc-prof_active true
ag_sql "$sock" "SAVE JEMALLOC VARIABLES TO DISK"
ha_is "settings saved to the datadir's heapadmin.db" "0:" "$HA_RC:$HA_ERR"
kill -TERM "$pid"
ha_wait_gone "$pid" 10

for round in 1 2; do
    pids=()
    for _ in 1 2 3 4 5 6 7 8; do pids+=("$(start_redis)"); done
    HA_PIDS+=("${pids[@]}")
    ok=0
    for p in "${pids[@]}"; do
        s=$data/redis-server.$p.sock
        ag_wait_socket "$s" 20 || continue
        ag_sql "$s" "SELECT group_concat(variable_value, ',') FROM (SELECT variable_value FROM global_variables WHERE variable_name IN ('jemalloc-prof_active', 'jemalloc-lg_prof_sample') ORDER BY variable_name)"
        [ "$HA_RC:$HA_OUT" = "0:15,true" ] && ok=$((ok + 1))
    done
    ha_is "round $round: 8 redis started at once all apply the saved settings" 8 "$ok"
    # A sample a second each: every process's own rows.
    n=0
    in=$(IFS=,; echo "${pids[*]}")
    for _ in $(seq 60); do
        ag_sql "$data/redis-server.${pids[0]}.sock" "SELECT count(DISTINCT pid) FROM stats_history.system_memory WHERE pid IN ($in)"
        n=$HA_OUT
        [ "$n" = 8 ] && break
        sleep 0.2
    done
    ha_is "round $round: the memory history holds each one's rows" 8 "$n"
    for p in "${pids[@]}"; do kill -TERM "$p"; done
    for p in "${pids[@]}"; do ha_wait_gone "$p" 10; done
done
ha_unlike "no start met a locked database or lost its saved settings" \
    "database is locked|saved variables not applied|no memory history" \
    "$(cat "$HA_TMP/agent.log")"
# The two values set above, in each of 16 starts. (Others may be saved
# too: redis turns jemalloc's background_thread on itself, so the first
# redis saved it, and a start logs it only when the agent is first.)
ha_is "... and every saved value was applied, logged (2 x 16)" 32 \
    "$(grep -cE 'jemalloc-(lg_prof_sample|prof_active) = .* from .*heapadmin.db \(saved on disk\)' "$HA_TMP/agent.log")"

ha_done
