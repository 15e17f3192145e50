/* SPDX-License-Identifier: MIT
 *
 * Running ProxySQL's layer commands (parsed by persist_parse.h): SAVE/LOAD <module> VARIABLES and SAVE CONFIG
 * TO FILE. heapadmin has two layers, not ProxySQL's three: an UPDATE of
 * global_variables acts at once (memory and runtime are one), and the
 * disk (engine/persist.h runs them). So:
 *   SAVE JEMALLOC VARIABLES TO DISK   (= FROM MEMORY)  memory -> disk
 *   LOAD JEMALLOC VARIABLES FROM DISK (= TO MEMORY)    disk -> runtime
 *   LOAD ... TO RUNTIME (= FROM MEMORY), SAVE ... TO MEMORY (= FROM
 *   RUNTIME)                     accepted: OK, saying they are one layer
 *   SAVE/LOAD ADMIN VARIABLES ...  accepted: admin-* are read-only at run
 *                                  time and come from the config file
 *   SAVE CONFIG TO FILE <name>     the config, with the live jemalloc
 *                                  settings, as a file in the datadir
 * MEM and RUN are accepted for MEMORY and RUNTIME, as ProxySQL does.
 */
#ifndef HA_PERSIST_STMT_H
#define HA_PERSIST_STMT_H

#include <stdbool.h>
#include <stddef.h>

#include <sqlite3.h>

#include "admin/persist_parse.h"
#include "admin/query.h"
#include "engine/persist.h"

/* Runs cmd for a session of the given role (who: for the log) against
 * ctx (engine/persist.h) and replies OK (with what was done in the info)
 * or ERR. Returns 0, or -1 for an ERR. */
int ha_persist_exec(const struct ha_persist_ctx *ctx, bool admin,
                    const struct ha_persist_cmd *cmd, struct ha_reply *r);

#endif /* HA_PERSIST_STMT_H */
