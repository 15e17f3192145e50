#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Whose objects pin a fragmented size class, in a real host:
# test/growthhost (heapadmin embedded) started sampling from the first
# allocation (MALLOC_CONF prof_active:true, lg_prof_sample:14) and with
# prof_stats:true, whose growthhost_fragment fills 32 MiB of 64-byte
# regions and frees 31 in 32, and whose growthhost_round33 keeps 200,000
# objects of 33 bytes. heap_fragmentation('live') must rank the
# fragmenting site first, in the 64-byte class, with most of that class's
# free bytes; its rows must add up to stats_memory_breakdown's
# jemalloc.fragmentation.slabs within 1 %; the _stacks form, a dump taken
# with dump_now, the roles and a dump with nothing recorded beside it must
# behave; the /heap page (headless Chromium) must point at the fragmenting
# site; and stats_jemalloc_bins must show the 48-byte class's rounding
# waste (15 of every 48 bytes).

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-120}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require chromium chromium
ha_require curl curl

host=$HA_BUILDDIR/test/growthhost
[ -x "$host" ] || ha_bail "no test host at $host (make test/growthhost)"

HA_DATADIR=$HA_TMP/data
mkdir -m 700 "$HA_DATADIR"
HA_LOG=$HA_DATADIR/heapadmind.log
cat >"$HA_TMP/host.tmpl" <<'EOF'
datadir = "@DATADIR@";
admin_variables = { admin_credentials = "admin:admin"; stats_credentials = "stats:stats"; mysql_ifaces = "127.0.0.1:@PORT@"; http_ifaces = "127.0.0.1:@HPORT@"; };
EOF
ha_start_host "$HA_TMP/host.tmpl" \
    MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:14,prof_stats:true \
    GROWTHHOST_ROUND=200000 ||
    ha_bail "the host's admin port answers"

# --- fragmentation by call site ---------------------------------------------

ha_sql "SELECT function, size_class, live_regions, free_bytes, round(class_share, 1), round(utilization, 3) FROM heap_fragmentation('live') LIMIT 4"
ha_diag "heap_fragmentation('live'):" "$HA_OUT"
ha_like "the fragmenting site ranks first, in the 64-byte class" \
    "^growthhost_fragment	64	" "$(head -1 <<<"$HA_OUT")"
ha_sql "SELECT class_share > 90, utilization < 0.1, live_regions BETWEEN 8000 AND 33000 FROM heap_fragmentation('live') WHERE function = 'growthhost_fragment' AND size_class = 64"
ha_is "... with most of that class's free bytes, in slabs about 3 % used, ~16k live regions estimated" \
    "0:1	1	1" "$HA_RC:$HA_OUT"
ha_sql "SELECT f, s, abs(f - s) <= s / 100 FROM (SELECT (SELECT sum(free_bytes) FROM heap_fragmentation('live')) AS f, (SELECT bytes FROM stats_memory_breakdown WHERE component = 'jemalloc.fragmentation.slabs') AS s)"
ha_diag "sum(free_bytes), jemalloc.fragmentation.slabs: $HA_OUT"
ha_like "the rows add up to jemalloc.fragmentation.slabs within 1 %" \
    "^0:[0-9]+	[0-9]+	1$" "$HA_RC:$HA_OUT"
ha_sql "SELECT stack, size_class FROM heap_fragmentation_stacks('live') LIMIT 1"
ha_like "the _stacks form: the fragmenting stack first, root first" \
    "main;.*growthhost_fragment	64$" "$HA_OUT"
ha_sql "SELECT detail LIKE '%heap_fragmentation(''live'') WHERE size_class = 64%' FROM stats_memory_breakdown WHERE component = 'jemalloc.fragmentation.slabs'"
ha_is "the breakdown's fragmentation row points at the query for its worst class" \
    "0:1" "$HA_RC:$HA_OUT"

# A dump: the bins were recorded beside it, in the same pass.
out=$(ha_mysql -vvv -e "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'" 2>&1)
dump=$(sed -n 's/.*heap profile written to \([^ ]*\) .*/\1/p' <<<"$out" | head -1)
dump=${dump##*/}
ha_like "dump_now writes a dump" '^proxysql\.[0-9]+\.[0-9]+\.m[0-9]+\.heap$' "$dump"
ha_ok "... with what memory looked like beside it" \
    grep -q '^bin 64 ' "$HA_DATADIR/$dump.mem"
HA_USER=stats HA_PASS=stats
ha_sql "SELECT function, size_class FROM heap_fragmentation('$dump') LIMIT 1"
ha_is "a stats user reads a dump's fragmentation: the same site first" \
    "0:growthhost_fragment	64" "$HA_RC:$HA_OUT"
ha_sql_err "... but not a live profile's" \
    "SELECT * FROM heap_fragmentation('live')" "needs an admin user"
HA_USER=admin HA_PASS=admin

# The /heap page points at the site too (its data, then the page as a
# browser renders it).
json=$(curl -s --max-time 30 -u stats:stats "http://127.0.0.1:$hport/heap/data.json?dump=$dump")
ha_like "the page's data names the fragmenting site and its class" \
    '"frag":\{"f":"growthhost_fragment","size":64,' "$json"
timeout 90 chromium --headless --no-sandbox --disable-gpu \
    --disable-dev-shm-usage --no-first-run --user-data-dir="$HA_TMP/chrome" \
    --virtual-time-budget=15000 --window-size=1280,900 \
    --dump-dom "http://stats:stats@127.0.0.1:$hport/heap?dump=$dump" \
    >"$HA_TMP/dom.html" 2>"$HA_TMP/chrome.err"
ha_file_like "the /heap page says whose objects pin the fragmented class, and the query" \
    "$HA_TMP/dom.html" \
    "Fragmentation: growthhost_fragment pins [0-9.]+ MiB of free regions in the 64-byte class .*SELECT \* FROM heap_fragmentation\('$dump'\)"

# Another dump, its record removed before anything read it (as a dump
# from before heapadmin recorded them, or another tool's).
out=$(ha_mysql -vvv -e "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'" 2>&1)
bare=$(sed -n 's/.*heap profile written to \([^ ]*\) .*/\1/p' <<<"$out" | head -1)
bare=${bare##*/}
rm -f "$HA_DATADIR/$bare.mem"
ha_sql_err "a dump with nothing recorded beside it says so, and what to use" \
    "SELECT * FROM heap_fragmentation('$bare')" \
    "no size-class statistics were recorded with this dump.*use 'live'"
ha_sql_err "a table function without its dump says how to call it" \
    "SELECT * FROM heap_fragmentation" \
    "heap_fragmentation needs a dump"

# --- rounding waste (opt.prof_stats) ------------------------------------------

ha_sql "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_stats'"
ha_is "the host runs with prof_stats" "0:true" "$HA_RC:$HA_OUT"
ha_sql "SELECT prof_live > 100, prof_live_requested * 1.0 / prof_live BETWEEN 32 AND 36, rounding_waste_bytes BETWEEN 200000 * 15 * 8 / 10 AND 200000 * 15 * 12 / 10, round(rounding_waste_bytes * 100.0 / allocated_bytes) FROM stats_jemalloc_bins WHERE arena IS NULL AND size = 48"
ha_is "the 48-byte class: sampled objects asked for ~33 bytes, ~15 of 48 lost to rounding (31 %)" \
    "0:1	1	1	31.0" "$HA_RC:$HA_OUT"
ha_sql "SELECT count(*) FROM stats_jemalloc_bins WHERE arena IS NOT NULL AND prof_live IS NOT NULL"
ha_is "... merged rows only (prof_stats has no arenas)" "0:0" "$HA_RC:$HA_OUT"

kill -TERM "$hpid"
if ha_wait_gone "$hpid" 10; then
    wait "$hpid"
    ha_is "SIGTERM stops the host cleanly" 0 "$?"
else
    ha_fail "the host stops on SIGTERM"
fi
ha_forget "$hpid"
ha_done
