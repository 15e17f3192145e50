# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared by the client compatibility scripts (test/compat/*.sh): sources
# the integration harness (test/integration/lib.sh: temp dir, free port,
# daemon, watchdog, TAP lines) and adds what every client needs:
#
#   hc_require_cmd / hc_require_file / hc_missing
#       a client that is not installed fails the script with the exact
#       install line; it is never skipped.
#   hc_start
#       starts heapadmind (or, with HC_SERVER_PORT set, uses a server
#       already listening on 127.0.0.1:HC_SERVER_PORT, e.g. a real MariaDB
#       with the same tables, to check the suite itself), and exports
#       HC_HOST, HC_PORT, HC_USER, HC_PASS and HC_DB for the client
#       programs.
#   hc_run NAME SECONDS COMMAND...
#       runs one client program under timeout(1); its stdout is a list of
#       "key<TAB>value" lines (the protocol below), kept in $HA_TMP/NAME.out.
#   hc_check_common / hc_check_ps
#       the same assertions for every client, so each client is held to one
#       statement of the correct behaviour.
#
# The client programs print, one line per step (a failed step prints
# "ERROR <code> <sqlstate> <message>" as its value and the program goes on):
#
#   connect          ok
#   stats_columns    column names of SELECT * FROM stats_memory_jemalloc,
#                    joined with ','
#   stats_rows       number of rows
#   stats_nonnumeric rows whose variable_value the driver did not hand back
#                    as a non-negative integer (in its own types)
#   stats_allocated  the 'allocated' row's value
#   update_true      affected rows of UPDATE global_variables SET
#                    variable_value='true' WHERE variable_name =
#                    'jemalloc-prof_active'
#   prof_active_true the value read back
#   update_false, prof_active_false   the same, back to 'false'
#   error            <code> TAB <sqlstate or -> TAB <message> of
#                    SELECT * FROM no_such_table
#   after_error      SELECT 1 on the same connection afterwards
#   param_echo       SELECT ?, ?, ?, ? with 42, 2.5, "it's \ ü" and NULL as
#                    the client passes parameters by default, the row
#                    joined with '|' (NULL as NULL)
#   param_point      SELECT variable_value FROM stats_memory_jemalloc WHERE
#                    variable_name = ? for 'allocated', then 'narenas',
#                    joined with '|'
# and, for clients that use server-side prepared statements
# (COM_STMT_PREPARE/EXECUTE):
#   ps_echo          as param_echo, one prepared statement
#   ps_point         as param_point, one statement executed twice
#   ps_update        prepared UPDATE global_variables SET variable_value = ?
#                    WHERE variable_name = ? to 'true' then 'false', each
#                    followed by a prepared read-back:
#                    <affected>|<value>|<affected>|<value>
#   ps_error         <code> TAB ... of preparing SELECT * FROM no_such_table
#   done             ok (the program reached its end)

# The compiles (C, Go, Java) and npm ci need more than the 120 s default
# on a cold cache.
HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-170}
# shellcheck source=../integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

# shellcheck disable=SC2034 # used by the client scripts
HC_SRCDIR=$HA_SRCDIR/test/compat
# Compiled clients and node_modules, reused across runs (make clean removes
# it). The source tree is read-only under make distcheck, so never there.
HC_CACHE=$HA_BUILDDIR/test/compat/cache
HC_OUT=
HC_RC=0
HC_LOG=

# The text every client's param_echo must come back with (one backslash).
# shellcheck disable=SC2034 # used by the client scripts
HC_ECHO="42|2.5|it's \\ ü|NULL"

# ---------------------------------------------------------------------------
# Requirements: a missing client fails with its install line.
# ---------------------------------------------------------------------------

# hc_missing WHAT INSTALL-LINE
hc_missing() {
    echo "not ok 1 - $HA_TEST_NAME needs $1"
    echo "# install it with: $2"
    echo "# (./bootstrap installs every client the compatibility suite uses)"
    echo "1..1"
    exit 1
}

# hc_require_cmd TOOL DEBIAN-PACKAGE...
hc_require_cmd() {
    local tool=$1
    shift
    command -v "$tool" >/dev/null 2>&1 ||
        hc_missing "'$tool'" "apt-get install $*"
}

# hc_require_file FILE DEBIAN-PACKAGE...
hc_require_file() {
    local file=$1
    shift
    [ -e "$file" ] || hc_missing "$file" "apt-get install $*"
}

hc_mkcache() {
    mkdir -p "$HC_CACHE" ||
        hc_missing "a writable cache directory $HC_CACHE" "mkdir -p $HC_CACHE"
}

# ---------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------

# hc_start: a daemon for this script, or the server on
# 127.0.0.1:$HC_SERVER_PORT.
# shellcheck disable=SC2119 # ha_start's arguments are optional
hc_start() {
    if [ -n "${HC_SERVER_PORT:-}" ]; then
        HA_PORT=$HC_SERVER_PORT
        ha_diag "using the server on 127.0.0.1:$HA_PORT (HC_SERVER_PORT)"
    else
        ha_start || ha_bail "heapadmind starts and takes logins"
        # The log tail goes out once, from hc_done, not after every check.
        HC_LOG=$HA_LOG
        HA_LOG=
    fi
    HC_HOST=127.0.0.1
    HC_PORT=$HA_PORT
    HC_USER=$HA_USER
    HC_PASS=$HA_PASS
    HC_DB=${HC_DB:-main}
    export HC_HOST HC_PORT HC_USER HC_PASS HC_DB
}

# ---------------------------------------------------------------------------
# Client programs
# ---------------------------------------------------------------------------

# hc_run NAME SECONDS COMMAND...: HC_OUT is the output file, HC_RC the exit
# status. Adds one check: the program ran to its end.
hc_run() {
    local name=$1 limit=$2
    shift 2
    HC_OUT=$HA_TMP/$name.out
    timeout -k 2 "$limit" "$@" >"$HC_OUT" 2>"$HA_TMP/$name.err" </dev/null
    HC_RC=$?
    if [ "$HC_RC" -eq 0 ] && [ "$(hc_get "done")" = ok ]; then
        ha_pass "$name: the client program ran to its end"
    else
        local why="exit $HC_RC"
        [ "$HC_RC" -eq 124 ] && why="timed out after $limit s"
        ha_fail "$name: the client program ran to its end" \
            "command: $*" "$why" "stdout:" "$(tail -n 20 "$HC_OUT")" \
            "stderr:" "$(tail -n 20 "$HA_TMP/$name.err")"
    fi
}

# hc_get KEY: the value of KEY in the last client output ("(missing)" if
# the program never printed it).
hc_get() {
    local v
    v=$(awk -F'\t' -v k="$1" '$1 == k { sub(/^[^\t]*\t/, ""); print; f = 1; exit }
        END { if (!f) print "(missing)" }' "$HC_OUT" 2>/dev/null)
    printf '%s' "${v:-(missing)}"
}

# hc_is DESC KEY EXPECTED
hc_is() {
    ha_is "$1" "$3" "$(hc_get "$2")"
}

# hc_like DESC KEY EXTENDED-REGEX
hc_like() {
    ha_like "$1" "$3" "$(hc_get "$2")"
}

# hc_int_at_least DESC KEY MIN
hc_int_at_least() {
    local v
    v=$(hc_get "$2")
    if [[ $v =~ ^[0-9]+$ ]] && [ "${#v}" -lt 19 ] && [ "$v" -ge "$3" ]; then
        ha_pass "$1"
    else
        ha_fail "$1" "expected an integer >= $3" "actual: '$v'"
    fi
}

# hc_check_common CLIENT: login, stats, prof_active, an SQL error and
# parameters as the client passes them by default.
hc_check_common() {
    local c=$1
    hc_is "$c: logs in" connect ok
    hc_is "$c: SELECT * FROM stats_memory_jemalloc has the two columns" \
        stats_columns "variable_name,variable_value"
    hc_int_at_least "$c: stats_memory_jemalloc has at least 10 rows" \
        stats_rows 10
    hc_is "$c: every variable_value is a non-negative integer in the driver's types" \
        stats_nonnumeric 0
    hc_like "$c: 'allocated' is a positive integer" stats_allocated \
        '^[1-9][0-9]*$'
    hc_is "$c: UPDATE jemalloc-prof_active to 'true' affects 1 row" \
        update_true 1
    hc_is "$c: jemalloc-prof_active reads back 'true'" prof_active_true true
    hc_is "$c: UPDATE jemalloc-prof_active to 'false' affects 1 row" \
        update_false 1
    hc_is "$c: jemalloc-prof_active reads back 'false'" prof_active_false false
    hc_like "$c: SELECT from a missing table: error 1146 (42S02) naming it" \
        error "^1146	(42S02|-)	.*no_such_table"
    hc_is "$c: the session goes on after the error" after_error 1
    hc_is "$c: parameters (int, double, quoted string with a backslash, NULL) come back" \
        param_echo "$HC_ECHO"
    hc_like "$c: parameterised point selects on stats_memory_jemalloc" \
        param_point '^[1-9][0-9]*\|[1-9][0-9]*$'
}

# hc_check_ps CLIENT: server-side prepared statements with parameters.
hc_check_ps() {
    local c=$1
    hc_is "$c: prepared SELECT ?, ?, ?, ? (int, double, string, NULL)" \
        ps_echo "$HC_ECHO"
    hc_like "$c: one prepared point select executed twice" ps_point \
        '^[1-9][0-9]*\|[1-9][0-9]*$'
    hc_is "$c: prepared UPDATE of jemalloc-prof_active, true then false, read back prepared" \
        ps_update "1|true|1|false"
    hc_like "$c: preparing a SELECT from a missing table: error 1146" \
        ps_error "^1146	(42S02|-)	.*no_such_table"
}

# hc_done: the daemon's log tail when a check failed, then the plan.
hc_done() {
    [ "$HA_FAILED" -gt 0 ] && ha_file_tail "$HC_LOG"
    ha_done
}
