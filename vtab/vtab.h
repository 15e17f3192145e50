/* SPDX-License-Identifier: MIT
 *
 * Registers heapadmin's virtual tables on one SQLite connection:
 *   stats_memory_jemalloc  (read-only, jemalloc scalars)
 *   stats_memory_metrics   (read-only, ProxySQL's row names)
 *   global_variables       (admin-* and jemalloc-* settings; UPDATE acts)
 * All are eponymous: they exist in every connection the modules are
 * registered on, with no CREATE VIRTUAL TABLE in the shared schema.
 */
#ifndef HA_VTAB_H
#define HA_VTAB_H

#include <sqlite3.h>

#include "config.h"
#include "mallctl.h"

/* Shared by every session's connection; owned by the server and outliving
 * all connections. */
struct ha_vtab_ctx {
    const struct ha_mallctl_ops *ops;  /* jemalloc, or a fake in tests */
    const struct ha_config *cfg;       /* admin-* rows */
    const char *datadir;               /* absolute; dumps go here */
};

/* Registers all modules on db with ctx as their client data. Returns
 * SQLITE_OK or an SQLite error code with *pzErr set (sqlite3_malloc'd). */
int ha_vtab_register_all(sqlite3 *db, struct ha_vtab_ctx *ctx, char **pzErr);

#endif /* HA_VTAB_H */
