#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The HTTP front-end with the real tools: /metrics passes `promtool check
# metrics`, a real Prometheus server scrapes it with Basic auth and its
# query API returns what the SQL tables show; OpenMetrics on request;
# SHOW PROMETHEUS METRICS gives the same families over MySQL. Refused:
# no or wrong credentials (401), other methods (405), unknown paths
# (404), oversized headers (400), a slowloris client (cut after
# http_timeout), connections beyond http_max_connections (closed); the
# daemon keeps answering throughout.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require curl curl
ha_require promtool prometheus
ha_require prometheus prometheus
ha_require go golang-go
ha_require jeprof libjemalloc-dev
ha_needs_live_jemalloc

hport=$(ha_free_port)
cat >"$HA_TMP/http.tmpl" <<CNF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credentials = "stats:stats;monitor:S3cret-pass";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    http_ifaces = "127.0.0.1:$hport";
    http_timeout = 2;
    http_header_timeout = 2;
    http_max_connections = 4;
    http_max_per_peer = 4;
};
jemalloc_variables =
{
    prof_active = true;
    lg_prof_sample = 14;
};
CNF
ha_start -C "$HA_TMP/http.tmpl" || ha_bail "heapadmind starts with http_ifaces"
url=http://127.0.0.1:$hport
ha_file_like "the log names the HTTP listener" "$HA_LOG" "http: listening on http://127.0.0.1:$hport/"

# code URL [curl args...]: the HTTP status, headers in $HA_TMP/h, body in
# $HA_TMP/b.
code() {
    local u=$1
    shift
    curl -s --max-time 10 -D "$HA_TMP/h" -o "$HA_TMP/b" -w '%{http_code}' "$@" "$u"
}

ha_is "no credentials: 401" 401 "$(code "$url/metrics")"
ha_file_like "... with a Basic challenge" "$HA_TMP/h" '^WWW-Authenticate: Basic realm="heapadmin"'
ha_is "a wrong password: 401" 401 "$(code "$url/metrics" -u monitor:wrong)"
ha_file_like "... logged with the peer" "$HA_LOG" "http: 127.0.0.1:[0-9]+: GET /metrics refused: wrong password"
ha_is "a stats user reads /metrics" 200 "$(code "$url/metrics" -u monitor:S3cret-pass)"
ha_file_like "... as Prometheus text 0.0.4" "$HA_TMP/h" '^Content-Type: text/plain; version=0.0.4'
cp "$HA_TMP/b" "$HA_TMP/metrics.txt"
out=$(promtool check metrics <"$HA_TMP/metrics.txt" 2>&1)
ha_is "promtool check metrics finds nothing to complain about" "0:" "$?:$out"
for fam in heapadmin_jemalloc_resident_bytes heapadmin_jemalloc_allocated_bytes \
           heapadmin_jemalloc_prof_enabled heapadmin_admin_questions_total \
           'proxysql_jemalloc_bytes{type="resident"}' proxysql_jemalloc_allocated_bytes_total; do
    ha_file_like "/metrics has $fam" "$HA_TMP/metrics.txt" "^$(sed 's/[{}]/\\&/g' <<<"$fam") [0-9]"
done
ha_file_like "counters are typed as counters" "$HA_TMP/metrics.txt" '^# TYPE heapadmin_admin_questions_total counter$'

ha_is "OpenMetrics when the scraper asks" 200 \
    "$(code "$url/metrics" -u stats:stats -H 'Accept: application/openmetrics-text; version=1.0.0,text/plain;q=0.5')"
ha_file_like "... with its content type" "$HA_TMP/h" '^Content-Type: application/openmetrics-text; version=1.0.0'
ha_is "... ending with # EOF" "# EOF" "$(tail -1 "$HA_TMP/b")"
ha_file_like "... counters announced without _total" "$HA_TMP/b" '^# TYPE heapadmin_admin_questions counter$'

ha_is "unknown paths: 404" 404 "$(code "$url/nope" -u stats:stats)"
ha_is "POST: 405" 405 "$(code "$url/metrics" -u stats:stats -X POST)"
ha_file_like "... with Allow" "$HA_TMP/h" '^Allow: GET, HEAD'

# Over MySQL: ProxySQL's statement, the same families.
ha_sql "SHOW PROMETHEUS METRICS"
ha_like "SHOW PROMETHEUS METRICS returns the exposition" \
    "heapadmin_http_requests_total [1-9]" "$HA_OUT"
ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'prof.lg_sample'"
lg=$HA_OUT
if [ -n "$lg" ] && [ "$lg" != NULL ]; then
    ha_file_like "prof_sample_period_bytes is 2^prof.lg_sample ($lg)" "$HA_TMP/metrics.txt" \
        "^heapadmin_jemalloc_prof_sample_period_bytes $((1 << lg))$"
fi

# Bounds.
out=$(python3 - "$hport" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
res = []
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")   # never finished
t = time.time()
s.settimeout(10)
try:
    while s.recv(100):
        pass
except OSError:
    pass
res.append("slowloris %d" % round(time.time() - t))
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
time.sleep(0.5)
closed = 0
for x in socks:
    x.setblocking(False)
    try:
        if x.recv(10) == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
res.append("capped %d" % closed)
for x in socks:
    x.close()
time.sleep(0.3)
y = socket.create_connection(("127.0.0.1", port))
y.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
y.settimeout(5)
res.append("big " + y.recv(200).split(b"\r\n")[0].decode(errors="replace"))
print(";".join(res))
PY
)
ha_like "a client that never finishes its request is cut after http_header_timeout (2 s)" "slowloris [23];" "$out"
ha_like "6 silent connections with http_max_connections 4: the 2 oldest are evicted" "capped 2;" "$out"
ha_like "oversized headers get 400" "big HTTP/1.1 400" "$out"
ha_is "... and /metrics still answers" 200 "$(code "$url/metrics" -u stats:stats)"
ha_sql "SELECT 1"
ha_is "... and so does the MySQL port" "0:1" "$HA_RC:$HA_OUT"

# Heap profiles for pprof and jeprof.
ha_sql "CREATE TABLE w(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) INSERT INTO w SELECT randomblob(300) FROM n"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
dump=$HA_OUT
ha_is "a stats user may not take a live profile" 403 \
    "$(code "$url/debug/pprof/heap" -u monitor:S3cret-pass -A Go-http-client/1.1)"
ha_is "... but reads a dump's" 200 \
    "$(code "$url/debug/pprof/heap?dump=$dump" -u monitor:S3cret-pass -A Go-http-client/1.1)"
ha_is "... as gzip" "1f8b" "$(head -c 2 "$HA_TMP/b" | od -An -tx1 | tr -d ' \n')"
cp "$HA_TMP/b" "$HA_TMP/b.first"
code "$url/debug/pprof/heap?dump=$dump" -u monitor:S3cret-pass -A Go-http-client/1.1 >/dev/null
ha_ok "... the same bytes again (dated by the dump, kept with the cached profile)" \
    cmp -s "$HA_TMP/b" "$HA_TMP/b.first"
export GOCACHE=$HA_TMP/gocache GOPATH=$HA_TMP/gopath HOME=$HA_TMP
pp=$(timeout 120 go tool pprof -top -unit=B -sample_index=inuse_space \
    "http://monitor:S3cret-pass@127.0.0.1:$hport/debug/pprof/heap?dump=$dump" 2>&1)
ha_like "go tool pprof fetches and reads /debug/pprof/heap" "Type: inuse_space" "$pp"
ha_like "... with heapadmind's build-id" "Build ID: [0-9a-f]{40}" "$pp"
ha_sql "SELECT sum(bytes) FROM heap_stacks('$dump')"
ha_like "... its total is the SQL total ($HA_OUT B)" "of ${HA_OUT}B total" "$pp"
ha_sql "SELECT function FROM heap_top('$dump') WHERE function NOT LIKE '0x%' AND function NOT LIKE '% (inline)' LIMIT 3"
while read -r fn; do
    [ -n "$fn" ] && ha_like "... and lists heap_top's $fn" \
        " $(sed 's/[][().*^$+]/\\&/g' <<<"$fn")\$" "$(sed 's/ (inline)$//' <<<"$pp")"
done <<<"$HA_OUT"
pp=$(timeout 120 go tool pprof -top -unit=B -sample_index=inuse_space \
    "http://monitor:S3cret-pass@127.0.0.1:$hport/debug/pprof/allocs?dump=$dump&base=$dump" 2>&1)
ha_like "a dump minus itself (?base=) is empty" "of 0 total|of 0B total" "$pp"
pp=$(cd "$HA_TMP" && timeout 120 jeprof --text --show_bytes \
    "http://admin:admin@127.0.0.1:$hport" 2>/dev/null)
ha_like "jeprof --text http://host:port (its default /pprof/ paths) reads the live profile" \
    "^Total: [1-9][0-9]* B" "$pp"
ha_like "... naming heapadmind's functions (symbols from /pprof/symbol)" \
    "(heapadmin_new|ha_engine_new|ha_server_new|main)" "$pp"
# Go's convention: /debug/pprof/heap is profile.proto whoever asks; a
# file saved with curl is what go tool pprof reads.
ha_is "curl -o heap.pb.gz /debug/pprof/heap?dump= (no User-Agent games)" 200 \
    "$(curl -s -u stats:stats -o "$HA_TMP/heap.pb.gz" -w '%{http_code}' "$url/debug/pprof/heap?dump=$dump")"
pp=$(timeout 120 go tool pprof -top -unit=B -sample_index=inuse_space "$HA_TMP/heap.pb.gz" 2>&1)
ha_like "... and go tool pprof reads the file" "Type: inuse_space" "$pp"
ha_is "?debug=1 gives jemalloc's text" "heap_v2/" \
    "$(curl -s -u stats:stats "$url/debug/pprof/heap?dump=$dump&debug=1" | head -c 8)"
ha_is "/pprof/heap?dump= is the dump's text, for jeprof" "heap_v2/" \
    "$(curl -s -u stats:stats "$url/pprof/heap?dump=$dump" | head -c 8)"
curl -s -u stats:stats -o "$HA_TMP/dump.heap" "$url/pprof/heap?dump=$dump"
pp=$(cd "$HA_TMP" && timeout 120 jeprof --text --show_bytes \
    "$HA_BUILDDIR/daemon/heapadmind" "$HA_TMP/dump.heap" 2>/dev/null)
ha_like "... which jeprof reads with the binary" "^Total: [1-9][0-9]* B" "$pp"
ha_is "/pprof/cmdline: the command line, for an admin" 200 \
    "$(code "$url/pprof/cmdline" -u admin:admin)"
ha_like "... naming heapadmind" "heapadmind" "$(tr '\0' ' ' <"$HA_TMP/b")"
for p in /pprof/cmdline /debug/pprof/cmdline; do
    ha_is "$p: 403 for a stats user (arguments may carry secrets)" 403 \
        "$(code "$url$p" -u stats:stats)"
    ha_unlike "... and no byte of the command line" "heapadmind|-c |--" \
        "$(tr '\0' ' ' <"$HA_TMP/b")"
done
ha_like "... saying who may and what a stats user does instead" \
    "admin users only.*jeprof <program>" "$(cat "$HA_TMP/b")"
ha_is "/debug/pprof/symbol says symbols are served" "num_symbols: 1" \
    "$(curl -s -u stats:stats "$url/debug/pprof/symbol")"
ha_is "... and refuses what is not an address" 400 \
    "$(code "$url/debug/pprof/symbol" -u stats:stats --data-binary 'zz+0x1')"
ha_sql "DROP TABLE w"

# A real Prometheus scrapes it.
pport=$(ha_free_port)
cat >"$HA_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: heapadmin
    metrics_path: /metrics
    basic_auth:
      username: monitor
      password: S3cret-pass
    static_configs:
      - targets: ['127.0.0.1:$hport']
YML
prometheus --config.file="$HA_TMP/prometheus.yml" \
    --storage.tsdb.path="$HA_TMP/prom" --web.listen-address="127.0.0.1:$pport" \
    >"$HA_TMP/prometheus.log" 2>&1 &
HA_PIDS+=("$!")
q() {
    curl -s --max-time 5 "http://127.0.0.1:$pport/api/v1/query" \
        --data-urlencode "query=$1" |
        python3 -c 'import json,sys
d = json.load(sys.stdin)["data"]["result"]
print(d[0]["value"][1] if d else "")' 2>/dev/null
}
up=
for _ in $(seq 60); do
    up=$(q 'up{job="heapadmin"}')
    [ "$up" = 1 ] && break
    sleep 0.5
done
ha_is "Prometheus scrapes heapadmind (up = 1)" 1 "$up"
if [ -n "$lg" ] && [ "$lg" != NULL ]; then
    ha_is "... and its API returns the value SQL shows (2^$lg)" "$((1 << lg))" \
        "$(q heapadmin_jemalloc_prof_sample_period_bytes)"
fi
v=$(q 'proxysql_jemalloc_bytes{type="resident"}')
ha_like "... ProxySQL's series included (resident $v)" "^[1-9][0-9]*$" "$v"
ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'resident'"
ha_ok "... within 50% of the resident bytes SQL reads now ($v vs $HA_OUT)" \
    awk -v a="$v" -v b="$HA_OUT" 'BEGIN { exit !(a > b / 2 && a < b * 2) }'

# HTTPS with the MySQL port's certificate.
sport=$(ha_free_port)
sed -e "s|http_ifaces = \"127.0.0.1:$hport\";|http_ifaces = \"127.0.0.1:$sport\"; http_tls = true;|" \
    "$HA_TMP/http.tmpl" >"$HA_TMP/https.tmpl"
HA_DATADIR=$HA_TMP/https-data
if ha_start -C "$HA_TMP/https.tmpl"; then
    ha_file_like "http_tls: the log says https" "$HA_LOG" "http: listening on https://127.0.0.1:$sport/"
    ha_is "HTTPS serves /metrics with the TLS certificate" 200 \
        "$(code "https://127.0.0.1:$sport/metrics" -k -u stats:stats)"
    ha_like "... the datadir's certificate" "CN ?= ?heapadmin|subject:.*heapadmin" \
        "$(curl -skv -u stats:stats -o /dev/null "https://127.0.0.1:$sport/metrics" 2>&1 | grep -i 'subject')"
    ha_unlike "plain HTTP gets no page from the HTTPS port" "^200$" \
        "$(code "http://127.0.0.1:$sport/metrics" -u stats:stats)"
    ha_is "... and the HTTPS port keeps answering" 200 \
        "$(code "https://127.0.0.1:$sport/metrics" -k -u stats:stats)"
else
    ha_fail "heapadmind starts with http_tls = true"
fi

ha_done
