#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The limits in admin_variables: max_connections (ERR 1040 without
# SQLSTATE as the very first packet, then close), connect_timeout (the
# login must finish in time, even byte by byte), wait_timeout (idle
# sessions get ERR 4031 and are closed), max_allowed_packet (ERR 1153, also
# reported by @@max_allowed_packet), the output bound (a client that stops
# reading a big result is dropped after net_write_timeout while memory
# stays flat and other sessions are served) and descriptor exhaustion
# (ulimit -n via prlimit: new connections get ERR 1040, open sessions are
# served, no busy loop). Every limit shows in global_variables.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ha_require prlimit util-linux
ha_require curl curl
RAW=("${HA_PYTHON:-/usr/bin/python3}" "$HA_SRCDIR/test/integration/rawclient.py")
raw() { timeout -k 2 30 "${RAW[@]}" "$1" "$HA_PORT" "${@:2}"; }

# limits_config FILE BODY: a config template with BODY in admin_variables.
limits_config() {
    cat >"$1" <<CNF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credentials = "stats:stats";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    $2
};
CNF
}

# --- defaults ----------------------------------------------------------------

ha_start || ha_bail "heapadmind starts with the default limits"
ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name IN ('admin-max_connections', 'admin-connect_timeout', 'admin-wait_timeout', 'admin-net_write_timeout', 'admin-max_allowed_packet', 'admin-max_output_buffer') ORDER BY 1"
ha_is "global_variables shows the default limits" \
    "admin-connect_timeout	10
admin-max_allowed_packet	67108864
admin-max_connections	256
admin-max_output_buffer	67108864
admin-net_write_timeout	60
admin-wait_timeout	28800" "$HA_OUT"
ha_file_like "the log shows the limits" "$HA_LOG" \
    'max_connections = 256, connect_timeout = 10 s, wait_timeout = 28800 s'
ha_stop

# --- small limits ------------------------------------------------------------

limits_config "$HA_TMP/small.cnf" "max_connections = 5; connect_timeout = 2;
    wait_timeout = 3; net_write_timeout = 3; max_allowed_packet = 1048576;
    max_output_buffer = 1048576; max_pending_logins_per_host = 4;"
# Under ASan a freed block waits in the quarantine (256 MB by default)
# before it is reused, so the RSS check of the client that stops reading
# would measure each statement's freed buffers filling it (49 MB once on
# CI), not replies piling up: this daemon's quarantine is 4 MB.
if grep -aq __asan_init "$HA_DAEMON"; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4" \
        ha_start -C "$HA_TMP/small.cnf"
else
    ha_start -C "$HA_TMP/small.cnf"
fi || ha_bail "heapadmind starts with small limits"

ha_sql_is "@@max_allowed_packet follows the config" \
    "SELECT @@max_allowed_packet, @@wait_timeout, @@net_write_timeout" \
    "1048576	3	3"
ha_sql_is "admin-max_allowed_packet is 1048576" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'admin-max_allowed_packet'" \
    1048576
ha_sql_err "global_variables limits are read-only" \
    "UPDATE global_variables SET variable_value = '9' WHERE variable_name = 'admin-max_connections'" \
    "read-only"

# max_connections: with five sessions held, one more is let in for an
# admin only (MySQL keeps one for SUPER), so monitoring that fills every
# slot never locks the admin out.
exec 7< <(raw hold 5 6)
read -r -t 10 held <&7
ha_is "five sessions are open" "held 5" "${held:-}"
ha_sql "SELECT 1" -ustats -pstats
ha_like "the sixth, a stats user, gets ERROR 1040 after its login" \
    "ERROR 1040 .*Too many connections" "$HA_ERR"
ha_file_like "... and the log says the extra slot is for admins" "$HA_LOG" \
    "login refused: user 'stats' .*max_connections reached; the one connection kept beyond it is for admin users"
ha_sql "SELECT 1"
ha_is "the sixth, an admin, gets in" "0:1" "$HA_RC:$HA_OUT"
cat <&7 >/dev/null
exec 7<&-
# Six held (the admin slot taken too): a seventh is refused at once.
exec 7< <(raw hold 6 4)
read -r -t 10 held <&7
ha_is "six admin sessions are open" "held 6" "${held:-}"
ha_is "the seventh connection gets ERR 1040 without SQLSTATE, then EOF" \
    "err 1040 nostate Too many connections / closed" "$(raw first_packet)"
ha_sql "SELECT 1"
ha_like "the mariadb client reports ERROR 1040" "ERROR 1040 .*Too many connections" "$HA_ERR"
ha_file_like "the log names max_connections" "$HA_LOG" \
    'max_connections \(5\) reached: refusing new connections with ERR 1040'
cat <&7 >/dev/null
exec 7<&-
for _ in $(seq 50); do
    ha_sql "SELECT 1"
    [ "$HA_RC" = 0 ] && break
    sleep 0.1
done
ha_is "a session is possible again once they closed" "0:1" "$HA_RC:$HA_OUT"
ha_file_like "the log says so" "$HA_LOG" 'accepting connections again \([0-9]+ refused at max_connections\)'

# The held sessions are all gone (their closes processed), so the count
# below is the silent sockets' alone.
ha_sql_wait 1 "SELECT COUNT(*) FROM stats_admin_sessions"
ha_is "only this session is left" 1 "$HA_OUT"

# Sockets that never log in take no session slot, and one address holds
# at most max_pending_logins_per_host (4) of them: its own oldest makes
# room. The admin connects once all six have their greeting (the script
# says so), not after a guessed delay a loaded machine may outrun.
exec 7< <(python3 - "$HA_PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
socks = []
for _ in range(6):
    s = socket.create_connection(("127.0.0.1", port))
    s.recv(1024)              # the greeting; never answered
    socks.append(s)
print("silent 6", flush=True)
time.sleep(8)                 # held while the admin logs in
PY
)
silent=$!
read -r -t 30 held <&7
ha_is "six silent sockets got their greeting" "silent 6" "${held:-}"
ha_sql "SELECT 1"
ha_is "6 silent sockets at max_connections 5 (+1): an admin still logs in" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT 1" -ustats -pstats
ha_is "... and so does a stats user: they take no session slot" "0:1" "$HA_RC:$HA_OUT"
ha_file_like "... the oldest silent sockets of that address made room, and it was logged" "$HA_LOG" \
    'closing connection [0-9]+ \(127\.0\.0\.1:[0-9]+\), which had not logged in, to admit a new one: max_pending_logins_per_host reached for its address'
kill "$silent" 2>/dev/null
exec 7<&-

# connect_timeout
ha_like "a silent client is closed after connect_timeout" \
    '^closed after [23]s$' "$(raw length_beyond_data 8)"
ha_like "a byte-by-byte login is closed after connect_timeout too" \
    '^closed after [23]s$' "$(raw slow_login 8)"
ha_file_like "the log names connect_timeout" "$HA_LOG" \
    'login not finished within 2 s \(connect_timeout, state handshake\); closing'

# wait_timeout
ha_is "an idle session gets ERR 4031 and EOF; a busy one is kept" \
    "idle: ['err', '4031'] closed busy: 5 6" "$(raw wait_timeout 3)"
ha_file_like "the log names wait_timeout" "$HA_LOG" \
    'idle for 3 s \(wait_timeout\); closing'

# max_allowed_packet. Over raw sockets: the server answers at the header
# and closes while a real client may still be sending the body, and the
# reset can then discard the ERR before the client reads it (no lingering
# close yet).
ha_is "a 1.5 MB command over max_allowed_packet gets ERROR 1153, then EOF" \
    "err 1153 08S01 Got a packet bigger than 'max_allowed_packet' bytes / closed" \
    "$(raw big_packet 1500000)"
ha_file_like "the log says why" "$HA_LOG" "malformed input: .*; closing"
ha_sql_is "the daemon serves after it" "SELECT 1" 1

# Output bound: a result bigger than max_output_buffer still reaches a
# client that reads it.
ha_sql_is "a 6 MB result goes out with a 1 MiB output bound" \
    "SELECT length(hex(randomblob(3000000))) FROM (SELECT hex(randomblob(3000000)))" 6000000 \
    --max-allowed-packet=64M

# A client that stops reading: 40 pipelined 4 MB results (160 MB) would
# pile up without the bound.
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$HA_PID/status"; }
quick=$(ha_quick_ms "$(ha_baseline_ms)")
rss0=$(rss)
exec 7< <(raw no_read "SELECT hex(randomblob(2000000))" 40 5)
read -r -t 10 sent <&7
ha_is "the non-reading client sent its 40 queries" "sent 40" "${sent:-}"
sleep 1
t0=$(date +%s%N)
ha_sql_is "another session is served while it is stuck" "SELECT 2" 2
t1=$(date +%s%N)
ha_ok "... within $quick ms, 3x this run's baseline + 500 ms ($(((t1 - t0) / 1000000)) ms)" \
    test $(((t1 - t0) / 1000000)) -lt "$quick"
rss1=$(rss)
ha_ok "RSS grows by less than 48 MB ($rss0 -> $rss1 kB)" \
    test $((rss1 - rss0)) -lt 49152
read -r -t 15 verdict <&7
exec 7<&-
ha_like "the server dropped the client that did not read" '^closed after' "${verdict:-}"
ha_file_like "the log says why" "$HA_LOG" \
    'client not reading: [0-9]+ reply bytes unsent for 3 s \(net_write_timeout\); closing'
ha_ok "the daemon is alive" ha_alive "$HA_PID"
ha_sql_is "and serves SELECT 1" "SELECT 1" 1
ha_stop

# --- one output budget for all sessions ------------------------------------------
# A client that never reads holds its reply (less what the kernel's socket
# buffers take, at most ~4 MB on loopback); every session's unsent replies
# together stay under max_output_total: a result set bigger than what is
# left gets ERR 1041, and small answers still go out.

limits_config "$HA_TMP/total.cnf" "max_output_total = 16777216;
    net_write_timeout = 10;"
ha_start -C "$HA_TMP/total.cnf" || ha_bail "heapadmind starts with a 16 MiB output budget"
ha_sql_is "admin-max_output_total shows it" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'admin-max_output_total'" 16777216
exec 7< <(raw no_read "SELECT hex(randomblob(6000000))" 1 4)
read -r -t 10 sent <&7
ha_is "a non-reading client asked for a 12 MB result" "sent 1" "${sent:-}"
sleep 0.5
ha_sql "SELECT hex(randomblob(6000000))" --max-allowed-packet=64M
ha_like "a second 12 MB result, with 12 MB held unread, gets ERR 1041 naming the budget" \
    "ERROR 1041 .*larger than the [0-9]+ bytes of output left \(admin_variables\.max_output_total" \
    "$HA_ERR"
ha_sql_is "... small answers still go out" "SELECT 3" 3
cat <&7 >/dev/null
exec 7<&-
ha_sql "SELECT length(hex(randomblob(6000000))) FROM (SELECT hex(randomblob(6000000)) AS h)"
ha_sql "SELECT hex(randomblob(6000000))" --max-allowed-packet=64M
ha_is "once that client is gone the budget is back: the 12 MB result goes out" \
    "0:12000000" "$HA_RC:${#HA_OUT}"
ha_stop

# --- descriptor exhaustion ---------------------------------------------------

hport=$(ha_free_port)
limits_config "$HA_TMP/fds.cnf" "max_connections = 1000;
    http_ifaces = \"127.0.0.1:$hport\";"
ha_start -C "$HA_TMP/fds.cnf" || ha_bail "heapadmind starts for the fd test"
exec 8< <(raw hold 1 12)
read -r -t 10 held <&8
ha_is "one session is open before the limit" "held 1" "${held:-}"
n_fds=$(find "/proc/$HA_PID/fd" -mindepth 1 | wc -l)
prlimit --pid "$HA_PID" --nofile=$((n_fds + 5)):$((n_fds + 5))
# The flood keeps its sockets open while stdin (a sleep) lasts.
exec 7< <(sleep 6 | raw fd_flood 30)
read -r -t 10 flood <&7
ha_like "connections past the descriptor limit get ERR 1040" \
    '^err 1040 nostate=[12][0-9];handshake=[1-9]$' "${flood:-}"
cpu() { awk '{ print $14 + $15 }' "/proc/$HA_PID/stat"; }
c0=$(cpu)
raw first_packet >"$HA_TMP/pending.out" &
pending=$!
sleep 1
c1=$(cpu)
ha_ok "no busy loop while out of descriptors ($c0 -> $c1 ticks in 1 s)" \
    test $((c1 - c0)) -lt 30
ha_file_like "the log says it once" "$HA_LOG" \
    'accept on 127.0.0.1:[0-9]+ failed: Too many open files: refusing new connections'
ha_is "... once per burst" 1 \
    "$(grep -c 'failed: Too many open files' "$HA_LOG")"
cat <&7 >/dev/null
exec 7<&-
wait "$pending"
ha_sql_is "new sessions work once descriptors are free" "SELECT 3" 3
ha_file_like "the log says so" "$HA_LOG" \
    'accepting connections again \([0-9]+ refused while out of file descriptors\)'
# The same over HTTP: connections past the limit are answered 503 with
# the reserve descriptor, one log line for the burst, and HTTP works
# again once descriptors are free.
http_flood=$(timeout -k 2 30 python3 - "$hport" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held, codes = [], {}
for _ in range(40):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        held.append(s)
    except OSError:
        pass
for s in held:
    try:
        s.settimeout(0.5)
        b = s.recv(100)
        k = b.split(b" ")[1].decode() if b.startswith(b"HTTP/") else "held"
    except OSError:
        k = "held"
    codes[k] = codes.get(k, 0) + 1
print(" ".join("%s=%d" % kv for kv in sorted(codes.items())))
PY
)
ha_like "HTTP connections past the descriptor limit get 503 at once" \
    '503=[1-9]' "$http_flood"
ha_is "... logged once per burst" 1 \
    "$(grep -c 'http: accept on 127.0.0.1:[0-9]* failed: Too many open files' "$HA_LOG")"
ha_like "HTTP answers again once descriptors are free" '^200$' \
    "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -u stats:stats "http://127.0.0.1:$hport/metrics")"
cat <&8 >/dev/null
exec 8<&-
ha_stop

ha_done
