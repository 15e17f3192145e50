/* SPDX-License-Identifier: MIT
 *
 * Running SAVE/LOAD statements (see persist_stmt.h) through the engine's
 * disk layer, with MySQL replies.
 */
#include "admin/persist_stmt.h"

#include <limits.h>
#include <stdint.h>

int
ha_persist_exec(const struct ha_persist_ctx *ctx, bool admin,
                const struct ha_persist_cmd *cmd, struct ha_reply *r)
{
    enum ha_persist_error why;
    char msg[2 * PATH_MAX + 256];
    size_t n = 0;

    if (!admin) {
        ha_reply_err(r, 1227, "42000",
                     "Access denied; you need (at least one of) the SUPER "
                     "privilege(s) for this operation");
        return -1;
    }
    if (cmd->module == HA_PERSIST_CONFIG) {
        if (ha_persist_save_config(ctx, cmd->file, msg, sizeof(msg)) != 0) {
            ha_reply_err(r, 1105, "HY000", "%s", msg);
            return -1;
        }
        ha_reply_ok(r, 0, 0, msg);
        return 0;
    }
    if (cmd->module == HA_PERSIST_ADMIN) {
        ha_reply_ok(r, 0, 0,
                    "admin-* variables are read-only at run time and come "
                    "from the config file: nothing to save or load (SAVE "
                    "CONFIG TO FILE writes them with the rest)");
        return 0;
    }
    switch (cmd->action) {
    case HA_PERSIST_TO_DISK:
        if (ha_persist_save(ctx, &n, msg, sizeof(msg)) != 0) {
            ha_reply_err(r, 1105, "HY000", "%s", msg);
            return -1;
        }
        ha_reply_ok(r, (uint64_t)n, 0, msg);
        return 0;
    case HA_PERSIST_FROM_DISK:
        if (ha_persist_load(ctx, &n, &why, msg, sizeof(msg)) != 0) {
            if (why == HA_PERSIST_INVALID)
                ha_reply_err(r, 1231, "42000", "%s", msg);
            else
                ha_reply_err(r, 1105, "HY000", "%s", msg);
            return -1;
        }
        ha_reply_ok(r, (uint64_t)n, 0, msg);
        return 0;
    case HA_PERSIST_TO_RUNTIME:
        ha_reply_ok(r, 0, 0,
                    "nothing to do: an UPDATE of global_variables acts at "
                    "once, so memory and runtime are one layer");
        return 0;
    case HA_PERSIST_TO_MEMORY:
        ha_reply_ok(r, 0, 0,
                    "nothing to do: runtime and memory are one layer "
                    "(SAVE JEMALLOC VARIABLES TO DISK keeps them)");
        return 0;
    default:
        ha_reply_err(r, 1105, "HY000", "unsupported");
        return -1;
    }
}
