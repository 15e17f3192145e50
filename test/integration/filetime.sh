#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# max_execution_time and KILL QUERY for every table that reads a file
# (issue 35): the reading runs on a worker while the statement waits,
# where no SQLite step sees the deadline, and heap_lifetimes with 1000 ms
# answered a cold 1 GB log after 13.9 s. Each table is asked once with
# SET max_execution_time = 100 of inputs made here that take longer to
# read (a 60 MB dump under many names, a 60 MB lifetime log, 1,000
# earlier runs, 20,000 dumps to list): ERR 3024, within 100 ms and this
# run's quick answer; then once without a limit, which gets the rows
# (the work went on, and its result was kept). KILL QUERY ends one the
# same way (ERR 1317).

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-300}
PY=${HA_PYTHON:-/usr/bin/python3}
HA_DATADIR=$HA_TMP/data
mkdir -p "$HA_DATADIR"

# A heap_v2 dump of about 60 MB: 120,000 stacks of 30 frames.
big=$HA_DATADIR/proxysql.4242.0.m0.heap
"$PY" - "$big" <<'PY'
import random, sys
r = random.Random(35)
pcs = ["0x%x" % (0x7f0000000000 + r.randrange(1 << 24) * 16)
       for _ in range(5000)]
with open(sys.argv[1], "w") as f:
    n = 120000
    f.write("heap_v2/524288\n  t*: %d: %d [0: 0]\n  t0: %d: %d [0: 0]\n"
            % (n, n * 4096, n, n * 4096))
    for i in range(n):
        f.write("@ " + " ".join(r.choice(pcs) for _ in range(30)) + "\n")
        f.write("  t*: 1: 4096 [0: 0]\n  t0: 1: 4096 [0: 0]\n")
    f.write("\nMAPPED_LIBRARIES:\n"
            "7f0000000000-7f0100000000 r-xp 00000000 00:00 0 /usr/lib/x.so\n")
PY
# Each table reads its own name of it (a hard link): nothing is cached.
for i in $(seq 1 12); do
    ln "$big" "$HA_DATADIR/proxysql.4242.$i.m$i.heap" || ha_bail "cannot link"
done
# A lifetime log of about 60 MB: 450,000 allocations.
"$PY" - "$HA_DATADIR/proxysql.4242.20.json" <<'PY'
import random, sys
r = random.Random(35)
pcs = ["0x%x" % (0x7f0000000000 + r.randrange(1 << 24) * 16)
       for _ in range(5000)]
with open(sys.argv[1], "w") as f:
    f.write('{"info":{"duration":1000000000,"version":"5.3.0","lg_sample_rate"'
            ':0,"prof_time_resolution":"default","pid":4242},"threads":'
            '[{"thr_uid":0,"thr_name":""}],"stack_traces":[')
    f.write(",".join("[" + ",".join('"%s"' % r.choice(pcs) for _ in range(20))
                     + "]" for _ in range(2000)))
    f.write('],"allocations":[')
    rows = []
    for i in range(450000):
        t = 1000000 + i * 10
        rows.append('{"alloc_thread":0,"free_thread":0,"alloc_trace":%d,'
                    '"free_trace":%d,"alloc_timestamp":%d,"free_timestamp":'
                    '%d,"usize":%d}' % (i % 2000, i * 7 % 2000, t,
                                        t + i % 1000 * 1000, 16 << i % 8))
    f.write(",".join(rows))
    f.write("]}")
PY
ln "$HA_DATADIR/proxysql.4242.20.json" "$HA_DATADIR/proxysql.4242.21.json"

HA_ADMIN="max_execution_time = 0;"
HA_JEMALLOC="prof_active = true;"
ha_start || ha_bail "heapadmind starts"
quick=$(ha_quick_ms "$(ha_baseline_ms)")
# heap_fragmentation needs the bins a dump of heapadmin's records beside
# it: a real one's, for two of the big names.
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
mem=$(ls "$HA_DATADIR"/proxysql.*.m0.heap.mem | grep -v '\.4242\.' | head -1)
[ -n "$mem" ] || ha_bail "no .mem beside a dump of heapadmin's"
cp "$mem" "$HA_DATADIR/proxysql.4242.10.m10.heap.mem"
cp "$mem" "$HA_DATADIR/proxysql.4242.11.m11.heap.mem"

# limited NAME SQL: SQL with max_execution_time = 100 is ERR 3024 in
# time; then without a limit it answers.
limited() {
    local t0 ms
    t0=$(date +%s%N)
    ha_sql "SET max_execution_time = 100; $2"
    ms=$((($(date +%s%N) - t0) / 1000000))
    ha_like "$1 honours max_execution_time = 100: ERR 3024" \
        "ERROR 3024 .*maximum statement execution time exceeded \(max_execution_time = 100 ms\)" \
        "$HA_ERR"
    ha_ok "... within 100 + $quick ms ($ms ms)" test "$ms" -lt $((100 + quick))
    # heap_growth's two 60 MB dumps take 30 s beside stress-ng.
    HA_CLIENT_TIMEOUT=120 ha_sql "$2"
    ha_ok "... and answers without a limit (the reading went on: ${HA_OUT:-?} rows)" \
        test "$HA_RC" -eq 0 -a -n "$HA_OUT"
}

limited heap_top "SELECT count(*) FROM heap_top('proxysql.4242.1.m1.heap')"
limited heap_stacks "SELECT count(*) FROM heap_stacks('proxysql.4242.2.m2.heap')"
limited heap_profile "SELECT count(*) FROM heap_profile('proxysql.4242.3.m3.heap')"
limited heap_modules "SELECT count(*) FROM heap_modules('proxysql.4242.4.m4.heap')"
limited heap_profile_diff "SELECT count(*) FROM heap_profile_diff('proxysql.4242.5.m5.heap', 'proxysql.4242.6.m6.heap')"
limited heap_growth "SELECT count(*) FROM heap_growth('proxysql.4242.7.m7.heap', 'proxysql.4242.8.m8.heap')"
limited heap_growth_stacks "SELECT count(*) FROM heap_growth_stacks('proxysql.4242.9.m9.heap', 'proxysql.4242.12.m12.heap')"
limited heap_fragmentation "SELECT count(*) FROM heap_fragmentation('proxysql.4242.10.m10.heap')"
limited heap_fragmentation_stacks "SELECT count(*) FROM heap_fragmentation_stacks('proxysql.4242.11.m11.heap')"
limited heap_lifetimes "SELECT count(*) FROM heap_lifetimes('proxysql.4242.20.json')"
limited heap_lifetimes_stacks "SELECT count(*) FROM heap_lifetimes_stacks('proxysql.4242.21.json')"

# 1,000 earlier runs to read and settle, then 20,000 dumps to list.
"$PY" - "$HA_DATADIR" <<'PY'
import os, sys, time
d = sys.argv[1]
now = int(time.time()) * 1000000000
for i in range(1000):
    start = now - (7200 + i) * 1000000000
    with open(os.path.join(d, "runs", "%d.%d.run" % (1000000 + i, start)),
              "w") as f:
        f.write("heapadmin-run 1\npid %d\nprogram heapadmind\nstarted_ns %d\n"
                "prefix proxysql\nlast_seen_ns %d\n"
                % (1000000 + i, start, start + 1000000000))
PY
limited stats_previous_runs "SELECT count(*) FROM stats_previous_runs"
"$PY" - "$big" "$HA_DATADIR" <<'PY'
import os, sys
big, d = sys.argv[1], sys.argv[2]
for i in range(100, 20100):
    os.link(big, os.path.join(d, "proxysql.4243.%d.m%d.heap" % (i, i)))
PY
limited stats_heap_dumps "SELECT count(*) FROM stats_heap_dumps"

# KILL QUERY ends a statement waiting for its file the same way.
ha_mysql -N -B -e "SELECT count(*) FROM heap_top('proxysql.4242.0.m0.heap')" \
    >"$HA_TMP/killed.out" 2>&1 &
reader=$!
ha_sql_wait 1 "SELECT count(*) FROM stats_admin_sessions WHERE info LIKE 'SELECT count(*) FROM heap_top(%'"
ha_sql "SELECT id FROM stats_admin_sessions WHERE info LIKE 'SELECT count(*) FROM heap_top(%'"
t0=$(date +%s%N)
ha_sql "KILL QUERY $HA_OUT"
wait "$reader"
ms=$((($(date +%s%N) - t0) / 1000000))
ha_file_like "KILL QUERY ends a statement reading a dump: ERR 1317" \
    "$HA_TMP/killed.out" "ERROR 1317 .*Query execution was interrupted"
ha_ok "... at once ($ms ms)" test "$ms" -lt "$quick"
ha_sql_is "the server answers on" "SELECT 1" 1
ha_stop
ha_done
