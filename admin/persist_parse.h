/* SPDX-License-Identifier: MIT
 *
 * Parsing ProxySQL's layer commands (pure; fuzzed by fuzz_dialect): SAVE/LOAD <module> VARIABLES and SAVE CONFIG
 * TO FILE. heapadmin has two layers, not ProxySQL's three: an UPDATE of
 * global_variables acts at once (memory and runtime are one), and the
 * disk. So:
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
#ifndef HA_PERSIST_PARSE_H
#define HA_PERSIST_PARSE_H

#include <stddef.h>

#include "admin/lex.h"

enum ha_persist_module {
    HA_PERSIST_JEMALLOC,   /* JEMALLOC VARIABLES: jemalloc-* rows */
    HA_PERSIST_ADMIN,      /* ADMIN VARIABLES: admin-* rows */
    HA_PERSIST_CONFIG,     /* CONFIG (TO FILE) */
    HA_PERSIST_MODULE_MAX
};

enum ha_persist_action {
    HA_PERSIST_TO_DISK,      /* SAVE ... TO DISK / FROM MEMORY */
    HA_PERSIST_FROM_DISK,    /* LOAD ... FROM DISK / TO MEMORY */
    HA_PERSIST_TO_RUNTIME,   /* LOAD ... TO RUNTIME / FROM MEMORY */
    HA_PERSIST_TO_MEMORY,    /* SAVE ... TO MEMORY / FROM RUNTIME */
    HA_PERSIST_TO_FILE,      /* SAVE CONFIG TO FILE */
    HA_PERSIST_ACTION_MAX
};

struct ha_persist_cmd {
    enum ha_persist_module module;
    enum ha_persist_action action;
    char file[256];          /* TO_FILE: a plain file name */
};

/* Parses the statement whose first significant token is i (SAVE or LOAD)
 * into cmd. Returns 0, or -1 with err saying what was expected (the
 * statements and modules heapadmin has). Pure. */
int ha_persist_parse(const struct ha_lex *lx, size_t i,
                     struct ha_persist_cmd *cmd, char *err, size_t errlen);

#endif /* HA_PERSIST_PARSE_H */
