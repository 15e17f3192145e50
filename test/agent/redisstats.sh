#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# stats_memory_breakdown, stats_jemalloc_arenas and stats_jemalloc_bins
# read inside Debian's unmodified redis-server (the LD_PRELOAD agent)
# against jemalloc's own malloc_stats_print from the same process.
#
# How the two are taken in the same state: redis prints its jemalloc's
# statistics itself on MEMORY MALLOC-STATS (je_malloc_stats_print into a
# reply), so the figures come from the very allocator the agent reads,
# not from a second process or an exit-time dump. Redis is idle (no
# client but ours), and our tables are read just before and just after
# the print: each of jemalloc's figures must lie between our two
# readings, give or take what the print itself allocates (its reply
# buffer, in redis's arena 0) and redis's timer (serverCron). The
# comparison is per arena 0, redis's main thread's: the agent's own
# allocations, which our SQL makes meanwhile, live in an arena of their
# own. The breakdown's RSS is also checked against redis's own
# used_memory_rss (INFO memory, from /proc), and its heapadmin row (the
# agent's arena, which the host must not be billed for) against that
# arena's resident in the same print and heapadmin.resident.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require redis-cli redis-tools
ha_require python3 python3

data=$HA_TMP/data
mkdir -p "$data"
port=$(ha_free_port)
ag_env
env "${AG_ENV[@]}" HEAPADMIN_DATADIR="$data" \
    redis-server --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
    >"$HA_TMP/redis.out" 2>"$HA_TMP/redis.err" &
rpid=$!
HA_PIDS+=("$rpid")
sock=$data/redis-server.$rpid.sock
ag_wait_socket "$sock" 15 || ha_bail "the agent does not serve redis on $sock"
ha_pass "the agent serves redis-server $rpid"

# A heap worth comparing: 50,000 keys of 100-byte values, then quiet.
timeout 120 redis-benchmark -p "$port" -n 50000 -r 50000 -t set -d 100 -q \
    >/dev/null 2>&1
ha_is "redis holds the keys" "ok" \
    "$(timeout 5 redis-cli -p "$port" dbsize | awk '$1 > 20000 {print "ok"}')"
# jemalloc returns the benchmark's dirty pages over its decay time (10 s),
# so RSS would shrink between our reading and redis's: purge them now
# (MEMORY PURGE purges every arena), so both see the same resident set.
timeout 10 redis-cli -p "$port" memory purge >/dev/null
sleep 1

# ours LABEL: our figures for arena 0 and the whole process into files.
ours() {
    ag_sql "$sock" "SELECT 'arena', allocated_small, allocated_large, active_bytes, mapped, retained, resident FROM stats_jemalloc_arenas WHERE arena = 0 UNION ALL SELECT 'bin ' || size, curregs, curslabs, nregs, slab_size, nonfull_slabs, 0 FROM stats_jemalloc_bins WHERE arena = 0 AND curregs > 0"
    printf '%s\n' "$HA_OUT" >"$HA_TMP/ours.$1"
    ag_sql "$sock" "SELECT component, kind, bytes FROM stats_memory_breakdown"
    printf '%s\n' "$HA_OUT" >"$HA_TMP/breakdown.$1"
}

ours before
timeout 10 redis-cli -p "$port" memory malloc-stats >"$HA_TMP/malloc_stats.txt"
ours after
# The kernel's own count, read the moment our last query answered: on a
# loaded machine the agent may give its code pages back before redis's
# timer next reads /proc (it did: ours 22.7 MB, redis's ten readings 21.0
# to 21.1 MB, one agent's worth of code pages lower).
rss_kernel=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$rpid/status")
# Redis's used_memory_rss is the reading of its timer (serverCron, every
# 100 ms), not of the moment asked: let one pass after our last query so
# it counts the pages that query touched, as our figure does.
# The agent gives its own code pages back soon after it goes quiet
# (agent/codepages.c), so the process's RSS steps down within a second
# or two of our query: redis's readings over the next 1.5 s, one per
# timer pass, and ours must match one of them (the first, at the latest).
rss_redis=
for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.15
    rss_redis="$rss_redis $(timeout 5 redis-cli -p "$port" info memory |
        sed -n 's/^used_memory_rss:\([0-9]*\).*/\1/p')"
done
ha_file_like "redis printed jemalloc's statistics" "$HA_TMP/malloc_stats.txt" \
    "^___ Begin jemalloc statistics ___"

# The comparison: jemalloc's arena 0 (and its bins) from the print,
# against our two readings.
out=$(python3 - "$HA_TMP" <<'EOF'
import re, sys
tmp = sys.argv[1]
text = open(tmp + "/malloc_stats.txt").read().splitlines()

def ours(label):
    rows = {}
    for line in open("%s/ours.%s" % (tmp, label)):
        f = line.rstrip("\n").split("\t")
        if len(f) == 7:
            rows[f[0]] = [int(x) for x in f[1:]]
    return rows

before, after = ours("before"), ours("after")

# jemalloc's arena 0 section: its scalar lines and its bins table.
start = text.index("arenas[0]:")
end = next((i for i in range(start + 1, len(text))
            if re.match(r"^arenas\[\d+\]:", text[i]) or
            text[i].startswith("--- End")), len(text))
sec = text[start:end]
scal = {}
for line in sec:
    m = re.match(r"^(small|large|active|mapped|retained|resident):\s+(\d+)", line)
    if m and m.group(1) not in scal:
        scal[m.group(1)] = int(m.group(2))
head = next(i for i, l in enumerate(sec) if l.startswith("bins:"))
cols = sec[head].split()[1:]
bins = {}
for line in sec[head + 1:]:
    f = line.split()
    if not f or f[0] == "---":
        continue
    if not f[0].isdigit():
        break
    row = dict(zip(cols, f))
    bins[int(row["size"])] = row

ok = True
def check(what, theirs, lo, hi, tol):
    global ok
    good = lo - tol <= theirs <= hi + tol
    print("%s %s: malloc_stats_print %d, ours %d..%d (+-%d)" %
          ("ok" if good else "BAD", what, theirs, lo, hi, tol))
    ok = ok and good

names = ["small", "large", "active", "mapped", "retained", "resident"]
for k, name in enumerate(names):
    a, b = before["arena"][k], after["arena"][k]
    check("arena 0 " + name, scal[name], min(a, b), max(a, b),
          max(a, b) // 100 + 256 * 1024)
n = 0
for label, v in before.items():
    if not label.startswith("bin ") or v[0] < 500:
        continue
    size = int(label[4:])
    w = after.get(label, v)
    if size not in bins:
        print("BAD bin %d: not in malloc_stats_print" % size)
        ok = False
        continue
    t = bins[size]
    check("bin %d curregs" % size, int(t["curregs"]), min(v[0], w[0]),
          max(v[0], w[0]), max(v[0] // 50, 64))
    check("bin %d curslabs" % size, int(t["curslabs"]), min(v[1], w[1]),
          max(v[1], w[1]), max(v[1] // 50, 4))
    check("bin %d regs per slab" % size, int(t["regs"]), v[2], v[2], 0)
    check("bin %d pages per slab" % size, int(t["pgs"]) * 4096, v[3], v[3], 0)
    n += 1
print("compared %d busy size classes" % n)
if n < 3:
    ok = False
print("ALL OK" if ok else "MISMATCH")
EOF
)
ha_diag "$out"
ha_like "arena 0 and its bins agree with malloc_stats_print" "ALL OK" "$out"
ha_like "... over at least three busy size classes" \
    "compared ([3-9]|[1-9][0-9]+) busy" "$out"

# The breakdown in a real host: its parts add up; its RSS is redis's.
rss_ours=$(awk '$1 == "rss" {print $3}' "$HA_TMP/breakdown.after")
parts=$(awk '$2 == "part" {s += $3} END {print s}' "$HA_TMP/breakdown.after")
ha_is "the breakdown's parts add up to its RSS in redis" "$rss_ours" "$parts"
ha_ok "its RSS ($rss_ours) is the kernel's VmRSS right after it ($rss_kernel) or one of redis's used_memory_rss readings after it (${rss_redis# }) within 3%" \
    awk -v a="$rss_ours" -v bs="$rss_kernel $rss_redis" 'BEGIN { n = split(bs, b, " "); for (i = 1; i <= n; i++) { d = a - b[i]; if (d < 0) d = -d; if (b[i] > 0 && d <= 0.03 * b[i]) exit 0 } exit 1 }'

# --- heapadmin's own arena: its own row, not the host's ----------------------

# The agent's arena is a part of its own (not the host's other.anonymous),
# and that part is heapadmin.resident: read in one statement from one
# refresh of jemalloc's statistics (stats_max_age_ms shared by the two
# tables; with 0 each would refresh and the first's cursor would be in
# the second's figure), the two are equal to the byte; the sum is over
# one scan (each scan reads smaps anew).
ag_set "$sock" jemalloc-stats_max_age_ms 60000
ag_sql "$sock" "SELECT max(CASE component WHEN 'heapadmin' THEN bytes END), (SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'heapadmin.resident'), sum(CASE kind WHEN 'part' THEN bytes END) - max(CASE component WHEN 'rss' THEN bytes END), max(CASE component WHEN 'other.anonymous' THEN bytes END) FROM stats_memory_breakdown"
read -r own_row own_resident own_sum own_anon <<<"$HA_OUT"
ha_diag "heapadmin row $own_row, heapadmin.resident $own_resident, other.anonymous $own_anon"
ag_set "$sock" jemalloc-stats_max_age_ms 0
ha_ok "the heapadmin row holds the agent's arena (${own_row:-none} bytes > 0)" \
    test "${own_row:-0}" -gt 0
ha_is "... which is heapadmin.resident in the same refresh" \
    "$own_resident" "$own_row"
ha_is "... and the parts still add up to the rss row" "0" "$own_sum"

# heapadmin.resident against jemalloc's own print of that arena (the one
# arena redis did not make: its index is past opt.narenas). The arena
# holds each admin session's state (160 KiB more in a reading made on a
# new connection than in a print taken between two, when measured), so
# one session stays open and reads just before and just after the print.
# Between the two only that session's query comes and goes (a page or
# two when measured): 64 KiB of tolerance, far below the arena's few
# hundred KiB, so a figure that missed the arena or counted another one
# would not pass.
mkfifo "$HA_TMP/own.in"
: >"$HA_TMP/own.out" # mariadb opens it only once the FIFO has a writer
timeout 60 mariadb --no-defaults --unbuffered --protocol=SOCKET -S "$sock" \
    -uadmin -padmin -N -B <"$HA_TMP/own.in" >"$HA_TMP/own.out" 2>&1 &
HA_PIDS+=("$!")
exec 7>"$HA_TMP/own.in"
own_q="SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'heapadmin.resident';"
own_wait() {
    for _ in $(seq 100); do
        [ "$(wc -l <"$HA_TMP/own.out")" -ge "$1" ] && return 0
        sleep 0.05
    done
    return 1
}
echo "$own_q" >&7
own_wait 1 || ha_fail "a kept session reads heapadmin.resident"
timeout 10 redis-cli -p "$port" memory malloc-stats >"$HA_TMP/malloc_stats.own"
echo "$own_q" >&7
own_wait 2 || ha_fail "... and again after the print"
exec 7>&-
narenas=$(sed -n 's/^ *opt\.narenas: *\([0-9]*\).*/\1/p' "$HA_TMP/malloc_stats.own" | head -1)
own_idx=$(sed -n 's/^arenas\[\([0-9]*\)\]:.*/\1/p' "$HA_TMP/malloc_stats.own" |
    awk -v n="${narenas:-0}" '$1 >= n')
ha_is "the print has one arena past opt.narenas ($narenas): the agent's" \
    1 "$(printf '%s\n' "$own_idx" | grep -c .)"
own_print=$(awk -v h="arenas[$own_idx]:" '$1 == h { a = 1; next } a && /^arenas\[/ { exit } a && $1 == "resident:" { print $2; exit }' "$HA_TMP/malloc_stats.own")
read -r own_a own_b < <(tr '\n' ' ' <"$HA_TMP/own.out")
ha_ok "jemalloc's print of arena $own_idx (resident ${own_print:-?}) is heapadmin.resident read around it ($own_a, $own_b) within 64 KiB" \
    awk -v t="${own_print:-0}" -v a="${own_a:-0}" -v b="${own_b:-0}" 'BEGIN { lo = a < b ? a : b; hi = a < b ? b : a; exit !(t > 0 && a > 0 && b > 0 && t >= lo - 65536 && t <= hi + 65536) }'

kill -TERM "$rpid"
ha_wait_gone "$rpid" 10 || ha_fail "redis stops on SIGTERM"
ha_forget "$rpid"
ha_done
