#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The documentation's examples, run: every fenced block of README.md and
# docs/ whose marker names this script (<!-- test:
# test/integration/docsql.sh -->; test/docs.sh checks that every block
# has a marker) is run here against the real daemon, and a block this
# script does not know how to run fails it.
#   - the quick start: heapadmind -f on etc/heapadmin.cnf as shipped, but
#     for its two ports (free ones) and with the working directory a
#     temporary one (its datadir is ./data), and the README's mariadb
#     command line;
#   - the getting-started walkthrough, its shell block line by line as
#     written (the port and <pid> filled in), and what its outputs show:
#     the site in Debian's stripped libsqlite3 and what would name it,
#     jeprof misnaming the same dump, the symbolized copy jeprof reads
#     without a binary, a lifetime window's rows;
#   - every SQL block, statement by statement as mariadb runs a file,
#     with each dump name in it (proxysql.4242.1.m1.heap, ...) replaced by
#     a real dump of this process in the same order, and each lifetime
#     log's by a real log: a statement the docs show must run;
#   - every config snippet, loaded by a daemon of its own, whose
#     jemalloc_variables must then read back in global_variables.
# The figures in the docs' outputs come from the tests their markers
# name beside this one (real programs against references); here they are
# checked for what they show, not for their numbers.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require python3 python3
ha_require jeprof libjemalloc-dev

ME=test/integration/docsql.sh
BLOCKS=$HA_TMP/blocks
mkdir -p "$BLOCKS"

# Every block marked with this script, one file each (NNN.sql, NNN.sh,
# NNN.cnf or NNN.out) and $BLOCKS/index: "NNN<TAB>page:line<TAB>kind".
python3 - "$HA_SRCDIR" "$BLOCKS" "$ME" <<'EOF' || ha_bail "cannot read the docs"
import os, re, sys
top, out, me = sys.argv[1:4]
pages = ['README.md'] + sorted(
    os.path.relpath(os.path.join(d, f), top)
    for d, _, fs in os.walk(os.path.join(top, 'docs'))
    for f in fs if f.endswith('.md'))
k = 0
with open(os.path.join(out, 'index'), 'w') as idx:
    for page in pages:
        lines = open(os.path.join(top, page), encoding='utf-8').read().split('\n')
        i = 0
        while i < len(lines):
            m = re.match(r'^```(\w*)$', lines[i])
            if not m:
                i += 1
                continue
            j = i + 1
            while j < len(lines) and lines[j] != '```':
                j += 1
            mark = lines[i - 1] if i > 0 else ''
            body = '\n'.join(lines[i + 1:j]) + '\n'
            if mark.startswith('<!-- test:') and me in mark.split():
                lang = m.group(1)
                if lang == 'sql':
                    kind = 'sql'
                elif lang == 'sh':
                    kind = 'sh'
                elif lang == '' and re.search(r'_variables\s*=\s*\n?\s*\{', body):
                    kind = 'cnf'
                else:
                    kind = 'out'
                k += 1
                open(os.path.join(out, '%03d.%s' % (k, kind)), 'w').write(body)
                idx.write('%03d\t%s:%d\t%s\n' % (k, page, i + 1, kind))
            i = j + 1
EOF
n_blocks=$(wc -l <"$BLOCKS/index")
ha_like "the docs have blocks this script runs ($n_blocks)" '^[1-9][0-9]*$' "$n_blocks"
handled=" "
handle() { handled="$handled$1 "; }

# block_with ERE KIND: the numbers of the marked blocks of KIND with a
# line matching ERE (the README and a page may show the same block).
block_with() {
    local n k
    while IFS=$'\t' read -r n _ k; do
        [ "$k" = "$2" ] || continue
        grep -Eq -- "$1" "$BLOCKS/$n.$k" && echo "$n"
    done <"$BLOCKS/index"
}

# ---------------------------------------------------------------------------
# The quick start
# ---------------------------------------------------------------------------

qs=$(block_with '^\./bootstrap && daemon/heapadmind -f -c etc/heapadmin\.cnf$' sh)
ha_like "the README's quick start is marked for this script" '.' "$qs"
for n in $qs; do handle "$n"; done
HTTP_PORT=$(ha_free_port) || ha_bail "no free port"
sed -e 's/"127\.0\.0\.1:6032"/"127.0.0.1:@PORT@"/' \
    -e "s/\"127\\.0\\.0\\.1:6070\"/\"127.0.0.1:$HTTP_PORT\"/" \
    "$HA_SRCDIR/etc/heapadmin.cnf" >"$HA_TMP/quickstart.tmpl"
ha_is "etc/heapadmin.cnf listens where the docs say (127.0.0.1:6032, HTTP 127.0.0.1:6070)" \
    "2" "$(grep -v '^ *#' "$HA_TMP/quickstart.tmpl" |
        grep -cE '"127\.0\.0\.1:(@PORT@|'"$HTTP_PORT"')"')"
cd "$HA_TMP" || ha_bail "cd $HA_TMP"
HA_DATADIR=$HA_TMP/data # etc/heapadmin.cnf's ./data, from here
ha_start -C "$HA_TMP/quickstart.tmpl" || ha_bail "heapadmind -f -c etc/heapadmin.cnf starts"
ha_pass "heapadmind -f -c etc/heapadmin.cnf serves (its ports moved)"

# docs_cmd LINE: a command line of the docs, run as written but for the
# port (6032) and the process id (<pid>).
docs_cmd() {
    local line=${1//-P6032/-P$HA_PORT}
    line=${line//<pid>/$HA_PID}
    HA_OUT=$(cd "$HA_TMP" && timeout -k 2 60 bash -c "$line" 2>&1)
    HA_RC=$?
}

login=$(block_with '^mariadb -h127\.0\.0\.1 -P6032 -uadmin -padmin$' sh)
for n in $(awk -F'\t' '$3 == "sh" { print $1 }' "$BLOCKS/index"); do
    if [ "$(cat "$BLOCKS/$n.sh")" = "mariadb -h127.0.0.1 -P6032 -uadmin -padmin" ]; then
        handle "$n"
        docs_cmd "mariadb -h127.0.0.1 -P6032 -uadmin -padmin -e 'SELECT 1+1'"
        ha_is "the docs' mariadb command line logs in (block $n)" "0:1+1
2" "$HA_RC:$HA_OUT"
    fi
done
ha_like "the README's mariadb command line is marked for this script" '.' "$login"
n=$(block_with '^MySQL \[\(none\)\]> SELECT 1\+1;$' out)
if [ -n "$n" ]; then
    for k in $n; do handle "$k"; done
    docs_cmd "mariadb -h127.0.0.1 -P6032 -uadmin -padmin -t -e 'SELECT 1+1'"
    ha_like "SELECT 1+1 answers as the docs show" '^\| +2 \|$' "$HA_OUT"
fi

# ---------------------------------------------------------------------------
# The getting-started walkthrough
# ---------------------------------------------------------------------------

walk=$(block_with '^# 1\. Start sampling' sh)
ha_is "the getting-started walkthrough is marked for this script, once" 1 \
    "$(wc -w <<<"$walk")"
walk=${walk%%$'\n'*}
[ -n "$walk" ] && handle "$walk"
step=0
declare -A said
while IFS= read -r line; do
    case $line in
    '# '[0-9].*) step=${line:2:1} ;;
    mariadb*|sleep*)
        # Step 5's window is 10 s of a working service: keep working.
        if [ "$step" = 5 ] && [ "${line#sleep}" != "$line" ]; then
            for _ in 1 2 3 4 5; do
                ha_sql "DELETE FROM blobs; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<300) INSERT INTO blobs SELECT randomblob(100000) FROM n"
                sleep 1
            done
        fi
        docs_cmd "$line"
        said[$step]="${said[$step]:-}$HA_OUT
"
        ha_is "step $step runs as written: ${line:0:70}..." 0 "$HA_RC"
        [ "$HA_RC" = 0 ] || ha_diag "$HA_OUT"
        ;;
    esac
done <"$BLOCKS/${walk:-none}.sh"
dump=proxysql.$HA_PID.0.m0.heap
ha_like "step 3 names its dump and how to read it" \
    "heap profile written to .*/data/$dump \([0-9]+ bytes\); read it with: SELECT \* FROM heap_top\('$dump'\); or jeprof --text " \
    "${said[3]:-}"
ha_diag "step 4 and 5 as they answer here:" "${said[4]:-}" "${said[5]:-}"
ha_like "step 4: the top site is a place in Debian's stripped libsqlite3, named by module and offset" \
    '^\| libsqlite3\.so[.0-9]*\+0x[0-9a-f]+ +\| +[0-9]+ \| +[0-9.]+ \| /usr/lib/[^ ]*/libsqlite3\.so[.0-9]* +\|$' \
    "$(sed -n '4p' <<<"${said[4]:-}")"
ha_like "step 4: heap_modules says libsqlite3 is named from .dynsym, heapadmind from DWARF" \
    '/daemon/heapadmind +\| dwarf .*libsqlite3\.so[.0-9]* +\| dynsym ' "$(tr '\n' ' ' <<<"${said[4]:-}")"
ha_sql "SELECT detail FROM heap_modules('$dump') WHERE path LIKE '%/libsqlite3.so%'"
ha_like "heap_modules.detail for libsqlite3 says what would name it" \
    '^stripped: only exported functions are named; its debug file would be /usr/lib/debug/\.build-id/[0-9a-f]{2}/[0-9a-f]+\.debug \(the -dbgsym package\) or debuginfod \(off\)$' \
    "$HA_OUT"
for n in $(block_with '^\| function +\| flat_bytes +\| pct +\| module' out) \
    $(block_with '^\| function +\| bytes_per_s +\| lifetime_p50_ms +\| lifetime_p99_ms' out); do
    handle "$n"
done
ha_like "step 5: heap_lifetimes has rows for the window, in libsqlite3" \
    '\| libsqlite3\.so[.0-9]*\+0x[0-9a-f]+ +\| +[0-9.]+ \|' "${said[5]:-}"
ha_is "step 6: sampling is off again" false "$(ha_var jemalloc-prof_active)"

# jeprof on the same dump: the nearest exported symbol below SQLite's
# allocator, where heap_top cut it (sqlite3Realloc and the frame below).
jp=$(timeout 120 jeprof --text "$HA_DAEMON" "$HA_DATADIR/$dump" 2>/dev/null |
    awk '/^ +[0-9.]+ +[0-9.]+%/ { print $6; exit }')
ha_like "jeprof names the dump's top site after an exported sqlite3 function ($jp)" \
    '^sqlite3[A-Za-z_0-9]*$' "$jp"
ha_sql "SELECT wrapper FROM heap_stacks('$dump') ORDER BY bytes DESC LIMIT 1"
ha_like "... an address heap_top looks past, with SQLite's sqlite3Realloc" \
    '^sqlite3Realloc;libsqlite3\.so[.0-9]*\+0x[0-9a-f]+$' "$HA_OUT"
n=$(block_with '^Total: ' out)
if [ -n "$n" ]; then
    for k in $n; do handle "$k"; done
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_symbolized'"
    out=$(ha_mysql -vv -e "UPDATE global_variables SET variable_value='true' WHERE variable_name='jemalloc-dump_now'" 2>&1)
    sym=$(sed -n 's/.*symbolized copy \([^ ]*\.sym\).*/\1/p' <<<"$out")
    ha_like "dump_now with jemalloc-dump_symbolized writes <dump>.sym" '\.heap\.sym$' "$sym"
    js=$(cd "$HA_TMP" && timeout 120 jeprof --text "$sym" 2>/dev/null |
        head -n 2 | tr '\n' ' ')
    ha_like "jeprof --text <dump>.sym reads it with no binary, in heapadmin's names" \
        '^Total: [0-9.]+ MB +[0-9.]+ +[0-9.]+% .* libsqlite3\.so[.0-9]*\+0x[0-9a-f]+ $' "$js"
    ha_sql "UPDATE global_variables SET variable_value = 'false' WHERE variable_name = 'jemalloc-dump_symbolized'"
fi

# ---------------------------------------------------------------------------
# The SQL blocks
# ---------------------------------------------------------------------------

# Dumps for the blocks to read (four of this process) and a lifetime log.
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-prof_active'"
for _ in 1 2 3 4; do
    ha_sql "INSERT INTO blobs SELECT randomblob(50000) FROM blobs LIMIT 20"
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
done
ha_sql "SELECT file_name FROM stats_heap_dumps WHERE pid = $HA_PID AND kind = 'manual' ORDER BY seq"
mapfile -t DUMPS <<<"$HA_OUT"
ha_sql "SELECT file_name FROM stats_heap_dumps WHERE kind = 'log' ORDER BY seq DESC LIMIT 1"
LOG=$HA_OUT
ha_like "dumps and a lifetime log to read (${#DUMPS[@]} dumps, $LOG)" \
    '^proxysql\.[0-9]+\.[0-9]+\.json$' "$LOG"

# A run before this one, for stats_previous_runs: the same datadir, the
# daemon restarted.
ha_stop || ha_bail "SIGTERM stops the quick-start daemon"
ha_start -C "$HA_TMP/quickstart.tmpl" || ha_bail "it starts again"

# fill FILE: FILE's SQL with every dump name replaced by one of DUMPS,
# the lowest sequence first, and every log name by LOG.
fill() {
    python3 - "$1" "$LOG" "${DUMPS[@]}" <<'EOF'
import re, sys
text, log, dumps = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3:]
pat = r'proxysql\.\d+\.(\d+)\.[miuf]\d*\.heap'
names = sorted(set(m.group(0) for m in re.finditer(pat, text)),
               key=lambda n: int(re.match(pat, n).group(1)))
if len(names) > len(dumps):
    sys.exit('%d dump names, %d dumps' % (len(names), len(dumps)))
for name, real in zip(names, dumps):
    text = re.sub(re.escape(name) + r'\b', real, text)
text = re.sub(r'proxysql\.\d+\.\d+\.json', log, text)
sys.stdout.write(text)
EOF
}

while IFS=$'\t' read -r n where kind; do
    [ "$kind" = sql ] || continue
    handle "$n"
    if ! fill "$BLOCKS/$n.sql" >"$HA_TMP/block.sql" 2>"$HA_TMP/fill.err"; then
        ha_fail "$where: the SQL example runs" "$(cat "$HA_TMP/fill.err")"
        continue
    fi
    out=$(ha_mysql -t <"$HA_TMP/block.sql" 2>&1)
    rc=$?
    if [ "$rc" = 0 ]; then
        ha_pass "$where: the SQL example runs"
    else
        ha_fail "$where: the SQL example runs" "$(tail -n 5 <<<"$out")"
    fi
    # A block may open a lifetime window; the next one may open its own.
    ha_sql "UPDATE global_variables SET variable_value = '0' WHERE variable_name = 'jemalloc-log_now'"
done <"$BLOCKS/index"
ha_stop

# ---------------------------------------------------------------------------
# The config snippets
# ---------------------------------------------------------------------------

# norm VALUE: a config value as global_variables shows it.
norm() {
    local v=${1%;}
    v=${v%L}
    v=${v#\"}
    v=${v%\"}
    echo "$v"
}

while IFS=$'\t' read -r n where kind; do
    [ "$kind" = cnf ] || continue
    handle "$n"
    f=$BLOCKS/$n.cnf
    if grep -q '^datadir' "$f"; then
        # A whole file: its own datadir (relative: from here) and port.
        d=$(sed -n 's/^datadir = "\(.*\)".*/\1/p' "$f")
        HA_DATADIR=$HA_TMP/$d
        sed -e 's/"127\.0\.0\.1:6032"/"127.0.0.1:@PORT@"/' "$f" >"$HA_TMP/snippet.tmpl"
    else
        HA_DATADIR=$HA_TMP/snippet$n
        { printf 'datadir = "@DATADIR@";\n'
          printf 'admin_variables = { admin_credentials = "admin:admin"; mysql_ifaces = "127.0.0.1:@PORT@"; }\n'
          cat "$f"; } >"$HA_TMP/snippet.tmpl"
    fi
    mkdir -p -m 700 "$HA_DATADIR"
    if ! ha_start -C "$HA_TMP/snippet.tmpl"; then
        ha_fail "$where: the config example loads" "$(tail -n 5 "$HA_LOG")"
        continue
    fi
    ha_pass "$where: the config example loads"
    bad=
    while read -r key _ value _; do
        case $key in ''|'#'*|'{'|'}'|*=*) continue ;; esac
        ha_sql "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-$key'"
        [ -n "$HA_OUT" ] || continue # no variable shows it
        [ "$HA_OUT" = "$(norm "$value")" ] || bad="$bad $key=$HA_OUT (not $(norm "$value"))"
    done < <(sed -n '/^jemalloc_variables/,/^}/p' "$f")
    ha_is "$where: its jemalloc_variables read back in global_variables" "" "$bad"
    ha_stop
done <"$BLOCKS/index"

# Every marked block was run, or this script says it cannot.
missed=
while IFS=$'\t' read -r n where _; do
    case $handled in *" $n "*) ;; *) missed="$missed $where" ;; esac
done <"$BLOCKS/index"
ha_is "every block marked for this script was run or checked here" "" "$missed"

ha_done
