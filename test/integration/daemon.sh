#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Process life cycle: pid file and its lock (a second daemon on the same
# datadir is refused and named), SIGTERM and SIGINT (exit 0 within 2 s,
# pid file and unix socket removed, even with a session open), daemon mode
# (pid file, log file, the parent's verdict), -D, and the command line.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# stop_within NAME SIGNAL: signal the current daemon and check that it
# exits 0 within 2 s and removes its pid file and unix socket.
stop_within() {
    local name=$1 sig=$2 t0 t1 pidfile=$HA_DATADIR/heapadmind.pid
    t0=$(now_ms)
    kill "-$sig" "$HA_PID"
    if ha_wait_gone "$HA_PID" 2; then
        t1=$(now_ms)
        ha_pass "$name: SIG$sig stops it within 2 s ($((t1 - t0)) ms)"
    else
        ha_fail "$name: SIG$sig stops it within 2 s" \
            "pid $HA_PID still running after 2 s"
        ha_wait_gone "$HA_PID" 5
    fi
    ha_forget "$HA_PID"
    if wait "$HA_PID" 2>/dev/null; then
        HA_EXIT=0
    else
        HA_EXIT=$?
    fi
    [ "$HA_EXIT" = 127 ] || ha_is "$name: exit status 0 after SIG$sig" 0 "$HA_EXIT"
    ha_ok "$name: pid file removed" test ! -e "$pidfile"
    ha_ok "$name: unix socket removed" test ! -e "$HA_SOCK"
    ha_file_like "$name: the log says why it stopped" "$HA_LOG" \
        "received SIG$sig; shutting down"
}

# --- -V, -h, bad usage ------------------------------------------------------

out=$(timeout 5 "$HA_DAEMON" -V 2>&1)
ha_like "-V prints the version and exits 0" "^0:heapadmind [0-9]+\.[0-9]+" \
    "$?:$out"
out=$(timeout 5 "$HA_DAEMON" -h 2>&1)
ha_like "-h prints the usage and exits 0" \
    "^0:usage: heapadmind \[-f\] \[-c FILE\] \[-D DATADIR\] \[--initial\] \[--gateway\] \[-V\] \[-h\]" \
    "$?:$out"
timeout 5 "$HA_DAEMON" -Z >/dev/null 2>&1
ha_is "an unknown option exits 2" 2 "$?"

# --- foreground: pid file, lock, SIGTERM --------------------------------------

HA_DATADIR=$HA_TMP/fg/nested/data
ha_start || ha_bail "heapadmind -f starts"
ha_ok "a missing datadir is created (with its parents)" test -d "$HA_DATADIR"
ha_is "pid file holds the daemon's pid" "$HA_PID" \
    "$(cat "$HA_DATADIR/heapadmind.pid" 2>/dev/null)"
ha_file_like "-f logs to stderr: ready line" "$HA_LOG" \
    "^[0-9T:.-]+Z \[notice\] ready for connections"
ha_file_like "-f logs each listener" "$HA_LOG" \
    "\[info\] listening on 127\.0\.0\.1:$HA_PORT$"
ha_ok "-f writes no log file in the datadir" \
    test ! -e "$HA_DATADIR/heapadmind.log"
ha_file_like "the log shows the effective configuration" "$HA_LOG" \
    "mysql_ifaces = \"127\.0\.0\.1:$HA_PORT;"
ha_unlike "the log never shows a password" "admin:admin|stats:stats" \
    "$(cat "$HA_LOG")"
first_pid=$HA_PID

# A second daemon on the same datadir, another port and socket.
second_port=$(ha_free_port)
ha_write_config "$HA_TMP/second.cnf" "$HA_DATADIR" \
    "127.0.0.1:$second_port;$HA_SOCKDIR/second.sock"
out=$(timeout 10 "$HA_DAEMON" -f -c "$HA_TMP/second.cnf" 2>&1)
rc=$?
ha_unlike "second daemon (-f) on the same datadir refuses to start" "^0$" "$rc"
ha_like "second daemon names the pid that holds the datadir" \
    "another heapadmind \(pid $first_pid\) is running on this datadir: $HA_DATADIR/heapadmind\.pid is locked" \
    "$out"
out=$(timeout 10 "$HA_DAEMON" -c "$HA_TMP/second.cnf" 2>&1)
rc=$?
ha_is "second daemon (daemon mode) refused: the parent exits 1" 1 "$rc"
ha_like "second daemon (daemon mode) prints the reason" \
    "another heapadmind \(pid $first_pid\) is running" "$out"
ha_ok "the refused daemon left no unix socket" \
    test ! -e "$HA_SOCKDIR/second.sock"
ha_is "the pid file still holds the first daemon's pid" "$first_pid" \
    "$(cat "$HA_DATADIR/heapadmind.pid" 2>/dev/null)"
ha_sql_is "the first daemon still serves" "SELECT 1+1" 2

# SIGTERM with a session open: the client waits on stdin meanwhile.
logins=$(grep -c "login: user 'admin'" "$HA_LOG")
(sleep 4 | ha_mysql -N -B >/dev/null 2>&1) &
holder=$!
for _ in $(seq 50); do
    [ "$(grep -c "login: user 'admin'" "$HA_LOG")" -gt "$logins" ] && break
    sleep 0.05
done
ha_ok "a client holds a session open" \
    test "$(grep -c "login: user 'admin'" "$HA_LOG")" -gt "$logins"
stop_within "foreground" TERM
ha_file_like "SIGTERM closed the open session" "$HA_LOG" "closing 1 session"
wait "$holder" 2>/dev/null

# The lock went with it: a new daemon starts on the same datadir.
ha_start || ha_bail "a daemon starts again on the datadir after SIGTERM"
ha_pass "the datadir is free again after SIGTERM"
stop_within "foreground" INT

# --- daemon mode ---------------------------------------------------------------

HA_DATADIR=$HA_TMP/dm
if ha_start -d; then
    ha_pass "daemon mode: the parent exits 0 once the daemon is ready"
    ha_is "daemon mode: pid file names a live heapadmind" \
        "$(readlink -f "$HA_DAEMON")" \
        "$(readlink -f "/proc/$HA_PID/exe" 2>/dev/null)"
    ha_file_like "daemon mode: log file in the datadir has the ready line" \
        "$HA_DATADIR/heapadmind.log" "\[notice\] ready for connections"
    ha_sql_is "daemon mode: serves" "SELECT 1+1" 2
    ha_file_like "daemon mode: the log records the login" \
        "$HA_DATADIR/heapadmind.log" "login: user 'admin' from 127\.0\.0\.1:"
    sid=$(awk '{ print $6 }' "/proc/$HA_PID/stat" 2>/dev/null)
    our_sid=$(awk '{ print $6 }' "/proc/$$/stat")
    ha_unlike "daemon mode: the daemon left our session" "^$our_sid\$" "$sid"
    stop_within "daemon mode" TERM
else
    ha_fail "daemon mode: the parent exits 0 once the daemon is ready"
fi

# Daemon mode start-up failure: the parent reports it and exits 1.
HA_DATADIR=$HA_TMP/fg/nested/data
ha_start || ha_bail "a daemon for the port-conflict case starts"
ha_write_config "$HA_TMP/conflict.cnf" "$HA_TMP/conflict" \
    "127.0.0.1:$HA_PORT"
out=$(timeout 10 "$HA_DAEMON" -c "$HA_TMP/conflict.cnf" 2>&1)
rc=$?
ha_is "daemon mode, port taken: the parent exits 1" 1 "$rc"
ha_like "daemon mode, port taken: the parent prints why" \
    "127\.0\.0\.1:$HA_PORT.*Address already in use" "$out"
ha_ok "daemon mode, port taken: no pid file left" \
    test ! -e "$HA_TMP/conflict/heapadmind.pid"
ha_stop

# --- -D overrides the config's datadir -------------------------------------------

template=$HA_TMP/override.cnf.in
ha_write_config "$template" "$HA_TMP/from-config" "127.0.0.1:@PORT@;@SOCK@"
HA_DATADIR=$HA_TMP/from-flag
if ha_start -d -C "$template" -- -D "$HA_DATADIR"; then
    ha_pass "-D DIR: daemon starts"
    ha_ok "-D DIR: pid file in DIR" test -s "$HA_DATADIR/heapadmind.pid"
    ha_ok "-D DIR: log file in DIR" test -s "$HA_DATADIR/heapadmind.log"
    ha_ok "-D DIR: the config's datadir is not used" \
        test ! -e "$HA_TMP/from-config"
    ha_file_like "-D DIR: the log names DIR as the datadir" \
        "$HA_DATADIR/heapadmind.log" "datadir $HA_DATADIR\$"
    ha_stop || ha_fail "-D DIR: daemon stops on SIGTERM"
else
    ha_fail "-D DIR: daemon starts"
fi

# --- a datadir that cannot be created --------------------------------------------

: >"$HA_TMP/plainfile"
out=$(timeout 10 "$HA_DAEMON" -f -c "$HA_TMP/second.cnf" \
    -D "$HA_TMP/plainfile/data" 2>&1)
rc=$?
ha_unlike "a datadir that cannot be created: exits non-zero" "^0$" "$rc"
ha_like "a datadir that cannot be created: the error names it" \
    "$HA_TMP/plainfile/data.*(cannot be created|Not a directory)" "$out"

# --- a datadir others can write to, a key others can read ------------------------
# sshd's StrictModes: in a world-writable datadir another user could plant
# a symlink at the next dump's name and have the daemon overwrite a file
# of their choosing (measured as root before: a root-owned 0600 file).

for mode in 1777 0777 0770; do
    mkdir -p "$HA_TMP/open$mode"
    chmod "$mode" "$HA_TMP/open$mode"
    out=$(timeout 10 "$HA_DAEMON" -f -c "$HA_TMP/second.cnf" \
        -D "$HA_TMP/open$mode" 2>&1)
    rc=$?
    ha_unlike "a datadir with mode $mode: refused (exit non-zero)" "^0$" "$rc"
    ha_like "... the error names it, its mode and the fix" \
        "datadir $HA_TMP/open$mode is writable by (others|its group) \(mode 0?$mode\).*chmod go-w" \
        "$out"
done
ha_is "... and nothing was written there" "" \
    "$(find "$HA_TMP/open1777" "$HA_TMP/open0777" -mindepth 1 2>/dev/null)"

HA_DATADIR=$HA_TMP/keymode
if ha_start; then
    ha_stop || ha_fail "keymode: daemon stops on SIGTERM"
    key=$(find "$HA_DATADIR" -maxdepth 1 -name '*key*.pem' ! -name '*public*' | head -1)
    ha_like "the generated private keys are 0600" "^600$" \
        "$(stat -c %a "$key" 2>/dev/null)"
    chmod 0644 "$key"
    out=$(timeout 10 "$HA_DAEMON" -f -c "$HA_CONF" 2>&1)
    rc=$?
    ha_unlike "a private key readable by others: refused (exit non-zero)" "^0$" "$rc"
    ha_like "... the error names the key, its mode and the fix" \
        "$key: private key is accessible by others \(mode 0644\).*chmod o-rwx" "$out"
else
    ha_fail "keymode: daemon starts"
fi

# --- unix socket permissions ----------------------------------------------------
# connect(2) on a unix socket needs write permission on the file, so its
# mode decides which local users may reach the admin port.

HA_DATADIR=$HA_TMP/sockmode
if ha_start; then
    ha_is "unix socket: default mode 0660" 660 "$(stat -c %a "$HA_SOCK")"
    ha_stop || ha_fail "unix socket: daemon stops on SIGTERM"
else
    ha_fail "unix socket: daemon starts"
fi
sed -e 's|@SOCKMODE@|0600|' >"$HA_TMP/sockmode.cnf" <<'EOF2'
datadir = "@DATADIR@";
admin_variables = {
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    unix_socket_mode = "@SOCKMODE@";
};
EOF2
if ha_start -C "$HA_TMP/sockmode.cnf"; then
    ha_is "unix socket: unix_socket_mode = \"0600\" gives mode 0600" 600 \
        "$(stat -c %a "$HA_SOCK")"
    HA_OUT=$(timeout 10 mariadb --no-defaults -S "$HA_SOCK" -uadmin -padmin \
        -N -B -e "SELECT variable_value FROM global_variables WHERE variable_name = 'admin-unix_socket_mode'" 2>&1)
    ha_is "unix socket: admin-unix_socket_mode shows the setting" 0600 \
        "$HA_OUT"
    ha_stop || ha_fail "unix socket: daemon stops on SIGTERM"
else
    ha_fail "unix socket: daemon starts with unix_socket_mode = \"0600\""
fi

ha_done
