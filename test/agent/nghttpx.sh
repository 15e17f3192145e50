#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The agent inside Debian's unmodified nghttpx, which loads libev: libev
# exports 24 of libevent's function names (event_base_new, event_add,
# ...), so an agent bound to the system's libevent would call into libev
# and break. The agent's private libevent must be immune. nghttpx is a
# master plus a worker process; with HEAPADMIN_FORK=per-process the worker,
# which holds the connections' memory, gets its own endpoint and is
# profiled under a bounded curl load; jeprof names nghttp2/nghttpx code.
# The proxy answers correctly throughout and stops cleanly on SIGTERM.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require nghttpx nghttp2-proxy
ha_require curl curl
ha_require jeprof libjemalloc-dev
ha_require mariadb mariadb-client

ha_like "nghttpx loads libev, which exports libevent's names" "libev\.so" \
    "$(ldd /usr/sbin/nghttpx)"

data=$HA_TMP/data
www=$HA_TMP/www
mkdir -p "$data"
ag_backend 20 48000
bport=$AG_BACKEND_PORT
port=$(ha_free_port)
ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" HEAPADMIN_FORK=per-process \
    nghttpx --conf=/dev/null --frontend="127.0.0.1,$port;no-tls" \
    --backend="127.0.0.1,$bport" --workers=1 \
    --errorlog-file="$HA_TMP/nghttpx.err" \
    --accesslog-file="$HA_TMP/nghttpx.access" \
    >"$HA_TMP/nghttpx.out" 2>"$HA_TMP/nghttpx.stderr" &
mpid=$!
HA_PIDS+=("$mpid")

code=
for _ in $(seq 150); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
        "http://127.0.0.1:$port/f1.txt" 2>/dev/null)
    [ "$code" = 200 ] && break
    sleep 0.1
done
ha_is "nghttpx proxies to the backend with the agent loaded" 200 "$code"

wpid=$(ps -o pid= --ppid "$mpid" | head -1 | tr -d ' ')
ha_like "the master spawned its worker process" "^[0-9]+$" "$wpid"
wsock=$data/nghttpx.$wpid.sock
if ag_wait_socket "$wsock" 15; then
    ha_pass "the worker ($wpid) serves on its own endpoint"
else
    ha_file_tail "$HA_TMP/agent.log"
    ha_fail "the worker ($wpid) serves on its own endpoint"
    ha_done
fi
ha_file_like "the agent runs its own libevent, not libev's look-alike" \
    "$HA_TMP/agent.log" "serving nghttpx \(pid $wpid\)"
ag_wait_socket "$data/nghttpx.$mpid.sock" 10
ha_is "the master ($mpid) serves on its own endpoint" 0 "$?"

ag_set "$wsock" jemalloc-lg_prof_sample 14
ha_is "lg_prof_sample 14 on the worker" "0:" "$HA_RC:$HA_ERR"
ag_set "$wsock" jemalloc-prof_active true
ha_is "prof_active on the worker" "0:" "$HA_RC:$HA_ERR"

bad=0
for r in $(seq 1 15); do
    for i in $(seq 1 20); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
            "http://127.0.0.1:$port/f$i.txt?r=$r")
        [ "$code" = 200 ] || bad=$((bad + 1))
    done
done
ha_is "300 requests through nghttpx, all 200" 0 "$bad"
body=$(curl -s --max-time 5 "http://127.0.0.1:$port/f3.txt")
ha_is "nghttpx returns the backend's bytes unchanged" \
    "$(cat "$www/f3.txt")" "$body"

# A heap profile shows memory in use: hold 60 connections open with their
# responses unread, so the worker keeps their buffers while it is dumped.
python3 - "$port" >"$HA_TMP/hold.out" 2>&1 <<'EOF' &
import socket, sys, time
conns = []
for i in range(60):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /f%d.txt HTTP/1.1\r\nHost: x\r\n\r\n" % (i % 20 + 1))
    conns.append(s)
print("holding", len(conns), flush=True)
time.sleep(8)
EOF
hold=$!
HA_PIDS+=("$hold")
for _ in $(seq 50); do grep -q holding "$HA_TMP/hold.out" && break; sleep 0.1; done
sleep 1
dump=$(ag_dump "$wsock")
kill "$hold" 2>/dev/null
ha_like "dump_now on the worker names its dump" \
    "^$data/proxysql\.$wpid\.[0-9]+\.m[0-9]+\.heap$" "$dump"
if [ -n "$dump" ] && [ -f "$dump" ]; then
    timeout 120 jeprof --text /usr/sbin/nghttpx "$dump" \
        >"$HA_TMP/jeprof.out" 2>/dev/null
    ha_file_like "jeprof finds the worker's samples" "$HA_TMP/jeprof.out" \
        "^Total: [0-9.]+ [kM]?B"
    ha_file_like "jeprof names nghttpx's and nghttp2's code" \
        "$HA_TMP/jeprof.out" "(shrpx|nghttp2_|ev_run|ev_invoke)"
else
    ha_fail "the worker's dump exists"
fi

ha_unlike "the agent wrote nothing to nghttpx's stdout and stderr" \
    "heapadmin|agent\[" "$(cat "$HA_TMP/nghttpx.out" "$HA_TMP/nghttpx.stderr")"

kill -TERM "$mpid"
if ha_wait_gone "$mpid" 15; then
    wait "$mpid"
    status=$?
    # nghttpx's own answer to SIGTERM, without the agent, for comparison
    # (it dies of the signal: 143; SIGQUIT is its graceful stop).
    rport=$(ha_free_port)
    nghttpx --conf=/dev/null --frontend="127.0.0.1,$rport;no-tls" \
        --backend="127.0.0.1,$bport" --workers=1 \
        --errorlog-file="$HA_TMP/ref.err" --accesslog-file=/dev/null \
        >/dev/null 2>&1 &
    ref=$!
    HA_PIDS+=("$ref")
    for _ in $(seq 50); do
        curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$rport/f1.txt" && break
        sleep 0.1
    done
    kill -TERM "$ref"
    wait "$ref"
    ha_is "SIGTERM stops nghttpx as it does without the agent (status $status)" \
        "$?" "$status"
else
    ha_fail "SIGTERM stops nghttpx within 15 s"
fi
ha_ok "the worker is gone too" ha_wait_gone "$wpid" 5

# The graceful stop, SIGQUIT, with the agent: exit 0.
port=$(ha_free_port)
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" HEAPADMIN_FORK=per-process \
    nghttpx --conf=/dev/null --frontend="127.0.0.1,$port;no-tls" \
    --backend="127.0.0.1,$bport" --workers=1 \
    --errorlog-file="$HA_TMP/nghttpx2.err" --accesslog-file=/dev/null \
    >/dev/null 2>&1 &
mpid=$!
HA_PIDS+=("$mpid")
ag_wait_socket "$data/nghttpx.$mpid.sock" 15
ha_is "a second nghttpx serves the admin port" 0 "$?"
kill -QUIT "$mpid"
if ha_wait_gone "$mpid" 15; then
    wait "$mpid"
    ha_is "SIGQUIT stops nghttpx gracefully (exit 0)" 0 "$?"
else
    ha_fail "SIGQUIT stops nghttpx within 15 s"
fi

ha_done
