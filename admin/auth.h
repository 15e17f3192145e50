/* SPDX-License-Identifier: MIT
 *
 * Authentication: scramble generation from the OS CSPRNG (OpenSSL
 * RAND_bytes) and mysql_native_password hashing and proof verification.
 *
 * mysql_native_password (MySQL protocol: Native Authentication):
 *   stage2 = SHA1(SHA1(password))               (what the server stores)
 *   proof  = SHA1(password) XOR SHA1(scramble || stage2)   (client sends)
 *   accept iff SHA1(proof XOR SHA1(scramble || stage2)) == stage2
 */
#ifndef HA_AUTH_H
#define HA_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "engine/credentials.h"

#define HA_AUTH_NATIVE_PLUGIN "mysql_native_password"
#define HA_AUTH_SHA2_PLUGIN "caching_sha2_password"

/* caching_sha2_password AuthMoreData bytes (after the 0x01 marker) and
 * the client's public-key request (MySQL protocol: Caching SHA-2). */
#define HA_AUTH_SHA2_FAST_OK 0x03      /* fast_auth_success */
#define HA_AUTH_SHA2_FULL 0x04         /* perform_full_authentication */
#define HA_AUTH_SHA2_KEY_REQUEST 0x02  /* client asks for the RSA key */

/* Fills scramble with len bytes from the OS CSPRNG, each in 1..127 and
 * never '$' (MySQL does the same; Connector/J reads the seed as a
 * NUL-terminated string). Returns 0, or -1 if the CSPRNG failed. */
int ha_auth_scramble(uint8_t *scramble, size_t len);

/* The client side of mysql_native_password, for tests and the benchmark:
 * proof = SHA1(pw) XOR SHA1(scramble || SHA1(SHA1(pw))). */
void ha_auth_native_proof(const char *password, size_t len,
                          const uint8_t scramble[20],
                          uint8_t proof[HA_SHA1_LEN]);

/* Verifies a mysql_native_password response against user (false if it
 * has no native digest) in constant time. An empty response (or a single 0x00, which libmysqlclient may
 * send) matches only an account with an empty password. */
bool ha_auth_native_check(const struct ha_user *user,
                          const uint8_t scramble[20], const uint8_t *resp,
                          size_t resp_len);

/* caching_sha2_password (MySQL protocol: Caching SHA-2 Pluggable
 * Authentication):
 *   H2    = SHA256(SHA256(password))              (what the server keeps)
 *   proof = SHA256(pw) XOR SHA256(H2 || nonce20)  (client sends 32 bytes)
 *   accept iff SHA256(proof XOR SHA256(H2 || nonce20)) == H2
 * Digest first, nonce second: the opposite order from native. H2 is
 * ha_digest_sha2_stage2 (digest.h).
 *
 * The client side of the fast path, for tests and the benchmark. */
void ha_auth_sha2_proof(const char *password, size_t len,
                        const uint8_t scramble[20],
                        uint8_t proof[HA_SHA256_LEN]);

/* Verifies a caching_sha2_password fast-path response against user (which
 * must have has_sha2) in constant time. An empty response matches only
 * an account with an empty password; anything but 32 bytes is refused. */
bool ha_auth_sha2_check(const struct ha_user *user,
                        const uint8_t scramble[20], const uint8_t *resp,
                        size_t resp_len);

/* Full authentication over plain TCP: decrypts in (RSA PKCS#1 OAEP with
 * the server's private key) and undoes the XOR with the 20-byte scramble
 * repeated. Writes the password bytes (trailing NUL included, as sent) to
 * out (cap bytes) and their count to *out_len. Returns 0, or -1 if the
 * blob does not decrypt. The caller wipes out. */
int ha_auth_sha2_decrypt(EVP_PKEY *key, const uint8_t scramble[20],
                         const uint8_t *in, size_t in_len, uint8_t *out,
                         size_t cap, size_t *out_len);

/* The client side of ha_auth_sha2_decrypt(), for tests: encrypts
 * password + NUL XOR scramble with the public key. Returns the number of
 * bytes written to out (cap bytes), or -1. */
int ha_auth_sha2_encrypt(EVP_PKEY *key, const uint8_t scramble[20],
                         const char *password, uint8_t *out, size_t cap);

#endif /* HA_AUTH_H */
