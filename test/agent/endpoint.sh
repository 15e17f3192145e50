#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The host's view stays true (issue 37, part 6), with Debian's
# redis-server and memcached under the agent and a gateway:
#   - an agent whose .http (or .sock) is deleted, as a tmp cleaner does,
#     binds it again within seconds and says so; one replaced by another
#     process of its user takes it back and says so;
#   - while it cannot (its process stopped), the gateway shows it as
#     "socket missing", up 0, never "gone"; a killed process is "gone";
#   - a process of another user listening under a pid that is not its
#     own contributes no series about that pid;
#   - with no HEAPADMIN_LOG, every line of the agent's log (the config's
#     errorlog) carries its pid;
#   - a same-user peer refused on the agent socket is said in the log;
#   - the look at the endpoint's files is off the agent's loop: an lstat
#     in the datadir waits for its disk (issue 35), so the loop's thread
#     makes none once it serves, and the I/O thread looks each second.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require memcached memcached
ha_require curl curl
ha_require runuser util-linux
ha_require setpriv util-linux
ha_require strace strace
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP endpoint.sh: memcached -u nobody and the gateway need root"
    echo "1..0 # SKIP needs root"
    exit 77
fi

chmod 711 "$HA_TMP"
data=$HA_TMP/data
# No HEAPADMIN_LOG: the agents log to the config's errorlog.
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
errorlog = "$HA_TMP/shared.log"
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; }
EOF
chmod 600 "$HA_TMP/agent.cnf"
: >"$HA_TMP/shared.log"
chmod 666 "$HA_TMP/shared.log"
ENV=(LD_PRELOAD="$HA_AGENT" MALLOC_CONF=prof:true,prof_active:false
    HEAPADMIN_START_DELAY_MS=300 HEAPADMIN_CONF="$HA_TMP/agent.cnf")

mport=$(ha_free_port)
env "${ENV[@]}" LD_PRELOAD="$HA_AGENT libjemalloc.so.2" HEAPADMIN_USERS=nobody \
    memcached -l 127.0.0.1 -p "$mport" -U 0 -u nobody >/dev/null 2>&1 &
mcpid=$!
HA_PIDS+=("$mcpid")
ag_wait_socket "$data/nobody/memcached.$mcpid.sock" 15
ha_is "memcached -u nobody is served" 0 "$?"
rport=$(ha_free_port)
env "${ENV[@]}" redis-server --port "$rport" --save '' --appendonly no \
    --dir "$HA_TMP" >"$HA_TMP/redis.out" 2>&1 &
rpid=$!
HA_PIDS+=("$rpid")
http=$data/redis-server.$rpid.http
sock=$data/redis-server.$rpid.sock
ag_wait_socket "$sock" 15
ha_is "redis-server is served" 0 "$?"
ag_gateway_start "$data" 15 || ha_bail "the gateway starts"

state() { # PID: its stats_agents state
    gsql "SELECT state FROM stats_agents WHERE pid = $1" stats
    echo "$HA_OUT"
}
up() { # PID: its heapadmin_agent_up value(s) in the host's /metrics
    curl -s --max-time 10 -u stats:stats "$url/metrics" |
        sed -n "s/^heapadmin_agent_up{pid=\"$1\",.*} //p" | xargs
}
wait_file() { # PATH: 0 once it is a socket again, 1 after 10 s
    for _ in $(seq 100); do
        [ -S "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

# --- deleted, replaced: the agent binds its endpoint again --------------------------

rm -f "$http"
wait_file "$http"
ha_is "a deleted .http is bound again" 0 "$?"
ha_file_like "... and the agent says so" "$HA_TMP/shared.log" \
    "\[pid $rpid\] http: $http was deleted; listening there again"
ha_is "... the gateway serves it" serving "$(state "$rpid")"
rm -f "$sock"
wait_file "$sock"
ag_wait_socket "$sock" 5
ha_is "a deleted .sock is bound again and answers" 0 "$?"
ha_file_like "... and the agent says so" "$HA_TMP/shared.log" \
    "\[pid $rpid\] listener $sock: its socket file was deleted; listening there again"

rm -f "$http"
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
time.sleep(30)' "$http" &
imp=$!
HA_PIDS+=("$imp")
for _ in $(seq 100); do
    grep -qs "http: $http was replaced by another process's socket" "$HA_TMP/shared.log" && break
    sleep 0.1
done
ha_file_like "a .http replaced by another process of its user is taken back, and said" \
    "$HA_TMP/shared.log" "\[pid $rpid\] http: $http was replaced by another process's socket of this user; listening there again"
ha_is "... the gateway serves it" serving "$(state "$rpid")"
kill "$imp" 2>/dev/null

# --- socket missing, not gone; gone when it is ----------------------------------------

kill -STOP "$rpid"
rm -f "$http"
ha_is "a live process whose .http is gone is 'socket missing', not gone" \
    "socket missing" "$(state "$rpid")"
ha_is "... up 0 on the host's /metrics" 0 "$(up "$rpid")"
ha_is "... and ?pid= says it is unreachable now (503)" 503 \
    "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -u admin:admin "$url/debug/pprof/heap?pid=$rpid&debug=1")"
kill -CONT "$rpid"
wait_file "$http"
ha_is "... until it runs again and binds it" serving "$(state "$rpid")"

# --- another user's process under another pid's name -------------------------------

# nobody listens on nobody/redis-server.<redis's pid>.http: root's redis
# is not nobody's, so that entry says nothing about pid $rpid.
fake=$data/nobody/redis-server.$rpid.http
runuser -u nobody -- python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1)
time.sleep(60)' "$fake" &
HA_PIDS+=("$!")
wait_file "$fake"
curl -s --max-time 10 -u stats:stats "$url/metrics" >"$HA_TMP/m.txt"
ha_is "no series says pid $rpid is nobody's" "" \
    "$(grep -E "pid=\"$rpid\"[^}]*user=\"nobody\"" "$HA_TMP/m.txt")"
ha_is "... nor a refusal about it" "" \
    "$(grep -E "^heapadmin_gateway_refused_samples_total\{pid=\"$rpid\"" "$HA_TMP/m.txt")"
ha_is "... while redis's own series stay" 1 "$(up "$rpid")"

kill -KILL "$rpid"
{ wait "$rpid"; } 2>/dev/null
ha_forget "$rpid"
ha_like "a killed process is 'gone'" "^gone" "$(state "$rpid" | head -1)"
gsql "SELECT detail FROM stats_agents WHERE pid = $rpid AND user = 'root'" stats
ha_like "... saying so" "process $rpid is gone" "$HA_OUT"

# --- the log: every line has its pid; a refused same-user peer is said -------------

lines=$(grep -c '\[\(info\|notice\|warn\|error\)\]' "$HA_TMP/shared.log")
nopid=$(grep '\[\(info\|notice\|warn\|error\)\]' "$HA_TMP/shared.log" | grep -vc '\] \[pid [0-9]*\] ')
ha_is "every line of the shared errorlog ($lines) carries its pid, with no HEAPADMIN_LOG" \
    0 "$nopid"

# redis as Debian's redis user: dumpable, so a peer of that user gets
# the stats role, and is refused a live profile.
mkdir -p "$HA_TMP/r2/data"
chown -R redis: "$HA_TMP/r2"
r2port=$(ha_free_port)
setpriv --reuid redis --regid redis --init-groups \
    env LD_PRELOAD="$HA_AGENT" MALLOC_CONF=prof:true,prof_active:false \
    HEAPADMIN_START_DELAY_MS=300 HEAPADMIN_DATADIR="$HA_TMP/r2/data" \
    HEAPADMIN_LOG="$HA_TMP/r2/agent.log" \
    redis-server --port "$r2port" --save '' --appendonly no --dir "$HA_TMP/r2" \
    >/dev/null 2>&1 &
r2=$!
HA_PIDS+=("$r2")
wait_file "$HA_TMP/r2/data/redis-server.$r2.http"
sleep 0.5
code=$(runuser -u redis -- curl -s --max-time 10 -o /dev/null -w '%{http_code}' \
    --unix-socket "$HA_TMP/r2/data/redis-server.$r2.http" 'http://agent/debug/pprof/heap?debug=1')
ha_is "a same-user peer asking for the live profile gets 403" 403 "$code"
ha_file_like "... and the refusal is logged" "$HA_TMP/r2/agent.log" \
    "http: a same-user peer on the agent socket was refused /debug/pprof/heap: a live profile needs an admin user"

# --- the look is off the loop ---------------------------------------------------------

mkdir -p "$HA_TMP/r3/data"
r3port=$(ha_free_port)
strace -f -qq -e trace=%file -o "$HA_TMP/r3/trace" \
    env LD_PRELOAD="$HA_AGENT" MALLOC_CONF=prof:true,prof_active:false \
    HEAPADMIN_START_DELAY_MS=300 HEAPADMIN_DATADIR="$HA_TMP/r3/data" \
    HEAPADMIN_LOG="$HA_TMP/r3/agent.log" \
    redis-server --port "$r3port" --save '' --appendonly no --dir "$HA_TMP/r3" \
    >/dev/null 2>&1 &
HA_PIDS+=("$!")
r3=
for _ in $(seq 150); do
    r3=$(find "$HA_TMP/r3/data" -maxdepth 1 -name 'redis-server.*.http' -printf '%f\n' 2>/dev/null |
        sed 's/^redis-server\.\([0-9]*\)\.http$/\1/' | head -1)
    [ -n "$r3" ] && break
    sleep 0.1
done
[ -n "$r3" ] || ha_bail "redis under strace is served"
HA_PIDS+=("$r3")
sleep 0.5
mark=$(wc -l <"$HA_TMP/r3/trace")
sleep 3.5
loop=$(awk '$2 == "heapadmin" { print $1 }' < <(for t in /proc/"$r3"/task/*; do
    echo "${t##*/} $(cat "$t/comm" 2>/dev/null)"; done))
io=$(awk '$2 == "heapadmin-io" { print $1 }' < <(for t in /proc/"$r3"/task/*; do
    echo "${t##*/} $(cat "$t/comm" 2>/dev/null)"; done))
tail -n +"$((mark + 1))" "$HA_TMP/r3/trace" | grep -F "$HA_TMP/r3/data/" >"$HA_TMP/r3/after"
ha_ok "the agent's loop and I/O threads are found ($loop, $io)" \
    test -n "$loop" -a -n "$io"
ha_is "no file call of the loop's thread names the datadir in 3.5 s of serving" "" \
    "$(awk -v t="$loop" '$1 == t' "$HA_TMP/r3/after" | cut -c1-200 | head -5)"
ha_ok "... while the I/O thread looked at its .http each second ($(awk -v t="$io" '$1 == t' "$HA_TMP/r3/after" | grep -c "redis-server.$r3.http") looks)" \
    test "$(awk -v t="$io" '$1 == t' "$HA_TMP/r3/after" | grep -c "redis-server.$r3.http")" -ge 3
kill "$r3" 2>/dev/null
ha_done
