#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The allocation views inside Debian's unmodified redis-server, through
# the agent, under redis-benchmark's load, no restart: a lifetime window
# (jemalloc-log_now) names redis's own churning functions with their
# lifetimes; stats_jemalloc_recent shows its last sampled allocations;
# with prof_accum in the service's MALLOC_CONF, two dumps give redis's
# allocation rate per site; a window still open when redis exits (SIGTERM:
# redis calls exit(), the agent is never stopped) is published on the way
# out. Then nginx: a window open on the master when it forks new workers
# (a reload) does not go on logging in them.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require mariadb mariadb-client
ha_require nginx nginx

data=$HA_TMP/data
mkdir -p "$data"
port=$(ha_free_port)
ag_env
# The service's own environment asks for the cumulative counters.
env "${AG_ENV[@]}" MALLOC_CONF=prof:true,prof_active:false,prof_accum:true \
    HEAPADMIN_DATADIR="$data" \
    redis-server --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
    >"$HA_TMP/redis.out" 2>"$HA_TMP/redis.err" &
rpid=$!
HA_PIDS+=("$rpid")
sock=$data/redis-server.$rpid.sock
if ! ag_wait_socket "$sock" 15; then
    ha_file_tail "$HA_TMP/agent.log"
    ha_bail "the agent serves redis-server $rpid on $sock"
fi
ha_pass "the agent serves redis-server $rpid"
ag_set "$sock" jemalloc-prof_active true
ag_set "$sock" jemalloc-lg_prof_sample 14
ag_set "$sock" jemalloc-recent_alloc_max 500
ha_is "prof_active, a sample every 16 KiB and the last 500 allocations, at run time" \
    "0:" "$HA_RC:$HA_ERR"

# redis's own exported names (it is built with -rdynamic): what a row
# must be to count as "redis's own function".
nm -D --defined-only "$(readlink -f "$(command -v redis-server)")" |
    awk '{ print $3 }' | sort -u >"$HA_TMP/redis.syms"
is_redis() { grep -qxF "$1" "$HA_TMP/redis.syms"; }

load() {
    timeout 120 redis-benchmark -p "$port" -n "${1:-200000}" -q -t set,get,lpush,lpop \
        -d 1000 -r 10000 >"$HA_TMP/bench.out" 2>&1
}

# --- a lifetime window under load ---------------------------------------------

d1=$(ag_dump "$sock")
load &
bench=$!
ag_set "$sock" jemalloc-log_now 6
ha_is "jemalloc-log_now = 6 opens a window in redis under load" "0:" \
    "$HA_RC:$HA_ERR"
log=redis-placeholder
for _ in $(seq 150); do
    ag_sql "$sock" "SELECT file_name FROM stats_heap_dumps WHERE kind = 'log'"
    [ -n "$HA_OUT" ] && log=$HA_OUT && break
    sleep 0.1
done
ha_like "its log is published in the datadir, named as jemalloc names it" \
    "^proxysql\.$rpid\.0\.json$" "$log"
wait "$bench"
d2=$(ag_dump "$sock")

ag_sql "$sock" "SELECT function FROM heap_lifetimes('$log') WHERE function NOT LIKE '%+0x%' AND function NOT LIKE '0x%' ORDER BY bytes_per_s DESC LIMIT 3"
top=$(head -1 <<<"$HA_OUT")
ha_ok "heap_lifetimes names redis's own churning functions ($(tr '\n' ' ' <<<"$HA_OUT"))" \
    is_redis "${top% (inline)}"
ag_sql "$sock" "SELECT samples > 10, lifetime_p50_ms >= 0, lifetime_max_ms >= lifetime_p50_ms, free_function IS NOT NULL FROM heap_lifetimes('$log') WHERE function = '$top'"
ha_is "... with its lifetimes and where it is freed" "0:1	1	1	1" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT count(*) FROM stats_jemalloc_recent WHERE function IS NOT NULL"
ha_like "stats_jemalloc_recent: redis's last sampled allocations" "^0:[1-9]" \
    "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT site FROM heap_profile_diff('$(basename "$d1")', '$(basename "$d2")') WHERE site NOT LIKE '%+0x%' GROUP BY site ORDER BY sum(alloc_bytes_per_s) DESC LIMIT 1"
site=${HA_OUT% (inline)}
ha_ok "prof_accum from the service's MALLOC_CONF: the allocation rate names a redis function ($HA_OUT)" \
    is_redis "${site%\[inline\]}"

# --- open when redis exits ----------------------------------------------------------

ag_set "$sock" jemalloc-log_now 600
load 20000
kill -TERM "$rpid"
ha_wait_gone "$rpid" 10
ha_ok "a window open when redis exits is published on the way out" \
    test -s "$data/proxysql.$rpid.1.json" -a -s "$data/proxysql.$rpid.1.json.maps"
ha_file_like "... closed by the exit" "$data/proxysql.$rpid.1.json.window" \
    "closed_by=exit"
ha_is "the agent wrote nothing to redis's stderr" "" "$(cat "$HA_TMP/redis.err")"

# --- nginx: a window on the master does not follow its workers --------------------------

if [ "$(id -u)" = 0 ] && id www-data >/dev/null 2>&1; then
    chmod 711 "$HA_TMP"
    ndata=$HA_TMP/ndata
    nport=$(ha_free_port)
    prefix=$HA_TMP/nginx
    ag_nginx_prefix "$prefix" "$nport"
    printf 'datadir = "%s"\nadmin_variables = { admin_credentials = "admin:admin"; }\n' \
        "$ndata" >"$HA_TMP/agent.cnf"
    chmod 600 "$HA_TMP/agent.cnf"
    ag_dropin_env "$HA_SRCDIR/etc/heapadmin-agent-nginx.conf.in" "$HA_TMP/agent.cnf"
    env "${AG_DROPIN[@]}" MALLOC_CONF=prof:true,prof_active:true \
        HEAPADMIN_START_DELAY_MS=300 HEAPADMIN_LOG="$HA_TMP/nagent.log" \
        /usr/sbin/nginx -c "$prefix/conf/nginx.conf" \
        -g 'daemon on; master_process on;' >"$HA_TMP/nginx.out" 2>&1
    for _ in $(seq 50); do [ -s "$prefix/logs/nginx.pid" ] && break; sleep 0.1; done
    mpid=$(cat "$prefix/logs/nginx.pid" 2>/dev/null)
    [ -n "$mpid" ] && HA_PIDS+=("$mpid")
    msock=$ndata/nginx.$mpid.sock
    if [ -n "$mpid" ] && ag_wait_socket "$msock" 15; then
        ag_set "$msock" jemalloc-log_now 60
        ha_is "a window opens on the nginx master" "0:" "$HA_RC:$HA_ERR"
        old=$(ag_nginx_workers "$mpid" | sort)
        kill -HUP "$mpid"
        w=
        for _ in $(seq 100); do
            w=$(comm -13 <(echo "$old") <(ag_nginx_workers "$mpid" | sort) | head -1)
            [ -n "$w" ] && break
            sleep 0.1
        done
        if [ -n "$w" ] && ag_wait_socket "$ndata/www-data/nginx.$w.sock" 15; then
            ag_set "$ndata/www-data/nginx.$w.sock" jemalloc-log_now 1
            ha_is "a worker forked with the master's window open logs nothing of it: jemalloc opens one of its own there" \
                "0:" "$HA_RC:$HA_ERR"
        else
            ha_fail "a new worker serves after the reload"
        fi
        ag_set "$msock" jemalloc-log_now 0
        ha_ok "the master's window still closes and publishes" \
            test -s "$ndata/proxysql.$mpid.0.json"
        kill -QUIT "$mpid"
        ha_wait_gone "$mpid" 10
    else
        ha_file_tail "$HA_TMP/nagent.log"
        ha_fail "the agent serves the nginx master"
    fi
fi

ha_done
