#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Allocation sites past allocation wrappers (prof/wrappers.h), on Debian's
# unmodified redis-server 7.0, which allocates through its zmalloc
# wrappers, and nginx 1.22, which allocates through ngx_alloc and its
# pools:
#   - redis under the agent and redis-benchmark (set, get, lpush, hset):
#     heap_top's top allocators by alloc_bytes and by flat bytes are
#     redis's functions (lpInsert first, through zrealloc_usable), no z*
#     wrapper is a site, heap_wrappers says which were skipped and why,
#     heap_stacks keeps the skipped part in its wrapper column, and the
#     same rule holds in pprof (`go tool pprof -top`, the wrapper as a
#     label) and on the flame page;
#   - jemalloc-alloc_wrappers: removing a wrapper makes it a site again
#     on the next query of the same (cached) dump, a bad value is refused
#     with what is allowed, SAVE keeps it;
#   - the same redis workload under heaptrack 1.4 (every allocation, no
#     sampling), its stacks cut past the same wrappers: its five top
#     allocation sites by calls are heap_top's five by alloc_objects, the
#     first two in the same order, each count within 20 % (sampling every
#     4 KiB: the fifth, createObject's 16-byte objects, has some 600
#     samples, a standard error near 4 %);
#   - nginx (one process) under the agent and ab: no ngx_* wrapper is a
#     site; the request and connection pools' creator (ngx_create_pool,
#     through ngx_memalign) is the top one.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require heaptrack heaptrack
ha_require heaptrack_print heaptrack
ha_require nginx nginx
ha_require ab apache2-utils
ha_require curl curl
ha_require go golang-go

# redis's zmalloc family: never a site while on the built-in list.
ZNAMES="'zmalloc','zmalloc_usable','ztrymalloc','ztrymalloc_usable','zcalloc','zcalloc_usable','zcalloc_num','ztrycalloc','ztrycalloc_usable','zrealloc','zrealloc_usable','ztryrealloc','ztryrealloc_usable','zstrdup'"
BENCH=(-n 50000 -q -t set,get,lpush,hset -d 100 -r 20000)

# --- redis under the agent ----------------------------------------------------

data=$HA_TMP/data
mkdir -p "$data"
hport=$(ha_free_port)
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; http_ifaces = "127.0.0.1:$hport"; }
EOF
port=$(ha_free_port)
env LD_PRELOAD="$HA_AGENT" HEAPADMIN_CONF="$HA_TMP/agent.cnf" \
    MALLOC_CONF=prof:true,prof_active:true,prof_accum:true,lg_prof_sample:12 \
    HEAPADMIN_START_DELAY_MS=0 HEAPADMIN_LOG="$HA_TMP/agent.log" \
    redis-server --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
    >"$HA_TMP/redis.out" 2>&1 &
rpid=$!
HA_PIDS+=("$rpid")
sock=$data/redis-server.$rpid.sock
ag_wait_socket "$sock" 15 || {
    ha_file_tail "$HA_TMP/agent.log"
    ha_bail "the agent serves redis-server on $sock"
}
timeout 120 redis-benchmark -p "$port" "${BENCH[@]}" >"$HA_TMP/bench.out" 2>&1
ha_is "redis-benchmark (set, get, lpush, hset) completes" 0 "$?"
dump=$(basename "$(ag_dump "$sock")")
ha_like "dump_now writes a dump" '^proxysql\.[0-9]+\.[0-9]+\.m[0-9]+\.heap$' "$dump"

# docs/allocation-sites.md's example.
ag_sql "$sock" "SELECT function, alloc_bytes, flat_bytes, wrapper FROM heap_top('$dump') ORDER BY alloc_bytes DESC LIMIT 5"
ha_like "the top allocator by alloc_bytes is redis's lpInsert, through zrealloc_usable (the wrapper column)" \
    $'^0:lpInsert\t[0-9]+\t[0-9]+\tzrealloc_usable\n' "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT function, why, stacks, alloc_bytes FROM heap_wrappers('$dump') WHERE wrapper = 1 LIMIT 4"
ha_is "heap_wrappers' heaviest four: redis's z* wrappers, from the built-in list" \
    "0:4 4" "$HA_RC:$(grep -cE '^z(try)?(malloc|calloc|realloc)' <<<"$HA_OUT") $(grep -c $'\tbuilt-in list\t' <<<"$HA_OUT")"
ag_sql "$sock" "SELECT group_concat(function, ' ') FROM (SELECT function FROM heap_top('$dump') ORDER BY alloc_bytes DESC LIMIT 5)"
top5=$HA_OUT
ha_unlike "the top five by alloc_bytes are redis's functions, no z* wrapper ($top5)" \
    '(^| )z(try)?(malloc|calloc|realloc|strdup)' "$top5"
ag_sql "$sock" "SELECT count(*) FROM (SELECT function FROM heap_top('$dump') ORDER BY alloc_bytes DESC LIMIT 5) WHERE function IN ('lpInsert', '_sdsnewlen', 'createEmbeddedStringObject', 'processMultibulkBuffer', 'listAddNodeHead', 'createObject', 'dictAddRaw', '_sdsMakeRoomFor', 'createClient')"
ha_is "... redis's string, list, hash and client code" "0:5" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT group_concat(function, ' ') FROM (SELECT function FROM heap_top('$dump') ORDER BY flat_bytes DESC LIMIT 3)"
ha_unlike "the top three by flat (in-use) bytes too ($HA_OUT)" \
    '(^| )z(try)?(malloc|calloc|realloc|strdup)' "$HA_OUT"
ag_sql "$sock" "SELECT count(*) FROM heap_top('$dump') WHERE function IN ($ZNAMES) AND (flat_bytes > 0 OR alloc_bytes > 0)"
ha_is "no z* wrapper is a site of any stack" "0:0" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT abs(sum(flat_bytes) - (SELECT sum(bytes) FROM heap_stacks('$dump'))) <= count(*) FROM heap_top('$dump')"
ha_is "the sites' flat bytes still add up to the dump's total" "0:1" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT function, why FROM heap_wrappers('$dump') WHERE wrapper = 1 AND stacks > 0 AND function IN ('zmalloc', 'zmalloc_usable', 'zrealloc_usable') ORDER BY function"
ha_is "heap_wrappers: zmalloc, zmalloc_usable, zrealloc_usable skipped, from the built-in list" \
    "0:zmalloc	built-in list
zmalloc_usable	built-in list
zrealloc_usable	built-in list" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT substr(stack, length(stack) - 8) || ' | ' || wrapper FROM heap_stacks('$dump') ORDER BY alloc_bytes DESC LIMIT 1"
ha_is "heap_stacks: the heaviest stack ends at lpInsert, the wrapper part beside it" \
    "0:;lpInsert | zrealloc_usable" "$HA_RC:$HA_OUT"

# pprof: flat at the site, the wrapper a sample label.
code=$(curl -s --max-time 60 -o "$HA_TMP/allocs.pb.gz" -w '%{http_code}' \
    -u admin:admin "http://127.0.0.1:$hport/debug/pprof/allocs?dump=$dump")
ha_is "the dump as pprof (/debug/pprof/allocs)" 200 "$code"
HOME=$HA_TMP timeout 60 go tool pprof -top -sample_index=alloc_space \
    "$HA_TMP/allocs.pb.gz" >"$HA_TMP/pprof.top" 2>"$HA_TMP/pprof.err"
first=$(awk '$1 ~ /^[0-9.]+[kMG]?B$/ && $2 ~ /%$/ { print $6; exit }' "$HA_TMP/pprof.top")
ha_is "go tool pprof -top: lpInsert has the most flat alloc_space" lpInsert "$first"
ha_is "... and no z* wrapper has any flat" "" \
    "$(awk '$1 ~ /^[0-9.]+[kMG]?B$/ && $1 != "0" && $6 ~ /^z(try)?(malloc|calloc|realloc)/ { print $6 }' "$HA_TMP/pprof.top")"
HOME=$HA_TMP timeout 60 go tool pprof -tags "$HA_TMP/allocs.pb.gz" \
    >"$HA_TMP/pprof.tags" 2>&1
ha_file_like "go tool pprof -tags: the skipped wrapper is a label" \
    "$HA_TMP/pprof.tags" "wrapper:.*|zrealloc_usable"

# The flame page: the leaves are sites.
curl -s --max-time 60 -u admin:admin \
    "http://127.0.0.1:$hport/heap/data.json?dump=$dump&weight=alloc" \
    >"$HA_TMP/flame.json"
ha_file_like "the flame page's top table: lpInsert through zrealloc_usable" \
    "$HA_TMP/flame.json" '"top":\[\{"f":"lpInsert","flat":[0-9]+,"cum":[0-9]+,"w":"zrealloc_usable"\}'
ha_is "... and no z* wrapper in its tree" "" \
    "$(grep -oE '"n":"z(try)?(malloc|calloc|realloc)[a-z_]*"' "$HA_TMP/flame.json" | head -3)"

# --- the operator's edits ----------------------------------------------------------

ag_set "$sock" jemalloc-alloc_wrappers "-zrealloc_usable"
ha_is "jemalloc-alloc_wrappers = '-zrealloc_usable' is taken" "0:" "$HA_RC:$HA_ERR"
ag_sql "$sock" "SELECT function FROM heap_top('$dump') ORDER BY alloc_bytes DESC LIMIT 1"
ha_is "... and the same dump, cached, is cut anew: zrealloc_usable is a site again" \
    "0:zrealloc_usable" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT wrapper, why FROM heap_wrappers('$dump') WHERE function = 'zrealloc_usable'"
ha_is "... heap_wrappers says the operator removed it" "0:0	removed by operator" \
    "$HA_RC:$HA_OUT"
ag_sql "$sock" "SAVE JEMALLOC VARIABLES TO DISK"
ag_sql "$sock" "SELECT variable_value FROM disk.global_variables WHERE variable_name = 'jemalloc-alloc_wrappers'"
ha_is "SAVE JEMALLOC VARIABLES TO DISK keeps it" "0:-zrealloc_usable" "$HA_RC:$HA_OUT"
ag_set "$sock" jemalloc-alloc_wrappers "+mywrap,,-x"
ha_like "a bad value is refused, naming the item and what is allowed" \
    "item 2 is empty; allowed: a comma-separated list of function names" "$HA_ERR"
ag_set "$sock" jemalloc-alloc_wrappers ""
ag_sql "$sock" "SELECT function FROM heap_top('$dump') ORDER BY alloc_bytes DESC LIMIT 1"
ha_is "'' puts the built-in list back" "0:lpInsert" "$HA_RC:$HA_OUT"

# The five top sites by objects, kept for heaptrack's.
ag_sql "$sock" "SELECT function, alloc_objects FROM heap_top('$dump') ORDER BY alloc_objects DESC LIMIT 5"
ours=$HA_OUT
ag_sql "$sock" "SELECT group_concat(function, '|') FROM heap_wrappers('$dump') WHERE wrapper = 1"
skip=$HA_OUT
kill -TERM "$rpid"
ha_wait_gone "$rpid" 10

# --- the same workload under heaptrack -------------------------------------------

port=$(ha_free_port)
heaptrack -o "$HA_TMP/ht" redis-server --port "$port" --save '' \
    --appendonly no --dir "$HA_TMP" >"$HA_TMP/heaptrack.out" 2>&1 &
htpid=$!
HA_PIDS+=("$htpid")
for _ in $(seq 100); do
    timeout 2 redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
timeout 120 redis-benchmark -p "$port" "${BENCH[@]}" >/dev/null 2>&1
ha_is "the workload under heaptrack completes" 0 "$?"
timeout 10 redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
wait "$htpid" 2>/dev/null
trace=$(ls "$HA_TMP"/ht*.zst 2>/dev/null | head -1)
if [ -z "$trace" ]; then
    ha_fail "heaptrack wrote no trace: $(tail -3 "$HA_TMP/heaptrack.out")"
else
    heaptrack_print -f "$trace" --flamegraph-cost-type allocations \
        -F "$HA_TMP/ht.stacks" -p 0 -a 0 -T 0 >/dev/null 2>&1
    # Each stack's calls to its site: the last frame that is not one of
    # the wrappers heap_wrappers listed, nor the allocator's.
    theirs=$(awk -v skip="$skip" '
        BEGIN { n = split(skip, w, "|"); for (i = 1; i <= n; i++) wr[w[i]] = 1 }
        { c = $NF; $NF = ""; sub(/;? *$/, ""); k = split($0, f, ";")
          while (k > 0 && (f[k] in wr || f[k] ~ /^(malloc|calloc|realloc|posix_memalign|operator new)/)) k--
          if (k > 0) calls[f[k]] += c }
        END { for (s in calls) print calls[s] "\t" s }' "$HA_TMP/ht.stacks" |
        sort -rn | head -5)
    ha_diag "heaptrack's top sites by calls:" "$theirs" "heap_top's by alloc_objects:" "$ours"
    ha_is "heaptrack's five top sites by calls are heap_top's five by alloc_objects" \
        "$(cut -f2 <<<"$theirs" | sort | tr '\n' ' ')" \
        "$(cut -f1 <<<"$ours" | sort | tr '\n' ' ')"
    ha_is "... the first two in the same order" \
        "$(cut -f2 <<<"$theirs" | head -2 | tr '\n' ' ')" \
        "$(cut -f1 <<<"$ours" | head -2 | tr '\n' ' ')"
    far=$(awk -F'\t' 'NR == FNR { ht[$2] = $1; next }
        { if (!($1 in ht) || $2 < 0.8 * ht[$1] || $2 > 1.2 * ht[$1])
              print $1 " " $2 " vs " ht[$1] }' \
        <(echo "$theirs") <(echo "$ours"))
    ha_is "... each sampled estimate within 20 % of heaptrack's count" "" "$far"
fi

# --- nginx, one process, under ab ---------------------------------------------------

ngdata=$HA_TMP/ngdata
nport=$(ha_free_port)
prefix=$HA_TMP/nginx
ag_nginx_prefix "$prefix" "$nport"
sed -i -e '/^user /d' "$prefix/conf/nginx.conf"
env LD_PRELOAD="$HA_AGENT libjemalloc.so.2" HEAPADMIN_DATADIR="$ngdata" \
    MALLOC_CONF=prof:true,prof_active:true,prof_accum:true,lg_prof_sample:12 \
    HEAPADMIN_START_DELAY_MS=0 HEAPADMIN_LOG="$HA_TMP/ngx-agent.log" \
    /usr/sbin/nginx -c "$prefix/conf/nginx.conf" \
    -g 'daemon off; master_process off;' >"$HA_TMP/nginx.out" 2>&1 &
npid=$!
HA_PIDS+=("$npid")
nsock=$ngdata/nginx.$npid.sock
ag_wait_socket "$nsock" 15 || {
    ha_file_tail "$HA_TMP/ngx-agent.log"
    ha_bail "the agent serves nginx on $nsock"
}
timeout 60 ab -q -n 3000 -c 10 "http://127.0.0.1:$nport/f3.txt" >"$HA_TMP/ab1.out" 2>&1
ha_like "ab: 3000 requests for a file, none failed" "Failed requests: +0" \
    "$(cat "$HA_TMP/ab1.out")"
timeout 60 ab -q -k -n 2000 -c 20 "http://127.0.0.1:$nport/missing" >"$HA_TMP/ab2.out" 2>&1
ha_like "ab: 2000 keep-alive 404s answered" "Complete requests: +2000" \
    "$(cat "$HA_TMP/ab2.out")"
ndump=$(basename "$(ag_dump "$nsock")")
ag_sql "$nsock" "SELECT count(*) FROM heap_top('$ndump') WHERE function IN ('ngx_alloc', 'ngx_calloc', 'ngx_memalign', 'ngx_palloc', 'ngx_pnalloc', 'ngx_pcalloc', 'ngx_pmemalign') AND (flat_bytes > 0 OR alloc_bytes > 0)"
ha_is "nginx: no ngx_* wrapper is a site" "0:0" "$HA_RC:$HA_OUT"
ag_sql "$nsock" "SELECT function || ' ' || wrapper FROM heap_top('$ndump') ORDER BY alloc_bytes DESC LIMIT 1"
ha_is "... the top one is the pools' creator, through ngx_memalign" \
    "0:ngx_create_pool ngx_memalign" "$HA_RC:$HA_OUT"
ag_sql "$nsock" "SELECT group_concat(function, ' ') FROM (SELECT function FROM heap_wrappers('$ndump') WHERE wrapper = 1 AND stacks > 0 ORDER BY function)"
ha_like "... heap_wrappers lists what it looked past" "ngx_alloc.*ngx_memalign" "$HA_OUT"
kill -TERM "$npid"
ha_wait_gone "$npid" 10

ha_done
