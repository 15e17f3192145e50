#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The private libraries stay private: links deps/check/private.c against
# the PIC archives of deps/out the way the LD_PRELOAD agent will
# (-fvisibility=hidden, --exclude-libs,ALL, a version script), then checks
# that the shared object exports only its one function, needs none of
# libevent, libsqlite3 and libconfig, and keeps using its own copies inside
# a host that exports event_base_new, sqlite3_libversion and config_init of
# its own. TAP lines ("ok N - ..."), exit 0 when all passed.
#
# Environment (set by make check): HA_DEPS_OUT (deps/out of the build
# tree), HA_TOP_SRCDIR, HA_CC, HA_PRIV_SYSLIBS.
set -euo pipefail

srcdir=${HA_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
out=${HA_DEPS_OUT:-$srcdir/deps/out}
cc=${HA_CC:-cc}
# shellcheck disable=SC2206 # a list of linker arguments
syslibs=(${HA_PRIV_SYSLIBS:--lssl -lcrypto -lpthread -lm})
libs=()
for a in libevent_openssl libevent_extra libevent_pthreads libevent_core \
    libsqlite3 libconfig; do
    libs+=("$out/lib/$a.a")
done

n=0
failed=0
pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
    shift
    local line
    for line in "$@"; do printf '%s\n' "$line" | sed 's/^/# /'; done
}
# check DESC EXPECTED ACTUAL
check() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected: $2" "got: $3"; fi
}
finish() {
    echo "1..$n"
    [ "$failed" -eq 0 ] || echo "# check-private: $failed of $n checks failed"
    exit $((failed > 0))
}

if [ ! -f "$out/stamp" ]; then
    fail "private archives built" "$out/stamp missing: run make private-deps"
    finish
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ha-check-private.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
so=$tmp/private.so
host=$tmp/host

if "$cc" -std=gnu11 -O1 -fPIC -fvisibility=hidden -I"$out/include" -shared \
    -o "$so" "$srcdir/deps/check/private.c" \
    -Wl,--version-script="$srcdir/deps/check/private.map" \
    -Wl,--exclude-libs,ALL -Wl,--no-undefined -Wl,--fatal-warnings \
    "${libs[@]}" "${syslibs[@]}" >"$tmp/so.log" 2>&1; then
    pass "shared object links the private archives"
else
    fail "shared object links the private archives" "$(cat "$tmp/so.log")"
    finish
fi

exports=$(nm -D --defined-only "$so" | awk '{print $3}' | sort | tr '\n' ' ')
check "exports only ha_private_probe" "ha_private_probe " "$exports"

needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
if grep -Eq 'libevent|libsqlite3|libconfig' <<<"$needed"; then
    fail "no NEEDED on libevent, libsqlite3 or libconfig" "NEEDED: $needed"
else
    pass "no NEEDED on libevent, libsqlite3 or libconfig ($needed)"
fi

if readelf -d "$so" | grep -q TEXTREL; then
    fail "no text relocations"
else
    pass "no text relocations"
fi

undef=$(nm -D --undefined-only "$so" | awk '{print $2}' |
    grep -E '^(event_|evbuffer|bufferevent|evutil_|sqlite3_|config_)' | tr '\n' ' ' || true)
check "no library symbol left for the host to resolve" "" "$undef"

if "$cc" -std=gnu11 -O1 -rdynamic -o "$host" "$srcdir/deps/check/host.c" -ldl \
    >"$tmp/host.log" 2>&1; then
    pass "host with its own event_base_new, sqlite3_libversion, config_init builds"
else
    fail "host builds" "$(cat "$tmp/host.log")"
    finish
fi

if res=$("$host" "$so" 2>&1); then
    pass "host dlopens the object and its probe succeeds"
else
    fail "host dlopens the object and its probe succeeds" "$res"
fi
val() { sed -n "s/^$1=//p" <<<"$res"; }

want_sqlite=$(sed -n 's/^#define SQLITE_VERSION *"\(.*\)"/\1/p' "$out/include/sqlite3.h")
check "the object's sqlite3_libversion() is its own ($want_sqlite)" \
    "$want_sqlite" "$(val sqlite3_libversion)"
check "SQL in an in-memory memdb database sees sqlite $want_sqlite" \
    "$want_sqlite" "$(val sqlite_version)"
want_event=$(sed -n 's/^#define EVENT__VERSION *"\(.*\)"/\1/p' \
    "$out/include/event2/event-config.h")
check "the object's libevent is its own ($want_event)" "$want_event" "$(val event_version)"
check "its event_base uses epoll" "epoll" "$(val event_method)"
check "its libconfig parsed a config string" "6032" "$(val config_port)"
check "none of the host's fakes ran during the probe" "0" "$(val fake_calls_during_probe)"
check "the host's sqlite3_libversion is still the host's" "0.0.0-host" \
    "$(val host_sqlite3_libversion)"
check "the object offers no sqlite3_libversion to dlsym" "no" \
    "$(val object_has_sqlite3_libversion)"

finish
