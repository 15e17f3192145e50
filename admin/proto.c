/* SPDX-License-Identifier: MIT
 *
 * MySQL client/server wire codec. Decoders work on (buffer, length) and
 * never trust a length the peer sent: every read goes through a
 * bounds-checked cursor (struct ha_reader) that fails without moving.
 * Encoders append to a struct ha_buf whose allocation failure is sticky, so
 * they return nothing and the caller checks ha_buf_failed() once. No
 * sockets, libevent or SQLite here; conn.c moves the bytes. The packet
 * each section handles is named in its banner as the MySQL protocol
 * documentation names it.
 */
#include "admin/proto.h"

#include <stdio.h>
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

/* lenenc string of a C string; NULL is sent as "" because every
 * ColumnDefinition41 string must be present (Protocol::ColumnDefinition41
 * has no NULL for them). */
static void
put_lenenc_cstr(struct ha_buf *b, const char *s)
{
    if (s == NULL)
        s = "";
    ha_proto_put_lenenc_str(b, s, strlen(s));
}

/* ------------------------------------------------------------------ */
/* Connection phase (MySQL protocol: Connection Phase)                */
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
     * plugin name after part 2 (some take this length, some look for the
     * NUL): only 21 with a 12+NUL part 2 gives all of them the name. */
    ha_buf_append_u8(b, (h->capabilities & HA_CLIENT_PLUGIN_AUTH) ? 21 : 0);
    /* All zero: with CLIENT_MYSQL set MariaDB clients ignore these; we
     * advertise no MariaDB extended capabilities. */
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

/* The auth response: its framing depends on the client's flags
 * (Protocol::HandshakeResponse41: lenenc with
 * CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA, else a 1-byte length with
 * CLIENT_SECURE_CONNECTION, else NUL-terminated). */
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
 * a hostile or broken client, so walk them all. */
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
     * in the last 4 filler bytes (bytes 19..22). */
    if (ha_proto_get_bytes(&rd, 23, &filler) != 0) {
        ha_err_set(err, errlen,
                   "malformed HandshakeResponse41: filler is truncated");
        return -1;
    }

    /* SSLRequest is exactly the 32-byte prefix of a response
     * (Protocol::SSLRequest). A full response sent after TLS still
     * carries CLIENT_SSL, so length decides. */
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
     * set flags without sending the field (node-mysql2 sets
     * CLIENT_CONNECT_ATTRS and sends no attributes). */
    if ((out->capabilities & HA_CLIENT_CONNECT_WITH_DB) &&
        ha_reader_left(&rd) > 0) {
        if (get_strz_field(&rd, "database", out->db, HA_PROTO_MAX_DB, err,
                           errlen) != 0)
            return -1;
        out->has_db = true;
    }
    /* May be empty: some JDBC clients send "" meaning native. */
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
     * bytes of plugin data (Protocol::AuthSwitchRequest: MySQL and
     * MariaDB send the scramble and a NUL). */
    ha_buf_append_u8(b, 0x00);
}

/* ------------------------------------------------------------------ */
/* Generic responses (MySQL protocol: OK_Packet, ERR_Packet, EOF)      */
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
     * clients tell it from a row by its length < 9 (OK_Packet under
     * CLIENT_DEPRECATE_EOF; longer, it reads as a row). */
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
         * once sent "#2800"); fall back to the generic state. */
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
/* Text result sets (MySQL protocol: Text Resultset)                  */
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
    /* Counted in the 0x0C; PyMySQL (a struct error) and libmariadb
     * (malformed packet) break without them. */
    ha_buf_append(b, filler, sizeof(filler));
    if (with_default && c->default_value != NULL)
        put_lenenc_cstr(b, c->default_value);
    else if (with_default)
        ha_buf_append_u8(b, 0xFB); /* NULL default, COM_FIELD_LIST */
}

/* ------------------------------------------------------------------ */
/* Other commands' payloads (MySQL protocol: Command Phase)           */
/* ------------------------------------------------------------------ */

int
ha_proto_decode_change_user(const uint8_t *p, size_t len, uint32_t caps,
                            struct ha_handshake_response *out, char *err,
                            size_t errlen)
{
    struct ha_reader rd;
    uint8_t cmd;
    uint64_t v;

    memset(out, 0, sizeof(*out));
    out->capabilities = caps;
    ha_reader_init(&rd, p, len);
    if (ha_proto_get_u8(&rd, &cmd) != 0 || cmd != HA_COM_CHANGE_USER) {
        ha_err_set(err, errlen, "malformed COM_CHANGE_USER: no command byte");
        return -1;
    }
    if (get_strz_field(&rd, "username", out->user, HA_PROTO_MAX_USER, err,
                       errlen) != 0)
        return -1;
    /* The auth response of COM_CHANGE_USER is never lenenc: a 1-byte
     * length with SECURE_CONNECTION, else string<NUL>. */
    out->capabilities &= ~HA_CLIENT_PLUGIN_AUTH_LENENC_DATA;
    if (get_auth_response(&rd, out, err, errlen) != 0)
        return -1;
    out->capabilities = caps;
    if (get_strz_field(&rd, "database", out->db, HA_PROTO_MAX_DB, err,
                       errlen) != 0)
        return -1;
    out->has_db = out->db[0] != '\0';
    /* Optional trailing fields, each only if bytes remain. */
    if (ha_reader_left(&rd) >= 2) {
        (void)ha_proto_get_le(&rd, 2, &v);
        out->collation = (uint8_t)v;
    }
    if ((caps & HA_CLIENT_PLUGIN_AUTH) && ha_reader_left(&rd) > 0) {
        if (get_strz_field(&rd, "client_plugin_name", out->plugin,
                           HA_PROTO_MAX_PLUGIN, err, errlen) != 0)
            return -1;
        out->has_plugin = true;
    }
    if ((caps & HA_CLIENT_CONNECT_ATTRS) && ha_reader_left(&rd) > 0) {
        if (skip_connect_attrs(&rd, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int
ha_proto_decode_field_list(const uint8_t *p, size_t len,
                           const uint8_t **table, size_t *table_len,
                           const uint8_t **wild, size_t *wild_len, char *err,
                           size_t errlen)
{
    const uint8_t *nul;

    if (len < 1 || p[0] != HA_COM_FIELD_LIST) {
        ha_err_set(err, errlen, "malformed COM_FIELD_LIST: no command byte");
        return -1;
    }
    *table = p + 1;
    nul = len > 1 ? memchr(p + 1, '\0', len - 1) : NULL;
    if (nul == NULL) {
        *table_len = len - 1;
        *wild = p + len;
        *wild_len = 0;
    } else {
        *table_len = (size_t)(nul - (p + 1));
        *wild = nul + 1;
        *wild_len = len - (size_t)(nul + 1 - p);
    }
    return 0;
}

int
ha_proto_decode_u32_arg(const uint8_t *p, size_t len, size_t width,
                        uint32_t *v, char *err, size_t errlen)
{
    struct ha_reader rd;
    uint64_t x = 0;

    ha_reader_init(&rd, p, len);
    if ((width != 2 && width != 4) || len < 1 + width) {
        ha_err_set(err, errlen,
                   "malformed command 0x%02x: %zu-byte argument is "
                   "truncated",
                   len > 0 ? p[0] : 0, width);
        return -1;
    }
    rd.pos = 1;
    (void)ha_proto_get_le(&rd, width, &x);
    *v = (uint32_t)x;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Binary protocol (MySQL protocol: Binary Protocol Resultset)        */
/* ------------------------------------------------------------------ */

void
ha_proto_encode_prepare_ok(struct ha_buf *b, uint32_t stmt_id,
                           uint16_t n_columns, uint16_t n_params,
                           uint16_t warnings)
{
    ha_buf_append_u8(b, 0x00);
    ha_buf_append_le(b, stmt_id, 4);
    ha_buf_append_le(b, n_columns, 2);
    ha_buf_append_le(b, n_params, 2);
    ha_buf_append_u8(b, 0x00);
    ha_buf_append_le(b, warnings, 2);
}

/* Width of a fixed-size binary value, or 0 for lenenc-framed types and
 * -1 for the temporal types (length byte first). */
static int
binary_width(uint8_t type)
{
    switch (type) {
    case HA_TYPE_TINY:
        return 1;
    case HA_TYPE_SHORT:
    case HA_TYPE_YEAR:
        return 2;
    case HA_TYPE_LONG:
    case HA_TYPE_INT24:
    case HA_TYPE_FLOAT:
        return 4;
    case HA_TYPE_LONGLONG:
    case HA_TYPE_DOUBLE:
        return 8;
    case HA_TYPE_DATE:
    case HA_TYPE_DATETIME:
    case HA_TYPE_TIMESTAMP:
    case HA_TYPE_NEWDATE:
    case HA_TYPE_TIME:
        return -1;
    default:
        return 0;
    }
}

static bool
is_string_type(uint8_t type)
{
    switch (type) {
    case HA_TYPE_DECIMAL:
    case HA_TYPE_NEWDECIMAL:
    case HA_TYPE_VARCHAR:
    case HA_TYPE_BIT:
    case HA_TYPE_JSON:
    case HA_TYPE_ENUM:
    case HA_TYPE_SET:
    case HA_TYPE_TINY_BLOB:
    case HA_TYPE_MEDIUM_BLOB:
    case HA_TYPE_LONG_BLOB:
    case HA_TYPE_BLOB:
    case HA_TYPE_VAR_STRING:
    case HA_TYPE_STRING:
    case HA_TYPE_GEOMETRY:
        return true;
    default:
        return false;
    }
}

/* (int64_t)d is undefined for NaN and for values outside int64_t (a REAL
 * such as 1e300 under an integer column type): saturate instead. */
static int64_t
double_to_i64(double d)
{
    if (d != d)
        return 0;
    if (d >= 9223372036854775807.0)
        return INT64_MAX;
    if (d <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)d;
}

static void
put_binary_value(struct ha_buf *b, const struct ha_binval *v)
{
    int width = binary_width(v->type);
    char num[40];
    int64_t i;
    double d;

    if (width > 0 && v->type != HA_TYPE_FLOAT && v->type != HA_TYPE_DOUBLE) {
        i = v->kind == HA_BINVAL_INT      ? v->i
            : v->kind == HA_BINVAL_DOUBLE ? double_to_i64(v->d)
                                          : 0;
        ha_buf_append_le(b, (uint64_t)i, (size_t)width);
    } else if (width > 0) {
        d = v->kind == HA_BINVAL_DOUBLE ? v->d
            : v->kind == HA_BINVAL_INT
                ? (v->is_unsigned ? (double)(uint64_t)v->i : (double)v->i)
                : 0.0;
        if (v->type == HA_TYPE_FLOAT) {
            float f = (float)d;
            uint32_t u;
            memcpy(&u, &f, sizeof(u));
            ha_buf_append_le(b, u, 4);
        } else {
            uint64_t u;
            memcpy(&u, &d, sizeof(u));
            ha_buf_append_le(b, u, 8);
        }
    } else if (v->kind == HA_BINVAL_INT) {
        if (v->is_unsigned)
            snprintf(num, sizeof(num), "%llu", (unsigned long long)v->i);
        else
            snprintf(num, sizeof(num), "%lld", (long long)v->i);
        ha_proto_put_lenenc_str(b, num, strlen(num));
    } else if (v->kind == HA_BINVAL_DOUBLE) {
        snprintf(num, sizeof(num), "%.17g", v->d);
        ha_proto_put_lenenc_str(b, num, strlen(num));
    } else if (v->kind == HA_BINVAL_TEXT) {
        ha_proto_put_lenenc_str(b, v->text,
                                v->n < sizeof(v->text) ? v->n : 0);
    } else {
        ha_proto_put_lenenc_str(b, v->s, v->s != NULL ? v->n : 0);
    }
}

void
ha_proto_encode_binary_row(struct ha_buf *b, const struct ha_binval *v,
                           size_t n)
{
    size_t bitmap_len = (n + 7 + 2) / 8;
    size_t at;

    ha_buf_append_u8(b, 0x00);
    at = b->len;
    for (size_t k = 0; k < bitmap_len; k++)
        ha_buf_append_u8(b, 0);
    for (size_t k = 0; k < n; k++) {
        if (v[k].kind == HA_BINVAL_NULL) {
            /* The row bitmap is offset by 2 bits (Binary Protocol
             * Resultset Row: column i is bit i + 2). */
            if (!ha_buf_failed(b))
                b->data[at + (k + 2) / 8] |= (uint8_t)(1u << ((k + 2) % 8));
            continue;
        }
        put_binary_value(b, &v[k]);
    }
}

int
ha_proto_decode_stmt_execute(const uint8_t *p, size_t len,
                             struct ha_stmt_execute *out, char *err,
                             size_t errlen)
{
    struct ha_reader rd;
    uint8_t cmd;
    uint64_t v;

    memset(out, 0, sizeof(*out));
    ha_reader_init(&rd, p, len);
    if (ha_proto_get_u8(&rd, &cmd) != 0 || cmd != HA_COM_STMT_EXECUTE) {
        ha_err_set(err, errlen, "malformed COM_STMT_EXECUTE: no command "
                   "byte");
        return -1;
    }
    if (ha_proto_get_le(&rd, 4, &v) != 0) {
        ha_err_set(err, errlen,
                   "malformed COM_STMT_EXECUTE: statement_id is truncated");
        return -1;
    }
    out->stmt_id = (uint32_t)v;
    if (ha_proto_get_u8(&rd, &out->flags) != 0 ||
        ha_proto_get_le(&rd, 4, &v) != 0) {
        ha_err_set(err, errlen, "malformed COM_STMT_EXECUTE: flags or "
                   "iteration_count is truncated");
        return -1;
    }
    out->iterations = (uint32_t)v;
    out->params_pos = rd.pos;
    return 0;
}

/* A DATE/DATETIME/TIMESTAMP (length 0, 4, 7, 11) or TIME (0, 8, 12)
 * value into v->text. */
static int
decode_temporal(struct ha_reader *rd, uint8_t type, struct ha_binval *v,
                unsigned idx, char *err, size_t errlen)
{
    uint8_t n;
    const uint8_t *q;
    int w;

    if (ha_proto_get_u8(rd, &n) != 0)
        goto truncated;
    if (ha_proto_get_bytes(rd, n, &q) != 0)
        goto truncated;
    v->kind = HA_BINVAL_TEXT;
    if (type == HA_TYPE_TIME) {
        unsigned long hours;
        if (n != 0 && n != 8 && n != 12)
            goto bad_len;
        if (n == 0) {
            w = snprintf(v->text, sizeof(v->text), "00:00:00");
        } else {
            uint32_t days = (uint32_t)q[1] | (uint32_t)q[2] << 8 |
                            (uint32_t)q[3] << 16 | (uint32_t)q[4] << 24;
            hours = (unsigned long)days * 24ul + q[5];
            w = snprintf(v->text, sizeof(v->text), "%s%02lu:%02u:%02u",
                         q[0] ? "-" : "", hours, q[6], q[7]);
            if (n == 12) {
                uint32_t us = (uint32_t)q[8] | (uint32_t)q[9] << 8 |
                              (uint32_t)q[10] << 16 | (uint32_t)q[11] << 24;
                w += snprintf(v->text + w, sizeof(v->text) - (size_t)w,
                              ".%06lu", (unsigned long)us % 1000000ul);
            }
        }
    } else {
        unsigned year = 0, mon = 0, day = 0, h = 0, mi = 0, s = 0;
        if (n != 0 && n != 4 && n != 7 && n != 11)
            goto bad_len;
        if (n >= 4) {
            year = (unsigned)q[0] | (unsigned)q[1] << 8;
            mon = q[2];
            day = q[3];
        }
        if (n >= 7) {
            h = q[4];
            mi = q[5];
            s = q[6];
        }
        if (type == HA_TYPE_DATE || type == HA_TYPE_NEWDATE)
            w = snprintf(v->text, sizeof(v->text), "%04u-%02u-%02u", year,
                         mon, day);
        else
            w = snprintf(v->text, sizeof(v->text),
                         "%04u-%02u-%02u %02u:%02u:%02u", year, mon, day, h,
                         mi, s);
        if (n == 11 && type != HA_TYPE_DATE && type != HA_TYPE_NEWDATE) {
            uint32_t us = (uint32_t)q[7] | (uint32_t)q[8] << 8 |
                          (uint32_t)q[9] << 16 | (uint32_t)q[10] << 24;
            w += snprintf(v->text + w, sizeof(v->text) - (size_t)w, ".%06lu",
                          (unsigned long)us % 1000000ul);
        }
    }
    v->n = w > 0 && (size_t)w < sizeof(v->text) ? (size_t)w
                                                : strlen(v->text);
    return 0;

truncated:
    ha_err_set(err, errlen,
               "malformed COM_STMT_EXECUTE: parameter %u is truncated", idx);
    return -1;
bad_len:
    ha_err_set(err, errlen,
               "malformed COM_STMT_EXECUTE: parameter %u has a temporal "
               "value of %u bytes",
               idx, n);
    return -1;
}

/* Decodes one non-NULL value of the given type at rd. */
static int
decode_param(struct ha_reader *rd, uint8_t type, bool is_unsigned,
             struct ha_binval *v, unsigned idx, char *err, size_t errlen)
{
    int width = binary_width(type);
    uint64_t x;

    if (width < 0)
        return decode_temporal(rd, type, v, idx, err, errlen);
    if (width == 0) {
        if (!is_string_type(type)) {
            ha_err_set(err, errlen,
                       "malformed COM_STMT_EXECUTE: parameter %u has "
                       "unsupported type %u",
                       idx, type);
            return -1;
        }
        if (ha_proto_get_lenenc_str(rd, &v->s, &v->n) != 0)
            goto truncated;
        v->kind = HA_BINVAL_BYTES;
        return 0;
    }
    if (ha_proto_get_le(rd, (size_t)width, &x) != 0)
        goto truncated;
    if (type == HA_TYPE_FLOAT) {
        uint32_t u = (uint32_t)x;
        float f;
        memcpy(&f, &u, sizeof(f));
        v->kind = HA_BINVAL_DOUBLE;
        v->d = f;
    } else if (type == HA_TYPE_DOUBLE) {
        memcpy(&v->d, &x, sizeof(v->d));
        v->kind = HA_BINVAL_DOUBLE;
    } else {
        v->kind = HA_BINVAL_INT;
        if (!is_unsigned && width < 8) {
            /* Sign-extend from the wire width. */
            uint64_t sign = 1ull << (8 * width - 1);
            x = (x ^ sign) - sign;
        }
        v->i = (int64_t)x;
    }
    return 0;

truncated:
    ha_err_set(err, errlen,
               "malformed COM_STMT_EXECUTE: parameter %u is truncated", idx);
    return -1;
}

int
ha_proto_decode_stmt_params(const uint8_t *p, size_t len, size_t pos,
                            uint16_t n_params, uint8_t *types,
                            bool *have_types, const bool *long_data,
                            struct ha_binval *vals, char *err, size_t errlen)
{
    struct ha_reader rd;
    const uint8_t *nulls;
    const uint8_t *new_types = NULL;
    const uint8_t *use;
    uint8_t bind_flag;

    if (pos > len) {
        ha_err_set(err, errlen, "malformed COM_STMT_EXECUTE: parameter "
                   "block starts past the end");
        return -1;
    }
    if (n_params == 0)
        return 0; /* clients send nothing after iteration_count */
    ha_reader_init(&rd, p, len);
    rd.pos = pos;
    if (ha_proto_get_bytes(&rd, ((size_t)n_params + 7) / 8, &nulls) != 0 ||
        ha_proto_get_u8(&rd, &bind_flag) != 0) {
        ha_err_set(err, errlen,
                   "malformed COM_STMT_EXECUTE: the statement has %u "
                   "parameters but the NULL bitmap or "
                   "new_params_bind_flag is missing",
                   n_params);
        return -1;
    }
    if (bind_flag > 1) {
        ha_err_set(err, errlen,
                   "malformed COM_STMT_EXECUTE: new_params_bind_flag is %u",
                   bind_flag);
        return -1;
    }
    if (bind_flag == 1) {
        if (ha_proto_get_bytes(&rd, 2 * (size_t)n_params, &new_types) != 0) {
            ha_err_set(err, errlen,
                       "malformed COM_STMT_EXECUTE: %u parameter types are "
                       "truncated",
                       n_params);
            return -1;
        }
        use = new_types;
    } else if (*have_types) {
        use = types; /* new_params_bind_flag 0: the previous types */
    } else {
        ha_err_set(err, errlen,
                   "malformed COM_STMT_EXECUTE: new_params_bind_flag is 0 "
                   "but no earlier execute sent parameter types");
        return -1;
    }

    for (unsigned k = 0; k < n_params; k++) {
        struct ha_binval *v = &vals[k];
        uint8_t type = use[2 * k];

        memset(v, 0, sizeof(*v));
        v->type = type;
        v->is_unsigned = (use[2 * k + 1] & HA_PARAM_FLAG_UNSIGNED) != 0;
        /* Long data wins over the NULL bit, as in MySQL's server:
         * libmariadb marks a long-data parameter without a buffer NULL. */
        if (long_data != NULL && long_data[k]) {
            v->kind = HA_BINVAL_LONG_DATA;
            continue;
        }
        if (nulls[k / 8] & (1u << (k % 8)) || type == HA_TYPE_NULL) {
            v->kind = HA_BINVAL_NULL;
            continue;
        }
        if (decode_param(&rd, type, v->is_unsigned, v, k, err, errlen) != 0)
            return -1;
    }
    if (new_types != NULL) {
        memcpy(types, new_types, 2 * (size_t)n_params);
        *have_types = true;
    }
    return 0;
}

int
ha_proto_decode_long_data(const uint8_t *p, size_t len, uint32_t *stmt_id,
                          uint16_t *param_id, const uint8_t **data,
                          size_t *data_len, char *err, size_t errlen)
{
    struct ha_reader rd;
    uint64_t v = 0;

    ha_reader_init(&rd, p, len);
    if (len < 7 || p[0] != HA_COM_STMT_SEND_LONG_DATA) {
        ha_err_set(err, errlen, "malformed COM_STMT_SEND_LONG_DATA: %zu "
                   "bytes, expected at least 7", len);
        return -1;
    }
    rd.pos = 1;
    (void)ha_proto_get_le(&rd, 4, &v);
    *stmt_id = (uint32_t)v;
    (void)ha_proto_get_le(&rd, 2, &v);
    *param_id = (uint16_t)v;
    *data = p + rd.pos;
    *data_len = len - rd.pos;
    return 0;
}
