/* SPDX-License-Identifier: MIT
 *
 * Helpers the virtual-table files share (see vtab_util.h): the
 * per-connection reference count and info slot, error messages, and
 * xBestIndex on a name column.
 */
#include "vtab/vtab_util.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "core/task.h"
#include "core/util.h"

void
ha_vtab_conn_unref(void *p)
{
    struct ha_vtab_conn *conn = p;

    if (--conn->refs > 0)
        return;
    sqlite3_free(conn);
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
ha_vtab_new(sqlite3 *db, const char *schema, int risk, size_t size,
            sqlite3_vtab **out, char **pzErr)
{
    int rc = sqlite3_declare_vtab(db, schema);

    if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        return rc;
    }
    sqlite3_vtab_config(db, risk);
    if ((*out = sqlite3_malloc64(size)) == NULL)
        return SQLITE_NOMEM;
    memset(*out, 0, size);
    return SQLITE_OK;
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
