#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# deps/build.sh SRC_DIR OUT_DIR: builds PIC static archives of the Debian
# sources that deps/fetch.sh unpacked into SRC_DIR (libevent, sqlite3,
# libconfig), for linking privately into a shared object such as the
# LD_PRELOAD agent. Results:
#   OUT_DIR/lib/libevent_{core,extra,openssl,pthreads}.a
#   OUT_DIR/lib/libsqlite3.a   (amalgamation, heapadmin's options)
#   OUT_DIR/lib/libconfig.a
#   OUT_DIR/include/           (event2/, sqlite3.h, libconfig.h, ...)
#   OUT_DIR/stamp              (written last; names what was built)
# Work happens in OUT_DIR/build (SRC_DIR is never written); each piece logs
# to OUT_DIR/build/NAME.log, whose tail is printed on failure. Nothing is
# rebuilt while the stamp matches the source versions and this script.
#
# Environment: CC (default cc), JOBS (default nproc), HA_DEPS_FORCE=1.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 SRC_DIR OUT_DIR" >&2
    exit 2
fi
die() { echo "deps/build.sh: error: $*" >&2; exit 1; }
say() { echo "deps/build.sh: $*"; }

[ -d "$1" ] || die "source directory $1 not found (run deps/fetch.sh)"
src=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
case $out/ in "$src"/*) die "OUT_DIR must not be inside SRC_DIR" ;; esac

CC=${CC:-cc}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
export CC

for tool in "$CC" make tclsh autoreconf libtoolize ar; do
    command -v "$tool" >/dev/null 2>&1 || {
        case $tool in
            tclsh) pkg=tcl ;; autoreconf) pkg="autoconf automake" ;;
            libtoolize) pkg=libtool ;; ar) pkg=binutils ;; make) pkg='make' ;;
            *) pkg=gcc ;;
        esac
        die "$tool not found (Debian package: $pkg)"
    }
done

# What the stamp records: each source's Debian version and this script.
stamp_text=
for name in libevent sqlite3 libconfig; do
    [ -f "$src/$name/.ha-version" ] ||
        die "$src/$name is missing or incomplete (run deps/fetch.sh)"
    stamp_text+="$name $(cat "$src/$name/.ha-version")"$'\n'
done
stamp_text+="build.sh $(cksum <"$0" | cut -d' ' -f1)"$'\n'
stamp_text+="cc $("$CC" -dumpfullversion 2>/dev/null || "$CC" -dumpversion)"$'\n'
if [ "${HA_DEPS_FORCE:-0}" != 1 ] && [ -f "$out/stamp" ] &&
    [ "$(cat "$out/stamp")" = "${stamp_text%$'\n'}" ]; then
    say "up to date ($out)"
    exit 0
fi

rm -rf "${out:?}/build" "${out:?}/lib" "${out:?}/include" "${out:?}/stamp"
bld=$out/build
mkdir -p "$bld" "$out/lib" "$out/include"
start=$SECONDS

# libevent: Debian's patches touch Makefile.am, so (as Debian's build does)
# regenerate the autotools files, in a private copy of the tree.
build_libevent() {
    local b=$bld/libevent
    mkdir -p "$b"
    cp -a "$src/libevent" "$b/src"
    rm -rf "$b/src/.pc"
    cd "$b/src"
    autoreconf -fi
    ./configure --prefix="$b/stage" --with-pic --disable-shared \
        --enable-static --disable-samples --disable-libevent-regress \
        --disable-debug-mode --disable-doxygen-html \
        --disable-dependency-tracking --disable-gcc-warnings \
        CFLAGS="-O2 -g -fPIC"
    make -j"$jobs" install
    local a
    for a in core extra openssl pthreads; do
        cp "$b/stage/lib/libevent_$a.a" "$out/lib/"
    done
    cp -R "$b/stage/include/." "$out/include/"
}

# sqlite3: configure (out of tree) only to generate the amalgamation, then
# compile it with heapadmin's options. From Debian's debian/rules we keep
# THREADSAFE=1, COLUMN_METADATA (heapadmin uses sqlite3_column_table_name),
# DBSTAT_VTAB, LIKE_DOESNT_MATCH_BLOBS, ALLOW_ROWID_IN_VIEW and
# MAX_VARIABLE_NUMBER so SQL behaves as with the system library; we drop
# FTS*, RTREE, SESSION, PREUPDATE_HOOK, UNLOCK_NOTIFY, SECURE_DELETE and
# OMIT_LOOKASIDE (no use to an in-memory admin database) and USE_URI
# (heapadmin passes SQLITE_OPEN_URI), and omit extension loading.
sqlite_defs="-DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_DESERIALIZE \
    -DSQLITE_DEFAULT_MEMSTATUS=1 -DSQLITE_ENABLE_COLUMN_METADATA \
    -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_ENABLE_DBSTAT_VTAB \
    -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_ALLOW_ROWID_IN_VIEW \
    -DSQLITE_MAX_VARIABLE_NUMBER=250000 -DSQLITE_MAX_SCHEMA_RETRY=25"
build_sqlite3() {
    local b=$bld/sqlite3
    mkdir -p "$b"
    cd "$b"
    "$src/sqlite3/configure" --disable-shared --enable-static \
        --disable-tcl --disable-readline --enable-threadsafe \
        --disable-load-extension TCLSH_CMD=tclsh
    # Debian's patch adds AMALGAMATION_LINE_MACROS to configure.ac only;
    # the shipped configure does not set it.
    make -j"$jobs" sqlite3.c AMALGAMATION_LINE_MACROS=--linemacros=0
    # shellcheck disable=SC2086 # word-split the option list
    "$CC" -c -O2 -g -fPIC -fno-strict-aliasing -D_HAVE_SQLITE_CONFIG_H \
        -I. $sqlite_defs sqlite3.c -o sqlite3.o
    rm -f "$out/lib/libsqlite3.a"
    ar crs "$out/lib/libsqlite3.a" sqlite3.o
    cp sqlite3.h sqlite3ext.h "$out/include/"
}

# libconfig: its own configure and lib/ Makefile, in a copy of the tree
# (make may want to refresh its generated files).
build_libconfig() {
    local b=$bld/libconfig
    mkdir -p "$b"
    cp -a "$src/libconfig" "$b/src"
    rm -rf "$b/src/.pc"
    cd "$b/src"
    ./configure --with-pic --disable-shared --enable-static --disable-cxx \
        --disable-examples --disable-dependency-tracking CFLAGS="-O2 -g -fPIC"
    make -j"$jobs" -C lib libconfig.la
    cp lib/.libs/libconfig.a "$out/lib/"
    cp lib/libconfig.h "$out/include/"
}

# The three builds run side by side, each logging to its own file.
pids=()
for name in libevent sqlite3 libconfig; do
    ( "build_$name" ) >"$bld/$name.log" 2>&1 &
    pids+=("$!")
done
failed=
i=0
for name in libevent sqlite3 libconfig; do
    if ! wait "${pids[$i]}"; then
        failed+=" $name"
        echo "deps/build.sh: building $name failed; last lines of $bld/$name.log:" >&2
        tail -n 30 "$bld/$name.log" | sed 's/^/    /' >&2
    fi
    i=$((i + 1))
done
[ -z "$failed" ] || die "failed:$failed"

# Every member must be PIC: link each archive whole into a shared object
# that may leave only system-library symbols undefined.
chk=$bld/pic-check
mkdir -p "$chk"
echo 'int ha_pic_check_dummy;' >"$chk/empty.c"
for a in "$out"/lib/*.a; do
    base=$(basename "$a" .a)
    extra=()
    case $base in
        libevent_core) ;;
        libevent_*) extra=("$out/lib/libevent_core.a") ;;
    esac
    if ! "$CC" -shared -o "$chk/$base.so" "$chk/empty.c" \
        -Wl,--whole-archive "$a" -Wl,--no-whole-archive "${extra[@]}" \
        -Wl,--no-undefined -lssl -lcrypto -lz -lpthread -ldl -lm \
        >"$chk/$base.log" 2>&1; then
        cat "$chk/$base.log" >&2
        die "$base.a does not link into a shared object (not PIC?)"
    fi
    # A non-PIC member can also slip through as a text relocation.
    if grep -q 'relocation' "$chk/$base.log" ||
        readelf -d "$chk/$base.so" | grep -q TEXTREL; then
        cat "$chk/$base.log" >&2
        die "$base.a needs text relocations in a shared object (not PIC)"
    fi
done

printf '%s\n' "${stamp_text%$'\n'}" >"$out/stamp"
say "built $(cd "$out/lib" && echo *.a) in $((SECONDS - start)) s"
