/* SPDX-License-Identifier: MIT
 *
 * The MySQL wire codec's connection phase (see proto.h): the server's
 * HandshakeV10, the client's HandshakeResponse41, AuthSwitchRequest, and
 * COM_CHANGE_USER, which authenticates again with the same fields. Safe
 * on hostile input like the rest of the codec (proto.c).
 */
#include "admin/proto.h"

#include <string.h>

#include "core/buf.h"
#include "core/util.h"

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
/* COM_CHANGE_USER (MySQL protocol: Command Phase): a new login        */
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
