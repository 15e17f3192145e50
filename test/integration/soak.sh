#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A short soak (soak.py): 12 PyMySQL clients for 15 s throw a random mix
# at one daemon: slow statements that pause between slices, big results
# that stream, KILL and KILL QUERY of whatever runs, deadlines, prof_active
# toggles, and clients that reset their connection mid-result. Afterwards
# the daemon serves, no session is left behind, its log has no crash or
# sanitizer report (this script runs under ASan and UBSan in CI too), and
# a SIGTERM with sessions open stops it cleanly. First, a client's pool
# of 24 connections opened at once from one address all log in (the
# soak's 12 clients start that way): the bound on connections not logged
# in yet must leave room for it.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_require_python_module pymysql

cat >"$HA_TMP/s.tmpl" <<CNF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    max_execution_time = 3000;
    max_output_total = 33554432;
    net_write_timeout = 5;
};
CNF
ha_start -C "$HA_TMP/s.tmpl" || ha_bail "heapadmind starts"

# Every socket connected (each has its greeting) before any logs in.
pool=$("${HA_PYTHON:-/usr/bin/python3}" - "$HA_PORT" <<'PY' 2>&1
import socket, sys
import pymysql
port = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", port), timeout=30)
         for _ in range(24)]
for s in socks:
    s.recv(1, socket.MSG_PEEK)
ok, bad = 0, []
for s in socks:
    c = pymysql.connect(host="127.0.0.1", port=port, user="admin",
                        password="admin", defer_connect=True,
                        read_timeout=30)
    try:
        c.connect(sock=s)
        cur = c.cursor()
        cur.execute("SELECT 1")
        ok += cur.fetchone()[0]
        c.close()
    except pymysql.MySQLError as e:
        bad.append(str(e.args[0]))
print("%d logged in%s" % (ok, "; failed: " + " ".join(bad) if bad else ""))
PY
)
ha_is "a pool of 24 connections opened at once from one address all log in" \
    "24 logged in" "$pool"

summary=$(timeout -k 5 90 "${HA_PYTHON:-/usr/bin/python3}" \
    "$HA_SRCDIR/test/integration/soak.py" "$HA_PORT" 15 12 \
    2>"$HA_TMP/soak.err")
ha_diag "soak: $summary"
ha_like "the clients ran to the end and got answers" '^answered [1-9][0-9]*;' "$summary"
ha_unlike "... with no client-side failure (protocol error, hang)" 'client:' "$summary"
ha_unlike "... and no error other than kills, deadlines and lost connections" \
    ' (1[0-9]{3}|[2-9][0-9]{3}):' \
    "$(sed -E 's/ (1317|3024|2013|2006|1094|1927):[0-9]+//g' <<<"$summary")"
ha_ok "the daemon is alive" ha_alive "$HA_PID"
ha_sql_is "... and serves SELECT 1" "SELECT 1" 1
ha_sql_wait 0 "SELECT count(*) FROM stats_admin_sessions WHERE id <> CONNECTION_ID()" 60
ha_is "no session is left behind" 0 "$HA_OUT"

# SIGTERM while sessions are open and some statements are paused.
exec 7< <(timeout -k 5 60 "${HA_PYTHON:-/usr/bin/python3}" \
    "$HA_SRCDIR/test/integration/soak.py" "$HA_PORT" 10 8 2>/dev/null)
sleep 3
kill -TERM "$HA_PID"
if ha_wait_gone "$HA_PID" 10; then
    ha_pass "SIGTERM in the middle of it: the daemon stops"
else
    ha_fail "SIGTERM in the middle of it: the daemon stops"
fi
ha_forget "$HA_PID"
cat <&7 >/dev/null
exec 7<&-
ha_file_like "... saying so" "$HA_LOG" "heapadmind stopped"
ha_ok "no crash or sanitizer report in the log" \
    bash -c "! grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error|Segmentation|stack-use' '$HA_LOG'"

ha_done
