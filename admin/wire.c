/* SPDX-License-Identifier: MIT
 *
 * A connection's outgoing packets and its state (see wire.h).
 */
#include "admin/wire.h"

#include "admin/proto.h"
#include "core/log.h"

static const char *const state_names[HA_CONN_STATE_MAX] = {
    "handshake", "auth_switch", "auth_full", "command", "closing",
};

const char *
ha_wire_state_name(enum ha_conn_state state)
{
    return state < HA_CONN_STATE_MAX ? state_names[state] : "invalid";
}

void
ha_wire_set_state(struct ha_conn *c, enum ha_conn_state state)
{
    if (state >= HA_CONN_STATE_MAX)
        state = HA_CONN_CLOSING;
    if (c->state != state)
        ha_log_debug("connection %u: %s -> %s", c->id,
                     ha_wire_state_name(c->state), ha_wire_state_name(state));
    c->state = state;
}

void
ha_wire_send(struct ha_conn *c, const struct ha_buf *payload)
{
    ha_proto_write_packet(&c->out, &c->seq, payload->data, payload->len);
}

void
ha_wire_fail(struct ha_conn *c, uint16_t code, const char *sqlstate,
             const char *msg)
{
    struct ha_buf p = HA_BUF_INIT;

    ha_proto_encode_err(&p, code, sqlstate, msg);
    ha_wire_send(c, &p);
    ha_buf_free(&p);
    ha_wire_set_state(c, HA_CONN_CLOSING);
}

void
ha_wire_ok(struct ha_conn *c, uint16_t status, const char *info)
{
    struct ha_buf p = HA_BUF_INIT;

    ha_proto_encode_ok(&p, 0x00, 0, 0, status, 0, info);
    ha_wire_send(c, &p);
    ha_buf_free(&p);
}
