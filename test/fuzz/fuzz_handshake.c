/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: ha_proto_decode_handshake_response() on a hostile
 * HandshakeResponse41 payload (what a client sends before it is
 * authenticated), and the same bytes as a COM_CHANGE_USER payload, which
 * fills the same struct. Seeds: corpus/handshake/, real clients' responses
 * without the packet header.
 *
 * Invariants: 0 or -1; on 0 every string field is terminated inside its
 * array and auth_len fits auth; on -1 err names what was wrong.
 */
#include "fuzz.h"

#include <stdbool.h>

#include "admin/proto.h"

static void
check_response(const struct ha_handshake_response *hr)
{
    FUZZ_CHECK(fuzz_has_nul(hr->user, sizeof(hr->user)), "user");
    FUZZ_CHECK(fuzz_has_nul(hr->db, sizeof(hr->db)), "db");
    FUZZ_CHECK(fuzz_has_nul(hr->plugin, sizeof(hr->plugin)), "plugin");
    FUZZ_CHECK(hr->auth_len <= sizeof(hr->auth), "auth_len %zu",
               hr->auth_len);
    FUZZ_CHECK(hr->has_db || hr->db[0] == '\0', "db without has_db");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ha_handshake_response hr;
    char err[256];
    int rc;

    err[0] = '\0';
    rc = ha_proto_decode_handshake_response(data, size, &hr, err,
                                            sizeof(err));
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (rc == 0)
        check_response(&hr);
    else
        FUZZ_CHECK(err[0] != '\0', "error without text");

    /* COM_CHANGE_USER wants its command byte first; the negotiated
     * capabilities decide the auth field's layout, so try both. */
    if (size > 0 && data[0] == HA_COM_CHANGE_USER) {
        static const uint32_t caps[] = {
            HA_SERVER_CAPABILITIES,
            HA_CLIENT_PROTOCOL_41,
        };
        for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
            err[0] = '\0';
            rc = ha_proto_decode_change_user(data, size, caps[i], &hr, err,
                                             sizeof(err));
            FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
            if (rc == 0)
                check_response(&hr);
            else
                FUZZ_CHECK(err[0] != '\0', "change_user error without text");
        }
    }
    return 0;
}
