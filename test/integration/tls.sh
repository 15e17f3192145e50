#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# TLS and caching_sha2_password with the real mariadb client: --ssl
# connects and the client's status shows the cipher, the default
# invocation (no TLS options) still works, the generated certificate and
# keys persist across restarts with the same fingerprint and safe modes,
# require_tls refuses plain TCP but not the unix socket, a configured
# ssl_cert/ssl_key pair is used, and caching_sha2_password as the default
# plugin over plain TCP (fast path; a wrong password goes through RSA
# public-key retrieval), TLS and the unix socket.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

HA_DATADIR=$HA_TMP/data
mkdir -p "$HA_DATADIR"

# tls_config FILE EXTRA: a config template with EXTRA in admin_variables.
tls_config() {
    cat >"$1" <<EOF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credentials = "stats:stats";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    $2
};
EOF
}

fingerprint() {
    sed -n 's/.*SHA-256 fingerprint \([0-9A-F:]*\).*/\1/p' "$HA_LOG" | tail -1
}

TLS=(--ssl --ssl-verify-server-cert=0)

tls_config "$HA_TMP/plain.cnf" ""
ha_start -C "$HA_TMP/plain.cnf" || ha_bail "heapadmind starts with TLS"

ha_sql "SELECT 1" "${TLS[@]}"
ha_is "mariadb --ssl logs in" "0:1" "$HA_RC:$HA_OUT"
HA_OUT=$(ha_mysql "${TLS[@]}" -e '\s' 2>&1)
ha_like "mariadb --ssl: status shows the cipher in use" \
    "SSL:[[:space:]]+Cipher in use is [A-Z0-9_-]+" "$HA_OUT"
HA_OUT=$(ha_mysql -e '\s' 2>&1)
ha_like "mariadb --skip-ssl: status says TLS is not in use" \
    "SSL:[[:space:]]+Not in use" "$HA_OUT"
ha_sql "SHOW STATUS LIKE 'Ssl_%'" "${TLS[@]}"
ha_like "SHOW STATUS over TLS: Ssl_cipher and Ssl_version" \
    "^Ssl_cipher	[A-Z0-9_-]+
Ssl_version	TLSv1\.[23]$" "$HA_OUT"
ha_sql "SHOW STATUS LIKE 'Ssl_cipher'"
ha_is "SHOW STATUS without TLS: Ssl_cipher is empty" "Ssl_cipher	" "$HA_OUT"
HA_OUT=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
    -h127.0.0.1 -P"$HA_PORT" -uadmin -padmin -N -B -e "SELECT 1" 2>&1)
ha_is "mariadb without TLS options still logs in" "1" "$HA_OUT"
ha_sql "SELECT 1" "${TLS[@]}" -uadmin -pwrong
ha_like "wrong password over TLS: ERR 1045 reaches the client" \
    "^ERROR 1045 \(28000\): Access denied for user 'admin'" "$HA_ERR"

for f in heapadmin-key.pem heapadmin-rsa-private.pem; do
    ha_is "$f is mode 600" 600 "$(stat -c %a "$HA_DATADIR/$f")"
done
for f in heapadmin-cert.pem heapadmin-rsa-public.pem; do
    ha_ok "$f generated" test -s "$HA_DATADIR/$f"
done
fp1=$(fingerprint)
ha_like "the certificate's SHA-256 fingerprint is logged" \
    "^([0-9A-F]{2}:){31}[0-9A-F]{2}$" "$fp1"
cp "$HA_DATADIR/heapadmin-cert.pem" "$HA_TMP/cert1.pem"
cp "$HA_DATADIR/heapadmin-rsa-private.pem" "$HA_TMP/rsa1.pem"
ha_stop || ha_bail "heapadmind stops"

ha_start -C "$HA_TMP/plain.cnf" || ha_bail "heapadmind restarts"
ha_is "restart: same certificate fingerprint" "$fp1" "$(fingerprint)"
ha_ok "restart: certificate file unchanged" \
    cmp -s "$HA_TMP/cert1.pem" "$HA_DATADIR/heapadmin-cert.pem"
ha_ok "restart: RSA key unchanged" \
    cmp -s "$HA_TMP/rsa1.pem" "$HA_DATADIR/heapadmin-rsa-private.pem"
ha_stop || ha_bail "heapadmind stops"

# require_tls: the start-up probe has to use TLS too.
tls_config "$HA_TMP/require.cnf" "require_tls = true;"
ha_mysql() {
    timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults --protocol=TCP \
        -h127.0.0.1 -P"$HA_PORT" -u"$HA_USER" -p"$HA_PASS" "${TLS[@]}" "$@"
}
ha_start -C "$HA_TMP/require.cnf" || ha_bail "heapadmind starts with require_tls"
ha_sql "SELECT 1"
ha_is "require_tls: mariadb --ssl logs in" "0:1" "$HA_RC:$HA_OUT"
HA_OUT=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
    --protocol=TCP -h127.0.0.1 -P"$HA_PORT" -uadmin -padmin --skip-ssl \
    -e "SELECT 1" 2>&1)
ha_like "require_tls: plain TCP refused with ERR 3159" \
    "^ERROR 3159 \(HY000\): Connections using insecure transport are prohibited" \
    "$HA_OUT"
HA_OUT=$(ha_mysql_sock -N -B -e "SELECT 2" 2>&1)
ha_is "require_tls: the unix socket is exempt" "2" "$HA_OUT"
ha_file_like "require_tls: the refusal is logged" "$HA_LOG" \
    "without TLS refused \(require_tls\)"
ha_stop || ha_bail "heapadmind stops"

# A configured certificate (relative to the datadir) is used as given.
mv "$HA_DATADIR/heapadmin-cert.pem" "$HA_DATADIR/my-cert.pem"
mv "$HA_DATADIR/heapadmin-key.pem" "$HA_DATADIR/my-key.pem"
tls_config "$HA_TMP/mine.cnf" \
    'ssl_cert = "my-cert.pem"; ssl_key = "my-key.pem";'
ha_start -C "$HA_TMP/mine.cnf" || ha_bail "heapadmind starts with ssl_cert"
ha_is "ssl_cert: that certificate's fingerprint" "$fp1" "$(fingerprint)"
ha_ok "ssl_cert: nothing generated" test ! -e "$HA_DATADIR/heapadmin-cert.pem"
ha_sql "SELECT 1"
ha_is "ssl_cert: mariadb --ssl logs in" "0:1" "$HA_RC:$HA_OUT"
ha_stop || ha_bail "heapadmind stops"

tls_config "$HA_TMP/missing.cnf" \
    'ssl_cert = "nope.pem"; ssl_key = "my-key.pem";'
ha_start -C "$HA_TMP/missing.cnf" >/dev/null 2>&1
ha_file_like "a missing ssl_cert stops the start with the file named" \
    "$HA_LOG" "nope\.pem: cannot load the certificate"

# have_ssl = false: CLIENT_SSL is not offered; plain logins are unchanged.
tls_config "$HA_TMP/nossl.cnf" "have_ssl = false;"
ha_start -C "$HA_TMP/nossl.cnf" || ha_bail "heapadmind starts without TLS"
ha_sql "SELECT 1"
ha_is "have_ssl = false: plain TCP logs in" "0:1" "$HA_RC:$HA_OUT"
# mariadb 10.11's --ssl without verification only prefers TLS.
HA_OUT=$(ha_mysql "${TLS[@]}" -e '\s' 2>&1)
ha_like "have_ssl = false: mariadb --ssl falls back to plain TCP" \
    "SSL:[[:space:]]+Not in use" "$HA_OUT"
ha_stop || ha_bail "heapadmind stops"
tls_config "$HA_TMP/nossl-require.cnf" "have_ssl = false; require_tls = true;"
ha_start -C "$HA_TMP/nossl-require.cnf" >/dev/null 2>&1
ha_file_like "require_tls without have_ssl is a start-up error" \
    "$HA_LOG" "require_tls needs have_ssl"

# caching_sha2_password as the default plugin, without TLS.
ha_mysql() {
    timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults --protocol=TCP \
        -h127.0.0.1 -P"$HA_PORT" --skip-ssl -u"$HA_USER" -p"$HA_PASS" "$@"
}
tls_config "$HA_TMP/sha2.cnf" \
    'default_authentication_plugin = "caching_sha2_password";'
ha_start -C "$HA_TMP/sha2.cnf" || ha_bail "heapadmind starts with caching_sha2"
ha_sql "SELECT 1"
ha_is "caching_sha2: plain TCP login (fast path)" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT 1" -ustats -pstats
ha_is "caching_sha2: the stats user" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT 1" -uadmin -pwrong
ha_like "caching_sha2: wrong password over plain TCP (RSA path): ERR 1045" \
    "^ERROR 1045 \(28000\): Access denied for user 'admin'" "$HA_ERR"
ha_sql "SELECT 1" "${TLS[@]}"
ha_is "caching_sha2: over TLS" "0:1" "$HA_RC:$HA_OUT"
ha_sql "SELECT 1" "${TLS[@]}" -uadmin -pwrong
ha_like "caching_sha2: wrong password over TLS (clear text path): ERR 1045" \
    "^ERROR 1045 \(28000\): Access denied for user 'admin'" "$HA_ERR"
HA_OUT=$(ha_mysql_sock -N -B -e "SELECT 2" 2>&1)
ha_is "caching_sha2: the unix socket" "2" "$HA_OUT"
ha_sql "SELECT 1" --default-auth=mysql_native_password
ha_is "caching_sha2: a client that starts with native is switched" \
    "0:1" "$HA_RC:$HA_OUT"
ha_stop || ha_bail "heapadmind stops"

ha_done
