#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The agent inside Debian's unmodified varnishd, a two-process host: the
# manager close_range()s every descriptor at start-up and reuses fd 3 for
# its own listener (the agent's start delay keeps it out of the way), then
# forks the cache process, which holds the heap that matters, and execs
# the C compiler for the VCL (where the agent stays inert). With
# HEAPADMIN_FORK=per-process both processes get an endpoint; the cache
# process is profiled under a bounded curl load and jeprof names varnish's
# own functions. varnish keeps serving correctly throughout and stops
# cleanly on SIGTERM.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require varnishd varnish
ha_require curl curl
ha_require jeprof libjemalloc-dev
ha_require mariadb mariadb-client
ha_require cc gcc

data=$HA_TMP/data
www=$HA_TMP/www
mkdir -p "$data"
# 400 distinct objects, sampled every 256 bytes on average (jemalloc's
# own lg_prof_sample, from MALLOC_CONF): each cached object's objcore (a
# few hundred bytes, allocated on the client's request path) must show
# up in the dump, and at the daemon's usual 2^19 or even the guard's 2^14
# whether one is sampled is luck.
ag_backend 400 1500
bport=$AG_BACKEND_PORT
vport=$(ha_free_port)
ag_env
AG_ENV+=(MALLOC_CONF=prof:true,prof_active:false,lg_prof_sample:8)
# -j none: varnish's default jail would run the cache process as another
# user, who would need the datadir too (docs/agent.md's deployment notes).
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" HEAPADMIN_FORK=per-process \
    varnishd -F -j none -n "$HA_TMP/varnish" -a "127.0.0.1:$vport" \
    -b "127.0.0.1:$bport" -s malloc,32m \
    >"$HA_TMP/varnish.out" 2>"$HA_TMP/varnish.err" &
vpid=$!
HA_PIDS+=("$vpid")

code=
for _ in $(seq 150); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
        "http://127.0.0.1:$vport/f1.txt" 2>/dev/null)
    [ "$code" = 200 ] && break
    sleep 0.1
done
ha_is "varnish serves from the backend with the agent loaded" 200 "$code"
ha_like "varnish's own listener survived its close_range() start-up" \
    "Child launched OK|Child starts" "$(cat "$HA_TMP/varnish.err")"

cpid=$(ps -o pid= --ppid "$vpid" | head -1 | tr -d ' ')
ha_like "the manager forked its cache process" "^[0-9]+$" "$cpid"
if ag_wait_socket "$data/varnishd.$cpid.sock" 15; then
    ha_pass "the cache process ($cpid) serves on its own endpoint"
else
    ha_file_tail "$HA_TMP/agent.log"
    ha_fail "the cache process ($cpid) serves on its own endpoint"
    ha_done
fi
if ag_wait_socket "$data/varnishd.$vpid.sock" 10; then
    ha_pass "the manager ($vpid) serves on its own endpoint"
else
    ha_fail "the manager ($vpid) serves on its own endpoint"
fi
csock=$data/varnishd.$cpid.sock

ag_sql "$csock" "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-lg_prof_sample'"
ha_is "the cache process samples as its MALLOC_CONF says (lg_prof_sample 8)" "0:8" "$HA_RC:$HA_OUT"
ag_set "$csock" jemalloc-prof_active true
ha_is "prof_active on the cache process" "0:" "$HA_RC:$HA_ERR"

# One curl for many URLs (a config file of url/output pairs): a code per
# line.
{
    for i in $(seq 1 400); do
        printf 'url = "http://127.0.0.1:%s/f%s.txt"\noutput = /dev/null\n' "$vport" "$i"
    done
    for r in 2 3; do
        for i in $(seq 1 40); do
            printf 'url = "http://127.0.0.1:%s/f%s.txt?r=%s"\noutput = /dev/null\n' "$vport" "$i" "$r"
        done
    done
} >"$HA_TMP/urls.curl"
codes=$(curl -s --max-time 60 -w '%{http_code}\n' -K "$HA_TMP/urls.curl")
bad=$(grep -cv '^200$' <<<"$codes")
[ "$(wc -l <<<"$codes")" -eq 480 ] || bad=$((bad + 1))
ha_is "480 requests through varnish (400 objects), all 200" 0 "$bad"
body=$(curl -s --max-time 5 "http://127.0.0.1:$vport/f7.txt")
ha_is "varnish returns the backend's bytes unchanged" \
    "$(cat "$www/f7.txt")" "$body"

dump=$(ag_dump "$csock")
ha_like "dump_now on the cache process names its dump" \
    "^$data/proxysql\.$cpid\.[0-9]+\.m[0-9]+\.heap$" "$dump"
if [ -n "$dump" ] && [ -f "$dump" ]; then
    timeout 120 jeprof --text /usr/sbin/varnishd "$dump" \
        >"$HA_TMP/jeprof.out" 2>/dev/null
    ha_file_like "jeprof names varnish's object and storage code" \
        "$HA_TMP/jeprof.out" "(ObjNew|STV_NewObject|SML_allocobj|VFP_GetStorage|HSH_Lookup)"
    ha_file_like "jeprof names varnish's request path" \
        "$HA_TMP/jeprof.out" "(CNT_Request|V1F_FetchRespHdr|VRB_Cache|vbf_)"
else
    ha_fail "the cache process's dump exists"
fi

ha_unlike "the agent wrote nothing to varnish's output (the VCL compiler's included)" \
    "heapadmin|agent\[" "$(cat "$HA_TMP/varnish.out" "$HA_TMP/varnish.err")"

kill -TERM "$vpid"
if ha_wait_gone "$vpid" 15; then
    wait "$vpid"
    ha_is "SIGTERM stops varnishd cleanly (exit 0)" 0 "$?"
else
    ha_fail "SIGTERM stops varnishd within 15 s"
fi
ha_ok "the cache process is gone too" ha_wait_gone "$cpid" 5

ha_done
