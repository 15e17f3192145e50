/* SPDX-License-Identifier: MIT
 *
 * Decoding replies from a buffer of packets (see replies.h).
 */
#include "test/support/replies.h"

#include <stdio.h>
#include <string.h>

#include "admin/proto.h"

int
rp_split(const uint8_t *buf, size_t len, uint8_t first_seq,
         struct rp_pkts *k, char *why, size_t whylen)
{
    size_t pos = 0;
    uint8_t seq = first_seq;

    memset(k, 0, sizeof(*k));
    while (pos < len) {
        size_t l;

        if (len - pos < 4) {
            if (why != NULL)
                snprintf(why, whylen, "truncated header at byte %zu", pos);
            return -1;
        }
        l = buf[pos] | buf[pos + 1] << 8 | (size_t)buf[pos + 2] << 16;
        if (buf[pos + 3] != seq) {
            if (why != NULL)
                snprintf(why, whylen, "packet %zu: seq %u, want %u", k->n,
                         buf[pos + 3], seq);
            return -1;
        }
        if (len - pos - 4 < l || k->n == RP_MAX_PKTS) {
            if (why != NULL)
                snprintf(why, whylen, "packet %zu: %s", k->n,
                         k->n == RP_MAX_PKTS ? "too many packets"
                                             : "truncated");
            return -1;
        }
        k->p[k->n] = buf + pos + 4;
        k->len[k->n] = l;
        k->n++;
        seq++;
        pos += 4 + l;
    }
    return 0;
}

/* The fields of an OK packet (header 0x00, or 0xFE ending rows). */
static int
ok_fields(const uint8_t *p, size_t len, struct rp_result *res)
{
    struct ha_reader r;
    uint64_t v;
    uint8_t b;

    ha_reader_init(&r, p, len);
    if (ha_proto_get_u8(&r, &b) != 0 ||
        ha_proto_get_lenenc(&r, &res->affected) != 0 ||
        ha_proto_get_lenenc(&r, &res->insert_id) != 0 ||
        ha_proto_get_le(&r, 2, &v) != 0)
        return -1;
    res->status = (uint16_t)v;
    return 0;
}

/* Whether packet p (len bytes) ends a result set's rows. */
static bool
is_end(const uint8_t *p, size_t len)
{
    return len > 0 && len < 9 && p[0] == 0xFE;
}

int
rp_result(const struct rp_pkts *k, size_t *i, bool deprecate_eof,
          struct rp_result *res)
{
    const uint8_t *p;
    size_t len, at = *i;
    struct ha_reader r;

    memset(res, 0, sizeof(*res));
    if (at >= k->n || k->len[at] == 0)
        return -1;
    p = k->p[at];
    len = k->len[at];
    if (p[0] == 0x00) {
        res->kind = RP_OK;
        if (ok_fields(p, len, res) != 0)
            return -1;
        *i = at + 1;
        return 0;
    }
    if (p[0] == 0xFF) {
        /* code, then '#' and SQLSTATE (protocol 4.1), then the message */
        if (len < 3)
            return -1;
        res->kind = RP_ERR;
        res->code = (uint16_t)(p[1] | p[2] << 8);
        if (len >= 9 && p[3] == '#') {
            memcpy(res->sqlstate, p + 4, 5);
            res->msg = p + 9;
            res->msg_len = len - 9;
        } else {
            res->msg = p + 3;
            res->msg_len = len - 3;
        }
        *i = at + 1;
        return 0;
    }
    res->kind = RP_ROWS;
    ha_reader_init(&r, p, len);
    if (ha_proto_get_lenenc(&r, &res->n_cols) != 0 || res->n_cols == 0)
        return -1;
    at++;
    res->first_col = at;
    at += res->n_cols;
    if (!deprecate_eof) {
        if (at >= k->n || !is_end(k->p[at], k->len[at]))
            return -1; /* the EOF after the definitions */
        at++;
    }
    res->first_row = at;
    while (at < k->n && !is_end(k->p[at], k->len[at]))
        at++;
    if (at >= k->n)
        return -1; /* no terminator */
    res->n_rows = at - res->first_row;
    if (deprecate_eof) {
        if (ok_fields(k->p[at], k->len[at], res) != 0)
            return -1;
    } else {
        if (k->len[at] < 5)
            return -1;
        res->status = (uint16_t)(k->p[at][3] | k->p[at][4] << 8);
    }
    *i = at + 1;
    return 0;
}

int
rp_col_name(const struct rp_pkts *k, const struct rp_result *res,
            uint64_t c, const uint8_t **s, size_t *len)
{
    size_t at = res->first_col + c;
    struct ha_reader r;

    if (res->kind != RP_ROWS || c >= res->n_cols || at >= k->n)
        return -1;
    ha_reader_init(&r, k->p[at], k->len[at]);
    for (int f = 0; f < 5; f++)
        if (ha_proto_get_lenenc_str(&r, s, len) != 0)
            return -1;
    return 0;
}

int
rp_value(const struct rp_pkts *k, const struct rp_result *res, size_t row,
         uint64_t c, const uint8_t **s, size_t *len)
{
    size_t at = res->first_row + row;
    struct ha_reader r;

    if (res->kind != RP_ROWS || row >= res->n_rows || c >= res->n_cols ||
        at >= k->n)
        return -1;
    ha_reader_init(&r, k->p[at], k->len[at]);
    for (uint64_t f = 0;; f++) {
        if (r.pos < r.len && r.p[r.pos] == 0xFB) {
            r.pos++;
            if (f == c)
                return 0;
            continue;
        }
        if (ha_proto_get_lenenc_str(&r, s, len) != 0)
            return -1;
        if (f == c)
            return 1;
    }
}
