#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Beyond one host (issue 37): a gateway's /sd in Prometheus' http_sd
# format, read by a real Prometheus (Debian's) with http_sd_configs and
# no per-pid configuration, over Debian's memcached (-u nobody) and
# redis-server under the agent. Every served process is a target and up,
# with the label contract (service_name from service_names, program,
# user; heapadmin_build_info with the executable's build-id, checked
# against eu-readelf); a restarted redis's old target is gone and the new
# one up within two refresh intervals. A profile account reads every
# process's live profile through the gateway and nothing else (403 on
# /metrics, on ?dump= of a non-dump, and at the MySQL login).

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-300}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require memcached memcached
ha_require curl curl
ha_require promtool prometheus
ha_require prometheus prometheus
ha_require eu-readelf elfutils
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP sd.sh: memcached -u nobody and the gateway need root"
    echo "1..0 # SKIP needs root"
    exit 77
fi

# http_sd_configs' refresh_interval, seconds. Prometheus hands what its
# discovery found to its scrapers at most every 5 s (its discovery
# manager's update throttle), so a shorter interval shows nothing sooner.
REFRESH=5
chmod 711 "$HA_TMP"
data=$HA_TMP/data
services='service_names = "redis-server=cache;memcached=sessions"'
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; $services; }
EOF
chmod 600 "$HA_TMP/agent.cnf"
ag_env
AG_ENV+=(HEAPADMIN_CONF="$HA_TMP/agent.cnf")

start_redis() {
    rport=$(ha_free_port)
    env "${AG_ENV[@]}" MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:16 \
        redis-server --port "$rport" --save '' --appendonly no \
        --dir "$HA_TMP" >"$HA_TMP/redis.out" 2>&1 &
    rpid=$!
    HA_PIDS+=("$rpid")
    ag_wait_socket "$data/redis-server.$rpid.sock" 15
}
# memcached first: its root process makes the datadir traversable for
# nobody's directory (HEAPADMIN_USERS).
mport=$(ha_free_port)
env "${AG_ENV[@]}" LD_PRELOAD="$HA_AGENT libjemalloc.so.2" HEAPADMIN_USERS=nobody \
    memcached -l 127.0.0.1 -p "$mport" -U 0 -u nobody >/dev/null 2>&1 &
mcpid=$!
HA_PIDS+=("$mcpid")
ag_wait_socket "$data/nobody/memcached.$mcpid.sock" 15
ha_is "memcached -u nobody is served" 0 "$?"
start_redis
ha_is "redis-server is served" 0 "$?"

ag_gateway_start "$data" 15 "$services
    profile_credentials = \"scraper:s3cret\"" || ha_bail "the gateway starts"

# --- /sd as the gateway writes it ---------------------------------------------

ctype=$(curl -s --max-time 10 -u stats:stats -o "$HA_TMP/sd.json" -w '%{http_code} %{content_type}' "$url/sd")
ha_is "/sd answers JSON" "200 application/json" "$ctype"
sdcheck() {
    python3 - "$HA_TMP/sd.json" "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
want = sys.argv[2:]
host = [e for e in doc if e["labels"].get("__meta_heapadmin_scope") == "host"]
procs = {e["labels"]["__meta_heapadmin_pid"]: e for e in doc
         if e["labels"].get("__meta_heapadmin_scope") == "process"}
out = [str(len(host))]
for pid in want:
    e = procs.get(pid)
    if e is None:
        out.append("missing")
        continue
    l = e["labels"]
    out.append(",".join([e["targets"][0], l["__metrics_path__"],
                         l["__param_pid"], l["service_name"], l["program"],
                         l["user"], l["instance"], l.get("pid", "-")]))
out.append(str(len(procs)))
print(" ".join(out))
PY
}
g=127.0.0.1:$gport
ha_is "one host target, then one per process with the label contract" \
    "1 $g,/metrics,$rpid,cache,redis-server,root,$g/cache,- $g,/metrics,$mcpid,sessions,memcached,nobody,$g/sessions,- 2" \
    "$(sdcheck "$rpid" "$mcpid")"
curl -s --max-time 10 -u stats:stats "$url/metrics?pid=$rpid" >"$HA_TMP/one.txt"
ha_is "promtool accepts /metrics?pid=N" "" \
    "$(promtool check metrics <"$HA_TMP/one.txt" 2>&1)"
ha_unlike "... whose samples carry no pid or program: the target says them" \
    'pid=|program=' "$(grep -v '^#' "$HA_TMP/one.txt")"
bid=$(eu-readelf -n "$(readlink -f /usr/bin/redis-server)" | awk '/Build ID:/ { print $3 }')
ha_file_like "... heapadmin_build_info with redis's build-id (eu-readelf: $bid)" \
    "$HA_TMP/one.txt" "^heapadmin_build_info\{build_id=\"$bid\",version=\"[^\"]+\"\} 1$"
curl -s --max-time 10 -u stats:stats "$url/metrics" >"$HA_TMP/host.txt"
ha_file_like "the host's /metrics says each process's service and build" \
    "$HA_TMP/host.txt" "^heapadmin_build_info\{pid=\"$rpid\",program=\"redis-server\",service_name=\"cache\",build_id=\"$bid\","
ha_is "... and promtool accepts it" "" "$(promtool check metrics <"$HA_TMP/host.txt" 2>&1)"
ha_is "/metrics?pid= of no served process is 404" 404 \
    "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -u stats:stats "$url/metrics?pid=999999")"

# --- the profile role ----------------------------------------------------------

code() { curl -s --max-time 60 -o "$HA_TMP/body" -w '%{http_code}' -u scraper:s3cret "$url$1"; }
ha_is "a profile account gets redis's live profile through the gateway" \
    "200:1f8b" "$(code "/debug/pprof/allocs?pid=$rpid"):$(head -c 2 "$HA_TMP/body" | od -An -tx1 | tr -d ' \n')"
ha_is "... and memcached's (a process of another user)" 200 "$(code "/debug/pprof/heap?pid=$mcpid")"
ha_is "... and jeprof's text of it" 200 "$(code "/pid/$rpid/pprof/heap")"
ha_is "... and the flame page" 200 "$(code "/heap?pid=$rpid")"
ha_is "... and /sd" 200 "$(code /sd)"
ha_is "... but not /metrics" 403 "$(code /metrics)"
ha_is "... nor the command line" 403 "$(code "/debug/pprof/cmdline?pid=$rpid")"
ha_is "... nor ?dump= of a file that is not a dump (heapadmin.db)" 403 \
    "$(code "/debug/pprof/heap?pid=$rpid&dump=heapadmin.db")"
ha_is "... nor the gateway's own ?dump= of one" 403 "$(code "/debug/pprof/heap?dump=heapadmin.db")"
for sql in "SELECT 1" \
    "UPDATE global_variables SET variable_value='true' WHERE variable_name='jemalloc-dump_now'" \
    "SAVE JEMALLOC VARIABLES TO DISK"; do
    out=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults --protocol=SOCKET \
        -S "$HA_TMP/gateway.sock" -uscraper -ps3cret -N -B -e "$sql" 2>&1)
    ha_like "a profile account gets no SQL ($sql)" "ERROR 1045.*reads heap profiles over HTTP only" "$out"
done
ha_file_like "... and the refusal is logged" "$HA_TMP/gateway.log" \
    "login refused: user 'scraper' .*reads heap profiles over HTTP only"

# --- a real Prometheus with http_sd_configs -------------------------------------

pport=$(ha_free_port)
cat >"$HA_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: heapadmin
    basic_auth: {username: stats, password: stats}
    http_sd_configs:
      - url: http://127.0.0.1:$gport/sd
        refresh_interval: ${REFRESH}s
        basic_auth: {username: stats, password: stats}
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
print(d[0]["value"][1] if d else "")' 2>/dev/null
}
# The active targets as "pid:health" for processes, "host:health".
targets() {
    curl -s --max-time 5 "http://127.0.0.1:$pport/api/v1/targets?state=active" |
        python3 -c 'import json,sys
t = json.load(sys.stdin)["data"]["activeTargets"]
print(" ".join(sorted(x["discoveredLabels"].get("__meta_heapadmin_pid", "host")
    + ":" + x["health"] for x in t)))' 2>/dev/null
}
want=$(printf '%s\n' "$rpid:up" "$mcpid:up" "host:up" | sort | tr '\n' ' ' | sed 's/ $//')
for _ in $(seq 60); do
    [ "$(targets)" = "$want" ] && break
    sleep 0.5
done
ha_is "Prometheus finds every served process and the host through /sd, all up" \
    "$want" "$(targets)"
for _ in $(seq 20); do
    [ -n "$(q 'up{job="heapadmin",service_name="cache"}')" ] && break
    sleep 0.5
done
ha_is "... redis's target is up as service cache" 1 "$(q 'up{job="heapadmin",service_name="cache",program="redis-server"}')"
ha_is "... memcached's as service sessions" 1 "$(q 'up{service_name="sessions",program="memcached",user="nobody"}')"
ha_is "... under instance <gateway>/<service>" 1 \
    "$(q "up{instance=\"$g/cache\"}")"
ha_is "... whose series carry the build-id" 1 \
    "$(q "heapadmin_build_info{service_name=\"cache\",build_id=\"$bid\"}")"
v=$(q 'heapadmin_jemalloc_allocated_bytes{service_name="cache"}')
ha_like "... and redis's allocated bytes, by service ($v)" '^[1-9][0-9]*$' "$v"

# --- a restart: the old target goes, the new one is up --------------------------

old=$rpid
kill "$old"
ha_wait_gone "$old" 10
t0=$(date +%s%N)
start_redis
ready=$(date +%s%N)
sd_new=$(curl -s --max-time 10 -u stats:stats "$url/sd" -o "$HA_TMP/sd.json"; sdcheck "$rpid" "$old")
ha_like "/sd lists the new redis and not the old one as soon as it is served" \
    "^1 $g,/metrics,$rpid,cache,.* missing 2\$" "$sd_new"
want=$(printf '%s\n' "$rpid:up" "$mcpid:up" "host:up" | sort | tr '\n' ' ' | sed 's/ $//')
for _ in $(seq 150); do
    [ "$(targets)" = "$want" ] && break
    sleep 0.2
done
t1=$(date +%s%N)
ha_is "after a restart the old redis's target is gone and the new one up" \
    "$want" "$(targets)"
ms=$(((t1 - ready) / 1000000))
echo "# new redis served after $(((ready - t0) / 1000000)) ms; Prometheus had it up, the old one gone, $ms ms later (refresh ${REFRESH} s, scrape 1 s)"
# Within two refresh intervals, plus the first scrape (1 s) and this
# loop's own polling.
ha_ok "... within two refresh intervals and a scrape ($ms ms <= $((2 * REFRESH * 1000 + 1500)) ms)" \
    test "$ms" -le $((2 * REFRESH * 1000 + 1500))
ha_is "... and it keeps its series: instance and service are the same" 1 \
    "$(q "up{instance=\"$g/cache\",service_name=\"cache\"}")"

ha_done
