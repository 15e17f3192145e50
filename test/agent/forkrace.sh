#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Forks while the agent's thread is starting (test/agent/forkhost.c): a
# child inherits only the thread that forked, so a lock the admin thread
# held at that instant (SQLite's memory mutex, on every SQLite
# allocation) would stay held in the child and hang its agent at its
# first SQLite call. nginx does this when it daemonizes and starts its
# workers. 24 children forked 4 ms apart over the parent agent's start
# (no start delay, every process served): each child must answer, and
# the parent too. Before the locks were taken around fork, some children
# of each run hung (nginx: 2 of 15 starts lost their workers).

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require mariadb mariadb-client
host=$HA_BUILDDIR/test/agent/forkhost
[ -x "$host" ] || ha_bail "no $host (make check builds it)"
# make check-tsan builds the host, the agent and the gateway with TSan.
# Its runtime (gcc 12's libtsan) does not take its own allocator's locks
# around fork: a child forked while another thread of the host was in a
# large allocation inherits such a lock held and hangs at its next one.
# Such a child is TSan's loss, not the agent's, and is told apart by its
# stack; a child stuck anywhere else still fails.
excused_n=0

for round in 1 2 3; do
    data=$HA_TMP/data$round
    AG_DELAY_MS=0 ag_env
    env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" HEAPADMIN_FORK=per-process \
        "$host" 24 4000 >"$HA_TMP/host$round.out" 2>"$HA_TMP/host$round.err" &
    hpid=$!
    HA_PIDS+=("$hpid")
    for _ in $(seq 100); do
        grep -q '^ready$' "$HA_TMP/host$round.out" 2>/dev/null && break
        sleep 0.1
    done
    mapfile -t kids < <(grep -v '^ready$' "$HA_TMP/host$round.out")
    HA_PIDS+=("${kids[@]}")
    ha_is "round $round: the host forked 24 children" 24 "${#kids[@]}"
    served=0 lost=()
    for k in "${kids[@]}"; do
        if ag_wait_socket "$data/forkhost.$k.sock" 20; then
            served=$((served + 1))
        else
            lost+=("$k")
        fi
    done
    excused=()
    for k in "${lost[@]}"; do ag_tsan_stuck "$host" "$k" && excused+=("$k"); done
    excused_n=$((excused_n + ${#excused[@]}))
    [ "${#excused[@]}" -eq 0 ] ||
        ha_diag "round $round: lost to TSan's runtime (its allocator's locks held at the fork): ${excused[*]}"
    ha_is "round $round: every child forked during the agent's start is served" \
        24 "$((served + ${#excused[@]}))"
    [ "${#lost[@]}" -eq 0 ] || ha_diag "not served: ${lost[*]}"
    for k in "${lost[@]}"; do
        # Where the lost child stands: its threads' stacks, its socket and
        # what the agent logged for it.
        ha_diag "child $k: $(ls -l "$data" 2>&1 | grep -c "forkhost.$k") entries"
        ha_diag "$(grep "\[pid $k\]" "$HA_TMP/agent.log" 2>&1 | tail -5)"
        ha_diag "$(eu-stack -p "$k" 2>&1 | head -80)"
    done
    ag_wait_socket "$data/forkhost.$hpid.sock" 20
    ha_is "round $round: the parent is served too" 0 "$?"
    # What the fork handlers cost the host (bench/fork-stress sums it).
    ha_diag "round $round: $(grep -m1 '^longest fork' "$HA_TMP/host$round.err")"
    kill -TERM "$hpid"
    ha_wait_gone "$hpid" 10 || ha_fail "round $round: the host stops on SIGTERM"
done
ha_ok "at most one child in eight lost to TSan's runtime ($excused_n of 72)" \
    test "$excused_n" -le 9
ha_unlike "no child was given up on" "not served: forked while" \
    "$(cat "$HA_TMP/agent.log" 2>/dev/null)"

ha_done
