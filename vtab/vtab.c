/* SPDX-License-Identifier: MIT
 *
 * Registration of heapadmin's virtual tables on a connection, from one
 * table of modules, and the per-connection handle with its info-message
 * slot (ha_vtab_take_info). The helpers the table files share are in
 * vtab_util.c, beneath them.
 */
#include "vtab/vtab.h"

#include <string.h>

#include "core/util.h"
#include "vtab/heap_vtab.h"
#include "vtab/jestats.h"
#include "vtab/vtab_util.h"

/* Every table family, registered in this order: adding one is a line
 * here (and its file). */
static const struct {
    const char *what;                                 /* for messages */
    int (*reg)(sqlite3 *db, struct ha_vtab_conn *conn);
} modules[] = {
    {"stats", ha_stats_register},
    {"stats_memory_breakdown", ha_memory_breakdown_register},
    {"stats_jemalloc_arenas", ha_arenas_register},
    {"stats_jemalloc_bins", ha_bins_register},
    {"global_variables", ha_globals_register},
    {"heap profiles", ha_heap_vtab_register},
    {"stats_agents", ha_agents_register},
    {"stats_push", ha_stats_push_register},
};

void
ha_vtab_set_admin(struct ha_vtab_conn *conn, bool admin)
{
    if (conn != NULL)
        conn->admin = admin;
}

void
ha_vtab_set_waited(struct ha_vtab_conn *conn,
                   void (*waited)(void *arg, int64_t ns), void *arg)
{
    if (conn != NULL) {
        conn->waited = waited;
        conn->waited_arg = arg;
    }
}

void
ha_vtab_set_who(struct ha_vtab_conn *conn, const char *who)
{
    if (conn != NULL)
        ha_strlcpy(conn->who, who != NULL ? who : "", sizeof(conn->who));
}

void
ha_vtab_release(struct ha_vtab_conn *conn)
{
    if (conn != NULL)
        ha_vtab_conn_unref(conn);
}

int
ha_vtab_register_all(sqlite3 *db, struct ha_vtab_ctx *ctx,
                     struct ha_vtab_conn **out, char **pzErr)
{
    struct ha_vtab_conn *conn;
    size_t i = 0;
    int rc = SQLITE_OK;

    *out = NULL;
    *pzErr = NULL;
    conn = sqlite3_malloc(sizeof(*conn));
    if (conn == NULL)
        return SQLITE_NOMEM;
    memset(conn, 0, sizeof(*conn));
    conn->ctx = ctx;
    conn->refs = 1; /* the caller's, handed over on success */

    for (i = 0; i < HA_ARRAY_SIZE(modules); i++) {
        rc = modules[i].reg(db, conn);
        if (rc != SQLITE_OK)
            break;
    }
    if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("registering heapadmin virtual tables: "
                                 "%s: %s",
                                 modules[i].what, sqlite3_errstr(rc));
        ha_vtab_conn_unref(conn);
        return rc;
    }
    *out = conn;
    return SQLITE_OK;
}

size_t
ha_vtab_take_info(struct ha_vtab_conn *conn, char *buf, size_t len)
{
    size_t n;

    if (len > 0)
        buf[0] = '\0';
    if (conn == NULL || conn->info[0] == '\0')
        return 0;
    n = strlen(conn->info);
    ha_strlcpy(buf, conn->info, len);
    conn->info[0] = '\0';
    return n;
}
