#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Config files on the real daemon: each class of bad file exits non-zero
# with file:line and starts nothing; unknown keys get a warning with the
# closest known key; ProxySQL's own sample proxysql.cnf and the quick-start
# etc/heapadmin.cnf load (each with -D and a port of this test's own).

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# bad_config NAME LINE REGEX: writes stdin to a config file, runs the daemon
# on it and expects a non-zero exit, "file:LINE: " and REGEX on stderr, and
# no pid file, socket or listener left behind.
bad_config() {
    local name=$1 line=$2 regex=$3 file out rc port data
    file=$HA_TMP/bad-${name//[^a-z_]/-}.cnf
    data=${file%.cnf}.data
    port=$(ha_free_port)
    sed -e "s|@PORT@|$port|g" -e "s|@DATA@|$data|g" \
        -e "s|@SOCK@|$HA_SOCKDIR/bad.sock|g" >"$file"
    out=$(timeout 10 "$HA_DAEMON" -f -c "$file" 2>&1)
    rc=$?
    ha_unlike "$name: exits non-zero" "^0$" "$rc"
    ha_like "$name: error says $file:$line: and what is wrong" \
        "$file:$line: .*$regex" "$out"
    if [ -e "$data/heapadmind.pid" ] || [ -e "$HA_SOCKDIR/bad.sock" ] ||
        timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
        ha_fail "$name: nothing started (no pid file, socket or listener)"
    else
        ha_pass "$name: nothing started (no pid file, socket or listener)"
    fi
}

bad_config "syntax error" 4 "syntax error" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    admin_credentials "admin:admin";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
};
EOF

# libconfig sees the string run to the end of the file.
bad_config "unterminated string" 7 "unclosed string" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    admin_credentials = "admin:admin;
};
EOF

bad_config "port out of range" 6 "99999" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credentials = "stats:stats";
    mysql_ifaces = "127.0.0.1:99999;@SOCK@";
};
EOF

bad_config "listener without a port" 4 "127\.0\.0\.1" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    mysql_ifaces = "127.0.0.1;@SOCK@";
};
EOF

bad_config "credentials of the wrong type" 5 "admin_credentials" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    admin_credentials = 42;
};
EOF

bad_config "credentials without a password separator" 4 \
    "admin_credentials.*':'.*user:password" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    admin_credentials = "nocolon";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
};
EOF

bad_config "lg_prof_sample out of range" 8 "lg_prof_sample.*63|63.*lg_prof_sample" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
};
jemalloc_variables =
{
    lg_prof_sample = 63;
};
EOF

bad_config "dump_prefix with a slash" 7 "dump_prefix" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
};
jemalloc_variables = {
    dump_prefix = "../elsewhere";
};
EOF

bad_config "prof_active not a boolean" 7 "prof_active" <<'EOF'
datadir = "@DATA@";
admin_variables =
{
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
};
jemalloc_variables = {
    prof_active = "maybe";
};
EOF

out=$(timeout 10 "$HA_DAEMON" -f -c "$HA_TMP/no-such.cnf" 2>&1)
rc=$?
ha_unlike "-c with a missing file: exits non-zero" "^0$" "$rc"
ha_like "-c with a missing file: the error names it" "$HA_TMP/no-such\.cnf" \
    "$out"

# --- an unknown key: a warning naming the closest known key -------------------

template=$HA_TMP/typo.cnf.in
cat >"$template" <<'EOF'
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credential = "stats:stats";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
};
EOF
HA_DATADIR=$HA_TMP/typo
if ha_start -C "$template"; then
    ha_pass "a config with an unknown key starts"
    ha_file_like "unknown key: the log names it and the closest known key" \
        "$HA_LOG" "stats_credential'.*stats_credentials"
    ha_file_like "unknown key: the warning has file:line" "$HA_LOG" \
        "$template:5|heapadmin[0-9]+\.cnf:5"
    ha_stop
else
    ha_fail "a config with an unknown key starts"
fi

# --- a proxysql.cnf in ProxySQL's sample layout loads unchanged but for the port ----------

sample=$HA_SRCDIR/test/data/proxysql/proxysql.cnf
if [ ! -f "$sample" ]; then
    ha_fail "a ProxySQL-style proxysql.cnf is at $sample"
else
    template=$HA_TMP/proxysql.cnf.in
    sed 's|^\([[:space:]]*mysql_ifaces[[:space:]]*=[[:space:]]*\)"0\.0\.0\.0:6032"|\1"127.0.0.1:@PORT@;@SOCK@"|' \
        "$sample" >"$template"
    if ! grep -q '@PORT@' "$template"; then
        ha_fail "rewrite the sample's mysql_ifaces=\"0.0.0.0:6032\" to a" \
            "free port (the line was not found in $sample)"
    else
        HA_DATADIR=$HA_TMP/proxysql
        if ha_start -C "$template" -- -D "$HA_DATADIR"; then
            ha_pass "a proxysql.cnf in ProxySQL's sample layout loads (with -D and a free port)"
            ha_sql_is "proxysql.cnf: admin:admin from the file logs in" \
                "SELECT 1+1" 2
            ha_ok "proxysql.cnf: -D puts the pid file in the test's datadir" \
                test -s "$HA_DATADIR/heapadmind.pid"
            for section in mysql_variables mysql_servers mysql_users \
                mysql_query_rules scheduler mysql_replication_hostgroups; do
                n=$(grep -c "$section.*ignored" "$HA_LOG")
                ha_is "proxysql.cnf: one notice that $section is ignored" \
                    1 "$n"
            done
            ha_stop || ha_fail "proxysql.cnf: daemon stops on SIGTERM"
        else
            ha_fail "a proxysql.cnf in ProxySQL's sample layout loads (with -D and a free port)"
        fi
    fi
fi

# --- the quick-start config shipped in etc/ ------------------------------------

quick=$HA_SRCDIR/etc/heapadmin.cnf
template=$HA_TMP/quick.cnf.in
hport=$(ha_free_port)
sed -e 's|^\([[:space:]]*mysql_ifaces[[:space:]]*=[[:space:]]*\)"[^"]*"|\1"127.0.0.1:@PORT@;@SOCK@"|' \
    -e "s|^\\([[:space:]]*http_ifaces[[:space:]]*=[[:space:]]*\\)\"[^\"]*\"|\\1\"127.0.0.1:$hport\"|" \
    "$quick" >"$template"
HA_DATADIR=$HA_TMP/quick
if grep -q '@PORT@' "$template" &&
    ha_start -C "$template" -- -D "$HA_DATADIR"; then
    ha_pass "etc/heapadmin.cnf loads (with -D and a free port)"
    ha_unlike "etc/heapadmin.cnf: no warnings at start-up" "\[(warn|error)\]" \
        "$(cat "$HA_LOG")"
    ha_like "etc/heapadmin.cnf: /metrics on loopback (here on port $hport)" \
        "200" "$(curl -s -o /dev/null -w '%{http_code}' -u stats:stats "http://127.0.0.1:$hport/metrics")"
    ha_stop || ha_fail "etc/heapadmin.cnf: daemon stops on SIGTERM"
else
    ha_fail "etc/heapadmin.cnf loads (with -D and a free port)"
fi

ha_done
