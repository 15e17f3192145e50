#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Temporary allocations in Debian's unmodified redis-server, as heaptrack
# counts them, from a lifetime window (jemalloc-log_now) through the
# agent. The workload: redis-benchmark -t set,get,lpush,lpop,hset, then
# three reads whose iterators and buffers are freed before anything else
# is allocated, in counts far apart (LRANGE 12000, HGETALL 8000, DUMP
# 4000), so heaptrack's top three temporary sites have an order sampling
# can keep. Values are 64 bytes: heaptrack 1.4 counts a free as
# temporary when the allocation just before it had the same size and
# stack, so with redis-benchmark's default 3-byte values every SET that
# overwrites a value counts (the new value made, the old one freed: 49,999
# of 50,000 SETs), though the value freed lived a whole command; a 64-byte
# value is two allocations and that case does not arise.
#   - redis under the agent with the shipped drop-in's MALLOC_CONF
#     (prof_time_resolution:high) and lg_prof_sample:9 (a sample every
#     512 bytes: what a share known to 0.05 takes for small objects; the
#     SQL floor is 14), a window over the workload: heap_lifetimes_stacks per stack against the same workload
#     under heaptrack (heaptrack_print -F, every call), both cut at the
#     first frame that is not one of redis's z* allocation wrappers: the
#     overall temporary share within 0.05 of heaptrack's, and the top 3
#     temporary sites by temporary objects in heaptrack's order, each
#     known;
#   - redis started with jemalloc's default clock (prof_time_resolution:
#     default, ticks of 4 ms): nothing confident it cannot know: the
#     shares it gives add up to at most heaptrack's + 0.05, and the rows
#     it cannot tell are NULL with a note naming prof_time_resolution:high
#     (the bug this replaces gave 0.975), their lifetimes under one tick
#     NULL too.
# Sites are compared by stack, so the comparison holds whether or not
# heap_lifetimes' own function column skips the wrappers.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-180}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require redis-cli redis-tools
ha_require mariadb mariadb-client
ha_require heaptrack heaptrack
ha_require heaptrack_print heaptrack

N=${REDISLIFE_N:-20000}

# The MALLOC_CONF the drop-in ships.
shipped=$(sed -n 's/^Environment=MALLOC_CONF=//p' \
    "$HA_SRCDIR/etc/heapadmin-agent.conf.in")
ha_like "the shipped drop-in starts jemalloc with the ns clock" \
    "^prof:true,prof_active:false,prof_time_resolution:high,prof_sys_thread_name:true$" "$shipped"

# workload PORT: the same requests for every run.
workload() {
    local p=$1
    {
        redis-cli -p "$p" rpush lst a b c d e f g h i j k l
        redis-cli -p "$p" hset h2 f1 v1 f2 v2 f3 v3
        redis-benchmark -p "$p" -q -t set,get,lpush,lpop,hset -n "$N" \
            -d 64 -r 100000
        redis-benchmark -p "$p" -q -n $((N * 6 / 10)) lrange lst 0 10
        redis-benchmark -p "$p" -q -n $((N * 4 / 10)) hgetall h2
        redis-benchmark -p "$p" -q -n $((N * 2 / 10)) dump lst
    } >>"$HA_TMP/bench.out" 2>&1
}

# The site of a collapsed stack (root first, ';'-joined, either tool's):
# its leaf-most frame that is not a z* allocation wrapper of redis.
SITE_AWK='
function site(stack,    n, f, i, g) {
    n = split(stack, f, ";")
    for (i = n; i >= 1; i--) {
        g = f[i]
        sub(/(\[inline\]| \(inline\))$/, "", g)
        if (g == "") continue
        if (g ~ /^z(try)?(malloc|calloc|realloc)(_usable|_num|_no_tcache)?$/ ||
            g == "zstrdup") continue
        return g
    }
    return "?"
}'

# --- heaptrack: every call of the same workload -----------------------------

hport=$(ha_free_port) || ha_bail "no free port"
timeout -s INT 120 heaptrack -o "$HA_TMP/ht" redis-server --port "$hport" \
    --save '' --appendonly no --dir "$HA_TMP" >"$HA_TMP/heaptrack.out" 2>&1 &
htpid=$!
HA_PIDS+=("$htpid")
for _ in $(seq 100); do
    redis-cli -p "$hport" ping >/dev/null 2>&1 && break
    sleep 0.1
done
workload "$hport"
redis-cli -p "$hport" shutdown nosave >/dev/null 2>&1
wait "$htpid" 2>/dev/null
trace=$(ls "$HA_TMP"/ht*.zst 2>/dev/null | head -1)
[ -n "$trace" ] || ha_bail "heaptrack wrote no trace: $(tail -3 "$HA_TMP/heaptrack.out")"
for cost in allocations temporary; do
    heaptrack_print -f "$trace" --print-peaks 0 --print-allocators 0 \
        --print-temporary 0 --print-leaks 0 --flamegraph-cost-type "$cost" \
        -F "$HA_TMP/ht.$cost" >/dev/null 2>&1
done
# Only the event loop's stacks: redis's start-up (OpenSSL's tables) is
# outside the window too. "<site> <temporary> <allocations>" per site.
awk "$SITE_AWK"'
    { n = $NF; $NF = ""; s = $0; sub(/ +$/, "", s) }
    s !~ /(^|;)aeMain;/ { next }
    FILENAME ~ /temporary$/ { t[site(s)] += n; tt += n; next }
    { a[site(s)] += n; ta += n }
    END {
        printf "%.6f\n", ta ? tt / ta : 0
        for (k in a) if (t[k] > 0) printf "%s %d %d\n", k, t[k], a[k]
    }' "$HA_TMP/ht.allocations" "$HA_TMP/ht.temporary" >"$HA_TMP/ht.sites"
ht_share=$(head -1 "$HA_TMP/ht.sites")
tail -n +2 "$HA_TMP/ht.sites" | sort -k2,2nr >"$HA_TMP/ht.top"
ht_top3=$(head -3 "$HA_TMP/ht.top" | awk '{ print $1 }' | tr '\n' ' ')
ha_ok "heaptrack counts the workload's temporary allocations (share $ht_share; top: $(head -4 "$HA_TMP/ht.top" | tr '\n' ',' ))" \
    test "$(wc -l <"$HA_TMP/ht.top")" -ge 3

# --- a lifetime window under the agent -----------------------------------------

# window CONF NAME: redis under the agent with MALLOC_CONF=CONF, a window
# over the workload; leaves sock, rpid and log set.
window() {
    local conf=$1 data=$HA_TMP/data.$2 port
    mkdir -p "$data"
    port=$(ha_free_port) || ha_bail "no free port"
    ag_env
    env "${AG_ENV[@]}" MALLOC_CONF="$conf" HEAPADMIN_DATADIR="$data" \
        redis-server --port "$port" --save '' --appendonly no --dir "$HA_TMP" \
        >"$HA_TMP/redis.$2.out" 2>"$HA_TMP/redis.$2.err" &
    rpid=$!
    HA_PIDS+=("$rpid")
    sock=$data/redis-server.$rpid.sock
    if ! ag_wait_socket "$sock" 15; then
        ha_file_tail "$HA_TMP/agent.log"
        ha_bail "the agent serves redis-server $rpid on $sock"
    fi
    ag_set "$sock" jemalloc-prof_active true
    ag_set "$sock" jemalloc-log_now 150
    ha_is "$2: a window opens in redis $rpid" "0:" "$HA_RC:$HA_ERR"
    workload "$port"
    ag_set "$sock" jemalloc-log_now 0
    log=
    for _ in $(seq 100); do
        ag_sql "$sock" "SELECT file_name FROM stats_heap_dumps WHERE kind = 'log'"
        [ -n "$HA_OUT" ] && log=$HA_OUT && break
        sleep 0.1
    done
    [ -n "$log" ] || ha_bail "$2: no log published"
}

# rows FILE: heap_lifetimes_stacks of $log per site: "site<TAB>objects
# <TAB>temporary objects<TAB>objects whose share is NULL", after a first
# line with the whole window's "estimate minimum maximum" shares (a NULL
# row counted at the middle of its range).
rows() {
    ag_sql "$sock" "SELECT stack, objects, ifnull(temporary_share, 'NULL'), temporary_min, temporary_max FROM heap_lifetimes_stacks('$log')"
    [ "$HA_RC" = 0 ] || ha_bail "heap_lifetimes_stacks: $HA_ERR"
    awk -F'\t' "$SITE_AWK"'
        { o += $2; lo += $2 * $4; hi += $2 * $5
          s = site($1); so[s] += $2
          if ($3 == "NULL") { est += $2 * ($4 + $5) / 2; su[s] += $2 }
          else { est += $2 * $3; st[s] += $2 * $3 } }
        END {
            printf "%.4f %.4f %.4f\n", est / o, lo / o, hi / o
            for (k in so) printf "%s\t%.1f\t%.1f\t%.1f\n", k, so[k], st[k], su[k]
        }' <<<"$HA_OUT" >"$1"
}

window "$shipped,lg_prof_sample:9" high
ag_sql "$sock" "SELECT DISTINCT clock_tick_ms * 1e6 FROM heap_lifetimes('$log')"
ha_is "high: the log's clock has ns resolution" "0:1.0" "$HA_RC:$HA_OUT"
rows "$HA_TMP/high.rows"
read -r ours lo hi <"$HA_TMP/high.rows"
ha_ok "high: temporary share $ours (range $lo..$hi) within 0.05 of heaptrack's $ht_share" \
    awk -v a="$ours" -v h="$ht_share" 'BEGIN { exit !(a - h <= 0.05 && h - a <= 0.05) }'
tail -n +2 "$HA_TMP/high.rows" | sort -t$'\t' -k3,3nr >"$HA_TMP/high.top"
our_top3=$(head -3 "$HA_TMP/high.top" | cut -f1 | tr '\n' ' ')
ha_is "high: the top 3 temporary sites by temporary objects, in heaptrack's order ($(head -3 "$HA_TMP/high.top" | cut -f1,3 | tr '\t\n' ':,'))" \
    "$ht_top3" "$our_top3"
ha_is "high: ... each of them with a share (no NULL among their stacks)" \
    "0 0 0 " "$(head -3 "$HA_TMP/high.top" | awk -F'\t' '{ printf "%d ", $4 }')"
ag_sql "$sock" "SELECT count(*) FROM heap_lifetimes('$log') WHERE lifetime_p50_ms IS NULL"
ha_is "high: every lifetime has a value" "0:0" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT count(*) FROM heap_lifetimes('$log') WHERE (temporary_max - temporary_min > 0.05) != (temporary_note IS NOT NULL) OR (temporary_share IS NULL AND temporary_note IS NULL)"
ha_is "high: a note exactly where the range is wider than 0.05, every NULL share with one" \
    "0:0" "$HA_RC:$HA_OUT"
kill -TERM "$rpid"
ha_wait_gone "$rpid" 10

# --- jemalloc's default clock ------------------------------------------------------

window "prof:true,prof_active:false,prof_time_resolution:default,lg_prof_sample:9" coarse
ag_sql "$sock" "SELECT DISTINCT clock_tick_ms FROM heap_lifetimes('$log')"
ha_like "coarse: the log's clock ticks in milliseconds (CLOCK_MONOTONIC_COARSE)" \
    "^0:([1-9]|10)(\.[0-9]+)?$" "$HA_RC:$HA_OUT"
rows "$HA_TMP/coarse.rows"
ag_sql "$sock" "SELECT round(sum(objects * temporary_share) / (SELECT sum(objects) FROM heap_lifetimes('$log')), 4), sum(objects) FROM heap_lifetimes('$log') WHERE temporary_share IS NOT NULL"
known=$(cut -f1 <<<"$HA_OUT")
ha_ok "coarse: the shares it gives add up to $known of the objects freed, at most heaptrack's $ht_share + 0.05 ($(cut -f2 <<<"$HA_OUT") objects with a share)" \
    awk -v a="${known:-0}" -v h="$ht_share" 'BEGIN { exit !(a <= h + 0.05) }'
ag_sql "$sock" "SELECT temporary_share IS NULL, temporary_note LIKE '%under two ticks%prof_time_resolution:high', lifetime_p50_ms IS NULL FROM heap_lifetimes('$log') ORDER BY objects DESC LIMIT 1"
ha_is "coarse: the site freeing the most objects: share NULL, the note says why and what to do, its p50 under a tick" \
    "0:1	1	1" "$HA_RC:$HA_OUT"
ag_sql "$sock" "SELECT count(*) FROM heap_lifetimes('$log') WHERE temporary_share IS NULL AND temporary_note IS NULL"
ha_is "coarse: no NULL share without its note" "0:0" "$HA_RC:$HA_OUT"
kill -TERM "$rpid"
ha_wait_gone "$rpid" 10
ha_is "the agent wrote nothing to redis's stderr" "" \
    "$(cat "$HA_TMP"/redis.*.err)"
ha_done
