#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Which thread holds the memory, in unmodified Debian daemons under the
# agent, whose malloc_conf has jemalloc read the kernel's thread names
# (prof_sys_thread_name): redis-server with four I/O threads
# (--io-threads 4 --io-threads-do-reads yes) under redis-benchmark, and
# nginx's master and workers (the shipped drop-in's environment) under
# ab. heap_threads names redis's threads as /proc/<pid>/task/*/comm names
# them (redis-server, io_thd_N), its I/O pool summed by name, and the
# memory they hold adds up to the profile's; each nginx worker's memory
# is its thread's, named nginx as the kernel names it; the agent's own
# threads hold nothing there; heapadmin_thread_live_bytes carries the
# names.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require nginx nginx
ha_require ab apache2-utils
ha_require curl curl
ha_require go golang-go
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP threadnames.sh: nginx's master must run as root (www-data workers)"
    echo "1..0 # SKIP needs root"
    exit 77
fi
export PPROF_TMPDIR=$HA_TMP

# comm_of PID: the kernel's names of PID's threads, sorted, unique.
comm_of() { ag_threads "$1" | sort -u; }

# --- redis ---------------------------------------------------------------------

data=$HA_TMP/data
mkdir -p "$data"
rport=$(ha_free_port)
ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" \
    redis-server --port "$rport" --save '' --appendonly no --dir "$HA_TMP" \
    --io-threads 4 --io-threads-do-reads yes \
    >"$HA_TMP/redis.out" 2>&1 &
rpid=$!
HA_PIDS+=("$rpid")
sock=$data/redis-server.$rpid.sock
ag_wait_socket "$sock" 15 || ha_bail "the agent serves redis-server"
ag_sql "$sock" "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_sys_thread_name'"
ha_is "the agent starts jemalloc with prof_sys_thread_name" "0:true" "$HA_RC:$HA_OUT"
ag_set "$sock" jemalloc-lg_prof_sample 14
ag_set "$sock" jemalloc-prof_active true
# Enough clients that redis hands reads and writes to its I/O threads;
# values large enough to stay in the query and reply buffers they make.
timeout 120 redis-benchmark -p "$rport" -n 20000 -c 64 --threads 2 -q \
    -t set,get -d 2048 -r 20000 >"$HA_TMP/bench.out" 2>&1
ha_is "redis-benchmark completes" 0 "$?"

ag_sql "$sock" "SELECT DISTINCT thread_name FROM heap_threads('live') WHERE stacks > 0 ORDER BY 1"
names=$HA_OUT
kernel=$(comm_of "$rpid")
ha_diag "heap_threads: $(tr '\n' ' ' <<<"$names")" "kernel: $(tr '\n' ' ' <<<"$kernel")"
ha_ok "heap_threads names redis's main thread" grep -qx redis-server <<<"$names"
ha_like "... and its I/O threads" "io_thd_[0-9]+" "$names"
bad=
while read -r n; do
    [ -z "$n" ] && continue
    grep -qxF -- "$n" <<<"$kernel" || bad="$bad $n"
done <<<"$names"
ha_is "every name is one the kernel gives a thread of redis" "" "$bad"
ag_sql "$sock" "SELECT count(*) FROM heap_threads('live') WHERE thread_name LIKE 'io_thd_%' AND stacks > 0"
ha_ok "more than one I/O thread has a part ($HA_OUT)" test "${HA_OUT:-0}" -ge 2
ag_sql "$sock" "SELECT count(*) FROM heap_threads('live') WHERE thread_name = 'heapadmin' AND bytes > 0"
ha_is "the agent's own threads hold nothing in the host's profile" "0:0" "$HA_RC:$HA_OUT"
dump=$(ag_dump "$sock")
d=$(basename "$dump")
ag_sql "$sock" "SELECT (SELECT sum(bytes) FROM heap_threads('$d')) = bytes FROM stats_heap_dumps WHERE file_name = '$d'"
ha_is "redis's threads add up to its dump's total" "0:1" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT thread_name, sum(bytes) FROM heap_threads('$d') GROUP BY 1 ORDER BY 2 DESC LIMIT 3"
ha_diag "redis by thread name:" "$HA_OUT"
ag_sql "$sock" "SHOW PROMETHEUS METRICS"
ha_like "heapadmin_thread_live_bytes names redis's main thread" \
    'heapadmin_thread_live_bytes\{program=\\?"redis-server\\?",thread_name=\\?"redis-server\\?"\} [1-9]' \
    "$HA_OUT"

# --- nginx ---------------------------------------------------------------------

chmod 711 "$HA_TMP"
ndata=$HA_TMP/ndata
nport=$(ha_free_port)
prefix=$HA_TMP/nginx
ag_nginx_prefix "$prefix" "$nport"
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$ndata"
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; }
EOF
chmod 600 "$HA_TMP/agent.cnf"
ag_dropin_env "$HA_SRCDIR/etc/heapadmin-agent-nginx.conf.in" "$HA_TMP/agent.cnf"
# As shipped, but sampling from the start every 4 KiB: nginx's own
# allocations (its cycle) are made before any request.
mconf=
for e in "${AG_DROPIN[@]}"; do
    case $e in MALLOC_CONF=*) mconf=${e#MALLOC_CONF=} ;; esac
done
ha_like "the shipped drop-in has jemalloc read the kernel's thread names" \
    "prof_sys_thread_name:true" "$mconf"
env "${AG_DROPIN[@]}" MALLOC_CONF="$mconf,prof_active:true,lg_prof_sample:12" \
    HEAPADMIN_START_DELAY_MS=300 \
    HEAPADMIN_LOG="$HA_TMP/nagent.log" \
    /usr/sbin/nginx -c "$prefix/conf/nginx.conf" -g 'daemon on; master_process on;'
for _ in $(seq 50); do [ -s "$prefix/logs/nginx.pid" ] && break; sleep 0.1; done
mpid=$(cat "$prefix/logs/nginx.pid" 2>/dev/null)
[ -n "$mpid" ] || ha_bail "nginx starts"
HA_PIDS+=("$mpid")
mapfile -t workers < <(sleep 0.5; ag_nginx_workers "$mpid")
ha_is "nginx runs a master and two workers" 2 "${#workers[@]}"
for w in "${workers[@]}"; do
    ag_wait_socket "$ndata/www-data/nginx.$w.sock" 15 ||
        ha_fail "the agent serves nginx worker $w"
done
timeout 60 ab -q -n 2000 -c 8 "http://127.0.0.1:$nport/f1.txt" >/dev/null 2>&1
for w in "${workers[@]}"; do
    ws=$ndata/www-data/nginx.$w.sock
    ag_sql "$ws" "SELECT DISTINCT thread_name FROM heap_threads('live') WHERE bytes > 0"
    ha_is "nginx worker $w: its memory is its thread's, named as the kernel names it ($(comm_of "$w" | grep -v heapadmin | tr '\n' ' '))" \
        "0:$(comm_of "$w" | grep -v heapadmin)" "$HA_RC:$HA_OUT"
done
ws=$ndata/www-data/nginx.${workers[0]}.sock
ag_sql "$ws" "SELECT sum(bytes) FROM heap_threads('live') WHERE thread_name = 'nginx'"
ha_like "... holding a heap ($HA_OUT bytes)" "^0:[1-9][0-9]*$" "$HA_RC:$HA_OUT"

dumpw=$(ag_dump "$ws")
ag_sql "$ws" "SELECT count(*) FROM heap_stacks('$(basename "$dumpw")') WHERE thread = 'nginx'"
ha_like "heap_stacks of a worker's dump with thread = 'nginx': its stacks" "^0:[1-9]" \
    "$HA_RC:$HA_OUT"
ha_done
