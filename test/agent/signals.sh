#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Signals in a host that reads SIGTERM with signalfd and leaves SIGPIPE at
# its default (test/agent/sighost.c): with the agent loaded, admin clients
# that vanish mid-reply must not kill the host with SIGPIPE, and SIGTERM
# must still reach the host's signalfd for its clean shutdown.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require mariadb mariadb-client
host=$HA_BUILDDIR/test/agent/sighost
[ -x "$host" ] || ha_bail "no $host (make check builds it)"

data=$HA_TMP/data
ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" "$host" \
    >"$HA_TMP/host.out" 2>"$HA_TMP/host.err" &
hpid=$!
HA_PIDS+=("$hpid")
sock=$data/sighost.$hpid.sock
ag_wait_socket "$sock" 15
ha_is "the agent serves the signalfd host" 0 "$?"
sigign=$(awk '/^SigIgn:/ {print $2}' "/proc/$hpid/status")
# SIGPIPE is signal 13: bit 12 of the mask.
ha_is "SIGPIPE is at its default in the host (not ignored)" 0 \
    "$(( 16#$sigign >> 12 & 1 ))"

# Clients that ask for a large result and close at once: the agent's
# writes then fail with EPIPE, five times over.
for i in 1 2 3 4 5; do
    python3 - "$sock" <<'PY' >/dev/null 2>&1
import socket, sys, pymysql
c = pymysql.connect(unix_socket=sys.argv[1], user="admin", password="admin")
c._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
c._execute_command(3, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 200000) SELECT i, hex(randomblob(100)) FROM n")
c._sock.close()
PY
done
sleep 0.5
ha_ok "the host survived five clients that vanished mid-reply" ha_alive "$hpid"
ag_sql "$sock" "SELECT 1"
ha_is "the admin port still answers" "0:1" "$HA_RC:$HA_OUT"

kill -TERM "$hpid"
if ha_wait_gone "$hpid" 10; then
    wait "$hpid"
    ha_is "SIGTERM reached the host's signalfd: exit 0" 0 "$?"
else
    ha_fail "the host stops within 10 s of SIGTERM"
fi
ha_file_like "the host ran its own clean shutdown" "$HA_TMP/host.out" \
    "clean shutdown after signal 15"
ha_is "the agent wrote nothing to the host's stderr" "" "$(cat "$HA_TMP/host.err")"

ha_done
