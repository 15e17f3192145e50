/* SPDX-License-Identifier: MIT
 *
 * MySQL client/server wire codec: framing, length-encoded values and the
 * packets an admin server sends and receives. Pure: no sockets, no
 * libevent, no SQLite. Every decoder is safe on hostile input: each length
 * is checked against the bytes present and a violation returns -1 with a
 * message, never reads out of bounds and never asserts.
 *
 * References (MySQL Server doxygen, "Client/Server Protocol"):
 *   Protocol::Packet, Protocol::LengthEncodedInteger,
 *   Protocol::HandshakeV10, Protocol::HandshakeResponse41,
 *   Protocol::AuthSwitchRequest, OK_Packet, ERR_Packet, EOF_Packet,
 *   Protocol::ColumnDefinition41, Text Resultset, COM_FIELD_LIST,
 *   COM_CHANGE_USER, COM_STMT_PREPARE_OK, COM_STMT_EXECUTE,
 *   COM_STMT_SEND_LONG_DATA, Binary Protocol Resultset Row and Binary
 *   Protocol Value.
 * Where clients deviate from those pages, the code says which and how.
 */
#ifndef HA_PROTO_H
#define HA_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"

/* Largest payload of one physical packet; a logical payload of this size
 * or more continues in the next packet (Protocol::Packet). */
#define HA_PROTO_MAX_CHUNK 0xFFFFFFu
#define HA_PROTO_HEADER_LEN 4

/* Capability flags (Protocol::CapabilityFlags). */
#define HA_CLIENT_LONG_PASSWORD (1u << 0)       /* also CLIENT_MYSQL */
#define HA_CLIENT_FOUND_ROWS (1u << 1)
#define HA_CLIENT_LONG_FLAG (1u << 2)
#define HA_CLIENT_CONNECT_WITH_DB (1u << 3)
#define HA_CLIENT_NO_SCHEMA (1u << 4)
#define HA_CLIENT_COMPRESS (1u << 5)
#define HA_CLIENT_ODBC (1u << 6)
#define HA_CLIENT_LOCAL_FILES (1u << 7)
#define HA_CLIENT_IGNORE_SPACE (1u << 8)
#define HA_CLIENT_PROTOCOL_41 (1u << 9)
#define HA_CLIENT_INTERACTIVE (1u << 10)
#define HA_CLIENT_SSL (1u << 11)
#define HA_CLIENT_IGNORE_SIGPIPE (1u << 12)
#define HA_CLIENT_TRANSACTIONS (1u << 13)
#define HA_CLIENT_RESERVED (1u << 14)
#define HA_CLIENT_SECURE_CONNECTION (1u << 15)
#define HA_CLIENT_MULTI_STATEMENTS (1u << 16)
#define HA_CLIENT_MULTI_RESULTS (1u << 17)
#define HA_CLIENT_PS_MULTI_RESULTS (1u << 18)
#define HA_CLIENT_PLUGIN_AUTH (1u << 19)
#define HA_CLIENT_CONNECT_ATTRS (1u << 20)
#define HA_CLIENT_PLUGIN_AUTH_LENENC_DATA (1u << 21)
#define HA_CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS (1u << 22)
#define HA_CLIENT_SESSION_TRACK (1u << 23)
#define HA_CLIENT_DEPRECATE_EOF (1u << 24)

/* What heapadmind advertises in HandshakeV10: only what it implements.
 * No SSL (issue: security), no COMPRESS, no SESSION_TRACK, no
 * QUERY_ATTRIBUTES (each changes the framing clients expect). */
#define HA_SERVER_CAPABILITIES                                              \
    (HA_CLIENT_LONG_PASSWORD | HA_CLIENT_FOUND_ROWS | HA_CLIENT_LONG_FLAG | \
     HA_CLIENT_CONNECT_WITH_DB | HA_CLIENT_ODBC | HA_CLIENT_IGNORE_SPACE |  \
     HA_CLIENT_PROTOCOL_41 | HA_CLIENT_INTERACTIVE |                       \
     HA_CLIENT_IGNORE_SIGPIPE | HA_CLIENT_TRANSACTIONS |                    \
     HA_CLIENT_RESERVED | HA_CLIENT_SECURE_CONNECTION |                     \
     HA_CLIENT_MULTI_STATEMENTS | HA_CLIENT_MULTI_RESULTS |                 \
     HA_CLIENT_PS_MULTI_RESULTS |                                           \
     HA_CLIENT_PLUGIN_AUTH | HA_CLIENT_CONNECT_ATTRS |                      \
     HA_CLIENT_PLUGIN_AUTH_LENENC_DATA | HA_CLIENT_DEPRECATE_EOF)

/* Server status flags (SERVER_STATUS_*). */
#define HA_STATUS_IN_TRANS (1u << 0)
#define HA_STATUS_AUTOCOMMIT (1u << 1)
#define HA_STATUS_MORE_RESULTS (1u << 3)
#define HA_STATUS_NO_INDEX_USED (1u << 5)

/* Command bytes (enum_server_command). */
enum ha_proto_command {
    HA_COM_SLEEP = 0x00,
    HA_COM_QUIT = 0x01,
    HA_COM_INIT_DB = 0x02,
    HA_COM_QUERY = 0x03,
    HA_COM_FIELD_LIST = 0x04,
    HA_COM_REFRESH = 0x07,
    HA_COM_STATISTICS = 0x09,
    HA_COM_PROCESS_KILL = 0x0c,
    HA_COM_DEBUG = 0x0d,
    HA_COM_PING = 0x0e,
    HA_COM_CHANGE_USER = 0x11,
    HA_COM_STMT_PREPARE = 0x16,
    HA_COM_STMT_EXECUTE = 0x17,
    HA_COM_STMT_SEND_LONG_DATA = 0x18,
    HA_COM_STMT_CLOSE = 0x19,
    HA_COM_STMT_RESET = 0x1a,
    HA_COM_SET_OPTION = 0x1b,
    HA_COM_STMT_FETCH = 0x1c,
    HA_COM_RESET_CONNECTION = 0x1f
};

/* Column types (enum_field_types) and column flags used by the server. */
enum ha_proto_type {
    HA_TYPE_DECIMAL = 0,
    HA_TYPE_TINY = 1,
    HA_TYPE_SHORT = 2,
    HA_TYPE_LONG = 3,
    HA_TYPE_FLOAT = 4,
    HA_TYPE_DOUBLE = 5,
    HA_TYPE_NULL = 6,
    HA_TYPE_TIMESTAMP = 7,
    HA_TYPE_LONGLONG = 8,
    HA_TYPE_INT24 = 9,
    HA_TYPE_DATE = 10,
    HA_TYPE_TIME = 11,
    HA_TYPE_DATETIME = 12,
    HA_TYPE_YEAR = 13,
    HA_TYPE_NEWDATE = 14,
    HA_TYPE_VARCHAR = 15,
    HA_TYPE_BIT = 16,
    HA_TYPE_JSON = 245,
    HA_TYPE_NEWDECIMAL = 246,
    HA_TYPE_ENUM = 247,
    HA_TYPE_SET = 248,
    HA_TYPE_TINY_BLOB = 249,
    HA_TYPE_MEDIUM_BLOB = 250,
    HA_TYPE_LONG_BLOB = 251,
    HA_TYPE_BLOB = 252,
    HA_TYPE_VAR_STRING = 253,
    HA_TYPE_STRING = 254,
    HA_TYPE_GEOMETRY = 255
};
#define HA_FLAG_NOT_NULL (1u << 0)
#define HA_FLAG_PRI_KEY (1u << 1)
#define HA_FLAG_BLOB (1u << 4)
#define HA_FLAG_UNSIGNED (1u << 5)
#define HA_FLAG_BINARY (1u << 7)
#define HA_FLAG_NUM (1u << 15)

/* Collation ids used in the handshake and column definitions. */
#define HA_COLLATION_UTF8MB4_0900 255  /* utf8mb4_0900_ai_ci, MySQL 8.0 */
#define HA_COLLATION_UTF8MB4_GENERAL 45
#define HA_COLLATION_BINARY 63

#define HA_SCRAMBLE_LEN 20

/* ------------------------------------------------------------------ */
/* Framing (proto.c)                                                    */
/* ------------------------------------------------------------------ */

/* Why ha_proto_reader_feed() failed (struct ha_pkt_reader.error). */
enum ha_proto_reader_error {
    HA_PROTO_READER_OK,          /* no failure */
    HA_PROTO_READER_TOO_LARGE,   /* the payload exceeds max_payload (MySQL:
                                    ER_NET_PACKET_TOO_LARGE, 1153) */
    HA_PROTO_READER_OUT_OF_ORDER, /* a chunk of a split packet with the
                                    wrong sequence id (1156) */
    HA_PROTO_READER_NOMEM,       /* no memory for the payload */
    HA_PROTO_READER_ERROR_MAX
};

/* Incremental reader that turns a byte stream into logical packets,
 * joining 16 MiB chunks (payload == 0xFFFFFF continues in the next
 * packet) and checking that sequence ids increase by one per chunk. */
struct ha_pkt_reader {
    struct ha_buf payload;     /* logical payload assembled so far */
    uint8_t hdr[HA_PROTO_HEADER_LEN]; /* header bytes of the current chunk */
    size_t hdr_have;           /* header bytes collected (0..4) */
    size_t chunk_left;         /* payload bytes still due in this chunk */
    bool in_chunk;             /* header complete, reading payload */
    bool continued;            /* the last full chunk was 0xFFFFFF long */
    bool ready;                /* a whole packet waits for _next() */
    uint8_t first_seq;         /* sequence id of the first chunk */
    uint8_t last_seq;          /* sequence id of the last chunk read */
    size_t max_payload;        /* a larger logical payload is an error */
    enum ha_proto_reader_error error; /* why the last feed returned -1 */
};

void ha_proto_reader_init(struct ha_pkt_reader *r, size_t max_payload);
void ha_proto_reader_free(struct ha_pkt_reader *r);

/* Feeds len bytes. Returns the number of bytes consumed (<= len) and sets
 * *ready when a whole logical packet is in r->payload; the caller takes it
 * (r->payload.data, .len, r->first_seq, r->last_seq) and then calls
 * ha_proto_reader_next() before feeding more. Returns -1 with err set and
 * r->error saying which when the stream is malformed (payload over
 * max_payload: HA_PROTO_READER_TOO_LARGE; out-of-order sequence id within
 * a split packet: HA_PROTO_READER_OUT_OF_ORDER) or on allocation failure
 * (HA_PROTO_READER_NOMEM). Feeding again
 * before ha_proto_reader_next() consumes nothing and reports the same
 * packet (returns 0, *ready true). After -1 the stream is out of sync:
 * stop feeding, send ERR and close. */
ssize_t ha_proto_reader_feed(struct ha_pkt_reader *r, const uint8_t *buf,
                             size_t len, bool *ready, char *err,
                             size_t errlen);
/* Drops the packet just taken and readies the reader for the next. */
void ha_proto_reader_next(struct ha_pkt_reader *r);

/* Appends payload as one or more physical packets to out, numbering them
 * from *seq and advancing *seq past the last one (wrapping at 255). A
 * payload that is an exact multiple of 0xFFFFFF gets a trailing empty
 * packet, as the protocol requires. */
void ha_proto_write_packet(struct ha_buf *out, uint8_t *seq,
                           const uint8_t *payload, size_t len);

/* ------------------------------------------------------------------ */
/* Length-encoded values and a bounds-checked cursor (proto.c)          */
/* ------------------------------------------------------------------ */

struct ha_reader {
    const uint8_t *p;   /* start of the payload */
    size_t len;         /* payload length */
    size_t pos;         /* next byte to read */
};

static inline void
ha_reader_init(struct ha_reader *r, const uint8_t *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
}
static inline size_t ha_reader_left(const struct ha_reader *r)
{
    return r->len - r->pos;
}

/* Each returns 0, or -1 when the bytes are not there (pos unchanged). */
int ha_proto_get_u8(struct ha_reader *r, uint8_t *v);
int ha_proto_get_le(struct ha_reader *r, size_t width, uint64_t *v);
/* Length-encoded integer. 0xFB (NULL) and 0xFF are rejected: -1. */
int ha_proto_get_lenenc(struct ha_reader *r, uint64_t *v);
/* Length-encoded string: *s points into the payload, *n is its length. */
int ha_proto_get_lenenc_str(struct ha_reader *r, const uint8_t **s,
                            size_t *n);
/* NUL-terminated string; -1 when no NUL is found before the end. */
int ha_proto_get_strz(struct ha_reader *r, const char **s, size_t *n);
int ha_proto_get_bytes(struct ha_reader *r, size_t n, const uint8_t **s);

/* Appends v as a length-encoded integer (1, 3, 4 or 9 bytes). */
void ha_proto_put_lenenc(struct ha_buf *b, uint64_t v);
void ha_proto_put_lenenc_str(struct ha_buf *b, const void *s, size_t n);
/* Size in bytes of v as a length-encoded integer. */
size_t ha_proto_lenenc_size(uint64_t v);

/* ------------------------------------------------------------------ */
/* Connection phase (proto_handshake.c)                                 */
/* ------------------------------------------------------------------ */

struct ha_handshake {
    const char *server_version;   /* e.g. "8.0.35-heapadmin-0.1.0" */
    uint32_t connection_id;
    uint8_t scramble[HA_SCRAMBLE_LEN]; /* no 0x00 bytes */
    uint32_t capabilities;
    uint8_t collation;            /* low 8 bits of a collation id */
    uint16_t status;
    const char *auth_plugin;      /* "mysql_native_password" */
};

/* Appends a Protocol::HandshakeV10 payload (without packet header). */
void ha_proto_encode_handshake(struct ha_buf *b, const struct ha_handshake *h);

#define HA_PROTO_MAX_USER 128
#define HA_PROTO_MAX_DB 256
#define HA_PROTO_MAX_PLUGIN 64
#define HA_PROTO_MAX_AUTH 255

struct ha_handshake_response {
    uint32_t capabilities;        /* as sent by the client */
    uint32_t max_packet;
    uint8_t collation;
    char user[HA_PROTO_MAX_USER + 1];
    uint8_t auth[HA_PROTO_MAX_AUTH];
    size_t auth_len;
    bool has_db;
    char db[HA_PROTO_MAX_DB + 1];
    bool has_plugin;
    char plugin[HA_PROTO_MAX_PLUGIN + 1];
    bool is_ssl_request;          /* the 32-byte SSLRequest form */
};

/* Decodes Protocol::HandshakeResponse41 (and recognises a 32-byte
 * SSLRequest). Optional trailing fields are read only if bytes remain;
 * connect attributes are validated and skipped. Returns 0, or -1 with err
 * naming the field that was malformed. Clients without CLIENT_PROTOCOL_41
 * are refused (-1). */
int ha_proto_decode_handshake_response(const uint8_t *p, size_t len,
                                       struct ha_handshake_response *out,
                                       char *err, size_t errlen);

/* Appends a Protocol::AuthSwitchRequest payload: 0xFE, plugin name, the
 * 20-byte scramble and a trailing NUL. */
void ha_proto_encode_auth_switch(struct ha_buf *b, const char *plugin,
                                 const uint8_t scramble[HA_SCRAMBLE_LEN]);

/* ------------------------------------------------------------------ */
/* Generic responses (proto_command.c)                                  */
/* ------------------------------------------------------------------ */

/* OK_Packet with PROTOCOL_41 layout; a non-empty info is sent as a
 * length-encoded string, as MySQL and MariaDB servers do (see proto.c).
 * header is 0x00, or 0xFE for the DEPRECATE_EOF terminator of a result
 * set (then info is not sent). */
void ha_proto_encode_ok(struct ha_buf *b, uint8_t header, uint64_t affected,
                        uint64_t insert_id, uint16_t status,
                        uint16_t warnings, const char *info);

/* ERR_Packet. sqlstate is exactly 5 characters, or NULL before
 * capabilities are negotiated (the very first packet). */
void ha_proto_encode_err(struct ha_buf *b, uint16_t code,
                         const char *sqlstate, const char *message);

/* EOF_Packet (5-byte payload). */
void ha_proto_encode_eof(struct ha_buf *b, uint16_t warnings,
                         uint16_t status);

/* ------------------------------------------------------------------ */
/* Text result sets (proto_command.c)                                   */
/* ------------------------------------------------------------------ */

struct ha_coldef {
    const char *schema;     /* may be "" */
    const char *table;      /* alias; may be "" */
    const char *org_table;  /* may be "" */
    const char *name;       /* label clients show and map by */
    const char *org_name;   /* may be "" */
    uint16_t collation;     /* 63 for numbers and blobs */
    uint32_t length;        /* display length in bytes */
    uint8_t type;           /* enum ha_proto_type */
    uint16_t flags;         /* HA_FLAG_* */
    uint8_t decimals;       /* 0, or 0x1F for dynamic */
    const char *default_value; /* COM_FIELD_LIST only; NULL = no default */
};

/* Protocol::ColumnDefinition41, including the mandatory 2 filler bytes.
 * with_default appends the default value (COM_FIELD_LIST only): c's
 * default_value as a length-encoded string, or 0xFB (NULL). */
void ha_proto_encode_coldef(struct ha_buf *b, const struct ha_coldef *c,
                            bool with_default);

/* ------------------------------------------------------------------ */
/* Other commands' payloads (proto_command.c; COM_CHANGE_USER:          */
/* proto_handshake.c)                                                   */
/* ------------------------------------------------------------------ */

/* Each decoder below takes the whole command payload, command byte
 * included, and returns 0, or -1 with err naming the malformed field. */

/* COM_CHANGE_USER: user, auth response (1-byte length with
 * SECURE_CONNECTION, else string<NUL>), schema, then, only if bytes
 * remain, collation int<2>, plugin name (PLUGIN_AUTH) and connect
 * attributes (CONNECT_ATTRS, validated and skipped). caps are the
 * negotiated capabilities; out->capabilities is set to them. */
int ha_proto_decode_change_user(const uint8_t *p, size_t len, uint32_t caps,
                                struct ha_handshake_response *out, char *err,
                                size_t errlen);

/* COM_FIELD_LIST: table string<NUL>, wildcard string<EOF>. A table name
 * without its NUL takes the rest of the packet (no wildcard). Pointers
 * are into p. */
int ha_proto_decode_field_list(const uint8_t *p, size_t len,
                               const uint8_t **table, size_t *table_len,
                               const uint8_t **wild, size_t *wild_len,
                               char *err, size_t errlen);

/* A command whose only argument is an int<width> (width 2 or 4):
 * COM_SET_OPTION, COM_PROCESS_KILL, COM_STMT_CLOSE, COM_STMT_RESET,
 * COM_STMT_FETCH (which has more after it). Extra bytes are ignored. */
int ha_proto_decode_u32_arg(const uint8_t *p, size_t len, size_t width,
                            uint32_t *v, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Prepared statements: the binary protocol (proto_binary.c)           */
/* ------------------------------------------------------------------ */

/* Flag byte after each parameter type in COM_STMT_EXECUTE. */
#define HA_PARAM_FLAG_UNSIGNED 0x80

/* COM_STMT_PREPARE_OK: 0x00, statement_id int<4>, num_columns int<2>,
 * num_params int<2>, 0x00, warning_count int<2> (12 bytes). */
void ha_proto_encode_prepare_ok(struct ha_buf *b, uint32_t stmt_id,
                                uint16_t n_columns, uint16_t n_params,
                                uint16_t warnings);

enum ha_binval_kind {
    HA_BINVAL_NULL,
    HA_BINVAL_INT,       /* i (as uint64_t when is_unsigned) */
    HA_BINVAL_DOUBLE,    /* d (FLOAT widened) */
    HA_BINVAL_BYTES,     /* s, n: strings, blobs, decimals */
    HA_BINVAL_TEXT,      /* text, n: a temporal value rendered as text */
    HA_BINVAL_LONG_DATA, /* execute: taken from COM_STMT_SEND_LONG_DATA */
    HA_BINVAL_KIND_MAX
};

/* One value of a binary row, or one decoded execute parameter. */
struct ha_binval {
    uint8_t type;             /* enum ha_proto_type on the wire */
    bool is_unsigned;         /* HA_PARAM_FLAG_UNSIGNED / HA_FLAG_UNSIGNED */
    enum ha_binval_kind kind;
    int64_t i;
    double d;
    const uint8_t *s;         /* BYTES: points into the payload */
    size_t n;                 /* BYTES, TEXT: length */
    char text[40];            /* TEXT: "2024-01-31 12:00:00.000001" */
};

/* Binary protocol row: 0x00, the NULL bitmap ((n + 7 + 2) / 8 bytes,
 * value i at bit i + 2), then each non-NULL value encoded by its type:
 * TINY 1 byte, SHORT/YEAR 2, LONG/INT24 4, LONGLONG 8, FLOAT 4, DOUBLE 8,
 * anything else a length-encoded string. The encoding always follows
 * v->type, converting the kind if needed (INT <-> DOUBLE; numbers become
 * their decimal text for string types; BYTES become 0 for numeric
 * types), so a row can never disagree with its column definitions, which
 * is what libmysqlclient needs: it advances by the declared type's
 * width. */
void ha_proto_encode_binary_row(struct ha_buf *b, const struct ha_binval *v,
                                size_t n);

/* The fixed head of COM_STMT_EXECUTE: 0x17, statement_id int<4>,
 * flags int<1>, iteration_count int<4>. params_pos is the offset where
 * the parameter block starts. */
struct ha_stmt_execute {
    uint32_t stmt_id;
    uint8_t flags;            /* cursor type; 0 = CURSOR_TYPE_NO_CURSOR */
    uint32_t iterations;
    size_t params_pos;
};
int ha_proto_decode_stmt_execute(const uint8_t *p, size_t len,
                                 struct ha_stmt_execute *out, char *err,
                                 size_t errlen);

/* The parameter block of COM_STMT_EXECUTE for a statement with n_params
 * (> 0) parameters, starting at pos: NULL bitmap ((n + 7) / 8 bytes),
 * new_params_bind_flag int<1>, with the flag n (type, flag) byte pairs,
 * then the values of the non-NULL parameters.
 *
 * types (2 * n_params bytes) and *have_types carry the types between
 * executions of one statement: a packet with new_params_bind_flag = 1
 * stores its types there; one with 0 reuses them (COM_STMT_EXECUTE), and
 * is malformed if no execute ever sent types. long_data (may be NULL) marks
 * parameters whose value arrived by COM_STMT_SEND_LONG_DATA: those carry
 * no value in the packet and decode as HA_BINVAL_LONG_DATA, whatever
 * their NULL bit says (as in MySQL's server).
 *
 * vals[i] gets each parameter; BYTES point into p. Temporal values
 * (DATE, DATETIME, TIMESTAMP, TIME) decode into TEXT in MySQL's format.
 * Returns 0, or -1 with err set (truncated value, lying length, unknown
 * type, bad temporal length). On -1 types is unchanged. */
int ha_proto_decode_stmt_params(const uint8_t *p, size_t len, size_t pos,
                                uint16_t n_params, uint8_t *types,
                                bool *have_types, const bool *long_data,
                                struct ha_binval *vals, char *err,
                                size_t errlen);

/* COM_STMT_SEND_LONG_DATA: 0x18, statement_id int<4>, param_id int<2>,
 * data string<EOF> (*data points into p). */
int ha_proto_decode_long_data(const uint8_t *p, size_t len,
                              uint32_t *stmt_id, uint16_t *param_id,
                              const uint8_t **data, size_t *data_len,
                              char *err, size_t errlen);

#endif /* HA_PROTO_H */
