#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A real OOM kill, and what heapadmin keeps of it. test/growthhost -a
# (its leak 8x: 8 MiB/s, no bursts: a steady climb) under the agent in
# a memory cgroup of its own with a 128 MiB limit set on the group's
# parent (nested: the child has none of its own), until the kernel's OOM killer kills it. The limit
# watch must sample from its start (a limit binds the process) and take
# one dump at each of 0.80, 0.90 and 0.95 of the limit, each recorded at
# or past its level; a process whose cgroup v2 group is the root (the
# hybrid layout of a v1 memory group) must get no pressure trigger on the
# whole machine's memory.pressure, and say so; restarted in the same
# group, the new run's stats_previous_runs must say the last one was
# OOM-killed (the group's oom_kill count moved), name its limit dumps and
# its peak dump, and heap_top of the peak must name the leak first; the
# start-up log says the same.
#
# cgroup v1 (memory controller mounted read-write) and v2 (a hierarchy
# with the memory controller) each run where the machine has them; what
# it lacks is skipped and said so. Every group the test makes is removed,
# whatever happens.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-150}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require mariadb mariadb-client

host=$HA_BUILDDIR/test/growthhost
[ -x "$host" ] || ha_bail "no test host at $host (make test/growthhost)"

LIMIT=$((128 << 20))
trap 'ag_cg_cleanup; ha_cleanup' EXIT

# run_case VERSION MOUNT: the whole story in one cgroup hierarchy.
run_case() {
    local v=$1 mp=$2 parent child data sock pid pid2 rc n log2 peak top kills
    if ! ag_cg_make "$v" "$mp" "heapadmin-oom-$v.$$" "$LIMIT"; then
        echo "# SKIP cgroup v$v: $AG_CG_WHY"
        return
    fi
    parent=$AG_CG_PARENT
    child=$AG_CG_CHILD
    ha_pass "cgroup v$v: $parent limited to 128 MiB, the host in $child (no limit of its own)"

    data=$HA_TMP/data-v$v
    mkdir -p "$data"
    sock=$HA_SOCKDIR/oom$v.sock
    cat >"$HA_TMP/agent-v$v.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; mysql_ifaces = "$sock"; stats_system_memory = 1; }
EOF
    # The leak at 8 MiB/s: killed within seconds; sampling off at start
    # (the watch switches it on: a limit binds the process).
    env LD_PRELOAD="$HA_AGENT" MALLOC_CONF=prof:true,prof_active:false \
        HEAPADMIN_START_DELAY_MS=0 HEAPADMIN_LOG="$HA_TMP/agent-v$v.log" \
        HEAPADMIN_CONF="$HA_TMP/agent-v$v.cnf" GROWTHHOST_LEAK_X=8 \
        GROWTHHOST_BURST=0 \
        sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" -a' sh "$child" \
        "$host" >"$HA_TMP/host-v$v.out" 2>&1 &
    pid=$!
    HA_PIDS+=("$pid")
    rc=
    for _ in $(seq 600); do
        if ! ha_alive "$pid"; then
            # bash would print the job's "Killed" line: not ours to show
            { wait "$pid"; } 2>/dev/null
            rc=$?
            break
        fi
        sleep 0.1
    done
    ha_forget "$pid"
    ha_is "cgroup v$v: the kernel kills the leaking host (SIGKILL, 137)" \
        137 "$rc"
    kills=$(ag_cg_oom_kills "$v" "$child")
    ha_is "cgroup v$v: ... by the OOM killer (oom_kill 1)" 1 "$kills"
    ha_file_like "cgroup v$v: the agent saw the parent's limit" \
        "$HA_TMP/agent-v$v.log" \
        "memory cgroup: v$v /heapadmin-oom-$v\.$$/run, memory limit 128\.0 MiB .* set by /heapadmin-oom-$v\.$$"
    ha_file_like "cgroup v$v: the watch switched sampling on at its start" \
        "$HA_TMP/agent-v$v.log" \
        "limit watch: a memory limit binds the process: sampling switched on"
    if [ "$(sed -n 's/^0:://p' /proc/self/cgroup)" = / ]; then
        ha_file_like "cgroup v$v: no pressure trigger on the whole machine's file (the process's v2 group is the root)" \
            "$HA_TMP/agent-v$v.log" \
            "limit watch: no pressure trigger: the process has no cgroup v2 group of its own \(.*memory.pressure is the whole machine's\)"
        ha_unlike "cgroup v$v: ... and none set" \
            "the kernel signals memory pressure past" \
            "$(cat "$HA_TMP/agent-v$v.log")"
    fi
    for f in 0.80 0.90 0.95; do
        n=$(grep -c "limit watch: working set .* reached $f of the memory limit 128\.0 MiB.*: a limit dump" \
            "$HA_TMP/agent-v$v.log")
        ha_is "cgroup v$v: one limit dump at $f of the limit" 1 "$n"
        n=$(grep -l "^reason working set .* reached $f of" \
            "$data"/proxysql."$pid".*.heap.mem 2>/dev/null |
            xargs -r awk -v f="$f" '/^cgroup_working_set / { ws = $2 } /^cgroup_limit / { lim = $2 } END { printf "%.4f %s", ws / lim, (ws >= f * lim) ? "at-or-past" : "below" }')
        ha_like "cgroup v$v: ... recorded at or past it in its .mem ($n)" \
            "^[01]\.[0-9]+ at-or-past$" "$n"
    done
    n=$(grep -l '^trigger limit$' "$data"/proxysql."$pid".*.heap.mem 2>/dev/null | wc -l)
    ha_is "cgroup v$v: three dumps of the run recorded as limit dumps" 3 "$n"

    # Restarted in the same group, without the leak.
    env LD_PRELOAD="$HA_AGENT" MALLOC_CONF=prof:true,prof_active:false \
        HEAPADMIN_START_DELAY_MS=0 HEAPADMIN_LOG="$HA_TMP/agent-v$v-2.log" \
        HEAPADMIN_CONF="$HA_TMP/agent-v$v.cnf" GROWTHHOST_LEAK_X=0 \
        sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" -a' sh "$child" \
        "$host" >"$HA_TMP/host-v$v-2.out" 2>&1 &
    pid2=$!
    HA_PIDS+=("$pid2")
    if ! ag_wait_socket "$sock" 15; then
        ha_file_tail "$HA_TMP/agent-v$v-2.log"
        ha_fail "cgroup v$v: the restarted host serves"
        return
    fi
    ag_sql "$sock" "SELECT how FROM stats_previous_runs WHERE pid = $pid"
    ha_is "cgroup v$v: one SELECT says the last run was OOM-killed" \
        "0:oom-killed" "$HA_RC:$HA_OUT"
    ag_sql "$sock" "SELECT detail FROM stats_previous_runs WHERE pid = $pid"
    ha_like "cgroup v$v: ... with the kernel's evidence" \
        "oom_kill count of its cgroup v$v /heapadmin-oom-$v\.$$/run went from 0 to 1" \
        "$HA_OUT"
    ag_sql "$sock" "SELECT memory_limit_bytes, dumps >= 3, (length(limit_dumps) - length(replace(limit_dumps, ',', ''))) + 1 FROM stats_previous_runs WHERE pid = $pid"
    ha_is "cgroup v$v: its limit and its three limit dumps" \
        "0:$LIMIT	1	3" "$HA_RC:$HA_OUT"
    ag_sql "$sock" "SELECT peak_dump FROM stats_previous_runs WHERE pid = $pid"
    peak=$HA_OUT
    ha_like "cgroup v$v: its peak dump is named" \
        "^proxysql\.$pid\.[0-9]+\.m[0-9]+\.heap$" "$peak"
    ag_sql "$sock" "SELECT count(*) FROM stats_heap_dumps WHERE pid = $pid AND kind = 'limit'"
    ha_is "cgroup v$v: stats_heap_dumps lists them as kind limit" \
        "0:3" "$HA_RC:$HA_OUT"
    ag_sql "$sock" "SELECT file_name FROM stats_heap_dumps WHERE pid = $pid AND peak = 1"
    ha_is "cgroup v$v: ... and marks the same peak" "0:$peak" "$HA_RC:$HA_OUT"
    ag_sql "$sock" "SELECT function FROM heap_top((SELECT peak_dump FROM stats_previous_runs WHERE pid = $pid)) LIMIT 1"
    top=$HA_OUT
    ha_is "cgroup v$v: one more SELECT names the call site that filled the heap" \
        "0:growthhost_leak" "$HA_RC:$top"
    ha_file_like "cgroup v$v: the start-up log says what happened" \
        "$HA_TMP/agent-v$v-2.log" \
        "previous run: growthhost pid $pid, .*: OOM-killed \(.*\); .*limit dumps: .*SELECT \* FROM heap_top\('$peak'\)"
    log2=$(cat "$HA_TMP/agent-v$v-2.log")
    ha_unlike "cgroup v$v: the quiet run takes no limit dump" \
        "a limit dump" "$log2"
    ag_sql "$sock" "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-limit_watch_state'"
    ha_like "cgroup v$v: its watch says it samples (a limit binds it)" \
        "^watching: .*; levels 0\.80 0\.90 0\.95; sampling on \(lg_prof_sample 19\)(;|$)" \
        "$HA_OUT"
    kill -TERM "$pid2"
    ha_wait_gone "$pid2" 10

    # The operator's word stands: prof_active = false in the config.
    sed -i 's/^jemalloc_variables.*//' "$HA_TMP/agent-v$v.cnf"
    echo 'jemalloc_variables = { prof_active = false; }' >>"$HA_TMP/agent-v$v.cnf"
    env LD_PRELOAD="$HA_AGENT" MALLOC_CONF=prof:true,prof_active:false \
        HEAPADMIN_START_DELAY_MS=0 HEAPADMIN_LOG="$HA_TMP/agent-v$v-3.log" \
        HEAPADMIN_CONF="$HA_TMP/agent-v$v.cnf" GROWTHHOST_LEAK_X=0 \
        sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" -a' sh "$child" \
        "$host" >"$HA_TMP/host-v$v-3.out" 2>&1 &
    pid2=$!
    HA_PIDS+=("$pid2")
    if ! ag_wait_socket "$sock" 15; then
        ha_file_tail "$HA_TMP/agent-v$v-3.log"
        ha_fail "cgroup v$v: the host configured with prof_active = false serves"
        return
    fi
    ag_sql "$sock" "SELECT variable_value FROM global_variables WHERE variable_name IN ('jemalloc-prof_active', 'jemalloc-limit_watch_state') ORDER BY variable_name"
    ha_like "cgroup v$v: prof_active = false in the config: the watch leaves sampling off, and says so" \
        "^false
watching: .*; sampling off \(jemalloc_variables\.prof_active = false\)(;|$)" "$HA_OUT"
    kill -TERM "$pid2"
    ha_wait_gone "$pid2" 10
}

ran=0
for v in 1 2; do
    if mp=$(ag_cg_mount "$v"); then
        run_case "$v" "$mp"
        ran=1
    else
        echo "# cgroup v$v: $mp"
    fi
done
if [ "$ran" = 0 ]; then
    echo "1..0 # SKIP this machine offers no memory cgroup to make groups in"
    exit 77
fi
ha_done
