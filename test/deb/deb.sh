#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test/deb/deb.sh: the Debian packages, built, checked, installed, run and
# purged (TAP-style output, like test/integration/*.sh, whose harness it
# uses).
#
#   1. debian/make-deb.sh builds them from a `make distdir` copy with
#      DEB_BUILD_OPTIONS=nocheck (make check runs the suite already);
#   2. lintian reports no error and no warning that debian/ does not
#      override; the packages hold what they should;
#   3. the unit passes systemd-analyze verify and says what the daemon
#      relies on (Type=notify, the watchdog, the heapadmin user);
#   4. the packaged heapadmind, started as systemd would (NOTIFY_SOCKET,
#      WATCHDOG_USEC, WATCHDOG_PID) but by hand, since systemd is not
#      PID 1 here, sends MAINPID= and READY=1, WATCHDOG=1 pings, STOPPING=1
#      on SIGTERM; takes a mariadb login and writes a heap dump;
#   5. install mode only: dpkg -i on this machine, heapadmind run from the
#      installed files as the heapadmin user with the installed config,
#      the dump lands in /var/lib/heapadmin owned by heapadmin, jeprof
#      names heapadmind's functions through heapadmind-dbgsym, the
#      installed logrotate file makes the daemon reopen its log, and
#      dpkg --purge removes the datadir and the config and keeps the user.
#
# Install mode changes the machine, so it runs only as root and when asked
# for: CI=true (CI runs on a throw-away machine) or HA_DEB_INSTALL=1. It
# refuses to touch heapadmin packages that are already installed, and
# purges what it installed on any exit, failure or watchdog included.
# Otherwise steps 1-4 run on the unpacked packages (dpkg-deb -x) as the
# current user; a debootstrap'ed root would take minutes and the network.
#
# Skipped (exit 77) only where dpkg-buildpackage is missing; every other
# missing tool fails the run (./bootstrap installs them all).
#
# Environment: HA_TOP_SRCDIR, HA_TOP_BUILDDIR (a configured tree: make-deb
# runs make distdir there), HA_DEB_INSTALL=1, HA_KEEP_TMP=1,
# HA_DEB_KEEP=DIR (copy the built packages there).

if ! command -v dpkg-buildpackage >/dev/null 2>&1; then
    echo "# SKIP deb: dpkg-buildpackage not found (Debian package: dpkg-dev;" \
        "./bootstrap as root installs it)"
    echo "1..0 # SKIP dpkg-buildpackage not found"
    exit 77
fi

# The package build alone takes about a minute on 2 cores, and eleven
# beside a loaded machine (measured at load 13): the watchdog allows 20.
HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-1200}
# shellcheck source=../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"

ha_require dh debhelper
ha_require fakeroot fakeroot
ha_require lintian lintian
ha_require systemd-analyze systemd
ha_require logrotate logrotate
ha_require python3 python3
ha_require flock util-linux
ha_require runuser util-linux

OUT=$HA_TMP/out
ROOT=$HA_TMP/root
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
PKGS="heapadmind libheapadmin0 libheapadmin-dev"
INSTALL=0
if [ "${CI:-}" = true ] || [ "${HA_DEB_INSTALL:-0}" = 1 ]; then
    INSTALL=1
fi
INSTALLED=0         # 1 once dpkg -i ran: cleanup purges
USER_EXISTED=1      # heapadmin existed before we installed
NOTIFY_PID=
DPID=               # the daemon under test

# ---------------------------------------------------------------------------
# Cleanup: stop what we started, purge what we installed.
# ---------------------------------------------------------------------------

deb_cleanup() {
    if [ -n "$DPID" ] && ha_alive "$DPID"; then
        kill -TERM "$DPID" 2>/dev/null
        ha_wait_gone "$DPID" 5 || kill -KILL "$DPID" 2>/dev/null
    fi
    [ -n "$NOTIFY_PID" ] && kill "$NOTIFY_PID" 2>/dev/null
    if [ "$INSTALLED" = 1 ]; then
        local p left=
        for p in heapadmind-dbgsym $PKGS; do
            dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
                grep -qv 'not-installed' && left="$left $p"
        done
        if [ -n "$left" ]; then
            echo "# cleanup: purging$left"
            # shellcheck disable=SC2086
            dpkg --purge $left >/dev/null 2>&1 ||
                echo "# cleanup: dpkg --purge$left failed"
        fi
        # Debian keeps a purged package's system user (checked below); the
        # test created it, so the test removes it, leaving the machine as
        # it found it.
        if [ "$USER_EXISTED" = 0 ] && getent passwd heapadmin >/dev/null; then
            deluser --quiet --system heapadmin >/dev/null 2>&1
            getent group heapadmin >/dev/null &&
                delgroup --quiet --system heapadmin >/dev/null 2>&1
        fi
    fi
    [ -n "${PUB:-}" ] && rm -rf "$PUB"
    ha_cleanup
}
trap deb_cleanup EXIT

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# deb_of NAME: the path of package NAME's .deb in OUT.
deb_of() {
    ls "$OUT/$1"_*.deb 2>/dev/null | head -n 1
}

# contents PKG: "mode path" lines of its .deb, paths without the leading '.'.
contents() {
    dpkg-deb -c "$(deb_of "$1")" | awk '{ sub(/^\./, "", $6); print $1, $6 }'
}

# has_path DESC PKG MODE-REGEX PATH: PKG's .deb holds PATH with a mode
# matching MODE-REGEX (e.g. '^-rw-r-----$').
has_path() {
    local line
    line=$(contents "$2" | awk -v p="$4" '$2 == p { print $1 }')
    if [ -n "$line" ] && grep -Eq -- "$3" <<<"$line"; then
        ha_pass "$1"
    else
        ha_fail "$1" "$2: expected $4 with mode matching $3, got '${line:-nothing}'"
    fi
}

# notify_listen SOCKET: a stand-in for systemd's notification socket;
# every datagram becomes one line of $HA_TMP/notify.log, newlines as '|'.
notify_listen() {
    python3 - "$1" >"$HA_TMP/notify.log" 2>&1 <<'EOF' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)   # the daemon may run as heapadmin
while True:
    data = s.recv(4096).decode(errors="replace")
    print(data.replace("\n", "|"), flush=True)
EOF
    NOTIFY_PID=$!
    local i
    for ((i = 0; i < 50; i++)); do
        [ -S "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

# wait_for_line FILE REGEX SECONDS
wait_for_line() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -Eq -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# start_daemon AS-USER BINARY CONFIG: starts BINARY in daemon mode (no -f)
# as systemd starts the unit: NOTIFY_SOCKET, WATCHDOG_USEC=400 ms and
# WATCHDOG_PID naming the process itself. Returns when the daemon reports
# ready (its parent exits 0); sets DPID from the pid file in DATADIR.
start_daemon() {
    local user=$1 bin=$2 conf=$3 rc
    local -a run=()
    [ "$user" != "$(id -un)" ] && run=(runuser -u "$user" --)
    # shellcheck disable=SC2016
    timeout -k 2 20 "${run[@]}" env NOTIFY_SOCKET="$PUB/notify" \
        WATCHDOG_USEC=400000 sh -c 'WATCHDOG_PID=$$ exec "$0" -c "$1"' \
        "$bin" "$conf" >"$HA_TMP/start.out" 2>&1
    rc=$?
    DPID=$(cat "$DATADIR/heapadmind.pid" 2>/dev/null)
    if [ $rc -ne 0 ] || [ -z "$DPID" ]; then
        ha_diag "$bin -c $conf exited $rc: $(cat "$HA_TMP/start.out")"
        ha_file_tail "$DATADIR/heapadmind.log"
        return 1
    fi
}

# run_daemon_checks USER BINARY CONFIG: steps 4 and 5 on one binary.
run_daemon_checks() {
    local user=$1 bin=$2 conf=$3 dump out i n
    HA_LOG=$DATADIR/heapadmind.log
    if ! start_daemon "$user" "$bin" "$conf"; then
        ha_bail "$bin did not start as $user"
    fi
    ha_pass "$bin starts in daemon mode as $user (pid $DPID)"
    ha_is "the daemon runs as $user" "$user" "$(ps -o user= -p "$DPID" | tr -d ' ')"
    # READY=1 is sent before the parent exits, MAINPID names the grandchild
    # that serves: what a Type=notify unit with NotifyAccess=all needs.
    if wait_for_line "$HA_TMP/notify.log" "^MAINPID=$DPID\|READY=1$" 5; then
        ha_pass "sd_notify: MAINPID=$DPID and READY=1 in one message"
    else
        ha_fail "sd_notify: MAINPID=$DPID and READY=1 in one message" \
            "got: $(tr '\n' ' ' <"$HA_TMP/notify.log")"
    fi
    sleep 1
    # 400 ms interval, pinged every 200 ms: about 5 in a second; at least
    # 3 allows for a loaded machine, 0 or 1 would be no timer at all.
    n=$(grep -c '^WATCHDOG=1$' "$HA_TMP/notify.log")
    if [ "$n" -ge 3 ]; then
        ha_pass "sd_notify: WATCHDOG=1 every half interval ($n in ~1 s)"
    else
        ha_fail "sd_notify: WATCHDOG=1 every half interval" \
            "$n pings in ~1 s with WATCHDOG_USEC=400000"
    fi

    ha_sql_is "mariadb logs in on port $HA_PORT" "SELECT 1+1" "2"
    ha_sql_ok "profiling on" \
        "UPDATE global_variables SET variable_value='true' WHERE variable_name='jemalloc-prof_active'"
    # Something to sample: 200 blobs of 100 kB in the admin database.
    ha_sql_ok "allocate 20 MB through the admin port" \
        "CREATE TABLE blobs(b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<200) INSERT INTO blobs SELECT randomblob(100000) FROM n"
    out=$(ha_mysql -vv -e "UPDATE global_variables SET variable_value='true' WHERE variable_name='jemalloc-dump_now'" 2>&1)
    ha_like "jemalloc-dump_now names the dump" "heap profile written to " "$out"
    dump=$(ls -t "$DATADIR"/proxysql."$DPID".*.m*.heap 2>/dev/null | head -n 1)
    if [ -n "$dump" ] && [ -s "$dump" ]; then
        ha_pass "the dump landed in $DATADIR ($(basename "$dump"))"
    else
        ha_fail "the dump landed in $DATADIR" "$(ls -la "$DATADIR")"
    fi
    ha_is "the dump belongs to $user" "$user" "$(stat -c %U "$dump" 2>/dev/null)"
    DUMP=$dump
}

# stop_daemon: SIGTERM; the daemon says STOPPING=1, exits, removes its
# pid file.
stop_daemon() {
    kill -TERM "$DPID"
    if ha_wait_gone "$DPID" 10; then
        ha_pass "SIGTERM stops the daemon"
        DPID=
    else
        ha_fail "SIGTERM stops the daemon"
    fi
    if wait_for_line "$HA_TMP/notify.log" '^STOPPING=1$' 3; then
        ha_pass "sd_notify: STOPPING=1 on SIGTERM"
    else
        ha_fail "sd_notify: STOPPING=1 on SIGTERM"
    fi
    ha_ok "the pid file is removed" test ! -e "$DATADIR/heapadmind.pid"
}

# A directory the heapadmin user can reach (HA_TMP is 0700): the notify
# socket and, when 6032 is taken, the config copy.
PUB=$(mktemp -d /tmp/ha-deb-pub.XXXXXX) && chmod 0755 "$PUB" ||
    ha_bail "cannot create a directory under /tmp"
notify_listen "$PUB/notify" || ha_bail "cannot bind a notify socket in $PUB"

# ---------------------------------------------------------------------------
# 1. Build
# ---------------------------------------------------------------------------

start=$(date +%s)
if DEB_BUILD_OPTIONS="nocheck parallel=$(nproc 2>/dev/null || echo 2)" \
    bash "$HA_SRCDIR/debian/make-deb.sh" "$HA_BUILDDIR" "$OUT" \
    >"$HA_TMP/make-deb.log" 2>&1; then
    ha_pass "dpkg-buildpackage -us -uc -b from a distdir copy ($(($(date +%s) - start)) s)"
else
    ha_fail "dpkg-buildpackage -us -uc -b from a distdir copy"
    ha_file_tail "$HA_TMP/make-deb.log"
    ha_file_tail "$OUT/build.log"
    ha_bail "no packages to test"
fi
[ -n "${HA_DEB_KEEP:-}" ] && mkdir -p "$HA_DEB_KEEP" && cp "$OUT"/*.deb "$HA_DEB_KEEP"/

for p in $PKGS; do
    ha_ok "$p was built" test -n "$(deb_of "$p")"
done
# The agent package follows the tree: built with the agent's sources and
# Debian's sources of its private libraries, left out (with dpkg-genchanges'
# warning) without them. Never an empty package.
if grep -q 'package heapadmin-agent in control file but not in files list' \
    "$OUT/build.log"; then
    ha_ok "heapadmin-agent left out: this tree does not build the agent" \
        test -z "$(deb_of heapadmin-agent)"
else
    has_path "heapadmin-agent ships the agent" heapadmin-agent '^-rw-r--r--$' \
        "/usr/lib/$MULTIARCH/heapadmin/heapadmin-agent.so"
    has_path "heapadmin-agent ships heapadmin-attach" heapadmin-agent \
        '^-rwxr-xr-x$' /usr/sbin/heapadmin-attach
    has_path "heapadmin-agent ships heapadmin-attach(8)" heapadmin-agent . \
        /usr/share/man/man8/heapadmin-attach.8.gz
    has_path "heapadmin-agent ships heapadmin-agent(8)" heapadmin-agent . \
        /usr/share/man/man8/heapadmin-agent.8.gz
    has_path "heapadmin-agent ships the redis-server drop-in" heapadmin-agent . \
        /usr/share/doc/heapadmin-agent/examples/redis-server.service.d/heapadmin.conf
    has_path "heapadmin-agent ships the nginx drop-in" heapadmin-agent . \
        /usr/share/doc/heapadmin-agent/examples/nginx.service.d/heapadmin.conf
    has_path "heapadmin-agent ships the host gateway's unit" heapadmin-agent . \
        /usr/share/doc/heapadmin-agent/examples/heapadmin-gateway.service
fi

# ---------------------------------------------------------------------------
# 2. lintian and contents
# ---------------------------------------------------------------------------

# --fail-on error,warning: an overridden tag (debian/*.lintian-overrides,
# each with its reason) does not count; anything else does.
if lintian --fail-on error,warning --display-info "$OUT"/*.changes \
    >"$HA_TMP/lintian.log" 2>&1; then
    ha_pass "lintian: no errors, no unexplained warnings"
else
    ha_fail "lintian: no errors, no unexplained warnings" \
        "$(grep -v 'running with root privileges' "$HA_TMP/lintian.log")"
fi
grep -E '^[EWI]:' "$HA_TMP/lintian.log" | sed 's/^/# lintian: /'

has_path "heapadmind: the daemon" heapadmind '^-rwxr-xr-x$' /usr/sbin/heapadmind
has_path "heapadmind: the config, not world-readable" heapadmind '^-rw-r-----$' \
    /etc/heapadmin/heapadmin.cnf
has_path "heapadmind: the unit" heapadmind '^-rw-r--r--$' \
    /lib/systemd/system/heapadmind.service
has_path "heapadmind: the logrotate file" heapadmind '^-rw-r--r--$' \
    /etc/logrotate.d/heapadmind
has_path "heapadmind: heapadmind(8)" heapadmind . /usr/share/man/man8/heapadmind.8.gz
has_path "heapadmind: the docs by topic beside the README" heapadmind . \
    /usr/share/doc/heapadmind/docs/getting-started.md.gz
has_path "heapadmind: the generated reference" heapadmind . \
    /usr/share/doc/heapadmind/docs/reference/config.md.gz
has_path "libheapadmin0: the library" libheapadmin0 . \
    "/usr/lib/$MULTIARCH/libheapadmin.so.0.0.0"
has_path "libheapadmin-dev: the header" libheapadmin-dev . /usr/include/heapadmin.h
has_path "libheapadmin-dev: the pkg-config file" libheapadmin-dev . \
    "/usr/lib/$MULTIARCH/pkgconfig/heapadmin.pc"
has_path "libheapadmin-dev: heapadmin(3)" libheapadmin-dev . \
    /usr/share/man/man3/heapadmin.3.gz
ha_like "the shlibs of libheapadmin0 come from its symbols file" \
    ' heapadmin_new@HEAPADMIN_0 ' \
    "$(dpkg-deb --ctrl-tarfile "$(deb_of libheapadmin0)" | tar -xO ./symbols)"
conffiles=$(dpkg-deb --ctrl-tarfile "$(deb_of heapadmind)" | tar -xO ./conffiles)
ha_like "conffile: the config" '^/etc/heapadmin/heapadmin.cnf$' "$conffiles"
ha_like "conffile: the logrotate file" '^/etc/logrotate.d/heapadmind$' "$conffiles"

mkdir -p "$ROOT"
for p in $PKGS; do
    dpkg-deb -x "$(deb_of "$p")" "$ROOT"
done
UNIT=$ROOT/lib/systemd/system/heapadmind.service
ha_like "heapadmind -V is this version" \
    "^heapadmind $(cd "$HA_SRCDIR" && dpkg-parsechangelog -S Version) " \
    "$("$ROOT/usr/sbin/heapadmind" -V 2>&1)"
ha_like "heapadmind is linked with libsystemd (sd_notify)" 'libsystemd\.so\.0' \
    "$(ldd "$ROOT/usr/sbin/heapadmind")"
ha_like "the config's datadir is /var/lib/heapadmin" \
    '^datadir = "/var/lib/heapadmin"' "$(cat "$ROOT/etc/heapadmin/heapadmin.cnf")"

# ---------------------------------------------------------------------------
# 3. The unit
# ---------------------------------------------------------------------------

unit=$(cat "$UNIT")
for d in 'Type=notify' 'NotifyAccess=all' 'WatchdogSec=[1-9]' 'User=heapadmin' \
    'ExecStart=/usr/sbin/heapadmind -c /etc/heapadmin/heapadmin.cnf$' \
    'ProtectSystem=strict' 'ReadWritePaths=.*heapadmin' 'PrivateTmp=yes' \
    'NoNewPrivileges=yes' 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX$' \
    'ProtectHome=yes' 'PrivateDevices=yes' 'ProtectKernelTunables=yes' \
    'SystemCallFilter=@system-service' 'CapabilityBoundingSet=$'; do
    ha_like "unit: $d" "^$d" "$unit"
done
if [ "$INSTALL" = 0 ]; then
    # The unpacked unit, pointed at the unpacked binary: verify wants the
    # ExecStart binary to exist, and /usr/sbin/heapadmind does not here.
    sed "s|^ExecStart=/usr/sbin/|ExecStart=$ROOT/usr/sbin/|" "$UNIT" \
        >"$HA_TMP/heapadmind.service"
    if systemd-analyze verify --man=no "$HA_TMP/heapadmind.service" \
        >"$HA_TMP/verify.log" 2>&1; then
        ha_pass "systemd-analyze verify accepts the unit"
    else
        ha_fail "systemd-analyze verify accepts the unit" "$(cat "$HA_TMP/verify.log")"
    fi
fi

# ---------------------------------------------------------------------------
# 4. Without installing: the unpacked daemon as this user.
# ---------------------------------------------------------------------------

if [ "$INSTALL" = 0 ]; then
    ha_diag "not installing (needs root and CI=true or HA_DEB_INSTALL=1):" \
        "running the unpacked heapadmind as $(id -un)"
    for s in postinst postrm prerm; do
        dpkg-deb --ctrl-tarfile "$(deb_of heapadmind)" | tar -xO "./$s" \
            >"$HA_TMP/$s"
        ha_ok "heapadmind.$s parses (sh -n)" sh -n "$HA_TMP/$s"
    done
    DATADIR=$HA_TMP/data
    HA_PORT=$(ha_free_port) || ha_bail "no free port"
    sed -e "s|^datadir = .*|datadir = \"$DATADIR\"|" \
        -e "s|^\( *mysql_ifaces = \)\"127.0.0.1:6032\"|\1\"127.0.0.1:$HA_PORT\"|" \
        "$ROOT/etc/heapadmin/heapadmin.cnf" >"$HA_TMP/heapadmin.cnf"
    run_daemon_checks "$(id -un)" "$ROOT/usr/sbin/heapadmind" "$HA_TMP/heapadmin.cnf"
    stop_daemon
    ha_done
fi

# ---------------------------------------------------------------------------
# 5. Installed on this machine.
# ---------------------------------------------------------------------------

if [ "$(id -u)" -ne 0 ]; then
    ha_bail "install mode (CI=true or HA_DEB_INSTALL=1) needs root"
fi
for p in heapadmind-dbgsym $PKGS heapadmin-agent; do
    if dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed'; then
        ha_bail "$p is already installed here; not touching it (purge it first)"
    fi
done
getent passwd heapadmin >/dev/null || USER_EXISTED=0
# The dbgsym too: jeprof names heapadmind's functions through it.
INSTALLED=1
if dpkg -i "$(deb_of heapadmind)" "$(deb_of libheapadmin0)" \
    "$(deb_of libheapadmin-dev)" "$(deb_of heapadmind-dbgsym)" \
    >"$HA_TMP/dpkg-i.log" 2>&1; then
    ha_pass "dpkg -i heapadmind libheapadmin0 libheapadmin-dev heapadmind-dbgsym"
else
    ha_fail "dpkg -i" "$(cat "$HA_TMP/dpkg-i.log")"
    ha_bail "the packages do not install"
fi

uid=$(id -u heapadmin 2>/dev/null)
if [ -n "$uid" ] && [ "$uid" -lt 1000 ]; then
    ha_pass "postinst created the heapadmin system user (uid $uid)"
else
    ha_fail "postinst created the heapadmin system user" "uid '${uid}'"
fi
ha_is "its shell is nologin" /usr/sbin/nologin "$(getent passwd heapadmin | cut -d: -f7)"
ha_is "/var/lib/heapadmin: heapadmin:heapadmin 750" "heapadmin:heapadmin 750" \
    "$(stat -c '%U:%G %a' /var/lib/heapadmin 2>&1)"
ha_is "the config: root:heapadmin 640" "root:heapadmin 640" \
    "$(stat -c '%U:%G %a' /etc/heapadmin/heapadmin.cnf 2>&1)"
ha_ok "the service is not enabled (public default credentials)" \
    test ! -e /etc/systemd/system/multi-user.target.wants/heapadmind.service
if systemd-analyze verify /lib/systemd/system/heapadmind.service \
    >"$HA_TMP/verify.log" 2>&1; then
    ha_pass "systemd-analyze verify accepts the installed unit (man page included)"
else
    ha_fail "systemd-analyze verify accepts the installed unit" "$(cat "$HA_TMP/verify.log")"
fi
ha_ok "pkg-config finds the installed library" \
    pkg-config --exact-version="$(dpkg-parsechangelog -l "$HA_SRCDIR/debian/changelog" -S Version)" heapadmin
ha_ok "man finds heapadmin(3)" sh -c 'man -w 3 heapadmin >/dev/null'

# The installed config as it is, on its port 6032 when that is free;
# else a copy with another port, the only change.
DATADIR=/var/lib/heapadmin
CONF=/etc/heapadmin/heapadmin.cnf
HA_PORT=6032
if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/6032" 2>/dev/null; then
    HA_PORT=$(ha_free_port) || ha_bail "no free port"
    ha_diag "port 6032 is taken here: a copy of $CONF on port $HA_PORT"
    CONF=$PUB/heapadmin.cnf
    sed "s|^\( *mysql_ifaces = \)\"127.0.0.1:6032\"|\1\"127.0.0.1:$HA_PORT\"|" \
        /etc/heapadmin/heapadmin.cnf >"$CONF"
    chown root:heapadmin "$CONF" && chmod 0640 "$CONF"
fi
run_daemon_checks heapadmin /usr/sbin/heapadmind "$CONF"

# jeprof against the stripped binary finds heapadmind's own functions
# (ha_*, heapadmin_*) only through heapadmind-dbgsym's build-id file.
out=$(timeout 60 jeprof --debug-syms-by-id --text /usr/sbin/heapadmind "$DUMP" 2>&1)
ha_like "jeprof --debug-syms-by-id names heapadmind's functions (dbgsym)" \
    ' (ha|heapadmin)_[a-z_]+' "$out"

# logrotate with the installed file, forced: the log is renamed and the
# daemon, told by postrotate (pid file path: no systemd here), reopens it.
if logrotate --force --state "$HA_TMP/logrotate.state" /etc/logrotate.d/heapadmind \
    >"$HA_TMP/logrotate.log" 2>&1; then
    ha_pass "logrotate --force /etc/logrotate.d/heapadmind"
else
    ha_fail "logrotate --force /etc/logrotate.d/heapadmind" "$(cat "$HA_TMP/logrotate.log")"
fi
ha_ok "the old log is heapadmind.log.1" test -s "$DATADIR/heapadmind.log.1"
if wait_for_line "$DATADIR/heapadmind.log" 'SIGHUP: reopened' 5; then
    ha_pass "the daemon reopened heapadmind.log on postrotate's SIGHUP"
else
    ha_fail "the daemon reopened heapadmind.log on postrotate's SIGHUP" \
        "$(ls -la "$DATADIR")"
fi
ha_is "the new log: heapadmin:heapadmin 640" "heapadmin:heapadmin 640" \
    "$(stat -c '%U:%G %a' "$DATADIR/heapadmind.log" 2>&1)"
ha_sql_is "still serving after the rotation" "SELECT 2+2" "4"
stop_daemon
# A stale pid file (a crashed daemon) must not make postrotate signal
# whatever process has that pid now: here, a sleep of ours.
sleep 30 &
stale=$!
echo "$stale" >"$DATADIR/heapadmind.pid"
logrotate --force --state "$HA_TMP/logrotate.state" /etc/logrotate.d/heapadmind \
    >>"$HA_TMP/logrotate.log" 2>&1
ha_ok "postrotate leaves a stale pid file's process alone" ha_alive "$stale"
kill "$stale" 2>/dev/null
rm -f "$DATADIR/heapadmind.pid"

if dpkg --purge heapadmind-dbgsym libheapadmin-dev libheapadmin0 heapadmind \
    >"$HA_TMP/purge.log" 2>&1; then
    ha_pass "dpkg --purge"
else
    ha_fail "dpkg --purge" "$(cat "$HA_TMP/purge.log")"
fi
ha_ok "purge removed /var/lib/heapadmin (dumps and logs)" test ! -e /var/lib/heapadmin
ha_ok "purge removed /etc/heapadmin" test ! -e /etc/heapadmin
ha_ok "purge removed /etc/logrotate.d/heapadmind" test ! -e /etc/logrotate.d/heapadmind
ha_ok "the unit is gone" test ! -e /lib/systemd/system/heapadmind.service
ha_is "no heapadmin package is left" "" \
    "$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'heapadmin*' 'libheapadmin*' 2>/dev/null | grep -v '^un ')"
# Debian keeps system users on purge (files elsewhere may still carry the
# uid); cleanup removes it since this test made it.
ha_ok "the heapadmin user stays after purge" sh -c 'getent passwd heapadmin >/dev/null'
ha_done
