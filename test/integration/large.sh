#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Payloads of 16 MiB and more, which the protocol splits into several
# packets: a 20,000,000-byte value goes in (INSERT piped to the client) and
# comes back (SELECT) intact, and queries and rows whose payload is one
# byte below, at and above the 16 MiB - 1 packet limit.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# A client moves 50 MB through SQLite and both sides' packet code in one
# call: on a loaded machine (beside stress-ng --cpu 4, under ASan) that
# took more than lib.sh's 30 s. What is tested is that the bytes arrive
# whole; a hang still ends.
HA_CLIENT_TIMEOUT=${HA_CLIENT_TIMEOUT:-150}
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

ha_start || ha_bail "heapadmind starts and takes logins"

big=64M
value=$HA_TMP/value.txt
# base64 has no quote or backslash, so the text goes into SQL as is and
# comes out of the batch-mode client unescaped.
head -c 15000000 /dev/urandom | base64 -w 0 >"$value"
ha_is "test value is 20,000,000 bytes" 20000000 "$(wc -c <"$value")"

insert=$HA_TMP/insert.sql
{
    echo "CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT);"
    printf "INSERT INTO big VALUES (1, '"
    cat "$value"
    printf "');\n"
} >"$insert"
ha_mysql --max-allowed-packet=$big <"$insert" >"$HA_TMP/insert.out" 2>&1
rc=$?
ha_is "INSERT of a 20 MB value piped to the client succeeds" \
    "0:" "$rc:$(head -c 300 "$HA_TMP/insert.out")"

ha_sql "SELECT length(v) FROM big WHERE id = 1" --max-allowed-packet=$big
ha_is "SELECT length() of the stored value is 20000000" "0:20000000" \
    "$HA_RC:$HA_OUT"

ha_mysql --max-allowed-packet=$big -N -B -e "SELECT v FROM big WHERE id = 1" \
    >"$HA_TMP/select.out" 2>"$HA_TMP/select.err"
rc=$?
expect=$({ cat "$value"; echo; } | sha256sum)
got=$(sha256sum <"$HA_TMP/select.out")
ha_is "SELECT of the 20 MB value exits 0" "0:" \
    "$rc:$(head -c 300 "$HA_TMP/select.err")"
ha_is "SELECT returns the 20 MB value intact (sha256)" "$expect" "$got"

# Around the packet limit: a row packet whose payload is 16777215 bytes
# needs an empty packet after it. A row of one n-byte string has a payload
# of 4 + n bytes (0xFD and a 3-byte length, then the bytes).
for n in 16777210 16777211 16777212; do
    ha_mysql --max-allowed-packet=$big -N -B \
        -e "SELECT substr(v, 1, $n) FROM big WHERE id = 1" \
        >"$HA_TMP/row.out" 2>"$HA_TMP/row.err"
    rc=$?
    expect=$({ head -c "$n" "$value"; echo; } | sha256sum)
    got=$(sha256sum <"$HA_TMP/row.out")
    ha_is "row payload of $((n + 4)) bytes comes back intact" \
        "0:$expect" "$rc:$got"
done

# The same for queries: COM_QUERY is 1 byte plus the text, and
# "SELECT length('" + n bytes + "')" is n + 17 bytes, so these payloads
# are 16777214, 16777215 and 16777216 bytes.
queries=$HA_TMP/queries.sql
expect=
for n in 16777196 16777197 16777198; do
    {
        printf "SELECT length('"
        head -c "$n" "$value"
        printf "');\n"
    } >>"$queries"
    expect="$expect$n"$'\n'
done
HA_OUT=$(ha_mysql --max-allowed-packet=$big -N -B <"$queries" 2>&1)
rc=$?
ha_is "queries of 16777214, 16777215 and 16777216 bytes are read whole" \
    "0:${expect%$'\n'}" "$rc:$HA_OUT"

ha_sql_is "the daemon still serves after the large packets" "SELECT 1+1" 2

ha_done
