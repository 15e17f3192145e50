#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# heapadmin-attach on Debian's nginx (issue 39), which runs without the
# agent: its default config ("user www-data;", 2 workers) in a private
# copy, started by root as its unit does, with jemalloc as its malloc
# (LD_PRELOAD=libjemalloc.so.2, MALLOC_CONF=prof:true,prof_active:false)
# and nothing of heapadmin's. The master (taken in its sigsuspend) and
# then one worker (www-data, in its epoll_wait) are attached separately:
# the master is served from the datadir, the worker from www-data's
# directory in it, which heapadmin-attach makes as root. The gateway
# serves both, with their memory; the master's detail says it was
# attached and that the worker forked before the attach and never
# attached is not served (the attached one is not listed). nginx serves
# requests throughout, a live profile over the gateway comes from the
# worker, and nginx -s quit leaves no socket.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require nginx nginx
ha_require curl curl
ha_require mariadb mariadb-client
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP attachnginx.sh: the master must run as root to drop its workers to www-data"
    echo "1..0 # SKIP needs root"
    exit 77
fi
id www-data >/dev/null 2>&1 || ha_bail "no www-data user (Debian's nginx package makes it)"
ATTACH=$HA_BUILDDIR/attach/heapadmin-attach
[ -x "$ATTACH" ] || ha_bail "no $ATTACH (configure disabled the agent?)"

chmod 711 "$HA_TMP"
data=$HA_TMP/data
port=$(ha_free_port)
prefix=$HA_TMP/nginx
ag_nginx_prefix "$prefix" "$port"
conf=$prefix/conf/nginx.conf
LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=prof:true,prof_active:false \
    /usr/sbin/nginx -c "$conf" -g 'daemon on; master_process on;'
ha_is "nginx starts as its unit does, with jemalloc and no agent" 0 "$?"
for _ in $(seq 50); do [ -s "$prefix/logs/nginx.pid" ] && break; sleep 0.1; done
mpid=$(cat "$prefix/logs/nginx.pid" 2>/dev/null)
[ -n "$mpid" ] || ha_bail "nginx wrote no pid file"
HA_PIDS+=("$mpid")
workers=()
for _ in $(seq 50); do
    mapfile -t workers < <(ag_nginx_workers "$mpid")
    [ "${#workers[@]}" -eq 2 ] && break
    sleep 0.1
done
ha_is "two workers, as www-data" "2 www-data www-data" \
    "${#workers[@]} $(ps -o user= -p "${workers[0]}" | tr -d ' ') $(ps -o user= -p "${workers[1]}" | tr -d ' ')"
w=${workers[0]}
other=${workers[1]}

at() {
    AT_OUT=$(timeout -k 5 60 "$ATTACH" --agent "$HA_AGENT" --datadir "$data" \
        --log "$HA_TMP/agent.log" "$1" 2>&1)
    AT_RC=$?
}

at "$mpid"
ha_like "the master is attached in its sigsuspend, served from the datadir" \
    "^0:attached to nginx \(pid $mpid\).* taken (in|back from) sigsuspend.*serving: $data/nginx\.$mpid\.sock" \
    "$AT_RC:$(tr '\n' ' ' <<<"$AT_OUT")"
ha_diag "$(head -1 <<<"$AT_OUT")"
at "$w"
ha_like "worker $w is attached, served from www-data's directory" \
    "^0:attached to nginx \(pid $w\).* taken (in|back from) epoll_wait.*serving: $data/www-data/nginx\.$w\.sock" \
    "$AT_RC:$(tr '\n' ' ' <<<"$AT_OUT")"
ha_diag "$(head -1 <<<"$AT_OUT")"
ha_is "www-data's directory is www-data's alone (0700), the datadir root's" \
    "www-data 700 root" \
    "$(stat -c '%U %a' "$data/www-data") $(stat -c %U "$data")"
ha_is "nginx serves" hello "$(curl -s --max-time 5 "http://127.0.0.1:$port/")"
for i in $(seq 1 20); do curl -s -o /dev/null "http://127.0.0.1:$port/f$i.txt"; done
ag_sql "$data/www-data/nginx.$w.sock" "SELECT variable_value > 0 FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
ha_is "the worker's admin reads its heap" "0:1" "$HA_RC:$HA_OUT"
ha_is "the other worker has no agent" "" \
    "$(grep -x heapadmin /proc/"$other"/task/*/comm)"

if ag_gateway_start "$data" 15; then
    gsql "SELECT pid, state, allocated > 0 FROM stats_agents ORDER BY pid"
    ha_is "the gateway serves the master and the worker, with their memory" \
        "$(printf '%s\tserving\t1\n' $(printf '%s\n' "$mpid" "$w" | sort -n))" \
        "$HA_OUT"
    want="^attached at 20[0-9-]{8} [0-9:]{8} UTC; children forked before the attach are not served: $other$"
    for _ in $(seq 50); do
        gsql "SELECT detail FROM stats_agents WHERE pid = $mpid"
        grep -Eq "$want" <<<"$HA_OUT" && break
        sleep 0.1
    done
    ha_like "the master's detail: attached, and its unattached worker not served" \
        "$want" "$HA_OUT"
    code=$(curl -s -o "$HA_TMP/w.heap" -w '%{http_code}' -u admin:admin \
        "$url/debug/pprof/heap?pid=$w")
    ha_is "the gateway answers a live profile from the worker" 200 "$code"
else
    ha_fail "the gateway starts" "$(cat "$HA_TMP/gateway.log")"
fi
ha_file_like "the master's log names its unserved worker" "$HA_TMP/agent.log" \
    "children forked before the attach \(([0-9]+, )?$other(, [0-9]+)?\) do not have the agent"

/usr/sbin/nginx -c "$conf" -s quit 2>/dev/null
ha_ok "nginx quits" ha_wait_gone "$mpid" 15
ha_is "no socket is left" "" "$(find "$data" -name '*.sock' -o -name '*.http')"
ha_done
