#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The example alerting rules (etc/heapadmin-alerts.yml) with the real
# promtool: they load (check rules), they fire on a fragmenting host and
# on a steady leak and stay quiet on bursts that are freed and on a
# one-off step, and the leaking call site fires for the site that grows
# along a line, not for churn or a step (test rules, test/integration/
# alerts-test.yml), and every metric they name is in a live daemon's
# exposition, which promtool passes, the RSS breakdown summing to the
# RSS; but the leak sites, which exist once the leak watch has ranked a
# series (test/agent/leakalert.sh has them from a leaking host). The
# runbook_url anchors are headings of the docs' pages.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require promtool prometheus
ha_needs_live_jemalloc

rules=$HA_SRCDIR/etc/heapadmin-alerts.yml
out=$(promtool check rules "$rules" 2>&1)
ha_like "promtool check rules: the three alerts load" "SUCCESS: 3 rules found" \
    "$out"
out=$(cd "$HA_SRCDIR/test/integration" && promtool test rules alerts-test.yml 2>&1)
ha_like "promtool test rules: fragmentation, leak and leaking site fire; burst, step and churn do not" \
    "^  SUCCESS" "$out"
# GitHub's anchor of each heading of a page: lower case, markup and
# punctuation but '-' and '_' dropped, spaces to '-' (test/docs.sh's).
anchors() {
    sed -n 's/^#\{1,6\} //p' "$1" | tr '[:upper:]' '[:lower:]' |
        sed -e 's/`//g' -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}
urls=$(sed -n 's/.*runbook_url: "\([^"]*\)".*/\1/p' "$rules")
ha_ok "HeapadminLeakingCallSite has a runbook_url into the docs" \
    test -n "$urls"
for url in $urls; do
    page=${url%%#*}
    ha_ok "runbook_url $url is a heading of $page" \
        sh -c "[ -f '$HA_SRCDIR/$page' ]" &&
        ha_ok "... its anchor is one" \
            grep -qx -- "${url#*#}" <<<"$(anchors "$HA_SRCDIR/$page")"
done

ha_start || ha_bail "daemon did not start"
ha_sql "SHOW PROMETHEUS METRICS"
# The client escapes the newlines of the one value.
printf '%b' "$HA_OUT" >"$HA_TMP/metrics.txt"
out=$(promtool check metrics <"$HA_TMP/metrics.txt" 2>&1)
ha_is "promtool check metrics passes the exposition" "0:" "$?:$out"
for name in $(grep -o 'heapadmin_[a-z_]*' "$rules" | grep -v '^heapadmin_leak_site_' |
    sort -u); do
    ha_file_like "the rules' $name is exposed" "$HA_TMP/metrics.txt" \
        "^$name "
done
rss=$(awk '$1 == "heapadmin_process_resident_memory_bytes" {print $2}' "$HA_TMP/metrics.txt")
sum=$(awk '/^heapadmin_memory_breakdown_bytes\{/ {s += $2} END {printf "%.0f", s}' "$HA_TMP/metrics.txt")
ha_is "heapadmin_memory_breakdown_bytes sums to the RSS" "$rss" "$sum"
ha_file_like "the breakdown names jemalloc's dirty pages" "$HA_TMP/metrics.txt" \
    '^heapadmin_memory_breakdown_bytes\{component="jemalloc.dirty"\} [0-9]+$'
ha_done
