#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Which processes the agent serves, and what it says of the others.
#
# An entrypoint shell that does not exec (`sh ./entrypoint.sh` starting
# memcached), with libjemalloc preloaded so that the shell has a jemalloc
# too: the shell passes the agent on silently and memcached, the service
# behind it, is served (and dropping to nobody with -u, from its own
# directory, made for it by HEAPADMIN_USERS); /debug/pprof/cmdline is
# memcached's.
#
# A served host (test/agent/spawnhost) that starts a helper program with
# jemalloc, a child the loader treats as AT_SECURE (real uid nobody,
# effective root, as squid starts its kid) and one without jemalloc: none
# gets an endpoint, and the host's log names each once, with its pid,
# program and why. HEAPADMIN_PROGRAMS serves a helper when named.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require memcached memcached
ha_require curl curl
host=$HA_BUILDDIR/test/agent/spawnhost
[ -x "$host" ] || ha_bail "no $host (make check builds it)"
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP programs.sh: needs root (a child started setuid, memcached -u)"
    echo "1..0 # SKIP needs root"
    exit 77
fi
chmod 711 "$HA_TMP"
jemalloc=libjemalloc.so.2

# --- an entrypoint shell that does not exec ---------------------------------------

data=$HA_TMP/data
mport=$(ha_free_port)
cat >"$HA_TMP/entrypoint.sh" <<EOF
#!/bin/sh
# Starts the service, stays its parent (no exec).
echo starting memcached
memcached -l 127.0.0.1 -p $mport -U 0 -u nobody
echo memcached exited
EOF
chmod 755 "$HA_TMP/entrypoint.sh"
ag_env
(cd "$HA_TMP" && exec env "${AG_ENV[@]}" LD_PRELOAD="$HA_AGENT $jemalloc" \
    HEAPADMIN_DATADIR="$data" HEAPADMIN_USERS=nobody \
    sh ./entrypoint.sh >"$HA_TMP/entry.out" 2>&1) &
shpid=$!
HA_PIDS+=("$shpid")
mpid=
for _ in $(seq 100); do
    mpid=$(ps -o pid= --ppid "$shpid" | tr -d ' ' | head -1)
    [ -n "$mpid" ] && [ "$(ps -o comm= -p "$mpid")" = memcached ] && break
    sleep 0.1
done
HA_PIDS+=("$mpid")
ha_is "the shell started memcached as its child" memcached "$(ps -o comm= -p "$mpid" 2>/dev/null)"
ha_is "memcached dropped to nobody" nobody "$(ps -o user= -p "$mpid" | tr -d ' ')"
sock=$data/nobody/memcached.$mpid.sock
if ag_wait_socket "$sock" 15; then
    ha_pass "memcached, behind the shell, is served ($sock)"
else
    ha_file_tail "$HA_TMP/agent.log"
    ha_fail "memcached, behind the shell, is served ($sock)"
fi
ag_sql "$sock" "SELECT variable_value > 0 FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
ha_is "... and its admin reads memcached's heap" "0:1" "$HA_RC:$HA_OUT"
ha_is "the shell has no endpoint" "" \
    "$(find "$data" -name "*.$shpid.*")"
ha_unlike "... and no thread of the agent's" "heapadmin" "$(ag_threads "$shpid")"
# The command line is for admins only (it may carry secrets): root, as
# the gateway is, may ask for the admin role on the agent's socket.
cmd=$(curl -s --max-time 10 --unix-socket "$data/nobody/memcached.$mpid.http" \
    -H 'X-Heapadmin-Role: admin' http://agent/debug/pprof/cmdline | tr '\0' ' ')
ha_like "/debug/pprof/cmdline is memcached's, not the shell's" "^memcached -l 127" "$cmd"
ha_like "memcached still serves its clients" "STAT pid $mpid" \
    "$(printf 'stats\r\nquit\r\n' | timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read())
b = b""
while not b.endswith(b"END\r\n"):
    d = s.recv(4096)
    if not d: break
    b += d
print(b.decode())' "$mport")"
ha_unlike "the agent wrote nothing to the shell's or memcached's output" \
    "heapadmin|agent" "$(cat "$HA_TMP/entry.out")"
kill "$mpid"
ha_wait_gone "$mpid" 10
ha_ok "memcached's exit took its sockets with it" test ! -e "$sock"

# --- a served host's children ---------------------------------------------------

data=$HA_TMP/data2
ag_env
env "${AG_ENV[@]}" LD_PRELOAD="$HA_AGENT $jemalloc" HEAPADMIN_DATADIR="$data" \
    HEAPADMIN_LOG="$HA_TMP/host.log" \
    "$host" helper:sleep 60 secure:sleep 61 plain:sleep 62 shell:- 63 \
    >"$HA_TMP/host.out" 2>&1 &
hpid=$!
HA_PIDS+=("$hpid")
ag_wait_socket "$data/spawnhost.$hpid.sock" 15
ha_is "the host is served" 0 "$?"
kids=$(ps -o pid=,args= --ppid "$hpid")
helper=$(awk '$3 == 60 {print $1}' <<<"$kids")
secure=$(awk '$3 == 61 {print $1}' <<<"$kids")
plain=$(awk '$3 == 62 {print $1}' <<<"$kids")
shell=$(awk '/sleep 63/ {print $1}' <<<"$kids")
ha_like "it started its four children" "^[0-9]+ [0-9]+ [0-9]+ [0-9]+$" \
    "$helper $secure $plain $shell"
for _ in $(seq 150); do
    [ "$(grep -c 'is not served' "$HA_TMP/host.log" 2>/dev/null)" -ge 3 ] && break
    sleep 0.1
done
ha_file_like "the helper is named, with why" "$HA_TMP/host.log" \
    "child $helper \(sleep, user root\) is not served: not the served program: this process serves spawnhost"
ha_file_like "the AT_SECURE child is named, with why" "$HA_TMP/host.log" \
    "child $secure \(sleep, user root\) is not served: AT_SECURE \(its auxiliary vector says so\): its uids are 65534 0 0 0 "
ha_file_like "the child without jemalloc is named, with why" "$HA_TMP/host.log" \
    "child $plain \(sleep, user root\) is not served: no jemalloc in it"
ha_unlike "a shell is passed over in silence" "child $shell " "$(cat "$HA_TMP/host.log")"
sleep 2
ha_is "each is named once" 3 "$(grep -c 'is not served' "$HA_TMP/host.log")"
ha_is "none of them has an endpoint" "" \
    "$(find "$data" -name "*.$helper.*" -o -name "*.$secure.*" -o -name "*.$plain.*" -o -name "*.$shell.*")"
ha_is "the helper has no thread of the agent's" "" "$(ag_threads "$helper" | grep heapadmin)"
kill -TERM "$hpid"
ha_wait_gone "$hpid" 10

# HEAPADMIN_PROGRAMS: the helper is served when named.
env "${AG_ENV[@]}" LD_PRELOAD="$HA_AGENT $jemalloc" HEAPADMIN_DATADIR="$data" \
    HEAPADMIN_LOG="$HA_TMP/host2.log" HEAPADMIN_PROGRAMS="spawnhost,sleep" \
    "$host" helper:sleep 64 >/dev/null 2>&1 &
hpid=$!
HA_PIDS+=("$hpid")
ag_wait_socket "$data/spawnhost.$hpid.sock" 15
helper=
for _ in $(seq 50); do
    helper=$(ps -o pid= --ppid "$hpid" | tr -d ' ' | head -1)
    [ -n "$helper" ] && break
    sleep 0.1
done
ag_wait_socket "$data/sleep.$helper.sock" 15
ha_is "HEAPADMIN_PROGRAMS=spawnhost,sleep serves the helper too" 0 "$?"
kill -TERM "$hpid"
ha_wait_gone "$hpid" 10

ha_done
