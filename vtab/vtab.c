/* SPDX-License-Identifier: MIT
 *
 * Registration of heapadmin's virtual tables on a connection, the
 * per-connection handle and its info-message slot (ha_vtab_take_info),
 * and helpers the table files share (error messages, xBestIndex on the
 * name column).
 */
#include "vtab/vtab.h"

#include <stdarg.h>
#include <string.h>

#include "core/util.h"
#include "vtab/vtab_int.h"

void
ha_vtab_conn_unref(void *p)
{
    struct ha_vtab_conn *conn = p;

    if (--conn->refs > 0)
        return;
    sqlite3_free(conn);
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
    int rc;

    *out = NULL;
    *pzErr = NULL;
    conn = sqlite3_malloc(sizeof(*conn));
    if (conn == NULL)
        return SQLITE_NOMEM;
    memset(conn, 0, sizeof(*conn));
    conn->ctx = ctx;
    conn->refs = 1; /* the caller's, handed over on success */

    rc = ha_stats_register(db, conn);
    if (rc == SQLITE_OK)
        rc = ha_globals_register(db, conn);
    if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("registering heapadmin virtual tables: %s",
                                 sqlite3_errstr(rc));
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
