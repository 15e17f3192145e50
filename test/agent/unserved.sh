#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A fork child that is never served costs nothing. Under the default
# HEAPADMIN_FORK=follow only the child that outlives a daemonizing parent
# serves; a child whose parent lives on (redis' BGSAVE, nginx's workers,
# test/agent/forkhost's children here) must end up with no agent thread
# and no timer: counted from /proc/<pid>/task (its threads' names) and
# the context switches of all its threads over a few seconds (a thread
# polling its parent 10 times a second, as the agent once did, makes 30
# in 3 s; the child itself sits in pause()). Then the other side of the
# rule: a child whose parent exits within the wait is served, even when
# it closed every descriptor it inherited meanwhile (the wait's pidfd
# among them), as a daemon does after its fork.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require mariadb mariadb-client
ha_require python3 python3
host=$HA_BUILDDIR/test/agent/forkhost
[ -x "$host" ] || ha_bail "no $host (make check builds it)"

# switches PID: the voluntary and involuntary context switches of all of
# PID's threads, summed.
switches() {
    cat /proc/"$1"/task/*/status 2>/dev/null |
        awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

# --- children whose parent lives on ------------------------------------------

data=$HA_TMP/data
ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" \
    "$host" 3 1000 >"$HA_TMP/host.out" 2>"$HA_TMP/host.err" &
hpid=$!
HA_PIDS+=("$hpid")
for _ in $(seq 100); do
    grep -q '^ready$' "$HA_TMP/host.out" 2>/dev/null && break
    sleep 0.1
done
mapfile -t kids < <(grep -v '^ready$' "$HA_TMP/host.out")
HA_PIDS+=("${kids[@]}")
ha_is "the host forked 3 children" 3 "${#kids[@]}"
ag_wait_socket "$data/forkhost.$hpid.sock" 20
ha_is "the parent is served (the agent is at work in this host)" 0 "$?"

for k in "${kids[@]}"; do
    # The child's agent gives up once its start delay and the follow
    # wait (30 s) are over; this waits for that, not for a time.
    until_s=$((SECONDS + 90))
    while [ "$SECONDS" -lt "$until_s" ] && ag_threads "$k" | grep -qx heapadmin; do
        sleep 0.2
    done
    ha_is "child $k: one thread, the host's own (no agent thread)" \
        forkhost "$(ag_threads "$k" | tr '\n' ' ' | sed 's/ $//')"
    ha_like "child $k: its agent said why it ended" \
        "\[pid $k\].*parent $hpid lives on after [0-9]+ ms: this fork child is not served" \
        "$(cat "$HA_TMP/agent.log" 2>/dev/null)"
done
before=()
for k in "${kids[@]}"; do before+=("$(switches "$k")"); done
sleep 3
for i in "${!kids[@]}"; do
    k=${kids[$i]}
    ha_is "child $k: no wake-up in 3 s (context switches of all its threads)" \
        "${before[$i]}" "$(switches "$k")"
done
n_socks=$(find "$data" -name 'forkhost.*.sock' | wc -l)
ha_is "no child opened an endpoint" 1 "$n_socks"
ha_like "the parent says once that its fork children are not served" \
    "fork children whose parent lives on, such as pid [0-9]+ \(forkhost\), are not served" \
    "$(cat "$HA_TMP/agent.log" 2>/dev/null)"
kill -TERM "$hpid"
ha_ok "the host stops on SIGTERM" ha_wait_gone "$hpid" 10

# --- a daemonizing parent: its child serves -----------------------------------

# The parent exits 1 s after its fork; the child closes every descriptor
# it inherited at once (the agent's pidfd included) and stays.
data=$HA_TMP/data2
cat >"$HA_TMP/daemon.py" <<'EOF'
import os, sys, time
pid = os.fork()
if pid == 0:
    os.closerange(3, 65536)
    print(os.getpid(), flush=True)
    while True:
        time.sleep(3600)
time.sleep(1)
sys.exit(0)
EOF
ag_env
env "${AG_ENV[@]}" LD_PRELOAD="$HA_AGENT libjemalloc.so.2" \
    HEAPADMIN_DATADIR="$data" python3 "$HA_TMP/daemon.py" \
    >"$HA_TMP/daemon.out" 2>"$HA_TMP/daemon.err"
ha_is "the daemonizing host's parent exits 0" 0 "$?"
dpid=$(head -1 "$HA_TMP/daemon.out")
[ -n "$dpid" ] && HA_PIDS+=("$dpid")
if ag_wait_socket "$data/python3.$dpid.sock" 20; then
    ha_pass "the child that outlived its parent ($dpid) serves"
else
    ha_fail "the child that outlived its parent ($dpid) serves" \
        "$(cat "$HA_TMP/agent.log" 2>/dev/null | tail -5)"
fi
ha_like "... and says it took over" "\[pid $dpid\].*is gone: taking over" \
    "$(cat "$HA_TMP/agent.log" 2>/dev/null)"
kill -TERM "$dpid" 2>/dev/null
ha_wait_gone "$dpid" 10

ha_done
