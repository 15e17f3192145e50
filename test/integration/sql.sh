#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SQL through the real mariadb client: -e, statements piped on stdin,
# CREATE/INSERT/SELECT round trips across sessions, NULLs, what the client
# asks on connect, and each class of SQL error with its MySQL code.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ha_start || ha_bail "heapadmind starts and takes logins"

ha_sql_is "-e 'SELECT 1+1' prints 2" "SELECT 1+1" 2
ha_sql "select @@version_comment limit 1"
ha_like "select @@version_comment limit 1 is answered" "^0:.+" \
    "$HA_RC:$HA_OUT"
ha_sql "SELECT 1; SELECT 'two'; SELECT 3"
ha_is "-e with three statements prints three results" \
    "$(printf '1\ntwo\n3')" "$HA_OUT"

HA_OUT=$(ha_mysql -e status 2>&1)
ha_like "the status command shows the server version" \
    "Server version:[[:space:]]+8\.0\.35-heapadmin-[0-9]" "$HA_OUT"

# The other commands: COM_PING, COM_INIT_DB, and ERR for the rest.
admin_cmd() {
    timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb-admin --no-defaults \
        --protocol=TCP -h127.0.0.1 -P"$HA_PORT" --skip-ssl -uadmin -padmin "$@"
}
HA_OUT=$(admin_cmd ping 2>&1)
ha_is "COM_PING: mariadb-admin ping" "0:mysqld is alive" "$?:$HA_OUT"
HA_OUT=$(admin_cmd refresh 2>&1)
ha_like "an unsupported command (COM_REFRESH) gets an ERR" \
    "^1:.*refresh failed.*[Uu]nknown command" "$?:$HA_OUT"
ha_sql_is "COM_INIT_DB at login (-D main)" "SELECT 1" 1 -D main
ha_sql_is "USE main" "USE main; SELECT 2" 2
ha_sql_err "USE of a missing database: ERR 1049" "USE nosuch" \
    "^ERROR 1049 \(42000\).*Unknown database 'nosuch'"
ha_sql "SELECT 1" -D nosuch
ha_like "login with a missing database: ERR 1049" \
    "^ERROR 1049 \(42000\): Unknown database 'nosuch'" "$HA_ERR"

# A batch on stdin, as "mariadb < file.sql" sends it.
batch=$HA_TMP/batch.sql
cat >"$batch" <<'EOF'
CREATE TABLE t1 (id INTEGER PRIMARY KEY, name TEXT, note TEXT);
INSERT INTO t1 VALUES (1, 'one', 'first'), (2, 'two', NULL);
INSERT INTO t1 (id, name) VALUES (3, 'three');
UPDATE t1 SET note = 'updated' WHERE id = 1;
SELECT id, name, note FROM t1 ORDER BY id;
EOF
HA_OUT=$(ha_mysql -N -B <"$batch" 2>"$HA_TMP/batch.err")
HA_RC=$?
ha_is "stdin batch: exit 0, nothing on stderr" "0:" "$HA_RC:$(cat "$HA_TMP/batch.err")"
ha_is "stdin batch: CREATE/INSERT/UPDATE/SELECT round trip, NULLs as NULL" \
    "$(printf '1\tone\tupdated\n2\ttwo\tNULL\n3\tthree\tNULL')" "$HA_OUT"

# Every session shares one admin database: a new connection sees the rows.
ha_sql_is "a second session reads the rows the batch stored" \
    "SELECT count(*), sum(id), count(note) FROM t1" "$(printf '3\t6\t1')"
ha_sql_is "DELETE then SELECT in one -e" \
    "DELETE FROM t1 WHERE id = 3; SELECT group_concat(name, ',') FROM t1" \
    "one,two"

ha_sql_is "NULL literals print as NULL" "SELECT NULL, 1, NULL" \
    "$(printf 'NULL\t1\tNULL')"
HA_OUT=$(ha_mysql -t -e "SELECT NULL AS n, 'x' AS s" 2>&1)
ha_like "NULL prints as NULL in the table format too" "^\| NULL \| x +\|$" \
    "$HA_OUT"
ha_sql_is "empty string is not NULL" "SELECT '', length(''), '' IS NULL" \
    "$(printf '\t0\t0')"
ha_sql_is "integers, reals and text come back as sent" \
    "SELECT -9223372036854775808, 2.5, 'O''Brien', 'ünïcødé'" \
    "$(printf -- "-9223372036854775808\t2.5\tO'Brien\tünïcødé")"

# Errors: MySQL codes the client prints, never 1045, session survives.
ha_sql_err "syntax error: ERR 1064 (42000)" "SELEC 1" \
    "^ERROR 1064 \(42000\)"
ha_sql_err "missing table: ERR 1146 (42S02)" "SELECT * FROM no_such_table" \
    "^ERROR 1146 \(42S02\).*no_such_table"
ha_sql_err "missing column: ERR 1054" "SELECT no_such_column FROM t1" \
    "^ERROR 1054 \(42S22\)"
ha_sql_err "other SQLite errors: ERR 1105 (HY000) with SQLite's message" \
    "SELECT abs(1, 2)" \
    "^ERROR 1105 \(HY000\).*wrong number of arguments to function abs"
HA_OUT=$(printf 'SELECT 1;\nSELEC 2;\nSELECT 3;\n' | ha_mysql -N -B 2>&1)
HA_RC=$?
ha_like "stdin batch stops at the failing line and says which" \
    "ERROR 1064 \(42000\) at line 2" "$HA_OUT"
ha_is "stdin batch with an error exits 1, after printing line 1's result" \
    "1:1" "$HA_RC:$(printf '%s\n' "$HA_OUT" | head -n 1)"
ha_sql_is "the daemon still serves after the errors" "SELECT 40+2" 42

# PROCESSLIST names TCP clients by address:port, as MySQL does.
HA_OUT=$(ha_mysql -N -B -e "SELECT host FROM stats_admin_sessions WHERE id = CONNECTION_ID()" 2>&1)
ha_like "PROCESSLIST Host is address:port for a TCP client" \
    "^127\.0\.0\.1:[0-9]+$" "$HA_OUT"

ha_done
