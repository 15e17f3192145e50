/* SPDX-License-Identifier: MIT
 *
 * TLS and caching_sha2_password on a live server over loopback, driven
 * packet by packet with OpenSSL as the client: SSLRequest at seq 1, the
 * TLS handshake (also with the ClientHello in the same segment as the
 * SSLRequest), HandshakeResponse41 at seq 2 and OK at seq 3;
 * require_tls refusing a plain login; the caching_sha2 fast path
 * (0x01 0x03, then OK), the AuthSwitchRequest from native to
 * caching_sha2, full authentication in clear over TLS and with the RSA
 * public key on plain TCP; COM_CHANGE_USER on the fast path.
 *
 * The key material is generated once per run in a private datadir by an
 * unchecked fixture, so each test only loads it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "admin/auth.h"
#include "admin/proto.h"
#include "check_main.h"
#include "engine/config.h"
#include "test/support/client.h"
#include "test/support/loopback.h"

/* ------------------------------------------------------------------ */
/* Fixture: a server with TLS on 127.0.0.1, port chosen by the kernel   */
/* ------------------------------------------------------------------ */

static char datadir[] = "/tmp/check_tls.XXXXXX";
static struct ha_config cfg;
static struct lb_server lb;
static int port;
static int max_output; /* admin_variables.max_output_buffer, 0: default */

static void
make_datadir(void)
{
    strcpy(datadir, "/tmp/check_tls.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(datadir));
}

static void
remove_datadir(void)
{
    static const char *const files[] = {
        "heapadmin-cert.pem", "heapadmin-key.pem",
        "heapadmin-rsa-private.pem", "heapadmin-rsa-public.pem",
    };
    char path[256];

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", datadir, files[i]);
        unlink(path);
    }
    rmdir(datadir);
}

/* Starts the server with the given settings (the tests' own fixture). */
static void
start(bool require_tls, const char *plugin)
{
    char err[512];

    lb_config(&cfg);
    cfg.require_tls = require_tls;
    if (max_output > 0)
        cfg.max_output_buffer = max_output;
    /* Accounts given as one hash only (user:sha2:<hex> and
     * user:*<native hex>, the config's credential forms). */
    ck_assert_msg(ha_credentials_parse(
                      "sha2only:sha2:3423ed1fe54cb8f9172be25e7144eea4e467593d"
                      "b1bfe9d83af905b53b833015;"
                      "nativeonly:*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19",
                      HA_ROLE_ADMIN, &cfg.users, &cfg.n_users, err,
                      sizeof(err)) == 0,
                  "credentials: %s", err);
    snprintf(cfg.default_auth_plugin, sizeof(cfg.default_auth_plugin), "%s",
             plugin);
    lb_start(&lb, &cfg, datadir, true);
    port = lb.port;
}

static void
teardown(void)
{
    if (!lb.running)
        return;
    lb_stop(&lb);
    ha_config_free(&cfg);
}

/* ------------------------------------------------------------------ */
/* The client (test/support/client.h), plain or over TLS                */
/* ------------------------------------------------------------------ */

/* Connects and reads HandshakeV10. */
static struct mc_conn
greet(void)
{
    struct mc_conn c;

    mc_must_greet(&c, port);
    return c;
}

/* SSLRequest at seq 1, then the TLS handshake on the socket. */
static void
start_tls(struct mc_conn *c)
{
    ck_assert_msg(c->caps & HA_CLIENT_SSL, "CLIENT_SSL not offered");
    ck_assert_msg(mc_start_tls(c, MC_CLIENT_CAPS) == 0,
                  "TLS handshake failed");
}

/* HandshakeResponse41 with auth bytes for plugin at seq. */
static void
send_response(struct mc_conn *c, uint8_t seq, const char *user,
              const uint8_t *auth, size_t auth_len, const char *plugin)
{
    uint8_t b[512];
    size_t n = mc_response41(
        b, sizeof(b), MC_CLIENT_CAPS | (c->ssl != NULL ? HA_CLIENT_SSL : 0),
        user, auth, auth_len, plugin);

    ck_assert_uint_gt(n, 0);
    mc_must_write(c, seq, b, n);
}

static void
send_native_login(struct mc_conn *c, uint8_t seq, const char *password)
{
    uint8_t proof[20];

    ha_auth_native_proof(password, strlen(password), c->scramble, proof);
    send_response(c, seq, "admin", proof, 20, HA_AUTH_NATIVE_PLUGIN);
}

/* AuthMoreData: 0x01, then what (0x03 fast auth OK, 0x04 full auth). */
static void
expect_more(struct mc_conn *c, uint8_t seq, uint8_t what)
{
    struct mc_pkt p;

    mc_expect(c, &p, seq);
    ck_assert_uint_eq(p.len, 2);
    ck_assert_int_eq(p.data[0], 0x01);
    ck_assert_int_eq(p.data[1], what);
}

/* SELECT 1 must come back as a result set (seq 1 = column count). */
static void
query_works(struct mc_conn *c)
{
    const char q[] = "\x03SELECT 1";
    struct mc_pkt p;

    mc_must_write(c, 0, q, sizeof(q) - 1);
    mc_expect(c, &p, 1);
    ck_assert_int_eq(p.data[0], 1);
}

/* ------------------------------------------------------------------ */
/* TLS                                                                  */
/* ------------------------------------------------------------------ */

START_TEST(test_tls_handshake)
{
    struct mc_conn c;

    start(false, HA_AUTH_NATIVE_PLUGIN);
    c = greet();
    start_tls(&c);
    ck_assert_ptr_nonnull(SSL_get_current_cipher(c.ssl));
    ck_assert_int_ge(SSL_version(c.ssl), TLS1_2_VERSION);
    send_native_login(&c, 2, "admin");
    mc_expect_ok(&c, 3);
    query_works(&c);
    mc_close(&c);
}
END_TEST

/* The ClientHello in the same segment as the SSLRequest: the server's
 * read buffer already holds it when TLS starts. */
START_TEST(test_tls_clienthello_coalesced)
{
    struct mc_conn c;
    uint8_t b[4096], req[32];
    BIO *rb, *wb;
    int n;

    start(false, HA_AUTH_NATIVE_PLUGIN);
    c = greet();
    ck_assert_int_eq(mc_ssl_new(&c), 0);
    rb = BIO_new(BIO_s_mem());
    wb = BIO_new(BIO_s_mem());
    SSL_set_bio(c.ssl, rb, wb);
    ck_assert_int_eq(SSL_connect(c.ssl), -1); /* wants the ServerHello */
    mc_ssl_request(req, MC_CLIENT_CAPS);
    b[0] = 32;
    b[1] = b[2] = 0;
    b[3] = 1;
    memcpy(b + 4, req, 32);
    n = BIO_read(wb, b + 36, (int)sizeof(b) - 36);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(send(c.fd, b, 36 + (size_t)n, MSG_NOSIGNAL), 36 + n);
    /* The rest of the handshake on the socket. */
    SSL_set_fd(c.ssl, c.fd);
    ck_assert_msg(SSL_connect(c.ssl) == 1, "TLS handshake failed");
    send_native_login(&c, 2, "admin");
    mc_expect_ok(&c, 3);
    query_works(&c);
    mc_close(&c);
}
END_TEST

START_TEST(test_tls_require_tls)
{
    struct mc_conn c;

    start(true, HA_AUTH_NATIVE_PLUGIN);
    c = greet();
    send_native_login(&c, 1, "admin");
    mc_expect_err(&c, 2, 3159);
    mc_close(&c);
    c = greet();
    start_tls(&c);
    send_native_login(&c, 2, "admin");
    mc_expect_ok(&c, 3);
    mc_close(&c);
}
END_TEST

START_TEST(test_tls_wrong_password)
{
    struct mc_conn c;

    start(false, HA_AUTH_NATIVE_PLUGIN);
    c = greet();
    start_tls(&c);
    send_native_login(&c, 2, "nope");
    /* The ERR must get through the TLS layer before the close. */
    mc_expect_err(&c, 3, 1045);
    mc_close(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* caching_sha2_password                                                */
/* ------------------------------------------------------------------ */

START_TEST(test_sha2_fast_path)
{
    struct mc_conn c;
    uint8_t proof[32];

    start(false, HA_AUTH_SHA2_PLUGIN);
    c = greet();
    ck_assert_str_eq(c.plugin, HA_AUTH_SHA2_PLUGIN);
    ha_auth_sha2_proof("admin", 5, c.scramble, proof);
    send_response(&c, 1, "admin", proof, 32, HA_AUTH_SHA2_PLUGIN);
    expect_more(&c, 2, 0x03);
    mc_expect_ok(&c, 3);
    query_works(&c);
    mc_close(&c);
}
END_TEST

/* With native advertised, a valid caching_sha2 answer (libmysqlclient
 * <= 8.0.25, MySQL 9 clients) is taken as it is. */
START_TEST(test_sha2_unsolicited_answer)
{
    struct mc_conn c;
    uint8_t proof[32];

    start(false, HA_AUTH_NATIVE_PLUGIN);
    c = greet();
    ck_assert_str_eq(c.plugin, HA_AUTH_NATIVE_PLUGIN);
    ha_auth_sha2_proof("admin", 5, c.scramble, proof);
    send_response(&c, 1, "admin", proof, 32, HA_AUTH_SHA2_PLUGIN);
    expect_more(&c, 2, 0x03);
    mc_expect_ok(&c, 3);
    mc_close(&c);
}
END_TEST

START_TEST(test_sha2_switch_from_native)
{
    struct mc_conn c;
    struct mc_pkt p;
    uint8_t proof[32], fresh[20];

    start(false, HA_AUTH_SHA2_PLUGIN);
    c = greet();
    /* libmariadb with --default-auth=mysql_native_password: empty. */
    send_response(&c, 1, "admin", NULL, 0, HA_AUTH_NATIVE_PLUGIN);
    mc_expect(&c, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFE);
    ck_assert_str_eq((char *)p.data + 1, HA_AUTH_SHA2_PLUGIN);
    ck_assert_uint_eq(p.len, 1 + strlen(HA_AUTH_SHA2_PLUGIN) + 1 + 21);
    memcpy(fresh, p.data + 1 + strlen(HA_AUTH_SHA2_PLUGIN) + 1, 20);
    ha_auth_sha2_proof("admin", 5, fresh, proof);
    mc_must_write(&c, 3, proof, 32);
    expect_more(&c, 4, 0x03);
    mc_expect_ok(&c, 5);
    mc_close(&c);
}
END_TEST

START_TEST(test_sha2_wrong_password_full_auth_plain)
{
    struct mc_conn c;
    struct mc_pkt p;
    uint8_t proof[32], blob[256];
    const uint8_t key_request = 0x02;
    EVP_PKEY *key;
    BIO *mem;
    int n;

    start(false, HA_AUTH_SHA2_PLUGIN);
    c = greet();
    ha_auth_sha2_proof("wrong", 5, c.scramble, proof);
    send_response(&c, 1, "admin", proof, 32, HA_AUTH_SHA2_PLUGIN);
    expect_more(&c, 2, 0x04);
    /* Plain TCP: ask for the public key, encrypt the password with it. */
    mc_must_write(&c, 3, &key_request, 1);
    mc_expect(&c, &p, 4);
    ck_assert_int_eq(p.data[0], 0x01);
    ck_assert(memmem(p.data, p.len, "-----BEGIN PUBLIC KEY-----", 26));
    mem = BIO_new_mem_buf(p.data + 1, (int)p.len - 1);
    key = PEM_read_bio_PUBKEY(mem, NULL, NULL, NULL);
    BIO_free(mem);
    ck_assert_ptr_nonnull(key);
    n = ha_auth_sha2_encrypt(key, c.scramble, "admin", blob, sizeof(blob));
    ck_assert_int_eq(n, 256);
    mc_must_write(&c, 5, blob, (size_t)n);
    mc_expect_ok(&c, 6);
    mc_close(&c);

    /* The same with the wrong password in the blob: ERR 1045. */
    c = greet();
    send_response(&c, 1, "admin", proof, 32, HA_AUTH_SHA2_PLUGIN);
    expect_more(&c, 2, 0x04);
    n = ha_auth_sha2_encrypt(key, c.scramble, "wrong", blob, sizeof(blob));
    mc_must_write(&c, 3, blob, (size_t)n);
    mc_expect_err(&c, 4, 1045);
    mc_close(&c);
    EVP_PKEY_free(key);
}
END_TEST

START_TEST(test_sha2_full_auth_over_tls)
{
    struct mc_conn c;
    uint8_t junk[32];

    start(false, HA_AUTH_SHA2_PLUGIN);
    c = greet();
    start_tls(&c);
    memset(junk, 0x5a, sizeof(junk));
    send_response(&c, 2, "admin", junk, 32, HA_AUTH_SHA2_PLUGIN);
    expect_more(&c, 3, 0x04);
    mc_must_write(&c, 4, "admin", 6); /* password and its NUL, in clear */
    mc_expect_ok(&c, 5);
    mc_close(&c);

    c = greet();
    start_tls(&c);
    send_response(&c, 2, "admin", junk, 32, HA_AUTH_SHA2_PLUGIN);
    expect_more(&c, 3, 0x04);
    mc_must_write(&c, 4, "admiN", 6);
    mc_expect_err(&c, 5, 1045);
    mc_close(&c);
}
END_TEST

START_TEST(test_sha2_change_user)
{
    struct mc_conn c;
    uint8_t proof[32], b[256];
    size_t n = 0;

    start(false, HA_AUTH_SHA2_PLUGIN);
    c = greet();
    ha_auth_sha2_proof("admin", 5, c.scramble, proof);
    send_response(&c, 1, "admin", proof, 32, HA_AUTH_SHA2_PLUGIN);
    expect_more(&c, 2, 0x03);
    mc_expect_ok(&c, 3);
    /* COM_CHANGE_USER: user, auth (1-byte length), db, charset, plugin;
     * the proof uses the connection's scramble. */
    ha_auth_sha2_proof("stats", 5, c.scramble, proof);
    b[n++] = HA_COM_CHANGE_USER;
    strcpy((char *)b + n, "stats");
    n += 6;
    b[n++] = 32;
    memcpy(b + n, proof, 32);
    n += 32;
    b[n++] = 0; /* no schema */
    mc_put_le(b + n, 45, 2);
    n += 2;
    strcpy((char *)b + n, HA_AUTH_SHA2_PLUGIN);
    n += strlen(HA_AUTH_SHA2_PLUGIN) + 1;
    mc_must_write(&c, 0, b, n);
    expect_more(&c, 1, 0x03);
    mc_expect_ok(&c, 2);
    query_works(&c);
    mc_close(&c);
}
END_TEST

/* An account with only a SHA-256 digest, native advertised: the native
 * answer cannot be checked, so the client is switched to caching_sha2;
 * and the other way round for a native-only account. */
START_TEST(test_sha2_single_digest_accounts)
{
    struct mc_conn c;
    struct mc_pkt p;
    uint8_t proof[32], native[20], fresh[20];
    size_t name_len = strlen(HA_AUTH_SHA2_PLUGIN);

    start(false, HA_AUTH_NATIVE_PLUGIN);
    c = greet();
    ha_auth_native_proof("pw2", 3, c.scramble, native);
    send_response(&c, 1, "sha2only", native, 20, HA_AUTH_NATIVE_PLUGIN);
    mc_expect(&c, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFE);
    ck_assert_str_eq((char *)p.data + 1, HA_AUTH_SHA2_PLUGIN);
    memcpy(fresh, p.data + 1 + name_len + 1, 20);
    ha_auth_sha2_proof("pw2", 3, fresh, proof);
    mc_must_write(&c, 3, proof, 32);
    expect_more(&c, 4, 0x03);
    mc_expect_ok(&c, 5);
    mc_close(&c);
    teardown();

    start(false, HA_AUTH_SHA2_PLUGIN);
    c = greet();
    ha_auth_sha2_proof("password", 8, c.scramble, proof);
    send_response(&c, 1, "nativeonly", proof, 32, HA_AUTH_SHA2_PLUGIN);
    mc_expect(&c, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFE);
    ck_assert_str_eq((char *)p.data + 1, HA_AUTH_NATIVE_PLUGIN);
    memcpy(fresh, p.data + 1 + strlen(HA_AUTH_NATIVE_PLUGIN) + 1, 20);
    ha_auth_native_proof("password", 8, fresh, native);
    mc_must_write(&c, 3, native, 20);
    mc_expect_ok(&c, 4);
    mc_close(&c);
}
END_TEST

/* Reads one packet of any size, keeping only its first byte. */
static uint8_t
skip_pkt(struct mc_conn *c)
{
    static uint8_t big[1 << 17];
    uint8_t h[4];
    size_t len;

    ck_assert_int_eq(mc_read_full(c, h, 4), 0);
    len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    ck_assert_uint_le(len, sizeof(big));
    ck_assert_int_eq(mc_read_full(c, big, len), 0);
    return big[0];
}

/* Under TLS the filter hands its output straight to the socket's
 * bufferevent: the max_output_buffer bound must count that too, and
 * reading must resume once the client drains it. 100 pipelined queries of
 * 100 kB each, unread for a while, then every reply must arrive. */
START_TEST(test_tls_output_bound_resumes)
{
    const char q[] = "\x03SELECT randomblob(100000)";
    struct mc_conn c;

    max_output = 64 * 1024;
    start(false, HA_AUTH_NATIVE_PLUGIN);
    c = greet();
    start_tls(&c);
    send_native_login(&c, 2, "admin");
    mc_expect_ok(&c, 3);
    for (int i = 0; i < 100; i++)
        mc_must_write(&c, 0, q, sizeof(q) - 1);
    usleep(300 * 1000);
    for (int i = 0; i < 100; i++) {
        int eofs = 0;

        ck_assert_int_eq(skip_pkt(&c), 1); /* column count */
        while (eofs < 2)
            if (skip_pkt(&c) == 0xFE)
                eofs++;
    }
    query_works(&c);
    mc_close(&c);
}
END_TEST

static Suite *
tls_suite(void)
{
    Suite *s = suite_create("tls");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_unchecked_fixture(tc, make_datadir, remove_datadir);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_tls_handshake);
    tcase_add_test(tc, test_tls_clienthello_coalesced);
    tcase_add_test(tc, test_sha2_fast_path);
    tcase_add_test(tc, test_sha2_unsolicited_answer);
    tcase_add_test(tc, test_sha2_switch_from_native);
    tcase_add_test(tc, test_sha2_change_user);
    tcase_add_test(tc, test_sha2_single_digest_accounts);
    tcase_add_test(tc, test_tls_output_bound_resumes);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_unchecked_fixture(tc, make_datadir, remove_datadir);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_tls_require_tls);
    tcase_add_test(tc, test_tls_wrong_password);
    tcase_add_test(tc, test_sha2_wrong_password_full_auth_plain);
    tcase_add_test(tc, test_sha2_full_auth_over_tls);
    suite_add_tcase(s, tc);

    return s;
}

HA_CHECK_MAIN(tls_suite)
