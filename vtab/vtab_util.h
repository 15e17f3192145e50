/* SPDX-License-Identifier: MIT
 *
 * Beneath every table file and vtab.c: the context the tables share
 * (struct ha_vtab_ctx, public through vtab.h: the heap service and the
 * rows layers above own), the per-connection state
 * every module gets as its client data, and the helpers the table files
 * share (vtab_util.c). vtab.c, the registration, sits above
 * the tables, so they include this and never vtab.h.
 */
#ifndef HA_VTAB_UTIL_H
#define HA_VTAB_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "heap/heap.h"

/* Shared by every session's connection; owned by the engine and
 * outliving all connections: the heap service the tables read (with the
 * rows of global_variables that layers above own: heap.h's admin_value
 * and engine_value), and the rows of stats_push. */
struct ha_push_row;

struct ha_vtab_ctx {
    struct ha_heap *heap;              /* jemalloc, dumps, profiles */
    /* stats_push's rows (heap/pushrow.h), supplied by the layer that
     * pushes (engine/push.c): up to max into rows, how many returned.
     * NULL: the table is empty. */
    size_t (*push_rows)(const void *arg, struct ha_push_row *rows,
                        size_t max);
    const void *push_arg;              /* passed to push_rows */
};

/* Longest OK-packet info message, terminating NUL included. */
#define HA_VTAB_INFO_MAX 1024

/* One per registered sqlite3 connection (ha_vtab_register_all); the
 * caller keeps it as its handle. Used on the connection's thread only. */
struct ha_vtab_conn {
    struct ha_vtab_ctx *ctx;      /* shared, outlives the connection */
    int refs;                     /* modules and the caller holding it */
    bool admin;                   /* the session is an admin's (live
                                     heap profiles); ha_vtab_set_admin */
    char who[192];                /* "user@peer" for the audit log of
                                     control writes; ha_vtab_set_who */
    /* A table that waited on purpose (a delta's window: heap_top('live',
     * 10)) says so, and the session's statement deadline moves by ns:
     * the window is not execution (ha_vtab_set_waited). NULL: none. */
    void (*waited)(void *arg, int64_t ns);
    void *waited_arg;

    char info[HA_VTAB_INFO_MAX];  /* OK-packet message, "" when none */
};

/* idxNum bits shared by every table here (documented in each header). */
#define HA_VTAB_IDX_NAME (1u << 0) /* argv[0] = the name column's value */

/* Sets pVtab->zErrMsg (freeing the previous one) and returns SQLITE_ERROR,
 * or SQLITE_NOMEM when the message cannot be allocated. */
int ha_vtab_set_errmsg(sqlite3_vtab *vtab, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The start of every table's xConnect: declares schema (SQLite's error
 * into *pzErr), marks the table SQLITE_VTAB_INNOCUOUS or
 * SQLITE_VTAB_DIRECTONLY (risk: see each table's header) and allocates
 * size zeroed bytes for the table's struct, whose first member is its
 * sqlite3_vtab. Returns SQLITE_OK with *out set, or SQLite's error
 * (SQLITE_NOMEM). */
int ha_vtab_new(sqlite3 *db, const char *schema, int risk, size_t size,
                sqlite3_vtab **out, char **pzErr);

/* Replaces conn's info message. */
void ha_vtab_set_info(struct ha_vtab_conn *conn, const char *text);

/* xBestIndex for "one row per name" tables: a usable BINARY `=` on column
 * name_col becomes HA_VTAB_IDX_NAME with argv[0] its value (omitted from
 * SQLite's own check); otherwise a full scan of n_rows rows. */
int ha_vtab_best_index_name(sqlite3_index_info *info, int name_col,
                            int n_rows);

/* Drops one reference to conn (a struct ha_vtab_conn *), freeing it with
 * the last: the module destructor, and ha_vtab_release's body. */
void ha_vtab_conn_unref(void *conn);

/* Module registration (stats.c, globals.c), driven by vtab.c's modules[];
 * conn gains one reference per module, released by the module
 * destructor ha_vtab_conn_unref. */
int ha_stats_register(sqlite3 *db, struct ha_vtab_conn *conn);
int ha_globals_register(sqlite3 *db, struct ha_vtab_conn *conn);

int ha_heap_vtab_register(sqlite3 *db, struct ha_vtab_conn *conn);
/* stats_agents (agents.c): the datadir's agents. */
int ha_agents_register(sqlite3 *db, struct ha_vtab_conn *conn);
/* stats_push (vtab/stats_push.c). */
int ha_stats_push_register(sqlite3 *db, struct ha_vtab_conn *conn);

#endif /* HA_VTAB_UTIL_H */
