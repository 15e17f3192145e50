#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# heapadmind --gateway asking the agents of a host while the host forks
# them (test/agent/forkhost.c, as forkrace.sh starts it: children forked
# 4 ms apart over the agent's start, every process served): the gateway
# is scraped and its stats_agents read without a pause from before the
# first fork to after the last kill, so its fetches run while sockets
# appear, answer, hang and vanish. Every child is listed serving, /metrics
# has each one up, ?pid=N is that child's own, a hanging peer and a 10 MB
# one cost the fetch its bound and its limit, half the children killed
# -9 mid-scrape show as gone and the rest still answer, and the gateway
# stops on SIGTERM while a fetch waits on the hanging peer.
#
# In a ThreadSanitizer build (make check-tsan) the host, the agent in it
# and the gateway are all built with TSan, so this is where TSan watches
# the agent's threads across a host's forks and the gateway's fetches.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require mariadb mariadb-client
ha_require curl curl
ha_require python3 python3
host=$HA_BUILDDIR/test/agent/forkhost
[ -x "$host" ] || ha_bail "no $host (make check builds it)"
nkids=12
# Under TSan, a child lost to the runtime's own allocator's locks held at
# the fork is told apart by its stack (see forkrace.sh); none elsewhere.

data=$HA_TMP/data
mkdir -p "$data"
ag_gateway_start "$data" 30 || ha_bail "the gateway starts"

# Scrapers that never pause: /metrics and stats_agents, each in a loop
# until the stop file appears; each counts its answers.
touch "$HA_TMP/go"
scrape_loop() { # what, file
    local n=0
    while [ -e "$HA_TMP/go" ]; do
        case $1 in
            metrics)
                curl -s --max-time 30 -u stats:stats -o /dev/null \
                    -w '%{http_code}\n' "$url/metrics" >>"$2" ;;
            agents)
                timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
                    --protocol=SOCKET -S "$HA_TMP/gateway.sock" -ustats -pstats \
                    -N -B -e 'SELECT count(*) FROM stats_agents' >/dev/null 2>&1
                echo "$?" >>"$2" ;;
        esac
        n=$((n + 1))
    done
}
scrape_loop metrics "$HA_TMP/scrapes" &
s1=$!
scrape_loop agents "$HA_TMP/listings" &
s2=$!
HA_PIDS+=("$s1" "$s2")

AG_DELAY_MS=0 ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" HEAPADMIN_FORK=per-process \
    "$host" "$nkids" 4000 >"$HA_TMP/host.out" 2>"$HA_TMP/host.err" &
hpid=$!
HA_PIDS+=("$hpid")
for _ in $(seq 300); do
    grep -q '^ready$' "$HA_TMP/host.out" 2>/dev/null && break
    sleep 0.1
done
mapfile -t kids < <(grep -v '^ready$' "$HA_TMP/host.out")
HA_PIDS+=("${kids[@]}")
ha_is "the host forked $nkids children" "$nkids" "${#kids[@]}"
served=0 lost=() excused=()
for k in "$hpid" "${kids[@]}"; do
    if ag_wait_socket "$data/forkhost.$k.sock" 60; then
        served=$((served + 1))
    elif ag_tsan_stuck "$host" "$k"; then
        excused+=("$k")
    else
        lost+=("$k")
    fi
done
ha_is "the host and every child are served, while the gateway asks them" \
    $((nkids + 1)) "$((served + ${#excused[@]}))"
[ "${#excused[@]}" -le 1 ] ||
    ha_fail "at most one child lost to TSan's runtime (${excused[*]})"
if [ "${#excused[@]}" -gt 0 ]; then
    ha_diag "lost to TSan's runtime (its allocator's locks held at the fork): ${excused[*]}"
    # Gone from what follows: the gateway's view of it is not the test.
    kill -9 "${excused[@]}"
    for k in "${excused[@]}"; do ha_wait_gone "$k" 10; done
    mapfile -t kids < <(printf '%s\n' "${kids[@]}" | grep -vxF -f <(printf '%s\n' "${excused[@]}"))
    nkids=${#kids[@]}
fi
for k in "${lost[@]}"; do
    # Where the lost one stands: its threads' stacks and its log.
    ha_diag "not served: $k; $(grep "\[pid $k\]" "$HA_TMP/agent.log" 2>&1 | tail -5)"
    ha_diag "$(eu-stack -p "$k" 2>&1 | head -80)"
done

# A peer that accepts and never answers, and one that answers 10 MB of
# series: the gateway's fetches end on their bound and their limit.
cat >"$HA_TMP/peer.py" <<'PY'
import os, socket, sys, threading, time
mode, d = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("%s/python3.%d.http" % (d, os.getpid()))
s.listen(64)
big = b"".join(b"proxysql_jemalloc_bytes{type=\"t%d\"} %d\n" % (i, i)
               for i in range(400000))
def serve(c):
    try:
        c.settimeout(10)
        c.recv(65536)
        if mode == "hang":
            time.sleep(3600)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + big)
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$HA_TMP/peer.py" hang "$data" &
hang=$!
python3 "$HA_TMP/peer.py" big "$data" &
big=$!
HA_PIDS+=("$hang" "$big")
for _ in $(seq 100); do
    [ -S "$data/python3.$hang.http" ] && [ -S "$data/python3.$big.http" ] && break
    sleep 0.1
done

gsql "SELECT pid, state FROM stats_agents WHERE program = 'forkhost' ORDER BY pid" stats
expected=$(for k in "$hpid" "${kids[@]}"; do printf '%s\tserving\n' "$k"; done | sort -n)
ha_is "stats_agents lists the host and its children, serving" \
    "0:$expected" "$HA_RC:$(sort -n <<<"$HA_OUT")"
gsql "SELECT state FROM stats_agents WHERE pid = $hang" stats
ha_is "... the hanging peer as 'no answer'" "0:no answer" "$HA_RC:$HA_OUT"

curl -s --max-time 60 -u stats:stats "$url/metrics" >"$HA_TMP/metrics.txt"
up=0
for k in "$hpid" "${kids[@]}"; do
    grep -q "^heapadmin_agent_up{pid=\"$k\",program=\"forkhost\",user=\"[a-z]*\"} 1$" \
        "$HA_TMP/metrics.txt" && up=$((up + 1))
done
ha_is "/metrics has every forkhost process up" $((nkids + 1)) "$up"
ha_file_like "... the hanging peer down" "$HA_TMP/metrics.txt" \
    "^heapadmin_agent_up\{pid=\"$hang\",program=\"python3\",user=\"root\"\} 0"
ha_file_like "... the 10 MB one refused whole" "$HA_TMP/metrics.txt" \
    "^heapadmin_gateway_refused_samples_total\{pid=\"$big\",reason=\"bytes_limit\"\} [1-9]"

k=${kids[$((nkids / 2))]}
ha_like "?pid=$k is that child's: /debug/pprof/cmdline names forkhost" "forkhost" \
    "$(curl -s --max-time 60 -u admin:admin "$url/debug/pprof/cmdline?pid=$k" | tr '\0' ' ')"
code=$(curl -s --max-time 60 -o "$HA_TMP/k.pb.gz" -w '%{http_code}' -u admin:admin \
    "$url/debug/pprof/heap?pid=$k")
if grep -aq __tsan_init "$host"; then
    # TSan's allocator is the host's malloc: jemalloc's profiler has
    # nothing to dump, and the child says so, naming its own live file.
    ha_like "/debug/pprof/heap?pid=$k is the child's answer (under TSan: no profiler)" \
        "^404:live profile: .*/\.?live\.$k\..*heap profiling is not available" \
        "$code:$(head -c 400 "$HA_TMP/k.pb.gz")"
else
    ha_is "/debug/pprof/heap?pid=$k answers a profile" "200:1f8b" \
        "$code:$(head -c 2 "$HA_TMP/k.pb.gz" | od -An -tx1 | tr -d ' \n')"
fi

# Half the children killed -9 while the scrapers run.
dead=("${kids[@]:0:$((nkids / 2))}")
live=("${kids[@]:$((nkids / 2))}")
kill -9 "${dead[@]}"
for k in "${dead[@]}"; do ha_wait_gone "$k" 10; done
gsql "SELECT pid, state FROM stats_agents WHERE program = 'forkhost' ORDER BY pid" stats
expected=$( { for k in "${dead[@]}"; do printf '%s\tgone\n' "$k"; done
              for k in "$hpid" "${live[@]}"; do printf '%s\tserving\n' "$k"; done; } | sort -n)
ha_is "the children killed -9 show as gone, the others serving" \
    "0:$expected" "$HA_RC:$(sort -n <<<"$HA_OUT")"

rm -f "$HA_TMP/go"
wait "$s1" "$s2"
ns=$(wc -l <"$HA_TMP/scrapes")
ha_is "every scrape in the loop answered 200 ($ns)" "$ns" "$(grep -c '^200$' "$HA_TMP/scrapes")"
nl=$(wc -l <"$HA_TMP/listings")
ha_is "every stats_agents in the loop answered ($nl)" "$nl" "$(grep -c '^0$' "$HA_TMP/listings")"
ha_ok "... several of each ran over the forks and kills" test "$ns" -ge 3 -a "$nl" -ge 3

# SIGTERM while a fetch waits on the hanging peer.
gsql "SELECT 'slow', state FROM stats_agents WHERE pid = $hang" stats &
slow=$!
for _ in $(seq 100); do
    gsql "SHOW PROCESSLIST"
    grep -q "SELECT 'slow'" <<<"$HA_OUT" && break
    sleep 0.02
done
kill -TERM "$gpid"
ha_wait_gone "$gpid" 30
ha_is "the gateway stops on SIGTERM while a fetch waits on the hanging peer" 1 \
    "$(ha_alive "$gpid" && echo 0 || echo 1)"
wait "$gpid"
ha_is "... and exits 0" 0 "$?"
wait "$slow" 2>/dev/null
kill -TERM "$hpid"
ha_wait_gone "$hpid" 10 || ha_fail "the host stops on SIGTERM"
ha_unlike "no child was given up on" "not served: forked while" \
    "$(cat "$HA_TMP/agent.log" 2>/dev/null)"
ha_done
