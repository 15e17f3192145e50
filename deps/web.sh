#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# deps/web.sh: installs the npm packages the /heap page serves (d3 and
# d3-flame-graph, pinned with their integrity hashes in
# deps/web/package-lock.json) into deps/web/node_modules, with `npm ci`:
# the exact versions, no install scripts. http/gen-assets.sh embeds
# their dist files into the daemon, so nothing is fetched from a CDN at
# run time. Idempotent (a stamp names the lock file's hash).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)/web
cd "$here"
command -v npm >/dev/null 2>&1 || {
    echo "deps/web.sh: error: npm not found (Debian package: npm)" >&2
    exit 1
}
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f node_modules/.ha-stamp ] && [ "$(cat node_modules/.ha-stamp)" = "$want" ]; then
    exit 0
fi
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
for f in node_modules/d3/dist/d3.min.js \
         node_modules/d3-flame-graph/dist/d3-flamegraph.umd.min.js \
         node_modules/d3-flame-graph/dist/d3-flamegraph.css \
         node_modules/d3/LICENSE node_modules/d3-flame-graph/LICENSE; do
    [ -s "$f" ] || { echo "deps/web.sh: error: $f missing after npm ci" >&2; exit 1; }
done
echo "$want" > node_modules/.ha-stamp
echo "deps/web.sh: d3 $(node -p 'require("./node_modules/d3/package.json").version' 2>/dev/null || echo '?'), d3-flame-graph $(node -p 'require("./node_modules/d3-flame-graph/package.json").version' 2>/dev/null || echo '?') in deps/web/node_modules"
