#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The heap profiler driven over SQL on the real daemon: dump_now writes
# <datadir>/proxysql.<pid>.<seq>.m<mseq>.heap and says so, jeprof reads it
# and finds SQLite's allocation sites; a dump into a missing datadir is
# refused with the path and the daemon keeps serving; MALLOC_CONF overrides
# the compiled-in prof:true,prof_active:false; config-driven start-up
# profiling (interval dumps with the daemon's own pid, final dump, the
# operator's MALLOC_CONF winning, dump_prefix). Needs a live jemalloc.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc

set_var() { # NAME VALUE: sets HA_OUT/HA_ERR/HA_RC
    ha_sql "UPDATE global_variables SET variable_value = '$2' WHERE variable_name = '$1'"
}

# dump_files DIR STEM KIND: names of STEM.<pid>.<seq>.<KIND><n>.heap in DIR.
dump_files() {
    find "$1" -maxdepth 1 -type f -name "$2.*.heap" -printf '%f\n' 2>/dev/null |
        grep -E "^$2\.[0-9]+\.[0-9]+\.$3[0-9]*\.heap$" | sort -t. -k3,3n
}

# A workload whose memory SQLite allocates and keeps: rows and an index.
workload() {
    ha_sql "CREATE TABLE IF NOT EXISTS w (i INTEGER, x TEXT);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
        INSERT INTO w SELECT i, printf('%d-%s', i, hex(randomblob(200))) FROM n;
        CREATE INDEX IF NOT EXISTS w_x ON w (x)"
}

# --- manual dumps and jeprof ----------------------------------------------------

HA_DATADIR=$HA_TMP/data
# Samples every KiB below: the host-protecting floor lowered on purpose.
HA_JEMALLOC='lg_prof_sample_min = 0;'
ha_start || ha_bail "heapadmind starts and takes logins"
datadir=$(realpath "$HA_DATADIR")
pid=$HA_PID

ha_is "pid file holds the daemon's pid" "$pid" \
    "$(cat "$datadir/heapadmind.pid" 2>/dev/null)"
ha_sql_is "jemalloc-prof_prefix is <datadir>/proxysql" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_prefix'" \
    "$datadir/proxysql"

set_var jemalloc-lg_prof_sample 10
ha_is "lg_prof_sample set to 10 (one sample per KiB)" "0:" "$HA_RC:$HA_ERR"
set_var jemalloc-prof_active true
ha_is "profiling switched on" "0:" "$HA_RC:$HA_ERR"
workload 20000
ha_is "workload with profiling active: 20000 rows and an index" "0:" \
    "$HA_RC:$HA_ERR"

HA_OUT=$(ha_mysql -vvv -e "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'" 2>&1)
ha_like "UPDATE jemalloc-dump_now = 'true' succeeds" "^Query OK" "$HA_OUT"
mapfile -t dumps < <(dump_files "$datadir" proxysql m)
ha_is "one manual dump in the datadir" 1 "${#dumps[@]}"
first=${dumps[0]:-none}
ha_like "dump name is proxysql.<daemon pid>.<seq>.m<mseq>.heap" \
    "^proxysql\.$pid\.[0-9]+\.m[0-9]+\.heap$" "$first"
ha_like "the OK message names the file written" "$datadir/$first" "$HA_OUT"
ha_sql_is "jemalloc-dump_now reads 'false' afterwards" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-dump_now'" \
    false
ha_is "the dump is a heap_v2 profile sampled every 2^10 bytes" \
    "heap_v2/1024" "$(head -n 1 "$datadir/$first" 2>/dev/null)"

set_var jemalloc-dump_now 1
mapfile -t dumps < <(dump_files "$datadir" proxysql m)
ha_is "a second dump_now writes a second file" 2 "${#dumps[@]}"
m0=$(printf '%s\n' "$first" | sed -E 's/.*\.m([0-9]+)\.heap$/\1/')
m1=$(printf '%s\n' "${dumps[1]:-}" | sed -E 's/.*\.m([0-9]+)\.heap$/\1/')
ha_is "its mseq is the next one" "$((m0 + 1))" "$m1"

failed_before=$HA_FAILED
if [ -f "$datadir/$first" ]; then
    timeout -k 5 90 jeprof --text "$HA_DAEMON" "$datadir/$first" \
        >"$HA_TMP/jeprof.out" 2>"$HA_TMP/jeprof.err"
    rc=$?
    ha_is "jeprof --text daemon/heapadmind <dump> exits 0" 0 "$rc"
    ha_file_like "jeprof reads the profile (Total: line)" \
        "$HA_TMP/jeprof.out" "^Total: [0-9.]+ [KMG]?B"
    ha_file_like "jeprof shows SQLite's allocation sites" "$HA_TMP/jeprof.out" \
        "sqlite3"
    if [ "$HA_FAILED" -gt "$failed_before" ]; then
        ha_file_tail "$HA_TMP/jeprof.out"
        ha_file_tail "$HA_TMP/jeprof.err"
    fi
else
    ha_fail "jeprof --text daemon/heapadmind <dump>: no dump to read"
fi

# prof_gdump: a dump at each new high-water mark of virtual memory.
set_var jemalloc-prof_gdump true
ha_is "prof_gdump switched on" "0:" "$HA_RC:$HA_ERR"
ha_sql "CREATE TABLE blobs (b BLOB);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)
    INSERT INTO blobs SELECT randomblob(1000000) FROM n"
ha_is "workload: 50 MB of blobs" "0:" "$HA_RC:$HA_ERR"
mapfile -t dumps < <(dump_files "$datadir" proxysql u)
others=$(printf '%s\n' "${dumps[@]}" |
    grep -Ev "^proxysql\.$pid\.[0-9]+\.u[0-9]+\.heap$")
if [ "${#dumps[@]}" -ge 1 ] && [ -z "$others" ]; then
    ha_pass "prof_gdump wrote ${#dumps[@]} proxysql.$pid.<seq>.u<useq>.heap dumps"
else
    ha_fail "prof_gdump wrote proxysql.$pid.<seq>.u<useq>.heap dumps" \
        "datadir holds: $(find "$datadir" -printf '%f ')"
fi
set_var jemalloc-prof_gdump false

set_var jemalloc-prof_active false
ha_sql_is "profiling switched off again" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'" \
    false

# A dump into a datadir that has gone: ERR with the path, daemon serves on.
rm -rf "$datadir"
set_var jemalloc-dump_now true
ha_is "dump into a missing datadir: refused" 1 "$HA_RC"
ha_like "dump into a missing datadir: the message names the path" \
    "^ERROR [0-9]+ .*$datadir" "$HA_ERR"
ha_like "dump into a missing datadir: the message says it is missing" \
    "^ERROR [0-9]+ .*(missing|[Nn]o such file|does not exist)" "$HA_ERR"
ha_ok "dump into a missing datadir: no directory or file appeared" \
    test ! -e "$datadir"
ha_sql_is "the daemon still serves after the refused dump" "SELECT 1+1" 2

# The datadir replaced by a plain file: not writable as a directory.
printf 'not a directory\n' >"$datadir"
set_var jemalloc-dump_now true
ha_is "dump when the datadir is a plain file: refused" 1 "$HA_RC"
ha_like "dump when the datadir is a plain file: the message names the path" \
    "^ERROR [0-9]+ .*$datadir" "$HA_ERR"
ha_is "the plain file is untouched" "not a directory" "$(cat "$datadir")"
rm -f "$datadir"

# Once the directory is back, dumps work again.
mkdir -p "$datadir"
set_var jemalloc-dump_now true
ha_is "dump after the datadir is restored succeeds" "0:" "$HA_RC:$HA_ERR"
mapfile -t dumps < <(dump_files "$datadir" proxysql m)
ha_is "dump after the datadir is restored: one file" 1 "${#dumps[@]}"
ha_stop

# --- MALLOC_CONF overrides the compiled-in malloc_conf -------------------------

HA_DATADIR=$HA_TMP/noprof
HA_ENV=(MALLOC_CONF=prof:false)
if ha_start; then
    ha_sql_is "MALLOC_CONF=prof:false: jemalloc-prof reads 'false'" \
        "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof'" \
        false
    ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
    ha_like "MALLOC_CONF=prof:false: statistics still work" "^0:[0-9]+$" \
        "$HA_RC:$HA_OUT"
    for row in prof_active:true lg_prof_sample:12 dump_now:true reset_now:true; do
        set_var "jemalloc-${row%%:*}" "${row#*:}"
        ha_is "MALLOC_CONF=prof:false: UPDATE jemalloc-${row%%:*} fails" 1 \
            "$HA_RC"
        ha_like "MALLOC_CONF=prof:false: ... and says to start with prof:true" \
            "^ERROR [0-9]+ .*jemalloc-${row%%:*}.*prof:true" "$HA_ERR"
    done
    ha_ok "MALLOC_CONF=prof:false: no dump file written" \
        test -z "$(dump_files "$HA_DATADIR" proxysql '[a-z]')"
    ha_sql_is "MALLOC_CONF=prof:false: the daemon still serves" "SELECT 1+1" 2
    ha_stop
else
    ha_fail "heapadmind starts with MALLOC_CONF=prof:false"
fi

HA_DATADIR=$HA_TMP/active
HA_ENV=(MALLOC_CONF=prof_active:true)
if ha_start; then
    ha_sql_is "MALLOC_CONF=prof_active:true wins over the compiled-in prof_active:false" \
        "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'" \
        true
    ha_stop
else
    ha_fail "heapadmind starts with MALLOC_CONF=prof_active:true"
fi
HA_ENV=()

# --- config-driven start-up profiling: interval and final dumps -------------------

HA_DATADIR=$HA_TMP/interval
HA_JEMALLOC='prof_active = true; lg_prof_interval = 20; lg_prof_sample = 10; prof_final = true; lg_prof_sample_min = 10;'
if ha_start; then
    datadir=$(realpath "$HA_DATADIR")
    pid=$(cat "$datadir/heapadmind.pid" 2>/dev/null)
    ha_is "interval config: the pid survives the re-exec (pid file = started pid)" \
        "$HA_PID" "$pid"
    ha_is "interval config: started once, no re-exec loop" 1 \
        "$(grep -c 'heapadmind .* starting (pid' "$HA_LOG")"
    ha_like "interval config: a log line shows the effective settings" \
        "lg_prof_interval=20.*prof_final=true|prof_final=true.*lg_prof_interval=20" \
        "$(grep -v 'config:' "$HA_LOG")"
    ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name IN ('jemalloc-prof_active', 'jemalloc-lg_prof_sample', 'jemalloc-lg_prof_interval', 'jemalloc-prof_final') ORDER BY variable_name"
    ha_is "interval config: settings read back over SQL" \
        "$(printf 'jemalloc-lg_prof_interval\t20\njemalloc-lg_prof_sample\t10\njemalloc-prof_active\ttrue\njemalloc-prof_final\ttrue')" \
        "$HA_OUT"
    workload 20000
    ha_is "interval config: workload runs" "0:" "$HA_RC:$HA_ERR"
    mapfile -t dumps < <(dump_files "$datadir" proxysql i)
    if [ "${#dumps[@]}" -ge 1 ]; then
        ha_pass "interval config: the workload produced ${#dumps[@]} interval dumps"
    else
        ha_fail "interval config: the workload produced interval dumps" \
            "datadir holds: $(find "$datadir" -printf '%f ')"
    fi
    others=$(printf '%s\n' "${dumps[@]}" |
        grep -Ev "^proxysql\.$pid\.[0-9]+\.i[0-9]+\.heap$")
    ha_is "interval config: every interval dump is proxysql.$pid.<seq>.i<iseq>.heap" \
        "" "$others"
    if ha_stop && [ "$HA_EXIT" = 0 ]; then
        ha_pass "interval config: SIGTERM stops it with exit 0"
    else
        ha_fail "interval config: SIGTERM stops it with exit 0" \
            "exit status '$HA_EXIT'"
    fi
    mapfile -t dumps < <(dump_files "$datadir" proxysql f)
    final=$(find "$datadir" -maxdepth 1 -name "proxysql.$pid.*.f.heap" | wc -l)
    ha_is "interval config: prof_final wrote proxysql.$pid.<seq>.f.heap at exit" \
        1 "$final"
else
    ha_fail "heapadmind starts with the interval config"
fi

# The operator's MALLOC_CONF wins over the config; dump_prefix renames files.
HA_DATADIR=$HA_TMP/stem
HA_JEMALLOC='lg_prof_interval = 20; dump_prefix = "myapp";'
HA_ENV=(MALLOC_CONF=lg_prof_interval:21)
if ha_start; then
    datadir=$(realpath "$HA_DATADIR")
    ha_sql_is "MALLOC_CONF=lg_prof_interval:21 wins over the config's 20" \
        "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-lg_prof_interval'" \
        21
    ha_sql_is "dump_prefix = \"myapp\": jemalloc-prof_prefix is <datadir>/myapp" \
        "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_prefix'" \
        "$datadir/myapp"
    set_var jemalloc-dump_now true
    mapfile -t dumps < <(dump_files "$datadir" myapp m)
    ha_like "dump_prefix = \"myapp\": dump_now writes myapp.<pid>.<seq>.m<mseq>.heap" \
        "^0:myapp\.$HA_PID\.[0-9]+\.m[0-9]+\.heap$" "$HA_RC:${dumps[0]:-}"
    ha_stop
else
    ha_fail "heapadmind starts with MALLOC_CONF=lg_prof_interval:21"
fi
HA_ENV=()

ha_done
