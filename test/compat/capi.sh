#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The libmariadb C API: test/compat/c/capi.c, compiled here with
# pkg-config libmariadb into the build tree's cache (again only when the
# source changes). Text queries, then mysql_stmt_* prepared statements with
# typed parameters and results, a re-execution without a new bind, and
# long data. See compat.sh for the checks.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

hc_require_cmd "${CC:-cc}" gcc
hc_require_cmd pkg-config pkg-config
pkg-config --exists libmariadb 2>/dev/null ||
    hc_missing "libmariadb's headers (pkg-config libmariadb)" \
        "apt-get install libmariadb-dev"
hc_mkcache

bin=$HC_CACHE/capi
src=$HC_SRCDIR/c/capi.c
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    # shellcheck disable=SC2046 # pkg-config prints separate words
    if ! timeout -k 2 60 "${CC:-cc}" -std=gnu11 -O1 -Wall -Wextra -Werror \
        $(pkg-config --cflags libmariadb) -o "$bin.new" "$src" \
        $(pkg-config --libs libmariadb) >"$HA_TMP/cc.log" 2>&1; then
        ha_fail "capi: the client compiles against libmariadb" \
            "$(tail -n 20 "$HA_TMP/cc.log")"
        hc_done
    fi
    mv "$bin.new" "$bin"
fi
ha_pass "capi: the client compiles against libmariadb"

hc_start
hc_run capi 30 "$bin"
hc_check_common "libmariadb C API"
hc_check_ps "libmariadb C API (mysql_stmt)"
hc_is "libmariadb C API: a parameter in two COM_STMT_SEND_LONG_DATA chunks, then COM_STMT_RESET and a plain value" \
    ps_long_data "heapadmin|plain"
hc_done
