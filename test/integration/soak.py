# SPDX-License-Identifier: MIT
#
# A short soak of the admin port for soak.sh: THREADS PyMySQL clients for
# SECONDS, each opening sessions that run a random mix of fast and slow
# statements, big streamed results, SHOW PROCESSLIST, KILL and KILL QUERY
# of whatever runs, prof_active toggles and SET max_execution_time, while
# other clients vanish in the middle of a streamed result.
#
#   python3 soak.py PORT SECONDS THREADS
#
# Prints one line: "answered N; errors CODE:COUNT ..." (MySQL error codes
# the server sent; the kills and deadlines make 1317, 3024, 2013 and 1094
# expected). Anything else that goes wrong on the client side (a protocol
# error, a hang past the read timeout, a login that fails) is counted as
# "client:<type>", with the error's code where it has one.
import random
import socket
import struct
import sys
import threading
import time

import pymysql

PORT, SECONDS, THREADS = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
COUNT = "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL " \
        "SELECT x + 1 FROM c WHERE x < %d) SELECT x FROM c)"
ROWS = "SELECT x, hex(randomblob(50)) FROM (WITH RECURSIVE c(x) AS " \
       "(SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) SELECT x FROM c)"

lock = threading.Lock()
answered = [0]
errors = {}


def note(key):
    with lock:
        errors[key] = errors.get(key, 0) + 1


def connect():
    return pymysql.connect(host="127.0.0.1", port=PORT, user="admin",
                           password="admin", autocommit=True,
                           read_timeout=30, write_timeout=30)


def statement(rnd):
    pick = rnd.randrange(7)
    if pick == 0:
        return "SELECT 1"
    if pick == 1:
        return "SELECT count(*) FROM stats_memory_jemalloc"
    if pick == 2:
        return COUNT % rnd.choice([10, 10000, 1000000, 3000000])
    if pick == 3:
        return ROWS % rnd.choice([10, 20000, 200000])
    if pick == 4:
        return "SELECT * FROM stats_admin_sessions"
    if pick == 5:
        return ("UPDATE global_variables SET variable_value = '%s' WHERE "
                "variable_name = 'jemalloc-prof_active'"
                % rnd.choice(["true", "false"]))
    return "SET max_execution_time = %d" % rnd.choice([0, 50, 500, 2000])


def kill_someone(cur, rnd):
    cur.execute("SELECT id FROM stats_admin_sessions WHERE command IN "
                "('Query', 'Execute') AND id <> CONNECTION_ID()")
    ids = [r[0] for r in cur.fetchall()]
    if ids:
        cur.execute("KILL %s%d" % (rnd.choice(["QUERY ", ""]),
                                   rnd.choice(ids)))


def vanish():
    """Asks for a big result, reads a little of it, and resets the
    connection (RST) without a word."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    c = pymysql.connect(host="127.0.0.1", port=PORT, user="admin",
                        password="admin", defer_connect=True)
    c.connect(sock=s)
    c._execute_command(pymysql.constants.COMMAND.COM_QUERY,
                       ROWS % 200000)
    s.recv(65536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                 struct.pack("ii", 1, 0))
    s.close()


def worker(seed):
    rnd = random.Random(seed)
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        try:
            if rnd.random() < 0.1:
                vanish()
                continue
            conn = connect()
        except pymysql.err.MySQLError as e:  # a refused or failed login
            note("client:%s:%s" % (type(e).__name__,
                                   e.args[0] if e.args else "?"))
            continue
        except Exception as e:
            note("client:" + type(e).__name__)
            continue
        try:
            cur = conn.cursor()
            for _ in range(rnd.randint(1, 15)):
                try:
                    if rnd.random() < 0.1:
                        kill_someone(cur, rnd)
                    else:
                        cur.execute(statement(rnd))
                        cur.fetchall()
                    with lock:
                        answered[0] += 1
                except pymysql.err.MySQLError as e:
                    code = e.args[0] if e.args else 0
                    note(str(code))
                    if code in (2006, 2013, 1927):
                        break  # this session is gone
        except Exception as e:
            note("client:" + type(e).__name__)
        finally:
            try:
                conn.close()
            except Exception:
                pass


threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("answered %d; errors %s" % (answered[0], " ".join(
    "%s:%d" % kv for kv in sorted(errors.items()))))
