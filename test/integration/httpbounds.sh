#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What nobody can hold without logging in, over HTTP, tried as an
# attacker would:
#   - a flood of wrong HTTP Basic passwords gets the MySQL port's rate
#     (the engine's one throttle, per address), while the real admin
#     logs in from another address, over the unix socket, and over HTTP;
#   - 200 sockets trickling a header byte a second cannot lock a scrape
#     out: new connections evict the oldest that sent no request;
#   - pipelined requests are answered in order.
# Latencies are compared with a baseline measured in the same run, so
# the checks hold on a loaded machine.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require curl curl
ha_require_python_module pymysql

hport=$(ha_free_port)
HA_HTTP_PORT=$hport
HA_ADMIN="http_max_connections = 64; http_header_timeout = 30;"
ha_start || ha_bail "heapadmind starts"

PY=${HA_PYTHON:-/usr/bin/python3}
out=$(timeout -k 5 180 "$PY" - "$hport" "$HA_PORT" "$HA_SOCK" <<'PY'
import base64, re, socket, sys, threading, time
import pymysql

hport, mport, sock = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def http(src, user, pw, path="/metrics", timeout=10.0):
    """One request from address src: (status, seconds)."""
    t = time.monotonic()
    s = socket.create_connection(("127.0.0.1", hport), timeout=timeout,
                                 source_address=(src, 0))
    auth = base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"
               "Connection: close\r\n\r\n" % (path, auth)).encode())
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        pass
    s.close()
    line = data.split(b"\r\n", 1)[0].split()
    return (int(line[1]) if len(line) > 1 else 0), time.monotonic() - t

def mysql_login(**kw):
    t = time.monotonic()
    c = pymysql.connect(user="admin", password="admin", connect_timeout=10,
                        **kw)
    cur = c.cursor()
    cur.execute("SELECT 1")
    cur.fetchall()
    c.close()
    return time.monotonic() - t

def admin_logins():
    """The real admin from elsewhere: over TCP from 127.0.0.2, over the
    unix socket, over HTTP from 127.0.0.2; the slowest of each."""
    return (max(mysql_login(host="127.0.0.1", port=mport,
                            bind_address="127.0.0.2") for _ in range(3)),
            max(mysql_login(unix_socket=sock) for _ in range(3)),
            max(http("127.0.0.2", "admin", "admin")[1] for _ in range(3)))

res = []
base = admin_logins()

# The flood: 40 threads guessing from 127.0.0.3 for 3 s (an address the
# scrapes below do not use: a flooded address is locked out itself).
stop = time.monotonic() + 3
answered = [0]
lock = threading.Lock()
def guess():
    while time.monotonic() < stop:
        try:
            code, _ = http("127.0.0.3", "admin", "wrong%d" % time.time_ns(),
                           timeout=10)
        except OSError:
            continue
        if code == 401 and time.monotonic() < stop + 0.25:
            with lock:
                answered[0] += 1
threads = [threading.Thread(target=guess) for _ in range(40)]
for t in threads:
    t.start()
time.sleep(0.5)
during = admin_logins()
for t in threads:
    t.join()
res.append("guesses %d" % answered[0])

# The same flood at the MySQL port, from another address: one throttle,
# one rate.
stop = time.monotonic() + 3
mysql_answered = [0]
def mysql_guess():
    while time.monotonic() < stop:
        try:
            pymysql.connect(host="127.0.0.1", port=mport, user="admin",
                            password="wrong", bind_address="127.0.0.4",
                            connect_timeout=10).close()
        except pymysql.MySQLError as e:
            if (e.args and e.args[0] == 1045 and
                    time.monotonic() < stop + 0.25):
                with lock:
                    mysql_answered[0] += 1
threads = [threading.Thread(target=mysql_guess) for _ in range(40)]
for t in threads:
    t.start()
for t in threads:
    t.join()
res.append("mysql-guesses %d" % mysql_answered[0])
for name, b, d in zip(("tcp", "socket", "http"), base, during):
    limit = 3 * b + 0.5   # the suite's quick bound (lib.sh ha_quick_ms):
                          # the flood's own 40 threads load this machine
    res.append("%s %s (%.0f ms, baseline %.0f ms)" % (
        name, "ok" if d <= limit else "slow", d * 1000, b * 1000))

# 200 slowloris sockets from 127.0.0.1, a header byte a second.
scrape_base = max(http("127.0.0.2", "stats", "stats")[1] for _ in range(3))
slow = []
for _ in range(200):
    try:
        s = socket.create_connection(("127.0.0.1", hport), timeout=5)
        s.sendall(b"G")
        slow.append(s)
    except OSError:
        pass
done = [False]
def trickle():
    while not done[0]:
        for s in list(slow):
            try:
                s.sendall(b"E")
            except OSError:
                slow.remove(s)
        time.sleep(1)
tr = threading.Thread(target=trickle)
tr.start()
worst = 0.0
codes = []
for i in range(6):
    src = "127.0.0.1" if i % 2 else "127.0.0.2"
    try:
        code, secs = http(src, "stats", "stats")
    except OSError:
        code, secs = 0, 10.0
    codes.append(code)
    worst = max(worst, secs)
    time.sleep(0.3)
done[0] = True
tr.join()
for s in slow:
    s.close()
res.append("scrapes %s" % ",".join(str(c) for c in codes))
res.append("scrape %s (%.0f ms, baseline %.0f ms)" % (
    "ok" if worst <= max(1.0, 10 * scrape_base) else "slow", worst * 1000,
    scrape_base * 1000))

# Pipelining: two requests in one write, two answers in order.
s = socket.create_connection(("127.0.0.1", hport), timeout=10)
auth = base64.b64encode(b"stats:stats").decode()
s.sendall(("GET /nope HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n"
           "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"
           "Connection: close\r\n\r\n" % (auth, auth)).encode())
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except OSError:
    pass
st = [c.decode() for c in re.findall(rb"(?:^|\n)HTTP/1\.1 (\d{3})", data)]
res.append("pipelined %s" % ",".join(st))
print("\n".join(res))
PY
)
ha_diag "$out"
n=$(sed -n 's/^guesses \([0-9]*\)$/\1/p' <<<"$out")
ha_ok "40 threads guessing for 3 s get the throttle's rate, not thousands ($n checked)" \
    test -n "$n" -a "${n:-999}" -le 30
ha_ok "... and were answered (401), slowly" test "${n:-0}" -ge 3
m=$(sed -n 's/^mysql-guesses \([0-9]*\)$/\1/p' <<<"$out")
ha_ok "the same flood at the MySQL port gets the same rate ($m answers)" \
    test -n "$m" -a "${m:-999}" -le 30 -a "${m:-0}" -ge 3
ha_like "meanwhile the admin logs in over TCP from another address within 3x its baseline + 500 ms" \
    "^tcp ok" "$out"
ha_like "... over the unix socket" "^socket ok" "$out"
ha_like "... and over HTTP from another address" "^http ok" "$out"
ha_like "200 slowloris sockets: every scrape answered" "^scrapes 200,200,200,200,200,200$" "$out"
ha_like "... each within 1 s (or 10x its baseline)" "^scrape ok" "$out"
ha_like "pipelined requests are answered in order" "^pipelined 404,200$" "$out"
# The log: the first failed logins of each 10 s window have a line of
# their own (both ports share the budget), the rest and every refused
# attempt are counted in the throttle's summary, one line per 10 s.
for _ in $(seq 150); do
    grep -q "login throttle, last" "$HA_LOG" && break
    sleep 0.1
done
ha_file_like "the flood is summed up in the throttle's line" "$HA_LOG" \
    "login throttle, last [0-9]+ s: [0-9]+ login attempts refused at once \(address [0-9]+, .*; [0-9]+ checks failed, [0-9]+ of them not logged one by one"
lines=$(grep -Ec "refused: wrong password|login failed: user 'admin' from 127\.0\.0\.4" "$HA_LOG")
ha_ok "... the failed logins' own lines are within the budget, 10 per 10 s ($lines lines)" \
    test "$lines" -ge 1 -a "$lines" -le 20
refusals=$(grep -Ec "is blocked|failed too often|Too Many" "$HA_LOG")
ha_is "... and no refused attempt has a line of its own" 0 "$refusals"
ha_sql_is "the MySQL port still answers" "SELECT 1" 1

ha_done
