#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The datadir's one file rule, tried as a read-only stats user would over
# SQL and HTTP (prof/dumpfile.h): the datadir holds secrets (the TLS and
# RSA private keys, a config written by SAVE CONFIG TO FILE with every
# password, the SQLite files), and none of them is read by name; a file
# planted under a dump's name is used only if it parses, and no error
# quotes a byte of it; links, FIFOs, traversal and NUL variants are
# refused; dumps and their sidecars are private (0600).

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require curl curl
ha_needs_live_jemalloc

hport=$(ha_free_port)
cat >"$HA_TMP/filerule.tmpl" <<CNF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:Adm1n-Secret";
    stats_credentials = "stats:St4ts-Secret";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    http_ifaces = "127.0.0.1:$hport";
};
jemalloc_variables = { prof_active = true; lg_prof_sample = 14; };
CNF
HA_USER=admin
HA_PASS=Adm1n-Secret
ha_start -C "$HA_TMP/filerule.tmpl" || ha_bail "heapadmind starts"
url=http://127.0.0.1:$hport
D=$HA_DATADIR

ha_sql_ok "SAVE CONFIG TO FILE writes every password into the datadir" \
    "SAVE CONFIG TO FILE saved.cnf"
ha_sql_ok "a dump" \
    "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
dump=$HA_OUT
ha_like "... listed" '\.heap$' "$dump"

# No byte of these may reach a client: the key material's armour, the
# SQLite header, and the passwords in the saved config.
SECRETS='BEGIN|PRIVATE|SQLite format|Adm1n-Secret|St4ts-Secret|admin_credentials'

# stats_sql SQL: as the stats user; HA_OUT/HA_ERR/HA_RC.
stats_sql() { ha_sql "$1" -ustats -pSt4ts-Secret; }
# get URL: HTTP status "<code>" with the body in $HA_TMP/b.
get() {
    curl -s --max-time 10 -u stats:St4ts-Secret -o "$HA_TMP/b" \
        -w '%{http_code}' "$url$1"
}

for f in saved.cnf heapadmin-key.pem heapadmin-rsa-private.pem heapadmin.db \
    heapadmin-cert.pem heapadmind.pid; do
    if [ ! -e "$D/$f" ]; then
        ha_fail "$f exists in the datadir (the test needs it)"
        continue
    fi
    stats_sql "SELECT * FROM heap_top('$f')"
    ha_like "SQL heap_top('$f') as stats: refused, saying what may be read" \
        "only heap dumps of the datadir may be read" "$HA_ERR"
    ha_unlike "... quoting nothing of it" "$SECRETS" "$HA_OUT$HA_ERR"
    for path in "/debug/pprof/heap?dump=$f" "/debug/pprof/heap?dump=$f&debug=1" \
        "/pprof/heap?dump=$f" "/debug/pprof/allocs?dump=$f&format=jemalloc" \
        "/heap/data.json?dump=$f" "/debug/pprof/heap?dump=$dump&base=$f"; do
        ha_is "HTTP $path: 400" 400 "$(get "$path")"
        ha_unlike "... quoting nothing of it" "$SECRETS" "$(cat "$HA_TMP/b")"
    done
done

# A file planted under a dump's name is used only once it parses.
cp "$D/heapadmin-key.pem" "$D/proxysql.1.2.m3.heap"
cp "$D/saved.cnf" "$D/proxysql.1.2.m4.heap"
for f in proxysql.1.2.m3.heap proxysql.1.2.m4.heap; do
    stats_sql "SELECT * FROM heap_top('$f')"
    ha_like "SQL: a non-dump under a dump's name ($f) is refused with its line" \
        "$f: line 1: expected" "$HA_ERR"
    ha_unlike "... quoting nothing of it" "$SECRETS" "$HA_OUT$HA_ERR"
    stats_sql "SELECT file_name, bytes FROM stats_heap_dumps WHERE file_name = '$f'"
    ha_is "... stats_heap_dumps lists it without totals" "$f	NULL" "$HA_OUT"
    for path in "/debug/pprof/heap?dump=$f" "/pprof/heap?dump=$f" \
        "/debug/pprof/heap?dump=$f&debug=1" "/heap/data.json?dump=$f"; do
        ha_is "HTTP $path: 404" 404 "$(get "$path")"
        ha_unlike "... quoting nothing of it" "$SECRETS" "$(cat "$HA_TMP/b")"
    done
done
rm -f "$D/proxysql.1.2.m3.heap" "$D/proxysql.1.2.m4.heap"

# Links and FIFOs under a dump's name lead nowhere and hang nothing.
ln -s "$D/heapadmin-key.pem" "$D/proxysql.1.2.m5.heap"
ln "$D/saved.cnf" "$D/proxysql.1.2.m6.heap" 2>/dev/null ||
    cp "$D/saved.cnf" "$D/proxysql.1.2.m6.heap"
mkfifo "$D/proxysql.1.2.m7.heap"
stats_sql "SELECT * FROM heap_top('proxysql.1.2.m5.heap')"
ha_like "SQL: a symlink under a dump's name is not followed" "symlink|Too many levels" "$HA_ERR"
ha_unlike "... quoting nothing" "$SECRETS" "$HA_OUT$HA_ERR"
ha_is "HTTP: the same symlink: 404" 404 "$(get "/pprof/heap?dump=proxysql.1.2.m5.heap")"
ha_unlike "... quoting nothing" "$SECRETS" "$(cat "$HA_TMP/b")"
ha_is "HTTP: a hard link to the saved config: 404, not a dump" 404 \
    "$(get "/pprof/heap?dump=proxysql.1.2.m6.heap")"
ha_unlike "... quoting nothing" "$SECRETS" "$(cat "$HA_TMP/b")"
t0=$(date +%s%N)
stats_sql "SELECT * FROM heap_top('proxysql.1.2.m7.heap')"
t1=$(date +%s%N)
ha_like "SQL: a FIFO under a dump's name is refused" "not a regular file" "$HA_ERR"
ha_ok "... at once (no open or read waits on it: $(((t1 - t0) / 1000000)) ms)" \
    test $(((t1 - t0) / 1000000)) -lt 5000
ha_is "HTTP: the FIFO: 404" 404 "$(get "/debug/pprof/heap?dump=proxysql.1.2.m7.heap")"
rm -f "$D/proxysql.1.2.m5.heap" "$D/proxysql.1.2.m6.heap" "$D/proxysql.1.2.m7.heap"

# Names that are not plain file names of the datadir.
for bad in "../$(basename "$D")/heapadmin-key.pem" "%2e%2e%2fheapadmin-key.pem" \
    "/etc/passwd" "%2Fetc%2Fpasswd" "$dump%00.txt" "$dump%2f.." "." ".." \
    "proxysql.1.2.m3.heap%0a"; do
    ha_is "HTTP ?dump=$bad: 400" 400 "$(get "/debug/pprof/heap?dump=$bad")"
done
ha_like "... a NUL is named as such, not cut off" "NUL" \
    "$(get "/debug/pprof/heap?dump=$dump%00.txt" >/dev/null; cat "$HA_TMP/b")"
stats_sql "SELECT * FROM heap_top('../data/$dump')"
ha_like "SQL: a path is refused" "is refused" "$HA_ERR"

# What is allowed still works.
ha_is "HTTP: the dump itself (stats user)" 200 "$(get "/debug/pprof/heap?dump=$dump")"
ha_is "HTTP: its text" "heap_v2/" "$(get "/pprof/heap?dump=$dump" >/dev/null; head -c 8 "$HA_TMP/b")"
stats_sql "SELECT count(*) > 0 FROM heap_top('$dump')"
ha_is "SQL: heap_top of the dump (stats user)" 1 "$HA_OUT"
ha_is "?dump=live for a stats user: 403" 403 "$(get "/debug/pprof/heap?dump=live")"
ha_is "?dump=live for an admin: the live profile" 200 \
    "$(curl -s --max-time 30 -u admin:Adm1n-Secret -o "$HA_TMP/b" -w '%{http_code}' \
        "$url/debug/pprof/heap?dump=live")"

# Dumps and sidecars are private.
ha_is "the dump is mode 600" 600 "$(stat -c %a "$D/$dump")"
ha_is "... its .buildid too" 600 "$(stat -c %a "$D/$dump.buildid")"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_symbolized'"
ha_sql_ok "a dump with its symbolized copy" \
    "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_sql "SELECT file_name FROM stats_heap_dumps ORDER BY seq DESC LIMIT 1"
ha_is "... the .sym is mode 600" 600 "$(stat -c %a "$D/$HA_OUT.sym")"

ha_done
