#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Logins with the real mariadb client: right and wrong password, unknown
# user, the stats user, the unix socket, the log lines each attempt leaves,
# and an interactive session on a pty (prompt, SELECT 1+1; prints 2).

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ha_start || ha_bail "heapadmind starts and takes logins"

ha_sql "SELECT 1"
ha_is "admin:admin logs in over TCP" "0:1" "$HA_RC:$HA_OUT"

ha_sql "SELECT 1" -uadmin -pwrong
ha_is "wrong password: exit 1" 1 "$HA_RC"
ha_like "wrong password: ERR 1045 (28000) with MySQL's text" \
    "^ERROR 1045 \(28000\): Access denied for user 'admin'@'127\.0\.0\.1' \(using password: YES\)$" \
    "$HA_ERR"

ha_sql "SELECT 1" -unobody -padmin
ha_is "unknown user: exit 1" 1 "$HA_RC"
ha_like "unknown user: ERR 1045 (28000), same text as a wrong password" \
    "^ERROR 1045 \(28000\): Access denied for user 'nobody'@'127\.0\.0\.1' \(using password: YES\)$" \
    "$HA_ERR"

ha_sql "SELECT 1" -uadmin --password=
ha_like "no password: ERR 1045 says (using password: NO)" \
    "^ERROR 1045 \(28000\): Access denied for user 'admin'@'127\.0\.0\.1' \(using password: NO\)$" \
    "$HA_ERR"

# A client that offers another auth plugin gets an AuthSwitchRequest to
# mysql_native_password.
for plugin in client_ed25519 caching_sha2_password; do
    ha_sql "SELECT 1" --default-auth=$plugin
    ha_is "client offering $plugin is switched to native password, logs in" \
        "0:1" "$HA_RC:$HA_OUT"
done
ha_sql "SELECT 1" --default-auth=client_ed25519 -pwrong
ha_like "client offering client_ed25519, wrong password: ERR 1045" \
    "^ERROR 1045 \(28000\): Access denied for user 'admin'@'127\.0\.0\.1'" \
    "$HA_ERR"

ha_sql "SELECT 1" -ustats -pstats
ha_is "stats:stats logs in" "0:1" "$HA_RC:$HA_OUT"

HA_OUT=$(ha_mysql_sock -N -B -e "SELECT 1+1" 2>&1)
ha_is "admin logs in over the unix socket $HA_SOCK" "2" "$HA_OUT"

ts='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
ha_file_like "log: timestamped login line with user and peer" "$HA_LOG" \
    "$ts \[info\] login: user 'admin' from 127\.0\.0\.1:[0-9]+ "
ha_file_like "log: login line for the stats user" "$HA_LOG" \
    "$ts \[info\] login: user 'stats' from 127\.0\.0\.1:[0-9]+ "
ha_file_like "log: failed login, wrong password, with user and peer" "$HA_LOG" \
    "$ts \[warn\] login failed: user 'admin' from 127\.0\.0\.1:[0-9]+ .*wrong password"
ha_file_like "log: failed login, unknown user" "$HA_LOG" \
    "$ts \[warn\] login failed: user 'nobody' from 127\.0\.0\.1:[0-9]+ .*unknown user"

# Failed logins are throttled per peer: after a few at once, each further
# login from the same address waits longer before its password is even
# checked (250 ms more each time), and checks for one address come one
# at a time, so a password guesser gets a few tries a second. Every
# answer is still ERR 1045 (not a dropped connection), and the right
# password is let in (after that wait) and clears it.
t0=$(date +%s%N)
n_1045=0
for _ in $(seq 8); do
    ha_sql "SELECT 1" -uadmin -pguess
    case $HA_ERR in *"ERROR 1045 (28000)"*) n_1045=$((n_1045 + 1)) ;; esac
done
ms=$((($(date +%s%N) - t0) / 1000000))
ha_is "8 wrong passwords in a row: each answered ERR 1045" 8 "$n_1045"
ha_ok "8 wrong passwords in a row took at least 2 s (took $ms ms)" \
    test "$ms" -ge 2000
ha_file_like "the log says logins are throttled" "$HA_LOG" \
    "logins from 127\.0\.0\.1 failed too often: this one is checked in [0-9]+ ms"
ha_sql "SELECT 1"
ha_is "the right password still logs in" "0:1" "$HA_RC:$HA_OUT"
n_throttled=$(grep -c "failed too often" "$HA_LOG")
ha_sql "SELECT 1" -uadmin -pguess
ha_like "after a good login the next failure is still ERR 1045" \
    "ERROR 1045" "$HA_ERR"
ha_is "... checked at once: no new throttle line in the log" \
    "$n_throttled" "$(grep -c "failed too often" "$HA_LOG")"

# Interactive: the client on a pty, as an operator types. Input is fed with
# pauses so the prompt comes first; script(1) returns the client's status.
pty_out=$HA_TMP/pty.out
{
    sleep 0.5
    printf 'SELECT 1+1;\n'
    sleep 0.5
    printf 'quit\n'
    sleep 0.3
} | TERM=dumb timeout -k 2 20 script -qec \
    "mariadb --no-defaults --protocol=TCP -h127.0.0.1 -P$HA_PORT --skip-ssl -uadmin -padmin" \
    /dev/null >"$pty_out" 2>&1
rc=$?
tr -d '\r' <"$pty_out" >"$pty_out.txt"
ha_is "interactive session exits 0 after quit" 0 "$rc"
ha_file_like "interactive session: greeting names the server version" \
    "$pty_out.txt" "Server version: 8\.0\.35-heapadmin-"
ha_file_like "interactive session: shows the prompt" "$pty_out.txt" \
    "MySQL \[\(none\)\]> "
ha_file_like "interactive session: SELECT 1+1; prints 2 in a table" \
    "$pty_out.txt" "^\| +2 \|$"
ha_file_like "interactive session: row count line" "$pty_out.txt" \
    "^1 row in set"
if ! grep -Eq '^\| +2 \|$' "$pty_out.txt"; then
    ha_file_tail "$pty_out.txt"
fi

ha_done
