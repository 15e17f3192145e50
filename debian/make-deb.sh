#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# debian/make-deb.sh BUILDDIR OUTDIR: builds heapadmin's Debian packages
# (dpkg-buildpackage -us -uc -b) from a clean `make distdir` copy of the
# tree configured in BUILDDIR, and moves the .deb, .changes and
# .buildinfo files into OUTDIR. `make deb` and test/deb/deb.sh call it.
#
# A copy, because dpkg-buildpackage runs `debian/rules clean` (make
# distclean) in the tree it builds, and the developer's tree, or
# distcheck's read-only one, is not to be cleaned; and a distdir, so the
# packages are made of exactly what the release tarball carries.
#
# The agent package is built when the copy holds the agent's sources and
# Debian's libevent/sqlite3/libconfig sources are found: HA_DEPS_SRC, else
# deps/src in the source tree (./bootstrap fetches them), is passed on as
# DEB_HA_DEPS_SRC (see debian/rules).
#
# Environment: DEB_BUILD_OPTIONS (default "parallel=<nproc>"), HA_DEPS_SRC,
# MAKE (default make).
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILDDIR OUTDIR" >&2
    exit 2
fi
# Called from make (make deb) or from a test under make check: the inner
# makes must not try to join the caller's jobserver, whose descriptors
# they do not have; DEB_BUILD_OPTIONS=parallel= sets the build's -j.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
builddir=$(cd "$1" && pwd)
mkdir -p "$2"
outdir=$(cd "$2" && pwd)
make=${MAKE:-make}

for tool in dpkg-buildpackage dh fakeroot; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "make-deb: '$tool' not found; run ./bootstrap as root" \
            "(apt-get install dpkg-dev debhelper fakeroot)" >&2
        exit 1
    fi
done

# Read from the Makefile, not asked of make, which might first regenerate
# it and print that on stdout.
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$builddir/Makefile" 2>/dev/null)
srcdir=$(sed -n 's/^abs_top_srcdir = //p' "$builddir/Makefile" 2>/dev/null)
if [ -z "$version" ] || [ -z "$srcdir" ]; then
    echo "make-deb: $builddir is not a configured heapadmin build tree" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/heapadmin-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/heapadmin-$version

echo "make-deb: copying the distribution into $tree"
"$make" -s -C "$builddir" --no-print-directory distdir \
    distdir="$tree" top_distdir="$tree" >/dev/null
# distcheck's source tree is read-only and distdir keeps the modes; the
# build rewrites some of these files (dh_update_autotools_config).
chmod -R u+w "$tree"
# The changelog is the package's version; a mismatch means someone bumped
# configure.ac without debian/changelog (or the reverse).
debversion=$(cd "$tree" && dpkg-parsechangelog -S Version)
if [ "$debversion" != "$version" ]; then
    echo "make-deb: debian/changelog says $debversion, configure.ac $version" >&2
    exit 1
fi

deps=${HA_DEPS_SRC:-$srcdir/deps/src}
if [ -f "$deps/libevent/.ha-version" ]; then
    export DEB_HA_DEPS_SRC
    DEB_HA_DEPS_SRC=$(cd "$deps" && pwd)
fi
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=$(nproc 2>/dev/null || echo 2)}

echo "make-deb: dpkg-buildpackage -us -uc -b (DEB_BUILD_OPTIONS='$DEB_BUILD_OPTIONS')"
(cd "$tree" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 || {
    tail -n 60 "$work/build.log" >&2
    echo "make-deb: dpkg-buildpackage failed (last lines above)" >&2
    exit 1
}
grep -E '^dpkg-genchanges: (warning|info)' "$work/build.log" >&2 || true
cp "$work/build.log" "$outdir/build.log"
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$outdir"/
echo "make-deb: packages in $outdir:"
(cd "$outdir" && ls -1 ./*.deb)
