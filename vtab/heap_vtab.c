/* SPDX-License-Identifier: MIT
 *
 * Heap profiles as SQL: the dumps in the datadir, and what holds memory
 * in one of them or in this process now, read in-process with prof/ (no
 * jeprof, no Perl). The tables (one file each, see heap_vtab.h):
 *
 *   SELECT file_name, kind, bytes FROM stats_heap_dumps ORDER BY mtime;
 *   SELECT function, flat_bytes, cum_bytes
 *     FROM heap_top('proxysql.4242.0.m0.heap') LIMIT 20;
 *   SELECT stack, bytes FROM heap_stacks('live') ORDER BY bytes DESC;
 *   SELECT * FROM heap_profile('proxysql.4242.0.m0.heap')
 *    WHERE stack_id = 17;
 *   SELECT stack, bytes FROM heap_profile_diff('a.heap', 'b.heap')
 *    ORDER BY bytes DESC LIMIT 10;
 *   SELECT path, names_from, detail FROM heap_modules('live');
 *   SELECT function, alloc_bytes FROM heap_top('live', 10);
 *   SELECT thread_name, bytes FROM heap_threads('live');
 *
 * All only read: INNOCUOUS, readable by stats users; 'live' is for
 * admins. This file holds what they share and their registration.
 */
#include "vtab/heap_vtab.h"

#include "heap/profiles.h"

#include <stdint.h>
#include <string.h>

int
ha_heap_vtab_connect(sqlite3 *db, void *aux, const char *schema,
                sqlite3_vtab **pp, char **pzErr)
{
    int rc = ha_vtab_new(db, schema, SQLITE_VTAB_INNOCUOUS, sizeof(heap_vtab),
                         pp, pzErr);

    if (rc == SQLITE_OK)
        ((heap_vtab *)*pp)->conn = aux;
    return rc;
}

int
ha_heap_vtab_fail(sqlite3_vtab *vt, int rc, const char *table, const char *err)
{
    if (rc == HA_HEAP_STOPPED) {
        ha_vtab_set_errmsg(vt, "%s: interrupted", table);
        return SQLITE_INTERRUPT;
    }
    return ha_vtab_set_errmsg(vt, "%s: %s", table, err != NULL ? err : "");
}

int
ha_heap_vtab_profile(sqlite3_vtab *base, const char *table,
                     sqlite3_value *dump, sqlite3_value *seconds,
                     struct ha_heap_profile **out)
{
    heap_vtab *vt = (heap_vtab *)base;
    struct ha_vtab_conn *conn = vt->conn;
    const unsigned char *name = sqlite3_value_text(dump);
    int64_t waited = 0;
    char err[1024];
    int rc;

    *out = NULL;
    if (seconds == NULL || sqlite3_value_type(seconds) == SQLITE_NULL) {
        rc = ha_heap_profile_get(conn->ctx->heap, (const char *)name,
                                 conn->admin, out, err, sizeof(err));
        return rc != 0 ? ha_heap_vtab_fail(base, rc, table, err) : SQLITE_OK;
    }
    if (sqlite3_value_numeric_type(seconds) != SQLITE_INTEGER ||
        name == NULL || strcmp((const char *)name, HA_HEAP_LIVE) != 0)
        return ha_vtab_set_errmsg(base,
                                  "%s: seconds makes a delta of the live "
                                  "profile: %s('live', <whole seconds, 1 "
                                  "to %d>)",
                                  table, table, HA_HEAP_DELTA_MAX_S);
    rc = ha_heap_profile_delta(conn->ctx->heap,
                               sqlite3_value_int64(seconds) > INT32_MAX
                                   ? INT32_MAX
                               : sqlite3_value_int64(seconds) < INT32_MIN
                                   ? INT32_MIN
                                   : (int)sqlite3_value_int64(seconds),
                               conn->admin, out, &waited, err, sizeof(err));
    if (waited > 0 && conn->waited != NULL)
        conn->waited(conn->waited_arg, waited);
    return rc != 0 ? ha_heap_vtab_fail(base, rc, table, err) : SQLITE_OK;
}

int
ha_heap_vtab_thread(sqlite3_vtab *vt, const char *table, sqlite3_value *v,
                    struct ha_threads_match *m)
{
    memset(m, 0, sizeof(*m));
    if (sqlite3_value_type(v) == SQLITE_INTEGER &&
        sqlite3_value_int64(v) >= 0) {
        m->by_uid = true;
        m->uid = (uint64_t)sqlite3_value_int64(v);
        return SQLITE_OK;
    }
    if (sqlite3_value_type(v) == SQLITE_TEXT) {
        m->name = (const char *)sqlite3_value_text(v);
        return m->name != NULL ? SQLITE_OK : SQLITE_NOMEM;
    }
    return ha_vtab_set_errmsg(vt, "%s: thread is a thread's name (text: "
                                  "every thread of that name, '' for "
                                  "those with none) or its thread_id "
                                  "from heap_threads (an integer >= 0)",
                              table);
}

int
ha_heap_vtab_disconnect(sqlite3_vtab *p)
{
    sqlite3_free(p);
    return SQLITE_OK;
}

int
ha_heap_vtab_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    (void)cur;
    *rowid = 0;
    return SQLITE_OK;
}

int
ha_heap_vtab_best_index(sqlite3_index_info *info, int arg0, int n_args,
                   const int *push, int n_push, double rows)
{
    int args[4] = {-1, -1, -1, -1}, pushed[8];
    int have = 0, argv = 0, idx = 0;
    double cost = rows;

    if (n_push > 8)
        n_push = 8;
    for (int k = 0; k < n_push; k++)
        pushed[k] = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int col = c->iColumn;

        if (c->op != SQLITE_INDEX_CONSTRAINT_EQ)
            continue;
        if (col >= arg0 && col < arg0 + n_args && n_args <= 4) {
            /* An argument that cannot be used in this plan: SQLite must
             * find another (the argument comes from a join's other
             * side). */
            if (!c->usable)
                return SQLITE_CONSTRAINT;
            if (args[col - arg0] < 0) {
                args[col - arg0] = i;
                have++;
            }
            continue;
        }
        for (int k = 0; k < n_push; k++)
            if (col == push[k] && c->usable && pushed[k] < 0)
                pushed[k] = i;
    }
    if (have == n_args) {
        for (int a = 0; a < n_args; a++) {
            info->aConstraintUsage[args[a]].argvIndex = ++argv;
            info->aConstraintUsage[args[a]].omit = 1;
        }
        idx = HA_HEAP_IDX_ARGS;
        for (int k = 0; k < n_push; k++) {
            if (pushed[k] < 0)
                continue;
            info->aConstraintUsage[pushed[k]].argvIndex = ++argv;
            info->aConstraintUsage[pushed[k]].omit = 1;
            idx |= HA_HEAP_IDX_PUSH(k);
            cost /= 100;
        }
        info->estimatedCost = 100 + cost;
        info->estimatedRows = (sqlite3_int64)(cost > 1 ? cost : 1);
    } else {
        info->estimatedCost = 1e99;
    }
    info->idxNum = idx;
    return SQLITE_OK;
}

int
ha_heap_vtab_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    static const struct {
        const char *name;
        const sqlite3_module *module;
    } tables[] = {
        {"stats_heap_dumps", &ha_heap_dumps_module},
        {"heap_top", &ha_heap_top_module},
        {"heap_stacks", &ha_heap_stacks_module},
        {"heap_profile", &ha_heap_profile_module},
        {"heap_profile_diff", &ha_heap_diff_module},
        {"heap_modules", &ha_heap_modules_module},
        {"heap_threads", &ha_heap_threads_module},
        {"heap_wrappers", &ha_heap_wrappers_module},
        {"heap_growth", &ha_heap_growth_module},
        {"heap_growth_stacks", &ha_heap_growth_stacks_module},
        {"stats_previous_runs", &ha_previous_runs_module},
        {"heap_fragmentation", &ha_heap_fragmentation_module},
        {"heap_fragmentation_stacks", &ha_heap_fragmentation_stacks_module},
        {"heap_lifetimes", &ha_heap_lifetimes_module},
        {"heap_lifetimes_stacks", &ha_heap_lifetimes_stacks_module},
        {"stats_jemalloc_recent", &ha_heap_recent_module},
    };

    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        int rc;

        conn->refs++;
        rc = sqlite3_create_module_v2(db, tables[i].name, tables[i].module,
                                      conn, ha_vtab_conn_unref);
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}
