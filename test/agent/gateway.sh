#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One endpoint per host: heapadmind --gateway on the datadir of Debian's
# nginx (root master, www-data workers, as nginx.sh starts it) and of a
# redis-server, all with the agent. The gateway lists every process in
# stats_agents, serves one /metrics for all (pid and program labels) that
# promtool accepts and a real Prometheus scrapes as one target, and
# answers /debug/pprof/heap?pid=N from process N under its own accounts.
# A fixed http_ifaces in the multi-process host is refused with a message
# that points at the gateway. A process that impersonates an agent is
# never asked, one that never answers costs a scrape its deadline and
# never holds the gateway's loop, and after kill -9 the redis shows as
# gone until the next start in the datadir removes its endpoint.
# A forging neighbour of a served user (issue 25) never blinds, forges
# or controls another process's figures: one listening under nginx's
# name is shown as a mismatch and never asked; ones under their own name
# answering forged labels, foreign families, NaN/Inf, 10 MB of series, a
# slow drip or nothing are parsed, refused and counted while a real
# Prometheus keeps the host's target up and every real series right; a
# busy one's 503 keeps its Retry-After (a delay in seconds only). A
# same-user peer of a privilege-dropped worker gets nothing from its
# agent socket without a password; root's gateway gets everything.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-600}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require nginx nginx
ha_require redis-server redis-server
ha_require curl curl
ha_require promtool prometheus
ha_require prometheus prometheus
ha_require go golang-go
ha_require runuser util-linux
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP gateway.sh: nginx's master must run as root (www-data workers)"
    echo "1..0 # SKIP needs root"
    exit 77
fi

chmod 711 "$HA_TMP"
data=$HA_TMP/data
nport=$(ha_free_port)
aport=$(ha_free_port)
prefix=$HA_TMP/nginx
ag_nginx_prefix "$prefix" "$nport"
conf=$prefix/conf/nginx.conf
# The agents' config, with a fixed HTTP address as the issue had it.
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; http_ifaces = "127.0.0.1:$aport"; }
EOF
cat >"$HA_TMP/redis.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; }
EOF
chmod 600 "$HA_TMP/agent.cnf" "$HA_TMP/redis.cnf"
ag_dropin_env "$HA_SRCDIR/etc/heapadmin-agent-nginx.conf.in" "$HA_TMP/agent.cnf"
NGX_ENV=("${AG_DROPIN[@]}" MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:12
    HEAPADMIN_START_DELAY_MS=300 HEAPADMIN_LOG="$HA_TMP/agent.log")
env "${NGX_ENV[@]}" /usr/sbin/nginx -c "$conf" -g 'daemon on; master_process on;'
for _ in $(seq 50); do [ -s "$prefix/logs/nginx.pid" ] && break; sleep 0.1; done
mpid=$(cat "$prefix/logs/nginx.pid" 2>/dev/null)
[ -n "$mpid" ] || ha_bail "nginx starts"
HA_PIDS+=("$mpid")
mapfile -t workers < <(sleep 0.5; ag_nginx_workers "$mpid")
ha_is "nginx runs a master and two workers" 2 "${#workers[@]}"
for w in "${workers[@]}"; do ag_wait_socket "$data/www-data/nginx.$w.sock" 15; done

rport=$(ha_free_port)
ag_env
env "${AG_ENV[@]}" HEAPADMIN_CONF="$HA_TMP/redis.cnf" \
    redis-server --port "$rport" --save '' --appendonly no --dir "$HA_TMP" \
    >"$HA_TMP/redis.out" 2>&1 &
rpid=$!
HA_PIDS+=("$rpid")
ag_wait_socket "$data/redis-server.$rpid.sock" 15
ha_is "redis-server is served in the same datadir" 0 "$?"

ha_file_like "a fixed http_ifaces in a multi-process host is refused, pointing at the gateway" \
    "$HA_TMP/agent.log" "http_ifaces = \"127.0.0.1:$aport\" is not served.*heapadmind --gateway"
ha_ok "... and no process of nginx took the port" sh -c "! ss -ltn | grep -q ':$aport '"
ag_sql "$data/www-data/nginx.${workers[0]}.sock" "SELECT 1"
ha_is "... while every worker keeps its unix socket" "0:1" "$HA_RC:$HA_OUT"

# --- the gateway ---------------------------------------------------------------

ag_gateway_start "$data" 15 || ha_bail "the gateway starts"
ha_file_like "the gateway's start-up log says it is one" "$HA_TMP/gateway.log" \
    "ready for connections: a host gateway for the agents of $data"

gsql "SELECT pid, program, user, state FROM stats_agents ORDER BY pid" stats
expected=$(printf '%s\n' "$mpid	nginx	root	serving" \
    "${workers[0]}	nginx	www-data	serving" \
    "${workers[1]}	nginx	www-data	serving" \
    "$rpid	redis-server	root	serving" | sort -n)
ha_is "stats_agents lists the master, the workers and redis, serving (a stats user)" \
    "0:$expected" "$HA_RC:$(sort -n <<<"$HA_OUT")"
gsql "SELECT count(*) FROM stats_agents WHERE allocated > 0 AND resident >= allocated AND started > 0 AND socket LIKE '%.sock'"
ha_is "... with each one's memory, start and admin socket" "0:4" "$HA_RC:$HA_OUT"

curl -s --max-time 10 -u stats:stats "$url/metrics" >"$HA_TMP/metrics.txt"
ha_is "promtool accepts the host's /metrics" "" \
    "$(promtool check metrics <"$HA_TMP/metrics.txt" 2>&1)"
for p in "$mpid" "${workers[@]}" "$rpid" "$gpid"; do
    ha_file_like "/metrics has process $p, labelled" "$HA_TMP/metrics.txt" \
        "^heapadmin_jemalloc_allocated_bytes\{pid=\"$p\",program=\"(nginx|redis-server|heapadmind)\"\} [1-9]"
done
ha_is "the gateway's own figures carry no ProxySQL names (it is no ProxySQL)" "" \
    "$(grep -E "^proxysql_[a-z_]*\\{[^}]*pid=\"$gpid\"" "$HA_TMP/metrics.txt" | head -3)"
ha_file_like "... while a served process's do, for ProxySQL dashboards" "$HA_TMP/metrics.txt" \
    "^proxysql_jemalloc_bytes\\{pid=\"$rpid\",program=\"redis-server\",type=\"resident\"\\} [1-9]"
ha_is "one HELP per family" 0 \
    "$(grep '^# HELP' "$HA_TMP/metrics.txt" | sort | uniq -d | wc -l)"
ha_file_like "the agent's own memory is apart" "$HA_TMP/metrics.txt" \
    "^heapadmin_self_allocated_bytes\{pid=\"${workers[0]}\",program=\"nginx\"\} [1-9]"
ha_is "OpenMetrics on request" 1 \
    "$(curl -s --max-time 10 -u stats:stats -H 'Accept: application/openmetrics-text; version=1.0.0' "$url/metrics" | tail -1 | grep -c '^# EOF$')"

# --- a real Prometheus, one target ----------------------------------------------

pport=$(ha_free_port)
cat >"$HA_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: host
    basic_auth: {username: stats, password: stats}
    static_configs:
      - targets: ['127.0.0.1:$gport']
YML
prometheus --config.file="$HA_TMP/prometheus.yml" \
    --storage.tsdb.path="$HA_TMP/prom" --web.listen-address="127.0.0.1:$pport" \
    >"$HA_TMP/prometheus.log" 2>&1 &
HA_PIDS+=("$!")
q() {
    curl -s --max-time 5 "http://127.0.0.1:$pport/api/v1/query" \
        --data-urlencode "query=$1" |
        python3 -c 'import json,sys
d = json.load(sys.stdin)["data"]["result"]
print(d[0]["value"][1] if d else "")' 2>/dev/null ||
        echo "query failed: $1"
}
n=
for _ in $(seq 60); do
    n=$(q 'count(heapadmin_jemalloc_allocated_bytes{job="host"})')
    [ "$n" = 5 ] && break
    sleep 0.5
done
ha_is "Prometheus scrapes one target and sees five processes" 5 "$n"
ha_is "... three of them nginx" 3 "$(q 'count(heapadmin_jemalloc_resident_bytes{program="nginx"})')"
ha_is "... every agent up" 4 "$(q 'sum(heapadmin_agent_up)')"
v=$(q "heapadmin_jemalloc_allocated_bytes{pid=\"$rpid\"}")
ha_like "... redis's allocated bytes by pid ($v)" "^[1-9][0-9]*$" "$v"

# --- ?pid=N: a worker's profiles through the gateway -----------------------------

w=${workers[0]}
for i in $(seq 1 20); do curl -s -o /dev/null "http://127.0.0.1:$nport/f$i.txt"; done
code=$(curl -s --max-time 60 -o "$HA_TMP/w.pb.gz" -w '%{http_code}' -u admin:admin "$url/debug/pprof/heap?pid=$w")
ha_is "/debug/pprof/heap?pid=$w answers with the worker's live profile" "200:1f8b" \
    "$code:$(head -c 2 "$HA_TMP/w.pb.gz" | od -An -tx1 | tr -d ' \n')"
timeout 120 go tool pprof -top "$HA_TMP/w.pb.gz" >"$HA_TMP/pprof.top" 2>&1
ha_file_like "... go tool pprof reads nginx's functions in it" "$HA_TMP/pprof.top" "ngx_"
ha_is "a stats user may not take a live profile (403)" 403 \
    "$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -u stats:stats "$url/debug/pprof/allocs?pid=$w")"
ha_is "a wrong password is refused by the gateway (401)" 401 \
    "$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -u admin:wrong "$url/debug/pprof/heap?pid=$w")"
dump=$(ag_dump "$data/www-data/nginx.$w.sock")
code=$(curl -s --max-time 60 -o "$HA_TMP/d.pb.gz" -w '%{http_code}' -u stats:stats \
    "$url/debug/pprof/heap?pid=$w&dump=$(basename "$dump")")
ha_is "... but reads the worker's dump by name" 200 "$code"
ha_like "/debug/pprof/cmdline?pid= is nginx's, not the gateway's" "nginx" \
    "$(curl -s --max-time 10 -u admin:admin "$url/debug/pprof/cmdline?pid=$w" | tr '\0' ' ')"
ha_is "... and for admins only: a stats user gets 403" 403 \
    "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -u stats:stats "$url/debug/pprof/cmdline?pid=$w")"
for bad in +$w 0$w ' '$w $w.0 -1; do
    ha_is "?pid=$bad is refused (400)" 400 \
        "$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -u admin:admin -G "$url/debug/pprof/heap" --data-urlencode "pid=$bad")"
done
code=$(curl -s --max-time 60 -o "$HA_TMP/p.pb.gz" -w '%{http_code}' -u admin:admin "$url/pid/$w/debug/pprof/heap")
ha_is "/pid/$w/debug/pprof/heap answers the worker's profile" "200:1f8b" \
    "$code:$(head -c 2 "$HA_TMP/p.pb.gz" | od -An -tx1 | tr -d ' \n')"
ha_is "/pid/0$w/ is refused (400)" 400 \
    "$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -u admin:admin "$url/pid/0$w/pprof/heap")"
timeout 120 jeprof --text "http://admin:admin@127.0.0.1:$gport/pid/$w/pprof/heap" \
    >"$HA_TMP/jeprof.txt" 2>"$HA_TMP/jeprof.err"
ha_file_like "jeprof reads the worker through /pid/$w/ (symbols from it too)" \
    "$HA_TMP/jeprof.txt" "ngx_"
gsql "SHOW PROMETHEUS METRICS" stats
ha_like "SHOW PROMETHEUS METRICS on the gateway is the merged text" \
    "heapadmin_jemalloc_allocated_bytes\{pid=\"$w\",program=\"nginx\"\}" "$HA_OUT"

# --- same-user peers of a privilege-dropped worker --------------------------------

wsock=$data/www-data/nginx.$w.http
peer() { # user, curl args...: the HTTP code from the worker's agent socket
    local u=$1
    shift
    runuser -u "$u" -- curl -s --max-time 10 -o "$HA_TMP/peer.out" -w '%{http_code}' \
        --unix-socket "$wsock" "$@"
}
# nginx makes its workers dumpable again after setuid (PR_SET_DUMPABLE):
# their user may read them, so it gets the stats role, never admin.
ha_is "www-data asking the nginx worker for admin gets stats: no live profile (403)" \
    403 "$(peer www-data -H 'X-Heapadmin-Role: admin' 'http://agent/debug/pprof/heap?debug=1')"
ha_unlike "... no address map" "MAPPED_LIBRARIES" "$(cat "$HA_TMP/peer.out")"
ha_is "... its metrics, which its user may read anyway" 200 "$(peer www-data http://agent/metrics)"
ha_is "a password works as on any port" 200 \
    "$(peer www-data -u admin:admin 'http://agent/debug/pprof/heap?debug=1')"
ha_is "a wrong one does not" 401 "$(peer www-data -u admin:nope http://agent/metrics)"
ha_is "root's gateway role gets the live profile" 200 \
    "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket "$wsock" -H 'X-Heapadmin-Role: admin' 'http://agent/debug/pprof/heap?debug=1')"
# memcached -u: not dumpable after its drop, so its user gets nothing.
mport=$(ha_free_port)
env "${AG_ENV[@]}" LD_PRELOAD="$HA_AGENT libjemalloc.so.2" HEAPADMIN_CONF="$HA_TMP/redis.cnf" \
    HEAPADMIN_USERS=nobody memcached -l 127.0.0.1 -p "$mport" -U 0 -u nobody >/dev/null 2>&1 &
mcpid=$!
HA_PIDS+=("$mcpid")
ag_wait_socket "$data/nobody/memcached.$mcpid.sock" 15
ha_is "memcached -u nobody is served" 0 "$?"
wsock=$data/nobody/memcached.$mcpid.http
ha_is "nobody (memcached's user) asking admin gets nothing: memcached is not dumpable" \
    403 "$(peer nobody -H 'X-Heapadmin-Role: admin' 'http://agent/debug/pprof/heap?debug=1')"
ha_unlike "... no address map" "MAPPED_LIBRARIES" "$(cat "$HA_TMP/peer.out")"
ha_is "... not even its metrics" 403 "$(peer nobody http://agent/metrics)"
ha_is "... as the kernel denies it memcached's maps" 1 \
    "$(runuser -u nobody -- cat "/proc/$mcpid/maps" >/dev/null 2>&1; echo $?)"
ha_is "a password works as on any port" 200 \
    "$(peer nobody -u admin:admin 'http://agent/debug/pprof/heap?debug=1')"
ha_is "root's gateway role gets the live profile" 200 \
    "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket "$wsock" -H 'X-Heapadmin-Role: admin' 'http://agent/debug/pprof/heap?debug=1')"
ha_ok "the refusal is logged" grep -qs "refused: this process is not dumpable" \
    "$data/nobody/agent.log" "$HA_TMP/agent.log"
kill "$mcpid"

ha_is "an unknown pid is 404" 404 \
    "$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -u admin:admin "$url/debug/pprof/heap?pid=999999")"

# --- an impostor is never asked; a mute agent does not hold the gateway --------

# www-data binds a socket in its directory named after a worker's pid: the
# name and the directory promise that worker, SO_PEERCRED shows another
# process, and nothing is sent to it.
cat >"$HA_TMP/impostor.py" <<'PY'
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(8)
s.settimeout(0.2)
end = time.time() + float(sys.argv[3])
got = b""
while time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(0.5)
    try:
        got += c.recv(4096)
    except OSError:
        pass
    if sys.argv[2] == "mute":
        time.sleep(30)
    c.close()
sys.stdout.buffer.write(got)
PY
runuser -u www-data -- python3 "$HA_TMP/impostor.py" \
    "$data/www-data/fake.${workers[1]}.http" listen 6 \
    >"$HA_TMP/impostor.got" 2>&1 &
HA_PIDS+=("$!")
# Root's mute one, registered under its own pid: it accepts, never answers.
python3 "$HA_TMP/impostor.py" "$data/mute.PID.http" mute 20 >/dev/null &
mute=$!
HA_PIDS+=("$mute")
for _ in $(seq 50); do [ -S "$data/www-data/fake.${workers[1]}.http" ] && [ -S "$data/mute.PID.http" ] && break; sleep 0.1; done
mv "$data/mute.PID.http" "$data/python3.$mute.http"
gsql "SELECT state, detail FROM stats_agents WHERE program = 'fake'"
ha_like "the impostor is listed as gone, the peer named" "^0:gone	.*not process ${workers[1]}" "$HA_RC:$HA_OUT"
t0=$(date +%s%N)
gsql "SELECT state FROM stats_agents WHERE pid = $mute"
t1=$(date +%s%N)
ha_is "the mute agent shows as 'no answer'" "0:no answer" "$HA_RC:$HA_OUT"
# Bounded: 2 s for it, plus at most a scrape of Prometheus's queued
# before it (each bound by Prometheus's own 1 s timeout).
ms=$(( (t1 - t0) / 1000000 ))
ha_ok "... after the 2 s bound, not much more ($ms ms)" \
    test "$ms" -ge 1900 -a "$ms" -lt 6000
( curl -s --max-time 20 -u stats:stats "$url/metrics" >"$HA_TMP/metrics2.txt" ) &
scrape=$!
sleep 0.3
t0=$(date +%s%N)
gsql "SELECT 1"
t1=$(date +%s%N)
ha_is "while a scrape waits on the mute agent the gateway's SQL answers" "0:1" "$HA_RC:$HA_OUT"
ha_ok "... at once ($(( (t1 - t0) / 1000000 )) ms)" test $(( (t1 - t0) / 1000000 )) -lt 1500
wait "$scrape"
ha_file_like "the scrape completes, the mute agent down" "$HA_TMP/metrics2.txt" \
    "^heapadmin_agent_up\{pid=\"$mute\",program=\"python3\",user=\"root\"\} 0"
sleep 1
ha_is "the impostor received nothing" "" "$(cat "$HA_TMP/impostor.got")"
kill "$mute" 2>/dev/null

# --- forging neighbours, while Prometheus scrapes -----------------------------------

cat >"$HA_TMP/forger.py" <<'PY'
import os, socket, sys, threading, time
mode, d, name = sys.argv[1], sys.argv[2], sys.argv[3]
path = "%s/%s.%d.http" % (d, name, os.getpid())
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(64)
victim = sys.argv[4]
with open(sys.argv[5] + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(sys.argv[5] + ".tmp", sys.argv[5])
if mode == "forge":
    body = ("# HELP heapadmin_jemalloc_allocated_bytes forged\n"
            "# TYPE heapadmin_jemalloc_allocated_bytes gauge\n"
            "heapadmin_jemalloc_allocated_bytes{pid=\"%s\",program=\"nginx\"} 999999999\n"
            "# HELP heapadmin_jemalloc_allocated_bytes again\n"
            "# TYPE heapadmin_jemalloc_allocated_bytes counter\n"
            "heapadmin_jemalloc_resident_bytes NaN\n"
            "heapadmin_jemalloc_mapped_bytes +Inf\n"
            "heapadmin_jemalloc_retained_bytes 1e300\n"
            "evil_family{x=\"y\"} 1\n"
            "heapadmin_agent_up{pid=\"%s\"} 0\n"
            "proxysql_jemalloc_bytes{type=\"a\",type=\"b\"} 1\n" % (victim, victim)).encode()
elif mode == "big":
    body = b"".join(b"proxysql_jemalloc_bytes{type=\"t%d\"} %d\n" % (i, i) for i in range(400000))
else:
    body = b"heapadmin_jemalloc_allocated_bytes 1\n" * 100
def serve(c):
    try:
        c.settimeout(10)
        req = c.recv(65536)
        if mode == "hang":
            time.sleep(3600)
        if mode.startswith("busy") and b" /debug/pprof/" in req:
            # As an agent whose heap dump is stuck answers a live profile;
            # busydate with the HTTP-date form, which is not passed on.
            after = b"5" if mode == "busy" else b"Fri, 31 Dec 1999 23:59:59 GMT"
            c.sendall(b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: " + after +
                      b"\r\nContent-Type: text/plain\r\n\r\na heap dump is being written\n")
            c.close()
            return
        head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
        if mode == "drip":
            c.sendall(head)
            for b in body:
                c.sendall(bytes([b]))
                time.sleep(0.05)
        else:
            c.sendall(head + body)
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
mkdir -p "$HA_TMP/fakes"
chmod 777 "$HA_TMP/fakes"
fakes=()
# Four under their own name (python3), one under nginx's: its pid and
# user are right, its program is not.
for m in forge big drip hang liar busy busydate; do
    name=python3
    [ "$m" = liar ] && name=nginx
    runuser -u www-data -- python3 "$HA_TMP/forger.py" "${m/liar/forge}" "$data/www-data" "$name" \
        "${workers[0]}" "$HA_TMP/fakes/$m" &
    HA_PIDS+=("$!")
done
for m in forge big drip hang liar busy busydate; do
    for _ in $(seq 100); do [ -s "$HA_TMP/fakes/$m" ] && break; sleep 0.1; done
    fakes+=("$(cat "$HA_TMP/fakes/$m")")
    HA_PIDS+=("${fakes[-1]}")
done
lpid=${fakes[4]}
gsql "SELECT state, detail FROM stats_agents WHERE pid = $lpid" stats
ha_like "the one under nginx's name is shown as a mismatch, with what did not match" \
    "^0:mismatch	.*says program 'nginx' but /proc/$lpid/exe is .*python" "$HA_RC:$HA_OUT"
gsql "SELECT count(*) FROM stats_agents WHERE pid = $lpid AND allocated IS NULL AND socket LIKE '%.http'" stats
ha_is "... with none of what it says about itself" "0:1" "$HA_RC:$HA_OUT"
curl -s --max-time 20 -u stats:stats "$url/metrics" >"$HA_TMP/metrics3.txt"
ha_is "with every forger answering, promtool still accepts the host's /metrics" "" \
    "$(promtool check metrics <"$HA_TMP/metrics3.txt" 2>&1)"
ha_file_like "... the real worker's series are its own" "$HA_TMP/metrics3.txt" \
    "^heapadmin_jemalloc_allocated_bytes\{pid=\"${workers[0]}\",program=\"nginx\"\} [1-9]"
ha_is "... and nothing claims its pid twice" 1 \
    "$(grep -c "^heapadmin_jemalloc_allocated_bytes{pid=\"${workers[0]}\"" "$HA_TMP/metrics3.txt")"
ha_file_like "... the forger's own sample is relabelled exported_*" "$HA_TMP/metrics3.txt" \
    "^heapadmin_jemalloc_allocated_bytes\{pid=\"${fakes[0]}\",program=\"python3\",exported_pid=\"${workers[0]}\",exported_program=\"nginx\"\} 999999999"
ha_is "... no foreign family, NaN or Inf" 0 "$(grep -c -e evil_family -e NaN -e Inf "$HA_TMP/metrics3.txt")"
ha_is "... one HELP per family" 0 "$(grep '^# HELP' "$HA_TMP/metrics3.txt" | cut -d' ' -f3 | sort | uniq -d | wc -l)"
for r in family value duplicate_label; do
    ha_file_like "... refused as $r, counted" "$HA_TMP/metrics3.txt" \
        "^heapadmin_gateway_refused_samples_total\{pid=\"${fakes[0]}\",reason=\"$r\"\} [1-9]"
done
ha_file_like "... 10 MB of series refused whole" "$HA_TMP/metrics3.txt" \
    "^heapadmin_gateway_refused_samples_total\{pid=\"${fakes[1]}\",reason=\"bytes_limit\"\} [1-9]"
ha_file_like "... the one under nginx's name counted as identity" "$HA_TMP/metrics3.txt" \
    "^heapadmin_gateway_refused_samples_total\{pid=\"$lpid\",reason=\"identity\"\} [1-9]"
ha_file_like "... the drip and the hang are down, not waited for" "$HA_TMP/metrics3.txt" \
    "^heapadmin_agent_up\{pid=\"${fakes[3]}\",program=\"python3\",user=\"www-data\"\} 0"
sleep 4
ha_is "Prometheus keeps the host's target up meanwhile" 1 "$(q 'up{job="host"}')"
ha_is "... with the three nginx processes' series right" 3 \
    "$(q 'count(heapadmin_jemalloc_allocated_bytes{program="nginx",exported_pid=""} > 1000)')"
ha_is "... and the forged 999999999 never under a real pid" "" \
    "$(q "heapadmin_jemalloc_allocated_bytes{pid=\"${workers[0]}\"} == 999999999")"
ha_is "the refusals are logged once per process" 1 \
    "$(grep -c "gateway: process ${fakes[0]} (python3, user www-data) answered /metrics" "$HA_TMP/gateway.log")"
# A scrape that comes while a stats_agents waits on the hanging forger is
# not queued behind it (the gateway asks on threads of its own): it ends,
# by its own deadline, while that query still runs.
( gsql "SELECT 'slow', state FROM stats_agents WHERE pid = ${fakes[3]}"
  echo "$HA_RC:$HA_OUT" >"$HA_TMP/slow.out" ) &
slow=$!
running=0
for _ in $(seq 200); do
    gsql "SHOW PROCESSLIST"
    grep -q "SELECT 'slow'" <<<"$HA_OUT" && { running=1; break; }
    sleep 0.01
done
curl -s --max-time 20 -u stats:stats -H 'X-Prometheus-Scrape-Timeout-Seconds: 0.5' \
    "$url/metrics" >"$HA_TMP/metrics4.txt"
gsql "SHOW PROCESSLIST"
ha_is "a scrape beside a stats_agents that waits on the hanging forger ends first" \
    "1:1" "$running:$(grep -c "SELECT 'slow'" <<<"$HA_OUT")"
ha_file_like "... with the hanging forger down" "$HA_TMP/metrics4.txt" \
    "^heapadmin_agent_up\{pid=\"${fakes[3]}\",program=\"python3\",user=\"www-data\"\} 0"
wait "$slow"
ha_is "... and that query still answers" "0:slow	no answer" "$(cat "$HA_TMP/slow.out")"
# A busy process (its heap dump being written) stays busy through the
# gateway: its 503 keeps Retry-After, but only the delay in seconds.
hdr=$(curl -s -D - -o "$HA_TMP/busy.txt" --max-time 20 -u admin:admin "$url/debug/pprof/heap?pid=${fakes[5]}")
ha_like "a busy process's 503 comes through the gateway" "^HTTP/1.1 503 " "$hdr"
ha_like "... with its Retry-After" "Retry-After: 5"$'\r'"?$" "$hdr"
ha_file_like "... and its reason" "$HA_TMP/busy.txt" "a heap dump is being written"
hdr=$(curl -s -D - -o /dev/null --max-time 20 -u admin:admin "$url/debug/pprof/heap?pid=${fakes[6]}")
ha_like "a Retry-After that is not a delay in seconds ..." "^HTTP/1.1 503 " "$hdr"
ha_unlike "... is not passed on" "Retry-After" "$hdr"
for f in "${fakes[@]}"; do kill "$f" 2>/dev/null; done

# --- kill -9: gone until the next start in the datadir cleans it ----------------

kill -9 "$rpid"
ha_wait_gone "$rpid" 5
gsql "SELECT state FROM stats_agents WHERE pid = $rpid"
ha_is "after kill -9 stats_agents shows redis as gone" "0:gone" "$HA_RC:$HA_OUT"
out=$(timeout 5 mariadb --no-defaults --protocol=SOCKET -S "$data/redis-server.$rpid.sock" -uadmin -padmin -e 'SELECT 1' 2>&1)
ha_like "its stale socket refuses (ERROR 2002)" "ERROR 2002" "$out"
rport=$(ha_free_port)
env "${AG_ENV[@]}" HEAPADMIN_CONF="$HA_TMP/redis.cnf" HEAPADMIN_LOG="$HA_TMP/redis2.log" \
    redis-server --port "$rport" --save '' --appendonly no --dir "$HA_TMP" \
    >/dev/null 2>&1 &
r2=$!
HA_PIDS+=("$r2")
ag_wait_socket "$data/redis-server.$r2.sock" 15
ha_is "a new redis in the datadir is served" 0 "$?"
ha_ok "... and its start removed the stale endpoint" test ! -e "$data/redis-server.$rpid.sock" -a ! -e "$data/redis-server.$rpid.http"
ha_file_like "... saying so in its log" "$HA_TMP/redis2.log" \
    "removed the stale endpoint $data/redis-server.$rpid.http: process $rpid is gone"
ha_file_like "... file by file" "$HA_TMP/redis2.log" \
    "removed the stale endpoint $data/redis-server.$rpid.sock: process $rpid is gone"
ha_ok "the workers' shared log says whose each line is" \
    grep -qs "\[pid ${workers[0]}\]" "$data/www-data/agent.log" "$HA_TMP/agent.log"
ha_unlike "no errorlog (default) line when HEAPADMIN_LOG is used" "errorlog = <datadir>" \
    "$(cat "$HA_TMP/redis2.log")"
gsql "SELECT count(*) FROM stats_agents WHERE pid = $rpid"
ha_is "... so stats_agents no longer lists it" "0:0" "$HA_RC:$HA_OUT"

env "${NGX_ENV[@]}" /usr/sbin/nginx -c "$conf" -g 'daemon on; master_process on;' -s quit
ha_wait_gone "$mpid" 15
ha_done
