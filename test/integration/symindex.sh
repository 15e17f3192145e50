#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Symbol indexes on the real daemon, with a dump of Debian's redis-server
# (stripped, its libc named from libc6-dbg when installed) made under
# redis-benchmark:
#   - A first daemon names it from the files and writes an index per
#     module into the datadir's cache/ (0700, files 0600); a restarted
#     daemon names every module from them (heap_modules.from_index), with
#     every frame of every stack (function, file, line, module, inlined)
#     the same as without them, and writes none again; the allocation
#     wrappers (heap_wrappers: which, why, code_bytes) and so heap_top's
#     allocation sites are the same too.
#   - A damaged index (one byte flipped) and a planted one (another
#     module's, under its build-id's name) are refused with a log line
#     saying why, the names stay the same, and the index is written anew.
#   - Nobody reads an index as a dump: a stats user (or an admin) naming
#     it in heap_top or over HTTP is refused by the datadir's file rule,
#     and stats_heap_dumps does not list it.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-300}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require redis-server redis-server
ha_require redis-benchmark redis-tools
ha_require redis-cli redis-tools
ha_require curl curl

datadir=$HA_TMP/data
mkdir -m 700 "$datadir"
HA_DATADIR=$datadir
cache=$datadir/cache

# --- A dump of redis under load -------------------------------------------
rport=$(ha_free_port) || ha_bail "a port for redis"
MALLOC_CONF="prof:true,prof_final:true,lg_prof_sample:12,prof_prefix:$HA_TMP/redis" \
    redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    </dev/null >"$HA_TMP/redis.log" 2>&1 &
rpid=$!
HA_PIDS+=("$rpid")
for _ in $(seq 1 100); do
    redis-cli -p "$rport" ping >/dev/null 2>&1 && break
    sleep 0.1
done
timeout 60 redis-benchmark -p "$rport" -n 5000 -q -t set,get,lpush,hset,zadd \
    -d 100 -r 10000 </dev/null >"$HA_TMP/bench.log" 2>&1 ||
    ha_bail "redis-benchmark runs"
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1
ha_wait_gone "$rpid" 10 || ha_bail "redis exits"
ha_forget "$rpid"
dump=proxysql.$rpid.0.f.heap
cp "$HA_TMP/redis.$rpid.0.f.heap" "$datadir/$dump" 2>/dev/null ||
    ha_bail "redis wrote its final dump"

# names: every frame of every stack, as heap_profile gives them.
names() {
    ha_sql "SELECT stack_id, depth, function, file, line, module, inlined FROM heap_profile('$dump') ORDER BY stack_id, depth"
    printf '%s' "$HA_OUT" >"$1"
}

# sites: the allocation wrappers and the sites past them, which read each
# function's ELF symbol size (prof/wrappers.h) besides its name.
sites() {
    ha_sql "SELECT function, wrapper, why, detail, stacks, bytes, module, callers, code_bytes FROM heap_wrappers('$dump') ORDER BY function"
    printf '%s\n' "$HA_OUT" >"$1"
    ha_sql "SELECT function, flat_bytes, cum_bytes FROM heap_top('$dump')"
    printf '%s\n' "$HA_OUT" >>"$1"
}

# written_for LOG MODULE [N]: waits (at most 120 s: the builder runs at
# low priority) until LOG says N (1) indexes were written for MODULE.
written_for() {
    local i
    for ((i = 0; i < 1200; i++)); do
        [ "$(grep -cF " written for $2: " "$1")" -ge "${3:-1}" ] && return 0
        sleep 0.1
    done
    return 1
}

# --- 1. First-ever: from the files, indexes written ------------------------
ha_start || ha_bail "heapadmind starts"
# Copies of the dump are profiles of their own: each is named by a
# symbolizing call of its own, in a row, before any index is written.
for k in 1 2 3; do
    cp "$datadir/$dump" "$datadir/proxysql.$rpid.$k.f.heap"
done
for k in 1 2 3; do
    ha_sql "SELECT count(*) FROM heap_top('proxysql.$rpid.$k.f.heap')"
done
names "$HA_TMP/names.files"
ha_ok "the dump's frames are read" test -s "$HA_TMP/names.files"
sites "$HA_TMP/sites.files"
ha_file_like "redis's allocation wrappers are skipped" "$HA_TMP/sites.files" \
    "^zmalloc_usable	1	"
ha_sql "SELECT count(*), sum(from_index) FROM heap_modules('$dump') WHERE build_id IS NOT NULL"
n_mods=${HA_OUT%%	*}
ha_like "no module is named from an index yet" "^0:[1-9][0-9]*	0$" "$HA_RC:$HA_OUT"
ha_sql "SELECT path FROM heap_modules('$dump') WHERE build_id IS NOT NULL"
mods=$HA_OUT
while read -r m; do
    ha_ok "an index is written for ${m##*/}" written_for "$HA_LOG" "$m"
done <<<"$mods"
# Five queries named the modules before their indexes were written: each
# is still made once (a copy of libc's DWARF queued per query grew the
# host by hundreds of MB). A second build would follow the first at once.
dups=
for _ in $(seq 1 10); do
    dups=$(grep -o ' written for [^:]*:' "$HA_LOG" | sort | uniq -d)
    [ -n "$dups" ] && break
    sleep 0.5
done
ha_is "each module's index is made once, though several queries asked first" \
    "" "$dups"
ha_is "cache/ is the daemon's alone (0700)" "700 $(id -un)" \
    "$(stat -c '%a %U' "$cache")"
ha_is "... and so is each index (0600)" "" \
    "$(find "$cache" -type f ! -perm 600)"
ha_is "one index per module" "$n_mods" "$(find "$cache" -name '*.idx' | wc -l)"
ha_stop || ha_fail "the daemon stops"

# --- 2. A restart names everything from the indexes ------------------------
ha_start || ha_bail "heapadmind starts again"
names "$HA_TMP/names.index"
ha_sql "SELECT count(*) FROM heap_modules('$dump') WHERE build_id IS NOT NULL AND from_index = 1"
ha_is "every module is named from its index" "0:$n_mods" "$HA_RC:$HA_OUT"
ha_ok "every frame is named as from the files (heap_profile, all stacks)" \
    cmp -s "$HA_TMP/names.files" "$HA_TMP/names.index"
sites "$HA_TMP/sites.index"
ha_ok "the same wrappers, code sizes and allocation sites (heap_wrappers, heap_top)" \
    cmp -s "$HA_TMP/sites.files" "$HA_TMP/sites.index"
ha_sql "SELECT function, flat_bytes, cum_bytes FROM heap_top('$dump')"
top_index=$HA_OUT

# --- 3. Not a dump -----------------------------------------------------------
idx=$(find "$cache" -name '*.idx' | head -1)
idx=${idx##*/}
for user in stats admin; do
    HA_USER=$user HA_PASS=$user
    ha_sql_err "$user: an index is not read as a dump (cache/$idx)" \
        "SELECT count(*) FROM heap_top('cache/$idx')" "file name"
    ha_sql_err "$user: ... nor by its bare name" \
        "SELECT count(*) FROM heap_top('$idx')" "is refused: only heap dumps"
done
HA_USER=stats HA_PASS=stats
ha_sql "SELECT count(*) FROM stats_heap_dumps WHERE file_name LIKE '%idx%' OR file_name LIKE 'cache%'"
ha_is "stats_heap_dumps lists no index" "0:0" "$HA_RC:$HA_OUT"
HA_USER=admin HA_PASS=admin
ha_is "the restarted daemon wrote no index again" 0 \
    "$(grep -c ' written for ' "$HA_LOG")"
ha_stop || ha_fail "the daemon stops"

hport=$(ha_free_port) || ha_bail "a port for HTTP"
HA_HTTP_PORT=$hport
ha_start || ha_bail "heapadmind starts with HTTP"
for path in "cache/$idx" "$idx" "cache%2F$idx"; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -u stats:stats \
        "http://127.0.0.1:$hport/debug/pprof/heap?dump=$path")
    ha_like "HTTP ?dump=$path is refused to a stats user ($code)" "^4[0-9][0-9]$" "$code"
done
ha_stop || ha_fail "the daemon stops"
HA_HTTP_PORT=

# --- 4. Damaged and planted indexes ---------------------------------------
libc=$(grep -m1 '/libc\.so' <<<"$mods")
bid() { ha_sql "SELECT build_id FROM heap_modules('$dump') WHERE path = '$1'"; printf '%s' "$HA_OUT"; }
ha_start || ha_bail "heapadmind starts"
libc_bid=$(bid "$libc")
other=$(grep -v -m1 '/libc\.so' <<<"$mods")
other_bid=$(bid "$other")
ha_stop || ha_fail "the daemon stops"
libc_idx=$(find "$cache" -name "$libc_bid.*.idx")
other_idx=$(find "$cache" -name "$other_bid.*.idx")
# Planted: libc's whole, good index under the other module's name.
cp -p "$libc_idx" "$other_idx"
size=$(stat -c %s "$libc_idx")
printf '\x5a' | dd of="$libc_idx" bs=1 seek=$((size / 2)) conv=notrunc status=none
ha_start || ha_bail "heapadmind starts on a damaged and a planted index"
names "$HA_TMP/names.damaged"
ha_ok "the same names with a damaged and a planted index" \
    cmp -s "$HA_TMP/names.files" "$HA_TMP/names.damaged"
ha_file_like "the damaged index is refused with a log line saying why" "$HA_LOG" \
    "symbol index .*$libc_bid\.[dm]\.idx of .*libc\.so\.6: CRC mismatch .* not used"
ha_file_like "the planted one too" "$HA_LOG" \
    "symbol index .*$other_bid\.[dm]\.idx of .*${other##*/}.* made for build-id [0-9a-f]+, not this file's"
ha_sql "SELECT count(*) FROM heap_modules('$dump') WHERE path IN ('$libc', '$other') AND from_index = 0"
ha_is "neither module is named from them" "0:2" "$HA_RC:$HA_OUT"
ha_ok "libc's index is written anew" written_for "$HA_LOG" "$libc"
ha_ok "... and the planted one's" written_for "$HA_LOG" "$other"
ha_stop || ha_fail "the daemon stops"
ha_start || ha_bail "heapadmind starts on the new indexes"
ha_sql "SELECT count(*) FROM heap_modules('$dump') WHERE build_id IS NOT NULL AND from_index = 1"
ha_is "the new indexes are used" "0:$n_mods" "$HA_RC:$HA_OUT"
ha_sql "SELECT function, flat_bytes, cum_bytes FROM heap_top('$dump')"
ha_is "heap_top is the same" "$top_index" "$HA_OUT"
ha_stop || ha_fail "the daemon stops"

ha_done
