#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Hostile input on the admin port, crafted with raw sockets
# (rawclient.py): garbage before the handshake, truncated packets, lengths
# larger than the data, out-of-order sequence ids, an HTTP request, clients
# vanishing mid-result, and hundreds of idle sockets while a real client
# logs in and queries. Each case asserts the exact ERR (or the close), and
# the daemon stays alive and serves mariadb afterwards.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

RAW=("${HA_PYTHON:-/usr/bin/python3}" "$HA_SRCDIR/test/integration/rawclient.py")
raw() { timeout -k 2 30 "${RAW[@]}" "$1" "$HA_PORT" "${@:2}"; }

cat >"$HA_TMP/hostile.cnf" <<'CNF'
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credentials = "stats:stats";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    max_connections = 1000;
    connect_timeout = 3;
};
CNF
ha_start -C "$HA_TMP/hostile.cnf" || ha_bail "heapadmind starts"

# still_serving DESC: the daemon is alive and mariadb gets SELECT 1.
still_serving() {
    if ha_alive "$HA_PID"; then
        ha_sql_is "$1: the daemon still serves SELECT 1" "SELECT 1" 1
    else
        ha_fail "$1: the daemon died"
    fi
}

ha_is "garbage instead of a HandshakeResponse41: ERR 1043, then EOF" \
    "handshake / err 1043 08S01 Bad handshake / closed" "$(raw garbage_first)"
still_serving "garbage"

ha_is "a truncated HandshakeResponse41: ERR 1043, then EOF" \
    "err 1043 08S01 Bad handshake / closed" "$(raw truncated_response)"
ha_is "half a packet, then the client closes: the server closes too" \
    closed "$(raw short_then_close)"
ha_like "a length larger than the data: closed by connect_timeout" \
    '^closed after [34]s$' "$(raw length_beyond_data 8)"
still_serving "truncated packets"

ha_is "an out-of-order sequence id at login: ERR 1156, then EOF" \
    "err 1156 08S01 Got packets out of order (sequence id 5, expected 1) / closed" \
    "$(raw bad_seq_login)"
ha_is "an out-of-order sequence id on a command: ERR 1156, then EOF" \
    "err 1156 08S01 Got packets out of order (sequence id 3, expected 0) / closed" \
    "$(raw bad_seq_command)"
ha_is "truncated commands get ERR 1835 and 1065; the session goes on" \
    "['err', '1835'] ['err', '1065'] 7" "$(raw truncated_command)"
still_serving "sequence ids"

ha_like "an HTTP request: the greeting, ERR 1156 at once, then EOF" \
    '^handshake / err 1156 08S01 Got packets out of order \(sequence id 32, expected 1\) / closed / 0\.[0-9]s$' \
    "$(raw http)"
ha_file_like "the log says it was not a MySQL client" "$HA_LOG" \
    'packet with sequence id 32 during login, expected 1 \(not a MySQL client\?\); closing'
still_serving "HTTP"

for i in 1 2 3; do
    raw vanish "SELECT hex(randomblob(8000000))" >/dev/null
done
ha_is "three clients vanished (RST) mid-result" vanished \
    "$(raw vanish "SELECT hex(randomblob(8000000))")"
ha_file_like "the log names the reset" "$HA_LOG" \
    'closed: Connection reset by peer'
still_serving "clients vanishing mid-result"

# Hundreds of idle sockets (half with half a header) while mariadb works.
quick=$(ha_quick_ms "$(ha_baseline_ms)")
exec 7< <(raw idle_many 400 4)
read -r -t 20 greeted <&7
ha_is "400 idle sockets all got a greeting" "greeted 400" "${greeted:-}"
t0=$(date +%s%N)
ha_sql_is "a real client logs in and queries meanwhile" \
    "SELECT 40 + 2" 42
t1=$(date +%s%N)
ha_ok "... within $quick ms, 3x this run's baseline + 500 ms ($(((t1 - t0) / 1000000)) ms)" \
    test $(((t1 - t0) / 1000000)) -lt "$quick"
cat <&7 >/dev/null
exec 7<&-
still_serving "idle sockets"
ha_ok "no crash or sanitizer report in the log" \
    bash -c "! grep -Eq 'AddressSanitizer|runtime error|Segmentation' '$HA_LOG'"
ha_stop

ha_done
