/* SPDX-License-Identifier: MIT
 *
 * Unit tests for admin/proto.c, the MySQL wire codec: length-encoded
 * values at every boundary, the incremental packet reader at every split
 * offset and across 16 MiB chunks, exact byte layouts of what the server
 * sends, and HandshakeResponse41 payloads shaped like real clients' plus
 * every truncation and lying length we can think of. Decoder inputs are
 * copied into exact-size heap blocks so valgrind/ASan catch any overread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

#include "core/buf.h"
#include "admin/proto.h"
#include "core/util.h"

#define BIG_MAX (64u * 1024u * 1024u)

/* Exact-size heap copy: reading one byte past len is a valgrind error. */
static uint8_t *
dup_exact(const uint8_t *p, size_t len)
{
    uint8_t *q = malloc(len ? len : 1);

    ck_assert_ptr_nonnull(q);
    if (len > 0)
        memcpy(q, p, len);
    return q;
}

/* ------------------------------------------------------------------ */
/* Length-encoded integers                                              */
/* ------------------------------------------------------------------ */

static const struct {
    uint64_t v;
    size_t size;
    uint8_t first;
} lenenc_cases[] = {
    {0, 1, 0x00},        {1, 1, 0x01},         {250, 1, 0xFA},
    {251, 3, 0xFC},      {0xFFFF, 3, 0xFC},    {0x10000, 4, 0xFD},
    {0xFFFFFF, 4, 0xFD}, {0x1000000, 9, 0xFE}, {UINT64_MAX, 9, 0xFE},
};

START_TEST(test_proto_lenenc_boundaries)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(lenenc_cases); i++) {
        struct ha_buf b = HA_BUF_INIT;
        struct ha_reader r;
        uint64_t got = 0;
        uint64_t v = lenenc_cases[i].v;

        ha_proto_put_lenenc(&b, v);
        ck_assert_msg(b.len == lenenc_cases[i].size &&
                          ha_proto_lenenc_size(v) == lenenc_cases[i].size,
                      "case %zu (%llu): size %zu/%zu, expected %zu", i,
                      (unsigned long long)v, b.len, ha_proto_lenenc_size(v),
                      lenenc_cases[i].size);
        ck_assert_msg(b.data[0] == lenenc_cases[i].first,
                      "case %zu: first byte 0x%02x, expected 0x%02x", i,
                      b.data[0], lenenc_cases[i].first);
        /* The tail is v little-endian in size-1 bytes. */
        for (size_t k = 1; k < b.len; k++)
            ck_assert_msg(b.data[k] == (uint8_t)(v >> (8 * (k - 1))),
                          "case %zu byte %zu", i, k);

        uint8_t *copy = dup_exact(b.data, b.len);
        ha_reader_init(&r, copy, b.len);
        ck_assert_msg(
            ha_proto_get_lenenc(&r, &got) == 0 && got == v && r.pos == b.len,
            "case %zu: decoded %llu pos %zu, expected %llu pos %zu", i,
            (unsigned long long)got, r.pos, (unsigned long long)v, b.len);
        free(copy);
        ha_buf_free(&b);
    }
}
END_TEST

START_TEST(test_proto_lenenc_str_roundtrip)
{
    static const size_t lens[] = {0, 1, 250, 251, 300, 0x10000};
    uint8_t *data = malloc(0x10000);

    ck_assert_ptr_nonnull(data);
    for (size_t i = 0; i < 0x10000; i++)
        data[i] = (uint8_t)(i * 7);
    for (size_t i = 0; i < HA_ARRAY_SIZE(lens); i++) {
        struct ha_buf b = HA_BUF_INIT;
        struct ha_reader r;
        const uint8_t *s;
        size_t n = 12345;

        ha_proto_put_lenenc_str(&b, data, lens[i]);
        ck_assert_msg(b.len == ha_proto_lenenc_size(lens[i]) + lens[i],
                      "case %zu: encoded %zu bytes", i, b.len);
        uint8_t *copy = dup_exact(b.data, b.len);
        ha_reader_init(&r, copy, b.len);
        ck_assert_msg(ha_proto_get_lenenc_str(&r, &s, &n) == 0 &&
                          n == lens[i] && r.pos == b.len,
                      "case %zu: n %zu, expected %zu", i, n, lens[i]);
        ck_assert(n == 0 || memcmp(s, data, n) == 0);
        free(copy);
        ha_buf_free(&b);
    }
    free(data);
}
END_TEST

START_TEST(test_proto_get_fixed)
{
    static const uint8_t in[] = {0x7F, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                                 0x07, 0x08, 'a',  'b',  0,    'x',  'y'};
    struct ha_reader r;
    uint8_t u8;
    uint64_t v;
    const char *s;
    const uint8_t *bytes;
    size_t n;

    ha_reader_init(&r, in, sizeof(in));
    ck_assert_int_eq(ha_proto_get_u8(&r, &u8), 0);
    ck_assert_uint_eq(u8, 0x7F);
    ck_assert_int_eq(ha_proto_get_le(&r, 2, &v), 0);
    ck_assert_uint_eq(v, 0x0201);
    ck_assert_int_eq(ha_proto_get_le(&r, 3, &v), 0);
    ck_assert_uint_eq(v, 0x050403);
    ck_assert_int_eq(ha_proto_get_le(&r, 3, &v), 0);
    ck_assert_uint_eq(v, 0x080706);
    ck_assert_int_eq(ha_proto_get_strz(&r, &s, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(s, "ab");
    ck_assert_int_eq(ha_proto_get_bytes(&r, 2, &bytes), 0);
    ck_assert_mem_eq(bytes, "xy", 2);
    ck_assert_uint_eq(ha_reader_left(&r), 0);
    /* A zero-length read at the end succeeds and moves nothing. */
    ck_assert_int_eq(ha_proto_get_bytes(&r, 0, &bytes), 0);
    ck_assert_uint_eq(r.pos, sizeof(in));

    ha_reader_init(&r, in + 1, 8);
    ck_assert_int_eq(ha_proto_get_le(&r, 8, &v), 0);
    ck_assert_uint_eq(v, 0x0807060504030201ull);
}
END_TEST

/* Every getter on input that ends early: -1 and pos where it was. */
enum get_kind {
    G_U8,
    G_LE2,
    G_LE3,
    G_LE4,
    G_LE8,
    G_LENENC,
    G_LENENC_STR,
    G_STRZ,
    G_BYTES4
};

static const struct {
    enum get_kind kind;
    uint8_t in[12];
    size_t len;
    size_t skip; /* bytes consumed first, so pos starts > 0 */
} truncated_cases[] = {
    {G_U8, {0}, 0, 0},
    {G_LE2, {0x01}, 1, 0},
    {G_LE3, {0x01, 0x02}, 2, 0},
    {G_LE4, {0xAA, 0x01, 0x02, 0x03}, 4, 1},
    {G_LE8, {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}, 7, 0},
    {G_LENENC, {0}, 0, 0},
    {G_LENENC, {0xFC}, 1, 0},
    {G_LENENC, {0xFC, 0x01}, 2, 0},
    {G_LENENC, {0xFD, 0x01, 0x02}, 3, 0},
    {G_LENENC, {0xAA, 0xFE, 1, 2, 3, 4, 5, 6, 7}, 9, 1},
    {G_LENENC, {0xFB}, 1, 0},             /* NULL is not a length */
    {G_LENENC, {0xFF, 0x00, 0x00}, 3, 0}, /* ERR header */
    {G_LENENC_STR, {0x03, 'a', 'b'}, 3, 0},
    {G_LENENC_STR, {0xAA, 0x05, 'a'}, 3, 1},
    {G_LENENC_STR, {0xFC, 0x00, 0x01, 'a'}, 4, 0},
    {G_LENENC_STR, {0xFB}, 1, 0},
    {G_LENENC_STR,
     {0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 'a'},
     10,
     0}, /* length wraps size_t */
    {G_STRZ, {0}, 0, 0},
    {G_STRZ, {'a', 'b', 'c'}, 3, 0},
    {G_STRZ, {0xAA, 'a'}, 2, 1},
    {G_BYTES4, {1, 2, 3}, 3, 0},
};

START_TEST(test_proto_get_truncated)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(truncated_cases); i++) {
        struct ha_reader r;
        uint8_t *copy =
            dup_exact(truncated_cases[i].in, truncated_cases[i].len);
        uint8_t u8;
        uint64_t v;
        const uint8_t *bytes;
        const char *s;
        size_t n;
        int rc = 0;

        ha_reader_init(&r, copy, truncated_cases[i].len);
        r.pos = truncated_cases[i].skip;
        switch (truncated_cases[i].kind) {
        case G_U8:
            rc = ha_proto_get_u8(&r, &u8);
            break;
        case G_LE2:
            rc = ha_proto_get_le(&r, 2, &v);
            break;
        case G_LE3:
            rc = ha_proto_get_le(&r, 3, &v);
            break;
        case G_LE4:
            rc = ha_proto_get_le(&r, 4, &v);
            break;
        case G_LE8:
            rc = ha_proto_get_le(&r, 8, &v);
            break;
        case G_LENENC:
            rc = ha_proto_get_lenenc(&r, &v);
            break;
        case G_LENENC_STR:
            rc = ha_proto_get_lenenc_str(&r, &bytes, &n);
            break;
        case G_STRZ:
            rc = ha_proto_get_strz(&r, &s, &n);
            break;
        case G_BYTES4:
            rc = ha_proto_get_bytes(&r, 4, &bytes);
            break;
        }
        ck_assert_msg(rc == -1 && r.pos == truncated_cases[i].skip,
                      "case %zu: rc %d pos %zu, expected -1 pos %zu", i, rc,
                      r.pos, truncated_cases[i].skip);
        free(copy);
    }
}
END_TEST

START_TEST(test_proto_get_le_bad_width)
{
    static const uint8_t in[9] = {0};
    struct ha_reader r;
    uint64_t v;

    ha_reader_init(&r, in, sizeof(in));
    ck_assert_int_eq(ha_proto_get_le(&r, 0, &v), -1);
    ck_assert_int_eq(ha_proto_get_le(&r, 9, &v), -1);
    ck_assert_uint_eq(r.pos, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Packet reader and writer                                             */
/* ------------------------------------------------------------------ */

struct got_pkt {
    uint8_t data[64];
    size_t len;
    uint8_t first_seq;
    uint8_t last_seq;
};

struct got_list {
    struct got_pkt pkt[8];
    size_t n;
};

/* Feeds len bytes, taking every packet that completes. The reader must
 * consume everything unless it has a packet ready. */
static void
feed_collect(struct ha_pkt_reader *r, const uint8_t *p, size_t len,
             struct got_list *got)
{
    size_t off = 0;
    char err[128] = "";

    for (;;) {
        bool ready = false;
        ssize_t n = ha_proto_reader_feed(r, p + off, len - off, &ready, err,
                                         sizeof(err));
        ck_assert_msg(n >= 0, "feed failed at offset %zu: %s", off, err);
        off += (size_t)n;
        if (ready) {
            ck_assert_uint_lt(got->n, HA_ARRAY_SIZE(got->pkt));
            struct got_pkt *g = &got->pkt[got->n++];
            ck_assert_uint_le(r->payload.len, sizeof(g->data));
            if (r->payload.len > 0)
                memcpy(g->data, r->payload.data, r->payload.len);
            g->len = r->payload.len;
            g->first_seq = r->first_seq;
            g->last_seq = r->last_seq;
            ha_proto_reader_next(r);
            continue;
        }
        ck_assert_msg(off == len,
                      "reader stopped at %zu of %zu without a "
                      "packet",
                      off, len);
        break;
    }
}

/* COM_QUERY "SELECT 1" (seq 0), an empty packet (seq 1; PyMySQL's empty
 * auth-switch response has this shape), COM_PING (seq 0). */
static const uint8_t stream[] = {
    0x09, 0x00, 0x00, 0x00, 0x03, 'S',  'E',  'L',  'E',  'C',  'T',
    ' ',  '1',  0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x0E,
};
static const struct {
    const char *data;
    size_t len;
    uint8_t seq;
} stream_pkts[] = {
    {"\x03SELECT 1", 9, 0},
    {"", 0, 1},
    {"\x0E", 1, 0},
};

static void
check_stream_result(const struct got_list *got, const char *what)
{
    ck_assert_msg(got->n == HA_ARRAY_SIZE(stream_pkts),
                  "%s: %zu packets, expected %zu", what, got->n,
                  HA_ARRAY_SIZE(stream_pkts));
    for (size_t k = 0; k < got->n; k++) {
        ck_assert_msg(got->pkt[k].len == stream_pkts[k].len &&
                          memcmp(got->pkt[k].data, stream_pkts[k].data,
                                 stream_pkts[k].len) == 0 &&
                          got->pkt[k].first_seq == stream_pkts[k].seq &&
                          got->pkt[k].last_seq == stream_pkts[k].seq,
                      "%s: packet %zu: len %zu seq %u, expected len %zu "
                      "seq %u",
                      what, k, got->pkt[k].len, got->pkt[k].first_seq,
                      stream_pkts[k].len, stream_pkts[k].seq);
    }
}

START_TEST(test_proto_reader_single)
{
    static const uint8_t pkt[] = {0x01, 0x00, 0x00, 0x00, 0x0E};
    struct ha_pkt_reader r;
    bool ready = false;
    char err[128] = "";

    ha_proto_reader_init(&r, 1024);
    ck_assert_int_eq(
        ha_proto_reader_feed(&r, pkt, sizeof(pkt), &ready, err, sizeof(err)),
        5);
    ck_assert(ready);
    ck_assert_uint_eq(r.payload.len, 1);
    ck_assert_uint_eq(r.payload.data[0], HA_COM_PING);
    ck_assert_uint_eq(r.first_seq, 0);
    ck_assert_uint_eq(r.last_seq, 0);
    /* Fed again before _next(): same packet, nothing consumed. */
    ready = false;
    ck_assert_int_eq(
        ha_proto_reader_feed(&r, pkt, sizeof(pkt), &ready, err, sizeof(err)),
        0);
    ck_assert(ready);
    ck_assert_uint_eq(r.payload.len, 1);
    ha_proto_reader_next(&r);
    ck_assert_int_eq(ha_proto_reader_feed(&r, pkt, 3, &ready, err, sizeof(err)),
                     3);
    ck_assert(!ready);
    ha_proto_reader_free(&r);
}
END_TEST

START_TEST(test_proto_reader_back_to_back)
{
    struct ha_pkt_reader r;
    bool ready = false;
    char err[128] = "";
    ssize_t n;

    ha_proto_reader_init(&r, 1024);
    /* One feed of the whole stream stops after the first packet. */
    n = ha_proto_reader_feed(&r, stream, sizeof(stream), &ready, err,
                             sizeof(err));
    ck_assert_int_eq(n, 13);
    ck_assert(ready);
    ck_assert_mem_eq(r.payload.data, "\x03SELECT 1", 9);
    ha_proto_reader_next(&r);
    n = ha_proto_reader_feed(&r, stream + 13, sizeof(stream) - 13, &ready, err,
                             sizeof(err));
    ck_assert_int_eq(n, 4);
    ck_assert(ready);
    ck_assert_uint_eq(r.payload.len, 0);
    ck_assert_uint_eq(r.first_seq, 1);
    ha_proto_reader_free(&r);
}
END_TEST

/* _i is where the stream is cut into two feeds (0..sizeof(stream)). */
START_TEST(test_proto_reader_split_at)
{
    struct ha_pkt_reader r;
    struct got_list got = {0};
    char what[32];

    ha_proto_reader_init(&r, 1024);
    feed_collect(&r, stream, (size_t)_i, &got);
    feed_collect(&r, stream + _i, sizeof(stream) - (size_t)_i, &got);
    snprintf(what, sizeof(what), "split at %d", _i);
    check_stream_result(&got, what);
    ha_proto_reader_free(&r);
}
END_TEST

START_TEST(test_proto_reader_split_twice)
{
    for (size_t i = 0; i <= sizeof(stream); i++) {
        for (size_t j = i; j <= sizeof(stream); j++) {
            struct ha_pkt_reader r;
            struct got_list got = {0};
            char what[48];

            ha_proto_reader_init(&r, 1024);
            feed_collect(&r, stream, i, &got);
            feed_collect(&r, stream + i, j - i, &got);
            feed_collect(&r, stream + j, sizeof(stream) - j, &got);
            snprintf(what, sizeof(what), "split at %zu and %zu", i, j);
            check_stream_result(&got, what);
            ha_proto_reader_free(&r);
        }
    }
}
END_TEST

START_TEST(test_proto_reader_byte_at_a_time)
{
    struct ha_pkt_reader r;
    struct got_list got = {0};

    ha_proto_reader_init(&r, 1024);
    for (size_t i = 0; i < sizeof(stream); i++)
        feed_collect(&r, stream + i, 1, &got);
    check_stream_result(&got, "byte at a time");
    ha_proto_reader_free(&r);
}
END_TEST

START_TEST(test_proto_write_packet_small)
{
    struct ha_buf b = HA_BUF_INIT;
    uint8_t seq = 1;

    ha_proto_write_packet(&b, &seq, (const uint8_t *)"\x03SELECT 1", 9);
    ck_assert_uint_eq(seq, 2);
    ha_proto_write_packet(&b, &seq, NULL, 0);
    ck_assert_uint_eq(seq, 3);
    ck_assert_uint_eq(b.len, 13 + 4);
    ck_assert_mem_eq(b.data,
                     "\x09\x00\x00\x01\x03SELECT 1"
                     "\x00\x00\x00\x02",
                     17);
    ha_buf_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* 16 MiB framing                                                       */
/* ------------------------------------------------------------------ */

static uint8_t *
big_payload(size_t len)
{
    uint8_t *p = malloc(len);

    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(i * 31 + (i >> 16));
    return p;
}

/* Reads a whole big stream in odd-sized pieces; returns the reader with
 * the packet ready. */
static void
read_big(struct ha_pkt_reader *r, const uint8_t *p, size_t len)
{
    const size_t step = 1000003; /* prime: cuts headers mid-way too */
    size_t off = 0;
    bool ready = false;
    char err[128] = "";

    while (!ready) {
        size_t n = len - off < step ? len - off : step;
        ssize_t used =
            ha_proto_reader_feed(r, p + off, n, &ready, err, sizeof(err));
        ck_assert_msg(used >= 0, "feed at %zu: %s", off, err);
        off += (size_t)used;
        ck_assert_msg(ready || off < len, "stream ended without a packet");
    }
    ck_assert_uint_eq(off, len);
}

START_TEST(test_proto_big_packet_plus_10)
{
    const size_t len = HA_PROTO_MAX_CHUNK + 10;
    uint8_t *payload = big_payload(len);
    struct ha_buf b = HA_BUF_INIT;
    struct ha_pkt_reader r;
    uint8_t seq = 0;

    ha_proto_write_packet(&b, &seq, payload, len);
    ck_assert(!ha_buf_failed(&b));
    ck_assert_uint_eq(seq, 2);
    ck_assert_uint_eq(b.len, len + 8);
    ck_assert_mem_eq(b.data, "\xFF\xFF\xFF\x00", 4);
    ck_assert_mem_eq(b.data + 4 + HA_PROTO_MAX_CHUNK, "\x0A\x00\x00\x01", 4);

    ha_proto_reader_init(&r, BIG_MAX);
    read_big(&r, b.data, b.len);
    ck_assert_uint_eq(r.payload.len, len);
    ck_assert(memcmp(r.payload.data, payload, len) == 0);
    ck_assert_uint_eq(r.first_seq, 0);
    ck_assert_uint_eq(r.last_seq, 1);
    ha_proto_reader_next(&r);
    ha_proto_reader_free(&r);
    ha_buf_free(&b);
    free(payload);
}
END_TEST

START_TEST(test_proto_big_packet_exact)
{
    /* The doc example: ff ff ff 00 <data> then 00 00 00 01. */
    const size_t len = HA_PROTO_MAX_CHUNK;
    uint8_t *payload = big_payload(len);
    struct ha_buf b = HA_BUF_INIT;
    struct ha_pkt_reader r;
    uint8_t seq = 0;

    ha_proto_write_packet(&b, &seq, payload, len);
    ck_assert_uint_eq(seq, 2);
    ck_assert_uint_eq(b.len, len + 8);
    ck_assert_mem_eq(b.data, "\xFF\xFF\xFF\x00", 4);
    ck_assert_mem_eq(b.data + b.len - 4, "\x00\x00\x00\x01", 4);

    ha_proto_reader_init(&r, BIG_MAX);
    read_big(&r, b.data, b.len);
    ck_assert_uint_eq(r.payload.len, len);
    ck_assert(memcmp(r.payload.data, payload, len) == 0);
    ck_assert_uint_eq(r.last_seq, 1);
    ha_proto_reader_free(&r);
    ha_buf_free(&b);
    free(payload);
}
END_TEST

START_TEST(test_proto_write_seq_wraps)
{
    const size_t len = HA_PROTO_MAX_CHUNK + 1;
    uint8_t *payload = big_payload(len);
    struct ha_buf b = HA_BUF_INIT;
    struct ha_pkt_reader r;
    uint8_t seq = 255;

    ha_proto_write_packet(&b, &seq, (const uint8_t *)"x", 1);
    ck_assert_uint_eq(seq, 0);
    ck_assert_mem_eq(b.data, "\x01\x00\x00\xFFx", 5);

    /* Wrapping inside a split packet: chunks 255 then 0. */
    ha_buf_reset(&b);
    seq = 255;
    ha_proto_write_packet(&b, &seq, payload, len);
    ck_assert_uint_eq(seq, 1);
    ck_assert_uint_eq(b.data[3], 255);
    ck_assert_uint_eq(b.data[4 + HA_PROTO_MAX_CHUNK + 3], 0);
    ha_proto_reader_init(&r, BIG_MAX);
    read_big(&r, b.data, b.len);
    ck_assert_uint_eq(r.payload.len, len);
    ck_assert_uint_eq(r.first_seq, 255);
    ck_assert_uint_eq(r.last_seq, 0);
    ha_proto_reader_free(&r);
    ha_buf_free(&b);
    free(payload);
}
END_TEST

START_TEST(test_proto_reader_max_payload_exact)
{
    static const uint8_t pkt[] = {0x04, 0x00, 0x00, 0x00, 'a', 'b', 'c', 'd'};
    struct ha_pkt_reader r;
    bool ready = false;
    char err[128] = "";

    ha_proto_reader_init(&r, 4);
    ck_assert_int_eq(
        ha_proto_reader_feed(&r, pkt, sizeof(pkt), &ready, err, sizeof(err)),
        8);
    ck_assert(ready);
    ck_assert_int_eq(r.error, HA_PROTO_READER_OK);
    ha_proto_reader_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Reader errors                                                        */
/* ------------------------------------------------------------------ */

START_TEST(test_proto_reader_over_max)
{
    /* Refused at the header, before any payload is buffered. */
    static const uint8_t hdr[] = {0x05, 0x00, 0x00, 0x00};
    struct ha_pkt_reader r;
    bool ready = false;
    char err[128] = "";

    ha_proto_reader_init(&r, 4);
    ck_assert_int_eq(
        ha_proto_reader_feed(&r, hdr, sizeof(hdr), &ready, err, sizeof(err)),
        -1);
    ck_assert(!ready);
    ck_assert_msg(strstr(err, "max_allowed_packet") != NULL, "err: %s", err);
    ck_assert_int_eq(r.error, HA_PROTO_READER_TOO_LARGE);
    ck_assert_uint_eq(r.payload.len, 0);
    ha_proto_reader_free(&r);
}
END_TEST

START_TEST(test_proto_reader_over_max_split)
{
    /* The first chunk fits, the sum does not. */
    const size_t len = HA_PROTO_MAX_CHUNK + 10;
    uint8_t *payload = big_payload(len);
    struct ha_buf b = HA_BUF_INIT;
    struct ha_pkt_reader r;
    uint8_t seq = 0;
    bool ready = false;
    char err[128] = "";

    ha_proto_write_packet(&b, &seq, payload, len);
    ha_proto_reader_init(&r, HA_PROTO_MAX_CHUNK + 9);
    ck_assert_int_eq(
        ha_proto_reader_feed(&r, b.data, b.len, &ready, err, sizeof(err)), -1);
    ck_assert(!ready);
    ck_assert_msg(strstr(err, "max_allowed_packet") != NULL, "err: %s", err);
    ck_assert_int_eq(r.error, HA_PROTO_READER_TOO_LARGE);
    ha_proto_reader_free(&r);
    ha_buf_free(&b);
    free(payload);
}
END_TEST

START_TEST(test_proto_reader_bad_seq_in_split)
{
    const size_t len = HA_PROTO_MAX_CHUNK + 10;
    uint8_t *payload = big_payload(len);
    struct ha_buf b = HA_BUF_INIT;
    struct ha_pkt_reader r;
    uint8_t seq = 3;
    bool ready = false;
    char err[128] = "";

    ha_proto_write_packet(&b, &seq, payload, len);
    b.data[4 + HA_PROTO_MAX_CHUNK + 3] = 5; /* expected 4 */
    ha_proto_reader_init(&r, BIG_MAX);
    ck_assert_int_eq(
        ha_proto_reader_feed(&r, b.data, b.len, &ready, err, sizeof(err)), -1);
    ck_assert(!ready);
    ck_assert_msg(strstr(err, "sequence id 5") != NULL &&
                      strstr(err, "expected 4") != NULL,
                  "err: %s", err);
    ck_assert_int_eq(r.error, HA_PROTO_READER_OUT_OF_ORDER);
    ha_proto_reader_free(&r);
    ha_buf_free(&b);
    free(payload);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Server packets: exact bytes                                          */
/* ------------------------------------------------------------------ */

static const uint8_t test_scramble[HA_SCRAMBLE_LEN] = {
    'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'i', 'j',
    'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's', 't'};

START_TEST(test_proto_handshake_layout)
{
    static const char version[] = "8.0.35-heapadmin-0.1.0";
    struct ha_handshake h = {
        .server_version = version,
        .connection_id = 0x04030201,
        .capabilities = HA_SERVER_CAPABILITIES,
        .collation = HA_COLLATION_UTF8MB4_0900,
        .status = HA_STATUS_AUTOCOMMIT,
        .auth_plugin = "mysql_native_password",
    };
    struct ha_buf b = HA_BUF_INIT;
    const size_t v = sizeof(version) - 1;
    const size_t o = 1 + v + 1; /* offset of connection id */
    static const uint8_t zeros[10];

    memcpy(h.scramble, test_scramble, sizeof(h.scramble));
    ha_proto_encode_handshake(&b, &h);
    ck_assert_uint_eq(b.len, o + 4 + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10 + 13 + 22);
    ck_assert_uint_eq(b.data[0], 0x0A);
    ck_assert_str_eq((const char *)b.data + 1, version);
    ck_assert_mem_eq(b.data + o, "\x01\x02\x03\x04", 4);
    ck_assert_mem_eq(b.data + o + 4, test_scramble, 8); /* part 1 */
    ck_assert_uint_eq(b.data[o + 12], 0x00);            /* filler */
    ck_assert_uint_eq(b.data[o + 13] | b.data[o + 14] << 8,
                      HA_SERVER_CAPABILITIES & 0xFFFF);
    ck_assert_uint_eq(b.data[o + 15], 255); /* charset */
    ck_assert_uint_eq(b.data[o + 16] | b.data[o + 17] << 8,
                      HA_STATUS_AUTOCOMMIT);
    ck_assert_uint_eq(b.data[o + 18] | b.data[o + 19] << 8,
                      HA_SERVER_CAPABILITIES >> 16);
    ck_assert_uint_eq(b.data[o + 20], 21);        /* auth data len */
    ck_assert_mem_eq(b.data + o + 21, zeros, 10); /* reserved */
    ck_assert_mem_eq(b.data + o + 31, test_scramble + 8, 12); /* part 2 */
    ck_assert_uint_eq(b.data[o + 43], 0x00);
    ck_assert_str_eq((const char *)b.data + o + 44, "mysql_native_password");
    ck_assert_uint_eq(b.data[b.len - 1], 0x00);
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_proto_auth_switch_bytes)
{
    struct ha_buf b = HA_BUF_INIT;

    ha_proto_encode_auth_switch(&b, "mysql_native_password", test_scramble);
    ck_assert_uint_eq(b.len, 1 + 22 + 20 + 1);
    ck_assert_uint_eq(b.data[0], 0xFE);
    ck_assert_str_eq((const char *)b.data + 1, "mysql_native_password");
    ck_assert_mem_eq(b.data + 23, test_scramble, 20);
    ck_assert_uint_eq(b.data[43], 0x00);
    ha_buf_free(&b);
}
END_TEST

/* One encoder call and the exact payload it must produce. */
struct bytes_case {
    const char *name;
    const char *want;
    size_t want_len;
};

#define BYTES(s) s, sizeof(s) - 1

static void
check_bytes(size_t i, const struct bytes_case *c, const struct ha_buf *b)
{
    ck_assert_msg(!ha_buf_failed(b), "case %zu (%s): buffer failed", i,
                  c->name);
    ck_assert_msg(b->len == c->want_len,
                  "case %zu (%s): %zu bytes, "
                  "expected %zu",
                  i, c->name, b->len, c->want_len);
    for (size_t k = 0; k < b->len; k++)
        ck_assert_msg(b->data[k] == (uint8_t)c->want[k],
                      "case %zu (%s): byte %zu is 0x%02x, expected 0x%02x", i,
                      c->name, k, b->data[k], (uint8_t)c->want[k]);
}

START_TEST(test_proto_ok_err_eof_bytes)
{
    static const struct bytes_case cases[] = {
        {"ok minimal", BYTES("\x00\x00\x00\x02\x00\x00\x00")},
        {"ok counts+info",
         BYTES("\x00\xFC\x2C\x01\xFD\x70\x11\x01\x03\x00\x01\x00"
               "\x0FRows matched: 1")},
        {"ok 0xFE terminator drops info",
         BYTES("\xFE\x00\x00\x22\x00\x00\x00")},
        {"err with sqlstate", BYTES("\xFF\x15\x04#28000Access denied")},
        {"err before negotiation", BYTES("\xFF\x10\x04Too many")},
        {"err 4-char sqlstate", BYTES("\xFF\x28\x04#HY000x")},
        {"eof", BYTES("\xFE\x01\x00\x02\x00")},
    };
    struct ha_buf b = HA_BUF_INIT;

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        ha_buf_reset(&b);
        switch (i) {
        case 0:
            ha_proto_encode_ok(&b, 0x00, 0, 0, HA_STATUS_AUTOCOMMIT, 0, NULL);
            break;
        case 1:
            ha_proto_encode_ok(&b, 0x00, 300, 70000,
                               HA_STATUS_AUTOCOMMIT | HA_STATUS_IN_TRANS, 1,
                               "Rows matched: 1");
            break;
        case 2:
            ha_proto_encode_ok(&b, 0xFE, 0, 0,
                               HA_STATUS_AUTOCOMMIT | HA_STATUS_NO_INDEX_USED,
                               0, "dropped");
            break;
        case 3:
            ha_proto_encode_err(&b, 1045, "28000", "Access denied");
            break;
        case 4:
            ha_proto_encode_err(&b, 1040, NULL, "Too many");
            break;
        case 5:
            ha_proto_encode_err(&b, 1064, "2800", "x");
            break;
        case 6:
            ha_proto_encode_eof(&b, 1, HA_STATUS_AUTOCOMMIT);
            break;
        }
        check_bytes(i, &cases[i], &b);
    }
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_proto_coldef_bytes)
{
    static const struct bytes_case cases[] = {
        {"integer column", BYTES("\x03"
                                 "def"
                                 "\x04main"
                                 "\x05stats"
                                 "\x05stats"
                                 "\x05value"
                                 "\x05value"
                                 "\x0C"
                                 "\x3F\x00"
                                 "\x14\x00\x00\x00"
                                 "\x08"
                                 "\x81\x80"
                                 "\x00"
                                 "\x00\x00")},
        {"NULL strings, COM_FIELD_LIST default", BYTES("\x03"
                                                       "def"
                                                       "\x00"
                                                       "\x00"
                                                       "\x00"
                                                       "\x04name"
                                                       "\x00"
                                                       "\x0C"
                                                       "\xFF\x00"
                                                       "\x00\x01\x00\x00"
                                                       "\xFD"
                                                       "\x00\x00"
                                                       "\x1F"
                                                       "\x00\x00"
                                                       "\xFB")},
        {"COM_FIELD_LIST default value", BYTES("\x03"
                                               "def"
                                               "\x00"
                                               "\x00"
                                               "\x00"
                                               "\x01n"
                                               "\x00"
                                               "\x0C"
                                               "\x3F\x00"
                                               "\x14\x00\x00\x00"
                                               "\x08"
                                               "\x80\x80"
                                               "\x00"
                                               "\x00\x00"
                                               "\x02"
                                               "42")},
    };
    const struct ha_coldef defs[] = {
        {.schema = "main",
         .table = "stats",
         .org_table = "stats",
         .name = "value",
         .org_name = "value",
         .collation = HA_COLLATION_BINARY,
         .length = 20,
         .type = HA_TYPE_LONGLONG,
         .flags = HA_FLAG_NOT_NULL | HA_FLAG_BINARY | HA_FLAG_NUM,
         .decimals = 0},
        {.name = "name",
         .collation = HA_COLLATION_UTF8MB4_0900,
         .length = 256,
         .type = HA_TYPE_VAR_STRING,
         .decimals = 0x1F},
        {.name = "n",
         .collation = HA_COLLATION_BINARY,
         .length = 20,
         .type = HA_TYPE_LONGLONG,
         .flags = HA_FLAG_BINARY | HA_FLAG_NUM,
         .default_value = "42"},
    };
    struct ha_buf b = HA_BUF_INIT;

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        ha_buf_reset(&b);
        ha_proto_encode_coldef(&b, &defs[i], i >= 1);
        check_bytes(i, &cases[i], &b);
    }
    ha_buf_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* HandshakeResponse41                                                  */
/* ------------------------------------------------------------------ */

/* libmariadb CLIENT_CAPABILITIES plus CONNECT_WITH_DB (mariadb -D). */
#define CAPS_MARIADB                                                           \
    (HA_CLIENT_LONG_PASSWORD | HA_CLIENT_LONG_FLAG | HA_CLIENT_TRANSACTIONS |  \
     HA_CLIENT_SECURE_CONNECTION | HA_CLIENT_MULTI_RESULTS |                   \
     HA_CLIENT_PS_MULTI_RESULTS | HA_CLIENT_PROTOCOL_41 |                      \
     HA_CLIENT_PLUGIN_AUTH | HA_CLIENT_PLUGIN_AUTH_LENENC_DATA |               \
     HA_CLIENT_SESSION_TRACK | HA_CLIENT_CONNECT_ATTRS |                       \
     HA_CLIENT_CONNECT_WITH_DB)
/* PyMySQL 1.1 without a database. */
#define CAPS_PYMYSQL                                                           \
    (HA_CLIENT_LONG_PASSWORD | HA_CLIENT_LONG_FLAG | HA_CLIENT_PROTOCOL_41 |   \
     HA_CLIENT_TRANSACTIONS | HA_CLIENT_SECURE_CONNECTION |                    \
     HA_CLIENT_MULTI_RESULTS | HA_CLIENT_PLUGIN_AUTH |                         \
     HA_CLIENT_PLUGIN_AUTH_LENENC_DATA | HA_CLIENT_CONNECT_ATTRS)
/* go-sql-driver/mysql, already masked with our capabilities. */
#define CAPS_GO                                                                \
    (HA_CLIENT_LONG_PASSWORD | HA_CLIENT_LONG_FLAG | HA_CLIENT_PROTOCOL_41 |   \
     HA_CLIENT_SECURE_CONNECTION | HA_CLIENT_TRANSACTIONS |                    \
     HA_CLIENT_PLUGIN_AUTH_LENENC_DATA | HA_CLIENT_PLUGIN_AUTH |               \
     HA_CLIENT_MULTI_RESULTS | HA_CLIENT_CONNECT_ATTRS |                       \
     HA_CLIENT_DEPRECATE_EOF)

enum auth_framing { AF_LENENC, AF_BYTE, AF_NUL };

struct hr_spec {
    const char *name;
    uint32_t caps;
    uint32_t max_packet;
    uint8_t charset;
    uint8_t filler_tail; /* MariaDB ext caps in filler bytes 19..22 */
    const char *user;
    enum auth_framing framing;
    size_t auth_len;          /* bytes of a fixed pattern */
    const char *db;           /* NULL: not sent */
    const char *plugin;       /* NULL: not sent */
    const char *const *attrs; /* key, value, ..., NULL; NULL: not sent */
};

/* Payload offsets where each field ends (0 when not sent). */
struct hr_ends {
    size_t auth;
    size_t db;
    size_t plugin;
};

static const char *const attrs_mariadb[] = {
    "_client_name", "libmariadb",   "_client_version",
    "3.3.8",        "_os",          "Linux",
    "_pid",         "4242",         "_platform",
    "x86_64",       "_server_host", "127.0.0.1",
    "program_name", "mariadb",      NULL};
static const char *const attrs_pymysql[] = {
    "_client_name", "pymysql", "_client_version",
    "1.1.1",        "_pid",    "7",
    "program_name", "",        NULL};
static const char *const attrs_go[] = {
    "_client_name", "Go-MySQL-Driver", "_os",  "linux",
    "_platform",    "amd64",           "_pid", "31337",
    "_server_host", "localhost",       NULL};
static const char *const attrs_none[] = {NULL};

static void
auth_pattern(uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(0x80 + i); /* no NUL, high bit set */
}

static void
hr_build(struct ha_buf *b, const struct hr_spec *s, struct hr_ends *ends)
{
    uint8_t filler[23] = {0};
    uint8_t auth[512];
    struct ha_buf attrs = HA_BUF_INIT;

    ck_assert_uint_le(s->auth_len, sizeof(auth));
    auth_pattern(auth, s->auth_len);
    filler[19] = s->filler_tail;
    ha_buf_append_le(b, s->caps, 4);
    ha_buf_append_le(b, s->max_packet, 4);
    ha_buf_append_u8(b, s->charset);
    ha_buf_append(b, filler, sizeof(filler));
    ha_buf_append_strz(b, s->user);
    switch (s->framing) {
    case AF_LENENC:
        ha_proto_put_lenenc_str(b, auth, s->auth_len);
        break;
    case AF_BYTE:
        ha_buf_append_u8(b, (uint8_t)s->auth_len);
        ha_buf_append(b, auth, s->auth_len);
        break;
    case AF_NUL:
        ha_buf_append(b, auth, s->auth_len);
        ha_buf_append_u8(b, 0);
        break;
    }
    memset(ends, 0, sizeof(*ends));
    ends->auth = b->len;
    if (s->db) {
        ha_buf_append_strz(b, s->db);
        ends->db = b->len;
    }
    if (s->plugin) {
        ha_buf_append_strz(b, s->plugin);
        ends->plugin = b->len;
    }
    if (s->attrs) {
        for (const char *const *a = s->attrs; *a; a++)
            ha_proto_put_lenenc_str(&attrs, *a, strlen(*a));
        ha_proto_put_lenenc_str(b, attrs.data, attrs.len);
        ha_buf_free(&attrs);
    }
    ck_assert(!ha_buf_failed(b));
}

static const struct hr_spec hr_clients[] = {
    {"libmariadb", CAPS_MARIADB, 16777216, 45, 0, "admin", AF_LENENC, 20,
     "main", "mysql_native_password", attrs_mariadb},
    {"PyMySQL", CAPS_PYMYSQL, 16777216, 45, 0, "stats", AF_LENENC, 20, NULL,
     "mysql_native_password", attrs_pymysql},
    {"Go, empty plugin", CAPS_GO, 0, 45, 0, "radmin", AF_LENENC, 20, NULL, "",
     attrs_go},
    {"libmysqlclient 8.0.25 names caching_sha2",
     CAPS_MARIADB & ~HA_CLIENT_CONNECT_WITH_DB, 16777216, 255, 0, "admin",
     AF_LENENC, 32, NULL, "caching_sha2_password", attrs_none},
    {"empty password, db", CAPS_GO | HA_CLIENT_CONNECT_WITH_DB, 0, 33, 0,
     "admin", AF_LENENC, 0, "", "mysql_native_password", attrs_go},
    {"SECURE_CONNECTION 1-byte length",
     CAPS_PYMYSQL & ~HA_CLIENT_PLUGIN_AUTH_LENENC_DATA, 0, 8, 0, "u", AF_BYTE,
     20, NULL, "mysql_native_password", NULL},
    {"NUL-terminated auth, no plugin", HA_CLIENT_PROTOCOL_41, 0, 8, 0, "u",
     AF_NUL, 8, NULL, NULL, NULL},
    {"CONNECT_ATTRS set but nothing sent (mysql2#2261)", CAPS_PYMYSQL, 0, 224,
     0, "admin", AF_LENENC, 20, NULL, "mysql_native_password", NULL},
    {"attrs without the flag (go-sql-driver#1636)",
     CAPS_GO & ~HA_CLIENT_CONNECT_ATTRS, 0, 45, 0, "admin", AF_LENENC, 20, NULL,
     "mysql_native_password", attrs_go},
    {"MariaDB ext caps in filler", CAPS_MARIADB, 0, 45, 0x1C, "admin",
     AF_LENENC, 20, "information_schema", "mysql_native_password",
     attrs_mariadb},
    {"255-byte auth", CAPS_PYMYSQL, 0, 45, 0, "admin", AF_LENENC, 255, NULL,
     "mysql_native_password", NULL},
};

static int
hr_decode_exact(const uint8_t *p, size_t len, struct ha_handshake_response *out,
                char *err, size_t errlen)
{
    uint8_t *copy = dup_exact(p, len);
    int rc = ha_proto_decode_handshake_response(copy, len, out, err, errlen);

    free(copy);
    return rc;
}

START_TEST(test_proto_handshake_response_clients)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(hr_clients); i++) {
        const struct hr_spec *s = &hr_clients[i];
        struct ha_buf b = HA_BUF_INIT;
        struct hr_ends ends;
        struct ha_handshake_response hr;
        uint8_t auth[512];
        char err[256] = "";
        bool want_db = s->db && (s->caps & HA_CLIENT_CONNECT_WITH_DB);
        bool want_plugin = s->plugin && (s->caps & HA_CLIENT_PLUGIN_AUTH);

        hr_build(&b, s, &ends);
        auth_pattern(auth, s->auth_len);
        ck_assert_msg(hr_decode_exact(b.data, b.len, &hr, err, sizeof(err)) ==
                          0,
                      "case %zu (%s): %s", i, s->name, err);
        ck_assert_msg(hr.capabilities == s->caps &&
                          hr.max_packet == s->max_packet &&
                          hr.collation == s->charset && !hr.is_ssl_request,
                      "case %zu (%s): fixed fields", i, s->name);
        ck_assert_msg(strcmp(hr.user, s->user) == 0,
                      "case %zu (%s): user \"%s\", expected \"%s\"", i, s->name,
                      hr.user, s->user);
        ck_assert_msg(hr.auth_len == s->auth_len &&
                          memcmp(hr.auth, auth, s->auth_len) == 0,
                      "case %zu (%s): auth_len %zu, expected %zu", i, s->name,
                      hr.auth_len, s->auth_len);
        ck_assert_msg(
            hr.has_db == want_db && (!want_db || strcmp(hr.db, s->db) == 0),
            "case %zu (%s): has_db %d db \"%s\"", i, s->name, hr.has_db, hr.db);
        ck_assert_msg(hr.has_plugin == want_plugin &&
                          (!want_plugin || strcmp(hr.plugin, s->plugin) == 0),
                      "case %zu (%s): has_plugin %d plugin \"%s\"", i, s->name,
                      hr.has_plugin, hr.plugin);
        ha_buf_free(&b);
    }
}
END_TEST

START_TEST(test_proto_ssl_request)
{
    /* 32 bytes, CLIENT_SSL: the client is about to start TLS. */
    struct hr_spec s = {"ssl",     CAPS_MARIADB | HA_CLIENT_SSL,
                        16777216,  45,
                        0,         "",
                        AF_LENENC, 0,
                        NULL,      NULL,
                        NULL};
    struct ha_buf b = HA_BUF_INIT;
    struct hr_ends ends;
    struct ha_handshake_response hr;
    char err[256] = "";

    hr_build(&b, &s, &ends);
    ck_assert_uint_eq(ends.auth, 32 + 1 + 1);
    ck_assert_int_eq(hr_decode_exact(b.data, 32, &hr, err, sizeof(err)), 0);
    ck_assert(hr.is_ssl_request);
    ck_assert_uint_eq(hr.capabilities, CAPS_MARIADB | HA_CLIENT_SSL);
    ck_assert_uint_eq(hr.collation, 45);
    ha_buf_free(&b);

    /* The full response sent inside TLS still carries CLIENT_SSL. */
    s.user = "admin";
    s.auth_len = 20;
    ha_buf_init(&b);
    hr_build(&b, &s, &ends);
    ck_assert_int_eq(hr_decode_exact(b.data, b.len, &hr, err, sizeof(err)), 0);
    ck_assert(!hr.is_ssl_request);
    ck_assert_str_eq(hr.user, "admin");
    ha_buf_free(&b);
}
END_TEST

/* Field limits: at the limit decodes, one over names the field. */
START_TEST(test_proto_handshake_response_limits)
{
    static const struct {
        const char *field;
        size_t user, auth, db, plugin;
        int rc;
    } cases[] = {
        {"username", HA_PROTO_MAX_USER, 20, 0, 5, 0},
        {"username", HA_PROTO_MAX_USER + 1, 20, 0, 5, -1},
        {"auth_response", 5, HA_PROTO_MAX_AUTH, 0, 5, 0},
        {"auth_response", 5, HA_PROTO_MAX_AUTH + 1, 0, 5, -1},
        {"database", 5, 20, HA_PROTO_MAX_DB, 5, 0},
        {"database", 5, 20, HA_PROTO_MAX_DB + 1, 5, -1},
        {"client_plugin_name", 5, 20, 1, HA_PROTO_MAX_PLUGIN, 0},
        {"client_plugin_name", 5, 20, 1, HA_PROTO_MAX_PLUGIN + 1, -1},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        char user[300], db[300], plugin[300];
        struct hr_spec s = {"limit",   CAPS_MARIADB,  0,  45,     0,   user,
                            AF_LENENC, cases[i].auth, db, plugin, NULL};
        struct ha_buf b = HA_BUF_INIT;
        struct hr_ends ends;
        struct ha_handshake_response hr;
        char err[256] = "";
        int rc;

        memset(user, 'u', cases[i].user);
        user[cases[i].user] = '\0';
        memset(db, 'd', cases[i].db);
        db[cases[i].db] = '\0';
        memset(plugin, 'p', cases[i].plugin);
        plugin[cases[i].plugin] = '\0';
        hr_build(&b, &s, &ends);
        rc = hr_decode_exact(b.data, b.len, &hr, err, sizeof(err));
        ck_assert_msg(rc == cases[i].rc,
                      "case %zu (%s): rc %d, expected "
                      "%d: %s",
                      i, cases[i].field, rc, cases[i].rc, err);
        if (rc == 0) {
            ck_assert_uint_eq(strlen(hr.user), cases[i].user);
            ck_assert_uint_eq(hr.auth_len, cases[i].auth);
            ck_assert_uint_eq(strlen(hr.db), cases[i].db);
            ck_assert_uint_eq(strlen(hr.plugin), cases[i].plugin);
        } else {
            ck_assert_msg(strstr(err, cases[i].field) != NULL,
                          "case %zu: error \"%s\" does not name %s", i, err,
                          cases[i].field);
        }
        ha_buf_free(&b);
    }
}
END_TEST

/* Every prefix of a real client's payload: -1 with a message, except the
 * prefixes that end exactly where an optional field would start. */
START_TEST(test_proto_handshake_response_truncated)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(hr_clients); i++) {
        struct ha_buf b = HA_BUF_INIT;
        struct hr_ends ends;

        hr_build(&b, &hr_clients[i], &ends);
        for (size_t len = 0; len < b.len; len++) {
            struct ha_handshake_response hr;
            char err[256] = "";
            size_t parsed = ends.auth;
            bool boundary;

            if (ends.db > parsed)
                parsed = ends.db;
            if (ends.plugin > parsed)
                parsed = ends.plugin;
            boundary = len == ends.auth || (ends.db && len == ends.db) ||
                       (ends.plugin && len == ends.plugin);
            /* Attributes sent without the flag are not parsed at all. */
            if (hr_clients[i].attrs &&
                !(hr_clients[i].caps & HA_CLIENT_CONNECT_ATTRS) &&
                len >= parsed)
                boundary = true;
            int want = boundary ? 0 : -1;
            int rc = hr_decode_exact(b.data, len, &hr, err, sizeof(err));

            ck_assert_msg(rc == want,
                          "case %zu (%s) cut at %zu of %zu: rc "
                          "%d, expected %d: %s",
                          i, hr_clients[i].name, len, b.len, rc, want, err);
            ck_assert_msg(rc == 0 || err[0] != '\0',
                          "case %zu cut at %zu: no message", i, len);
        }
        ha_buf_free(&b);
    }
}
END_TEST

/* Hand-made payloads: a valid 32-byte prefix then the bytes given. */
static const struct {
    const char *name;
    uint32_t caps;
    const char *tail;
    size_t tail_len;
    const char *field; /* must appear in the error */
} hr_bad[] = {
    {"auth 1-byte length 200, 10 left",
     HA_CLIENT_PROTOCOL_41 | HA_CLIENT_SECURE_CONNECTION,
     BYTES("u\0\xC8"
           "0123456789"),
     "auth_response"},
    {"auth lenenc 200, 10 left", CAPS_PYMYSQL,
     BYTES("u\0\xFC\xC8\x00"
           "0123456789"),
     "auth_response"},
    {"auth lenenc 2^64-1", CAPS_PYMYSQL,
     BYTES("u\0\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
           "0123"),
     "auth_response"},
    {"auth lenenc 0xFB (NULL)", CAPS_PYMYSQL, BYTES("u\0\xFB"),
     "auth_response"},
    {"auth lenenc 0xFF", CAPS_PYMYSQL, BYTES("u\0\xFF\x00"), "auth_response"},
    {"auth length missing", CAPS_PYMYSQL, BYTES("u\0"), "auth_response"},
    {"auth NUL form unterminated", HA_CLIENT_PROTOCOL_41, BYTES("u\0abc"),
     "auth_response"},
    {"username unterminated", CAPS_PYMYSQL, BYTES("admin"), "username"},
    {"database unterminated", CAPS_MARIADB, BYTES("u\0\x00main"), "database"},
    {"plugin unterminated", CAPS_PYMYSQL, BYTES("u\0\x00mysql_native_password"),
     "client_plugin_name"},
    {"attrs total 100, 4 left", CAPS_PYMYSQL,
     BYTES("u\0\x00p\0\x64"
           "ab\x01x"),
     "connect_attrs"},
    {"attrs total 0xFB", CAPS_PYMYSQL, BYTES("u\0\x00p\0\xFB"),
     "connect_attrs"},
    {"attr key overruns the block", CAPS_PYMYSQL,
     BYTES("u\0\x00p\0\x03\x0A"
           "ab"
           "cdefghijkl"),
     "connect_attrs"},
    {"attr key without value", CAPS_PYMYSQL, BYTES("u\0\x00p\0\x02\x01k"),
     "connect_attrs"},
    {"attr value 0xFB", CAPS_PYMYSQL, BYTES("u\0\x00p\0\x03\x01k\xFB"),
     "connect_attrs"},
    {"32 bytes without CLIENT_SSL", CAPS_PYMYSQL, BYTES(""), "username"},
    {"no CLIENT_PROTOCOL_41", CAPS_PYMYSQL & ~HA_CLIENT_PROTOCOL_41,
     BYTES("u\0\x00"), "CLIENT_PROTOCOL_41"},
};

START_TEST(test_proto_handshake_response_bad)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(hr_bad); i++) {
        struct ha_buf b = HA_BUF_INIT;
        struct ha_handshake_response hr;
        uint8_t filler[23] = {0};
        char err[256] = "";
        int rc;

        ha_buf_append_le(&b, hr_bad[i].caps, 4);
        ha_buf_append_le(&b, 0, 4);
        ha_buf_append_u8(&b, 45);
        ha_buf_append(&b, filler, sizeof(filler));
        ha_buf_append(&b, hr_bad[i].tail, hr_bad[i].tail_len);
        rc = hr_decode_exact(b.data, b.len, &hr, err, sizeof(err));
        ck_assert_msg(rc == -1, "case %zu (%s): accepted", i, hr_bad[i].name);
        ck_assert_msg(strstr(err, hr_bad[i].field) != NULL,
                      "case %zu (%s): error \"%s\" does not name %s", i,
                      hr_bad[i].name, err, hr_bad[i].field);
        ha_buf_free(&b);
    }
}
END_TEST

START_TEST(test_proto_handshake_response_tiny)
{
    /* Shorter than the fixed part; a 4.0-style 2-byte capability word
     * without PROTOCOL_41 is refused by name. */
    static const struct {
        const char *in;
        size_t len;
        const char *field;
    } cases[] = {
        {"", 0, "client_flag"},
        {"\x00", 1, "client_flag"},
        {"\x8D\xA6", 2, "client_flag"},
        {"\x85\x24", 2, "CLIENT_PROTOCOL_41"},
        {"\x8D\xA6\x0F\x00", 4, "max_packet_size"},
        {"\x8D\xA6\x0F\x00\x00\x00\x00\x01", 8, "character_set"},
        {"\x8D\xA6\x0F\x00\x00\x00\x00\x01\x2D\x00", 10, "filler"},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        struct ha_handshake_response hr;
        char err[256] = "";
        int rc = hr_decode_exact((const uint8_t *)cases[i].in, cases[i].len,
                                 &hr, err, sizeof(err));

        ck_assert_msg(rc == -1 && strstr(err, cases[i].field) != NULL,
                      "case %zu: rc %d err \"%s\", expected -1 naming %s", i,
                      rc, err, cases[i].field);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Binary protocol: prepare OK, binary rows                             */
/* ------------------------------------------------------------------ */

START_TEST(test_proto_prepare_ok_bytes)
{
    static const struct bytes_case cases[] = {
        {"select, 2 params", BYTES("\x00\x01\x00\x00\x00\x03\x00\x02\x00"
                                   "\x00\x00\x00")},
        {"big id, no columns", BYTES("\x00\x04\x03\x02\x01\x00\x00\xFF\xFF"
                                     "\x00\x01\x00")},
    };
    struct ha_buf b = HA_BUF_INIT;

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        ha_buf_reset(&b);
        if (i == 0)
            ha_proto_encode_prepare_ok(&b, 1, 3, 2, 0);
        else
            ha_proto_encode_prepare_ok(&b, 0x01020304, 0, 0xFFFF, 1);
        check_bytes(i, &cases[i], &b);
    }
    ha_buf_free(&b);
}
END_TEST

#define V_NULL(t) {(t), false, HA_BINVAL_NULL, 0, 0, NULL, 0, ""}
#define V_INT(t, v) {(t), false, HA_BINVAL_INT, (v), 0, NULL, 0, ""}
#define V_UINT(t, v) {(t), true, HA_BINVAL_INT, (int64_t)(v), 0, NULL, 0, ""}
#define V_DBL(t, v) {(t), false, HA_BINVAL_DOUBLE, 0, (v), NULL, 0, ""}
#define V_STR(t, s) \
    {(t), false, HA_BINVAL_BYTES, 0, 0, (const uint8_t *)(s), sizeof(s) - 1, ""}

static const struct {
    const char *name;
    struct ha_binval v[12];
    size_t n;
    const char *want;
    size_t want_len;
} binrow_cases[] = {
    {"one NULL: bit 2", {V_NULL(HA_TYPE_LONGLONG)}, 1, BYTES("\x00\x04")},
    {"longlong, double, string",
     {V_INT(HA_TYPE_LONGLONG, -2), V_DBL(HA_TYPE_DOUBLE, 1.5),
      V_STR(HA_TYPE_VAR_STRING, "ab")},
     3,
     BYTES("\x00\x00"
           "\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
           "\x00\x00\x00\x00\x00\x00\xF8\x3F"
           "\x02"
           "ab")},
    {"widths: tiny short long int24 year float",
     {V_INT(HA_TYPE_TINY, -1), V_INT(HA_TYPE_SHORT, 0x1234),
      V_INT(HA_TYPE_LONG, 0x01020304), V_INT(HA_TYPE_INT24, 5),
      V_INT(HA_TYPE_YEAR, 2024), V_DBL(HA_TYPE_FLOAT, 2.0)},
     6,
     BYTES("\x00\x00"
           "\xFF"
           "\x34\x12"
           "\x04\x03\x02\x01"
           "\x05\x00\x00\x00"
           "\xE8\x07"
           "\x00\x00\x00\x40")},
    /* 6 columns: bitmap (6 + 9) / 8 = 1 byte; column 5 is bit 7. */
    {"NULL in the last bit of byte 0",
     {V_INT(HA_TYPE_TINY, 1), V_INT(HA_TYPE_TINY, 2), V_INT(HA_TYPE_TINY, 3),
      V_INT(HA_TYPE_TINY, 4), V_INT(HA_TYPE_TINY, 5), V_NULL(HA_TYPE_TINY)},
     6, BYTES("\x00\x80\x01\x02\x03\x04\x05")},
    /* 7 columns: 2 bitmap bytes; column 6 is bit 8 = byte 1 bit 0. */
    {"NULL crossing into byte 1",
     {V_NULL(HA_TYPE_TINY), V_INT(HA_TYPE_TINY, 2), V_INT(HA_TYPE_TINY, 3),
      V_INT(HA_TYPE_TINY, 4), V_INT(HA_TYPE_TINY, 5), V_NULL(HA_TYPE_TINY),
      V_NULL(HA_TYPE_TINY)},
     7, BYTES("\x00\x84\x01\x02\x03\x04\x05")},
    {"all NULL, 10 columns",
     {V_NULL(1), V_NULL(1), V_NULL(1), V_NULL(1), V_NULL(1), V_NULL(1),
      V_NULL(1), V_NULL(1), V_NULL(1), V_NULL(1)},
     10, BYTES("\x00\xFC\x0F")},
    {"converted to the declared type",
     {V_DBL(HA_TYPE_LONGLONG, 7.9), V_INT(HA_TYPE_DOUBLE, 2),
      V_INT(HA_TYPE_VAR_STRING, -12), V_UINT(HA_TYPE_VAR_STRING, UINT64_MAX),
      V_STR(HA_TYPE_LONGLONG, "9")},
     5,
     BYTES("\x00\x00"
           "\x07\x00\x00\x00\x00\x00\x00\x00"
           "\x00\x00\x00\x00\x00\x00\x00\x40"
           "\x03-12"
           "\x14"
           "18446744073709551615"
           "\x00\x00\x00\x00\x00\x00\x00\x00")},
    {"empty blob", {V_STR(HA_TYPE_BLOB, "")}, 1, BYTES("\x00\x00\x00")},
};

START_TEST(test_proto_binary_row_bytes)
{
    struct ha_buf b = HA_BUF_INIT;

    for (size_t i = 0; i < HA_ARRAY_SIZE(binrow_cases); i++) {
        struct bytes_case c = {binrow_cases[i].name, binrow_cases[i].want,
                               binrow_cases[i].want_len};
        ha_buf_reset(&b);
        ha_proto_encode_binary_row(&b, binrow_cases[i].v, binrow_cases[i].n);
        check_bytes(i, &c, &b);
    }
    ha_buf_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Binary protocol: COM_STMT_EXECUTE                                    */
/* ------------------------------------------------------------------ */

/* Head: 0x17, id 7, flags 0, iterations 1. */
#define EXEC_HEAD "\x17\x07\x00\x00\x00\x00\x01\x00\x00\x00"

/* A decoded parameter and what it must be. */
struct param_want {
    enum ha_binval_kind kind;
    int64_t i;
    double d;
    const char *s; /* BYTES or TEXT */
};

static void
check_params(size_t ci, const struct ha_binval *got,
             const struct param_want *want, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        ck_assert_msg(got[k].kind == want[k].kind,
                      "case %zu param %zu: kind %d, expected %d", ci, k,
                      got[k].kind, want[k].kind);
        switch (want[k].kind) {
        case HA_BINVAL_INT:
            ck_assert_msg(got[k].i == want[k].i,
                          "case %zu param %zu: %lld, expected %lld", ci, k,
                          (long long)got[k].i, (long long)want[k].i);
            break;
        case HA_BINVAL_DOUBLE:
            ck_assert_msg(got[k].d == want[k].d,
                          "case %zu param %zu: %g, expected %g", ci, k,
                          got[k].d, want[k].d);
            break;
        case HA_BINVAL_BYTES:
            ck_assert_msg(got[k].n == strlen(want[k].s) &&
                              memcmp(got[k].s, want[k].s, got[k].n) == 0,
                          "case %zu param %zu: %.*s, expected %s", ci, k,
                          (int)got[k].n, (const char *)got[k].s, want[k].s);
            break;
        case HA_BINVAL_TEXT:
            ck_assert_msg(got[k].n == strlen(want[k].s) &&
                              strcmp(got[k].text, want[k].s) == 0,
                          "case %zu param %zu: %s, expected %s", ci, k,
                          got[k].text, want[k].s);
            break;
        default:
            break;
        }
    }
}

static const struct {
    const char *name;
    const char *pkt;
    size_t pkt_len;
    uint16_t n;
    struct param_want want[8];
} exec_cases[] = {
    {"tiny short long longlong, signed",
     BYTES(EXEC_HEAD "\x00\x01"
                     "\x01\x00\x02\x00\x03\x00\x08\x00"
                     "\xFF"
                     "\xFE\xFF"
                     "\x00\x00\x00\x80"
                     "\x01\x00\x00\x00\x00\x00\x00\x80"),
     4,
     {{HA_BINVAL_INT, -1, 0, NULL},
      {HA_BINVAL_INT, -2, 0, NULL},
      {HA_BINVAL_INT, INT32_MIN, 0, NULL},
      {HA_BINVAL_INT, INT64_MIN + 1, 0, NULL}}},
    {"unsigned flag 0x80 keeps the bits",
     BYTES(EXEC_HEAD "\x00\x01"
                     "\x01\x80\x02\x80\x03\x80\x08\x80"
                     "\xFF"
                     "\xFE\xFF"
                     "\x00\x00\x00\x80"
                     "\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"),
     4,
     {{HA_BINVAL_INT, 255, 0, NULL},
      {HA_BINVAL_INT, 65534, 0, NULL},
      {HA_BINVAL_INT, 0x80000000ll, 0, NULL},
      {HA_BINVAL_INT, -1, 0, NULL}}},
    {"float, double, year, int24",
     BYTES(EXEC_HEAD "\x00\x01"
                     "\x04\x00\x05\x00\x0D\x00\x09\x00"
                     "\x00\x00\xC0\x3F"
                     "\x00\x00\x00\x00\x00\x00\x04\xC0"
                     "\xE8\x07"
                     "\xFF\xFF\xFF\xFF"),
     4,
     {{HA_BINVAL_DOUBLE, 0, 1.5, NULL},
      {HA_BINVAL_DOUBLE, 0, -2.5, NULL},
      {HA_BINVAL_INT, 2024, 0, NULL},
      {HA_BINVAL_INT, -1, 0, NULL}}},
    {"strings, blobs, decimals",
     BYTES(EXEC_HEAD "\x00\x01"
                     "\xFD\x00\xFC\x00\xF6\x00\xFE\x00\x0F\x00\xF5\x00"
                     "\x03" "abc"
                     "\x00"
                     "\x04" "1.25"
                     "\x01x"
                     "\x02yz"
                     "\x02{}"),
     6,
     {{HA_BINVAL_BYTES, 0, 0, "abc"},
      {HA_BINVAL_BYTES, 0, 0, ""},
      {HA_BINVAL_BYTES, 0, 0, "1.25"},
      {HA_BINVAL_BYTES, 0, 0, "x"},
      {HA_BINVAL_BYTES, 0, 0, "yz"},
      {HA_BINVAL_BYTES, 0, 0, "{}"}}},
    {"NULL bitmap skips values; type NULL",
     BYTES(EXEC_HEAD "\x05\x01"
                     "\x08\x00\x08\x00\x08\x00\x06\x00"
                     "\x02\x00\x00\x00\x00\x00\x00\x00"),
     4,
     {{HA_BINVAL_NULL, 0, 0, NULL},
      {HA_BINVAL_INT, 2, 0, NULL},
      {HA_BINVAL_NULL, 0, 0, NULL},
      {HA_BINVAL_NULL, 0, 0, NULL}}},
    {"date, datetime, timestamp at every length",
     BYTES(EXEC_HEAD "\x00\x01"
                     "\x0A\x00\x0C\x00\x0C\x00\x07\x00\x0C\x00\x0A\x00"
                     "\x04\xE8\x07\x01\x1F"
                     "\x07\xE8\x07\x02\x03\x04\x05\x06"
                     "\x0B\xE8\x07\x02\x03\x04\x05\x06\x01\x00\x00\x00"
                     "\x00"
                     "\x04\xE8\x07\x12\x1F"
                     "\x00"),
     6,
     {{HA_BINVAL_TEXT, 0, 0, "2024-01-31"},
      {HA_BINVAL_TEXT, 0, 0, "2024-02-03 04:05:06"},
      {HA_BINVAL_TEXT, 0, 0, "2024-02-03 04:05:06.000001"},
      {HA_BINVAL_TEXT, 0, 0, "0000-00-00 00:00:00"},
      {HA_BINVAL_TEXT, 0, 0, "2024-18-31 00:00:00"},
      {HA_BINVAL_TEXT, 0, 0, "0000-00-00"}}},
    {"time: 0, 8 and 12 bytes, negative, days",
     BYTES(EXEC_HEAD "\x00\x01"
                     "\x0B\x00\x0B\x00\x0B\x00"
                     "\x00"
                     "\x08\x01\x01\x00\x00\x00\x02\x03\x04"
                     "\x0C\x00\x00\x00\x00\x00\x0A\x0B\x0C\x40\x42\x0F\x00"),
     3,
     {{HA_BINVAL_TEXT, 0, 0, "00:00:00"},
      {HA_BINVAL_TEXT, 0, 0, "-26:03:04"},
      {HA_BINVAL_TEXT, 0, 0, "10:11:12.000000"}}},
    /* 9 parameters: a 2-byte NULL bitmap; param 8 is byte 1 bit 0. */
    {"two-byte NULL bitmap",
     BYTES(EXEC_HEAD "\x00\x01\x01"
                     "\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00\x01\x00"
                     "\x01\x00\x01\x00\x01\x00"
                     "\x01\x02\x03\x04\x05\x06\x07\x08"),
     9,
     {{HA_BINVAL_INT, 1, 0, NULL},
      {HA_BINVAL_INT, 2, 0, NULL},
      {HA_BINVAL_INT, 3, 0, NULL},
      {HA_BINVAL_INT, 4, 0, NULL},
      {HA_BINVAL_INT, 5, 0, NULL},
      {HA_BINVAL_INT, 6, 0, NULL},
      {HA_BINVAL_INT, 7, 0, NULL},
      {HA_BINVAL_INT, 8, 0, NULL}}},
};

START_TEST(test_proto_stmt_execute_types)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(exec_cases); i++) {
        uint8_t *p = dup_exact((const uint8_t *)exec_cases[i].pkt,
                               exec_cases[i].pkt_len);
        struct ha_stmt_execute h;
        struct ha_binval vals[16];
        uint8_t types[32];
        bool have = false;
        char err[256] = "";
        int rc;

        rc = ha_proto_decode_stmt_execute(p, exec_cases[i].pkt_len, &h, err,
                                          sizeof(err));
        ck_assert_msg(rc == 0 && h.stmt_id == 7 && h.flags == 0 &&
                          h.iterations == 1 && h.params_pos == 10,
                      "case %zu (%s): head rc %d %s", i, exec_cases[i].name,
                      rc, err);
        rc = ha_proto_decode_stmt_params(p, exec_cases[i].pkt_len,
                                         h.params_pos, exec_cases[i].n, types,
                                         &have, NULL, vals, err, sizeof(err));
        ck_assert_msg(rc == 0 && have, "case %zu (%s): rc %d: %s", i,
                      exec_cases[i].name, rc, err);
        check_params(i, vals, exec_cases[i].want,
                     exec_cases[i].n < 8 ? exec_cases[i].n : 8);
        if (exec_cases[i].n == 9)
            ck_assert_msg(vals[8].kind == HA_BINVAL_NULL,
                          "case %zu: param 8 not NULL", i);
        free(p);
    }
}
END_TEST

/* libmysqlclient sends types only on the first execute
 * (new_params_bind_flag 0 afterwards: the server keeps them). */
START_TEST(test_proto_stmt_execute_reuse_types)
{
    static const uint8_t first[] = EXEC_HEAD "\x00\x01"
                                             "\x08\x80\xFD\x00"
                                             "\x2A\x00\x00\x00\x00\x00\x00\x00"
                                             "\x02hi";
    static const uint8_t again[] = EXEC_HEAD "\x00\x00"
                                             "\x2B\x00\x00\x00\x00\x00\x00\x00"
                                             "\x03hey";
    static const uint8_t again_null[] = EXEC_HEAD "\x01\x00"
                                                  "\x01ho";
    uint8_t types[4] = {0};
    bool have = false;
    struct ha_binval v[2];
    char err[256];
    uint8_t *p;

    /* Without types ever sent, flag 0 is malformed. */
    p = dup_exact(again, sizeof(again) - 1);
    ck_assert_int_eq(ha_proto_decode_stmt_params(p, sizeof(again) - 1, 10, 2,
                                                 types, &have, NULL, v, err,
                                                 sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "new_params_bind_flag is 0"));
    ck_assert(!have);
    free(p);

    p = dup_exact(first, sizeof(first) - 1);
    ck_assert_int_eq(ha_proto_decode_stmt_params(p, sizeof(first) - 1, 10, 2,
                                                 types, &have, NULL, v, err,
                                                 sizeof(err)),
                     0);
    ck_assert(have);
    ck_assert_mem_eq(types, "\x08\x80\xFD\x00", 4);
    ck_assert(v[0].is_unsigned && v[0].i == 42);
    free(p);

    p = dup_exact(again, sizeof(again) - 1);
    ck_assert_int_eq(ha_proto_decode_stmt_params(p, sizeof(again) - 1, 10, 2,
                                                 types, &have, NULL, v, err,
                                                 sizeof(err)),
                     0);
    ck_assert(v[0].kind == HA_BINVAL_INT && v[0].i == 43 && v[0].is_unsigned);
    ck_assert(v[1].kind == HA_BINVAL_BYTES && v[1].n == 3 &&
              memcmp(v[1].s, "hey", 3) == 0);
    free(p);

    p = dup_exact(again_null, sizeof(again_null) - 1);
    ck_assert_int_eq(ha_proto_decode_stmt_params(p, sizeof(again_null) - 1,
                                                 10, 2, types, &have, NULL, v,
                                                 err, sizeof(err)),
                     0);
    ck_assert(v[0].kind == HA_BINVAL_NULL && v[1].kind == HA_BINVAL_BYTES);
    free(p);
}
END_TEST

/* A parameter sent by COM_STMT_SEND_LONG_DATA has no value in the packet,
 * even with its NULL bit set (libmariadb sets it when the bind has no
 * buffer; MySQL's server lets long data win). */
START_TEST(test_proto_stmt_execute_long_data)
{
    static const uint8_t pkt[] = EXEC_HEAD "\x01\x01"
                                           "\xFC\x00\x03\x00"
                                           "\x05\x00\x00\x00";
    const bool long_data[2] = {true, false};
    uint8_t types[4];
    bool have = false;
    struct ha_binval v[2];
    char err[256];
    uint8_t *p = dup_exact(pkt, sizeof(pkt) - 1);

    ck_assert_int_eq(ha_proto_decode_stmt_params(p, sizeof(pkt) - 1, 10, 2,
                                                 types, &have, long_data, v,
                                                 err, sizeof(err)),
                     0);
    ck_assert_int_eq(v[0].kind, HA_BINVAL_LONG_DATA);
    ck_assert(v[1].kind == HA_BINVAL_INT && v[1].i == 5);
    free(p);
}
END_TEST

/* Every strict prefix of every valid execute packet is an error (or, for
 * the head alone, a packet whose parameter block is missing), never an
 * overread: the copies are exact-size for valgrind. */
START_TEST(test_proto_stmt_execute_truncated)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(exec_cases); i++) {
        for (size_t cut = 0; cut < exec_cases[i].pkt_len; cut++) {
            uint8_t *p = dup_exact((const uint8_t *)exec_cases[i].pkt, cut);
            struct ha_stmt_execute h;
            struct ha_binval vals[16];
            uint8_t types[32];
            bool have = false;
            char err[256] = "";
            int rc = ha_proto_decode_stmt_execute(p, cut, &h, err,
                                                  sizeof(err));

            if (rc == 0)
                rc = ha_proto_decode_stmt_params(p, cut, h.params_pos,
                                                 exec_cases[i].n, types,
                                                 &have, NULL, vals, err,
                                                 sizeof(err));
            ck_assert_msg(rc == -1 && strstr(err, "COM_STMT_EXECUTE"),
                          "case %zu (%s) cut at %zu: rc %d err \"%s\"", i,
                          exec_cases[i].name, cut, rc, err);
            ck_assert_msg(!have, "case %zu cut %zu: types stored", i, cut);
            free(p);
        }
    }
}
END_TEST

START_TEST(test_proto_stmt_execute_bad)
{
    static const struct {
        const char *name;
        const char *pkt;
        size_t pkt_len;
        uint16_t n;
        const char *want;
    } cases[] = {
        {"wrong command", BYTES("\x03\x07\x00\x00\x00\x00\x01\x00\x00\x00"), 0,
         "command byte"},
        {"bind flag 2", BYTES(EXEC_HEAD "\x00\x02\x08\x00"), 1,
         "new_params_bind_flag is 2"},
        {"string longer than the packet",
         BYTES(EXEC_HEAD "\x00\x01\xFD\x00\x05" "abc"), 1, "truncated"},
        {"lenenc 0xFB", BYTES(EXEC_HEAD "\x00\x01\xFD\x00\xFB"), 1,
         "truncated"},
        {"8-byte lenenc that lies",
         BYTES(EXEC_HEAD "\x00\x01\xFC\x00\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
                         "\xFFxx"),
         1, "truncated"},
        {"unknown type 20", BYTES(EXEC_HEAD "\x00\x01\x14\x00\x01"), 1,
         "unsupported type 20"},
        {"date of 5 bytes",
         BYTES(EXEC_HEAD "\x00\x01\x0A\x00\x05\x01\x02\x03\x04\x05"), 1,
         "temporal value of 5 bytes"},
        {"time of 7 bytes",
         BYTES(EXEC_HEAD "\x00\x01\x0B\x00\x07\x01\x02\x03\x04\x05\x06\x07"),
         1, "temporal value of 7 bytes"},
        {"time length past the end", BYTES(EXEC_HEAD "\x00\x01\x0B\x00\x0C"),
         1, "truncated"},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        uint8_t *p = dup_exact((const uint8_t *)cases[i].pkt,
                               cases[i].pkt_len);
        struct ha_stmt_execute h;
        struct ha_binval vals[4];
        uint8_t types[8] = {0};
        bool have = false;
        char err[256] = "";
        int rc = ha_proto_decode_stmt_execute(p, cases[i].pkt_len, &h, err,
                                              sizeof(err));

        if (rc == 0)
            rc = ha_proto_decode_stmt_params(p, cases[i].pkt_len,
                                             h.params_pos, cases[i].n, types,
                                             &have, NULL, vals, err,
                                             sizeof(err));
        ck_assert_msg(rc == -1 && strstr(err, cases[i].want) != NULL,
                      "case %zu (%s): rc %d err \"%s\", expected \"%s\"", i,
                      cases[i].name, rc, err, cases[i].want);
        ck_assert_msg(!have && types[0] == 0, "case %zu: types changed", i);
        free(p);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Other commands                                                       */
/* ------------------------------------------------------------------ */

START_TEST(test_proto_change_user)
{
    static const uint8_t pkt[] = "\x11"
                                 "bob\0"
                                 "\x14"
                                 "01234567890123456789"
                                 "stats\0"
                                 "\x2D\x00"
                                 "mysql_native_password\0"
                                 "\x0A\x03_os\x05Linux";
    static const uint8_t minimal[] = "\x11"
                                     "u\0"
                                     "\x00"
                                     "\0";
    struct ha_handshake_response hr;
    uint32_t caps = HA_SERVER_CAPABILITIES;
    char err[256];
    uint8_t *p = dup_exact(pkt, sizeof(pkt) - 1);

    ck_assert_int_eq(ha_proto_decode_change_user(p, sizeof(pkt) - 1, caps,
                                                 &hr, err, sizeof(err)),
                     0);
    ck_assert_str_eq(hr.user, "bob");
    ck_assert_uint_eq(hr.auth_len, 20);
    ck_assert_mem_eq(hr.auth, "01234567890123456789", 20);
    ck_assert(hr.has_db);
    ck_assert_str_eq(hr.db, "stats");
    ck_assert_uint_eq(hr.collation, 45);
    ck_assert(hr.has_plugin);
    ck_assert_str_eq(hr.plugin, "mysql_native_password");
    /* Every strict prefix that cuts a mandatory field fails cleanly. */
    for (size_t cut = 0; cut < sizeof(pkt) - 1; cut++) {
        uint8_t *q = dup_exact(pkt, cut);
        int rc = ha_proto_decode_change_user(q, cut, caps, &hr, err,
                                             sizeof(err));
        if (cut < 1 + 4 + 21 + 6)
            ck_assert_msg(rc == -1, "cut %zu accepted", cut);
        else if (cut >= 1 + 4 + 21 + 6 + 2 + 22 + 1)
            /* inside the attributes: their length lies */
            ck_assert_msg(rc == -1, "cut %zu in attrs accepted", cut);
        free(q);
    }
    free(p);

    p = dup_exact(minimal, sizeof(minimal) - 1);
    ck_assert_int_eq(ha_proto_decode_change_user(p, sizeof(minimal) - 1, caps,
                                                 &hr, err, sizeof(err)),
                     0);
    ck_assert_str_eq(hr.user, "u");
    ck_assert_uint_eq(hr.auth_len, 0);
    ck_assert(!hr.has_db && !hr.has_plugin);
    free(p);
}
END_TEST

START_TEST(test_proto_field_list_and_args)
{
    static const uint8_t fl[] = "\x04stats_memory_jemalloc\0%";
    static const uint8_t fl_nonul[] = "\x04t1";
    const uint8_t *t, *w;
    size_t tn, wn;
    uint32_t v;
    char err[256];
    uint8_t *p = dup_exact(fl, sizeof(fl) - 1);

    ck_assert_int_eq(ha_proto_decode_field_list(p, sizeof(fl) - 1, &t, &tn,
                                                &w, &wn, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(tn, 21);
    ck_assert_mem_eq(t, "stats_memory_jemalloc", 21);
    ck_assert_uint_eq(wn, 1);
    ck_assert_int_eq(w[0], '%');
    free(p);
    p = dup_exact(fl_nonul, sizeof(fl_nonul) - 1);
    ck_assert_int_eq(ha_proto_decode_field_list(p, sizeof(fl_nonul) - 1, &t,
                                                &tn, &w, &wn, err,
                                                sizeof(err)),
                     0);
    ck_assert_uint_eq(tn, 2);
    ck_assert_uint_eq(wn, 0);
    free(p);
    ck_assert_int_eq(ha_proto_decode_field_list((const uint8_t *)"\x03", 1,
                                                &t, &tn, &w, &wn, err,
                                                sizeof(err)),
                     -1);

    ck_assert_int_eq(ha_proto_decode_u32_arg((const uint8_t *)"\x1B\x01\x00",
                                             3, 2, &v, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(v, 1);
    ck_assert_int_eq(ha_proto_decode_u32_arg(
                         (const uint8_t *)"\x0C\x04\x03\x02\x01", 5, 4, &v,
                         err, sizeof(err)),
                     0);
    ck_assert_uint_eq(v, 0x01020304);
    ck_assert_int_eq(ha_proto_decode_u32_arg((const uint8_t *)"\x0C\x04\x03",
                                             3, 4, &v, err, sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "truncated"));
}
END_TEST

START_TEST(test_proto_long_data)
{
    static const uint8_t pkt[] = "\x18\x02\x00\x00\x00\x01\x00"
                                 "chunk";
    uint32_t id;
    uint16_t param;
    const uint8_t *d;
    size_t n;
    char err[256];
    uint8_t *p = dup_exact(pkt, sizeof(pkt) - 1);

    ck_assert_int_eq(ha_proto_decode_long_data(p, sizeof(pkt) - 1, &id,
                                               &param, &d, &n, err,
                                               sizeof(err)),
                     0);
    ck_assert_uint_eq(id, 2);
    ck_assert_uint_eq(param, 1);
    ck_assert_uint_eq(n, 5);
    ck_assert_mem_eq(d, "chunk", 5);
    for (size_t cut = 0; cut < 7; cut++)
        ck_assert_int_eq(ha_proto_decode_long_data(p, cut, &id, &param, &d,
                                                   &n, err, sizeof(err)),
                         -1);
    ck_assert_int_eq(ha_proto_decode_long_data(p, 7, &id, &param, &d, &n, err,
                                               sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 0);
    free(p);
}
END_TEST

static Suite *
proto_suite(void)
{
    Suite *s = suite_create("proto");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_test(tc, test_proto_lenenc_str_roundtrip);
    tcase_add_test(tc, test_proto_get_fixed);
    tcase_add_test(tc, test_proto_reader_single);
    tcase_add_test(tc, test_proto_reader_back_to_back);
    tcase_add_loop_test(tc, test_proto_reader_split_at, 0,
                        (int)sizeof(stream) + 1);
    tcase_add_test(tc, test_proto_reader_split_twice);
    tcase_add_test(tc, test_proto_reader_byte_at_a_time);
    tcase_add_test(tc, test_proto_write_packet_small);
    tcase_add_test(tc, test_proto_handshake_layout);
    tcase_add_test(tc, test_proto_auth_switch_bytes);
    tcase_add_test(tc, test_proto_ok_err_eof_bytes);
    tcase_add_test(tc, test_proto_coldef_bytes);
    tcase_add_test(tc, test_proto_handshake_response_clients);
    tcase_add_test(tc, test_proto_ssl_request);
    tcase_add_test(tc, test_proto_prepare_ok_bytes);
    tcase_add_test(tc, test_proto_binary_row_bytes);
    tcase_add_test(tc, test_proto_stmt_execute_types);
    tcase_add_test(tc, test_proto_stmt_execute_reuse_types);
    tcase_add_test(tc, test_proto_stmt_execute_long_data);
    tcase_add_test(tc, test_proto_change_user);
    tcase_add_test(tc, test_proto_field_list_and_args);
    tcase_add_test(tc, test_proto_long_data);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    /* 16 MiB payloads are slow under valgrind. */
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_proto_lenenc_boundaries);
    tcase_add_test(tc, test_proto_big_packet_plus_10);
    tcase_add_test(tc, test_proto_big_packet_exact);
    tcase_add_test(tc, test_proto_write_seq_wraps);
    tcase_add_test(tc, test_proto_reader_max_payload_exact);
    tcase_add_test(tc, test_proto_handshake_response_limits);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_proto_get_truncated);
    tcase_add_test(tc, test_proto_get_le_bad_width);
    tcase_add_test(tc, test_proto_reader_over_max);
    tcase_add_test(tc, test_proto_reader_over_max_split);
    tcase_add_test(tc, test_proto_reader_bad_seq_in_split);
    tcase_add_test(tc, test_proto_handshake_response_truncated);
    tcase_add_test(tc, test_proto_handshake_response_bad);
    tcase_add_test(tc, test_proto_handshake_response_tiny);
    tcase_add_test(tc, test_proto_stmt_execute_truncated);
    tcase_add_test(tc, test_proto_stmt_execute_bad);
    suite_add_tcase(s, tc);

    return s;
}

HA_CHECK_MAIN(proto_suite)
