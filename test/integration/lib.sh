# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared harness for the integration tests: each test script sources this
# file, starts the real heapadmind on a free loopback port with a private
# datadir, drives it with the real mariadb client (and jeprof), and prints
# TAP-style lines ("ok N - what" / "not ok N - what" plus "# " diagnostics).
# ha_done prints the plan and exits 0 when every check passed, 1 otherwise.
#
# Environment (set by make check; defaults work from the source tree):
#   HA_TOP_BUILDDIR  build tree holding daemon/heapadmind
#   HA_TOP_SRCDIR    source tree
#   HA_KEEP_TMP=1    keep the private temp dir (its path is printed)
#   HA_TEST_TIMEOUT  seconds before the watchdog fails the script (120)
#
# Nothing here waits without a bound: every client call runs under
# timeout(1), every poll has a deadline, and a watchdog fails the whole
# script if it still runs after HA_TEST_TIMEOUT seconds, so a hung daemon
# fails make check instead of hanging it.
#
# Per-daemon state, set by ha_start: HA_PORT, HA_SOCK, HA_DATADIR, HA_CONF,
# HA_PID, HA_LOG. Set HA_DATADIR and HA_JEMALLOC (the body of the
# jemalloc_variables group) before ha_start to change them, and
# HA_HTTP_PORT to serve HTTP on that loopback port.

set -u
set -o pipefail

HA_TEST_NAME=$(basename "$0" .sh)
HA_SRCDIR=${HA_TOP_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
HA_BUILDDIR=${HA_TOP_BUILDDIR:-$HA_SRCDIR}
HA_DAEMON=$HA_BUILDDIR/daemon/heapadmind
HA_CLIENT_TIMEOUT=${HA_CLIENT_TIMEOUT:-30}
HA_START_TIMEOUT=10

HA_N=0              # checks run
HA_FAILED=0         # checks failed
HA_PIDS=()          # daemons to stop on exit
HA_USED_PORTS=" "   # ports handed out in this script
HA_USER="admin"
HA_PASS="admin"
HA_PORT=
HA_SOCK=
HA_DATADIR=
HA_CONF=
HA_PID=
HA_LOG=
HA_JEMALLOC=        # ha_start's config: jemalloc_variables' body
HA_HTTP_PORT=       # ... http_ifaces on 127.0.0.1 when set
HA_ADMIN=           # ... more admin_variables lines ("name = value;")
HA_OUT=             # ha_sql: stdout, stderr and exit status of the client
HA_ERR=
HA_RC=0

# A stray MALLOC_CONF would change what the jemalloc tests see, and the
# MYSQL_* variables would redirect the client.
unset MALLOC_CONF MYSQL_HOST MYSQL_TCP_PORT MYSQL_UNIX_PORT MYSQL_PWD
export LC_ALL=C

# ---------------------------------------------------------------------------
# TAP output
# ---------------------------------------------------------------------------

ha_diag() {
    local line
    for line in "$@"; do
        printf '%s\n' "$line" | sed 's/^/# /'
    done
}

# ha_file_tail FILE: the end of FILE as diagnostics.
ha_file_tail() {
    if [ -n "$1" ] && [ -f "$1" ]; then
        ha_diag "last lines of $1:"
        tail -n 15 "$1" | sed 's/^/#   /'
    fi
}

# ha_log_tail: the end of the current daemon's log.
ha_log_tail() {
    ha_file_tail "$HA_LOG"
}

ha_pass() {
    HA_N=$((HA_N + 1))
    echo "ok $HA_N - $1"
    : >"$HA_TMP/.progress"
}

# ha_fail DESC [DIAGNOSTIC...]: a failed check, with diagnostics and the
# current daemon's log tail.
ha_fail() {
    local desc=$1
    shift
    HA_N=$((HA_N + 1))
    HA_FAILED=$((HA_FAILED + 1))
    echo "not ok $HA_N - $desc"
    : >"$HA_TMP/.progress"
    [ $# -gt 0 ] && ha_diag "$@"
    ha_log_tail
}

# ha_is DESC EXPECTED ACTUAL
ha_is() {
    if [ "$2" = "$3" ]; then
        ha_pass "$1"
    else
        ha_fail "$1" "expected: '$2'" "actual:   '$3'"
    fi
}

# ha_like DESC EXTENDED-REGEX TEXT. Text goes in as a here-string, not
# through a pipe: with pipefail, grep -q leaving early would SIGPIPE the
# writer of a large text and turn a match into a failure.
ha_like() {
    if grep -Eq -- "$2" <<<"$3"; then
        ha_pass "$1"
    else
        ha_fail "$1" "expected to match: $2" "actual: '${3:0:2000}'"
    fi
}

# ha_unlike DESC EXTENDED-REGEX TEXT
ha_unlike() {
    if grep -Eq -- "$2" <<<"$3"; then
        ha_fail "$1" "expected not to match: $2" "actual: '${3:0:2000}'"
    else
        ha_pass "$1"
    fi
}

# ha_ok DESC COMMAND...: passes when COMMAND exits 0.
ha_ok() {
    local desc=$1
    shift
    if "$@"; then
        ha_pass "$desc"
    else
        ha_fail "$desc" "command failed (exit $?): $*"
    fi
}

# ha_file_like DESC FILE EXTENDED-REGEX
ha_file_like() {
    if [ -f "$2" ] && grep -Eq -- "$3" "$2"; then
        ha_pass "$1"
    else
        ha_fail "$1" "expected $2 to contain a line matching: $3"
    fi
}

# ha_sql_ok DESC SQL [CLIENT-ARGS...]: the statement succeeds.
ha_sql_ok() {
    ha_sql "$2" "${@:3}"
    if [ "$HA_RC" -eq 0 ]; then
        ha_pass "$1"
    else
        ha_fail "$1" "SQL: $2" "client exit $HA_RC: $HA_ERR"
    fi
}

# ha_sql_is DESC SQL EXPECTED [CLIENT-ARGS...]: the statement succeeds and
# prints EXPECTED.
ha_sql_is() {
    ha_sql "$2" "${@:4}"
    if [ "$HA_RC" -eq 0 ] && [ "$HA_OUT" = "$3" ]; then
        ha_pass "$1"
    else
        ha_fail "$1" "SQL: $2" "expected: '$3'" "actual:   '$HA_OUT'" \
            "client exit $HA_RC${HA_ERR:+: $HA_ERR}"
    fi
}

# ha_sql_err DESC SQL EXTENDED-REGEX [CLIENT-ARGS...]: the statement fails
# and the client's error text matches the regex.
ha_sql_err() {
    ha_sql "$2" "${@:4}"
    if [ "$HA_RC" -ne 0 ] && grep -Eq -- "$3" <<<"$HA_ERR"; then
        ha_pass "$1"
    else
        ha_fail "$1" "SQL: $2" "expected an error matching: $3" \
            "client exit $HA_RC, stdout '$HA_OUT', stderr '$HA_ERR'"
    fi
}

# ha_done: print the plan and exit with the verdict.
ha_done() {
    echo "1..$HA_N"
    if [ "$HA_FAILED" -gt 0 ]; then
        echo "# $HA_TEST_NAME: $HA_FAILED of $HA_N checks failed"
        exit 1
    fi
    if [ "$HA_N" -eq 0 ]; then
        echo "# $HA_TEST_NAME: no checks ran"
        exit 1
    fi
    exit 0
}

# ha_bail REASON: the script cannot go on (e.g. the daemon did not start).
# The reason is a failed check, so the run fails.
ha_bail() {
    ha_fail "$1"
    echo "Bail out! $1"
    ha_done
}

# ---------------------------------------------------------------------------
# Requirements: missing tools fail the run, they never skip it.
# ---------------------------------------------------------------------------

ha_require() {
    local tool=$1 package=$2
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "not ok 1 - $HA_TEST_NAME needs '$tool'"
        echo "# install it with: apt-get install $package"
        echo "1..1"
        exit 1
    fi
}

# ha_baseline_ms: the slowest of three `SELECT 1` round trips with the
# real client, now, in ms (HA_OUT etc. are overwritten): what "at once"
# costs on this machine in this run. Timed assertions are bounded by
# ha_quick_ms of it, so they hold on a loaded machine (a sanitizer build
# beside stress-ng) and still catch a stall of seconds.
ha_baseline_ms() {
    local worst=0 t0 ms _
    for _ in 1 2 3; do
        t0=$(date +%s%N)
        ha_sql "SELECT 1"
        ms=$((($(date +%s%N) - t0) / 1000000))
        [ "$ms" -gt "$worst" ] && worst=$ms
    done
    echo "$worst"
}

# ha_quick_ms BASE: the bound for an answer that waits on nothing: 3x the
# baseline plus 500 ms.
ha_quick_ms() { echo $((3 * $1 + 500)); }

# ha_require_python_module NAME: the system python3 has module NAME.
ha_require_python_module() {
    "${HA_PYTHON:-/usr/bin/python3}" -c "import $1" 2>/dev/null ||
        ha_bail "python3 module $1 missing (./bootstrap installs python3-$1)"
}

ha_require mariadb mariadb-client
ha_require jeprof libjemalloc-dev
ha_require nm binutils
ha_require script bsdutils
ha_require timeout coreutils
ha_require sha256sum coreutils

if [ ! -x "$HA_DAEMON" ]; then
    echo "not ok 1 - no daemon at $HA_DAEMON"
    echo "# build it first: make daemon/heapadmind (HA_TOP_BUILDDIR=$HA_BUILDDIR)"
    echo "1..1"
    exit 1
fi

# ha_needs_live_jemalloc: for scripts that read jemalloc statistics or the
# profiler. Under ASan or TSan the sanitizer's allocator replaces jemalloc,
# so those numbers mean nothing: the sanitizer builds exclude these scripts
# by name (test/integration/Makemodule.am), and a hand run against such a
# daemon says why and skips (exit 77).
ha_needs_live_jemalloc() {
    local san=
    if grep -aq __asan_init "$HA_DAEMON"; then
        san=AddressSanitizer
    elif grep -aq __tsan_init "$HA_DAEMON"; then
        san=ThreadSanitizer
    fi
    if [ -n "$san" ]; then
        echo "# SKIP $HA_TEST_NAME: needs a live jemalloc, and $HA_DAEMON" \
            "is built with $san, whose allocator replaces it"
        echo "1..0 # SKIP needs a live jemalloc"
        exit 77
    fi
}

# ---------------------------------------------------------------------------
# Private temp dir, cleanup and watchdog
# ---------------------------------------------------------------------------

HA_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ha-$HA_TEST_NAME.XXXXXX") || {
    echo "not ok 1 - cannot create a temp dir under ${TMPDIR:-/tmp}"
    echo "1..1"
    exit 1
}
# Unix socket paths are limited to 107 bytes; a deep TMPDIR gets a short
# socket directory of its own.
HA_SOCKDIR=$HA_TMP
if [ ${#HA_TMP} -gt 80 ]; then
    HA_SOCKDIR=$(mktemp -d /tmp/ha.XXXXXX)
fi

# ha_alive PID: the process exists and is not a zombie.
ha_alive() {
    local state
    [ -r "/proc/$1/stat" ] || return 1
    state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -n "$state" ] && [ "$state" != Z ]
}

# ha_wait_gone PID SECONDS: 0 once PID is gone, 1 after SECONDS.
ha_wait_gone() {
    local pid=$1 i n
    n=$(awk -v s="$2" 'BEGIN { printf "%d", s * 20 }')
    for ((i = 0; i < n; i++)); do
        ha_alive "$pid" || return 0
        sleep 0.05
    done
    ! ha_alive "$pid"
}

# ha_sql_wait WANT SQL [TRIES]: runs SQL (ha_sql) every 0.1 s until its
# output is WANT, at most TRIES times (default 100); HA_OUT is the last
# output, for the caller's ha_is.
ha_sql_wait() {
    local i
    for ((i = 0; i < ${3:-100}; i++)); do
        ha_sql "$2"
        [ "$HA_OUT" = "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

ha_cleanup() {
    local pid
    [ -n "${HA_WATCHDOG:-}" ] && kill "$HA_WATCHDOG" 2>/dev/null
    for pid in "${HA_PIDS[@]}"; do
        if ha_alive "$pid"; then
            kill -TERM "$pid" 2>/dev/null
            ha_wait_gone "$pid" 3 || kill -KILL "$pid" 2>/dev/null
        fi
    done
    if [ "${HA_KEEP_TMP:-0}" = 1 ]; then
        echo "# kept $HA_TMP"
    else
        rm -rf "$HA_TMP"
        [ "$HA_SOCKDIR" != "$HA_TMP" ] && rm -rf "$HA_SOCKDIR"
    fi
}

ha_on_timeout() {
    ha_fail "watchdog: $HA_TEST_NAME reported no check for ${HA_TEST_TIMEOUT:-120} s"
    ha_done
}

trap ha_cleanup EXIT
trap 'ha_on_timeout' USR1
trap 'exit 1' INT TERM HUP

# The watchdog ends a script that reports no check (ha_pass, ha_fail:
# they touch .progress) for HA_TEST_TIMEOUT seconds: a hang, not a slow
# machine, whose checks still come, only later. It sleeps in read -t on a
# fifo nobody writes, so killing it leaves no orphaned sleep(1) behind.
mkfifo "$HA_TMP/.watchdog"
: >"$HA_TMP/.progress"
(
    exec 3<>"$HA_TMP/.watchdog"
    limit=${HA_TEST_TIMEOUT:-120}
    while :; do
        read -r -t 5 _ <&3
        last=$(stat -c %Y "$HA_TMP/.progress" 2>/dev/null) || exit 0
        if [ $(($(date +%s) - last)) -ge "$limit" ]; then
            kill -USR1 $$ 2>/dev/null
            exit 0
        fi
    done
) &
HA_WATCHDOG=$!

# ---------------------------------------------------------------------------
# Ports
# ---------------------------------------------------------------------------

# ha_free_port: print a TCP port nobody uses on any local address. It is
# drawn below the kernel's ephemeral range (ip_local_port_range): a port
# from bind(0) is an ephemeral one, which any outgoing connection of a
# parallel test may hold as its local port by the time the daemon binds
# 0.0.0.0 or [::] there (EADDRINUSE). The probe binds 0.0.0.0 and [::]
# without SO_REUSEADDR, so a port in TIME_WAIT counts as used too. Another
# test may still take it before the daemon binds: ha_start retries with a
# new port when that happens.
ha_free_port() {
    local port i lo=32768
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
    [ "$lo" -gt 12000 ] 2>/dev/null || lo=32768
    for ((i = 0; i < 50; i++)); do
        port=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
        case $HA_USED_PORTS in *" $port "*) continue ;; esac
        if command -v python3 >/dev/null 2>&1; then
            python3 -c 'import socket, sys
p = int(sys.argv[1])
for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    s = socket.socket(fam)
    try:
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((addr, p))
    except OSError as e:
        if fam == socket.AF_INET6 and e.errno == 97:
            continue
        sys.exit(1)
    finally:
        s.close()' "$port" 2>/dev/null || continue
        elif timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
            continue
        fi
        HA_USED_PORTS="$HA_USED_PORTS$port "
        echo "$port"
        return 0
    done
    return 1
}

# ---------------------------------------------------------------------------
# Config and daemon
# ---------------------------------------------------------------------------

# ha_write_config FILE DATADIR IFACES [JEMALLOC-BODY]: admin and stats
# users, HTTP on HA_HTTP_PORT when set, HA_ADMIN's lines in
# admin_variables.
ha_write_config() {
    {
        echo "# written by test/integration/$HA_TEST_NAME.sh"
        echo "datadir = \"$2\";"
        echo "admin_variables ="
        echo "{"
        echo "    admin_credentials = \"admin:admin\";"
        echo "    stats_credentials = \"stats:stats\";"
        echo "    mysql_ifaces = \"$3\";"
        [ -z "$HA_HTTP_PORT" ] ||
            echo "    http_ifaces = \"127.0.0.1:$HA_HTTP_PORT\";"
        [ -z "$HA_ADMIN" ] || echo "    $HA_ADMIN"
        echo "};"
        if [ -n "${4:-}" ]; then
            echo "jemalloc_variables ="
            echo "{"
            echo "    $4"
            echo "};"
        fi
    } >"$1"
}

HA_STARTS=0

# ha_start [-d] [-C TEMPLATE] [-- DAEMON-ARGS...]
#   Starts a daemon and waits until admin can log in. Returns 0 when ready,
#   1 otherwise (with the reason on stdout as diagnostics).
#   -d           daemonize (no -f): the pid comes from the pid file and the
#                log is DATADIR/heapadmind.log
#   -C TEMPLATE  use this config instead of the generated one; @PORT@,
#                @SOCK@ and @DATADIR@ are replaced
#   DAEMON-ARGS  passed on (e.g. -D DIR); variables in HA_ENV (an array of
#                NAME=VALUE) go into the daemon's environment
#   Without -C the config uses HA_DATADIR (default $HA_TMP/data) and
#   HA_JEMALLOC.
ha_start() {
    local daemonize=0 template='' rc
    local -a args
    OPTIND=1
    while getopts "dC:" opt; do
        case $opt in
        d) daemonize=1 ;;
        C) template=$OPTARG ;;
        *) return 2 ;;
        esac
    done
    shift $((OPTIND - 1))
    [ "${1:-}" = -- ] && shift
    args=("$@")
    [ -n "$HA_DATADIR" ] || HA_DATADIR=$HA_TMP/data

    for _ in 1 2 3 4 5; do
        HA_STARTS=$((HA_STARTS + 1))
        HA_PORT=$(ha_free_port) || {
            ha_diag "no free loopback port found"
            return 1
        }
        HA_SOCK=$HA_SOCKDIR/s$HA_STARTS.sock
        HA_CONF=$HA_TMP/heapadmin$HA_STARTS.cnf
        if [ -n "$template" ]; then
            sed -e "s|@PORT@|$HA_PORT|g" -e "s|@SOCK@|$HA_SOCK|g" \
                -e "s|@DATADIR@|$HA_DATADIR|g" "$template" >"$HA_CONF"
        else
            ha_write_config "$HA_CONF" "$HA_DATADIR" \
                "127.0.0.1:$HA_PORT;$HA_SOCK" "$HA_JEMALLOC"
        fi
        if [ "$daemonize" = 1 ]; then
            ha_start_daemonized "${args[@]}"
        else
            ha_start_foreground "${args[@]}"
        fi
        rc=$?
        [ $rc -eq 0 ] && return 0
        # rc 3: the port was taken between the probe and the bind.
        [ $rc -eq 3 ] || return 1
        ha_diag "port $HA_PORT was taken; retrying with another"
    done
    return 1
}

ha_port_taken() {
    grep -q "Address already in use" "$@" 2>/dev/null
}

ha_start_foreground() {
    local i
    HA_LOG=$HA_TMP/heapadmind$HA_STARTS.log
    env "${HA_ENV[@]}" "$HA_DAEMON" -f -c "$HA_CONF" "$@" \
        </dev/null >>"$HA_LOG" 2>&1 &
    HA_PID=$!
    HA_PIDS+=("$HA_PID")
    for ((i = 0; i < HA_START_TIMEOUT * 10; i++)); do
        if ! ha_alive "$HA_PID"; then
            ha_port_taken "$HA_LOG" && return 3
            ha_diag "heapadmind -f -c $HA_CONF $* exited during start-up"
            ha_log_tail
            return 1
        fi
        # "ready" comes after every listener is bound, so a reply on the
        # port is this daemon's, not a stranger's that got the port first.
        if grep -q "ready for connections" "$HA_LOG" &&
            ha_mysql -N -B -e 'SELECT 1' >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    ha_diag "heapadmind not ready after $HA_START_TIMEOUT s"
    ha_log_tail
    return 1
}

ha_start_daemonized() {
    local i rc out=$HA_TMP/start$HA_STARTS.out
    HA_LOG=$HA_DATADIR/heapadmind.log
    env "${HA_ENV[@]}" timeout -k 2 "$HA_START_TIMEOUT" \
        "$HA_DAEMON" -c "$HA_CONF" "$@" </dev/null >"$out" 2>&1
    rc=$?
    HA_PID=
    if [ $rc -ne 0 ]; then
        ha_port_taken "$out" && return 3
        ha_diag "heapadmind -c $HA_CONF $* exited $rc:" "$(cat "$out")"
        ha_log_tail
        return 1
    fi
    if [ -f "$HA_DATADIR/heapadmind.pid" ]; then
        HA_PID=$(cat "$HA_DATADIR/heapadmind.pid")
        [ -n "$HA_PID" ] && HA_PIDS+=("$HA_PID")
    fi
    if [ -z "$HA_PID" ]; then
        ha_diag "the daemon reported ready but wrote no pid file"
        return 1
    fi
    for ((i = 0; i < HA_START_TIMEOUT * 10; i++)); do
        ha_mysql -N -B -e 'SELECT 1' >/dev/null 2>&1 && return 0
        ha_alive "$HA_PID" || break
        sleep 0.1
    done
    ha_diag "daemon (pid $HA_PID) reported ready but takes no logins"
    ha_log_tail
    return 1
}

HA_ENV=()

# ha_start_host TEMPLATE [NAME=VALUE...] [-- HOST-ARGS...]
#   Starts test/growthhost (a program linking libheapadmin) on the config
#   TEMPLATE, with @PORT@ (MySQL), @HPORT@ (HTTP) and @DATADIR@ replaced,
#   the NAME=VALUE pairs in its environment, and waits until admin can run
#   SELECT 1. A port taken between the probe and the bind gets new ones.
#   Sets hpid, HA_PORT, hport; the config is $HA_TMP/host.cnf, the host's
#   output $HA_TMP/host.out. Returns 0, or 1 with the reason as diagnostics.
ha_start_host() {
    local tmpl=$1 i
    local -a envs=() args=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    [ "${1:-}" = -- ] && shift
    args=("$@")
    HA_HOST=${HA_HOST:-$HA_BUILDDIR/test/growthhost}
    [ -x "$HA_HOST" ] || {
        ha_diag "no test host at $HA_HOST (make test/growthhost)"
        return 1
    }
    for _ in 1 2 3 4 5; do
        HA_PORT=$(ha_free_port) && hport=$(ha_free_port) || {
            ha_diag "no free loopback port found"
            return 1
        }
        sed -e "s|@PORT@|$HA_PORT|g" -e "s|@HPORT@|$hport|g" \
            -e "s|@DATADIR@|$HA_DATADIR|g" "$tmpl" >"$HA_TMP/host.cnf"
        env "${envs[@]}" "$HA_HOST" -c "$HA_TMP/host.cnf" "${args[@]}" \
            >"$HA_TMP/host.out" 2>&1 &
        hpid=$!
        HA_PIDS+=("$hpid")
        for ((i = 0; i < HA_START_TIMEOUT * 30; i++)); do
            if grep -q ready "$HA_TMP/host.out" &&
                ha_mysql -N -B -e 'SELECT 1' >/dev/null 2>&1; then
                return 0
            fi
            ha_alive "$hpid" || break
            ha_port_taken "$HA_TMP/host.out" "${HA_LOG:-/dev/null}" && break
            sleep 0.1
        done
        if ha_port_taken "$HA_TMP/host.out" "${HA_LOG:-/dev/null}"; then
            kill -KILL "$hpid" 2>/dev/null
            wait "$hpid" 2>/dev/null
            ha_forget "$hpid"
            [ -n "${HA_LOG:-}" ] && : >"$HA_LOG"
            ha_diag "port $HA_PORT or $hport was taken; retrying with others"
            continue
        fi
        ha_diag "the host's admin port does not answer"
        ha_file_tail "$HA_TMP/host.out"
        return 1
    done
    return 1
}

# ha_stop [SECONDS]: SIGTERM the current daemon and wait for it (default
# 5 s). Returns 0 once it is gone; HA_EXIT holds its exit status when it
# was our child (foreground mode), else is empty.
HA_EXIT=

# ha_forget PID: the daemon is gone; cleanup must not signal a reused pid.
ha_forget() {
    local pid keep=()
    for pid in "${HA_PIDS[@]}"; do
        [ "$pid" = "$1" ] || keep+=("$pid")
    done
    HA_PIDS=("${keep[@]}")
}

ha_stop() {
    local limit=${1:-5}
    HA_EXIT=
    [ -n "$HA_PID" ] || return 1
    kill -TERM "$HA_PID" 2>/dev/null
    ha_wait_gone "$HA_PID" "$limit" || return 1
    ha_forget "$HA_PID"
    if wait "$HA_PID" 2>/dev/null; then
        HA_EXIT=0
    else
        HA_EXIT=$?
        # 127: not our child (daemonized), so no status to report.
        [ "$HA_EXIT" = 127 ] && HA_EXIT=
    fi
    return 0
}

# ---------------------------------------------------------------------------
# Client
# ---------------------------------------------------------------------------

# ha_mysql ARGS...: the real client on the current daemon's TCP port as
# HA_USER/HA_PASS; later arguments override (e.g. -uother -pother).
ha_mysql() {
    timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults --protocol=TCP \
        -h127.0.0.1 -P"$HA_PORT" --skip-ssl -u"$HA_USER" -p"$HA_PASS" "$@"
}

# ha_mysql_sock ARGS...: the same over the unix socket.
ha_mysql_sock() {
    timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
        --protocol=SOCKET -S "$HA_SOCK" -u"$HA_USER" -p"$HA_PASS" "$@"
}

# ha_sql SQL [CLIENT-ARGS...]: runs SQL in batch mode without column names;
# sets HA_OUT (stdout), HA_ERR (stderr) and HA_RC (exit status).
ha_sql() {
    local sql=$1
    shift
    HA_OUT=$(ha_mysql -N -B "$@" -e "$sql" 2>"$HA_TMP/.stderr")
    HA_RC=$?
    HA_ERR=$(cat "$HA_TMP/.stderr")
}

# ha_sql_patient SQL [CLIENT-ARGS...]: ha_sql, waiting as long as the
# login throttle says each time it answers ERR 1129 "... try again in N
# s" (as a well-behaved client does), at most 10 times. For checks that
# follow wrong passwords but are not about the throttle.
ha_sql_patient() {
    local i wait
    for ((i = 0; i < 10; i++)); do
        ha_sql "$@"
        case $HA_ERR in
        *"ERROR 1129"*"try again in "[0-9]*)
            wait=${HA_ERR##*try again in }
            sleep "${wait%% *}"
            ;;
        *) return 0 ;;
        esac
    done
}

# ha_var NAME: the variable_value of one global_variables row (HA_OUT).
ha_var() {
    ha_sql "SELECT variable_value FROM global_variables WHERE variable_name = '$1'"
    printf '%s' "$HA_OUT"
}

# ha_stat NAME: the variable_value of one stats_memory_jemalloc row.
ha_stat() {
    ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = '$1'"
    printf '%s' "$HA_OUT"
}
