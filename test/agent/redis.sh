#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The agent inside Debian's unmodified redis-server: the admin port on a
# unix socket named after the program and pid, statistics and profiling
# over SQL, redis-benchmark without errors, a dump jeprof reads with
# redis's own function names, a clean SIGTERM; then redis --daemonize yes
# (the surviving child serves, the exited parent's socket is gone) and
# BGSAVE under load (the BGSAVE child never serves). The agent writes
# nothing to redis's stdout or stderr, exports only malloc_conf (and
# heapadmin_agent_attach, heapadmin-attach's entry), carries
# no libevent/SQLite/libconfig/jemalloc dependency, and stays inert in a
# process without jemalloc.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require jeprof libjemalloc-dev
ha_require mariadb mariadb-client
ha_require readelf binutils

# --- the shared object itself -------------------------------------------------

exports=$(nm -D --defined-only "$HA_AGENT" | awk '{print $3}' | sort -u | tr '\n' ' ')
ha_is "the agent exports only malloc_conf and heapadmin-attach's entry" \
    "heapadmin_agent_attach malloc_conf " "$exports"
needed=$(readelf -d "$HA_AGENT" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
ha_unlike "no NEEDED on libevent, libsqlite3, libconfig or libjemalloc" \
    "libevent|libsqlite3|libconfig|libjemalloc" "$needed"

out=$(LD_PRELOAD="$HA_AGENT" HEAPADMIN_START_DELAY_MS=0 \
    sh -c 'echo hello; /bin/true; sleep 0.3' 2>&1)
ha_is "a process without jemalloc runs unaffected and silent" "hello" "$out"

# --- redis-server in the foreground ------------------------------------------

data=$HA_TMP/data
mkdir -p "$data"
port=$(ha_free_port)
ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" \
    redis-server --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
    >"$HA_TMP/redis.out" 2>"$HA_TMP/redis.err" &
rpid=$!
HA_PIDS+=("$rpid")
sock=$data/redis-server.$rpid.sock
if ag_wait_socket "$sock" 15; then
    ha_pass "the agent serves redis-server $rpid on $sock"
else
    ha_file_tail "$HA_TMP/agent.log"
    ha_fail "the agent serves redis-server $rpid on $sock"
    ha_done
fi
ha_like "redis still answers PING on its own port" "PONG" \
    "$(timeout 5 redis-cli -p "$port" ping)"
ha_like "the admin thread is named heapadmin" "^heapadmin$" "$(ag_threads "$rpid")"

ag_sql "$sock" "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
ha_like "stats_memory_jemalloc shows redis's heap" "^0:[1-9][0-9]+$" "$HA_RC:$HA_OUT"
# The agent's own share is apart, in rows of its own, each an integer
# (retained may be 0), allocated above 0 (heapadmind has none of these).
ag_sql "$sock" "SELECT count(*) FROM stats_memory_jemalloc WHERE variable_name IN ('heapadmin.allocated', 'heapadmin.active', 'heapadmin.resident', 'heapadmin.mapped', 'heapadmin.metadata', 'heapadmin.retained') AND typeof(variable_value) = 'integer' AND variable_value >= 0 AND (variable_value > 0 OR variable_name <> 'heapadmin.allocated')"
ha_is "the agent's own memory is in six heapadmin.* rows" "0:6" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof'"
ha_is "opt.prof is on through the agent's malloc_conf" "0:true" "$HA_RC:$HA_OUT"
ag_set "$sock" jemalloc-prof_active true
ha_is "prof_active switched on over SQL" "0:" "$HA_RC:$HA_ERR"

timeout 120 redis-benchmark -p "$port" -n 30000 -q -t set,get -d 1000 \
    -r 10000 --csv >"$HA_TMP/bench.csv" 2>"$HA_TMP/bench.err"
rc=$?
ha_is "redis-benchmark completes" 0 "$rc"
ha_like "redis-benchmark reports SET and GET throughput" '^"SET","[0-9]' \
    "$(cat "$HA_TMP/bench.csv")"
ha_unlike "redis-benchmark reports no errors" "[Ee]rror" \
    "$(cat "$HA_TMP/bench.err" "$HA_TMP/bench.csv")"

dump=$(ag_dump "$sock")
ha_like "dump_now names the dump in the datadir" "^$data/proxysql\.$rpid\.[0-9]+\.m[0-9]+\.heap$" "$dump"
if [ -n "$dump" ] && [ -f "$dump" ]; then
    timeout 120 jeprof --text /usr/bin/redis-server "$dump" \
        >"$HA_TMP/jeprof.out" 2>/dev/null
    ha_file_like "jeprof names redis's allocator wrapper (zmalloc_usable)" \
        "$HA_TMP/jeprof.out" "zmalloc_usable"
    ha_file_like "jeprof names redis's string allocation (_sdsnewlen)" \
        "$HA_TMP/jeprof.out" "_sdsnewlen"
else
    ha_fail "the dump file exists"
fi
ag_sql "$sock" "UPDATE global_variables SET variable_value = '10' WHERE variable_name = 'jemalloc-lg_prof_sample'"
ha_like "lg_prof_sample below the floor is refused, the cost explained" \
    "below the floor.*16 KiB" "$HA_ERR"

kill -TERM "$rpid"
if ha_wait_gone "$rpid" 10; then
    wait "$rpid"
    ha_is "SIGTERM stops redis cleanly (exit 0)" 0 "$?"
else
    ha_fail "SIGTERM stops redis within 10 s"
fi
ha_ok "redis's exit took the agent's socket file with it" test ! -e "$sock"
ha_is "the agent wrote nothing to redis's stderr" "" "$(cat "$HA_TMP/redis.err")"
ha_unlike "the agent wrote nothing to redis's stdout" "heapadmin|agent" \
    "$(cat "$HA_TMP/redis.out")"

# --- redis --daemonize yes: follow the surviving child -----------------------

port=$(ha_free_port)
ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" \
    redis-server --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
    --daemonize yes --pidfile "$HA_TMP/redis-d.pid" \
    --logfile "$HA_TMP/redis-d.log" >"$HA_TMP/redis-d.out" 2>&1
ha_is "redis --daemonize yes starts" 0 "$?"
for _ in $(seq 50); do [ -s "$HA_TMP/redis-d.pid" ] && break; sleep 0.1; done
dpid=$(cat "$HA_TMP/redis-d.pid" 2>/dev/null)
[ -n "$dpid" ] && HA_PIDS+=("$dpid")
if ag_wait_socket "$data/redis-server.$dpid.sock" 15; then
    ha_pass "the daemonized redis ($dpid) serves on its own socket"
else
    ha_file_tail "$HA_TMP/agent.log"
    ha_fail "the daemonized redis ($dpid) serves on its own socket"
fi
ag_sql "$data/redis-server.$dpid.sock" "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
ha_like "... and reads the daemon's heap" "^0:[1-9][0-9]+$" "$HA_RC:$HA_OUT"
n_socks=$(find "$data" -name 'redis-server.*.sock' | wc -l)
ha_is "the exited parent left no socket behind" 1 "$n_socks"

# --- BGSAVE under load: the child never serves ---------------------------------

timeout 60 redis-cli -p "$port" debug populate 300000 >/dev/null
timeout 120 redis-benchmark -p "$port" -n 30000 -q -t set -d 100 -r 10000 \
    >/dev/null 2>&1 &
bench=$!
timeout 5 redis-cli -p "$port" bgsave >"$HA_TMP/bgsave.out" 2>&1
ha_like "BGSAVE starts under load" "Background saving started" \
    "$(cat "$HA_TMP/bgsave.out")"
sleep 1.5
n_socks=$(find "$data" -name 'redis-server.*.sock' | wc -l)
ha_is "the BGSAVE child opened no endpoint of its own" 1 "$n_socks"
wait "$bench"
ha_is "redis-benchmark during BGSAVE completes" 0 "$?"
for _ in $(seq 100); do
    timeout 5 redis-cli -p "$port" info persistence | grep -q 'rdb_bgsave_in_progress:0' && break
    sleep 0.1
done
ha_like "BGSAVE succeeded" "rdb_last_bgsave_status:ok" \
    "$(timeout 5 redis-cli -p "$port" info persistence)"
ag_sql "$data/redis-server.$dpid.sock" "SELECT 1"
ha_is "the parent still serves the admin port after BGSAVE" "0:1" "$HA_RC:$HA_OUT"
kill -TERM "$dpid"
ha_ok "SIGTERM stops the daemonized redis" ha_wait_gone "$dpid" 10

# --- HEAPADMIN_CONF: the config's endpoint and credentials -----------------

hport=$(ha_free_port)
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables =
{
    admin_credentials = "ops:s3cret"
    mysql_ifaces = "$HA_SOCKDIR/cfg.%n.sock"
    http_ifaces = "127.0.0.1:$hport"
}
EOF
port=$(ha_free_port)
ag_env
env "${AG_ENV[@]}" HEAPADMIN_CONF="$HA_TMP/agent.cnf" \
    redis-server --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
    >"$HA_TMP/redis-c.out" 2>"$HA_TMP/redis-c.err" &
cpid=$!
HA_PIDS+=("$cpid")
csock=$HA_SOCKDIR/cfg.redis-server.sock
for _ in $(seq 100); do [ -S "$csock" ] && break; sleep 0.1; done
out=$(timeout 10 mariadb --no-defaults --protocol=SOCKET -S "$csock" \
    -uops -ps3cret -N -B -e "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof'" 2>&1)
ha_is "the config's mysql_ifaces (%n expanded) and credentials serve redis" \
    true "$out"
out=$(timeout 10 mariadb --no-defaults --protocol=SOCKET -S "$csock" \
    -uadmin -padmin -e "SELECT 1" 2>&1)
ha_like "... and the default credentials no longer log in" "ERROR 1045" "$out"
out=$(curl -s --max-time 10 -u ops:s3cret "http://127.0.0.1:$hport/metrics")
ha_like "the agent serves Prometheus metrics from inside redis (http_ifaces)" \
    "heapadmin_jemalloc_resident_bytes [1-9]" "$out"
code=$(curl -s --max-time 30 -o "$HA_TMP/redis.pb.gz" -w '%{http_code}' \
    -A Go-http-client/1.1 -u ops:s3cret "http://127.0.0.1:$hport/debug/pprof/heap")
ha_is "... and redis's live heap profile as pprof" "200:1f8b" \
    "$code:$(head -c 2 "$HA_TMP/redis.pb.gz" | od -An -tx1 | tr -d ' \n')"
kill -TERM "$cpid"
ha_ok "SIGTERM stops it" ha_wait_gone "$cpid" 10

ha_done
