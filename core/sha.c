/* SPDX-License-Identifier: MIT
 *
 * SHA-1 and SHA-256 as FIPS 180-4 specifies them (see sha.h): the
 * message padded with a 1 bit, zeros and its length in bits (64-bit big
 * endian) to a multiple of 64 bytes, each 64-byte block compressed into
 * the state, the state written big endian.
 */
#include "core/sha.h"

#include <string.h>

static uint32_t
rotl(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static uint32_t
rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t
be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static void
put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Feeds data, then the padding, to block() 64 bytes at a time. */
static void
each_block(const void *data, size_t len, void (*block)(void *st,
                                                       const uint8_t *b),
           void *st)
{
    const uint8_t *p = data;
    uint8_t tail[128];
    size_t rest = len % 64, n_tail;
    uint64_t bits = (uint64_t)len * 8;

    for (size_t i = 0; i + 64 <= len; i += 64)
        block(st, p + i);
    memset(tail, 0, sizeof(tail));
    if (rest > 0)
        memcpy(tail, p + len - rest, rest);
    tail[rest] = 0x80;
    n_tail = rest + 1 + 8 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++)
        tail[n_tail - 1 - i] = (uint8_t)(bits >> (8 * i));
    for (size_t i = 0; i < n_tail; i += 64)
        block(st, tail + i);
}

/* ------------------------------------------------------------------
 * SHA-1 (FIPS 180-4 6.1)
 * ------------------------------------------------------------------ */

static void
sha1_block(void *arg, const uint8_t *b)
{
    uint32_t *h = arg, w[80], a, bb, c, d, e;

    for (int t = 0; t < 16; t++)
        w[t] = be32(b + 4 * t);
    for (int t = 16; t < 80; t++)
        w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    a = h[0];
    bb = h[1];
    c = h[2];
    d = h[3];
    e = h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k, tmp;

        if (t < 20) {
            f = (bb & c) | (~bb & d);
            k = 0x5a827999;
        } else if (t < 40) {
            f = bb ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (t < 60) {
            f = (bb & c) | (bb & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = bb ^ c ^ d;
            k = 0xca62c1d6;
        }
        tmp = rotl(a, 5) + f + e + k + w[t];
        e = d;
        d = c;
        c = rotl(bb, 30);
        bb = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += bb;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void
ha_sha1(const void *data, size_t len, uint8_t out[HA_SHA1_DIGEST])
{
    uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
                     0xc3d2e1f0};

    each_block(data, len, sha1_block, h);
    for (int i = 0; i < 5; i++)
        put_be32(out + 4 * i, h[i]);
}

/* ------------------------------------------------------------------
 * SHA-256 (FIPS 180-4 6.2)
 * ------------------------------------------------------------------ */

static const uint32_t k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static void
sha256_block(void *arg, const uint8_t *b)
{
    uint32_t *h = arg, w[64], v[8];

    for (int t = 0; t < 16; t++)
        w[t] = be32(b + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^
                      (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^
                      (w[t - 2] >> 10);

        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    memcpy(v, h, sizeof(v));
    for (int t = 0; t < 64; t++) {
        uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + s1 + ch + k256[t] + w[t];
        uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
        uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        uint32_t t2 = s0 + maj;

        v[7] = v[6];
        v[6] = v[5];
        v[5] = v[4];
        v[4] = v[3] + t1;
        v[3] = v[2];
        v[2] = v[1];
        v[1] = v[0];
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

void
ha_sha256(const void *data, size_t len, uint8_t out[HA_SHA256_DIGEST])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

    each_block(data, len, sha256_block, h);
    for (int i = 0; i < 8; i++)
        put_be32(out + 4 * i, h[i]);
}
