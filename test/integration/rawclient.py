# SPDX-License-Identifier: MIT
#
# A raw MySQL-protocol client for limits.sh and hostile.sh: each scenario
# crafts bytes no real client sends (or a real client that misbehaves:
# stops reading, vanishes, idles) and prints one line the test asserts on.
#
#   python3 rawclient.py SCENARIO PORT [ARGS...]
#
# Every socket operation has a timeout, so a scenario never hangs. What the
# server answered is printed as "err <code> <sqlstate-or-nostate> <text>",
# "handshake", "ok", "closed" (EOF or reset) or "silent" (nothing within the
# timeout).
import hashlib
import os
import socket
import struct
import sys
import time

USER = b"admin"
PASSWORD = b"admin"


def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_packet(s):
    """Returns (seq, payload); raises EOFError or socket.timeout."""
    hdr = recv_exact(s, 4)
    n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
    return hdr[3], recv_exact(s, n)


def packet(payload, seq):
    return struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF]) + payload


def describe(payload):
    if payload[:1] == b"\xff":
        code = struct.unpack("<H", payload[1:3])[0]
        if payload[3:4] == b"#":
            return "err %d %s %s" % (code, payload[4:9].decode(),
                                     payload[9:].decode(errors="replace"))
        return "err %d nostate %s" % (code, payload[3:].decode(
            errors="replace"))
    if payload[:1] == b"\x00":
        return "ok"
    if payload[:1] == b"\x0a":
        return "handshake"
    return "packet 0x%02x" % payload[0]


def outcome(s):
    """Reads one packet and describes it, or says how the socket ended."""
    try:
        _, p = read_packet(s)
        return describe(p)
    except (EOFError, ConnectionResetError, BrokenPipeError):
        return "closed"
    except socket.timeout:
        return "silent"


def after_err(s):
    """After an ERR, the server must close: returns closed/silent/data."""
    try:
        return "closed" if not s.recv(1) else "data"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    except socket.timeout:
        return "silent"


def scramble_of(greeting):
    # HandshakeV10: version NUL, id(4), scramble 8, filler, caps(2),
    # charset, status(2), caps(2), auth len, reserved(10), scramble rest.
    p = greeting.index(b"\x00", 1) + 1 + 4
    part1 = greeting[p:p + 8]
    p += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
    return part1 + greeting[p:p + 12]


def native_proof(password, scramble):
    h1 = hashlib.sha1(password).digest()
    h2 = hashlib.sha1(h1).digest()
    h3 = hashlib.sha1(scramble + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, h3))


def handshake_response(scramble, seq=1, user=USER, password=PASSWORD):
    caps = 0x0200 | 0x8000 | 0x80000 | 0x10000  # 41, secure, plugin, multi
    proof = native_proof(password, scramble)
    payload = struct.pack("<IIB23x", caps, 1 << 24, 45)
    payload += user + b"\x00" + bytes([len(proof)]) + proof
    payload += b"mysql_native_password\x00"
    return packet(payload, seq)


def login(port, timeout=5.0):
    s = connect(port, timeout)
    _, greeting = read_packet(s)
    s.sendall(handshake_response(scramble_of(greeting)))
    _, p = read_packet(s)
    if describe(p) != "ok":
        raise RuntimeError("login failed: " + describe(p))
    return s


def query(s, sql):
    s.sendall(packet(b"\x03" + sql.encode(), 0))


def query_result(s, sql):
    """Runs sql and returns the first field of the first row as text, or
    the ERR/OK description."""
    query(s, sql)
    return read_result(s)


def read_result(s):
    """Reads a text result set and returns the first field of the first
    row, or the ERR/OK description."""
    _, p = read_packet(s)
    if p[:1] in (b"\xff", b"\x00"):
        return describe(p)
    while True:  # column definitions up to EOF
        _, p = read_packet(s)
        if p[:1] == b"\xfe" and len(p) < 9:
            break
    _, row = read_packet(s)
    while True:
        _, p = read_packet(s)
        if p[:1] == b"\xfe" and len(p) < 9:
            break
    n = row[0]
    return row[1:1 + n].decode()


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------

def sc_first_packet(port):
    """What a new connection gets first."""
    s = connect(port)
    r = outcome(s)
    print(r if not r.startswith("err") else r + " / " + after_err(s))


def sc_garbage_first(port):
    """Garbage before reading the greeting (a valid header, nonsense body).

    Random bytes with a NUL in them can be a well-formed
    HandshakeResponse41 (any flags, a NUL-terminated user name), which
    the server rightly answers with ERR 1045, so the body holds no NUL:
    the user name is never terminated and the packet must be refused."""
    s = connect(port)
    s.sendall(packet(bytes(b or 0x5A for b in os.urandom(200)), 1))
    first = outcome(s)
    print(first, "/", outcome(s), "/", after_err(s))


def sc_http(port):
    s = connect(port)
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    t0 = time.monotonic()
    first = outcome(s)
    second = outcome(s)
    print(first, "/", second, "/", after_err(s),
          "/ %.1fs" % (time.monotonic() - t0))


def sc_truncated_response(port):
    """A HandshakeResponse41 cut short: valid framing, 6-byte payload."""
    s = connect(port)
    read_packet(s)
    s.sendall(packet(b"\x85\xa6\x0f\x00\x00\x00", 1))
    print(outcome(s), "/", after_err(s))


def sc_short_then_close(port):
    """A header announcing 1000 bytes, 20 sent, then the client half-closes
    and then vanishes."""
    s = connect(port)
    read_packet(s)
    s.sendall(struct.pack("<I", 1000)[:3] + b"\x01" + os.urandom(20))
    s.shutdown(socket.SHUT_WR)
    print(outcome(s))


def sc_length_beyond_data(port, wait):
    """A header announcing more than is ever sent: the server waits for the
    rest, and the login timer (connect_timeout) closes it."""
    s = connect(port, timeout=float(wait))
    read_packet(s)
    s.sendall(struct.pack("<I", 5000)[:3] + b"\x01" + os.urandom(100))
    t0 = time.monotonic()
    r = outcome(s)
    print(r, "after %.0fs" % (time.monotonic() - t0))


def sc_bad_seq_login(port):
    s = connect(port)
    _, g = read_packet(s)
    s.sendall(handshake_response(scramble_of(g), seq=5))
    print(outcome(s), "/", after_err(s))


def sc_bad_seq_command(port):
    s = login(port)
    s.sendall(packet(b"\x03SELECT 1", 3))
    print(outcome(s), "/", after_err(s))


def sc_truncated_command(port):
    """COM_STMT_EXECUTE with a 2-byte body, then COM_QUERY with an
    empty body: each gets an ERR, the session goes on."""
    s = login(port)
    s.sendall(packet(b"\x17\x01\x00", 0))
    a = outcome(s)
    s.sendall(packet(b"\x03", 0))
    b = outcome(s)
    print(a.split(" ")[0:2], b.split(" ")[0:2], query_result(s, "SELECT 7"))


def sc_big_packet(port, size):
    """After login, a COM_QUERY header announcing size bytes and the first
    KiB of it: the server refuses it at the header."""
    s = login(port)
    s.sendall(struct.pack("<I", int(size))[:3] + b"\x00" + b"\x03" +
              b"a" * 1023)
    print(outcome(s), "/", after_err(s))


def sc_vanish(port, sql):
    """Starts a big result, reads 64 KiB of it, then resets the
    connection (RST: SO_LINGER 0)."""
    s = login(port)
    query(s, sql)
    recv_exact(s, 65536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    print("vanished")


def sc_idle_many(port, n, seconds):
    """n sockets that connect and then do nothing (half of them also send
    half a header) for seconds; prints how many got a greeting."""
    socks = []
    greeted = 0
    for i in range(int(n)):
        s = connect(port)
        socks.append(s)
    for i, s in enumerate(socks):
        if outcome(s) == "handshake":
            greeted += 1
        if i % 2:
            s.sendall(b"\x10\x00")
    sys.stdout.write("greeted %d\n" % greeted)
    sys.stdout.flush()
    time.sleep(float(seconds))
    for s in socks:
        s.close()


def sc_hold(port, n, seconds):
    """n logged-in sessions held open for seconds."""
    socks = [login(port) for _ in range(int(n))]
    sys.stdout.write("held %d\n" % len(socks))
    sys.stdout.flush()
    time.sleep(float(seconds))
    for s in socks:
        s.close()


def sc_wait_timeout(port, idle):
    """One session idles; another queries every 0.5 s. Prints what the idle
    one got and whether the busy one still works."""
    idle_s = login(port, timeout=float(idle) + 5)
    busy = login(port)
    t0 = time.monotonic()
    while time.monotonic() - t0 < float(idle) + 1.5:
        busy_r = query_result(busy, "SELECT 5")
        time.sleep(0.5)
    first = outcome(idle_s)
    print("idle:", first.split(" ")[0:2], after_err(idle_s),
          "busy:", busy_r, query_result(busy, "SELECT 6"))


def sc_slow_login(port, seconds):
    """Sends the greeting's answer one byte every 0.3 s (a slowloris): the
    login timer still closes it."""
    s = connect(port, timeout=1.0)
    _, g = read_packet(s)
    data = handshake_response(scramble_of(g))
    t0 = time.monotonic()
    for b in data:
        try:
            s.sendall(bytes([b]))
        except (BrokenPipeError, ConnectionResetError):
            break
        time.sleep(0.3)
        if time.monotonic() - t0 > float(seconds):
            break
    s.settimeout(2.0)
    print(outcome(s), "after %.0fs" % (time.monotonic() - t0))


def sc_no_read(port, sql, n, seconds):
    """Logs in, pipelines n queries with big results and never reads.
    Prints the daemon-side verdict: closed (dropped) or open."""
    s = login(port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    for _ in range(int(n)):
        query(s, sql)
    sys.stdout.write("sent %s\n" % n)
    sys.stdout.flush()
    time.sleep(float(seconds))
    # Drain what the kernel holds: a dropped connection ends in EOF/RST.
    s.settimeout(2.0)
    total = 0
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                print("closed after", total)
                return
            total += len(d)
    except ConnectionResetError:
        print("closed after", total)
    except socket.timeout:
        print("open after", total)


def sc_slow_execute(port, sql):
    """COM_STMT_PREPARE sql, COM_STMT_EXECUTE it and, pipelined behind it,
    a COM_QUERY: prints "sent", then the execute's outcome and the
    query's answer (the server reads it only once the execute ended)."""
    s = login(port, timeout=60.0)
    s.sendall(packet(b"\x16" + sql.encode(), 0))
    _, p = read_packet(s)
    if p[:1] != b"\x00":
        print(describe(p))
        return
    stmt_id, n_cols, n_params = struct.unpack("<IHH", p[1:9])
    for _ in range(2 if n_cols and n_params else 1 if n_cols or n_params
                   else 0):
        while True:  # definitions up to EOF
            _, p = read_packet(s)
            if p[:1] == b"\xfe" and len(p) < 9:
                break
    s.sendall(packet(b"\x17" + struct.pack("<IBI", stmt_id, 0, 1), 0))
    query(s, "SELECT 'after'")
    sys.stdout.write("sent\n")
    sys.stdout.flush()
    first = outcome(s)
    print(first, "/", read_result(s))


def sc_fd_flood(port, n):
    """Opens n connections and reports what each got first; keeps them
    open until stdin closes."""
    socks, counts = [], {}
    for _ in range(int(n)):
        try:
            s = connect(port, timeout=2.0)
        except OSError as e:
            counts["connect " + e.__class__.__name__] = \
                counts.get("connect " + e.__class__.__name__, 0) + 1
            continue
        socks.append(s)
        r = outcome(s)
        key = r if not r.startswith("err") else " ".join(r.split(" ")[:3])
        counts[key] = counts.get(key, 0) + 1
    print(";".join("%s=%d" % kv for kv in sorted(counts.items())))
    sys.stdout.flush()
    sys.stdin.read()


def trip_throttle(port):
    """Wrong passwords from this address on new connections until one is
    refused outright: the login throttle is on."""
    for _ in range(60):
        t = connect(port)
        try:
            _, g = read_packet(t)
            if g[:1] == b"\xff":
                return
            t.sendall(handshake_response(scramble_of(g), password=b"guess"))
            _, p = read_packet(t)
            if describe(p).startswith("err 1129"):
                return
        except (EOFError, ConnectionResetError, socket.timeout):
            pass
        finally:
            t.close()


def greeting_when_let_in(port):
    """A connection past the throttle's refusal at accept: (socket, seq,
    greeting), waiting as told while it refuses."""
    for _ in range(100):
        s = connect(port)
        seq, g = read_packet(s)
        if g[:1] == b"\x0a":
            return s, seq, g
        s.close()
        time.sleep(0.2)
    raise RuntimeError("the throttle never let a connection in")


def sc_throttle_midlogin(port):
    """The throttle begins between a connection's greeting and its reply:
    the reply is refused with ERR 1129 with the next sequence id (2),
    which is what a driver checks before it reads the error. Prints
    "seq <n> <describe>"."""
    s, _, greeting = greeting_when_let_in(port)
    trip_throttle(port)
    s.sendall(handshake_response(scramble_of(greeting)))
    try:
        seq, p = read_packet(s)
        print("seq %d %s" % (seq, describe(p)))
    except (EOFError, ConnectionResetError, BrokenPipeError):
        print("closed")
    except socket.timeout:
        print("silent")


def relay(a, b):
    """Copies a to b until a ends, then shuts b's writing side."""
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def sc_throttle_proxy(port, listen_port, count):
    """A proxy on listen_port for count connections of a real driver, each
    made to meet the throttle between the server's greeting and its
    reply: the greeting goes to the driver, the driver's reply is held
    while wrong passwords from other connections turn the throttle on,
    then it goes on, and the server's answer back. Prints "ready" once
    listening, then one line per connection served."""
    import threading

    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", int(listen_port)))
    ls.listen(8)
    ls.settimeout(60)
    print("ready", flush=True)
    for _ in range(int(count)):
        c, _ = ls.accept()
        c.settimeout(10)
        try:
            u, seq, greeting = greeting_when_let_in(port)
            c.sendall(packet(greeting, seq))
            hdr = recv_exact(c, 4)
            body = recv_exact(c, hdr[0] | hdr[1] << 8 | hdr[2] << 16)
            trip_throttle(port)
            u.sendall(hdr + body)
            t = threading.Thread(target=relay, args=(u, c))
            t.start()
            relay(c, u)
            t.join(10)
            print("served", flush=True)
        except (OSError, EOFError, RuntimeError) as e:
            print("failed %s" % e, flush=True)
        finally:
            c.close()


SCENARIOS = {
    "first_packet": sc_first_packet,
    "garbage_first": sc_garbage_first,
    "http": sc_http,
    "truncated_response": sc_truncated_response,
    "short_then_close": sc_short_then_close,
    "length_beyond_data": sc_length_beyond_data,
    "bad_seq_login": sc_bad_seq_login,
    "bad_seq_command": sc_bad_seq_command,
    "truncated_command": sc_truncated_command,
    "big_packet": sc_big_packet,
    "vanish": sc_vanish,
    "idle_many": sc_idle_many,
    "hold": sc_hold,
    "wait_timeout": sc_wait_timeout,
    "slow_login": sc_slow_login,
    "no_read": sc_no_read,
    "fd_flood": sc_fd_flood,
    "slow_execute": sc_slow_execute,
    "throttle_midlogin": sc_throttle_midlogin,
    "throttle_proxy": sc_throttle_proxy,
}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](int(sys.argv[2]), *sys.argv[3:])
