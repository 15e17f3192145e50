/* SPDX-License-Identifier: MIT
 *
 * Decoding a reply as the server framed it (MySQL protocol: OK_Packet,
 * ERR_Packet, EOF_Packet, Text Resultset) from a buffer of packets: what
 * a session wrote into its struct ha_buf (check_session,
 * check_authorizer, check_stmt) or what test/support/client.h read off a
 * socket (mc_read_reply). No assertions: every call returns -1 on a
 * malformed reply, so client threads may use them too; tests assert on
 * the return.
 */
#ifndef HA_TEST_REPLIES_H
#define HA_TEST_REPLIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_MAX_PKTS 512

/* The packets of a reply, pointing into the buffer they came from. */
struct rp_pkts {
    size_t n;
    const uint8_t *p[RP_MAX_PKTS];  /* payloads */
    size_t len[RP_MAX_PKTS];
};

/* Splits buf into packets whose sequence ids must run on from first_seq,
 * with nothing cut short or left over. Returns 0, or -1 with why (NULL:
 * not wanted) saying which packet broke the rule. */
int rp_split(const uint8_t *buf, size_t len, uint8_t first_seq,
             struct rp_pkts *k, char *why, size_t whylen);

enum rp_kind { RP_OK, RP_ERR, RP_ROWS };

/* One result of a reply. */
struct rp_result {
    enum rp_kind kind;
    uint16_t status;        /* OK's, or the result set's terminator's */
    uint64_t affected;      /* OK */
    uint64_t insert_id;     /* OK */
    uint16_t code;          /* ERR */
    char sqlstate[6];       /* ERR, "" when the packet has none */
    const uint8_t *msg;     /* ERR message */
    size_t msg_len;
    uint64_t n_cols;        /* ROWS */
    size_t first_col;       /* ROWS: packet index of the first column
                               definition */
    size_t first_row;       /* ROWS: packet index of the first row */
    size_t n_rows;
};

/* Decodes the result that starts at packet *i and moves *i past it;
 * deprecate_eof: no EOF after the column definitions, a 0xFE OK ends the
 * rows. Returns 0 or -1. */
int rp_result(const struct rp_pkts *k, size_t *i, bool deprecate_eof,
              struct rp_result *res);

/* Column c's name (the definition's fifth string, after catalog, schema,
 * table and org_table). Returns 0 or -1. */
int rp_col_name(const struct rp_pkts *k, const struct rp_result *res,
                uint64_t c, const uint8_t **s, size_t *len);

/* Value c of text row `row` of res: returns 1 with *s and *len set, 0 for
 * NULL, -1 when the row is malformed. */
int rp_value(const struct rp_pkts *k, const struct rp_result *res,
             size_t row, uint64_t c, const uint8_t **s, size_t *len);

#endif /* HA_TEST_REPLIES_H */
