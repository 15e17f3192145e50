#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The login throttle as each driver meets it: while another process
# floods the server with wrong passwords from the same address, the
# mariadb client, PyMySQL and Go's go-sql-driver/mysql log in with the
# right one again and again, and every attempt either logs in or is
# told ERR 1129 "try again in N s", never a protocol error. The
# throttle may begin between a connection's greeting and its reply;
# that refusal went out with the reply's own sequence id (issue 35), so
# a driver reported a packet out of order instead: rawclient.py's
# throttle_midlogin makes that moment happen and reads the id.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"

HC_PYTHON=/usr/bin/python3
hc_require_file "$HC_PYTHON" python3
"$HC_PYTHON" -c 'import pymysql' 2>/dev/null ||
    hc_missing "the pymysql module for $HC_PYTHON" "apt-get install python3-pymysql"
hc_require_cmd go golang-go
hc_require_file /usr/share/gocode/src/github.com/go-sql-driver/mysql/driver.go \
    golang-github-go-sql-driver-mysql-dev
hc_mkcache

# The Go client, built offline as go.sh builds its own.
bin=$HC_CACHE/go-throttle
src=$HC_SRCDIR/throttle/main.go
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    mkdir -p "$HC_CACHE/go-build" "$HC_CACHE/go-home"
    if ! GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS='' GOTOOLCHAIN=local \
        GOCACHE=$HC_CACHE/go-build HOME=$HC_CACHE/go-home \
        timeout -k 2 150 go build -o "$bin.new" "$src" \
        >"$HA_TMP/go-build.log" 2>&1; then
        ha_fail "go: the throttle client builds offline against Debian's driver" \
            "$(tail -n 20 "$HA_TMP/go-build.log")"
        hc_done
    fi
    mv "$bin.new" "$bin"
fi

ha_start || ha_bail "heapadmind starts and takes logins"
raw=$HA_SRCDIR/test/integration/rawclient.py

# --- the moment itself --------------------------------------------------------
out=$("$HC_PYTHON" "$raw" throttle_midlogin "$HA_PORT")
ha_like "a reply that comes after the throttle began is refused with ERR 1129, sequence id 2" \
    "^seq 2 err 1129 HY000 Host '127\.0\.0\.1' is blocked because of failed logins; try again in [0-9]+ s$" \
    "$out"

# --- each driver during a flood -----------------------------------------------
# Wrong passwords from 4 connections at a time for as long as the file
# $HA_TMP/flood exists.
: >"$HA_TMP/flood"
"$HC_PYTHON" - "$raw" "$HA_PORT" "$HA_TMP/flood" <<'EOF' &
import os, socket, sys, threading
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import rawclient as rc

port, flag = int(sys.argv[2]), sys.argv[3]

def guess():
    while os.path.exists(flag):
        try:
            s = rc.connect(port, 2.0)
            _, g = rc.read_packet(s)
            if g[:1] == b"\x0a":
                s.sendall(rc.handshake_response(rc.scramble_of(g),
                                                password=b"guess"))
                rc.read_packet(s)
            s.close()
        except (OSError, EOFError, ValueError):
            pass

threads = [threading.Thread(target=guess) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
EOF
flooder=$!

# classify NAME FILE: the attempts' outcomes, one per line in FILE:
# "ok", "err <code>" or "other <text>".
classify() {
    local name=$1 file=$2 ok n1129 other
    ok=$(grep -c '^ok$' "$file")
    n1129=$(grep -c '^err 1129$' "$file")
    other=$(grep -vc '^ok$\|^err 1129$' "$file")
    ha_is "$name: every attempt during the flood logs in or gets ERR 1129 ($ok logged in, $n1129 told to wait)" \
        0 "$other"
    [ "$other" -eq 0 ] || ha_diag "$(grep -v '^ok$\|^err 1129$' "$file" | sort | uniq -c | head -5)"
    ha_ok "$name: ... and the flood made it wait at least once" test "$n1129" -gt 0
}

# Each driver from 4 loops at once: when the throttle lets a check
# through, or a login succeeds and it starts over, some connections of
# theirs have had their greeting and not yet sent their reply.
# NAME_loop N [PORT]: N logins one after the other (to PORT, default
# the server's), one outcome a line.
mariadb_loop() {
    for _ in $(seq "$1"); do
        o=$(timeout -k 2 10 mariadb --no-defaults --protocol=TCP -h127.0.0.1 \
            -P"${2:-$HA_PORT}" --skip-ssl -uadmin -padmin -N -B -e 'SELECT 1' 2>&1)
        case $o in
        1) echo ok ;;
        *"ERROR 1129 (HY000): Host '127.0.0.1' is blocked because of failed logins; try again in "[0-9]*" s") echo "err 1129" ;;
        *) echo "other $o" ;;
        esac
    done
}

pymysql_loop() {
    timeout -k 2 60 "$HC_PYTHON" - "${2:-$HA_PORT}" "$1" <<'EOF'
import sys
import pymysql

port, n = int(sys.argv[1]), int(sys.argv[2])
for _ in range(n):
    try:
        pymysql.connect(host="127.0.0.1", port=port, user="admin",
                        password="admin", connect_timeout=5).close()
        print("ok")
    except pymysql.err.OperationalError as e:
        code = e.args[0] if e.args else 0
        print("err %d" % code if code == 1129 else "other %r" % (e.args,))
    except Exception as e:
        print("other %r" % (e,))
EOF
}

go_loop() {
    timeout -k 2 60 "$bin" "admin:admin@tcp(127.0.0.1:${2:-$HA_PORT})/?timeout=5s" \
        "$1" 2>>"$HA_TMP/go.err"
}

# run NAME FN: FN 30 in 4 loops at once, every outcome in NAME.out.
run() {
    local i pids=()
    for i in 1 2 3 4; do
        "$2" 30 >"$HA_TMP/$1.$i" &
        pids+=($!)
    done
    wait "${pids[@]}"
    cat "$HA_TMP/$1".[1-4] >"$HA_TMP/$1.out"
}

run mariadb mariadb_loop
classify "mariadb" "$HA_TMP/mariadb.out"
run pymysql pymysql_loop
classify "PyMySQL" "$HA_TMP/pymysql.out"
run go go_loop
classify "Go go-sql-driver/mysql" "$HA_TMP/go.out"

# --- each driver at the very moment -------------------------------------------
# Through rawclient.py's proxy, which holds each reply until the
# throttle is on: the refusal a driver reads is the one sent mid-login.
rm -f "$HA_TMP/flood"
wait "$flooder"
for d in mariadb pymysql go; do
    pport=$(ha_free_port) || ha_bail "no free port for the proxy"
    "$HC_PYTHON" "$raw" throttle_proxy "$HA_PORT" "$pport" 2 \
        >"$HA_TMP/proxy-$d.out" 2>&1 &
    proxy=$!
    for _ in $(seq 50); do
        grep -q ready "$HA_TMP/proxy-$d.out" && break
        sleep 0.1
    done
    "${d}_loop" 2 "$pport" >"$HA_TMP/mid-$d.out"
    wait "$proxy"
    ha_is "$d: refused mid-login, twice: ERR 1129 each time (proxy: $(grep -c served "$HA_TMP/proxy-$d.out") served)" \
        "err 1129,err 1129" "$(paste -sd, "$HA_TMP/mid-$d.out")"
done

ha_sql_patient "SELECT 1"
ha_is "after the flood, the right password logs in" "0:1" "$HA_RC:$HA_OUT"
ha_stop
hc_done
