# SPDX-License-Identifier: MIT
#
# HA_PRIVATE_DEPS: private, PIC static builds of libevent, SQLite and
# libconfig for the LD_PRELOAD agent, made by deps/build.sh from Debian's
# source packages (unpacked by deps/fetch.sh, which ./bootstrap runs).
#
#   --enable-agent[=auto|yes|no]  auto (default): yes when the sources and
#                                 the tools that build them are present
#   --with-deps-src=DIR           the unpacked sources (default: SRCDIR/deps/src)
#
# Sets AM_CONDITIONAL HAVE_AGENT and substitutes:
#   HA_AGENT          yes or no
#   HA_DEPS_SRC       absolute source directory (libevent/ sqlite3/ libconfig/)
#   HA_DEPS_OUT       absolute output directory (BUILDDIR/deps/out)
#   HA_PRIV_CFLAGS    -I of the private headers (before any system -I)
#   HA_PRIV_LIBS      the private archives, absolute, in link order
#   HA_PRIV_SYSLIBS   the system libraries those archives need
#   HA_PRIV_LDFLAGS   keeps the archives' symbols out of the dynamic table
# Call it after the PKG_CHECK_MODULES block (it uses LIBCRYPTO_LIBS).
AC_DEFUN([HA_PRIVATE_DEPS], [
AC_ARG_ENABLE([agent],
    [AS_HELP_STRING([--enable-agent@<:@=auto|yes|no@:>@],
        [build the private PIC libraries (libevent, sqlite, libconfig) the
         LD_PRELOAD agent links; needs Debian's sources, see deps/README.md
         @<:@default=auto@:>@])],
    [], [enable_agent=auto])
AC_ARG_WITH([deps-src],
    [AS_HELP_STRING([--with-deps-src=DIR],
        [Debian sources unpacked by deps/fetch.sh @<:@default=SRCDIR/deps/src@:>@])],
    [], [with_deps_src=])

AS_CASE([$enable_agent], [auto|yes|no], [],
    [AC_MSG_ERROR([--enable-agent takes auto, yes or no, not '$enable_agent'])])
AS_CASE([$with_deps_src], [yes|no],
    [AC_MSG_ERROR([--with-deps-src needs a directory])])

HA_AGENT=no
HA_DEPS_SRC=
ha_deps_why=
AS_IF([test "x$enable_agent" != xno], [
    ha_deps_dir=$with_deps_src
    AS_IF([test -z "$ha_deps_dir"], [ha_deps_dir=$srcdir/deps/src])
    AC_MSG_CHECKING([for Debian's libevent, sqlite3 and libconfig sources])
    ha_deps_missing=
    for ha_p in libevent sqlite3 libconfig; do
        test -f "$ha_deps_dir/$ha_p/.ha-version" ||
            ha_deps_missing="$ha_deps_missing $ha_p"
    done
    AS_IF([test -z "$ha_deps_missing"], [
        HA_DEPS_SRC=`cd "$ha_deps_dir" && pwd`
        AC_MSG_RESULT([$HA_DEPS_SRC])
    ], [
        AC_MSG_RESULT([no])
        ha_deps_why="no Debian sources of$ha_deps_missing in $ha_deps_dir (run deps/fetch.sh, or pass --with-deps-src=DIR)"
    ])
    dnl deps/build.sh runs bash, tclsh (sqlite's amalgamation), autoreconf
    dnl and libtoolize (libevent, as Debian's build does).
    AS_IF([test -z "$ha_deps_why"], [
        for ha_t in bash:bash tclsh:tcl autoreconf:autoconf libtoolize:libtool; do
            ha_prog=${ha_t%%:*}
            AC_MSG_CHECKING([for $ha_prog])
            ha_path=`command -v "$ha_prog" 2>/dev/null`
            AS_IF([test -n "$ha_path"], [AC_MSG_RESULT([$ha_path])], [
                AC_MSG_RESULT([no])
                ha_deps_why="$ha_prog not found (Debian package: ${ha_t#*:})"
                break])
        done
    ])
    AS_IF([test -z "$ha_deps_why"], [HA_AGENT=yes],
        [test "x$enable_agent" = xyes],
        [AC_MSG_ERROR([--enable-agent: $ha_deps_why])],
        [AC_MSG_WARN([agent disabled: $ha_deps_why])])
])

HA_DEPS_OUT=`pwd`/deps/out
HA_PRIV_CFLAGS="-I$HA_DEPS_OUT/include"
HA_PRIV_LIBS=
for ha_a in libevent_openssl libevent_extra libevent_pthreads libevent_core \
            libsqlite3 libconfig; do
    HA_PRIV_LIBS="$HA_PRIV_LIBS $HA_DEPS_OUT/lib/$ha_a.a"
done
HA_PRIV_LIBS=${HA_PRIV_LIBS# }
HA_PRIV_SYSLIBS="$LIBCRYPTO_LIBS -lpthread -lm"
HA_PRIV_LDFLAGS="-Wl,--exclude-libs,ALL"
AC_SUBST([HA_AGENT])
AC_SUBST([HA_DEPS_SRC])
AC_SUBST([HA_DEPS_OUT])
AC_SUBST([HA_PRIV_CFLAGS])
AC_SUBST([HA_PRIV_LIBS])
AC_SUBST([HA_PRIV_SYSLIBS])
AC_SUBST([HA_PRIV_LDFLAGS])
AM_CONDITIONAL([HAVE_AGENT], [test "x$HA_AGENT" = xyes])
])
