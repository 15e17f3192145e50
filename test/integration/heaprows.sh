#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Heap profiles per stack and per frame on the real daemon: heap_stacks
# and heap_profile agree with heap_top and with jeprof's Total, stack_id
# and function constraints are answered without a scan, 'live' profiles
# this process for admins only and leaves no file behind, and a binary
# replaced since the dump (build-id) is reported, never misnamed.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require jeprof libjemalloc-dev

HA_JEMALLOC='prof_active = true; lg_prof_sample = 14;'
ha_start || ha_bail "heapadmind starts and takes logins"
datadir=$(realpath "$HA_DATADIR")

ha_sql "CREATE TABLE w(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) INSERT INTO w SELECT randomblob(300) FROM n"
ha_is "a workload that keeps memory" "0:" "$HA_RC:$HA_ERR"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
dump=$HA_OUT
ha_like "a dump to read" "^proxysql\.$HA_PID\.0\.m0\.heap$" "$dump"

# jeprof's Total for the dump, in bytes.
want=$(timeout 120 jeprof --text --show_bytes "$HA_DAEMON" "$datadir/$dump" 2>/dev/null |
       sed -n 's/^Total: \([0-9]*\) B.*/\1/p')

# heap_stacks: one row per stack, ids 1..n, totals equal jeprof's.
ha_sql "SELECT count(*) = max(stack_id), min(stack_id), sum(bytes) FROM heap_stacks('$dump')"
ha_like "heap_stacks has one row per stack, ids from 1" "^0:1	1	[0-9]+$" "$HA_RC:$HA_OUT"
sum=${HA_OUT##*	}
if [ -n "$want" ]; then
    ha_ok "heap_stacks' bytes add up to jeprof's Total ($sum vs $want) within 1%" \
        awk -v a="$sum" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b / 100 + 1) }'
else
    ha_fail "jeprof printed a Total"
fi
ha_sql "SELECT count(*) FROM heap_stacks('$dump') WHERE stack LIKE '%main;%' AND frames > 3"
ha_like "stacks are collapsed root first, through main" "^0:[1-9][0-9]*$" "$HA_RC:$HA_OUT"

# The largest stack, by id: the same bytes in both tables.
ha_sql "SELECT stack_id, bytes FROM heap_stacks('$dump') ORDER BY bytes DESC LIMIT 1"
top_id=${HA_OUT%%	*}
top_bytes=${HA_OUT##*	}
ha_sql "SELECT bytes, frames > 0 FROM heap_stacks('$dump') WHERE stack_id = $top_id"
ha_is "heap_stacks WHERE stack_id = N finds that stack" "0:$top_bytes	1" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) FROM heap_stacks('$dump') WHERE stack_id = 0 OR stack_id = -3"
ha_is "ids outside 1..n match nothing" "0:0" "$HA_RC:$HA_OUT"

# heap_profile: one row per frame; depth 0 is the allocation site, frames
# of a stack carry the stack's bytes, and the row count equals the frame
# count heap_stacks gives.
ha_sql "SELECT frames FROM heap_stacks('$dump') WHERE stack_id = $top_id"
frames=$HA_OUT
ha_sql "SELECT min(depth), max(depth) + 1, count(*), min(bytes), max(bytes), count(DISTINCT stack_id) FROM heap_profile('$dump') WHERE stack_id = $top_id"
ha_is "heap_profile gives that stack's frames, depth 0 first, with its bytes" \
    "0:0	$frames	$frames	$top_bytes	$top_bytes	1" "$HA_RC:$HA_OUT"
# The workload ran as a statement, on a fiber (core/fiber.c): its stacks
# start at the fiber's entry, then on_command, not at main.
ha_sql "SELECT count(*) FROM heap_profile('$dump') WHERE stack_id = $top_id AND function = 'ha_conn_command_run' AND file LIKE '%admin/conn_command.c' AND line > 0 AND module LIKE '%heapadmind'"
ha_is "frames are named with file, line and module (ha_conn_command_run in admin/conn_command.c)" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) FROM heap_profile('$dump') WHERE inlined = 1"
ha_like "inlined frames are expanded and marked" "^0:[1-9][0-9]*$" "$HA_RC:$HA_OUT"

# Per function: heap_profile's flat (depth 0) and cum (distinct stacks)
# equal heap_top's for the top function.
ha_sql "SELECT function, flat_bytes, cum_bytes FROM heap_top('$dump') WHERE function NOT LIKE '% (inline)' AND function NOT LIKE '0x%' LIMIT 1"
IFS='	' read -r fn flat cum <<<"$HA_OUT"
# Rows carry each stack's figure rounded, so sums may differ from
# heap_top's (summed, then rounded) by under a byte per stack.
ha_sql "SELECT coalesce(sum(bytes), 0), count(*) FROM heap_profile('$dump') WHERE depth = 0 AND function = '$fn' AND inlined = 0"
IFS='	' read -r got n <<<"$HA_OUT"
ha_ok "heap_profile's allocation sites in $fn add up to heap_top's flat ($got vs $flat)" \
    awk -v a="$got" -v b="$flat" -v n="$n" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= n / 2 + 1) }'
ha_sql "SELECT count(*) FROM heap_top('$dump') WHERE function = '$fn'"
ha_is "heap_top WHERE function = '$fn' finds one row" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT sum(b), count(*) FROM (SELECT max(bytes) AS b FROM heap_profile('$dump') WHERE function = '$fn' GROUP BY stack_id)"
IFS='	' read -r got n <<<"$HA_OUT"
ha_ok "heap_profile's stacks through $fn add up to heap_top's cum ($got vs $cum)" \
    awk -v a="$got" -v b="$cum" -v n="$n" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= n / 2 + 1) }'

# The query plans: the constraints go to the table, not to a scan.
ha_sql "EXPLAIN QUERY PLAN SELECT * FROM heap_profile('$dump') WHERE stack_id = 3 AND function = 'main'"
ha_like "stack_id and function are pushed down in heap_profile" "VIRTUAL TABLE INDEX 7:" "$HA_RC:$HA_OUT"

# Loaded profiles are cached, keyed by the file: a file replaced under
# the same name is a new dump and is read again.
ha_sql "SELECT sum(bytes) FROM heap_stacks('$dump')"
sum1=$HA_OUT
ha_sql "DROP TABLE w"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
dump2=$HA_OUT
ha_sql "SELECT sum(bytes) FROM heap_stacks('$dump2')"
sum2=$HA_OUT
cp "$datadir/$dump" "$HA_TMP/saved.heap"
cp "$datadir/$dump2" "$datadir/$dump"
touch -d '+1 second' "$datadir/$dump"
ha_sql "SELECT sum(bytes) FROM heap_stacks('$dump')"
ha_is "a file replaced under the same name is read again ($sum1 before)" "0:$sum2" "$HA_RC:$HA_OUT"
cp "$HA_TMP/saved.heap" "$datadir/$dump"

# 'live': a fresh profile of the daemon, for admins, leaving no file (but
# the symbol indexes of its modules, kept on purpose in cache/, which the
# index builder may be writing meanwhile).
before=$(find "$datadir" -mindepth 1 -path "$datadir/cache" -prune -o -print | sort)
ha_sql "SELECT count(*) > 0, sum(flat_bytes) > 0 FROM heap_top('live')"
ha_is "heap_top('live') profiles the daemon now" "0:1	1" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) > 0 FROM heap_profile('live') WHERE function = 'main'"
ha_is "heap_profile('live') names the daemon's frames" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) > 0 FROM heap_profile_diff('$dump', 'live')"
ha_is "a dump diffs against the live heap" "0:1" "$HA_RC:$HA_OUT"
after=$(find "$datadir" -mindepth 1 -path "$datadir/cache" -prune -o -print | sort)
ha_is "a live profile leaves nothing in the datadir" "$before" "$after"

# Build-ids: pretend heapadmind was upgraded since the dump.
bid=$(readelf -n "$HA_DAEMON" 2>/dev/null | sed -n 's/.*Build ID: *//p' | head -1)
if [ -n "$bid" ] && grep -q "^$bid " "$datadir/$dump.buildid"; then
    cp "$datadir/$dump" "$datadir/proxysql.1.0.m7.heap"
    sed "s/^$bid /00112233445566778899aabbccddeeff00112233 /" \
        "$datadir/$dump.buildid" > "$datadir/proxysql.1.0.m7.heap.buildid"
    ha_sql "SELECT build_id_mismatch FROM stats_heap_dumps WHERE file_name = 'proxysql.1.0.m7.heap'"
    ha_like "stats_heap_dumps reports the replaced binary" \
        "^0:.*heapadmind \(dump build-id 00112233445566778899aabbccddeeff00112233, on disk $bid\)$" \
        "$HA_RC:$HA_OUT"
    ha_sql "SELECT build_id_mismatch FROM stats_heap_dumps WHERE file_name = '$dump'"
    ha_is "... and nothing for the dump whose binaries match" "0:" "$HA_RC:$HA_OUT"
    ha_sql "SELECT count(*), sum(function = 'main') FROM heap_profile('proxysql.1.0.m7.heap') WHERE module LIKE '%heapadmind' AND module_changed = 1"
    ha_like "its frames are flagged, not named from the new binary" "^0:[1-9][0-9]*	0$" "$HA_RC:$HA_OUT"
    ha_sql "SELECT count(*) FROM heap_top('proxysql.1.0.m7.heap') WHERE function = 'main'"
    ha_is "heap_top names none of them either" "0:0" "$HA_RC:$HA_OUT"
else
    ha_fail "heapadmind's build-id is recorded beside the dump"
fi

# The portable copy: off by default, then jeprof reads it with no binary.
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
plain=$HA_OUT
ha_ok "no symbolized copy while jemalloc-dump_symbolized is false" \
    test ! -e "$datadir/$plain.sym"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_symbolized'"
out=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults -h 127.0.0.1 -P "$HA_PORT" \
    -uadmin -padmin -vvv -e "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'" 2>&1)
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
symd=$HA_OUT
ha_like "dump_now names the symbolized copy" "symbolized copy $datadir/$symd.sym \(jeprof --text" "$out"
if [ -s "$datadir/$symd.sym" ]; then
    mkdir -p "$HA_TMP/elsewhere"
    cp "$datadir/$symd.sym" "$HA_TMP/elsewhere/copy.heap"
    (cd "$HA_TMP/elsewhere" && timeout 120 jeprof --text --show_bytes copy.heap) \
        >"$HA_TMP/sym.txt" 2>/dev/null
    stotal=$(sed -n 's/^Total: \([0-9]*\) B.*/\1/p' "$HA_TMP/sym.txt")
    ha_sql "SELECT sum(bytes) FROM heap_stacks('$symd')"
    ha_ok "jeprof --text reads the copy with no binary: Total $stotal, SQL $HA_OUT (1%)" \
        awk -v a="$stotal" -v b="$HA_OUT" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= b / 100 + 1) }'
    ha_sql "SELECT function FROM heap_top('$symd') WHERE function NOT LIKE '0x%' LIMIT 1"
    ha_file_like "... and names heap_top's top function ($HA_OUT)" "$HA_TMP/sym.txt" \
        " $(sed 's/[][().*^$+]/\\&/g' <<<"$HA_OUT")\$"
else
    ha_fail "the symbolized copy $symd.sym exists"
fi

# The audit trail: every control write, with who, from where and the
# result, refusals included.
ha_file_like "dump_now is logged with the user, the peer and the file" "$HA_LOG" \
    "\\[notice\\] control: admin@127\\.0\\.0\\.1:[0-9]+ \\(connection [0-9]+\\): jemalloc-dump_now = 'true': heap profile written to $datadir/$symd"
ha_sql "UPDATE global_variables SET variable_value = '3' WHERE variable_name = 'jemalloc-lg_prof_sample'"
ha_file_like "... and so is a refused write" "$HA_LOG" \
    "\\[warn\\] control: admin@127\\.0\\.0\\.1:[0-9]+ \\(connection [0-9]+\\): jemalloc-lg_prof_sample = '3' refused: .*below the floor"

# Stats users read dumps but may not take a live profile.
HA_USER=stats HA_PASS=stats
ha_sql "SELECT count(*) > 0 FROM heap_stacks('$dump')"
ha_is "stats users read heap_stacks" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) > 0 FROM heap_profile('$dump') WHERE stack_id = 1"
ha_is "stats users read heap_profile" "0:1" "$HA_RC:$HA_OUT"
ha_sql_err "stats users may not take a live profile" \
    "SELECT * FROM heap_top('live')" "needs an admin user"
HA_USER=admin HA_PASS=admin

ha_sql_err "heap_profile without a dump says how to call it" \
    "SELECT * FROM heap_profile" "heap_profile needs a dump"
ha_sql_err "heap_stacks refuses a path" \
    "SELECT * FROM heap_stacks('../x.heap')" "no '/', no '..'"

ha_done
