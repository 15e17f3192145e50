#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# sysbench (Debian's, with its mysql driver on libmariadb): a Lua script of
# prepared point selects on stats_memory_jemalloc (test/compat/sysbench/
# point_select.lua) for a few seconds on two threads. A short run with
# --mysql-debug=on first proves the statements are really server-side
# prepared (sysbench silently falls back to emulation when the server
# answers COM_STMT_PREPARE with ER_UNSUPPORTED_PS); any SQL error fails.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

hc_require_cmd sysbench sysbench
hc_start

lua=$HC_SRCDIR/sysbench/point_select.lua
sb() {
    timeout -k 2 30 sysbench --db-driver=mysql --mysql-host="$HC_HOST" \
        --mysql-port="$HC_PORT" --mysql-user="$HC_USER" \
        --mysql-password="$HC_PASS" --mysql-db="$HC_DB" --mysql-ssl=off \
        --db-ps-mode=auto "$@" "$lua" run
}

sb --threads=1 --events=5 --time=0 --mysql-debug=on \
    >"$HA_TMP/sb-debug.out" 2>&1
rc=$?
out=$(cat "$HA_TMP/sb-debug.out")
fatal=$(grep -E '^FATAL|using emulation' <<<"$out" | head -n 5)
ha_is "sysbench: 5 events with --mysql-debug=on exit 0, no FATAL" "0:" "$rc:$fatal"
ha_is "sysbench: COM_STMT_PREPARE succeeds, no fallback to emulation" "" \
    "$(grep -E 'mysql_stmt_prepare\(\) failed|using emulation|^FATAL: MySQL error' <<<"$out")"
n=$(grep -Ec '^DEBUG: mysql_stmt_execute\(.*\) = 0$' <<<"$out")
ha_is "sysbench: 5 server-side executions (mysql_stmt_execute = 0)" 5 "$n"
n=$(grep -Ec '^DEBUG: mysql_stmt_num_rows\(.*\) = 1$' <<<"$out")
ha_is "sysbench: each returns one binary row (mysql_stmt_num_rows = 1)" 5 "$n"

sb --threads=2 --time=3 --report-interval=0 >"$HA_TMP/sb.out" 2>&1
rc=$?
out=$(cat "$HA_TMP/sb.out")
fatal=$(grep -E '^FATAL' <<<"$out" | head -n 5)
ha_is "sysbench: 3 s of prepared point selects on 2 threads exit 0, no FATAL" \
    "0:" "$rc:$fatal"
errors=$(sed -n 's/^ *ignored errors: *\([0-9]*\).*/\1/p' <<<"$out")
reconnects=$(sed -n 's/^ *reconnects: *\([0-9]*\).*/\1/p' <<<"$out")
ha_is "sysbench: no ignored errors, no reconnects" "0:0" "$errors:$reconnects"
events=$(sed -n 's/^ *total number of events: *\([0-9]*\).*/\1/p' <<<"$out")
if [[ $events =~ ^[0-9]+$ ]] && [ "$events" -ge 100 ]; then
    ha_pass "sysbench: at least 100 events ($events)"
else
    ha_fail "sysbench: at least 100 events" "actual: '$events'"
fi
hc_done
