#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Settings that survive a restart, ProxySQL style, on the real daemon:
# SAVE JEMALLOC VARIABLES TO DISK keeps the live settings in
# <datadir>/heapadmin.db (disk.global_variables shows them next to
# global_variables and runtime_global_variables), LOAD ... FROM DISK
# applies them again (all or nothing), a restart applies them over the
# config file with a log line per variable, --initial discards them, the
# TO RUNTIME / TO MEMORY spellings are accepted and say why nothing is
# left to do, stats users may not, and SAVE CONFIG TO FILE writes a config
# the daemon starts from with the same settings. Needs a live jemalloc.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc
ha_require sqlite3 sqlite3

var() { # NAME: its value in global_variables
    ha_sql "SELECT variable_value FROM global_variables WHERE variable_name = '$1'"
    echo "$HA_OUT"
}
set_var() { # NAME VALUE
    ha_sql "UPDATE global_variables SET variable_value = '$2' WHERE variable_name = '$1'"
}

HA_DATADIR=$HA_TMP/data
ha_start || ha_bail "heapadmind starts"
ha_is "profiling starts inactive (the config says nothing)" false \
    "$(var jemalloc-prof_active)"
set_var jemalloc-prof_active true
set_var jemalloc-lg_prof_sample 20
set_var jemalloc-dump_symbolized true
set_var jemalloc-dirty_decay_ms 5000
ha_is "no disk worker before the first write to the datadir" "" \
    "$(grep -x heapadmin-disk /proc/"$HA_PID"/task/*/comm)"
ha_sql "SAVE JEMALLOC VARIABLES TO DISK"
ha_is "SAVE JEMALLOC VARIABLES TO DISK: OK" "0:" "$HA_RC:$HA_ERR"
ha_is "... written on the disk worker, not the loop (its fsync may stall)" \
    heapadmin-disk "$(grep -hx heapadmin-disk /proc/"$HA_PID"/task/*/comm)"
ha_ok "... into a 0600 file in the datadir" \
    test "$(stat -c %a "$HA_DATADIR/heapadmin.db")" = 600
ha_sql "SELECT count(*) FROM disk.global_variables WHERE variable_name LIKE 'jemalloc-%'"
saved=$HA_OUT
ha_ok "... the settable jemalloc rows, 9 or more ($saved)" test "$saved" -ge 9
ha_file_like "... logged with who did it, and how many rows were saved" "$HA_LOG" \
    "control: admin@127\.0\.0\.1:[0-9]+ \(connection [0-9]+\): SAVE JEMALLOC VARIABLES TO DISK: $saved variables saved to $HA_DATADIR/heapadmin\.db"
ha_sql_is "disk.global_variables holds the saved settings" \
    "SELECT variable_name, variable_value FROM disk.global_variables WHERE variable_name IN ('jemalloc-prof_active', 'jemalloc-lg_prof_sample', 'jemalloc-dump_symbolized', 'jemalloc-dirty_decay_ms', 'jemalloc-muzzy_decay_ms') ORDER BY 1" \
    "jemalloc-dirty_decay_ms	5000
jemalloc-dump_symbolized	true
jemalloc-lg_prof_sample	20
jemalloc-muzzy_decay_ms	0
jemalloc-prof_active	true"
ha_sql_is "... and no action or read-only row" \
    "SELECT count(*) FROM disk.global_variables WHERE variable_name IN ('jemalloc-dump_now', 'jemalloc-prof', 'admin-admin_credentials', 'jemalloc-purge_arena_now', 'jemalloc-arena_dirty_decay_ms', 'jemalloc-leak_watch_state')" 0
set_var jemalloc-prof_active false
ha_is "an UPDATE still acts at once (prof_active false)" false \
    "$(var jemalloc-prof_active)"
ha_sql_is "runtime_global_variables is the same layer" \
    "SELECT variable_value FROM runtime_global_variables WHERE variable_name = 'jemalloc-prof_active'" false
ha_sql_is "runtime and disk compared in one SELECT" \
    "SELECT r.variable_name, r.variable_value, d.variable_value FROM runtime_global_variables r JOIN disk.global_variables d USING (variable_name) WHERE r.variable_value <> d.variable_value" \
    "jemalloc-prof_active	false	true"
ha_sql_err "runtime_global_variables is read-only" \
    "UPDATE runtime_global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-prof_active'" \
    "may not be modified|read-only"
ha_sql_err "disk.global_variables is read-only over SQL" \
    "DELETE FROM disk.global_variables" "readonly|read-only|denied"
ha_sql "LOAD JEMALLOC VARIABLES FROM DISK"
ha_is "LOAD JEMALLOC VARIABLES FROM DISK: OK" "0:" "$HA_RC:$HA_ERR"
ha_is "... applied the saved prof_active" true "$(var jemalloc-prof_active)"
for q in "LOAD JEMALLOC VARIABLES TO RUNTIME" "LOAD JEMALLOC VARIABLES FROM MEMORY" \
    "SAVE JEMALLOC VARIABLES TO MEMORY" "SAVE JEMALLOC VARIABLES FROM RUNTIME" \
    "LOAD JEMALLOC VARIABLES TO RUN" "SAVE ADMIN VARIABLES TO DISK" \
    "LOAD ADMIN VARIABLES TO RUNTIME"; do
    ha_sql_ok "accepted as ProxySQL users type it: $q" "$q"
done
ha_sql_err "an unknown module names the ones heapadmin has" \
    "SAVE MYSQL VARIABLES TO DISK" \
    "heapadmin has no MYSQL VARIABLES: it keeps JEMALLOC VARIABLES and ADMIN VARIABLES"
ha_sql_err "a nonsense direction is a syntax error naming the forms" \
    "SAVE JEMALLOC VARIABLES FROM DISK" "expected SAVE\|LOAD"
ha_sql_err "stats users may not save" "SAVE JEMALLOC VARIABLES TO DISK" \
    "ERROR 1227" -ustats -pstats

# A saved value that no longer passes (lg_prof_sample under the floor of
# a later config) makes LOAD change nothing.
sqlite3 "$HA_DATADIR/heapadmin.db" \
    "UPDATE global_variables SET variable_value = '3' WHERE variable_name = 'jemalloc-lg_prof_sample'" ||
    ha_fail "could not edit the saved file"
set_var jemalloc-prof_active false
ha_sql "LOAD JEMALLOC VARIABLES FROM DISK"
ha_like "LOAD with an invalid saved value: ERR naming it" \
    "ERROR 1231 .*jemalloc-lg_prof_sample = '3'.*nothing was changed" "$HA_ERR"
ha_is "... and nothing changed (prof_active still false)" false \
    "$(var jemalloc-prof_active)"
sqlite3 "$HA_DATADIR/heapadmin.db" \
    "UPDATE global_variables SET variable_value = '20' WHERE variable_name = 'jemalloc-lg_prof_sample'"

# --- restart: saved values over the config, each logged ----------------------------

ha_stop
ha_start || ha_bail "heapadmind restarts"
ha_is "after a restart the saved prof_active applies" true \
    "$(var jemalloc-prof_active)"
ha_is "... and the saved lg_prof_sample" 20 "$(var jemalloc-lg_prof_sample)"
ha_is "... and the saved dirty_decay_ms" 5000 "$(var jemalloc-dirty_decay_ms)"
ha_sql_is "... in every arena in use" \
    "SELECT count(*) FROM stats_jemalloc_arenas WHERE arena IS NOT NULL AND dirty_decay_ms <> 5000" 0
ha_file_like "the log says which value came from disk, over what" "$HA_LOG" \
    "start-up: jemalloc-prof_active = 'true' from $HA_DATADIR/heapadmin\.db \(saved on disk\), over 'false'"

# --- a saved value this run refuses: logged, the others still apply ---------------
# Written by hand (or by a version that allowed it): refused at start as
# an operator's UPDATE would be, naming the variable and what is allowed.
ha_stop
sqlite3 "$HA_DATADIR/heapadmin.db" \
    "INSERT OR REPLACE INTO global_variables VALUES ('jemalloc-stats_max_age_ms', 'soon')" ||
    ha_fail "could not plant a bad value in the saved file"
ha_start || ha_bail "heapadmind restarts with a bad saved value"
ha_file_like "start-up: a saved value this run refuses is not applied, logged with what is allowed" "$HA_LOG" \
    "start-up: saved jemalloc-stats_max_age_ms not applied: jemalloc-stats_max_age_ms = 'soon': .*allowed: milliseconds from 0 .* to 3600000"
ha_file_like "... and refused in the audit trail, as start-up" "$HA_LOG" \
    "control: start-up \\(saved on disk\\): jemalloc-stats_max_age_ms = 'soon': invalid value; allowed: milliseconds"
ha_is "... the variable keeps the config's value" 0 \
    "$(var jemalloc-stats_max_age_ms)"
ha_is "... and the other saved values still apply" true \
    "$(var jemalloc-prof_active)"
sqlite3 "$HA_DATADIR/heapadmin.db" \
    "DELETE FROM global_variables WHERE variable_name = 'jemalloc-stats_max_age_ms'" ||
    ha_fail "could not remove the bad value"

# --- actions saved by an older version: ignored, never acted on -------------------
# A saved jemalloc-dump_now would dump at every start, a purge_now purge:
# every action row, and a read-only one, planted as an older version
# might have saved them.
ha_stop
actions="jemalloc-dump_now jemalloc-reset_now jemalloc-purge_now jemalloc-purge_arena_now jemalloc-log_now jemalloc-prof"
for a in $actions; do
    v=true
    case $a in jemalloc-purge_arena_now) v=all ;; jemalloc-log_now) v=5 ;; esac
    sqlite3 "$HA_DATADIR/heapadmin.db" \
        "INSERT OR REPLACE INTO global_variables VALUES ('$a', '$v')" ||
        ha_fail "could not plant $a in the saved file"
done
dumps_before=$(find "$HA_DATADIR" -maxdepth 1 -name '*.heap' | wc -l)
ha_start || ha_bail "heapadmind restarts with actions saved"
ha_sql "SELECT 1"
for a in $actions; do
    ha_file_like "start-up: the saved $a is ignored, logged" "$HA_LOG" \
        "start-up: saved $a = '[^']*' in $HA_DATADIR/heapadmin\.db ignored: not a setting SAVE JEMALLOC VARIABLES TO DISK keeps"
done
ha_is "... no dump was taken at start" "$dumps_before" \
    "$(find "$HA_DATADIR" -maxdepth 1 -name '*.heap' | wc -l)"
ha_sql_is "... no lifetime window was opened" \
    "SELECT variable_value NOT LIKE 'open%' FROM global_variables WHERE variable_name = 'jemalloc-log_state'" 1
ha_is "... and the saved settings still apply" true "$(var jemalloc-prof_active)"
ha_sql "LOAD JEMALLOC VARIABLES FROM DISK"
ha_is "LOAD ... FROM DISK with actions saved: OK (they are ignored)" "0:" \
    "$HA_RC:$HA_ERR"
ha_file_like "... each logged" "$HA_LOG" \
    "LOAD JEMALLOC VARIABLES FROM DISK: saved jemalloc-dump_now = 'true' in $HA_DATADIR/heapadmin\.db ignored"
ha_is "... and still no dump" "$dumps_before" \
    "$(find "$HA_DATADIR" -maxdepth 1 -name '*.heap' | wc -l)"
ha_sql "SAVE JEMALLOC VARIABLES TO DISK"
ha_sql_is "the next SAVE rewrites the file without them" \
    "SELECT count(*) FROM disk.global_variables WHERE variable_name IN ('jemalloc-dump_now', 'jemalloc-reset_now', 'jemalloc-purge_now', 'jemalloc-purge_arena_now', 'jemalloc-log_now', 'jemalloc-prof')" 0
ha_stop
ha_start -- --initial || ha_bail "heapadmind starts with --initial"
ha_is "--initial: the config alone applies" false "$(var jemalloc-prof_active)"
ha_file_like "... and the log says the saved values were discarded" "$HA_LOG" \
    "--initial: saved jemalloc variables in $HA_DATADIR/heapadmin\.db discarded"
ha_sql_is "... they are gone from disk" \
    "SELECT count(*) FROM disk.global_variables" 0

# --- SAVE CONFIG TO FILE ------------------------------------------------------------

set_var jemalloc-prof_active true
set_var jemalloc-lg_prof_sample 21
ha_sql "SAVE CONFIG TO FILE saved.cnf"
ha_is "SAVE CONFIG TO FILE saved.cnf: OK" "0:" "$HA_RC:$HA_ERR"
ha_ok "... written 0600 into the datadir" \
    test "$(stat -c %a "$HA_DATADIR/saved.cnf")" = 600
ha_sql_err "a path is refused: only a file name in the datadir" \
    "SAVE CONFIG TO FILE '/etc/x.cnf'" "give a file name, written into the datadir"
ha_sql_err "... as is .." "SAVE CONFIG TO FILE '..'" "give a file name"
ha_sql "SAVE CONFIG TO FILE saved.cnf"
ha_file_like "a second SAVE says what it replaced, in the log" "$HA_LOG" \
    "SAVE CONFIG TO FILE: $HA_DATADIR/saved\.cnf written \(replaced the earlier saved\.cnf \([0-9]+ bytes, written [0-9-]+ [0-9:]+ UTC\)\)"
ha_ok "... and leaves no temporary file" \
    test -z "$(find "$HA_DATADIR" -maxdepth 1 -name '.saved.cnf.*')"
# Never over one of the daemon's own files: each one present is refused
# and left as it was.
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
dump=$HA_OUT
ha_sql "SELECT 1 FROM stats_history.system_memory LIMIT 1"
own="heapadmin.db heapadmin_stats.db heapadmin-key.pem heapadmin-cert.pem heapadmin-rsa-private.pem heapadmind.pid .heapadmin-staging earlier-runs runs"
[ -n "$dump" ] && own="$own $dump $dump.buildid"
for f in $own; do
    [ -e "$HA_DATADIR/$f" ] || continue
    sum=$(sha256sum <"$HA_DATADIR/$f" 2>/dev/null || echo dir)
    ha_sql_err "SAVE CONFIG TO FILE $f: refused, one of the daemon's own" \
        "SAVE CONFIG TO FILE '$f'" \
        "SAVE CONFIG TO FILE '$f': that is .*, one of heapadmind's own files; give another name in the datadir .* \(not heapadmin\.db and heapadmin_stats\.db"
    ha_is "... $f is untouched" "$sum" \
        "$(sha256sum <"$HA_DATADIR/$f" 2>/dev/null || echo dir)"
done
for f in heapadmin.db-wal heapadmin.db-journal heapadmin_stats.db-shm proxysql.1.0.m0.heap proxysql.1.0.m0.heap.sym; do
    ha_sql_err "SAVE CONFIG TO FILE $f (absent now, the daemon's by name): refused" \
        "SAVE CONFIG TO FILE '$f'" "one of heapadmind's own files"
done
ha_file_like "... refusals logged" "$HA_LOG" \
    "SAVE CONFIG TO FILE 'heapadmin-key\.pem' refused: a private key heapadmind made"
ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name NOT IN ('jemalloc-prof_prefix') ORDER BY 1"
before=$HA_OUT
ha_stop
old_port=$HA_PORT
HA_CONF=$HA_DATADIR/saved.cnf
HA_PORT=$old_port
if ha_start_foreground; then
    ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name NOT IN ('jemalloc-prof_prefix') ORDER BY 1"
    ha_is "a daemon started from the saved file has the same settings" \
        "$before" "$HA_OUT"
    ha_sql_err "SAVE CONFIG TO FILE over the config it was started from: refused" \
        "SAVE CONFIG TO FILE saved.cnf" "the config file heapadmind was started from"
    ha_sql_ok "... another name is fine" "SAVE CONFIG TO FILE saved2.cnf"
    ha_stop
else
    ha_fail "heapadmind does not start from the saved config"
fi
# The same from a relative -c: the daemon chdirs to the datadir, so the
# file is known by what it is (device and inode), not by how -c spelled it.
sum=$(sha256sum <"$HA_DATADIR/saved2.cnf")
HA_CONF=saved2.cnf
pushd "$HA_DATADIR" >/dev/null || ha_bail "cd to the datadir"
ha_start_foreground
started=$?
popd >/dev/null || ha_bail "cd back"
if [ $started = 0 ]; then
    ha_sql_err "SAVE CONFIG TO FILE over a config started as -c saved2.cnf: refused" \
        "SAVE CONFIG TO FILE saved2.cnf" "the config file heapadmind was started from"
    ha_is "... saved2.cnf is untouched" "$sum" "$(sha256sum <"$HA_DATADIR/saved2.cnf")"
    ha_stop
else
    ha_fail "heapadmind does not start from -c saved2.cnf"
fi

# --- a heapadmin.db that is not ours: refused at start, untouched -----------------
for kind in view columns trigger; do
    d=$HA_TMP/foreign-$kind
    mkdir -p "$d" && chmod 700 "$d"
    case $kind in
    view)
        want="its global_variables is a view, not a table"
        sql="CREATE TABLE t(a); INSERT INTO t VALUES (1); CREATE VIEW global_variables AS SELECT 'jemalloc-prof_active' AS variable_name, 'true' AS variable_value" ;;
    columns)
        want="its global_variables has other columns \(column 2 is not variable_value\)"
        sql="CREATE TABLE global_variables (variable_name, note, variable_value); INSERT INTO global_variables VALUES ('jemalloc-prof_active', 'x', 'true')" ;;
    trigger)
        want="it has a trigger on global_variables"
        sql="CREATE TABLE global_variables (variable_name VARCHAR NOT NULL PRIMARY KEY, variable_value VARCHAR NOT NULL); CREATE TABLE audit(n); CREATE TRIGGER t AFTER INSERT ON global_variables BEGIN INSERT INTO audit VALUES (new.variable_name); END" ;;
    esac
    sqlite3 "$d/heapadmin.db" "$sql" || ha_fail "could not make the $kind file"
    sum=$(sha256sum <"$d/heapadmin.db")
    ha_write_config "$HA_TMP/foreign.cnf" "$d" \
        "127.0.0.1:$(ha_free_port);$HA_SOCKDIR/foreign.sock"
    out=$(timeout 20 "$HA_DAEMON" -f -c "$HA_TMP/foreign.cnf" 2>&1 </dev/null)
    rc=$?
    ha_is "a heapadmin.db whose global_variables is not ours ($kind): refused at start (exit 1, not killed by timeout)" \
        1 "$rc"
    ha_like "... naming the file, what is wrong and what is allowed" \
        "$d/heapadmin\.db is not heapadmin's: $want; heapadmin keeps one table there, global_variables \(variable_name, variable_value\), with no view or trigger on it; nothing in the file was changed" \
        "$out"
    ha_is "... the file is untouched" "$sum" "$(sha256sum <"$d/heapadmin.db")"
    ha_ok "... and nothing beside it (no -wal, -shm)" \
        test ! -e "$d/heapadmin.db-wal" -a ! -e "$d/heapadmin.db-shm"
    ha_ok "... nor a listening socket left" test ! -e "$HA_SOCKDIR/foreign.sock"
done
# ProxySQL's proxysql.db holds our table among its own: it is ours to use.
HA_DATADIR=$HA_TMP/proxysql-shaped
mkdir -p "$HA_DATADIR" && chmod 700 "$HA_DATADIR"
sqlite3 "$HA_DATADIR/heapadmin.db" "CREATE TABLE global_variables (variable_name VARCHAR NOT NULL PRIMARY KEY , variable_value VARCHAR NOT NULL); CREATE TABLE mysql_servers (hostgroup_id INT, hostname VARCHAR); INSERT INTO global_variables VALUES ('jemalloc-prof_active', 'true')"
HA_CONF=
if ha_start; then
    ha_pass "a file with our global_variables among other tables starts"
    ha_is "... and its saved value applies" true "$(var jemalloc-prof_active)"
    ha_stop
else
    ha_fail "a file with our global_variables among other tables starts"
fi
ha_done
