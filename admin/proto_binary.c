/* SPDX-License-Identifier: MIT
 *
 * The MySQL wire codec's binary protocol, for prepared statements (see
 * proto.h): COM_STMT_PREPARE_OK, binary result rows, and the parameters
 * of COM_STMT_EXECUTE and COM_STMT_SEND_LONG_DATA. Safe on hostile input
 * like the rest of the codec (proto.c).
 */
#include "admin/proto.h"

#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"

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
