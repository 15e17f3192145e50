/* SPDX-License-Identifier: MIT
 *
 * mysql_native_password (MySQL protocol: Native Authentication) and the
 * scramble the server sends in HandshakeV10 and AuthSwitchRequest.
 * The server keeps only stage2 = SHA1(SHA1(password)); a proof is checked
 * by recovering the client's SHA1(password) from it and hashing once more.
 * Intermediate hashes that would let someone log in are wiped after use.
 */
#include "admin/auth.h"

#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/rand.h>

#include "core/sha.h"
#include "core/util.h"

/* SHA1(scramble || stage2): the mask applied to SHA1(password). */
static void
native_mask(const uint8_t scramble[20], const uint8_t stage2[HA_SHA1_LEN],
            uint8_t mask[HA_SHA1_LEN])
{
    uint8_t msg[20 + HA_SHA1_LEN];

    /* Nonce first, digest second: the order differs from
     * caching_sha2_password (auth.h), so it is easy to get wrong. */
    memcpy(msg, scramble, 20);
    memcpy(msg + 20, stage2, HA_SHA1_LEN);
    ha_sha1(msg, sizeof(msg), mask);
}

int
ha_auth_scramble(uint8_t *scramble, size_t len)
{
    uint8_t pool[64];
    size_t have = 0;
    size_t used = 0;
    size_t out = 0;

    /* Rejection sampling keeps the 126 allowed values uniform: 0x00
     * would truncate the seed in Connector/J (it reads the scramble as a
     * NUL-terminated string) and '$' is excluded as MySQL's server
     * does. About 1.6% of draws are rejected. */
    while (out < len) {
        if (used == have) {
            /* The kernel's generator, not OpenSSL's: a login on a
             * unix socket never initialises OpenSSL (core/sha.h). */
            if (getrandom(pool, sizeof(pool), 0) != (ssize_t)sizeof(pool)) {
                OPENSSL_cleanse(pool, sizeof(pool));
                return -1;
            }
            have = sizeof(pool);
            used = 0;
        }
        uint8_t c = pool[used++] & 0x7F;
        if (c != 0x00 && c != '$')
            scramble[out++] = c;
    }
    OPENSSL_cleanse(pool, sizeof(pool));
    return 0;
}

void
ha_auth_native_proof(const char *password, size_t len,
                     const uint8_t scramble[20], uint8_t proof[HA_SHA1_LEN])
{
    uint8_t stage1[HA_SHA1_LEN];
    uint8_t stage2[HA_SHA1_LEN];
    uint8_t mask[HA_SHA1_LEN];

    ha_sha1(password, len, stage1);
    ha_sha1(stage1, sizeof(stage1), stage2);
    native_mask(scramble, stage2, mask);
    for (size_t i = 0; i < HA_SHA1_LEN; i++)
        proof[i] = stage1[i] ^ mask[i];
    OPENSSL_cleanse(stage1, sizeof(stage1));
}

bool
ha_auth_native_check(const struct ha_user *user, const uint8_t scramble[20],
                     const uint8_t *resp, size_t resp_len)
{
    uint8_t mask[HA_SHA1_LEN];
    uint8_t stage1[HA_SHA1_LEN];
    uint8_t candidate[HA_SHA1_LEN];
    bool ok;

    if (user == NULL || !user->has_native)
        return false;
    /* A client with no password sends nothing, or libmysqlclient a lone
     * 0x00 (both forms are in use). Such a response proves nothing, so
     * it is accepted only for an account that has no password; and a
     * passwordless account accepts nothing else. */
    if (resp_len == 0 || (resp_len == 1 && resp[0] == 0x00))
        return user->empty_password;
    if (user->empty_password || resp_len != HA_SHA1_LEN)
        return false;

    native_mask(scramble, user->stage2, mask);
    for (size_t i = 0; i < HA_SHA1_LEN; i++)
        stage1[i] = resp[i] ^ mask[i];
    ha_sha1(stage1, sizeof(stage1), candidate);
    /* Constant time, so the comparison does not reveal how many leading
     * bytes of a forged proof were right. */
    ok = ha_ct_equal(candidate, user->stage2, HA_SHA1_LEN);
    OPENSSL_cleanse(stage1, sizeof(stage1));
    return ok;
}

/* ------------------------------------------------------------------ */
/* caching_sha2_password                                                */
/* ------------------------------------------------------------------ */

/* SHA256(h2 || scramble): the mask applied to SHA256(password). */
static void
sha2_mask(const uint8_t h2[HA_SHA256_LEN], const uint8_t scramble[20],
          uint8_t mask[HA_SHA256_LEN])
{
    uint8_t msg[HA_SHA256_LEN + 20];

    memcpy(msg, h2, HA_SHA256_LEN);
    memcpy(msg + HA_SHA256_LEN, scramble, 20);
    ha_sha256(msg, sizeof(msg), mask);
}

void
ha_auth_sha2_proof(const char *password, size_t len,
                   const uint8_t scramble[20], uint8_t proof[HA_SHA256_LEN])
{
    uint8_t h1[HA_SHA256_LEN], h2[HA_SHA256_LEN], mask[HA_SHA256_LEN];

    ha_sha256(password, len, h1);
    ha_sha256(h1, sizeof(h1), h2);
    sha2_mask(h2, scramble, mask);
    for (size_t i = 0; i < HA_SHA256_LEN; i++)
        proof[i] = h1[i] ^ mask[i];
    OPENSSL_cleanse(h1, sizeof(h1));
}

bool
ha_auth_sha2_check(const struct ha_user *user, const uint8_t scramble[20],
                   const uint8_t *resp, size_t resp_len)
{
    uint8_t mask[HA_SHA256_LEN], h1[HA_SHA256_LEN], candidate[HA_SHA256_LEN];
    bool ok;

    if (user == NULL || !user->has_sha2)
        return false;
    /* Same rule as native: an empty response proves nothing, so it
     * matches only a passwordless account, which accepts nothing else. */
    if (resp_len == 0 || (resp_len == 1 && resp[0] == 0x00))
        return user->empty_password;
    if (user->empty_password || resp_len != HA_SHA256_LEN)
        return false;
    sha2_mask(user->sha2_stage2, scramble, mask);
    for (size_t i = 0; i < HA_SHA256_LEN; i++)
        h1[i] = resp[i] ^ mask[i];
    ha_sha256(h1, sizeof(h1), candidate);
    ok = ha_ct_equal(candidate, user->sha2_stage2, HA_SHA256_LEN);
    OPENSSL_cleanse(h1, sizeof(h1));
    return ok;
}

int
ha_auth_sha2_decrypt(EVP_PKEY *key, const uint8_t scramble[20],
                     const uint8_t *in, size_t in_len, uint8_t *out,
                     size_t cap, size_t *out_len)
{
    EVP_PKEY_CTX *ctx = NULL;
    size_t n = cap;
    int ret = -1;

    if (key == NULL || in_len == 0 ||
        (ctx = EVP_PKEY_CTX_new(key, NULL)) == NULL)
        goto fail;
    /* OAEP with SHA-1, OpenSSL's default and what every client uses
     * (libmysqlclient RSA_PKCS1_OAEP_PADDING). */
    if (EVP_PKEY_decrypt_init(ctx) <= 0 ||
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) <= 0 ||
        EVP_PKEY_decrypt(ctx, NULL, &n, in, in_len) <= 0 || n > cap ||
        EVP_PKEY_decrypt(ctx, out, &n, in, in_len) <= 0)
        goto fail;
    for (size_t i = 0; i < n; i++)
        out[i] ^= scramble[i % 20];
    *out_len = n;
    ret = 0;
fail:
    EVP_PKEY_CTX_free(ctx);
    return ret;
}

int
ha_auth_sha2_encrypt(EVP_PKEY *key, const uint8_t scramble[20],
                     const char *password, uint8_t *out, size_t cap)
{
    EVP_PKEY_CTX *ctx = NULL;
    uint8_t plain[256];
    size_t len = strlen(password) + 1, n = cap;
    int ret = -1;

    if (len > sizeof(plain))
        return -1;
    for (size_t i = 0; i < len; i++)
        plain[i] = (uint8_t)password[i] ^ scramble[i % 20];
    if ((ctx = EVP_PKEY_CTX_new(key, NULL)) == NULL ||
        EVP_PKEY_encrypt_init(ctx) <= 0 ||
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) <= 0 ||
        EVP_PKEY_encrypt(ctx, out, &n, plain, len) <= 0)
        goto fail;
    ret = (int)n;
fail:
    EVP_PKEY_CTX_free(ctx);
    OPENSSL_cleanse(plain, sizeof(plain));
    return ret;
}
