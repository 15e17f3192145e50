#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Dump files are never lost: a dump is written in the staging directory
# and published whole (a dump killed mid-write leaves no file under a dump
# name, and its remains are removed at the next start), and a restart
# never overwrites an earlier run's dumps. The container case runs for
# real: the daemon is pid 1 of its own pid namespace (unshare), twice,
# which made the second run's first dump truncate the first run's
# proxysql.1.0.m0.heap before.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc
ha_require unshare util-linux

dump_now() {
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
}

HA_DATADIR=$HA_TMP/data
ha_start || ha_bail "heapadmind starts"
dump_now
ha_is "dump_now: OK" "0:" "$HA_RC:$HA_ERR"
ha_is "the dump is in the datadir under jemalloc's name" 1 \
    "$(find "$HA_DATADIR" -maxdepth 1 -name "proxysql.$HA_PID.*.m*.heap" | wc -l)"
ha_is "nothing is left in the staging directory" "" \
    "$(find "$HA_DATADIR/.heapadmin-staging" -type f 2>/dev/null)"
ha_sql_is "stats_heap_dumps lists it, and nothing staged" \
    "SELECT count(*) FROM stats_heap_dumps" 1
ha_stop

# --- pid 1, twice ----------------------------------------------------------------

if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
    echo "ok - pid-1 restarts # SKIP unshare --pid is not permitted here"
    ha_done
fi
cat >"$HA_TMP/pid1" <<SH
#!/bin/sh
exec unshare --pid --fork --mount-proc --kill-child=SIGTERM "$HA_DAEMON" "\$@"
SH
chmod +x "$HA_TMP/pid1"
# unshare --fork ignores SIGTERM while it waits: stop the daemon itself
# (from outside its namespace, as a container runtime would), then let
# ha_stop reap unshare.
pid1_stop() {
    local p
    for p in $(pgrep -f -- "-c $HA_CONF"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = heapadmind ] && kill -TERM "$p"
    done
    ha_stop
}
real_daemon=$HA_DAEMON
HA_DAEMON=$HA_TMP/pid1
HA_DATADIR=$HA_TMP/pid1data

ha_start || ha_bail "heapadmind starts as pid 1"
dump_now
first=$HA_DATADIR/proxysql.1.0.m0.heap
ha_ok "run 1 (pid 1) wrote proxysql.1.0.m0.heap" test -s "$first"
sum1=$(sha256sum <"$first")
pid1_stop

ha_start || ha_bail "heapadmind starts as pid 1 again"
ha_file_like "run 2 says it moved run 1's file aside" "$HA_LOG" \
    "[0-9]+ files? of an earlier run with the same name moved to $HA_DATADIR/earlier-runs/proxysql\.1\.[0-9]{8}T[0-9]{6}Z"
kept=$(find "$HA_DATADIR/earlier-runs" -name proxysql.1.0.m0.heap | head -1)
ha_ok "run 1's dump is kept under earlier-runs" test -n "$kept"
dump_now
ha_ok "run 2 (pid 1) wrote its own proxysql.1.0.m0.heap" test -s "$first"
ha_is "run 1's dump is unchanged" "$sum1" "$(sha256sum <"$kept" 2>/dev/null)"
pid1_stop

# A dump interrupted by kill -9 leaves its remains in the staging
# directory only; the next start removes them.
mkdir -p "$HA_DATADIR/.heapadmin-staging"
printf 'heap_v2/524288\n  t*: 1: 4' >"$HA_DATADIR/.heapadmin-staging/proxysql.1.3.m1.heap"
ha_start || ha_bail "heapadmind starts as pid 1 a third time"
ha_ok "the interrupted dump's remains are removed at start" \
    test ! -e "$HA_DATADIR/.heapadmin-staging/proxysql.1.3.m1.heap"
ha_file_like "... and the log says so" "$HA_LOG" \
    "removed $HA_DATADIR/\.heapadmin-staging/proxysql\.1\.3\.m1\.heap, a dump interrupted mid-write"
ha_sql_is "no dump name in the datadir ever held a partial file" \
    "SELECT count(*) FROM stats_heap_dumps WHERE bytes IS NULL" 0
pid1_stop
HA_DAEMON=$real_daemon
ha_done
