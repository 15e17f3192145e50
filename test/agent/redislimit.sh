#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified redis-server under the agent in a memory cgroup
# limited to 192 MiB, filled with SETs (no maxmemory: redis takes what it
# is given) in about two seconds, until the kernel's OOM killer ends it:
# faster than any period of the watch's own. The agent, configured with
# nothing but its datadir, must sample from its start (a limit binds the
# process) and take its limit dumps on the way, each recorded at or past
# its level (the working set in its .mem, the look it was decided on),
# the last one's profile holding at least 80 % of the heap then
# (jemalloc's stats.allocated, recorded beside it); restarted in the same
# group, redis's agent must say the last run was OOM-killed, with the
# usage near the kill (at least the last limit dump's), and the limit
# dumps must name redis's own functions: its string code (_sdsnewlen) as
# the allocation site, past its allocator wrapper (zmalloc_usable,
# heap_top's wrapper column).
#
# Twice: as root, where the kernel wakes the watch at each level (v1
# usage thresholds: every level gets a dump of its own, taken before the
# next level is reached), and as Debian's own `redis` user, where the
# kernel offers no threshold nor pressure trigger to a process that is
# not root and the watch's glance at the usage must see the climb.
#
# cgroup v1 or v2, whichever the machine has; skipped, and said so, where
# it has neither.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require mariadb mariadb-client
ha_require setpriv util-linux

LIMIT=$((192 << 20))
trap 'ag_cg_cleanup; ha_cleanup' EXIT

ag_cg_limited "heapadmin-redis.$$" "$LIMIT"
v=$AG_CG_VERSION
group=$AG_CG_CHILD

port=$(ha_free_port)

# start_redis DIR [USER]: redis-server in $group under the agent, as its
# drop-in would start it (sampling armed, off), its log DIR/agent.log,
# its datadir DIR/data; as USER when given. Sets rpid and sock.
start_redis() {
    local dir=$1 user=${2:-}
    local as=()
    mkdir -p "$dir/data"
    if [ -n "$user" ]; then
        chown -R "$user:" "$dir"
        as=(setpriv --reuid "$user" --regid "$user" --init-groups)
    fi
    ag_env
    AG_ENV+=(HEAPADMIN_LOG="$dir/agent.log" HEAPADMIN_DATADIR="$dir/data"
        HEAPADMIN_START_DELAY_MS=0)
    ag_in_cgroup "$group" "${as[@]}" env "${AG_ENV[@]}" redis-server \
        --port "$port" --save '' --appendonly no --dir "$dir" \
        >>"$HA_TMP/redis.out" 2>&1
    rpid=$!
    HA_PIDS+=("$rpid")
    sock=$dir/data/redis-server.$rpid.sock
    if ! ag_wait_socket "$sock" 15; then
        ha_file_tail "$dir/agent.log"
        ha_bail "the agent serves redis-server $rpid"
    fi
}

# fill LABEL: SETs of 2000 bytes, 3000 at a time (about 6 MiB: 192 MiB in
# two to three seconds here), until the kernel kills redis; checks that
# it did. Sets dead.
fill() {
    local killed=
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
    ha_is "$1: redis filled past its limit is killed (SIGKILL, 137)" 137 "$killed"
    dead=$rpid
}

# levels LOG: the working set at each limit dump in LOG, as share of the
# limit and level, one "share level" a line.
levels() {
    sed -nE 's/.*limit watch: working set ([0-9.]+) MiB reached (0\.[0-9]+) of the memory limit 192\.0 MiB.*: a limit dump$/\1 \2/p' "$1" |
        awk '{ printf "%.3f %s\n", $1 / 192, $2 }'
}

# --- as root: the kernel's thresholds wake the watch at each level -------------------

start_redis "$HA_TMP/root"
ha_file_like "the agent found the limit on its own" "$HA_TMP/root/agent.log" \
    "memory cgroup: v$v .*memory limit 192\.0 MiB"
ha_file_like "... and sampled from its start" "$HA_TMP/root/agent.log" \
    "limit watch: a memory limit binds the process: sampling switched on \(lg_prof_sample 19\), so that its limit dumps hold the whole heap"
fill root
ha_is "... by the OOM killer" 1 "$(ag_cg_oom_kills "$v" "$group")"
got=$(levels "$HA_TMP/root/agent.log")
echo "# limit dumps (share of the limit, level):" $got
if [ "$v" = 1 ]; then
    # Each level its own dump, taken before the climb reached the next
    # (the last, before the limit).
    ha_is "every level got a limit dump of its own" "0.80 0.90 0.95" \
        "$(echo "$got" | awk '{ print $2 }' | xargs)"
    ha_is "... each taken before the climb reached the next level" "" \
        "$(echo "$got" | awk '($2 == "0.80" && $1 >= 0.90) || ($2 == "0.90" && $1 >= 0.95) || $1 >= 1 { print }')"
else
    ha_ok "the watch took limit dumps on the way ($(echo "$got" | grep -c .))" \
        test "$(echo "$got" | grep -c .)" -ge 2
fi

# read_back DIR LABEL [USER]: redis restarted in the same group and
# datadir says the last run ($dead) was OOM-killed, with the usage near
# the kill, lists its limit dumps, each at or past its level, the last
# holding at least 80 % of the heap and naming redis's own functions.
read_back() {
    local dir=$1 who=$2 last rows n
    start_redis "$dir" "${3:-}"
    ag_sql "$sock" "SELECT how FROM stats_previous_runs WHERE pid = $dead"
    ha_is "$who: the restarted redis says the last run was OOM-killed" \
        "0:oom-killed" "$HA_RC:$HA_OUT"
    # Every limit dump at or past its level, on the working set its .mem
    # records (what the watch decided on); one per level.
    ag_sql "$sock" "SELECT substr(reason, instr(reason, ' reached ') + 9, 4), cgroup_working_set_bytes, cgroup_limit_bytes FROM stats_heap_dumps WHERE pid = $dead AND kind = 'limit' AND reason LIKE '% reached %' ORDER BY seq"
    rows=$HA_OUT
    echo "# $who: limit dumps (level, working set as share of the limit):" \
        $(awk '{ printf "%s %.4f ", $1, $2 / $3 }' <<<"$rows")
    ha_is "$who: one limit dump per level" "0.80 0.90 0.95" \
        "$(awk '{ print $1 }' <<<"$rows" | xargs)"
    ha_is "$who: ... each recorded at or past its level" "" \
        "$(awk '$2 * 10000 < $1 * 10000 * $3 || $3 != '"$LIMIT"' { print }' <<<"$rows")"
    # The last one holds the heap: its profile's total (jeprof's scaling
    # of the samples) against jemalloc's allocated bytes then.
    ag_sql "$sock" "SELECT bytes, allocated_bytes, cgroup_working_set_bytes FROM stats_heap_dumps WHERE pid = $dead AND kind = 'limit' ORDER BY seq DESC LIMIT 1"
    read -r n alloc ws <<<"$HA_OUT"
    echo "# $who: the last limit dump's profile: $n bytes of $alloc allocated ($(awk -v a="$n" -v b="$alloc" 'BEGIN { printf "%.3f", a / b }')), of a working set of $ws ($(awk -v a="$n" -v b="$ws" 'BEGIN { printf "%.3f", a / b }'))"
    ha_ok "$who: ... and the last holds at least 80 % of the heap's bytes" \
        awk -v a="$n" -v b="$alloc" 'BEGIN { exit !(b > 0 && a >= 0.8 * b) }'
    # The usage near the kill: a look after the last limit dump's.
    ag_sql "$sock" "SELECT last_usage_bytes, limit_dump_usage_bytes, memory_limit_bytes FROM stats_previous_runs WHERE pid = $dead"
    read -r n dumpu lim <<<"$HA_OUT"
    echo "# $who: usage at the last look $n, at the last limit dump $dumpu, limit $lim"
    ha_ok "$who: ... with the usage near the kill, at least the last limit dump's" \
        test "${n:-0}" -ge "${dumpu:-1}" -a "${dumpu:-1}" -ge $((LIMIT * 95 / 100))
    ha_file_like "$who: ... which the start-up log says" "$dir/agent.log" \
        "previous run: redis-server pid $dead, .*OOM-killed .*usage [0-9.]+ MiB at its last look \(working set [0-9.]+ MiB, (0\.9[5-9][0-9]|1\.000) of the limit\)"
    ag_sql "$sock" "SELECT file_name FROM stats_heap_dumps WHERE pid = $dead AND kind = 'limit' ORDER BY mtime DESC LIMIT 1"
    last=$HA_OUT
    ha_like "... its limit dumps are listed" "^proxysql\.$dead\.[0-9]+\.m[0-9]+\.heap$" "$last"
    ag_sql "$sock" "SELECT function || ' ' || wrapper FROM heap_top('$last') LIMIT 1"
    ha_is "... the last one's top allocation site is redis's string code, past its allocator wrapper" \
        "0:_sdsnewlen zmalloc_usable" "$HA_RC:$HA_OUT"
    ag_sql "$sock" "SELECT count(*) FROM heap_top('$last') WHERE function IN ('_sdsnewlen', 'sdsnewlen', 'createStringObject', 'createRawStringObject', 'createEmbeddedStringObject', 'sdsMakeRoomFor', 'dictAddRaw', 'setKey', 'dbAdd') AND cum_pct > 10"
    ha_like "... called from redis's string and keyspace code" "^0:[1-9]" \
        "$HA_RC:$HA_OUT"
    ag_sql "$sock" "SELECT round(flat_pct) > 50 FROM heap_top('$last') WHERE function = '_sdsnewlen'"
    ha_is "... which holds most of the heap" "0:1" "$HA_RC:$HA_OUT"
    kill -TERM "$rpid"
    ha_wait_gone "$rpid" 10
}
read_back "$HA_TMP/root" root

# --- as Debian's redis user: no threshold, no trigger; the glance ----------------

chmod 711 "$HA_TMP" # the redis user reaches its own directory
start_redis "$HA_TMP/user" redis
fill "as user redis"
ha_is "... by the OOM killer" 2 "$(ag_cg_oom_kills "$v" "$group")"
ha_file_like "... where the kernel gives it no usage threshold" \
    "$HA_TMP/user/agent.log" \
    "limit watch: no usage thresholds from the kernel .*the watch reads the usage itself"
ha_file_like "... having sampled from its start" "$HA_TMP/user/agent.log" \
    "limit watch: a memory limit binds the process: sampling switched on"
got=$(levels "$HA_TMP/user/agent.log")
echo "# limit dumps (share of the limit, level):" $got
ha_ok "... and taking limit dumps on the way ($(echo "$got" | grep -c .))" \
    test "$(echo "$got" | grep -c .)" -ge 2
read_back "$HA_TMP/user" "as user redis" redis
ha_done
