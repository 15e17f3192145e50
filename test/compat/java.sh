#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# MariaDB Connector/J (Debian's libmariadb-java, 2.7: at connect it sends
# set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')
# and SELECT @@max_allowed_packet,@@system_time_zone,@@time_zone,
# @@auto_increment_increment, or SHOW VARIABLES WHERE Variable_name in
# (...) on older servers) from a small JDBC program,
# test/compat/java/Compat.java, compiled here with javac into the build
# tree's cache when it changes. Default client-side parameters, then
# useServerPrepStmts=true. See compat.sh for the checks.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

HC_JAR=/usr/share/java/mariadb-java-client.jar
hc_require_cmd java default-jre-headless
hc_require_cmd javac default-jdk-headless
hc_require_file "$HC_JAR" libmariadb-java
hc_mkcache

classes=$HC_CACHE/java
src=$HC_SRCDIR/java/Compat.java
if [ ! -f "$classes/Compat.class" ] || [ "$src" -nt "$classes/Compat.class" ]; then
    rm -rf "$classes"
    mkdir -p "$classes"
    if ! timeout -k 2 90 javac -encoding UTF-8 -d "$classes" "$src" \
        >"$HA_TMP/javac.log" 2>&1; then
        rm -rf "$classes"
        ha_fail "java: Compat.java compiles" "$(tail -n 20 "$HA_TMP/javac.log")"
        hc_done
    fi
fi
ha_pass "java: Compat.java compiles"

hc_start
hc_run java 40 java -XX:TieredStopAtLevel=1 -Xshare:auto \
    -cp "$classes:$HC_JAR" Compat
hc_check_common "Connector/J"
hc_check_ps "Connector/J (useServerPrepStmts=true)"
hc_done
