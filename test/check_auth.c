/* SPDX-License-Identifier: MIT
 *
 * Unit tests for admin/auth.c: mysql_native_password hashing against known
 * MySQL PASSWORD() values, proof verification (accept, and reject every
 * kind of wrong response), the scramble alphabet (the failed-login
 * throttle's tests are check_login.c's).
 */
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "check_main.h"

#include "admin/auth.h"
#include "engine/accounts.h"
#include "core/util.h"

/* Fixed 20-byte scramble, printable so a failing vector is easy to redo
 * by hand (python: sha1(scramble + sha1(sha1(pw)))). */
static const uint8_t scramble[21] = "0123456789abcdefghij";

static void
hex_decode(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

static void
make_user(struct ha_user *u, const char *name, const char *password)
{
    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "%s", name);
    u->role = HA_ROLE_ADMIN;
    u->empty_password = password[0] == '\0';
    ha_digest_native_stage2(password, strlen(password), u->stage2);
    u->has_native = true;
}

/* ------------------------------------------------------------------ */
/* core                                                                 */
/* ------------------------------------------------------------------ */

/* stage2 is what MySQL's PASSWORD() shows after the '*'. */
static const struct {
    const char *password;
    const char *stage2_hex;
} stage2_vectors[] = {
    {"admin", "4acfe3202a5ff5cf467898fc58aab1d615029441"},
    {"password", "2470c0c06dee42fd1618bb99005adca2ec9d1e19"},
    {"stats", "2707d57595f6cbad52fa17ad4b08c85fa7185bac"},
    {"", "be1bdec0aa74b4dcb079943e70528096cca985f8"},
};

START_TEST(test_auth_stage2_vectors)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(stage2_vectors); i++) {
        uint8_t want[HA_SHA1_LEN];
        uint8_t got[HA_SHA1_LEN];
        const char *pw = stage2_vectors[i].password;

        hex_decode(stage2_vectors[i].stage2_hex, want, sizeof(want));
        ha_digest_native_stage2(pw, strlen(pw), got);
        ck_assert_msg(memcmp(got, want, sizeof(want)) == 0,
                      "case %zu: stage2 of \"%s\" is not %s", i, pw,
                      stage2_vectors[i].stage2_hex);
    }
}
END_TEST

START_TEST(test_auth_proof_vector)
{
    /* Computed independently: the proof mixes scramble then stage2. */
    uint8_t want[HA_SHA1_LEN];
    uint8_t proof[HA_SHA1_LEN];

    hex_decode("5df077d00eb689b6ec54717b440186cba2104f41", want, sizeof(want));
    ha_auth_native_proof("admin", 5, scramble, proof);
    ck_assert_mem_eq(proof, want, sizeof(want));
}
END_TEST

START_TEST(test_auth_check_accepts_proof)
{
    struct ha_user u;
    uint8_t proof[HA_SHA1_LEN];

    make_user(&u, "admin", "admin");
    ha_auth_native_proof("admin", 5, scramble, proof);
    ck_assert(ha_auth_native_check(&u, scramble, proof, sizeof(proof)));
}
END_TEST

START_TEST(test_auth_check_empty_account)
{
    static const uint8_t nul = 0x00;
    struct ha_user u;

    make_user(&u, "nopw", "");
    ck_assert(u.empty_password);
    ck_assert(ha_auth_native_check(&u, scramble, NULL, 0));
    ck_assert(ha_auth_native_check(&u, scramble, &nul, 1));
}
END_TEST

START_TEST(test_auth_scramble_differs)
{
    uint8_t a[HA_SHA1_LEN];
    uint8_t b[HA_SHA1_LEN];

    ck_assert_int_eq(ha_auth_scramble(a, sizeof(a)), 0);
    ck_assert_int_eq(ha_auth_scramble(b, sizeof(b)), 0);
    ck_assert_msg(memcmp(a, b, sizeof(a)) != 0, "two scrambles are identical");
}
END_TEST

/* ------------------------------------------------------------------ */
/* limits                                                               */
/* ------------------------------------------------------------------ */

START_TEST(test_auth_scramble_alphabet)
{
    /* 10000 draws of 20 bytes: never 0x00 (truncates Connector/J's seed),
     * never '$', never above 127, and every one of the 126 allowed values
     * shows up (a mapping bug that loses values would show here). */
    unsigned seen[128] = {0};
    uint8_t s[20];

    for (int draw = 0; draw < 10000; draw++) {
        ck_assert_int_eq(ha_auth_scramble(s, sizeof(s)), 0);
        for (size_t i = 0; i < sizeof(s); i++) {
            ck_assert_msg(s[i] != 0x00 && s[i] != '$' && s[i] < 128,
                          "draw %d byte %zu: got 0x%02x", draw, i, s[i]);
            seen[s[i]]++;
        }
    }
    for (unsigned c = 1; c < 128; c++) {
        if (c == '$')
            continue;
        ck_assert_msg(seen[c] > 0, "value 0x%02x never drawn", c);
    }
}
END_TEST

START_TEST(test_auth_scramble_zero_len)
{
    ck_assert_int_eq(ha_auth_scramble(NULL, 0), 0);
}
END_TEST

START_TEST(test_auth_check_wrong_lengths)
{
    /* A real proof cut short or padded is still wrong. */
    struct ha_user u;
    uint8_t proof[HA_SHA1_LEN + 1];
    const size_t lens[] = {1, 19, 21};

    make_user(&u, "admin", "admin");
    ha_auth_native_proof("admin", 5, scramble, proof);
    proof[HA_SHA1_LEN] = 0x00;
    for (size_t i = 0; i < HA_ARRAY_SIZE(lens); i++)
        ck_assert_msg(!ha_auth_native_check(&u, scramble, proof, lens[i]),
                      "case %zu: %zu-byte response accepted", i, lens[i]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* errors                                                               */
/* ------------------------------------------------------------------ */

START_TEST(test_auth_check_flipped_bits)
{
    struct ha_user u;
    uint8_t proof[HA_SHA1_LEN];

    make_user(&u, "admin", "admin");
    ha_auth_native_proof("admin", 5, scramble, proof);
    for (size_t bit = 0; bit < 8 * sizeof(proof); bit++) {
        proof[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        ck_assert_msg(!ha_auth_native_check(&u, scramble, proof, sizeof(proof)),
                      "proof with bit %zu flipped accepted", bit);
        proof[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    ck_assert(ha_auth_native_check(&u, scramble, proof, sizeof(proof)));
}
END_TEST

START_TEST(test_auth_check_empty_response_needs_empty_account)
{
    static const uint8_t nul = 0x00;
    struct ha_user u;

    make_user(&u, "admin", "admin");
    ck_assert(!ha_auth_native_check(&u, scramble, NULL, 0));
    ck_assert(!ha_auth_native_check(&u, scramble, &nul, 1));
}
END_TEST

START_TEST(test_auth_check_empty_account_rejects_proof)
{
    /* A passwordless account accepts only "no password": even the proof
     * of "" is a client claiming to know a password. */
    struct ha_user u;
    uint8_t proof[HA_SHA1_LEN];

    make_user(&u, "nopw", "");
    ha_auth_native_proof("", 0, scramble, proof);
    ck_assert(!ha_auth_native_check(&u, scramble, proof, sizeof(proof)));
    ha_auth_native_proof("x", 1, scramble, proof);
    ck_assert(!ha_auth_native_check(&u, scramble, proof, sizeof(proof)));
}
END_TEST

START_TEST(test_auth_check_wrong_password_or_scramble)
{
    static const uint8_t other[21] = "jihgfedcba9876543210";
    struct ha_user u;
    uint8_t proof[HA_SHA1_LEN];

    make_user(&u, "admin", "admin");
    ha_auth_native_proof("Admin", 5, scramble, proof);
    ck_assert(!ha_auth_native_check(&u, scramble, proof, sizeof(proof)));
    /* A proof replayed against another connection's scramble. */
    ha_auth_native_proof("admin", 5, other, proof);
    ck_assert(!ha_auth_native_check(&u, scramble, proof, sizeof(proof)));
    ck_assert(ha_auth_native_check(&u, other, proof, sizeof(proof)));
    ck_assert(!ha_auth_native_check(NULL, scramble, proof, sizeof(proof)));
}
END_TEST

/* ------------------------------------------------------------------ */
/* caching_sha2_password                                                */
/* ------------------------------------------------------------------ */

/* Computed with python3's hashlib: h2 = sha256(sha256(pw)); proof =
 * sha256(pw) XOR sha256(h2 + scramble). */
static const struct {
    const char *password;
    const char *h2_hex;
    const char *proof_hex;
} sha2_vectors[] = {
    {"admin",
     "dd474e450473186ec733689b549a94a54a96f276dba76b29138c57b6afe15bf7",
     "19296ed43d90043aa834a1c42382dc45fb303168790c17fd84ce286f4ca7b579"},
    {"secret",
     "3881219d087dd9c634373fd33dfa33a2cb6bfc6c520b64b8bb60ef2ceb534ae7",
     "7e4adda2f2d5ef09b4147518becb0cee2939376203650a8c2bb2815959364bd0"},
    {"",
     "5df6e0e2761359d30a8275058e299fcc0381534545f55cf43e41983f5d4c9456",
     "0f33cfab80ecb078d1e4f630bd2866241d6d0ac8f10b5982a3ebdba2b36d42a3"},
};

static void
make_sha2_user(struct ha_user *u, const char *password)
{
    make_user(u, "u", password);
    ha_digest_sha2_stage2(password, strlen(password), u->sha2_stage2);
    u->has_sha2 = true;
}

START_TEST(test_auth_sha2_vectors)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(sha2_vectors); i++) {
        const char *pw = sha2_vectors[i].password;
        uint8_t want[HA_SHA256_LEN], got[HA_SHA256_LEN];

        hex_decode(sha2_vectors[i].h2_hex, want, sizeof(want));
        ha_digest_sha2_stage2(pw, strlen(pw), got);
        ck_assert_msg(memcmp(got, want, sizeof(want)) == 0,
                      "case %zu: H2 of \"%s\" is not %s", i, pw,
                      sha2_vectors[i].h2_hex);
        hex_decode(sha2_vectors[i].proof_hex, want, sizeof(want));
        ha_auth_sha2_proof(pw, strlen(pw), scramble, got);
        ck_assert_msg(memcmp(got, want, sizeof(want)) == 0,
                      "case %zu: proof for \"%s\" is not %s", i, pw,
                      sha2_vectors[i].proof_hex);
    }
}
END_TEST

START_TEST(test_auth_sha2_check_accepts)
{
    struct ha_user u;
    uint8_t proof[HA_SHA256_LEN];

    make_sha2_user(&u, "admin");
    hex_decode(sha2_vectors[0].proof_hex, proof, sizeof(proof));
    ck_assert(ha_auth_sha2_check(&u, scramble, proof, sizeof(proof)));
}
END_TEST

START_TEST(test_auth_sha2_check_flipped_bits)
{
    struct ha_user u;
    uint8_t proof[HA_SHA256_LEN];

    make_sha2_user(&u, "admin");
    for (size_t bit = 0; bit < 8 * sizeof(proof); bit++) {
        hex_decode(sha2_vectors[0].proof_hex, proof, sizeof(proof));
        proof[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        ck_assert_msg(!ha_auth_sha2_check(&u, scramble, proof, sizeof(proof)),
                      "proof with bit %zu flipped accepted", bit);
    }
}
END_TEST

START_TEST(test_auth_sha2_check_wrong_lengths)
{
    struct ha_user u;
    uint8_t proof[HA_SHA256_LEN + 1];

    make_sha2_user(&u, "admin");
    hex_decode(sha2_vectors[0].proof_hex, proof, HA_SHA256_LEN);
    proof[HA_SHA256_LEN] = 0;
    ck_assert(!ha_auth_sha2_check(&u, scramble, proof, HA_SHA256_LEN - 1));
    ck_assert(!ha_auth_sha2_check(&u, scramble, proof, HA_SHA256_LEN + 1));
    ck_assert(!ha_auth_sha2_check(&u, scramble, proof, HA_SHA1_LEN));
    ck_assert(!ha_auth_sha2_check(&u, scramble, proof, 0));
    /* A native-only account has no SHA-256 digest to check against. */
    u.has_sha2 = false;
    ck_assert(!ha_auth_sha2_check(&u, scramble, proof, HA_SHA256_LEN));
    ck_assert(!ha_auth_sha2_check(NULL, scramble, proof, HA_SHA256_LEN));
}
END_TEST

START_TEST(test_auth_sha2_check_empty_password)
{
    struct ha_user u;
    uint8_t proof[HA_SHA256_LEN];
    const uint8_t nul = 0;

    make_sha2_user(&u, "");
    ck_assert(ha_auth_sha2_check(&u, scramble, NULL, 0));
    ck_assert(ha_auth_sha2_check(&u, scramble, &nul, 1));
    /* Even the proof of "" is refused: an empty account takes only an
     * empty response, as with native. */
    hex_decode(sha2_vectors[2].proof_hex, proof, sizeof(proof));
    ck_assert(!ha_auth_sha2_check(&u, scramble, proof, sizeof(proof)));
    make_sha2_user(&u, "admin");
    ck_assert(!ha_auth_sha2_check(&u, scramble, NULL, 0));
}
END_TEST

START_TEST(test_auth_check_clear)
{
    struct ha_user u;
    uint8_t native[HA_SHA1_LEN];

    make_sha2_user(&u, "secret");
    ck_assert(ha_accounts_check_clear(&u, (const uint8_t *)"secret", 6));
    ck_assert(ha_accounts_check_clear(&u, (const uint8_t *)"secret", 7));
    ck_assert(!ha_accounts_check_clear(&u, (const uint8_t *)"secreT", 7));
    ck_assert(!ha_accounts_check_clear(&u, (const uint8_t *)"", 1));
    /* Without a SHA-256 digest the native one is used. */
    u.has_sha2 = false;
    ck_assert(ha_accounts_check_clear(&u, (const uint8_t *)"secret", 7));
    ck_assert(!ha_accounts_check_clear(&u, (const uint8_t *)"secre", 5));
    /* Neither digest: nothing matches. */
    u.has_native = false;
    ck_assert(!ha_accounts_check_clear(&u, (const uint8_t *)"secret", 7));
    /* A SHA-256-only account has no native digest to check against. */
    make_sha2_user(&u, "secret");
    u.has_native = false;
    ck_assert(ha_accounts_check_clear(&u, (const uint8_t *)"secret", 7));
    ha_auth_native_proof("secret", 6, scramble, native);
    ck_assert(!ha_auth_native_check(&u, scramble, native, sizeof(native)));
    make_sha2_user(&u, "");
    ck_assert(ha_accounts_check_clear(&u, (const uint8_t *)"", 1));
    ck_assert(!ha_accounts_check_clear(&u, (const uint8_t *)"x", 2));
}
END_TEST

START_TEST(test_auth_sha2_rsa_round_trip)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, NULL);
    EVP_PKEY *key = NULL;
    uint8_t blob[256], out[256];
    size_t out_len = 0;
    int n;

    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(EVP_PKEY_keygen_init(ctx), 1);
    ck_assert_int_eq(EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 2048), 1);
    ck_assert_int_eq(EVP_PKEY_keygen(ctx, &key), 1);
    n = ha_auth_sha2_encrypt(key, scramble, "secret", blob, sizeof(blob));
    ck_assert_int_eq(n, 256);
    ck_assert_int_eq(ha_auth_sha2_decrypt(key, scramble, blob, (size_t)n, out,
                                          sizeof(out), &out_len),
                     0);
    ck_assert_uint_eq(out_len, 7);
    ck_assert_mem_eq(out, "secret", 7);
    /* A tampered or truncated blob does not decrypt. */
    blob[100] ^= 1;
    ck_assert_int_eq(ha_auth_sha2_decrypt(key, scramble, blob, (size_t)n, out,
                                          sizeof(out), &out_len),
                     -1);
    ck_assert_int_eq(ha_auth_sha2_decrypt(key, scramble, blob, 10, out,
                                          sizeof(out), &out_len),
                     -1);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(ctx);
}
END_TEST

static Suite *
auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_test(tc, test_auth_stage2_vectors);
    tcase_add_test(tc, test_auth_proof_vector);
    tcase_add_test(tc, test_auth_check_accepts_proof);
    tcase_add_test(tc, test_auth_check_empty_account);
    tcase_add_test(tc, test_auth_scramble_differs);
    tcase_add_test(tc, test_auth_sha2_vectors);
    tcase_add_test(tc, test_auth_sha2_check_accepts);
    tcase_add_test(tc, test_auth_check_clear);
    tcase_add_test(tc, test_auth_sha2_rsa_round_trip);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_test(tc, test_auth_scramble_alphabet);
    tcase_add_test(tc, test_auth_scramble_zero_len);
    tcase_add_test(tc, test_auth_check_wrong_lengths);
    tcase_add_test(tc, test_auth_sha2_check_wrong_lengths);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_auth_check_flipped_bits);
    tcase_add_test(tc, test_auth_check_empty_response_needs_empty_account);
    tcase_add_test(tc, test_auth_check_empty_account_rejects_proof);
    tcase_add_test(tc, test_auth_check_wrong_password_or_scramble);
    tcase_add_test(tc, test_auth_sha2_check_flipped_bits);
    tcase_add_test(tc, test_auth_sha2_check_empty_password);
    suite_add_tcase(s, tc);

    return s;
}

HA_CHECK_MAIN(auth_suite)
