#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# deps/fetch.sh [DEST]: downloads Debian's source packages of libevent,
# sqlite3 and libconfig, at the versions of the installed -dev packages,
# and unpacks them (Debian patches applied) into DEST (default deps/src),
# one directory per package: DEST/libevent, DEST/sqlite3, DEST/libconfig.
#
# The system's apt configuration is left alone: a private deb-src list
# (the mirrors and suites of /etc/apt's own deb lines) and private list
# and cache directories under DEST/.apt. Idempotent: a package whose
# DEST/NAME/.ha-version already names the wanted version is skipped.
#
# Environment:
#   HA_DEPS_VERSIONS  override, e.g. "libevent=2.1.12-stable-8 sqlite3=..."
#                     (default: source:Version of libevent-dev,
#                     libsqlite3-dev and libconfig-dev from dpkg-query)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/src}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

die() { echo "deps/fetch.sh: error: $*" >&2; exit 1; }
say() { echo "deps/fetch.sh: $*"; }

for tool in apt-get dpkg-source dpkg-query; do
    command -v "$tool" >/dev/null 2>&1 ||
        die "$tool not found (Debian package: $([ "$tool" = dpkg-source ] && echo dpkg-dev || echo apt))"
done

# The source package and version behind each installed -dev package.
declare -A want=()
if [ -n "${HA_DEPS_VERSIONS:-}" ]; then
    for pv in $HA_DEPS_VERSIONS; do
        want[${pv%%=*}]=${pv#*=}
    done
else
    for dev in libevent-dev libsqlite3-dev libconfig-dev; do
        line=$(dpkg-query -W -f='${db:Status-Status} ${source:Package} ${source:Version}' \
            "$dev" 2>/dev/null || true)
        read -r status src ver <<<"$line"
        if [ "${status:-}" != installed ] || [ -z "${ver:-}" ]; then
            die "$dev is not installed; install it first (./bootstrap does) or set HA_DEPS_VERSIONS"
        fi
        want[$src]=$ver
    done
fi
for src in libevent sqlite3 libconfig; do
    [ -n "${want[$src]:-}" ] || die "no version for source package $src"
done

todo=()
for src in libevent sqlite3 libconfig; do
    if [ -f "$dest/$src/.ha-version" ] &&
        [ "$(cat "$dest/$src/.ha-version")" = "${want[$src]}" ]; then
        say "$src ${want[$src]} already in $dest/$src"
    else
        todo+=("$src")
    fi
done
[ ${#todo[@]} -gt 0 ] || exit 0

# Private apt state: a deb-src twin of every deb entry the system uses.
apt_dir=$dest/.apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/dl"
list=$apt_dir/deb-src.sources
: >"$list.new"
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: Types: deb -> deb-src; stanzas that were already deb-src too.
    sed -n -e '/^[Tt]ypes:/{s/^[Tt]ypes:.*/Types: deb-src/;p;d}' -e 'p' "$f" >>"$list.new"
    echo >>"$list.new"
done
oneline=$apt_dir/deb-src.list
: >"$oneline.new"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p' "$f" >>"$oneline.new"
done
if ! grep -q '^URIs:' "$list.new" && ! [ -s "$oneline.new" ]; then
    say "no deb entries in /etc/apt; using Debian's default mirror"
    cat >"$list.new" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi
mv "$list.new" "$list"
mv "$oneline.new" "$oneline"
# apt reads one-line lists from SourceList and deb822 from SourceParts
# (*.sources); both point into the private directory.
mkdir -p "$apt_dir/sources.list.d"
cp "$list" "$apt_dir/sources.list.d/deb-src.sources"
apt_opts=(
    -o "Dir::Etc::SourceList=$oneline"
    -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=root"
    -o "Debug::NoLocking=1"
)

say "updating the private deb-src lists in $apt_dir"
if ! apt-get "${apt_opts[@]}" -qq update >"$apt_dir/update.log" 2>&1; then
    cat "$apt_dir/update.log" >&2
    die "apt-get update of the deb-src lists failed (is the Debian mirror reachable?)"
fi

specs=()
for src in "${todo[@]}"; do
    specs+=("$src=${want[$src]}")
done
say "downloading ${specs[*]}"
if ! (cd "$apt_dir/dl" &&
    apt-get "${apt_opts[@]}" -q source --download-only "${specs[@]}") \
    >"$apt_dir/source.log" 2>&1; then
    cat "$apt_dir/source.log" >&2
    for src in "${todo[@]}"; do
        echo "deps/fetch.sh: versions of $src the mirror offers:" >&2
        apt-cache "${apt_opts[@]}" showsrc "$src" 2>/dev/null |
            sed -n 's/^Version: /    /p' >&2 || true
    done
    die "apt-get source failed for ${specs[*]}"
fi

for src in "${todo[@]}"; do
    ver=${want[$src]}
    dsc=$apt_dir/dl/${src}_${ver#*:}.dsc
    [ -f "$dsc" ] || die "$dsc missing after download"
    rm -rf "$dest/$src.tmp"
    if ! dpkg-source --no-copy -x "$dsc" "$dest/$src.tmp" \
        >"$apt_dir/$src-unpack.log" 2>&1; then
        cat "$apt_dir/$src-unpack.log" >&2
        die "dpkg-source -x $dsc failed"
    fi
    echo "$ver" >"$dest/$src.tmp/.ha-version"
    rm -rf "${dest:?}/${src:?}"
    mv "$dest/$src.tmp" "$dest/$src"
    say "unpacked $src $ver into $dest/$src"
done
