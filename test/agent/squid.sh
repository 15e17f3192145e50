#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's squid under the agent, with Debian's config (but for where it
# listens, its pid file and logs, and a 1 s shutdown_lifetime) and the
# flags of Debian's unit: a root master that forks a kid and exec()s it
# with real uid root and effective uid proxy, so the kernel runs the kid
# in secure mode (AT_SECURE: the loader ignores LD_PRELOAD; uids later
# "13 13 0 13"). The master is served and proxies as usual; it says once,
# in its log, that the kid is not served and why; a clean stop removes
# its endpoint, although the master is proxy when it exits (its
# effective uid changes back and forth, also while the agent starts:
# the agent starts again once it held still), and leaves no SQLite
# journal and no staging directory.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require squid squid
ha_require mariadb mariadb-client
ha_require curl curl
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP squid.sh: squid's master must run as root (a proxy kid)"
    echo "1..0 # SKIP needs root"
    exit 77
fi

chmod 711 "$HA_TMP"
data=$HA_TMP/data
sq=$HA_TMP/squid
port=$(ha_free_port)
# Debian's config, as the package ships it, in a private copy.
cp -rL /etc/squid "$sq"
mkdir -p "$sq/logs"
chown proxy:proxy "$sq/logs"
chmod 755 "$sq"
sed -i -e "s#^http_port .*#http_port 127.0.0.1:$port#" \
    -e "s#^include /etc/squid/#include $sq/#" "$sq/squid.conf"
cat >>"$sq/squid.conf" <<EOF
pid_filename $sq/logs/squid.pid
cache_log $sq/logs/cache.log
access_log stdio:$sq/logs/access.log
shutdown_lifetime 1 seconds
EOF
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; }
EOF
chmod 600 "$HA_TMP/agent.cnf"
ag_backend 1 2000

# squid is not linked with jemalloc: docs/agent.md's line for such
# hosts (LD_PRELOAD="agent.so libjemalloc.so.2").
ag_env
env "${AG_ENV[@]}" LD_PRELOAD="$HA_AGENT libjemalloc.so.2" \
    HEAPADMIN_CONF="$HA_TMP/agent.cnf" \
    /usr/sbin/squid -f "$sq/squid.conf" --foreground -YC \
    >"$HA_TMP/squid.out" 2>&1 &
mpid=$!
HA_PIDS+=("$mpid")
ag_wait_socket "$data/squid.$mpid.sock" 30
ha_is "squid's master is served" 0 "$?"
kid=
for _ in $(seq 100); do
    kid=$(ps -o pid= --ppid "$mpid" -o comm= | awk '$2 == "squid" { print $1; exit }')
    [ -n "$kid" ] && break
    sleep 0.1
done
HA_PIDS+=("$kid")
ha_like "the master forked its kid" '^[0-9]+$' "$kid"
proxy=$(id -u proxy)
ha_like "the kid runs as proxy with root as its saved uid" \
    "^$proxy	$proxy	0	$proxy$" "$(awk '/^Uid:/ { print $2 "\t" $3 "\t" $4 "\t" $5 }' "/proc/$kid/status")"
ha_is "the loader did not load the agent in it (AT_SECURE)" 0 \
    "$(grep -c heapadmin-agent "/proc/$kid/maps")"
for _ in $(seq 100); do
    grep -q "child $kid (squid, user proxy) is not served" "$HA_TMP/agent.log" && break
    sleep 0.2
done
ha_file_like "the master says the kid is not served, and why" "$HA_TMP/agent.log" \
    "\[pid $mpid\] agent: child $kid \(squid, user proxy\) is not served: AT_SECURE \(its auxiliary vector says so\): its uids are $proxy $proxy 0 $proxy .*LD_PRELOAD"
out=$(curl -s --max-time 20 -x "http://127.0.0.1:$port" \
    "http://127.0.0.1:$AG_BACKEND_PORT/f1.txt" | wc -c)
ha_ok "squid proxies as usual ($out bytes)" test "$out" -gt 2000
ag_sql "$data/squid.$mpid.sock" "SELECT count(*) > 0 FROM stats_memory_jemalloc"
ha_is "the master's admin port answers" "0:1" "$HA_RC:$HA_OUT"
dump=$(ag_dump "$data/squid.$mpid.sock")
ha_like "... and dumps its heap" "^$data/proxysql\.$mpid\.[0-9]+\.m[0-9]+\.heap$" "$dump"
# The reports come at the master's next looks: a second look (after the
# start delay) must not say it again.
sleep 5
ha_is "... said once" 1 "$(grep -c "child $kid " "$HA_TMP/agent.log")"

# A clean stop, as Debian's unit makes it (SIGTERM to the master).
kill -TERM "$mpid"
ha_wait_gone "$mpid" 30
ha_is "squid stops on SIGTERM" 0 "$?"
ha_is "no socket of the master's is left" "" \
    "$(cd "$data" && ls -- *.sock *.http 2>/dev/null)"
ha_is "... nor a SQLite journal (-wal, -shm), nor the dumps' staging directory" "" \
    "$(cd "$data" && ls -d -- *-wal *-shm *-journal .heapadmin-staging 2>/dev/null)"

ha_done
