#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Embedding, as a host would do it: `make install` of this build into a
# staging root, the example host (example/exhost.c) compiled against the
# STAGED library with nothing but pkg-config and -ljemalloc, run with a
# multi-threaded workload, and driven by the real mariadb client:
# statistics, prof_active, dump_now, and jeprof naming the workload's own
# functions. Once on the library's own thread, once on the host's event
# loop; the library writes nothing to the host's stdout or stderr, and
# SIGTERM ends the host with exit 0.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-240}
# shellcheck source=../integration/lib.sh
. "$(cd "$(dirname "$0")/../integration" && pwd)/lib.sh"
ha_needs_live_jemalloc
ha_require pkg-config pkg-config
ha_require jeprof libjemalloc-dev
ha_require mariadb mariadb-client

stage=$HA_TMP/stage
if ! make -s -C "$HA_BUILDDIR" install DESTDIR="$stage" \
        >"$HA_TMP/install.log" 2>&1; then
    ha_file_tail "$HA_TMP/install.log"
    ha_bail "make install DESTDIR=$stage"
fi
pc=$(find "$stage" -name heapadmin.pc | head -1)
lib=$(find "$stage" -name 'libheapadmin.so.0' | head -1)
hdr=$(find "$stage" -name heapadmin.h | head -1)
ha_like "the staged install has heapadmin.pc" "/pkgconfig/heapadmin.pc$" "$pc"
ha_like "the staged install has libheapadmin.so.0" "/libheapadmin.so.0$" "$lib"
ha_like "the staged install has heapadmin.h" "/include/heapadmin.h$" "$hdr"
[ -n "$pc" ] && [ -n "$lib" ] || ha_done

exports=$(nm -D --defined-only "$lib" | awk '$3 != "" {print $3}' |
    grep -v '^HEAPADMIN_' | grep -cv '^heapadmin_')
ha_is "libheapadmin.so.0 exports nothing but heapadmin_*" 0 "$exports"
needed=$(readelf -d "$lib" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
ha_unlike "libheapadmin.so.0 does not depend on jemalloc (found at run time)" \
    "libjemalloc" "$needed"

# Compile the example against the staged files, through pkg-config only.
export PKG_CONFIG_SYSROOT_DIR=$stage
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs heapadmin)
ha_like "pkg-config points into the staged root" "^-I$stage/.* -L$stage/.* -lheapadmin" "$flags"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
exhost=$HA_TMP/exhost
# shellcheck disable=SC2086 # word splitting of the flags is intended
if cc -O1 -g -fno-omit-frame-pointer -pthread -Wall -Werror \
        -o "$exhost" "$HA_SRCDIR/example/exhost.c" $flags \
        $(pkg-config --cflags --libs libevent_core) -ljemalloc \
        >"$HA_TMP/cc.log" 2>&1; then
    ha_pass "example/exhost.c builds against the staged heapadmin"
else
    ha_file_tail "$HA_TMP/cc.log"
    ha_fail "example/exhost.c builds against the staged heapadmin"
    ha_done
fi
libdir=$(dirname "$lib")

# docs/embedding.md's snippet and compile command, as a host would paste
# them: the snippet's file-scope lines stay at file scope, its statements
# go into main(), log_warning() is the host's (stdio here); then the
# page's cc command line, as written, against the staged install.
if python3 - "$HA_SRCDIR/docs/embedding.md" "$HA_TMP/myservice.c" \
        "$HA_TMP/cc-docs.sh" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
mark = r'<!-- test: [^\n]*test/embed/embed\.sh[^\n]*-->\n'
code = re.search(mark + r'```c\n(.*?)```', text, re.S).group(1)
cmd = re.search(mark + r'```sh\n(.*?)```', text, re.S).group(1)
head, sep, body = code.partition('HEAPADMIN_DEFINE_MALLOC_CONF;')
first, _, body = body.partition('\n')
open(sys.argv[2], 'w').write(
    '#include <stdio.h>\n'
    '#define log_warning(...) fprintf(stderr, __VA_ARGS__)\n'
    + head + sep + first + '\n\nint\nmain(void)\n{\n' + body
    + '    return 0;\n}\n')
open(sys.argv[3], 'w').write(cmd)
EOF
then
    export PKG_CONFIG_SYSROOT_DIR=$stage
    export PKG_CONFIG_PATH=$(dirname "$pc")
    if (cd "$HA_TMP" && bash -e cc-docs.sh) >"$HA_TMP/cc-docs.log" 2>&1 &&
        [ -x "$HA_TMP/myservice" ]; then
        ha_pass "docs/embedding.md: its snippet builds with its cc command"
    else
        ha_fail "docs/embedding.md: its snippet builds with its cc command" \
            "$(cat "$HA_TMP/cc-docs.sh" "$HA_TMP/myservice.c" "$HA_TMP/cc-docs.log")"
    fi
    unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
else
    ha_fail "docs/embedding.md has the snippet and the cc command this test runs"
fi

# run_host MODE: one full session with the example host.
run_host() {
    local mode=$1 port data out err hpid dump sock
    port=$(ha_free_port)
    data=$HA_TMP/data-$mode
    sock=$HA_SOCKDIR/exhost-$mode.sock
    cat >"$HA_TMP/exhost-$mode.cnf" <<EOF
datadir = "$data"
admin_variables = { mysql_ifaces = "127.0.0.1:$port;$sock" }
EOF
    out=$HA_TMP/exhost-$mode.out
    err=$HA_TMP/exhost-$mode.err
    # shellcheck disable=SC2046
    LD_LIBRARY_PATH=$libdir "$exhost" -c "$HA_TMP/exhost-$mode.cnf" \
        $([ "$mode" = base ] && echo --on-base) >"$out" 2>"$err" &
    hpid=$!
    HA_PIDS+=("$hpid")
    for _ in $(seq 100); do grep -q "admin socket" "$out" 2>/dev/null && break; sleep 0.1; done
    ha_is "[$mode] the host prints the admin port it got" \
        "admin port $port" "$(grep '^admin port' "$out")"
    HA_PORT=$port
    HA_SOCK=$sock
    ha_sql "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
    ha_like "[$mode] mariadb reads the host's heap over TCP" "^0:[1-9][0-9]{6,}$" "$HA_RC:$HA_OUT"
    HA_OUT=$(ha_mysql_sock -N -B -e "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof'" 2>&1)
    ha_is "[$mode] ... and over the unix socket; opt.prof is on" true "$HA_OUT"
    ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-prof_active'"
    ha_is "[$mode] prof_active switched on" "0:" "$HA_RC:$HA_ERR"
    sleep 2
    HA_OUT=$(ha_mysql -vvv -e "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'" 2>&1)
    dump=$(sed -n 's/.*heap profile written to \([^ ]*\) .*/\1/p' <<<"$HA_OUT" | head -1)
    ha_like "[$mode] dump_now names a dump in the datadir" "^$data/proxysql\.$hpid\.0\.m0\.heap$" "$dump"
    if [ -f "$dump" ]; then
        timeout 120 jeprof --text "$exhost" "$dump" >"$HA_TMP/jeprof-$mode.out" 2>/dev/null
        ha_file_like "[$mode] jeprof names the cache filler" "$HA_TMP/jeprof-$mode.out" exhost_cache_fill
        ha_file_like "[$mode] jeprof names the session grower" "$HA_TMP/jeprof-$mode.out" exhost_session_grow
    else
        ha_fail "[$mode] the dump exists"
    fi
    kill -TERM "$hpid"
    if ha_wait_gone "$hpid" 10; then
        wait "$hpid"
        ha_is "[$mode] SIGTERM: the host exits 0" 0 "$?"
    else
        ha_fail "[$mode] the host stops within 10 s of SIGTERM"
    fi
    ha_is "[$mode] the library wrote nothing to the host's stderr" "" "$(cat "$err")"
    ha_is "[$mode] the host's stdout has only its own lines" 0 \
        "$(grep -cv '^admin \(port\|socket\) ' "$out")"
    ha_file_like "[$mode] the library logged to its datadir instead" \
        "$data/heapadmind.log" "ready for connections"
}

run_host thread
run_host base

ha_done
