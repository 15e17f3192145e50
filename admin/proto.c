/* SPDX-License-Identifier: MIT
 *
 * MySQL client/server wire codec (see proto.h): framing and the basic
 * types every packet is made of. Decoders work on (buffer, length) and
 * never trust a length the peer sent: every read goes through a
 * bounds-checked cursor (struct ha_reader) that fails without moving.
 * Encoders append to a struct ha_buf whose allocation failure is sticky, so
 * they return nothing and the caller checks ha_buf_failed() once. No
 * sockets, libevent or SQLite here; conn.c moves the bytes. The packets,
 * one family per file: proto_handshake.c (the connection phase),
 * proto_command.c (the command phase's text protocol), proto_binary.c
 * (prepared statements). The packet each section handles is named in its
 * banner as the MySQL protocol documentation names it.
 */
#include "admin/proto.h"

#include <string.h>

#include "core/buf.h"
#include "core/util.h"

/* After a packet this large, give the storage back rather than keep a
 * 16 MiB buffer alive on an idle connection. */
#define READER_KEEP_CAP (64u * 1024u)

/* ------------------------------------------------------------------ */
/* Framing (MySQL protocol: Protocol::Packet)                         */
/* ------------------------------------------------------------------ */

void
ha_proto_reader_init(struct ha_pkt_reader *r, size_t max_payload)
{
    memset(r, 0, sizeof(*r));
    ha_buf_init(&r->payload);
    r->max_payload = max_payload;
}

void
ha_proto_reader_free(struct ha_pkt_reader *r)
{
    ha_buf_free(&r->payload);
    ha_proto_reader_init(r, r->max_payload);
}

/* Header of one physical packet is complete in r->hdr: check it against
 * the logical packet being assembled. Returns 0 or -1 with err set. */
static int
reader_start_chunk(struct ha_pkt_reader *r, char *err, size_t errlen)
{
    size_t chunk_len =
        (size_t)r->hdr[0] | (size_t)r->hdr[1] << 8 | (size_t)r->hdr[2] << 16;
    uint8_t seq = r->hdr[3];

    if (r->continued) {
        /* Each chunk of a split packet carries the next sequence id
         * (Protocol::Packet: payloads of 16 MiB and more are split);
         * anything else means we lost sync. */
        uint8_t want = (uint8_t)(r->last_seq + 1);
        if (seq != want) {
            ha_err_set(err, errlen,
                       "packet sequence id %u inside a split packet, "
                       "expected %u",
                       seq, want);
            r->error = HA_PROTO_READER_OUT_OF_ORDER;
            return -1;
        }
    } else {
        r->first_seq = seq;
    }
    r->last_seq = seq;

    /* Compare without adding so a huge chunk cannot wrap the sum. */
    if (chunk_len > r->max_payload ||
        r->payload.len > r->max_payload - chunk_len) {
        ha_err_set(err, errlen,
                   "packet payload exceeds max_allowed_packet (%zu bytes)",
                   r->max_payload);
        r->error = HA_PROTO_READER_TOO_LARGE;
        return -1;
    }
    r->chunk_left = chunk_len;
    r->continued = chunk_len == HA_PROTO_MAX_CHUNK;
    r->in_chunk = true;
    r->hdr_have = 0;
    return 0;
}

ssize_t
ha_proto_reader_feed(struct ha_pkt_reader *r, const uint8_t *buf, size_t len,
                     bool *ready, char *err, size_t errlen)
{
    size_t used = 0;

    *ready = r->ready;
    if (r->ready)
        return 0; /* the caller has not taken the last packet yet */

    for (;;) {
        if (!r->in_chunk) {
            while (r->hdr_have < HA_PROTO_HEADER_LEN && used < len)
                r->hdr[r->hdr_have++] = buf[used++];
            if (r->hdr_have < HA_PROTO_HEADER_LEN)
                break;
            if (reader_start_chunk(r, err, errlen) != 0)
                return -1;
        }

        size_t n = len - used;
        if (n > r->chunk_left)
            n = r->chunk_left;
        if (n > 0) {
            ha_buf_append(&r->payload, buf + used, n);
            if (ha_buf_failed(&r->payload)) {
                ha_err_set(err, errlen,
                           "out of memory reading a %zu-byte packet",
                           r->payload.len + r->chunk_left);
                r->error = HA_PROTO_READER_NOMEM;
                return -1;
            }
            used += n;
            r->chunk_left -= n;
        }
        if (r->chunk_left > 0)
            break; /* need more bytes */

        r->in_chunk = false;
        if (!r->continued) {
            /* A chunk shorter than 0xFFFFFF ends the logical packet;
             * stop here so the caller sees packets one at a time. */
            r->ready = true;
            *ready = true;
            break;
        }
    }
    return (ssize_t)used;
}

void
ha_proto_reader_next(struct ha_pkt_reader *r)
{
    if (r->payload.cap > READER_KEEP_CAP) {
        ha_buf_free(&r->payload);
        ha_buf_init(&r->payload);
    } else {
        ha_buf_reset(&r->payload);
    }
    r->hdr_have = 0;
    r->chunk_left = 0;
    r->in_chunk = false;
    r->continued = false;
    r->ready = false;
    r->first_seq = 0;
    r->last_seq = 0;
}

void
ha_proto_write_packet(struct ha_buf *out, uint8_t *seq, const uint8_t *payload,
                      size_t len)
{
    size_t off = 0;
    size_t chunk;

    (void)ha_buf_reserve(out, len + HA_PROTO_HEADER_LEN *
                                        (len / HA_PROTO_MAX_CHUNK + 1));
    /* A chunk of exactly 0xFFFFFF says "more follows", so an exact
     * multiple ends with an empty packet (Protocol::Packet). */
    do {
        chunk = len - off;
        if (chunk > HA_PROTO_MAX_CHUNK)
            chunk = HA_PROTO_MAX_CHUNK;
        ha_buf_append_le(out, chunk, 3);
        ha_buf_append_u8(out, *seq);
        *seq = (uint8_t)(*seq + 1); /* wraps 255 -> 0 */
        if (chunk > 0)
            ha_buf_append(out, payload + off, chunk);
        off += chunk;
    } while (chunk == HA_PROTO_MAX_CHUNK);
}

/* ------------------------------------------------------------------ */
/* Length-encoded values and the bounds-checked cursor                */
/* ------------------------------------------------------------------ */

int
ha_proto_get_u8(struct ha_reader *r, uint8_t *v)
{
    if (ha_reader_left(r) < 1)
        return -1;
    *v = r->p[r->pos++];
    return 0;
}

int
ha_proto_get_le(struct ha_reader *r, size_t width, uint64_t *v)
{
    uint64_t x = 0;

    if (width == 0 || width > 8 || ha_reader_left(r) < width)
        return -1;
    for (size_t i = 0; i < width; i++)
        x |= (uint64_t)r->p[r->pos + i] << (8 * i);
    r->pos += width;
    *v = x;
    return 0;
}

int
ha_proto_get_lenenc(struct ha_reader *r, uint64_t *v)
{
    size_t start = r->pos;
    size_t width;
    uint8_t first;

    if (ha_proto_get_u8(r, &first) != 0)
        return -1;
    if (first < 0xFB) {
        *v = first;
        return 0;
    }
    switch (first) {
    case 0xFC:
        width = 2;
        break;
    case 0xFD:
        width = 3;
        break;
    case 0xFE:
        width = 8;
        break;
    default:
        /* 0xFB is NULL (only meaningful in rows) and 0xFF is the ERR
         * header: neither is a length (Protocol::LengthEncodedInteger). */
        r->pos = start;
        return -1;
    }
    if (ha_proto_get_le(r, width, v) != 0) {
        r->pos = start;
        return -1;
    }
    return 0;
}

int
ha_proto_get_lenenc_str(struct ha_reader *r, const uint8_t **s, size_t *n)
{
    size_t start = r->pos;
    uint64_t len;

    if (ha_proto_get_lenenc(r, &len) != 0)
        return -1;
    /* Compare as uint64_t: a lying 8-byte length must not truncate into
     * something that fits. */
    if (len > (uint64_t)ha_reader_left(r)) {
        r->pos = start;
        return -1;
    }
    *s = r->p + r->pos;
    *n = (size_t)len;
    r->pos += (size_t)len;
    return 0;
}

int
ha_proto_get_strz(struct ha_reader *r, const char **s, size_t *n)
{
    const uint8_t *start;
    const uint8_t *nul;

    if (ha_reader_left(r) == 0)
        return -1;
    start = r->p + r->pos;
    nul = memchr(start, 0, ha_reader_left(r));
    if (nul == NULL)
        return -1;
    *s = (const char *)start;
    *n = (size_t)(nul - start);
    r->pos += *n + 1;
    return 0;
}

int
ha_proto_get_bytes(struct ha_reader *r, size_t n, const uint8_t **s)
{
    if (ha_reader_left(r) < n)
        return -1;
    /* p may be NULL for an empty payload; NULL + 0 is still UB. */
    *s = n > 0 ? r->p + r->pos : r->p;
    r->pos += n;
    return 0;
}

size_t
ha_proto_lenenc_size(uint64_t v)
{
    if (v < 251)
        return 1;
    if (v <= 0xFFFF)
        return 3;
    if (v <= 0xFFFFFF)
        return 4;
    return 9;
}

void
ha_proto_put_lenenc(struct ha_buf *b, uint64_t v)
{
    switch (ha_proto_lenenc_size(v)) {
    case 1:
        ha_buf_append_u8(b, (uint8_t)v);
        break;
    case 3:
        ha_buf_append_u8(b, 0xFC);
        ha_buf_append_le(b, v, 2);
        break;
    case 4:
        ha_buf_append_u8(b, 0xFD);
        ha_buf_append_le(b, v, 3);
        break;
    default:
        ha_buf_append_u8(b, 0xFE);
        ha_buf_append_le(b, v, 8);
        break;
    }
}

void
ha_proto_put_lenenc_str(struct ha_buf *b, const void *s, size_t n)
{
    ha_proto_put_lenenc(b, n);
    if (n > 0)
        ha_buf_append(b, s, n);
}
