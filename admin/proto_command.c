/* SPDX-License-Identifier: MIT
 *
 * The MySQL wire codec's command phase, text protocol (see proto.h):
 * OK, ERR and EOF packets, column definitions, and the payloads of
 * COM_FIELD_LIST and of the commands whose one argument is an integer.
 * Safe on hostile input like the rest of the codec (proto.c).
 */
#include "admin/proto.h"

#include <string.h>

#include "core/buf.h"
#include "core/util.h"

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
