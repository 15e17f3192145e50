#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Files that are not what heapadmind expects, where it expects files
# (issue 35): a crash, a bad restore or a local user leaves them there.
#   - A FIFO where an earlier run's cgroup file (memory.events) is
#     expected, and a FIFO as a run record: the start settles the runs it
#     can and is not held (it was, for ever, in open()).
#   - /dev/shm/heapadmin.<pid>, the name heapadmind staged its dumps in
#     memory under, made by another user before the first dump: left
#     alone and logged; the dumps are still staged in memory, in a
#     directory of an unguessable name that only heapadmind's user can
#     enter, and nothing of a dump (its .mem) stays there after it, nor
#     the directory after the stop.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc

HA_DATADIR=$HA_TMP/data
mkdir -p "$HA_DATADIR/runs" "$HA_TMP/cg"
mkfifo "$HA_TMP/cg/memory.events" || ha_bail "cannot make a FIFO"
# A run of a process that is gone (pid 1 is never ours: init's start
# time is not this one), its cgroup directory holding the FIFO.
now=$(($(date +%s) * 1000000000))
cat >"$HA_DATADIR/runs/1.$((now - 7200000000000)).run" <<EOF
heapadmin-run 1
pid 1
program heapadmind
started_ns $((now - 7200000000000))
prefix proxysql
cgroup 2 /planted
cgroup_dir $HA_TMP/cg
limit max
last_seen_ns $((now - 3600000000000))
EOF
# And a run record that is itself a FIFO.
mkfifo "$HA_DATADIR/runs/2.$((now - 7100000000000)).run"

HA_JEMALLOC="prof_active = true;"
t0=$(date +%s%N)
ha_start || ha_bail "heapadmind starts beside the planted FIFOs"
ms=$((($(date +%s%N) - t0) / 1000000))
ha_pass "the start is not held by a FIFO where a file is expected ($ms ms)"
ha_sql "SELECT pid, how FROM stats_previous_runs WHERE pid = 1"
ha_like "the run whose cgroup file is a FIFO is settled all the same" "^1	[a-z]" "$HA_OUT"
ha_sql "SELECT count(*) FROM stats_previous_runs WHERE pid = 2"
ha_is "... and the FIFO run record is no run" 0 "$HA_OUT"
ha_ok "... the FIFOs untouched" test -p "$HA_TMP/cg/memory.events" -a \
    -p "$HA_DATADIR/runs/2.$((now - 7100000000000)).run"

# --- /dev/shm --------------------------------------------------------------------
[ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ] ||
    { ha_stop; ha_done; }
owner=nobody
id "$owner" >/dev/null 2>&1 || owner=$(id -un)
planted=/dev/shm/heapadmin.$HA_PID
install -d -o "$owner" -m 0777 "$planted" ||
    ha_bail "cannot plant $planted"
# shellcheck disable=SC2064 # now, while $planted is known
trap "rmdir '$planted' 2>/dev/null; ha_cleanup" EXIT
for _ in 1 2 3; do
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
done
ha_is "dumps are written with a planted $planted" 0 "$HA_RC"
ha_sql "SELECT count(*) FROM stats_heap_dumps WHERE file_name LIKE 'proxysql.$HA_PID.%.m%.heap'"
ha_is "... all three" 3 "$HA_OUT"
if [ "$owner" != "$(id -un)" ]; then
    ha_file_like "the planted directory is left alone, and the log says so" \
        "$HA_LOG" "$planted is not this process's \(a directory owned by uid [0-9]+\): left alone"
fi
ha_ok "... nothing of heapadmind's in it" test -z "$(ls -A "$planted")"
mem=$(find /dev/shm -maxdepth 1 -name "heapadmin.$HA_PID.*" -type d)
ha_ok "the dumps were staged in memory, in /dev/shm/heapadmin.$HA_PID.<random> (${mem:-none})" \
    test -n "$mem" -a "$(echo "$mem" | wc -l)" = 1
ha_is "... its owner and mode: ours, 0700" "$(id -un) 700" "$(stat -c '%U %a' "$mem")"
ha_is "... and empty once the dumps are published: no .mem left" "" \
    "$(ls -A "$mem")"
ha_unlike "no fall-back to staging on the datadir's disk" \
    "not staged in memory" "$(cat "$HA_LOG")"
ha_stop
ha_ok "the stop removes the memory directory" test ! -e "$mem"
ha_ok "... and leaves the planted one" test -d "$planted"
ha_done
