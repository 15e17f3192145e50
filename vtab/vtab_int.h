/* SPDX-License-Identifier: MIT
 *
 * Internal to vtab/: the per-connection state every module gets as its
 * client data, and helpers shared by stats.c and globals.c.
 */
#ifndef HA_VTAB_INT_H
#define HA_VTAB_INT_H

#include <sqlite3.h>

#include "vtab/vtab.h"

/* One per registered sqlite3 connection (ha_vtab_register_all); the
 * caller keeps it as its handle. Used on the connection's thread only. */
struct ha_vtab_conn {
    struct ha_vtab_ctx *ctx;      /* shared, outlives the connection */
    int refs;                     /* modules and the caller holding it */

    char info[HA_VTAB_INFO_MAX];  /* OK-packet message, "" when none */
};

/* idxNum bits shared by every table here (documented in each header). */
#define HA_VTAB_IDX_NAME (1u << 0) /* argv[0] = the name column's value */

/* Sets pVtab->zErrMsg (freeing the previous one) and returns SQLITE_ERROR,
 * or SQLITE_NOMEM when the message cannot be allocated. */
int ha_vtab_set_errmsg(sqlite3_vtab *vtab, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Replaces conn's info message. */
void ha_vtab_set_info(struct ha_vtab_conn *conn, const char *text);

/* xBestIndex for "one row per name" tables: a usable BINARY `=` on column
 * name_col becomes HA_VTAB_IDX_NAME with argv[0] its value (omitted from
 * SQLite's own check); otherwise a full scan of n_rows rows. */
int ha_vtab_best_index_name(sqlite3_index_info *info, int name_col,
                            int n_rows);

/* Module registration (stats.c, globals.c); conn gains one reference per
 * module, released by the module destructor ha_vtab_conn_unref. */
int ha_stats_register(sqlite3 *db, struct ha_vtab_conn *conn);
int ha_globals_register(sqlite3 *db, struct ha_vtab_conn *conn);
void ha_vtab_conn_unref(void *conn);

#endif /* HA_VTAB_INT_H */
