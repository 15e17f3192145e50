#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Driver for the client compatibility suite: runs the scripts of the named
# clients (default: all) one after another against a build tree and prints
# one line per client (pass/fail, checks failed, seconds), then every
# failed check with its diagnostics. make check runs the same scripts one
# by one; this is for people.
#
#   test/compat/run.sh [-b BUILDDIR] [CLIENT...]
#
# CLIENT is a script name without .sh: cli capi pymysql node go perl java
# sysbench slap (a path such as test/compat/go.sh works too). BUILDDIR holds daemon/heapadmind (default: $HA_TOP_BUILDDIR,
# else the source tree). HC_SERVER_PORT=PORT runs the clients against a
# server already listening on 127.0.0.1:PORT instead (see compat.sh).
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$here/../.." && pwd)
builddir=${HA_TOP_BUILDDIR:-$srcdir}
while getopts "b:" opt; do
    case $opt in
    b) builddir=$(cd "$OPTARG" && pwd) || exit 2 ;;
    *) echo "usage: $0 [-b BUILDDIR] [CLIENT...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
clients=("$@")
[ ${#clients[@]} -gt 0 ] ||
    clients=(cli capi pymysql node go perl java sysbench slap)

export HA_TOP_SRCDIR=$srcdir HA_TOP_BUILDDIR=$builddir
logdir=$(mktemp -d "${TMPDIR:-/tmp}/ha-compat-run.XXXXXX") || exit 1
failed=0
printf '%-10s %-6s %-14s %s\n' client result "failed/checks" seconds
for i in "${!clients[@]}"; do
    c=$(basename "${clients[$i]}" .sh)
    clients[i]=$c
    script=$here/$c.sh
    if [ ! -f "$script" ]; then
        printf '%-10s %s\n' "$c" "no such client script: $script"
        failed=$((failed + 1))
        continue
    fi
    start=$SECONDS
    bash "$script" >"$logdir/$c.log" 2>&1
    rc=$?
    n=$(grep -Ec '^(not )?ok [0-9]' "$logdir/$c.log")
    bad=$(grep -Ec '^not ok [0-9]' "$logdir/$c.log")
    result=pass
    if [ "$rc" -ne 0 ]; then
        result=FAIL
        failed=$((failed + 1))
    fi
    printf '%-10s %-6s %-14s %s\n' "$c" "$result" "$bad/$n" $((SECONDS - start))
done
for c in "${clients[@]}"; do
    [ -f "$logdir/$c.log" ] || continue
    if grep -q '^not ok' "$logdir/$c.log"; then
        echo
        echo "== $c"
        # Each failed check and its diagnostics, without the log tails.
        awk '/^not ok/ { p = 1; print; next }
             /^(ok|1\.\.)/ { p = 0 }
             p && !/^#   / { print }' "$logdir/$c.log"
    fi
done
echo
echo "logs: $logdir"
[ "$failed" -eq 0 ]
