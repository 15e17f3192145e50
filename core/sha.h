/* SPDX-License-Identifier: MIT
 *
 * SHA-1 and SHA-256 (FIPS 180-4), one-shot, for the password digests of
 * mysql_native_password and caching_sha2_password. Pure, no state, no
 * allocation: using them never initialises OpenSSL, whose library
 * context costs a process that serves only unix sockets (the agent in
 * every worker of a host) about a megabyte it would never otherwise
 * touch. Not for anything else: TLS and RSA stay OpenSSL's.
 */
#ifndef HA_SHA_H
#define HA_SHA_H

#include <stddef.h>
#include <stdint.h>

#define HA_SHA1_DIGEST 20
#define HA_SHA256_DIGEST 32

void ha_sha1(const void *data, size_t len, uint8_t out[HA_SHA1_DIGEST]);
void ha_sha256(const void *data, size_t len, uint8_t out[HA_SHA256_DIGEST]);

#endif /* HA_SHA_H */
