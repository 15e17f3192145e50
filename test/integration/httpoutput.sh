#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# HTTP's output budgets, tried as clients that stop reading: 60 stats
# clients ask for a 60 MB dump's text (/pprof/heap?dump=, jeprof's path)
# and never read a byte. The daemon's resident memory stays bounded
# (measured before and during, the figures printed), `SELECT 1` and
# /metrics are answered as fast as before they came (relative to a
# baseline from the same run), a client that reads gets the whole text
# byte-exact meanwhile, SHOW PROCESSLIST shows the stuck replies, and a
# client that makes no progress for net_write_timeout is cut off. Also:
# an error body never carries the raw CR/LF of a query parameter.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require curl curl
ha_needs_live_jemalloc

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-300}
PY=${HA_PYTHON:-/usr/bin/python3}
hport=$(ha_free_port)
HA_HTTP_PORT=$hport
HA_ADMIN="http_max_connections = 128; http_max_per_peer = 100; net_write_timeout = ${NET_WRITE_TIMEOUT:-60};"

# A valid heap_v2 dump of about 60 MB: 120,000 stacks of 30 frames.
HA_DATADIR=$HA_TMP/data
mkdir -p "$HA_DATADIR"
dump=proxysql.4242.0.m0.heap
"$PY" - "$HA_DATADIR/$dump" <<'PY'
import random, sys
r = random.Random(26)
pcs = ["0x%x" % (0x7f0000000000 + r.randrange(1 << 24) * 16)
       for _ in range(5000)]
with open(sys.argv[1], "w") as f:
    n = 120000
    f.write("heap_v2/524288\n  t*: %d: %d [0: 0]\n  t0: %d: %d [0: 0]\n"
            % (n, n * 4096, n, n * 4096))
    for i in range(n):
        f.write("@ " + " ".join(r.choice(pcs) for _ in range(30)) + "\n")
        f.write("  t*: 1: 4096 [0: 0]\n  t0: 1: 4096 [0: 0]\n")
    f.write("\nMAPPED_LIBRARIES:\n"
            "7f0000000000-7f0100000000 r-xp 00000000 00:00 0 /usr/lib/x.so\n")
PY
size=$(stat -c %s "$HA_DATADIR/$dump")
ha_ok "the test dump is over 55 MB ($size bytes)" test "$size" -gt 55000000
want=$(sha256sum <"$HA_DATADIR/$dump")

ha_start || ha_bail "heapadmind starts with http_ifaces"
url=http://127.0.0.1:$hport

# A reader first: the whole text, byte-exact (and the dump is checked to
# parse once, before the figures below are taken).
got=$(curl -s --max-time 60 -u stats:stats "$url/pprof/heap?dump=$dump" | sha256sum)
ha_is "a client that reads gets the dump's whole text, byte-exact" "$want" "$got"
ha_is "... as /debug/pprof/heap?dump=&debug=1 too" "$want" \
    "$(curl -s --max-time 60 -u stats:stats "$url/debug/pprof/heap?dump=$dump&debug=1" | sha256sum)"
curl -s --max-time 60 -u stats:stats -D "$HA_TMP/h" -o /dev/null "$url/pprof/heap?dump=$dump"
ha_file_like "... with its Content-Length" "$HA_TMP/h" "^Content-Length: $size"
ha_is "HEAD: headers only" "200 0" \
    "$(curl -s --max-time 60 -u stats:stats -I -D "$HA_TMP/h" -o /dev/null -w '%{http_code} %{size_download}' "$url/pprof/heap?dump=$dump")"
ha_file_like "... saying the length GET would send" "$HA_TMP/h" "^Content-Length: $size"

# The non-readers, and everything measured around them.
out=$(timeout -k 5 240 "$PY" - "$hport" "$HA_PORT" "$HA_PID" "$dump" "$size" <<'PY'
import base64, hashlib, socket, subprocess, sys, time
import urllib.error, urllib.request

hport, mport, pid, dump, size = (int(sys.argv[1]), int(sys.argv[2]),
                                 sys.argv[3], sys.argv[4], int(sys.argv[5]))
auth = base64.b64encode(b"stats:stats").decode()
res = []

def rss_mib():
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0

def select1():
    t = time.monotonic()
    subprocess.run(["mariadb", "--no-defaults", "--protocol=TCP",
                    "-h127.0.0.1", "-P%d" % mport, "--skip-ssl", "-uadmin",
                    "-padmin", "-N", "-B", "-e", "SELECT 1"],
                   check=True, capture_output=True, timeout=30)
    return time.monotonic() - t

def processlist():
    p = subprocess.run(["mariadb", "--no-defaults", "--protocol=TCP",
                        "-h127.0.0.1", "-P%d" % mport, "--skip-ssl",
                        "-uadmin", "-padmin", "-N", "-B", "-e",
                        "SHOW FULL PROCESSLIST"],
                       check=True, capture_output=True, timeout=30, text=True)
    return p.stdout

def get(path, timeout=60):
    """(status, body, seconds) of a reading client."""
    t = time.monotonic()
    rq = urllib.request.Request("http://127.0.0.1:%d%s" % (hport, path),
                                headers={"Authorization": "Basic " + auth})
    try:
        with urllib.request.urlopen(rq, timeout=timeout) as r:
            body = r.read()
            code = r.status
    except urllib.error.HTTPError as e:
        body, code = e.read(), e.code
    return code, body, time.monotonic() - t

def worst(fn, n=5):
    return max(fn() for _ in range(n))

metrics = lambda: get("/metrics")[2]
base_sql, base_metrics = worst(select1), worst(metrics)
rss_before = rss_mib()

# 60 clients ask and never read; a small receive buffer so the kernel
# takes little of the reply off the daemon's hands.
stuck = []
for i in range(60):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", hport))
    s.sendall(("GET /pprof/heap?dump=%s HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Basic %s\r\n\r\n" % (dump, auth)).encode())
    stuck.append(s)

# Until every one of them is being answered (each shows in the process
# list), then until the daemon's memory stops moving.
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    n = processlist().count("GET /pprof/heap?dump=")
    if n >= 60:
        break
    time.sleep(0.2)
res.append("listed %d" % n)
last, peak = rss_mib(), 0.0
for _ in range(40):
    time.sleep(0.25)
    now = rss_mib()
    peak = max(peak, now)
    if abs(now - last) < 1.0:
        break
    last = now
rss_stuck = rss_mib()
during_sql, during_metrics = worst(select1), worst(metrics)
code, body, secs = get("/pprof/heap?dump=" + dump)
peak = max(peak, rss_mib())
pl = processlist()
res.append("reader %d %s %.0f ms" % (code, hashlib.sha256(body).hexdigest(),
                                    secs * 1000))
res.append("rss before %.0f MiB, with 60 stuck readers %.0f MiB (growth "
           "%.0f MiB; the dump is %.0f MiB, 60 copies %.0f MiB)" % (
               rss_before, peak, peak - rss_before, size / 1048576.0,
               60 * size / 1048576.0))
res.append("rss once they stopped reading %.0f MiB, after a reader "
           "meanwhile %.0f MiB" % (rss_stuck, rss_mib()))
res.append("growth %d" % int(peak - rss_before))
for name, b, d in (("sql", base_sql, during_sql),
                   ("metrics", base_metrics, during_metrics)):
    limit = 3 * b + 0.5   # lib.sh's ha_quick_ms
    res.append("%s %s (%.0f ms with the stuck readers, baseline %.0f ms)" % (
        name, "ok" if d <= limit else "slow", d * 1000, b * 1000))
res.append("state " + ("sending" if any(
    "GET /pprof/heap?dump=" in l and "Sending to client" in l
    for l in pl.splitlines()) else "?"))
for s in stuck:
    s.close()
print("\n".join(res))
PY
)
ha_diag "$out"
ha_like "the 60 non-reading clients are all being answered" "^listed 60$" "$out"
ha_like "a client that reads meanwhile gets the whole text, byte-exact" \
    "^reader 200 ${want%% *} " "$out"
growth=$(sed -n 's/^growth \(-\?[0-9]*\)$/\1/p' <<<"$out")
ha_ok "resident memory grows by less than one dump's size for 60 non-readers (${growth:-?} MiB)" \
    test -n "$growth" -a "${growth:-9999}" -lt $((size / 1048576))
ha_like "SELECT 1 is answered within 3x its baseline + 500 ms meanwhile" "^sql ok" "$out"
ha_like "/metrics is answered within 3x its baseline + 500 ms meanwhile" "^metrics ok" "$out"
ha_like "SHOW PROCESSLIST shows a stuck reply as 'Sending to client'" "^state sending$" "$out"

# Once they went, nothing of theirs is held.
ha_sql_wait 0 "SELECT count(*) FROM stats_admin_sessions WHERE info LIKE 'GET /pprof/heap%'"
ha_is "the closed clients' requests are gone from the process list" 0 "$HA_OUT"

# An error body never carries the raw CR/LF of a parameter (a header
# injected into whatever shows it).
status=$(curl -s --max-time 10 -u stats:stats -D "$HA_TMP/h" -o "$HA_TMP/b" -w '%{http_code}' \
    "$url/pprof/heap?dump=x%0d%0aX-Injected:%201")
ha_is "?dump=x%0d%0aX-Injected:%201 is refused" 400 "$status"
ha_unlike "... no injected header" "^X-Injected" "$(cat "$HA_TMP/h")"
ha_ok "... and the body has no raw CR" sh -c "! grep -q \$'\\r' '$HA_TMP/b'"
ha_is "... one line of text" 1 "$(wc -l <"$HA_TMP/b")"
status=$(curl -s --max-time 10 -u stats:stats -o "$HA_TMP/b" -w '%{http_code}' \
    "$url/pprof/heap?dump=proxysql.4242.9.m0.heap%0d%0aX-Injected:%201")
ha_ok "... nor the 404 of a dump name with CR/LF ($status)" sh -c "! grep -q \$'\\r' '$HA_TMP/b' && [ \$(wc -l <'$HA_TMP/b') = 1 ]"

# A reply cut short by KILL: the client sees the connection close before
# its Content-Length, and the log says so (issue 35: a soak's killed
# scrapes ended so, and nothing said it).
timeout -k 5 60 "$PY" - "$hport" "$dump" "$HA_TMP/read-now" >"$HA_TMP/killed.out" <<'PY' &
import base64, os, socket, sys, time
hport, dump, flag = int(sys.argv[1]), sys.argv[2], sys.argv[3]
auth = base64.b64encode(b"stats:stats").decode()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", hport))
s.sendall(("GET /pprof/heap?dump=%s HTTP/1.1\r\nHost: x\r\n"
           "Authorization: Basic %s\r\n\r\n" % (dump, auth)).encode())
while not os.path.exists(flag):
    time.sleep(0.05)
s.settimeout(30)
data = b""
try:
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        data += b
except OSError as e:
    print("error %s" % e)
head, _, body = data.partition(b"\r\n\r\n")
print("length %s" % [l.split(b":")[1].strip().decode() for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")])
print("body %d" % len(body))
PY
reader=$!
ha_sql_wait 1 "SELECT count(*) FROM stats_admin_sessions WHERE info LIKE 'GET /pprof/heap?dump=%' AND state = 'Sending to client'"
ha_sql "SELECT id FROM stats_admin_sessions WHERE info LIKE 'GET /pprof/heap?dump=%'"
ha_sql "KILL $HA_OUT"
: >"$HA_TMP/read-now"
wait "$reader"
ha_diag "$(cat "$HA_TMP/killed.out")"
got=$(sed -n 's/^body \([0-9]*\)$/\1/p' "$HA_TMP/killed.out")
ha_ok "a reply whose request is killed ends short of its Content-Length of $size (${got:-?} bytes)" \
    test -n "$got" -a "${got:-0}" -lt "$size"
ha_file_like "... and the log says so" "$HA_LOG" \
    "http: 127\\.0\\.0\\.1:[0-9]+: GET /pprof/heap\\?dump=$dump: the reply was cut after [0-9]+ of its $size bytes: its request was killed \\(KILL\\); the connection is closed"
ha_stop

# net_write_timeout: a client that takes nothing for that long is cut
# off (its bytes given back), however long the reply.
HA_ADMIN="net_write_timeout = 2;"
ha_start || ha_bail "heapadmind starts with net_write_timeout = 2"
out=$(timeout -k 5 120 "$PY" - "$hport" "$dump" <<'PY'
import base64, socket, sys, time
hport, dump = int(sys.argv[1]), sys.argv[2]
auth = base64.b64encode(b"stats:stats").decode()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", hport))
s.sendall(("GET /pprof/heap?dump=%s HTTP/1.1\r\nHost: x\r\n"
           "Authorization: Basic %s\r\n\r\n" % (dump, auth)).encode())
time.sleep(6)  # takes nothing for three times net_write_timeout
s.settimeout(30)
got = 0
try:
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += len(b)
except OSError as e:
    print("error %s" % e)
print("received %d" % got)
PY
)
ha_diag "$out"
got=$(sed -n 's/^received \([0-9]*\)$/\1/p' <<<"$out")
ha_ok "a client that took nothing for net_write_timeout was cut off (${got:-?} of $size bytes)" \
    test -n "$got" -a "${got:-0}" -lt "$size"
ha_file_like "... and the log says so" "$HA_LOG" \
    "http: 127\.0\.0\.1:[0-9]+: GET /pprof/heap\?dump=$dump: the client took no reply bytes for 2 s \(net_write_timeout\); closing"
ha_sql_is "the MySQL port still answers" "SELECT 1" 1
ha_done
