/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the prepared-statement codec. A COM_STMT_EXECUTE payload
 * is decoded (ha_proto_decode_stmt_execute, then
 * ha_proto_decode_stmt_params twice: first with no remembered types, then
 * reusing what the first call stored, as a second execute of the same
 * statement would) and the decoded values are encoded back as a binary
 * row, once under their own types and once under another parameter's
 * type, which exercises every kind conversion the encoder promises.
 *
 * Input: bytes 0-1 give n_params (1..512), byte 2 marks parameters as
 * sent by COM_STMT_SEND_LONG_DATA; the rest is the payload, 0x17 first.
 * Seeds: corpus/stmt/.
 *
 * Invariants: 0 or -1 with err set; on -1 the remembered types are
 * unchanged; decoded BYTES point inside the payload and TEXT fits.
 */
#include "fuzz.h"

#include <stdbool.h>

#include "core/buf.h"
#include "admin/proto.h"

#define MAX_PARAMS 512

static void
check_vals(const struct ha_binval *vals, uint16_t n, const uint8_t *p,
           size_t len)
{
    for (uint16_t k = 0; k < n; k++) {
        const struct ha_binval *v = &vals[k];

        FUZZ_CHECK(v->kind < HA_BINVAL_KIND_MAX, "param %u kind %d", k,
                   (int)v->kind);
        if (v->kind == HA_BINVAL_BYTES)
            FUZZ_CHECK(v->n == 0 || (v->s >= p && v->n <= len &&
                                     v->s - p <= (ptrdiff_t)(len - v->n)),
                       "param %u: %zu bytes outside the payload", k, v->n);
        if (v->kind == HA_BINVAL_TEXT)
            FUZZ_CHECK(v->n < sizeof(v->text) && v->text[v->n] == '\0',
                       "param %u: text length %zu", k, v->n);
    }
}

static void
encode_row(struct ha_binval *vals, uint16_t n, bool swap_types)
{
    struct ha_buf row;
    uint8_t first = vals[0].type;

    for (uint16_t k = 0; k < n; k++) {
        /* The session swaps in the COM_STMT_SEND_LONG_DATA bytes before
         * anything is encoded; stand in for them with an empty value. */
        if (vals[k].kind == HA_BINVAL_LONG_DATA) {
            vals[k].kind = HA_BINVAL_BYTES;
            vals[k].s = NULL;
            vals[k].n = 0;
        }
        if (swap_types)
            vals[k].type = k + 1 < n ? vals[k + 1].type : first;
    }
    ha_buf_init(&row);
    ha_proto_encode_binary_row(&row, vals, n);
    ha_buf_free(&row);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ha_stmt_execute ex;
    struct ha_binval *vals;
    uint8_t types[2 * MAX_PARAMS], saved[2 * MAX_PARAMS];
    bool long_data[MAX_PARAMS], have_types = false;
    uint16_t n;
    char err[256];
    int rc;

    if (size < 3)
        return 0;
    n = (uint16_t)(1 + ((data[0] | data[1] << 8) % MAX_PARAMS));
    for (uint16_t k = 0; k < n; k++)
        long_data[k] = (data[2] >> (k % 8)) & 1 && data[2] >= 0x80;
    data += 3;
    size -= 3;

    err[0] = '\0';
    if (ha_proto_decode_stmt_execute(data, size, &ex, err, sizeof(err)) !=
        0) {
        FUZZ_CHECK(err[0] != '\0', "execute error without text");
        return 0;
    }
    FUZZ_CHECK(ex.params_pos <= size, "params_pos %zu > %zu", ex.params_pos,
               size);

    vals = calloc(n, sizeof(*vals));
    if (vals == NULL)
        abort();
    memset(types, 0xA5, sizeof(types));
    for (int pass = 0; pass < 2; pass++) {
        bool had = have_types;

        memcpy(saved, types, 2 * (size_t)n);
        err[0] = '\0';
        rc = ha_proto_decode_stmt_params(data, size, ex.params_pos, n, types,
                                         &have_types, long_data, vals, err,
                                         sizeof(err));
        FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
        if (rc != 0) {
            FUZZ_CHECK(err[0] != '\0', "params error without text");
            FUZZ_CHECK(memcmp(saved, types, 2 * (size_t)n) == 0 &&
                           have_types == had,
                       "types changed on error");
            break;
        }
        FUZZ_CHECK(have_types, "decoded without types");
        check_vals(vals, n, data, size);
        encode_row(vals, n, pass == 1);
    }
    free(vals);
    return 0;
}
