/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the packet reader (ha_proto_reader_*) on a hostile byte
 * stream, fed in slices of varying size as a socket would deliver it.
 * Every complete packet then goes to the HandshakeResponse41 decoder and,
 * by its command byte, to the command decoders conn.c would call.
 *
 * Input: byte 0 seeds the slice sizes, byte 1 picks max_payload, the rest
 * is the stream (headers included). Seeds: corpus/packet/.
 *
 * Invariants: feed consumes at most what it is given, makes progress
 * unless a packet is waiting, never hands out a payload over max_payload,
 * and every error comes with a message.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <sys/types.h>

#include "admin/proto.h"

static const size_t max_payloads[] = {
    0, 1, 4, 32, 255, 4096, 16u << 20,
};

/* What conn.c does with a packet in the command phase, minus the I/O. */
static void
decode_command(const uint8_t *p, size_t len)
{
    struct ha_handshake_response hr;
    struct ha_stmt_execute ex;
    const uint8_t *a, *b;
    size_t a_len, b_len;
    uint32_t v32;
    uint16_t v16;
    char err[256];

    if (len == 0)
        return;
    err[0] = '\0';
    switch (p[0]) {
    case HA_COM_CHANGE_USER:
        if (ha_proto_decode_change_user(p, len, HA_SERVER_CAPABILITIES, &hr,
                                        err, sizeof(err)) == 0) {
            FUZZ_CHECK(fuzz_has_nul(hr.user, sizeof(hr.user)), "user");
            FUZZ_CHECK(hr.auth_len <= sizeof(hr.auth), "%zu", hr.auth_len);
        } else {
            FUZZ_CHECK(err[0] != '\0', "change_user error without text");
        }
        break;
    case HA_COM_FIELD_LIST:
        if (ha_proto_decode_field_list(p, len, &a, &a_len, &b, &b_len, err,
                                       sizeof(err)) == 0) {
            FUZZ_CHECK(a >= p && a + a_len <= p + len, "table out of bounds");
            FUZZ_CHECK(b_len == 0 || (b >= p && b + b_len <= p + len),
                       "wildcard out of bounds");
        }
        break;
    case HA_COM_SET_OPTION:
        (void)ha_proto_decode_u32_arg(p, len, 2, &v32, err, sizeof(err));
        break;
    case HA_COM_PROCESS_KILL:
    case HA_COM_STMT_CLOSE:
    case HA_COM_STMT_RESET:
    case HA_COM_STMT_FETCH:
        (void)ha_proto_decode_u32_arg(p, len, 4, &v32, err, sizeof(err));
        break;
    case HA_COM_STMT_EXECUTE:
        if (ha_proto_decode_stmt_execute(p, len, &ex, err, sizeof(err)) == 0)
            FUZZ_CHECK(ex.params_pos <= len, "params_pos %zu > %zu",
                       ex.params_pos, len);
        break;
    case HA_COM_STMT_SEND_LONG_DATA:
        if (ha_proto_decode_long_data(p, len, &v32, &v16, &a, &a_len, err,
                                      sizeof(err)) == 0)
            FUZZ_CHECK(a_len == 0 || (a >= p && a + a_len <= p + len),
                       "long data out of bounds");
        break;
    default:
        break;
    }
}

static void
take_packet(const struct ha_pkt_reader *r)
{
    struct ha_handshake_response hr;
    char err[256];

    /* An exact-size copy, so ASan sees any read past the payload (the
     * reader's own buffer has slack). */
    size_t len = r->payload.len;
    uint8_t *p = malloc(len > 0 ? len : 1);

    if (p == NULL)
        abort();
    if (len > 0)
        memcpy(p, r->payload.data, len);

    err[0] = '\0';
    if (ha_proto_decode_handshake_response(p, len, &hr, err, sizeof(err)) ==
        0) {
        FUZZ_CHECK(fuzz_has_nul(hr.user, sizeof(hr.user)), "user");
        FUZZ_CHECK(fuzz_has_nul(hr.db, sizeof(hr.db)), "db");
        FUZZ_CHECK(fuzz_has_nul(hr.plugin, sizeof(hr.plugin)), "plugin");
        FUZZ_CHECK(hr.auth_len <= sizeof(hr.auth), "%zu", hr.auth_len);
    } else {
        FUZZ_CHECK(err[0] != '\0', "handshake error without text");
    }
    decode_command(p, len);
    free(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ha_pkt_reader r;
    uint32_t state;
    size_t max_payload, off;
    char err[256];

    if (size < 2)
        return 0;
    state = 0x01000193u * (data[0] + 1u);
    max_payload = max_payloads[data[1] % (sizeof(max_payloads) /
                                          sizeof(max_payloads[0]))];
    data += 2;
    size -= 2;

    ha_proto_reader_init(&r, max_payload);
    off = 0;
    while (off < size) {
        size_t left = size - off, slice;
        uint32_t x = fuzz_rand(&state);
        bool ready = false;
        ssize_t n;

        /* Mostly small reads (headers split at every offset), sometimes
         * all that is left. */
        slice = (x & 3) == 0 ? left : 1 + (x >> 8) % 9;
        if (slice > left)
            slice = left;

        err[0] = '\0';
        n = ha_proto_reader_feed(&r, data + off, slice, &ready, err,
                                 sizeof(err));
        if (n < 0) {
            FUZZ_CHECK(err[0] != '\0', "feed failed without a message");
            FUZZ_CHECK(r.error > HA_PROTO_READER_OK &&
                           r.error < HA_PROTO_READER_ERROR_MAX,
                       "feed failed without a reason (%d)", (int)r.error);
            break; /* out of sync: conn.c sends ERR and closes */
        }
        FUZZ_CHECK((size_t)n <= slice, "consumed %zd of %zu", n, slice);
        FUZZ_CHECK(n > 0 || ready, "no progress on %zu bytes", slice);
        off += (size_t)n;
        if (ready) {
            FUZZ_CHECK(r.payload.len <= max_payload,
                       "payload %zu > max %zu", r.payload.len, max_payload);
            take_packet(&r);
            ha_proto_reader_next(&r);
        }
    }
    ha_proto_reader_free(&r);
    return 0;
}
