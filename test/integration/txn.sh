#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A control write acts when its statement runs, whatever the client's
# autocommit, and a transaction left open by one client never makes
# monitoring or control fail elsewhere (ProxySQL's admin semantics:
# BEGIN/COMMIT/ROLLBACK are accepted and do nothing). Measured before:
# PyMySQL's default autocommit off made UPDATE ... prof_active wait for a
# COMMIT that never came while every other session got ERR 1205, and a
# stats user's open BEGIN failed every admin write; a retried dump_now
# wrote two files. Driven by PyMySQL (its defaults) and the mariadb
# client, against the real daemon.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc

PY=/usr/bin/python3
"$PY" -c 'import pymysql' 2>/dev/null || {
    echo "not ok 1 - $HA_TEST_NAME needs the pymysql module for $PY"
    echo "# install it with: apt-get install python3-pymysql"
    echo "1..1"
    exit 1
}

HA_DATADIR=$HA_TMP/data
ha_start || ha_bail "heapadmind starts"
ha_sql_is "profiling starts inactive" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'" \
    false

# One PyMySQL connection per role, kept open across steps; each step's
# output is one line per statement: "ok <rows>" or "err <code>".
cat >"$HA_TMP/two.py" <<'PY'
import sys, pymysql

port = int(sys.argv[1])
def conn(user):
    # PyMySQL's defaults: autocommit off (it sends SET AUTOCOMMIT = 0).
    return pymysql.connect(host="127.0.0.1", port=port, user=user,
                           password=user, read_timeout=10)

def run(c, sql):
    try:
        with c.cursor() as cur:
            cur.execute(sql)
            rows = cur.fetchall()
        return "ok " + "|".join(",".join(str(v) for v in r) for r in rows)
    except pymysql.err.MySQLError as e:
        return "err %s" % e.args[0]

admin, other, stats = conn("admin"), conn("admin"), conn("stats")
steps = [
    (admin, "SELECT @@autocommit"),
    # The write acts now, with no COMMIT ever sent ...
    (admin, "UPDATE global_variables SET variable_value = 'true' "
            "WHERE variable_name = 'jemalloc-prof_active'"),
    # ... another session reads it at once, and monitoring answers.
    (other, "SELECT variable_value FROM global_variables "
            "WHERE variable_name = 'jemalloc-prof_active'"),
    (stats, "SELECT count(*) FROM stats_memory_jemalloc WHERE 1"),
    # A stats user's transaction left open ...
    (stats, "BEGIN"),
    (stats, "SELECT count(*) > 0 FROM stats_memory_metrics"),
    # ... does not stop the admin's control writes.
    (admin, "UPDATE global_variables SET variable_value = 'false' "
            "WHERE variable_name = 'jemalloc-prof_active'"),
    (admin, "UPDATE global_variables SET variable_value = 'true' "
            "WHERE variable_name = 'jemalloc-dump_now'"),
    (admin, "SELECT count(*) FROM stats_heap_dumps WHERE kind = 'manual'"),
    (admin, "ROLLBACK"),
    (admin, "SAVEPOINT s1"),
]
for c, sql in steps:
    print(run(c, sql), flush=True)
PY
out=$(timeout -k 2 60 "$PY" "$HA_TMP/two.py" "$HA_PORT" 2>&1)
mapfile -t r <<<"$out"
ha_is "PyMySQL runs with autocommit off" "ok 0" "${r[0]:-}"
ha_is "UPDATE prof_active with autocommit off: OK" "ok " "${r[1]:-}"
ha_is "... acted with no COMMIT sent: another session reads true" \
    "ok true" "${r[2]:-}"
ha_like "... the stats session's read after it answers (no ERR 1205)" \
    "^ok [0-9]+$" "${r[3]:-}"
ha_is "a stats user's BEGIN is accepted" "ok " "${r[4]:-}"
ha_is "... and its read inside it answers" "ok 1" "${r[5]:-}"
ha_is "the admin's UPDATE prof_active while that is open: OK, not ERR 1205" \
    "ok " "${r[6]:-}"
ha_is "dump_now while that is open: OK" "ok " "${r[7]:-}"
ha_is "... exactly one manual dump was written" "ok 1" "${r[8]:-}"
ha_is "ROLLBACK is accepted and undoes nothing" "ok " "${r[9]:-}"
ha_is "SAVEPOINT is refused with ERR 1235" "err 1235" "${r[10]:-}"
n=$(find "$HA_DATADIR" -maxdepth 1 -name 'proxysql.*.m*.heap' | wc -l)
ha_is "one dump file in the datadir" 1 "$n"
ha_sql_is "the ROLLBACK undid nothing: prof_active stays false" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'" \
    false

# The mariadb client: a transaction a session never ends holds nothing.
exec 7> >(ha_mysql -ustats -pstats >/dev/null 2>&1)
echo "BEGIN; SELECT count(*) FROM stats_memory_metrics;" >&7
sleep 0.5
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-prof_active'"
ha_is "an admin write while a mariadb session sits in BEGIN: OK" "0:" "$HA_RC:$HA_ERR"
ha_sql "SET autocommit = 0; UPDATE global_variables SET variable_value = 'false' WHERE variable_name = 'jemalloc-prof_active'"
ha_is "SET autocommit = 0 then a control write: OK" "0:" "$HA_RC:$HA_ERR"
ha_sql_is "... and it acted without COMMIT" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'" \
    false
exec 7>&-
ha_unlike "no ERR 1205 anywhere in the log" "1205" "$(cat "$HA_LOG")"
ha_stop
ha_done
