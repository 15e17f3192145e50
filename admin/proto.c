/* SPDX-License-Identifier: MIT
 *
 * MySQL client/server wire codec. Decoders work on (buffer, length) and
 * never trust a length the peer sent: every read goes through a
 * bounds-checked cursor (struct ha_reader) that fails without moving.
 * Encoders append to a struct ha_buf whose allocation failure is sticky, so
 * they return nothing and the caller checks ha_buf_failed() once. No
 * sockets, libevent or SQLite here; conn.c moves the bytes.
 *
 * Section numbers (§) refer to shared/reference/mysql-protocol.md.
 */
#include "proto.h"

#include <string.h>

#include "buf.h"
#include "util.h"

/* After a packet this large, give the storage back rather than keep a
 * 16 MiB buffer alive on an idle connection. */
#define READER_KEEP_CAP (64u * 1024u)

/* ------------------------------------------------------------------ */
/* Framing (§1.1)                                                       */
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
         * (§1.1, pitfall 16); anything else means we lost sync. */
        uint8_t want = (uint8_t)(r->last_seq + 1);
        if (seq != want) {
            ha_err_set(err, errlen,
                       "packet sequence id %u inside a split packet, "
                       "expected %u",
                       seq, want);
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
     * multiple ends with an empty packet (§1.1). */
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
/* Length-encoded values and the bounds-checked cursor (§1.2)           */
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
         * header: neither is a length (§1.2). */
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

/* lenenc string of a C string; NULL is sent as "" because every
 * ColumnDefinition41 string must be present (§3.3). */
static void
put_lenenc_cstr(struct ha_buf *b, const char *s)
{
    if (s == NULL)
        s = "";
    ha_proto_put_lenenc_str(b, s, strlen(s));
}

/* ------------------------------------------------------------------ */
/* Connection phase (§2)                                                */
/* ------------------------------------------------------------------ */

void
ha_proto_encode_handshake(struct ha_buf *b, const struct ha_handshake *h)
{
    static const uint8_t reserved[10];

    ha_buf_append_u8(b, 0x0A); /* protocol version 10 */
    ha_buf_append_strz(b, h->server_version ? h->server_version : "");
    ha_buf_append_le(b, h->connection_id, 4);
    ha_buf_append(b, h->scramble, 8);
    ha_buf_append_u8(b, 0x00); /* filler */
    ha_buf_append_le(b, h->capabilities & 0xFFFFu, 2);
    ha_buf_append_u8(b, h->collation);
    ha_buf_append_le(b, h->status, 2);
    ha_buf_append_le(b, h->capabilities >> 16, 2);
    /* 21 = 20 scramble bytes + NUL. Clients disagree on how to find the
     * plugin name after part 2; only 21 with a 12+NUL part 2 satisfies
     * all of them (§2.1, pitfall 5). */
    ha_buf_append_u8(b, (h->capabilities & HA_CLIENT_PLUGIN_AUTH) ? 21 : 0);
    /* All zero: with CLIENT_MYSQL set MariaDB clients ignore these; we
     * advertise no MariaDB extended capabilities (§2.1). */
    ha_buf_append(b, reserved, sizeof(reserved));
    if (h->capabilities & HA_CLIENT_SECURE_CONNECTION) {
        ha_buf_append(b, h->scramble + 8, HA_SCRAMBLE_LEN - 8);
        ha_buf_append_u8(b, 0x00);
    }
    if (h->capabilities & HA_CLIENT_PLUGIN_AUTH)
        ha_buf_append_strz(b, h->auth_plugin ? h->auth_plugin : "");
}

/* Copies a string field that the caller already bounded. */
static void
copy_field(char *dst, const char *src, size_t n)
{
    if (n > 0)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Reads a string<NUL> of at most max bytes into dst (max + 1 bytes). */
static int
get_strz_field(struct ha_reader *rd, const char *field, char *dst, size_t max,
               char *err, size_t errlen)
{
    const char *s;
    size_t n;

    if (ha_proto_get_strz(rd, &s, &n) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: %s is not "
                   "NUL-terminated",
                   field);
        return -1;
    }
    if (n > max) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: %s is %zu bytes, "
                   "longer than %zu",
                   field, n, max);
        return -1;
    }
    copy_field(dst, s, n);
    return 0;
}

/* The auth response: its framing depends on the client's flags (§2.4). */
static int
get_auth_response(struct ha_reader *rd, struct ha_handshake_response *out,
                  char *err, size_t errlen)
{
    uint64_t n;
    const uint8_t *data;

    if (out->capabilities & HA_CLIENT_PLUGIN_AUTH_LENENC_DATA) {
        if (ha_proto_get_lenenc(rd, &n) != 0) {
            ha_err_set(err, errlen,
                       "malformed HandshakeResponse41: auth_response "
                       "length is missing or invalid");
            return -1;
        }
    } else if (out->capabilities & HA_CLIENT_SECURE_CONNECTION) {
        uint8_t n8;
        if (ha_proto_get_u8(rd, &n8) != 0) {
            ha_err_set(err, errlen,
                       "malformed HandshakeResponse41: auth_response "
                       "length is missing");
            return -1;
        }
        n = n8;
    } else {
        const char *s;
        size_t len;
        if (ha_proto_get_strz(rd, &s, &len) != 0) {
            ha_err_set(err, errlen,
                       "malformed HandshakeResponse41: auth_response is "
                       "not NUL-terminated");
            return -1;
        }
        if (len > HA_PROTO_MAX_AUTH)
            goto too_long;
        memcpy(out->auth, s, len);
        out->auth_len = len;
        return 0;
    }

    if (n > HA_PROTO_MAX_AUTH)
        goto too_long;
    if (ha_proto_get_bytes(rd, (size_t)n, &data) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: auth_response length "
                   "%u exceeds the %zu bytes left",
                   (unsigned)n, ha_reader_left(rd));
        return -1;
    }
    if (n > 0)
        memcpy(out->auth, data, (size_t)n);
    out->auth_len = (size_t)n;
    return 0;

too_long:
    ha_err_set(err, errlen,
               "malformed HandshakeResponse41: auth_response is longer "
               "than %d bytes",
               HA_PROTO_MAX_AUTH);
    return -1;
}

/* Connect attributes: lenenc total, then lenenc key/value pairs filling
 * exactly that total. We have no use for them, but a length that lies is
 * a hostile or broken client, so walk them all (§2.4). */
static int
skip_connect_attrs(struct ha_reader *rd, char *err, size_t errlen)
{
    uint64_t total;
    const uint8_t *attrs;
    struct ha_reader sub;

    if (ha_proto_get_lenenc(rd, &total) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: connect_attrs length "
                   "is invalid");
        return -1;
    }
    if (total > (uint64_t)ha_reader_left(rd)) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: connect_attrs length "
                   "%llu exceeds the %zu bytes left",
                   (unsigned long long)total, ha_reader_left(rd));
        return -1;
    }
    (void)ha_proto_get_bytes(rd, (size_t)total, &attrs);
    ha_reader_init(&sub, attrs, (size_t)total);
    while (ha_reader_left(&sub) > 0) {
        const uint8_t *s;
        size_t n;
        if (ha_proto_get_lenenc_str(&sub, &s, &n) != 0 ||
            ha_proto_get_lenenc_str(&sub, &s, &n) != 0) {
            ha_err_set(err, errlen,
                       "malformed HandshakeResponse41: connect_attrs "
                       "key/value pair at offset %zu overruns the "
                       "attribute block",
                       sub.pos);
            return -1;
        }
    }
    return 0;
}

int
ha_proto_decode_handshake_response(const uint8_t *p, size_t len,
                                   struct ha_handshake_response *out, char *err,
                                   size_t errlen)
{
    struct ha_reader rd;
    uint64_t v;
    const uint8_t *filler;

    memset(out, 0, sizeof(*out));
    ha_reader_init(&rd, p, len);

    /* PROTOCOL_41 sits in the low 16 bits, which the pre-4.1
     * HandshakeResponse320 shares, so an old client is refused by name
     * rather than as "truncated". */
    if (len < 2) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: client_flag is "
                   "truncated");
        return -1;
    }
    if (!((p[0] | (unsigned)p[1] << 8) & HA_CLIENT_PROTOCOL_41)) {
        ha_err_set(err, errlen,
                   "client does not support the 4.1 protocol "
                   "(CLIENT_PROTOCOL_41 not set)");
        return -1;
    }
    if (ha_proto_get_le(&rd, 4, &v) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: client_flag is "
                   "truncated");
        return -1;
    }
    out->capabilities = (uint32_t)v;
    if (ha_proto_get_le(&rd, 4, &v) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: max_packet_size is "
                   "truncated");
        return -1;
    }
    out->max_packet = (uint32_t)v;
    if (ha_proto_get_u8(&rd, &out->collation) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: character_set is "
                   "missing");
        return -1;
    }
    /* Not checked for zeros: MariaDB clients put extended capabilities
     * in the last 4 filler bytes (§2.4 rule d). */
    if (ha_proto_get_bytes(&rd, 23, &filler) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: filler is truncated");
        return -1;
    }

    /* SSLRequest is exactly the 32-byte prefix (§2.3). A full response
     * sent after TLS still carries CLIENT_SSL, so length decides. */
    if (ha_reader_left(&rd) == 0 && (out->capabilities & HA_CLIENT_SSL)) {
        out->is_ssl_request = true;
        return 0;
    }

    if (get_strz_field(&rd, "username", out->user, HA_PROTO_MAX_USER, err,
                       errlen) != 0)
        return -1;
    if (get_auth_response(&rd, out, err, errlen) != 0)
        return -1;

    /* Optional trailing fields are present only if bytes remain: clients
     * set flags without sending the field (§2.4 rules a, c). */
    if ((out->capabilities & HA_CLIENT_CONNECT_WITH_DB) &&
        ha_reader_left(&rd) > 0) {
        if (get_strz_field(&rd, "database", out->db, HA_PROTO_MAX_DB, err,
                           errlen) != 0)
            return -1;
        out->has_db = true;
    }
    /* May be empty: some JDBC clients send "" meaning native (§2.4). */
    if ((out->capabilities & HA_CLIENT_PLUGIN_AUTH) &&
        ha_reader_left(&rd) > 0) {
        if (get_strz_field(&rd, "client_plugin_name", out->plugin,
                           HA_PROTO_MAX_PLUGIN, err, errlen) != 0)
            return -1;
        out->has_plugin = true;
    }
    if ((out->capabilities & HA_CLIENT_CONNECT_ATTRS) &&
        ha_reader_left(&rd) > 0) {
        if (skip_connect_attrs(&rd, err, errlen) != 0)
            return -1;
    }
    /* Anything after (zstd level, attrs sent without the flag by old Go
     * drivers, go-sql-driver#1636) is ignored. */
    return 0;
}

void
ha_proto_encode_auth_switch(struct ha_buf *b, const char *plugin,
                            const uint8_t scramble[HA_SCRAMBLE_LEN])
{
    ha_buf_append_u8(b, 0xFE);
    ha_buf_append_strz(b, plugin ? plugin : "");
    ha_buf_append(b, scramble, HA_SCRAMBLE_LEN);
    /* The official client fails without the NUL; sqlx wants exactly 21
     * bytes of plugin data (§2.5.1, pitfall 4). */
    ha_buf_append_u8(b, 0x00);
}

/* ------------------------------------------------------------------ */
/* Generic responses (§3.2)                                             */
/* ------------------------------------------------------------------ */

void
ha_proto_encode_ok(struct ha_buf *b, uint8_t header, uint64_t affected,
                   uint64_t insert_id, uint16_t status, uint16_t warnings,
                   const char *info)
{
    ha_buf_append_u8(b, header);
    ha_proto_put_lenenc(b, affected);
    ha_proto_put_lenenc(b, insert_id);
    ha_buf_append_le(b, status, 2);
    ha_buf_append_le(b, warnings, 2);
    /* The info is length-encoded even without SESSION_TRACK: MySQL's and
     * MariaDB's servers write it with net_store_data(), and libmariadb's
     * ma_read_ok_packet() and libmysqlclient's read_ok_ex() read it with
     * net_field_length(), so a string<EOF> (as the protocol page says)
     * loses its first byte in the mysql/mariadb CLI. Sent only when
     * non-empty, as those servers do. The 0xFE terminator gets no info:
     * clients tell it from a row by its length < 9 (§3.4, pitfall 2). */
    if (info != NULL && info[0] != '\0' && header != 0xFE)
        ha_proto_put_lenenc_str(b, info, strlen(info));
}

void
ha_proto_encode_err(struct ha_buf *b, uint16_t code, const char *sqlstate,
                    const char *message)
{
    ha_buf_append_u8(b, 0xFF);
    ha_buf_append_le(b, code, 2);
    if (sqlstate != NULL) {
        /* Exactly 5 characters or clients misparse the message (ProxySQL
         * once sent "#2800", §3.2); fall back to the generic state. */
        if (strlen(sqlstate) != 5)
            sqlstate = "HY000";
        ha_buf_append_u8(b, '#');
        ha_buf_append(b, sqlstate, 5);
    }
    ha_buf_append_str(b, message ? message : "");
}

void
ha_proto_encode_eof(struct ha_buf *b, uint16_t warnings, uint16_t status)
{
    ha_buf_append_u8(b, 0xFE);
    ha_buf_append_le(b, warnings, 2);
    ha_buf_append_le(b, status, 2);
}

/* ------------------------------------------------------------------ */
/* Text result sets (§3.3)                                              */
/* ------------------------------------------------------------------ */

void
ha_proto_encode_coldef(struct ha_buf *b, const struct ha_coldef *c,
                       bool with_default)
{
    static const uint8_t filler[2];

    put_lenenc_cstr(b, "def");
    put_lenenc_cstr(b, c->schema);
    put_lenenc_cstr(b, c->table);
    put_lenenc_cstr(b, c->org_table);
    put_lenenc_cstr(b, c->name);
    put_lenenc_cstr(b, c->org_name);
    ha_proto_put_lenenc(b, 0x0C); /* length of the fixed fields */
    ha_buf_append_le(b, c->collation, 2);
    ha_buf_append_le(b, c->length, 4);
    ha_buf_append_u8(b, c->type);
    ha_buf_append_le(b, c->flags, 2);
    ha_buf_append_u8(b, c->decimals);
    /* Counted in the 0x0C; PyMySQL and libmariadb break without them
     * (pitfall 3). */
    ha_buf_append(b, filler, sizeof(filler));
    if (with_default)
        ha_buf_append_u8(b, 0xFB); /* NULL default, COM_FIELD_LIST */
}
