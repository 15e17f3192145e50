/* SPDX-License-Identifier: MIT
 *
 * Registration of heapadmin's virtual tables on a connection, the
 * per-connection info-message slot behind ha_vtab_take_info(), and helpers
 * the table files share (error messages, xBestIndex on the name column).
 */
#include "vtab/vtab.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "core/util.h"
#include "vtab/vtab_int.h"

/* Connections with modules registered. Sessions may live on several
 * threads, so the list is locked; the slots themselves belong to the
 * connection's thread. */
static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ha_vtab_conn *conns;

static void
conn_unlink(struct ha_vtab_conn *conn)
{
    pthread_mutex_lock(&conns_lock);
    for (struct ha_vtab_conn **pp = &conns; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == conn) {
            *pp = conn->next;
            break;
        }
    }
    pthread_mutex_unlock(&conns_lock);
}

void
ha_vtab_conn_unref(void *p)
{
    struct ha_vtab_conn *conn = p;

    if (--conn->refs > 0)
        return;
    conn_unlink(conn);
    sqlite3_free(conn);
}

int
ha_vtab_register_all(sqlite3 *db, struct ha_vtab_ctx *ctx, char **pzErr)
{
    struct ha_vtab_conn *conn;
    int rc;

    *pzErr = NULL;
    conn = sqlite3_malloc(sizeof(*conn));
    if (conn == NULL)
        return SQLITE_NOMEM;
    memset(conn, 0, sizeof(*conn));
    conn->ctx = ctx;
    conn->db = db;
    conn->refs = 1; /* ours, dropped below */
    pthread_mutex_lock(&conns_lock);
    conn->next = conns;
    conns = conn;
    pthread_mutex_unlock(&conns_lock);

    rc = ha_stats_register(db, conn);
    if (rc == SQLITE_OK)
        rc = ha_globals_register(db, conn);
    if (rc != SQLITE_OK)
        *pzErr = sqlite3_mprintf("registering heapadmin virtual tables: %s",
                                 sqlite3_errstr(rc));
    ha_vtab_conn_unref(conn);
    return rc;
}

size_t
ha_vtab_take_info(sqlite3 *db, char *buf, size_t len)
{
    size_t n = 0;

    if (len > 0)
        buf[0] = '\0';
    pthread_mutex_lock(&conns_lock);
    for (struct ha_vtab_conn *c = conns; c != NULL; c = c->next) {
        if (c->db == db && c->info[0] != '\0') {
            n = strlen(c->info);
            ha_strlcpy(buf, c->info, len);
            c->info[0] = '\0';
            break;
        }
    }
    pthread_mutex_unlock(&conns_lock);
    return n;
}

void
ha_vtab_set_info(struct ha_vtab_conn *conn, const char *text)
{
    ha_strlcpy(conn->info, text, sizeof(conn->info));
}

int
ha_vtab_set_errmsg(sqlite3_vtab *vtab, const char *fmt, ...)
{
    va_list ap;

    sqlite3_free(vtab->zErrMsg);
    va_start(ap, fmt);
    vtab->zErrMsg = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    return vtab->zErrMsg != NULL ? SQLITE_ERROR : SQLITE_NOMEM;
}

int
ha_vtab_best_index_name(sqlite3_index_info *info, int name_col, int n_rows)
{
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        const char *coll;

        if (!c->usable || c->iColumn != name_col ||
            c->op != SQLITE_INDEX_CONSTRAINT_EQ)
            continue;
        /* xFilter compares bytes; leave other collations to SQLite. */
        coll = sqlite3_vtab_collation(info, i);
        if (coll != NULL && sqlite3_stricmp(coll, "BINARY") != 0)
            continue;
        info->aConstraintUsage[i].argvIndex = 1;
        info->aConstraintUsage[i].omit = 1;
        info->idxNum = HA_VTAB_IDX_NAME;
        info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
        info->estimatedCost = 1.0;
        info->estimatedRows = 1;
        return SQLITE_OK;
    }
    info->idxNum = 0;
    info->estimatedCost = (double)n_rows;
    info->estimatedRows = n_rows;
    return SQLITE_OK;
}
