/* SPDX-License-Identifier: MIT
 *
 * The password digests MySQL stores instead of passwords, beneath both
 * credentials.c (which computes them from the config) and auth.c (which
 * checks login answers against them): stage2 of mysql_native_password
 * and of caching_sha2_password. Pure functions over bytes.
 */
#ifndef HA_DIGEST_H
#define HA_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define HA_SHA1_LEN 20
#define HA_SHA256_LEN 32

/* mysql_native_password: stage2 = SHA1(SHA1(password)), password of len
 * bytes. */
void ha_digest_native_stage2(const char *password, size_t len,
                             uint8_t stage2[HA_SHA1_LEN]);

/* caching_sha2_password: h2 = SHA256(SHA256(password)). */
void ha_digest_sha2_stage2(const char *password, size_t len,
                           uint8_t h2[HA_SHA256_LEN]);

#endif /* HA_DIGEST_H */
