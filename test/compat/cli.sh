#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The mariadb command-line client: batch mode (-e, as monitoring scripts
# use it), then an interactive session in a pseudo-terminal (script(1)) as
# a person uses it: the completion data read at start-up and after USE
# (SHOW DATABASES, SHOW TABLES, COM_FIELD_LIST for every table), SHOW,
# tab completion of table and column names, \s (status, with
# COM_STATISTICS), use, several statements on one line, and an error.
# Each line is sent once the client has printed the prompt for it, so the
# script never sleeps for a guessed time.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

hc_start

# --- batch ------------------------------------------------------------------

ha_sql "SELECT * FROM stats_memory_jemalloc"
ha_is "batch: SELECT * FROM stats_memory_jemalloc succeeds" "0:" "$HA_RC:$HA_ERR"
n=$(grep -c . <<<"$HA_OUT")
if [ "$n" -ge 10 ]; then
    ha_pass "batch: at least 10 rows ($n)"
else
    ha_fail "batch: at least 10 rows" "actual: $n rows"
fi
bad=$(grep -Evc $'^[^\t]+\t[0-9]+$' <<<"$HA_OUT")
ha_is "batch: every row is a name and a non-negative integer" 0 "$bad"
ha_like "batch: 'allocated' is a positive integer" $'^allocated\t[1-9][0-9]*$' \
    "$HA_OUT"
for value in true false; do
    out=$(ha_mysql -vv -e "UPDATE global_variables SET variable_value = '$value' WHERE variable_name = 'jemalloc-prof_active'" 2>&1)
    ha_like "batch: UPDATE jemalloc-prof_active to '$value': 1 row affected" \
        "^Query OK, 1 row affected" "$out"
    ha_is "batch: jemalloc-prof_active reads back '$value'" "$value" \
        "$(ha_var jemalloc-prof_active)"
done
ha_sql_err "batch: SELECT from a missing table: ERROR 1146 (42S02) naming it" \
    "SELECT * FROM no_such_table" \
    "^ERROR 1146 \(42S02\) at line 1: .*no_such_table"

# --- interactive ------------------------------------------------------------

pty_in=$HA_TMP/pty.in
pty_out=$HA_TMP/pty.out
pty_txt=$HA_TMP/pty.txt
prompt_re='(MySQL|MariaDB) \[[^]]*\]> '
mkfifo "$pty_in"
TERM=dumb timeout -k 2 60 script -qfec \
    "mariadb --no-defaults --protocol=TCP -h$HC_HOST -P$HC_PORT --skip-ssl -u$HC_USER -p$HC_PASS $HC_DB" \
    /dev/null <"$pty_in" >"$pty_out" 2>&1 &
pty_pid=$!
HA_PIDS+=("$pty_pid")
exec 7>"$pty_in"
prompts=0

# pty_text: the session so far, without carriage returns and bells.
pty_text() {
    tr -d '\r\a' <"$pty_out"
}

# pty_wait_prompt N: wait (at most 15 s) until the client printed its Nth
# prompt. Only prompts at the start of a line count: when tab completion
# redraws the line, the prompt is printed again after a carriage return.
pty_wait_prompt() {
    local i n
    for ((i = 0; i < 150; i++)); do
        n=$(pty_text | grep -Ec "^$prompt_re")
        [ "$n" -ge "$1" ] && return 0
        ha_alive "$pty_pid" || return 1
        sleep 0.1
    done
    return 1
}

# pty_send TEXT: type TEXT and Enter, then wait for the next prompt; the
# output of this command is left in PTY_LAST.
PTY_LAST=
pty_send() {
    local before
    before=$(pty_text | wc -c)
    printf '%s\n' "$1" >&7
    prompts=$((prompts + 1))
    if ! pty_wait_prompt "$prompts"; then
        ha_diag "no prompt after: $1"
    fi
    PTY_LAST=$(pty_text | tail -c +"$((before + 1))")
}

prompts=1
if pty_wait_prompt 1; then
    ha_pass "interactive: the client starts and prompts (database $HC_DB)"
else
    ha_fail "interactive: the client starts and prompts (database $HC_DB)" \
        "$(pty_text | tail -n 20)"
fi
startup=$(pty_text)
ha_like "interactive: completion data read at start-up (SHOW TABLES)" \
    "^Reading table information for completion of table and column names" \
    "$startup"
ha_unlike "interactive: no error while reading it" "ERROR|[Ee]rror" "$startup"

pty_send "SHOW DATABASES;"
ha_like "interactive: SHOW DATABASES lists main" "^\| main +\|$" "$PTY_LAST"
ha_like "interactive: SHOW DATABASES lists stats" "^\| stats +\|$" "$PTY_LAST"
pty_send "SHOW TABLES;"
ha_like "interactive: SHOW TABLES lists global_variables" \
    "^\| global_variables +\|$" "$PTY_LAST"

# Tab completion of a column and a table name (from COM_FIELD_LIST and SHOW
# TABLES): the statement only works if both were completed.
pty_send "SELECT variable_val"$'\t'" FROM global_var"$'\t'" WHERE variable_name = 'jemalloc-prof_active';"
ha_like "interactive: tab completes 'variable_val' and 'global_var' into a working query" \
    "^\| false +\|$" "$PTY_LAST"

pty_send '\s'
ha_like "interactive: \\s shows the current database" \
    $'^Current database:\t'"$HC_DB"'$' "$PTY_LAST"
ha_like "interactive: \\s shows the server version" \
    $'^Server version:\t+[0-9]' "$PTY_LAST"
ha_like "interactive: \\s shows uptime and threads (COM_STATISTICS)" \
    $'^Uptime:\t+[0-9]' "$PTY_LAST"
ha_unlike "interactive: \\s shows no error" "ERROR" "$PTY_LAST"

pty_send "use stats"
ha_like "interactive: use stats: Database changed" "^Database changed$" \
    "$PTY_LAST"
ha_like "interactive: use stats reads the completion data for stats" \
    "^Reading table information for completion" "$PTY_LAST"
ha_unlike "interactive: use stats shows no error" "ERROR" "$PTY_LAST"
pty_send "SELECT variable_value FROM stats_memory_jemal"$'\t'" WHERE variable_name = 'narenas';"
ha_like "interactive: in stats, tab completes 'stats_memory_jemal' and the query returns narenas" \
    "^\| +[1-9][0-9]* \|$" "$PTY_LAST"

# The client splits the line and sends each statement; one prompt follows.
pty_send "SELECT 'first' AS a; SELECT 'second' AS b;"
ha_like "interactive: two statements on one line: the first result" \
    "^\| first +\|$" "$PTY_LAST"
ha_like "interactive: two statements on one line: the second result" \
    "^\| second +\|$" "$PTY_LAST"

pty_send "SELECT * FROM no_such_table;"
ha_like "interactive: SELECT from a missing table: ERROR 1146 (42S02)" \
    "^ERROR 1146 \(42S02\).*no_such_table" "$PTY_LAST"

printf 'quit\n' >&7
exec 7>&-
if ha_wait_gone "$pty_pid" 10; then
    wait "$pty_pid"
    rc=$?
else
    rc=timeout
fi
ha_is "interactive: quit ends the session with exit 0" 0 "$rc"
ha_like "interactive: the client says Bye" "^Bye$" "$(pty_text | tail -n 3)"
if [ "$HA_FAILED" -gt 0 ]; then
    pty_text >"$pty_txt"
    ha_diag "the interactive session:"
    sed 's/^/#   /' "$pty_txt" | tail -n 80
fi
hc_done
