#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# One login for both front-ends: the same peer is judged alike on the
# MySQL port and over HTTP, whatever the socket family it arrives in.
# Both listen on 0.0.0.0 (IPv4 peers), on [::] (dual-stack: IPv6 peers,
# and IPv4 peers as ::ffff:a.b.c.d) and on a unix socket. From each
# peer, the default credentials (admin:admin) are accepted only when the
# peer is local (loopback or the unix socket), a changed password
# everywhere, a wrong one nowhere; an IPv4-mapped peer is named, judged
# and throttled as the IPv4 address it is.
#
# Non-loopback peers are this machine's own non-loopback addresses (a
# connection to one comes from it): checked when the machine has one.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require curl curl

# Four ports of our own beside ha_start's: another test may take one
# between the probe and the bind, so a start that fails gets new ones.
hsock=$HA_SOCKDIR/http.sock
started=
for _ in 1 2 3; do
    p4=$(ha_free_port)
    p6=$(ha_free_port)
    h4=$(ha_free_port)
    h6=$(ha_free_port)
    cat >"$HA_TMP/peers.tmpl" <<CNF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin;ops:S3cret-ops";
    stats_credentials = "stats:stats";
    mysql_ifaces = "127.0.0.1:@PORT@;0.0.0.0:$p4;[::]:$p6;@SOCK@";
    http_ifaces = "0.0.0.0:$h4;[::]:$h6;$hsock";
};
CNF
    if ha_start -C "$HA_TMP/peers.tmpl"; then
        started=1
        break
    fi
done
[ -n "$started" ] || ha_bail "heapadmind starts"

# This machine's first non-loopback IPv4 and global IPv6 address, if any.
ext4=$(ip -o -4 addr show scope global 2>/dev/null |
    awk '{ sub(/\/.*/, "", $4); print $4; exit }')
ext6=$(ip -o -6 addr show scope global 2>/dev/null |
    awk '{ sub(/\/.*/, "", $4); print $4; exit }')

# my_login KIND ADDR USER PASS: "ok" or "denied" for a MySQL login.
my_login() {
    local out
    case $1 in
    unix)
        out=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
            --protocol=SOCKET -S "$HA_SOCK" -u"$3" -p"$4" -N -B \
            -e "SELECT 1" 2>&1)
        ;;
    *)
        out=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
            --protocol=TCP -h"$2" -P"$([ "$1" = v4 ] && echo "$p4" || echo "$p6")" \
            --skip-ssl -u"$3" -p"$4" -N -B -e "SELECT 1" 2>&1)
        ;;
    esac
    case $out in
    1) echo ok ;;
    *"ERROR 1045"*) echo denied ;;
    *"ERROR 1129"*"try again in "*) echo "blocked ${out##*try again in }" ;;
    *) echo "other: $out" ;;
    esac
}

# http_login KIND ADDR USER PASS: "ok" (200), "denied" (401), "blocked N"
# (429, Retry-After: N) or the code.
http_login() {
    local out code after
    case $1 in
    unix)
        out=$(curl -s -D - -o /dev/null --max-time 20 \
            --unix-socket "$hsock" -u "$3:$4" http://localhost/metrics)
        ;;
    v4)
        out=$(curl -s -D - -o /dev/null --max-time 20 \
            -u "$3:$4" "http://$2:$h4/metrics")
        ;;
    *)
        out=$(curl -s -g -D - -o /dev/null --max-time 20 \
            -u "$3:$4" "http://[$2]:$h6/metrics")
        ;;
    esac
    code=$(awk 'NR == 1 { print $2 }' <<<"$out")
    after=$(tr -d '\r' <<<"$out" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }')
    case $code in
    200) echo ok ;;
    401) echo denied ;;
    429) echo "blocked ${after:-?} s" ;;
    *) echo "HTTP $code" ;;
    esac
}

# patient FUNCTION ARGS...: FUNCTION's verdict, after waiting as long as
# the throttle says each time it answers "blocked N s" (as a client
# should): the checks below are about who is let in, not about the
# throttle, which the wrong passwords in them set off.
patient() {
    local v i
    for ((i = 0; i < 10; i++)); do
        v=$("$@")
        case $v in
        "blocked "*) sleep "$(awk '{ print $2 }' <<<"$v")" ;;
        *) break ;;
        esac
    done
    echo "$v"
}

# Each peer: kind, address to connect to, local or not.
peers=("v4 127.0.0.1 local" "v6 ::ffff:127.0.0.1 local" "v6 ::1 local"
    "unix - local")
if [ -n "$ext4" ]; then
    peers+=("v4 $ext4 remote" "v6 ::ffff:$ext4 remote")
else
    ha_pass "# SKIP no non-loopback IPv4 address on this machine"
fi
if [ -n "$ext6" ]; then
    peers+=("v6 $ext6 remote")
else
    ha_pass "# SKIP no global IPv6 address on this machine"
fi

for p in "${peers[@]}"; do
    read -r kind addr where <<<"$p"
    what="$kind $addr"
    [ "$kind" = unix ] && what="the unix socket"
    default=denied
    [ "$where" = local ] && default=ok
    ha_is "MySQL from $what ($where): admin:admin is $default" \
        "$default" "$(patient my_login "$kind" "$addr" admin admin)"
    ha_is "HTTP from $what ($where): admin:admin is $default" \
        "$default" "$(patient http_login "$kind" "$addr" admin admin)"
    ha_is "MySQL from $what: a changed password logs in" \
        ok "$(patient my_login "$kind" "$addr" ops S3cret-ops)"
    ha_is "HTTP from $what: a changed password logs in" \
        ok "$(patient http_login "$kind" "$addr" ops S3cret-ops)"
    ha_is "MySQL from $what: a wrong password is denied" \
        denied "$(patient my_login "$kind" "$addr" ops wrong)"
    ha_is "HTTP from $what: a wrong password is denied" \
        denied "$(patient http_login "$kind" "$addr" ops wrong)"
done

# Named alike: an IPv4-mapped peer is its IPv4 address in the log and in
# ERR 1045's text, on both ports.
out=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults --protocol=TCP \
    -h::ffff:127.0.0.1 -P"$p6" --skip-ssl -uops -pwrong -e "SELECT 1" 2>&1)
ha_like "ERR 1045 names an IPv4-mapped peer by its IPv4 address" \
    "Access denied for user 'ops'@'127\.0\.0\.1'" "$out"
ha_file_like "the MySQL log names the mapped peer 127.0.0.1:port" "$HA_LOG" \
    "login: user 'ops' from 127\.0\.0\.1:[0-9]+ "
ha_file_like "the MySQL log names an IPv6 peer [::1]:port" "$HA_LOG" \
    "login: user 'ops' from \[::1\]:[0-9]+ "
if [ -n "$ext4" ]; then
    ha_file_like "the log says why default credentials were refused from afar" \
        "$HA_LOG" "login refused: user 'admin' from ${ext4//./\\.}:[0-9]+ .*default credentials are accepted only over loopback"
fi

# One throttle entry for both ports and both socket families: failures
# over HTTP from ::ffff:a.b.c.d hold a MySQL login from a.b.c.d, and the
# answers say when to come back instead of holding the connection.
if [ -n "$ext4" ]; then
    block_http() { # fails over HTTP until told to wait; $v the answer, $t0 when
        v=
        for _ in 1 2 3 4 5 6 7 8; do
            v=$(http_login v6 "::ffff:$ext4" ops wrong)
            t0=$(date +%s%N)
            [ "${v%% *}" = blocked ] && break
        done
    }
    block_http
    ha_like "HTTP from ::ffff:$ext4: after repeated failures, 429 with Retry-After" \
        '^blocked [0-9]+ s$' "$v"
    # The MySQL try must come within the wait HTTP told (whole seconds,
    # rounded up: at least N-1 s); on a loaded machine the client may
    # start after it has passed, which proves nothing: then be told to
    # wait over HTTP again (longer each time) and try again. The probe's
    # password is wrong, so that a try past the wait is one more failure,
    # not a login that forgets them.
    m=
    for _ in 1 2 3 4 5; do
        m=$(my_login v4 "$ext4" ops wrong)
        ms=$((($(date +%s%N) - t0) / 1000000))
        wait_ms=$(((10#0${v//[!0-9]/} - 1) * 1000))
        [ "${m%% *}" = blocked ] && break
        [ "$ms" -lt "$wait_ms" ] && break
        block_http
    done
    ha_like "... and MySQL from $ext4 (another port and family) gets ERR 1129 at once" \
        '^blocked [0-9]+ s$' "$m"
    ha_is "... and after the wait it told, the right password logs in" \
        ok "$(patient my_login v4 "$ext4" ops S3cret-ops)"
fi

# PROCESSLIST shows both front-ends' clients with the same peer names.
ps_host() {
    local out
    out=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
        --protocol=TCP -h::ffff:127.0.0.1 -P"$p6" --skip-ssl -uops \
        -pS3cret-ops -N -B \
        -e "SELECT host FROM stats_admin_sessions WHERE id = CONNECTION_ID()" 2>&1)
    case $out in
    *"ERROR 1129"*"try again in "*) echo "blocked ${out##*try again in }" ;;
    *) echo "$out" ;;
    esac
}
ps=$(patient ps_host)
ha_like "PROCESSLIST: a mapped MySQL peer is 127.0.0.1:port" \
    '^127\.0\.0\.1:[0-9]+$' "$ps"

ha_done
