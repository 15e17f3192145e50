#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Go database/sql with go-sql-driver/mysql, both from Debian: built offline
# (GO111MODULE=off, GOPATH=/usr/share/gocode where Debian installs the
# driver's source, GOPROXY=off) into the build tree's cache, and rebuilt
# only when test/compat/go/main.go changes. Queries with arguments are
# server-side prepared statements, as the driver does by default. See
# compat.sh for the checks.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

hc_require_cmd go golang-go
hc_require_file /usr/share/gocode/src/github.com/go-sql-driver/mysql/driver.go \
    golang-github-go-sql-driver-mysql-dev
hc_mkcache

bin=$HC_CACHE/go-compat
src=$HC_SRCDIR/go/main.go
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    mkdir -p "$HC_CACHE/go-build" "$HC_CACHE/go-home"
    if ! GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS='' GOTOOLCHAIN=local \
        GOCACHE=$HC_CACHE/go-build HOME=$HC_CACHE/go-home \
        timeout -k 2 150 go build -o "$bin.new" "$src" \
        >"$HA_TMP/go-build.log" 2>&1; then
        ha_fail "go: the client builds offline against Debian's driver" \
            "GO111MODULE=off GOPATH=/usr/share/gocode go build $src" \
            "$(tail -n 20 "$HA_TMP/go-build.log")"
        hc_done
    fi
    mv "$bin.new" "$bin"
fi
ha_pass "go: the client builds offline against Debian's driver"

hc_start
hc_run go 30 "$bin"
hc_check_common "Go database/sql"
hc_check_ps "Go database/sql"
hc_done
