#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Dump housekeeping on the real daemon: a dump every dump_interval_s and
# one when stats.resident passes dump_resident_bytes, gathered unattended;
# dump_retention_count keeps the datadir bounded (oldest removed first,
# sidecars with them); below dump_min_free_bytes automatic dumps are
# skipped with a logged warning, while dump_now still works; the settings
# show in global_variables, read-only. Needs a live jemalloc.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc

dumps() {
    find "$HA_DATADIR" -maxdepth 1 -name 'proxysql.*.m*.heap' | wc -l
}

# ha_wait_log REGEX SECONDS: waits for a log line.
wait_log() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        grep -Eq "$1" "$HA_LOG" && return 0
        sleep 0.1
    done
    return 1
}

HA_DATADIR=$HA_TMP/data
HA_JEMALLOC='prof_active = true;
    dump_interval_s = 1;
    dump_retention_count = 3;
    dump_resident_bytes = 1048576L;'
ha_start || ha_bail "heapadmind starts with automatic dumps"
ha_file_like "the log names the automatic dumps" "$HA_LOG" \
    "automatic dumps: every 1 s, when stats.resident passes 1048576 bytes"
ha_sql "SELECT variable_name, variable_value FROM global_variables WHERE variable_name IN ('jemalloc-dump_interval_s', 'jemalloc-dump_min_free_bytes', 'jemalloc-dump_resident_bytes', 'jemalloc-dump_retention_bytes', 'jemalloc-dump_retention_count') ORDER BY 1"
ha_is "global_variables shows the housekeeping settings" \
    "jemalloc-dump_interval_s	1
jemalloc-dump_min_free_bytes	268435456
jemalloc-dump_resident_bytes	1048576
jemalloc-dump_retention_bytes	0
jemalloc-dump_retention_count	3" "$HA_OUT"
ha_sql_err "... read-only, saying where they are set" \
    "UPDATE global_variables SET variable_value = '9' WHERE variable_name = 'jemalloc-dump_retention_count'" \
    "config file \(jemalloc_variables\)"

if wait_log "dump retention: removed .*proxysql\.[0-9]+\.[0-9]+\.m[0-9]+\.heap" 15; then
    ha_pass "after 4 timed dumps the oldest is removed, and logged"
else
    ha_fail "no retention line within 15 s" "$(grep -c 'automatic dump' "$HA_LOG") automatic dumps logged"
fi
ha_file_like "the timed dumps are logged with their reason" "$HA_LOG" \
    "automatic dump \(dump_interval_s = 1\): heap profile written to $HA_DATADIR/proxysql\."
ha_ok "no more than dump_retention_count = 3 dumps in the datadir ($(dumps))" \
    test "$(dumps)" -le 3
ha_is "... and no sidecar of a removed dump is left" "" \
    "$(for f in "$HA_DATADIR"/proxysql.*.heap.*; do [ -e "${f%.*}" ] || echo "$f"; done)"
if wait_log "automatic dump \(stats\.resident [0-9]+ >= dump_resident_bytes 1048576\): heap profile written" 12; then
    ha_pass "resident memory past dump_resident_bytes triggers a dump"
else
    ha_fail "no resident-triggered dump within 12 s"
fi
sleep 6
ha_is "... once: it is re-armed only when resident falls below 90%" 1 \
    "$(grep -c 'automatic dump (stats.resident' "$HA_LOG")"
ha_stop

# --- the free-space floor -----------------------------------------------------------

HA_DATADIR=$HA_TMP/full
HA_JEMALLOC='prof_active = true;
    dump_interval_s = 1;
    dump_min_free_bytes = 1125899906842624L;'
ha_start || ha_bail "heapadmind starts with an unreachable free-space floor"
if wait_log "automatic dump \(dump_interval_s = 1\) skipped: [0-9]+ bytes free for $HA_DATADIR/proxysql, below jemalloc_variables\.dump_min_free_bytes = 1125899906842624" 5; then
    ha_pass "below dump_min_free_bytes the timed dump is skipped with a warning"
else
    ha_fail "no skip warning within 5 s"
fi
ha_is "... and nothing was written" 0 "$(dumps)"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_is "dump_now, which an operator asked for, still writes" "0:1" "$HA_RC:$(dumps)"
ha_stop

# --- a dump that cannot finish never stalls the sessions ----------------------------
# The next timed dump's file is made a FIFO where jemalloc will create it
# (in memory, /dev/shm/heapadmin.<pid>.<random>, or without tmpfs the staging
# directory; its naming is the last dump's counters plus one), so
# prof.dump blocks in open() until something reads it, holding
# jemalloc's dump lock as a stalled disk would. It is written on the
# worker: sessions are served meanwhile, the listing of dumps too (it
# reads the prefix a dump holds), and the next ticks are skipped rather
# than queued.

HA_DATADIR=$HA_TMP/slow
HA_JEMALLOC='prof_active = true;
    dump_interval_s = 2;'
ha_start || ha_bail "heapadmind starts with a dump every 2 s"
wait_log "automatic dump \(dump_interval_s = 2\): heap profile written" 10 ||
    ha_bail "no first timed dump within 10 s"
last=$(find "$HA_DATADIR" -maxdepth 1 -name 'proxysql.*.m*.heap' -printf '%f\n' |
    sort -t. -k3,3n | tail -1)
IFS=. read -r _ dpid seq mseq _ <<<"$last"
mseq=${mseq#m}
stage=$(find /dev/shm -maxdepth 1 -type d -name "heapadmin.$dpid.*" | head -1)
[ -n "$stage" ] && [ -d "$stage" ] || stage=$HA_DATADIR/.heapadmin-staging
fifo=$stage/proxysql.$dpid.$((seq + 1)).m$((mseq + 1)).heap
mkfifo "$fifo" || ha_bail "cannot make $fifo"
if wait_log "automatic dump \(dump_interval_s = 2\) skipped: the last one is still being written" 8; then
    ha_pass "a dump blocked in its write makes the next tick skip, not queue"
else
    ha_fail "no skipped tick within 8 s (did the dump not block on $fifo?)"
fi
t0=$(date +%s%N)
ha_sql "SELECT 1" --connect-timeout=5
t1=$(date +%s%N)
ha_is "meanwhile a session is answered" "0:1" "$HA_RC:$HA_OUT"
ha_ok "... at once ($(((t1 - t0) / 1000000)) ms, while the dump has been blocked for seconds)" \
    test $(((t1 - t0) / 1000000)) -lt 1500
ha_sql "SELECT count(*) > 0 FROM stats_heap_dumps"
ha_is "... and the listing of dumps, which reads the prefix a dump holds" \
    "0:1" "$HA_RC:$HA_OUT"
timeout 10 cat "$fifo" >/dev/null
if wait_log "heap profile written to $HA_DATADIR/proxysql\.$dpid\.$((seq + 1))\.m$((mseq + 1))\.heap|automatic dump \(dump_interval_s = 2\) failed" 10; then
    ha_pass "once read, the blocked dump ends and says so"
else
    ha_fail "the blocked dump said nothing within 10 s of being read"
fi
ha_sql "SELECT 1"
ha_is "the daemon serves on" "0:1" "$HA_RC:$HA_OUT"
ha_stop

# --- no timer unless something dumps on its own -------------------------------------

HA_DATADIR=$HA_TMP/idle
HA_JEMALLOC=''
ha_start || ha_bail "heapadmind starts with the defaults"
ha_unlike "with the defaults no automatic-dump timer is armed" \
    "automatic dumps:" "$(cat "$HA_LOG")"
ha_stop
ha_done
