#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# node mysql2: query() (text protocol, client-side escaping) and execute()
# / prepare() (server-side prepared statements). mysql2 comes from the npm
# registry, pinned by test/compat/node/package-lock.json: the first run
# installs it with npm ci into the build tree's cache (the source tree is
# read-only under make distcheck) and later runs reuse it while the lock
# file is unchanged. See compat.sh for the checks.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

hc_require_cmd node nodejs
hc_require_cmd npm npm
hc_mkcache

# npm ci into $HC_CACHE/node unless that lock file is already installed.
node_dir=$HC_CACHE/node
lock=$HC_SRCDIR/node/package-lock.json
if ! cmp -s "$lock" "$node_dir/package-lock.json" ||
    [ ! -f "$node_dir/node_modules/mysql2/package.json" ]; then
    rm -rf "$node_dir"
    mkdir -p "$node_dir"
    cp "$HC_SRCDIR/node/package.json" "$node_dir/"
    # Copied last: its presence marks a finished install.
    cp "$lock" "$node_dir/package-lock.json.new"
    mv "$node_dir/package-lock.json.new" "$node_dir/package-lock.json"
    if ! (cd "$node_dir" && timeout -k 2 120 npm ci --no-audit --no-fund \
        --prefer-offline --loglevel=error) >"$HA_TMP/npm.log" 2>&1; then
        sed 's/^/# /' "$HA_TMP/npm.log"
        rm -f "$node_dir/package-lock.json"
        hc_missing "node mysql2 (npm ci from test/compat/node/package-lock.json failed; it needs the npm registry once)" \
            "mkdir -p $node_dir && cp $HC_SRCDIR/node/package.json $lock $node_dir/ && (cd $node_dir && npm ci)"
    fi
fi

hc_start
NODE_PATH=$node_dir/node_modules hc_run node 30 node "$HC_SRCDIR/node/client.js"
hc_check_common "node mysql2 query()"
hc_check_ps "node mysql2 execute()"
hc_done
