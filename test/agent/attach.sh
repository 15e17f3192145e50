#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# heapadmin-attach on processes that run without the agent (issue 39).
# A test host (attachhost.c) built four ways: with libjemalloc.so, and
# with a static libjemalloc_pic.a exported (-rdynamic, or mallctl alone)
# or not. Attached, the first three serve, and a live profile holds
# exactly the 48 MiB and 4 MiB their two call sites allocated before the
# attach (every allocation sampled); the last is refused, the reason
# named. A host held in raw nanosleep calls gets every register, xmm15
# and errno back and sleeps its whole time. Refused with their reasons,
# each target left running and untouched (no agent thread): a glibc
# process (sleep), a setuid one, a non-dumpable one, one traced by
# strace, one in a mount namespace without the agent, one already
# attached. Debian's
# redis-server started with prof:true,lg_prof_sample:19 and no
# LD_PRELOAD, filled with 100 MB by redis-benchmark, then attached under
# load: the live profile holds redis's own sites for at least 80 % of
# what jemalloc's malloc_stats_print said was allocated before the
# attach, and redis's worst PING latency (redis-cli --latency) during
# the attach is below 500 ms more than in the same window without one.
# The same redis without prof:true: the statistics tables answer, the
# profile tables name the restart needed. The gateway lists the
# attached processes, "attached at ..." in their detail.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require redis-cli redis-tools
ha_require mariadb mariadb-client
ha_require cc gcc
ha_require setpriv util-linux
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP attach.sh: attaching to other users' and setuid processes needs root"
    echo "1..0 # SKIP needs root"
    exit 77
fi
ATTACH=$HA_BUILDDIR/attach/heapadmin-attach
[ -x "$ATTACH" ] || ha_bail "no $ATTACH (configure disabled the agent?)"
pic=/usr/lib/$(cc -print-multiarch)/libjemalloc_pic.a
[ -f "$pic" ] || ha_bail "no $pic (apt-get install libjemalloc-dev)"

chmod 711 "$HA_TMP"
data=$HA_TMP/data
src=$HA_SRCDIR/test/agent/attachhost.c
flags=(-O2 -g -fno-omit-frame-pointer)
cc "${flags[@]}" -o "$HA_TMP/attachhost" "$src" -ljemalloc &&
    cc "${flags[@]}" -rdynamic -o "$HA_TMP/attachhost-static" "$src" \
        "$pic" -lpthread -ldl -lm &&
    cc "${flags[@]}" -Wl,--export-dynamic-symbol=mallctl \
        -o "$HA_TMP/attachhost-mallctl" "$src" "$pic" -lpthread -ldl -lm &&
    cc "${flags[@]}" -o "$HA_TMP/attachhost-hidden" "$src" "$pic" \
        -lpthread -ldl -lm ||
    ha_bail "cannot build the test hosts"
chmod 755 "$HA_TMP"/attachhost*

# at PID [ARGS...]: heapadmin-attach with the build's agent, a log and
# AT_ARGS (the datadir, or a config); AT_OUT, AT_ERR, AT_RC.
AT_ARGS=(--datadir "$data")
at() {
    local pid=$1
    shift
    AT_OUT=$(timeout -k 5 60 "$ATTACH" --agent "$HA_AGENT" \
        --log "$HA_TMP/agent.log" "${AT_ARGS[@]}" "$@" "$pid" \
        2>"$HA_TMP/.aterr")
    AT_RC=$?
    AT_ERR=$(cat "$HA_TMP/.aterr")
}

# host NAME [CMD...]: runs CMD (a test host) in the background, its
# output in NAME.out and NAME.err, and waits for "ready"; HOST is its pid.
host() {
    local name=$1
    shift
    "$@" >"$HA_TMP/$name.out" 2>"$HA_TMP/$name.err" &
    HOST=$!
    HA_PIDS+=("$HOST")
    for _ in $(seq 100); do
        grep -q ready "$HA_TMP/$name.out" && return 0
        sleep 0.05
    done
    ha_bail "$name did not start: $(cat "$HA_TMP/$name.err")"
}

# host_exits NAME PID: SIGTERM ends it with 0, having printed nothing but
# "ready" and nothing on stderr.
host_exits() {
    local rc
    kill -TERM "$2"
    if ha_wait_gone "$2" 10; then
        wait "$2"
        rc=$?
    else
        rc=timeout
    fi
    ha_is "$1 ends on SIGTERM with 0, its output its own" \
        "0|ready|" "$rc|$(cat "$HA_TMP/$1.out")|$(cat "$HA_TMP/$1.err")"
}

# site_bytes SOCK FUNCTION: "<bytes> <objects>" of FUNCTION in a live
# profile.
site_bytes() {
    ag_sql "$1" "SELECT flat_bytes, flat_objects FROM heap_top('live') WHERE function = '$2'"
    tr '\t' ' ' <<<"$HA_OUT"
}

# refused NAME PID REGEX: the attach is refused with a reason matching
# REGEX, and PID lives on without the agent.
refused() {
    at "$2"
    ha_like "$1: refused, with the reason" "^1:heapadmin-attach: refused: .*$3" \
        "$AT_RC:$AT_ERR"
    ha_ok "$1: still running, no agent thread in it" \
        bash -c "[ -d /proc/$2 ] && ! grep -qx heapadmin /proc/$2/task/*/comm"
}

# --- a host we wrote: exact numbers from before the attach -------------------

export MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:0
host attachhost "$HA_TMP/attachhost" loop
hpid=$HOST
at "$hpid" --check
ha_like "--check says the host may be attached, jemalloc named" \
    "^0:process $hpid \(attachhost\) may be attached: jemalloc in .*libjemalloc\.so\.2" \
    "$AT_RC:$AT_OUT"
ha_is "--check changed nothing (no agent thread)" "" \
    "$(grep -x heapadmin /proc/"$hpid"/task/*/comm)"
at "$hpid"
ha_like "attached: the thread held, where, and for how long" \
    "^attached to attachhost \(pid $hpid\): thread $hpid held [0-9.]+ ms \(dlopen [0-9.]+ ms, start [0-9.]+ ms\), taken (in|back from) epoll_wait" \
    "$AT_OUT"
ha_diag "$(head -1 <<<"$AT_OUT")"
sock=$data/attachhost.$hpid.sock
ha_like "it serves, and says where" "serving: $sock" "$AT_OUT"
ha_like "heap profiles are available (prof:true at its start)" \
    "heap profiles: available" "$AT_OUT"
ha_is "a live profile holds keep_large()'s 768 blocks of 64 KiB, allocated before the attach" \
    "50331648 768" "$(site_bytes "$sock" keep_large)"
ha_is "... and keep_small()'s 1024 blocks of 4 KiB" \
    "4194304 1024" "$(site_bytes "$sock" keep_small)"
at "$hpid"
ha_like "a second attach is refused: it is served already" \
    "^1:.*refused: process $hpid \(attachhost\) already has heapadmin's thread" \
    "$AT_RC:$AT_ERR"
host_exits attachhost "$hpid"
ha_ok "its exit took the agent's sockets with it" test ! -e "$sock"

# Every register, xmm15 and errno back; the sleep restarted, whole.
host regs "$HA_TMP/attachhost" regs
at "$HOST"
ha_like "a thread in nanosleep is taken there" \
    "^0:attached to attachhost .* taken in nanosleep" "$AT_RC:$AT_OUT"
sleep 1
host_exits regs "$HOST"

# --- static jemalloc, exported and not ----------------------------------------

host static "$HA_TMP/attachhost-static" loop
at "$HOST"
ha_is "a static jemalloc exported with -rdynamic is attached" 0 "$AT_RC"
ha_is "... and its live profile holds keep_large()'s 48 MiB" "50331648 768" \
    "$(site_bytes "$data/attachhost-static.$HOST.sock" keep_large)"
host_exits static "$HOST"
host mallctl "$HA_TMP/attachhost-mallctl" loop
at "$HOST"
ha_is "... and one that exports mallctl alone (--export-dynamic-symbol)" \
    "0:50331648 768" \
    "$AT_RC:$(site_bytes "$data/attachhost-mallctl.$HOST.sock" keep_large)"
host_exits mallctl "$HOST"
host hidden "$HA_TMP/attachhost-hidden" loop
refused "a static jemalloc not exported" "$HOST" \
    "has jemalloc linked in statically but does not export it.*-rdynamic, or -Wl,--export-dynamic-symbol=mallctl"
host_exits hidden "$HOST"

# --- refusals ------------------------------------------------------------------

sleep 60 &
spid=$!
HA_PIDS+=("$spid")
refused "glibc's malloc (sleep)" "$spid" \
    "process $spid \(sleep\) does not use jemalloc"
cp "$HA_TMP/attachhost" "$HA_TMP/attachhost-suid"
chmod 4755 "$HA_TMP/attachhost-suid"
host suid setpriv --reuid nobody --regid nogroup --clear-groups \
    "$HA_TMP/attachhost-suid" loop
refused "a setuid process" "$HOST" "secure-execution mode \(AT_SECURE"
kill -KILL "$HOST"
wait "$HOST" 2>/dev/null
host nodump setpriv --reuid nobody --regid nogroup --clear-groups \
    "$HA_TMP/attachhost" nodump
refused "a process that is not dumpable" "$HOST" "is not dumpable"
host_exits nodump "$HOST"
if command -v strace >/dev/null; then
    host traced strace -o /dev/null "$HA_TMP/attachhost" loop
    tpid=$(pgrep -f -P "$HOST" "attachhost loop")
    refused "a traced process" "$tpid" "is traced by process $HOST \(strace\)"
    kill -TERM "$tpid"
    ha_wait_gone "$HOST" 10
else
    ha_diag "no strace: the traced case is not run"
fi
if unshare -m true 2>/dev/null; then
    host mntns unshare -m --propagation private sh -c \
        'mount -t tmpfs tmpfs "$1" && exec "$2" loop' sh \
        "$(dirname "$HA_AGENT")" "$HA_TMP/attachhost"
    refused "a process whose mount namespace has no agent" "$HOST" \
        "another mount namespace \(a container\) whose root has no $HA_AGENT"
    host_exits mntns "$HOST"
else
    ha_diag "unshare -m not permitted here: the mount namespace case is not run"
fi
unset MALLOC_CONF

# --- Debian's redis, 100 MB before the attach -----------------------------------

# From here on as an operator would: a config file (0600, root's) names
# the datadir and the accounts.
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; }
EOF
chmod 600 "$HA_TMP/agent.cnf"
AT_ARGS=(--config "$HA_TMP/agent.cnf")

port=$(ha_free_port)
MALLOC_CONF=prof:true,lg_prof_sample:19 redis-server --port "$port" \
    --save '' --appendonly no --dir "$HA_TMP" >"$HA_TMP/redis.out" 2>&1 &
rpid=$!
HA_PIDS+=("$rpid")
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
timeout 120 redis-benchmark -p "$port" -t set -n 100000 -d 1000 \
    -r 100000000 -P 16 -q >/dev/null 2>&1
# jemalloc's own word (malloc_stats_print), before the attach.
before=$(redis-cli -p "$port" memory malloc-stats | sed -n 's/^Allocated: \([0-9]*\),.*/\1/p')
ha_like "redis holds about 100 MB before the attach (jemalloc's stats)" \
    "^1[0-9]{8}$" "$before"
# Under load: GETs for the whole window; PING latency without an attach,
# then with one.
timeout 60 redis-benchmark -p "$port" -t get -n 100000000 -r 100000000 -q \
    >"$HA_TMP/load.out" 2>&1 &
load=$!
base=$(redis-cli -p "$port" --latency --raw -i 4 | awk '{print $2}')
redis-cli -p "$port" --latency --raw -i 5 >"$HA_TMP/lat.out" &
lat=$!
sleep 1
at "$rpid"
wait "$lat"
during=$(awk '{print $2}' "$HA_TMP/lat.out")
kill "$load" 2>/dev/null
wait "$load" 2>/dev/null
ha_is "redis-server attached under load" 0 "$AT_RC"
ha_diag "$(head -1 <<<"$AT_OUT")" \
    "redis PING latency, worst of 4 s without an attach: $base ms; of 5 s with one: $during ms"
ha_ok "redis's worst latency during the attach is under 500 ms more than without ($during vs $base ms)" \
    test "${during:-99999}" -lt $((500 + ${base:-0}))
ha_unlike "redis-benchmark saw no errors" "[Ee]rror" "$(cat "$HA_TMP/load.out")"
ha_is "redis answers PING" PONG "$(redis-cli -p "$port" ping)"
rsock=$data/redis-server.$rpid.sock
ag_sql "$rsock" "SELECT sum(flat_bytes) FROM heap_top('live') WHERE module = '$(readlink -f /usr/bin/redis-server)'"
own=${HA_OUT:-0}
ha_ok "redis's own sites hold $own of the $before bytes allocated before the attach (>= 80 %)" \
    test "$((own * 100))" -ge "$((before * 80))"
ag_sql "$rsock" "SELECT sum(flat_bytes) FROM heap_top('live')"
ha_ok "the live profile holds $HA_OUT bytes in all (>= 80 % of $before)" \
    test "$((${HA_OUT:-0} * 100))" -ge "$((before * 80))"

# --- the same redis without prof:true ----------------------------------------

port2=$(ha_free_port)
redis-server --port "$port2" --save '' --appendonly no --dir "$HA_TMP" \
    >"$HA_TMP/redis2.out" 2>&1 &
r2=$!
HA_PIDS+=("$r2")
for _ in $(seq 50); do redis-cli -p "$port2" ping >/dev/null 2>&1 && break; sleep 0.1; done
at "$r2"
ha_like "without prof:true: attached, and told profiles need a restart" \
    "heap profiles: not available: .*restart.*MALLOC_CONF=prof:true,prof_active:false" \
    "$AT_RC:$AT_OUT"
sock2=$data/redis-server.$r2.sock
ag_sql "$sock2" "SELECT variable_value > 0 FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
ha_is "... stats_memory_jemalloc answers" "0:1" "$HA_RC:$HA_OUT"
ag_sql "$sock2" "SELECT count(*) > 0 FROM stats_jemalloc_arenas"
ha_is "... stats_jemalloc_arenas answers" "0:1" "$HA_RC:$HA_OUT"
ag_sql "$sock2" "SELECT * FROM heap_top('live')"
ha_like "... heap_top names the restart needed" \
    "opt.prof=false.*MALLOC_CONF=prof:true,prof_active:false" "$HA_ERR"
ag_set "$sock2" jemalloc-prof_active true
ha_like "... and so does switching sampling on" \
    "opt.prof=false.*MALLOC_CONF=prof:true,prof_active:false" "$HA_ERR"

# --- the gateway ------------------------------------------------------------------

if ag_gateway_start "$data" 15; then
    gsql "SELECT count(*) FROM stats_agents WHERE pid IN ($rpid, $r2) AND state = 'serving'"
    ha_is "the gateway serves both attached redis processes" 2 "$HA_OUT"
    gsql "SELECT detail FROM stats_agents WHERE pid = $rpid"
    ha_like "stats_agents.detail says when it was attached" \
        "^attached at 20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC$" "$HA_OUT"
else
    ha_fail "the gateway starts" "$(cat "$HA_TMP/gateway.log")"
fi
ha_is "nothing of the agent's on redis's output" "" \
    "$(grep -i -e heapadmin -e agent "$HA_TMP/redis.out" "$HA_TMP/redis2.out")"
ha_done
