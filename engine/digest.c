/* SPDX-License-Identifier: MIT
 *
 * Password digests (see digest.h).
 */
#include "engine/digest.h"

#include <openssl/crypto.h>

#include "core/sha.h"

void
ha_digest_native_stage2(const char *password, size_t len,
                        uint8_t stage2[HA_SHA1_LEN])
{
    uint8_t stage1[HA_SHA1_LEN];

    ha_sha1(password, len, stage1);
    ha_sha1(stage1, sizeof(stage1), stage2);
    /* stage1 is what a client sends the XOR of: enough to log in. */
    OPENSSL_cleanse(stage1, sizeof(stage1));
}

void
ha_digest_sha2_stage2(const char *password, size_t len,
                      uint8_t h2[HA_SHA256_LEN])
{
    uint8_t h1[HA_SHA256_LEN];

    ha_sha256(password, len, h1);
    ha_sha256(h1, sizeof(h1), h2);
    OPENSSL_cleanse(h1, sizeof(h1));
}
