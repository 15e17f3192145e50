#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Floods of password guesses, as an outsider without any password makes
# them, with the figures of issue 26:
#   A. HTTP from one address: 40 threads guessing for 8 s;
#   B. MySQL from one address, the same;
#   C. HTTP from 300 addresses rotating over 300 /24s of 127.0.0.0/8;
#   D. MySQL likewise.
# Meanwhile the admin logs in over MySQL and HTTP from another address
# (one it logged in from before, so the total bound does not hold it)
# and over the unix socket, every half second: every login succeeds, each
# within this run's quick bound. Throughout: the daemon's descriptors stay
# bounded (a waiting guesser is answered and closed, never held), the log
# grows by a summary per 10 s instead of a line per refusal, the password
# checks stay at the throttle's rates (one address: a few; 300 addresses:
# the total bound of 20 failed checks a second), and every refused
# attempt is told when to come back (429 Retry-After, ERR 1129). The
# daemon starts with a soft descriptor limit of 256 and raises it to the
# hard one.

: "${HA_TEST_TIMEOUT:=300}"
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require curl curl
ha_require prlimit util-linux
ha_require_python_module pymysql

hport=$(ha_free_port)
HA_HTTP_PORT=$hport
HA_DAEMON_REAL=$HA_DAEMON
HA_DAEMON=$HA_TMP/heapadmind-lowfd
cat >"$HA_DAEMON" <<SH
#!/bin/sh
exec prlimit --nofile=256:4096 "$HA_DAEMON_REAL" "\$@"
SH
chmod +x "$HA_DAEMON"
ha_start || ha_bail "heapadmind starts"
HA_DAEMON=$HA_DAEMON_REAL

ha_file_like "the daemon raised its soft descriptor limit to the hard one" \
    "$HA_LOG" "descriptor limit raised from 256 to 4096 \(the hard limit\)"
ha_like "... as /proc says" '^Max open files +4096 +4096 ' \
    "$(grep '^Max open files' "/proc/$HA_PID/limits")"

quick=$(ha_quick_ms "$(ha_baseline_ms)")
log0=$(stat -c %s "$HA_LOG")
PY=${HA_PYTHON:-/usr/bin/python3}
out=$(timeout -k 5 240 "$PY" - "$hport" "$HA_PORT" "$HA_SOCK" "$HA_PID" \
    "$quick" <<'PY'
import base64, os, socket, sys, threading, time
import pymysql

hport, mport, sock, pid = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                           int(sys.argv[4]))
quick = int(sys.argv[5]) / 1000.0
ADMIN = "127.100.0.2"   # where the admin logged in from before

def http(src, user, pw, timeout=10.0):
    """One request from src: (status, headers)."""
    s = socket.create_connection(("127.0.0.1", hport), timeout=timeout,
                                 source_address=(src, 0))
    auth = base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()
    try:
        s.sendall(("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: "
                   "Basic %s\r\nConnection: close\r\n\r\n" % auth).encode())
    except OSError:
        pass
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
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    parts = head[0].split()
    code = int(parts[1]) if len(parts) > 1 else 0
    hdrs = {}
    for h in head[1:]:
        if ":" in h:
            k, v = h.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
    return code, hdrs

def mysql(src, password, **kw):
    """One login from src: 0 or the MySQL error code."""
    args = dict(user="admin", password=password, connect_timeout=10)
    if src is None:
        args["unix_socket"] = sock
    else:
        args.update(host="127.0.0.1", port=mport, bind_address=src)
    args.update(kw)
    try:
        c = pymysql.connect(**args)
        cur = c.cursor()
        cur.execute("SELECT 1")
        cur.fetchall()
        c.close()
        return 0
    except pymysql.MySQLError as e:
        return e.args[0] if e.args else -1

def fds():
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1

# The admin logs in from ADMIN before any flood: known-good from then on.
assert mysql(ADMIN, "admin") == 0
assert http(ADMIN, "admin", "admin")[0] == 200
fd0 = fds()
res = ["fds-before %d" % fd0]

def run(name, guess, seconds=8):
    stop = time.monotonic() + seconds
    counts = {}
    lock = threading.Lock()
    peak = [fd0]
    admin = {"ok": 0, "fail": 0, "worst": 0.0}

    def worker(k):
        i = k
        while time.monotonic() < stop:
            try:
                r = guess(i)
            except OSError:
                r = "oserror"
            i += 40
            with lock:
                counts[r] = counts.get(r, 0) + 1

    def watcher():
        while time.monotonic() < stop:
            peak[0] = max(peak[0], fds())
            time.sleep(0.05)

    def admins():
        while time.monotonic() < stop:
            for how in ("tcp", "socket", "http"):
                t = time.monotonic()
                if how == "tcp":
                    ok = mysql(ADMIN, "admin") == 0
                elif how == "socket":
                    ok = mysql(None, "admin") == 0
                else:
                    ok = http(ADMIN, "admin", "admin")[0] == 200
                d = time.monotonic() - t
                admin["ok" if ok else "fail"] += 1
                if not ok:
                    res.append("%s admin-%s-failed" % (name, how))
                admin["worst"] = max(admin["worst"], d)
            time.sleep(0.5)

    ths = [threading.Thread(target=worker, args=(k,)) for k in range(40)]
    ths.append(threading.Thread(target=watcher))
    ths.append(threading.Thread(target=admins))
    t0 = time.monotonic()
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    took = time.monotonic() - t0
    res.append("%s seconds %.1f" % (name, took))
    res.append("%s answers %s" % (name, " ".join(
        "%s=%d" % (k, v) for k, v in sorted(counts.items(), key=str))))
    res.append("%s fds-peak %d" % (name, peak[0]))
    res.append("%s admin ok=%d fail=%d worst-ms=%.0f %s" % (
        name, admin["ok"], admin["fail"], admin["worst"] * 1000,
        "quick" if admin["worst"] <= quick else "slow"))

retry_after = {"seen": 0, "missing": 0}

def http_guess(src):
    code, hdrs = http(src, "admin", "guess")
    if code == 429:
        if "retry-after" in hdrs and hdrs["retry-after"].isdigit():
            retry_after["seen"] += 1
        else:
            retry_after["missing"] += 1
    return "http%d" % code

def rot(i):
    i %= 300
    return "127.%d.%d.1" % (1 + i // 256, i % 256)

def rot2(i):
    i %= 300
    return "127.%d.%d.1" % (3 + i // 256, i % 256)

run("A", lambda i: http_guess("127.0.0.3"))
run("B", lambda i: "my%d" % mysql("127.0.0.4", "guess"))
run("C", lambda i: http_guess(rot(i)))
run("D", lambda i: "my%d" % mysql(rot2(i), "guess"))
res.append("retry-after seen=%d missing=%d" % (retry_after["seen"],
                                               retry_after["missing"]))
time.sleep(1)
res.append("fds-after %d" % fds())
print("\n".join(res))
PY
)
ha_diag "$out"
val() { sed -n "s/^$1 $2 \\(.*\\)$/\\1/p" <<<"$out"; }
count() { # count PHASE KEY: the number of answers KEY in phase PHASE
    sed -n "s/^$1 answers .*\\b$2=\\([0-9]*\\).*$/\\1/p" <<<"$out" | head -1
}
fd0=$(sed -n 's/^fds-before //p' <<<"$out")
for p in A B C D; do
    case $p in
    A) what="HTTP, one address" ;;
    B) what="MySQL, one address" ;;
    C) what="HTTP, 300 rotating addresses" ;;
    D) what="MySQL, 300 rotating addresses" ;;
    esac
    secs=$(val "$p" seconds)
    peak=$(val "$p" fds-peak)
    ha_ok "$p ($what): descriptors stay bounded ($fd0 before, peak ${peak:-?}; was 20,000)" \
        test -n "$peak" -a "${peak:-99999}" -le $((fd0 + 200))
    ha_like "$p: the admin logs in throughout, from its address and the unix socket, each within $quick ms" \
        "^ok=[1-9][0-9]* fail=0 worst-ms=[0-9]+ quick$" "$(val "$p" admin)"
    case $p in
    A | C) failed=$(count "$p" http401) refused=$(count "$p" http429) ;;
    *) failed=$(count "$p" my1045) refused=$(count "$p" my1129) ;;
    esac
    failed=${failed:-0}
    refused=${refused:-0}
    ha_ok "$p: guesses refused at once, told when to come back ($refused)" \
        test "$refused" -ge 100
    case $p in
    A | B)
        # 3 free, then a wait growing by 250 ms to 3 s: about 11 in 8 s.
        ha_ok "$p: one address gets the per-address rate: $failed checks in ${secs:-?} s" \
            test "$failed" -ge 3 -a "$failed" -le 20
        ;;
    *)
        # The total bound: a burst of 40, then 20 a second.
        limit=$(awk -v s="${secs:-8}" 'BEGIN { printf "%d", 40 + 22 * s }')
        rate=$(awk -v f="$failed" -v s="${secs:-8}" 'BEGIN { printf "%.1f", f / s }')
        ha_ok "$p: 300 rotating addresses get the total bound: $failed checks in ${secs:-?} s ($rate/s; at most $limit)" \
            test "$failed" -le "$limit" -a "$failed" -ge 40
        ;;
    esac
done
ha_like "every 429 carries Retry-After" '^seen=[1-9][0-9]* missing=0$' \
    "$(sed -n 's/^retry-after //p' <<<"$out")"

# The log: summaries, never a line per refusal.
for _ in $(seq 120); do
    [ "$(grep -c "login throttle, last" "$HA_LOG")" -ge 3 ] && break
    sleep 0.1
done
log1=$(stat -c %s "$HA_LOG")
ha_ok "the log grew by $((log1 - log0)) bytes over four floods (was 30-77 MB)" \
    test $((log1 - log0)) -le 131072
ha_file_like "... the throttle's summary names the flooding address" "$HA_LOG" \
    "login throttle, last [0-9]+ s: [0-9]+ login attempts refused at once .* most from 127\.0\.0\.[34] "
ha_file_like "... and says when the total bound held the rotation" "$HA_LOG" \
    "over the bound of 20 failed checks a second in all [1-9][0-9]*\)"
ha_is "... no refused attempt has a line of its own" 0 \
    "$(grep -Ec "is blocked|Too Many Requests|too many failed logins" "$HA_LOG")"
ha_sql_is "the MySQL port still answers" "SELECT 1" 1

ha_done
