#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Debian's unmodified memcached 1.6 (stripped: its own functions have no
# names, so sites are "memcached+0x<offset>"), with jemalloc preloaded
# and the agent beside it, against heaptrack 1.4 on the same workload
# (every allocation, no sampling): 20,000 SETs of 100, 1,000 and 5,000
# bytes over four connections, then GETs and DELETEs of half of them.
#   - heap_top's top site by in-use bytes (memcached's slab pages, 1 MiB
#     each, every one of them sampled) is heaptrack's top site by peak
#     bytes: the same offset in the same file, the same bytes within 2 %;
#   - heap_top's three heaviest sites in memcached itself are among
#     heaptrack's five heaviest, by offset;
#   - no frame of memcached is taken for an allocation wrapper (it
#     calls malloc itself; heap_wrappers finds nothing in it), and the
#     sites' flat bytes add up to the dump's total.
# heaptrack reports absolute addresses: the test reads where memcached
# was mapped in the traced process (/proc/<pid>/maps) to turn them into
# the offsets heap_top names.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require memcached memcached
ha_require heaptrack heaptrack
ha_require heaptrack_print heaptrack

JEMALLOC=$(ls /usr/lib/*-linux-gnu/libjemalloc.so.2 2>/dev/null | head -1)
[ -n "$JEMALLOC" ] || ha_bail "no libjemalloc.so.2 (libjemalloc2)"

cat >"$HA_TMP/load.py" <<'EOF'
import random, socket, sys

port, n = int(sys.argv[1]), int(sys.argv[2])
random.seed(7)
conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]


def ask(s, data, end):
    s.sendall(data)
    buf = b""
    while not buf.endswith(end):
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("memcached closed the connection")
        buf += chunk
    return buf


for i in range(n):
    size = random.choice([100, 1000, 5000])
    r = ask(conns[i % 4], b"set k%d 0 0 %d\r\n%s\r\n" % (i, size, b"x" * size),
            b"\r\n")
    if r != b"STORED\r\n":
        sys.exit("set k%d: %r" % (i, r))
for i in range(0, n, 2):
    ask(conns[i % 4], b"get k%d\r\n" % i, b"END\r\n")
for i in range(0, n, 2):
    ask(conns[i % 4], b"delete k%d\r\n" % i, b"\r\n")
print("done")
EOF
N=20000

# wait_port PORT: memcached answers on PORT.
wait_port() {
    for _ in $(seq 100); do
        timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# --- memcached under the agent -----------------------------------------------

data=$HA_TMP/data
mkdir -p "$data"
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; }
EOF
port=$(ha_free_port)
env LD_PRELOAD="$JEMALLOC $HA_AGENT" HEAPADMIN_CONF="$HA_TMP/agent.cnf" \
    MALLOC_CONF=prof:true,prof_active:true,prof_accum:true,lg_prof_sample:12 \
    HEAPADMIN_START_DELAY_MS=0 HEAPADMIN_LOG="$HA_TMP/agent.log" \
    memcached -l 127.0.0.1 -p "$port" -U 0 -u root -m 256 \
    >"$HA_TMP/memcached.out" 2>&1 &
mpid=$!
HA_PIDS+=("$mpid")
sock=$data/memcached.$mpid.sock
ag_wait_socket "$sock" 15 || {
    ha_file_tail "$HA_TMP/agent.log"
    ha_bail "the agent serves memcached on $sock"
}
wait_port "$port" || ha_bail "memcached listens on $port"
ha_is "the workload runs under the agent" done \
    "$(timeout 120 python3 "$HA_TMP/load.py" "$port" "$N" 2>&1)"
dump=$(basename "$(ag_dump "$sock")")
ha_like "dump_now writes a dump" '^proxysql\.[0-9]+\.[0-9]+\.m[0-9]+\.heap$' "$dump"
ag_sql "$sock" "SELECT function, flat_bytes FROM heap_top('$dump') WHERE function LIKE 'memcached+0x%' ORDER BY flat_bytes DESC LIMIT 3"
ours=$HA_OUT
ha_diag "heap_top's heaviest sites in memcached:" "$ours"
ha_like "heap_top names memcached's own (stripped) sites by offset" \
    $'^memcached\\+0x[0-9a-f]+\t[0-9]+' "$ours"
ag_sql "$sock" "SELECT count(*) FROM heap_wrappers('$dump') WHERE wrapper = 1 AND stacks > 0 AND module LIKE '%/memcached'"
ha_is "no frame of memcached is taken for an allocation wrapper" "0:0" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT abs(sum(flat_bytes) - (SELECT bytes FROM stats_heap_dumps WHERE file_name = '$dump')) <= count(*) FROM heap_top('$dump')"
ha_is "the sites' flat bytes add up to the dump's total" "0:1" "$HA_RC:$HA_OUT"
kill -TERM "$mpid"
ha_wait_gone "$mpid" 10

# --- the same workload under heaptrack ----------------------------------------

port=$(ha_free_port)
heaptrack -o "$HA_TMP/ht" memcached -l 127.0.0.1 -p "$port" -U 0 -u root -m 256 \
    >"$HA_TMP/heaptrack.out" 2>&1 &
HA_PIDS+=("$!")
wait_port "$port" || ha_bail "memcached under heaptrack listens on $port"
tpid=$(pgrep -n -f "^memcached -l 127.0.0.1 -p $port ")
base=$(awk '$6 == "/usr/bin/memcached" { split($1, a, "-"); print a[1]; exit }' \
    "/proc/$tpid/maps")
ha_like "memcached under heaptrack is mapped ($tpid at 0x$base)" '^[0-9a-f]+$' "$base"
ha_is "the workload runs under heaptrack" done \
    "$(timeout 120 python3 "$HA_TMP/load.py" "$port" "$N" 2>&1)"
kill -TERM "$tpid"
for _ in $(seq 100); do
    ls "$HA_TMP"/ht*.zst >/dev/null 2>&1 && ! kill -0 "$tpid" 2>/dev/null && break
    sleep 0.1
done
sleep 1
trace=$(ls "$HA_TMP"/ht*.zst 2>/dev/null | head -1)
[ -n "$trace" ] || ha_bail "heaptrack wrote no trace: $(tail -3 "$HA_TMP/heaptrack.out")"
heaptrack_print -f "$trace" --flamegraph-cost-type peak -F "$HA_TMP/ht.stacks" \
    -p 0 -a 0 -T 0 -l 0 >/dev/null 2>&1
# Each stack's peak bytes to its site, the last frame that is not the
# allocator's, as an offset into memcached when it is an address there.
theirs=$(awk -v base="$base" '
    function hex(s,   i, v, c) { v = 0; s = tolower(s)
        for (i = 3; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
        return v }
    { c = $NF; $NF = ""; sub(/;? *$/, ""); k = split($0, f, ";")
      while (k > 0 && f[k] ~ /^(malloc|calloc|realloc|posix_memalign|aligned_alloc)/) k--
      if (k > 0) peak[f[k]] += c }
    END { b = hex("0x" base)
          for (s in peak) {
              o = s
              if (s ~ /^0x[0-9a-f]+$/ && hex(s) >= b && hex(s) - b < 16777216)
                  o = sprintf("memcached+0x%x", hex(s) - b)
              print peak[s] "\t" o } }' "$HA_TMP/ht.stacks" | sort -rn | head -5)
ha_diag "heaptrack's heaviest sites at peak:" "$theirs"

# near OFFSET-NAME LIST: OFFSET-NAME is within 16 bytes of a name in LIST
# (heaptrack reports return addresses, heap_top the call's).
near() {
    awk -v want="$1" '
        function hex(s,   i, v) { v = 0; s = tolower(s)
            for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            return v }
        BEGIN { sub(/^memcached\+0x/, "", want); w = hex(want) }
        $0 ~ /^memcached\+0x/ { o = $0; sub(/^memcached\+0x/, "", o)
            d = hex(o) - w; if (d < 0) d = -d; if (d <= 16) found = 1 }
        END { exit !found }'
}
top_ours=$(head -1 <<<"$ours" | cut -f1)
top_bytes=$(head -1 <<<"$ours" | cut -f2)
top_theirs=$(head -1 <<<"$theirs" | cut -f2)
top_tbytes=$(head -1 <<<"$theirs" | cut -f1)
ha_ok "the top site is heaptrack's at peak ($top_ours, $top_theirs)" \
    near "$top_ours" <<<"$top_theirs"
ha_ok "... with the same bytes within 2 % ($top_bytes, heaptrack $top_tbytes)" \
    awk -v a="$top_bytes" -v b="$top_tbytes" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 0.02 * b) }'
missing=
while IFS=$'\t' read -r f _; do
    near "$f" <<<"$(cut -f2 <<<"$theirs")" || missing="$missing $f"
done <<<"$ours"
ha_is "heap_top's three heaviest memcached sites are among heaptrack's five" "" "$missing"

ha_done
