#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The /heap page in a real browser: headless Chromium (Debian's) loads it
# from the daemon, with nothing from outside (every script is served by
# the daemon), and the flame graph renders with the workload's function
# names, the top functions table filled, a diff of two dumps coloured;
# a stats user is told a live profile needs an admin. A screenshot is
# kept as a test artefact (test/artifacts/heap.png in the build tree).

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require chromium chromium
ha_require curl curl
ha_needs_live_jemalloc

hport=$(ha_free_port)
HA_HTTP_PORT=$hport
HA_JEMALLOC="prof_active = true; lg_prof_sample = 14;"
ha_start || ha_bail "heapadmind starts with http_ifaces"

dump_now() {
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
    ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
}
dump_now
d1=$HA_OUT
ha_sql "CREATE TABLE w(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) INSERT INTO w SELECT randomblob(300) FROM n"
dump_now
d2=$HA_OUT

# browse USER:PASS PATH OUT: the DOM after the page's scripts ran.
browse() {
    timeout 90 chromium --headless --no-sandbox --disable-gpu \
        --disable-dev-shm-usage --no-first-run --user-data-dir="$HA_TMP/chrome" \
        --virtual-time-budget=15000 --window-size=1280,900 \
        --dump-dom "http://$1@127.0.0.1:$hport$2" >"$3" 2>"$HA_TMP/chrome.err"
}

browse admin:admin "/heap?dump=$d2" "$HA_TMP/dom.html"
ha_file_like "Chromium renders the page's scripts" "$HA_TMP/dom.html" 'data-rendered="yes"'
n=$(grep -o 'class="d3-flame-graph-label"' "$HA_TMP/dom.html" | wc -l)
ha_ok "the flame graph has frames ($n labels)" test "$n" -gt 20
ha_sql "SELECT function FROM heap_top('$d2') WHERE function NOT LIKE '0x%' AND function NOT LIKE '% (inline)' ORDER BY cum_bytes DESC LIMIT 1"
fn=$HA_OUT
ha_file_like "... with the workload's function names ($fn, heap_top's largest cum)" \
    "$HA_TMP/dom.html" "<title>$(sed 's/[][().*^$+]/\\&/g' <<<"$fn"): "
ha_file_like "hovering a frame tells its bytes and share" "$HA_TMP/dom.html" \
    "<title>[^<]*: [0-9.]+ (B|KiB|MiB|GiB) \([0-9.]+%\)</title>"
rows=$(grep -o '<td class="f">' "$HA_TMP/dom.html" | wc -l)
ha_ok "the top functions table is filled ($rows rows)" test "$rows" -gt 5
ha_file_like "... led by heap_top's first row" "$HA_TMP/dom.html" \
    "<td class=\"f\">$(mariadb --no-defaults -h127.0.0.1 -P"$HA_PORT" -uadmin -padmin -N -B \
        -e "SELECT function FROM heap_top('$d2') LIMIT 1" 2>/dev/null | sed 's/[][().*^$+]/\\&/g')</td>"

curl -s -u stats:stats -D "$HA_TMP/page.hdr" "http://127.0.0.1:$hport/heap" >"$HA_TMP/page.html"
ha_ok "the page served is http/heap.html, byte for byte (embedded at build time)" \
    cmp -s "$HA_TMP/page.html" "$HA_SRCDIR/http/heap.html"
ha_file_like "... as HTML in UTF-8" "$HA_TMP/page.hdr" '^Content-Type: text/html; charset=utf-8'
ha_unlike "the page loads nothing from elsewhere" "(src|href)=\"(https?:)?//" "$(cat "$HA_TMP/page.html")"
for a in d3.min.js d3-flamegraph.min.js d3-flamegraph.css LICENSE.d3.txt LICENSE.d3-flame-graph.txt; do
    ha_is "/assets/$a is served" 200 \
        "$(curl -s -o /dev/null -w '%{http_code}' -u stats:stats "http://127.0.0.1:$hport/assets/$a")"
done

browse admin:admin "/heap?dump=$d2&base=$d1" "$HA_TMP/diff.html"
ha_file_like "a diff renders" "$HA_TMP/diff.html" 'data-rendered="yes"'
ha_file_like "... titled as one dump minus the other" "$HA_TMP/diff.html" "$d2 minus $d1"
ha_file_like "... growth coloured differently (red)" "$HA_TMP/diff.html" 'fill="rgb\(2[0-9][0-9], ?[0-9]{1,2}, ?[0-9]{1,2}\)"'
ha_file_like "... the table marks growth" "$HA_TMP/diff.html" 'class="grow"'

browse stats:stats "/heap" "$HA_TMP/stats.html"
ha_file_like "a stats user's live page says it needs an admin" "$HA_TMP/stats.html" "needs an admin user"
browse stats:stats "/heap?dump=$d2" "$HA_TMP/stats2.html"
ha_file_like "... and renders a dump" "$HA_TMP/stats2.html" 'data-rendered="yes"'

art=$HA_BUILDDIR/test/artifacts
mkdir -p "$art"
timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$HA_TMP/chrome" --virtual-time-budget=15000 \
    --window-size=1280,900 --screenshot="$art/heap.png" \
    "http://admin:admin@127.0.0.1:$hport/heap?dump=$d2" >/dev/null 2>&1
ha_ok "a screenshot is kept ($art/heap.png)" test -s "$art/heap.png"

ha_done
