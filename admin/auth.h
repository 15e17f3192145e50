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

#include "credentials.h"

#define HA_AUTH_NATIVE_PLUGIN "mysql_native_password"

/* Fills scramble with len bytes from the OS CSPRNG, each in 1..127 and
 * never '$' (MySQL does the same; Connector/J reads the seed as a
 * NUL-terminated string). Returns 0, or -1 if the CSPRNG failed. */
int ha_auth_scramble(uint8_t *scramble, size_t len);

/* stage2 = SHA1(SHA1(password)), password of len bytes. */
void ha_auth_native_stage2(const char *password, size_t len,
                           uint8_t stage2[HA_SHA1_LEN]);

/* The client side of mysql_native_password, for tests and the benchmark:
 * proof = SHA1(pw) XOR SHA1(scramble || SHA1(SHA1(pw))). */
void ha_auth_native_proof(const char *password, size_t len,
                          const uint8_t scramble[20],
                          uint8_t proof[HA_SHA1_LEN]);

/* Verifies a mysql_native_password response against user in constant
 * time. An empty response (or a single 0x00, which libmysqlclient may
 * send) matches only an account with an empty password. */
bool ha_auth_native_check(const struct ha_user *user,
                          const uint8_t scramble[20], const uint8_t *resp,
                          size_t resp_len);

#endif /* HA_AUTH_H */
