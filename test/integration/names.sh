#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Names on stripped binaries, on the real daemon. A test host and its
# library (test/data/names/) are built with -g, their DWARF split off
# (objcopy --only-keep-debug) and the binaries stripped, as a
# distribution ships them; the host dumps its heap into the datadir.
#   - Without debug info: every unnamed row is <module>+0x<offset>, never
#     an absolute address nor a neighbour's name, and eu-addr2line given
#     that module, offset and the .debug file names the function heap_top
#     names once the debug info is there; heap_modules says 'dynsym' and
#     where the debug file would be.
#   - With the .debug files under a configured debug root: names, file and
#     line; rows of equal bytes put a named function before an unnamed one.
#   - From a real debuginfod server on loopback (Debian's debuginfod
#     indexing the .debug files): the same names, heap_modules says
#     'debuginfod'. Behind a proxy that answers after the query's
#     timeout: the download goes on, and a later query has the names.
#   - With the server stopped, or one that never answers: heap_modules
#     says so, once per module, and no query waits longer than
#     debuginfod_timeout_ms (compared with a query without debuginfod
#     timed in the same run).

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-300}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require cc gcc
ha_require objcopy binutils
ha_require strip binutils
ha_require eu-addr2line elfutils
ha_require eu-readelf elfutils
ha_require debuginfod debuginfod
ha_require curl curl
ha_require python3 python3
# The servers come from the config alone.
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE

fix=$HA_TMP/fix
mkdir -p "$fix/debug" "$fix/root" && chmod 700 "$fix"

# ms since the epoch
now_ms() { date +%s%3N; }

# build_id FILE
build_id() { eu-readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *//p' | head -1; }

# --- The fixture: built -g, DWARF split off, stripped ------------------------
if ! cc -O0 -g -fno-toplevel-reorder -fno-omit-frame-pointer -fPIC -shared \
        -Wl,--build-id -o "$fix/libnames.so" \
        "$HA_SRCDIR/test/data/names/nameslib.c" >"$HA_TMP/cc.log" 2>&1 ||
    ! cc -O0 -g -fno-omit-frame-pointer -Wl,--build-id -o "$fix/nameshost" \
        "$HA_SRCDIR/test/data/names/nameshost.c" -L"$fix" -lnames \
        -Wl,-rpath,"$fix" -ljemalloc >>"$HA_TMP/cc.log" 2>&1; then
    ha_file_tail "$HA_TMP/cc.log"
    ha_bail "the test host and its library build"
fi
for f in libnames.so nameshost; do
    bid=$(build_id "$fix/$f")
    [ -n "$bid" ] || ha_bail "$f has a GNU build-id"
    objcopy --only-keep-debug "$fix/$f" "$fix/debug/$f.debug" &&
        strip --strip-all "$fix/$f" &&
        mkdir -p "$fix/root/.build-id/${bid:0:2}" &&
        cp "$fix/debug/$f.debug" "$fix/root/.build-id/${bid:0:2}/${bid:2}.debug" ||
        ha_bail "$f: debug info split off, binary stripped"
done
lib_bid=$(build_id "$fix/libnames.so")
host_bid=$(build_id "$fix/nameshost")
ha_ok "the stripped library keeps no .symtab" \
    bash -c "! eu-readelf -S '$fix/libnames.so' | grep -q '\.symtab'"

datadir=$HA_TMP/data
mkdir -m 700 "$datadir"
HA_DATADIR=$datadir
if ! MALLOC_CONF=prof:true,lg_prof_sample:0 "$fix/nameshost" "$datadir/names.1.0.m0.heap" \
        >"$HA_TMP/host.log" 2>&1; then
    ha_file_tail "$HA_TMP/host.log"
    ha_bail "the host dumps its heap"
fi
dump=names.1.0.m0.heap

# --- 1. No debug info ----------------------------------------------------------
HA_JEMALLOC=''
ha_start || ha_bail "heapadmind starts"
t0=$(now_ms)
ha_sql "SELECT count(*) FROM heap_top('$dump')"
baseline=$(($(now_ms) - t0))
ha_like "heap_top reads the stripped host's dump" "^0:[1-9][0-9]*$" "$HA_RC:$HA_OUT"
ha_diag "a cold query without debuginfod took $baseline ms"

ha_sql "SELECT count(*) FROM heap_top('$dump') WHERE function LIKE '0x%'"
ha_is "no row is an absolute address" "0:0" "$HA_RC:$HA_OUT"
ha_sql "SELECT function, module, flat_bytes FROM heap_top('$dump') WHERE module IN ('$fix/nameshost', '$fix/libnames.so') AND flat_bytes > 0"
unnamed_rows=$HA_OUT
ha_is "the five allocation sites are rows of their modules" \
    "0:5" "$HA_RC:$(grep -c . <<<"$unnamed_rows")"
bad=$(awk -F'\t' '{ n = $2; sub(/.*\//, "", n)
    if (index($1, n "+0x") != 1 || substr($1, length(n) + 4) !~ /^[0-9a-f]+$/) print }' \
    <<<"$unnamed_rows")
ha_is "each is <module basename>+0x<offset>" "" "$bad"
ha_sql "SELECT count(*) FROM heap_top('$dump') WHERE function IN ('names_lib_alloc', 'names_label_alloc') AND flat_bytes > 0"
ha_is "none is named after the exported function below it" "0:0" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) FROM heap_top('$dump') WHERE function = 'names_lib_alloc' AND cum_bytes > 0"
ha_is "... which keeps its own .dynsym name where it is the code" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT names_from, build_id, frames > named_frames, bytes > 0 FROM heap_modules('$dump') WHERE path = '$fix/libnames.so'"
ha_is "heap_modules: the library's names come from .dynsym alone" \
    "0:dynsym	$lib_bid	1	1" "$HA_RC:$HA_OUT"
ha_sql "SELECT detail FROM heap_modules('$dump') WHERE path = '$fix/libnames.so'"
ha_like "... and the detail says which debug file would name it" \
    "/usr/lib/debug/\.build-id/${lib_bid:0:2}/${lib_bid:2}\.debug .*debuginfod \(off\)" "$HA_OUT"
ha_sql "SELECT count(*) FROM heap_modules('$dump') WHERE path LIKE '%libjemalloc%' AND frames > 0"
ha_is "the allocator's module has its row too" "0:1" "$HA_RC:$HA_OUT"
HA_USER=stats HA_PASS=stats
ha_sql "SELECT count(*) > 0 FROM heap_modules('$dump')"
ha_is "stats users read heap_modules" "0:1" "$HA_RC:$HA_OUT"
HA_USER=admin HA_PASS=admin
ha_sql_err "heap_modules without a dump says how to call it" \
    "SELECT * FROM heap_modules" "heap_modules needs a dump"
ha_stop || ha_fail "the daemon stops"

# --- 2. A debug root ---------------------------------------------------------
HA_JEMALLOC="debug_root = \"$fix/root\";"
ha_start || ha_bail "heapadmind starts with a debug root"
ha_sql "SELECT function, flat_bytes FROM heap_top('$dump') WHERE flat_bytes > 0 AND module IN ('$fix/nameshost', '$fix/libnames.so') ORDER BY function"
named=$HA_OUT
ha_like "the debug root names the host's and the library's functions" \
    "hidden_fill	655360.*hidden_grow	491520.*host_large	409600.*host_small	409600" \
    "$(tr '\n' ' ' <<<"$named")"
ha_sql "SELECT function FROM heap_top('$dump') WHERE flat_bytes = 655360"
ha_like "equal bytes: the named function ranks before the unnamed code" \
    "^hidden_fill
libnames\.so\+0x[0-9a-f]+$" "$HA_OUT"
ha_sql "SELECT count(*) FROM heap_profile('$dump') WHERE function = 'hidden_grow' AND depth = 0 AND file LIKE '%/nameslib.c' AND line > 0 AND module = '$fix/libnames.so'"
ha_like "heap_profile gives its file and line" "^0:[1-9][0-9]*$" "$HA_RC:$HA_OUT"
ha_sql "SELECT names_from, detail LIKE '%$fix/root/.build-id/%' FROM heap_modules('$dump') WHERE path IN ('$fix/nameshost', '$fix/libnames.so')"
ha_is "heap_modules: DWARF from the debug root" "0:dwarf	1
dwarf	1" "$HA_RC:$HA_OUT"
ha_sql "SELECT function FROM heap_top('$dump')"
names_with_debug=$HA_OUT

# eu-addr2line, given the module, the offset and the debug file, names
# what heap_top names with the debug info (code it cannot name for
# certain, behind the sizeless label, stays unnamed in both).
while IFS=$'\t' read -r fn module _; do
    [ -n "$fn" ] || continue
    off=${fn##*+}
    got=$(eu-addr2line --debuginfo-path="$fix/root" -e "$module" -f "$off" | head -1)
    if grep -qxF "$fn" <<<"$names_with_debug"; then
        ha_pass "$fn stays unnamed with debug info too (eu-addr2line: $got)"
    else
        ha_ok "eu-addr2line -e ${module##*/} $off names $got, which heap_top names with debug info" \
            grep -qxF "$got" <<<"$names_with_debug"
    fi
done <<<"$unnamed_rows"
ha_stop || ha_fail "the daemon stops"

# --- 3. A real debuginfod on loopback ---------------------------------------
# Another test may take the port between the probe and debuginfod's bind:
# a start that says so gets a new port.
ready=0
for _ in 1 2 3 4 5; do
    dport=$(ha_free_port) || ha_bail "a port for debuginfod"
    debuginfod -F -p "$dport" -d "$HA_TMP/debuginfod.sqlite" -t 1 "$fix/debug" \
        >"$HA_TMP/debuginfod.log" 2>&1 &
    dpid=$!
    HA_PIDS+=("$dpid")
    for _ in $(seq 1 300); do
        if curl -sf -o /dev/null "http://127.0.0.1:$dport/buildid/$lib_bid/debuginfo" &&
            curl -sf -o /dev/null "http://127.0.0.1:$dport/buildid/$host_bid/debuginfo"; then
            ready=1
            break
        fi
        ha_alive "$dpid" || break
        ha_port_taken "$HA_TMP/debuginfod.log" && break
        sleep 0.1
    done
    [ $ready = 1 ] && break
    ha_port_taken "$HA_TMP/debuginfod.log" || break
    kill "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
    ha_diag "debuginfod's port $dport was taken; retrying with another"
done
if [ $ready != 1 ]; then
    ha_file_tail "$HA_TMP/debuginfod.log"
    ha_bail "debuginfod serves the .debug files by build-id"
fi

HA_JEMALLOC="debuginfod = true; debuginfod_urls = \"http://127.0.0.1:$dport\"; debuginfod_timeout_ms = 20000;"
HA_ENV=("DEBUGINFOD_CACHE_PATH=$HA_TMP/cache1")
ha_start || ha_bail "heapadmind starts with debuginfod"
ha_sql "SELECT function FROM heap_top('$dump') WHERE flat_bytes > 0 AND module IN ('$fix/nameshost', '$fix/libnames.so') AND function NOT LIKE '%+0x%' ORDER BY function"
ha_is "debuginfod's debug files name the stripped host's functions" \
    "0:hidden_fill
hidden_grow
host_large
host_small" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) FROM heap_profile('$dump') WHERE function = 'host_small' AND depth = 0 AND file LIKE '%/nameshost.c' AND line > 0"
ha_like "heap_profile gives file and line from them" "^0:[1-9][0-9]*$" "$HA_RC:$HA_OUT"
ha_sql "SELECT names_from, detail LIKE '%$HA_TMP/cache1/%' FROM heap_modules('$dump') WHERE path IN ('$fix/nameshost', '$fix/libnames.so')"
ha_is "heap_modules: DWARF from debuginfod, in the client's cache" \
    "0:debuginfod	1
debuginfod	1" "$HA_RC:$HA_OUT"
ha_file_like "the log says which server is asked" "$HA_LOG" \
    "missing debug info is asked of debuginfod at http://127\.0\.0\.1:$dport"
ha_stop || ha_fail "the daemon stops"

# --- 3b. A slow server: the answer comes after the query gave up --------------
# A proxy that holds each request 3 s before passing it to debuginfod: the
# first query waits its 1 s and names nothing; the download goes on, and
# a later query reads the dump again with it (the module reopened).
pport=$(ha_free_port) || ha_bail "a port for a slow proxy"
python3 -c '
import http.server, socketserver, sys, time, urllib.request, urllib.error
up = "http://127.0.0.1:%s" % sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(3)
        try:
            r = urllib.request.urlopen(up + self.path, timeout=30)
            body, code = r.read(), r.status
        except urllib.error.HTTPError as e:
            body, code = b"", e.code
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$pport" "$dport" >"$HA_TMP/proxy.log" 2>&1 &
ppid=$!
HA_PIDS+=("$ppid")
for _ in $(seq 1 50); do
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$pport" 2>/dev/null && break
    sleep 0.1
done
HA_JEMALLOC="debuginfod = true; debuginfod_urls = \"http://127.0.0.1:$pport\"; debuginfod_timeout_ms = 1000;"
HA_ENV=("DEBUGINFOD_CACHE_PATH=$HA_TMP/cache4")
ha_start || ha_bail "heapadmind starts with a slow debuginfod"
ha_sql "SELECT names_from, detail FROM heap_modules('$dump') WHERE path = '$fix/libnames.so'"
ha_like "the first query gives up waiting after 1 s" \
    "^0:dynsym	.*no answer within 1000 ms; still fetching" "$HA_RC:$HA_OUT"
got=
for _ in $(seq 1 100); do
    ha_sql "SELECT names_from FROM heap_modules('$dump') WHERE path = '$fix/libnames.so'"
    got=$HA_OUT
    [ "$got" = debuginfod ] && break
    sleep 0.2
done
ha_is "a later query has the debug info the download brought" "debuginfod" "$got"
ha_sql "SELECT count(*) FROM heap_top('$dump') WHERE function IN ('hidden_grow', 'hidden_fill') AND flat_bytes > 0"
ha_is "... and heap_top names the library's functions" "0:2" "$HA_RC:$HA_OUT"
ha_stop || ha_fail "the daemon stops"
kill "$ppid" 2>/dev/null
ha_forget "$ppid"

# --- 4. The server stopped -----------------------------------------------------
kill -TERM "$dpid" 2>/dev/null
ha_wait_gone "$dpid" 5 || kill -KILL "$dpid" 2>/dev/null
ha_forget "$dpid"
HA_JEMALLOC="debuginfod = true; debuginfod_urls = \"http://127.0.0.1:$dport\"; debuginfod_timeout_ms = 3000;"
HA_ENV=("DEBUGINFOD_CACHE_PATH=$HA_TMP/cache2")
ha_start || ha_bail "heapadmind starts with debuginfod down"
t0=$(now_ms)
ha_sql "SELECT names_from, detail FROM heap_modules('$dump') WHERE path = '$fix/libnames.so'"
took=$(($(now_ms) - t0))
ha_like "heap_modules says the server could not be reached" \
    "^0:dynsym	.*debuginfod: Connection refused \(http://127\.0\.0\.1:$dport\)" \
    "$HA_RC:$HA_OUT"
ha_ok "... and the query did not wait past the timeout ($took ms, timeout 3000, baseline $baseline)" \
    test "$took" -le $((3000 + 2 * baseline + 250))
ha_sql "SELECT count(*) FROM heap_top('$dump') WHERE module = '$fix/libnames.so' AND function LIKE 'libnames.so+0x%'"
ha_like "its frames stay <module>+0x<offset>" "^0:[1-9][0-9]*$" "$HA_RC:$HA_OUT"
ha_stop || ha_fail "the daemon stops"

# --- 5. A server that never answers -----------------------------------------
bport=$(ha_free_port) || ha_bail "a port for a silent server"
python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
held = []
while True:
    c, _ = s.accept()
    held.append(c)   # read nothing, answer nothing
' "$bport" >"$HA_TMP/silent.log" 2>&1 &
spid=$!
HA_PIDS+=("$spid")
for _ in $(seq 1 50); do
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$bport" 2>/dev/null && break
    sleep 0.1
done
HA_JEMALLOC="debuginfod = true; debuginfod_urls = \"http://127.0.0.1:$bport\"; debuginfod_timeout_ms = 1500;"
HA_ENV=("DEBUGINFOD_CACHE_PATH=$HA_TMP/cache3")
ha_start || ha_bail "heapadmind starts with a silent debuginfod"
t0=$(now_ms)
ha_sql "SELECT names_from, detail FROM heap_modules('$dump') WHERE path = '$fix/libnames.so'"
took=$(($(now_ms) - t0))
ha_like "heap_modules says no answer came in time" \
    "^0:dynsym	.*debuginfod: no answer within 1500 ms; still fetching" "$HA_RC:$HA_OUT"
ha_ok "the query waited no longer than the timeout ($took ms, timeout 1500, baseline $baseline)" \
    test "$took" -le $((1500 + 3 * baseline + 500))
ha_ok "... but about that long: the fetch was waited for" test "$took" -ge 1400
t0=$(now_ms)
ha_sql "SELECT count(*) FROM heap_modules('$dump')"
took=$(($(now_ms) - t0))
ha_ok "a second query does not wait again ($took ms)" test "$took" -le $((2 * baseline + 250))
ha_ok "SIGTERM stops the daemon while a fetch hangs" ha_stop 5
ha_is "... cleanly" "0" "$HA_EXIT"

# --- 6. SIGTERM under an HTTP request that waits for the fetch ---------------
# Its client is told why no profile comes (503, as a MySQL client gets
# ERR 1053), not handed an empty reply.
hport=$(ha_free_port) || ha_bail "a port for HTTP"
HA_HTTP_PORT=$hport
HA_JEMALLOC="debuginfod = true; debuginfod_urls = \"http://127.0.0.1:$bport\"; debuginfod_timeout_ms = 30000;"
# A cache of its own: 3b's downloads in cache4 would answer at once.
HA_ENV=("DEBUGINFOD_CACHE_PATH=$HA_TMP/cache5")
ha_start || ha_bail "heapadmind starts with HTTP and a silent debuginfod"
curl -s -o "$HA_TMP/pprof.out" -w '%{http_code}' --max-time 60 -u admin:admin \
    "http://127.0.0.1:$hport/debug/pprof/heap?dump=$dump" >"$HA_TMP/pprof.code" &
cpid=$!
ha_sql_wait 1 "SELECT count(*) FROM stats_admin_sessions WHERE id <> CONNECTION_ID() AND info LIKE 'GET /debug/pprof/heap%'"
ha_is "an HTTP request for the dump's profile waits for the fetch" 1 "$HA_OUT"
ha_ok "SIGTERM stops the daemon under it" ha_stop 5
wait "$cpid"
ha_is "... and its client gets 503, not an empty reply" 503 "$(cat "$HA_TMP/pprof.code")"
ha_file_like "... saying why" "$HA_TMP/pprof.out" "^heapadmin is stopping"
kill "$spid" 2>/dev/null

ha_done
