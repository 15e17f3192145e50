/* SPDX-License-Identifier: MIT
 *
 * heap_wrappers(<dump>): the allocation wrappers the allocation-site
 * rule skipped in a dump (prof/wrappers.h), and why each is one: the
 * built-in list, the operator (jemalloc-alloc_wrappers), or detection in
 * the dump's own stacks; and the names that are not, with why (removed
 * by the operator, or a candidate detection refused).
 *
 *   SELECT function, why, stacks, bytes FROM heap_wrappers('live')
 *    WHERE wrapper = 1;
 * lists, heaviest first, what heap_top looked past (redis: zmalloc,
 * zmalloc_usable, zrealloc_usable, ...).
 *
 *   0 function   TEXT     the name, as heap_profile shows it
 *   1 wrapper    INTEGER  1: the cut skips it; 0: it does not
 *   2 why        TEXT     'built-in list', 'operator', 'detected',
 *                         'removed by operator' or 'not detected'
 *   3 detail     TEXT     detection's evidence, or why it refused (its
 *                         callers, object sizes, code size, or the
 *                         stacks where it is not directly above the
 *                         allocator); NULL for a listed name
 *   4 stacks     INTEGER  a wrapper: stacks whose cut skipped it; not
 *                         one: stacks whose allocation site it is
 *   5 bytes      INTEGER  those stacks' in-use bytes
 *   6 alloc_bytes INTEGER their cumulative bytes (opt.prof_accum); NULL
 *                         when the dump has none
 *   7 module     TEXT     the mapped file of its code (first frame seen)
 *   8 callers    INTEGER  distinct callers detection saw it reached from
 *                         (detected and refused names); NULL otherwise
 *   9 code_bytes INTEGER  its symbol's size, where known and looked at
 *  10 dump       HIDDEN   a file name from stats_heap_dumps, or 'live'
 * Rows: every name of the set that occurs in the dump, and the
 * operator's and detection's names even when they do not; wrappers
 * first, then heaviest first. Only reads: INNOCUOUS.
 */
#include <stdlib.h>
#include <string.h>

#include "core/task.h"
#include "core/util.h"
#include "prof/wrapdetect.h"
#include "prof/wrappers.h"
#include "heap/profiles.h"
#include "vtab/heap_vtab.h"

#define WRAPPERS_SCHEMA                                                   \
    "CREATE TABLE x(function TEXT, wrapper INTEGER, why TEXT, "           \
    "detail TEXT, stacks INTEGER, bytes INTEGER, alloc_bytes INTEGER, "   \
    "module TEXT, callers INTEGER, code_bytes INTEGER, dump HIDDEN)"
#define WRAPPERS_COL_DUMP 10

typedef struct wrappers_cursor wrappers_cursor;
struct wrappers_cursor {
    struct ha_cursor rc;          /* rows [row, end) of uses; must be
                                   * first */
    struct ha_heap_profile *prof; /* holds the set the uses point into */
    struct ha_wrap_use *uses;
    size_t n;
};

static int
wrappers_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                 sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, WRAPPERS_SCHEMA, pp, pzErr);
}

static int
wrappers_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    return ha_heap_vtab_best_index(info, WRAPPERS_COL_DUMP, 1, NULL, 0, 30);
}

static int
wrappers_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(wrappers_cursor), pp);
}

static void
wrappers_clear(wrappers_cursor *c)
{
    free(c->uses);
    c->uses = NULL;
    c->n = 0;
    ha_heap_profile_put(c->prof);
    c->prof = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
wrappers_close(sqlite3_vtab_cursor *cur)
{
    wrappers_clear((wrappers_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* The uses, counted off the loop (one pass over the stacks). */
struct uses_job {
    struct ha_heap_profile *pr;   /* a reference held */
    struct ha_wrap_use *uses;
    size_t n;
    int rc;
    char err[256];
};

static void
uses_run(void *arg)
{
    struct uses_job *j = arg;

    j->rc = ha_wrap_uses(&j->pr->p, &j->pr->syms, j->pr->syms.wrappers,
                         &j->uses, &j->n, j->err, sizeof(j->err));
}

static void
uses_free(void *arg)
{
    struct uses_job *j = arg;

    free(j->uses);
    ha_heap_profile_put(j->pr);
    free(j);
}

static int
wrappers_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
                int argc, sqlite3_value **argv)
{
    wrappers_cursor *c = (wrappers_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    struct uses_job *j;
    char err[1024];
    int rc;

    (void)idxStr;
    wrappers_clear(c);
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 1)
        return ha_vtab_set_errmsg(&vt->base,
                                  "heap_wrappers needs a dump: SELECT * "
                                  "FROM heap_wrappers('<file name from "
                                  "stats_heap_dumps>') or "
                                  "heap_wrappers('live')");
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return SQLITE_NOMEM;
    if ((rc = ha_heap_profile_get(vt->conn->ctx->heap,
                                  (const char *)sqlite3_value_text(argv[0]),
                                  vt->conn->admin, &j->pr, err,
                                  sizeof(err))) != 0) {
        uses_free(j);
        return ha_heap_vtab_fail(&vt->base, rc, "heap_wrappers", err);
    }
    if (ha_task_offload(uses_run, uses_free, j) != 0)
        return ha_heap_vtab_fail(&vt->base, HA_HEAP_STOPPED, "heap_wrappers",
                                 NULL);
    if (j->rc != 0) {
        rc = ha_vtab_set_errmsg(&vt->base, "heap_wrappers: %s", j->err);
        uses_free(j);
        return rc;
    }
    c->prof = ha_heap_profile_ref(j->pr);
    c->uses = j->uses;
    c->n = j->n;
    j->uses = NULL;
    uses_free(j);
    ha_cursor_rewind(&c->rc, 0, c->n);
    return SQLITE_OK;
}

static int
wrappers_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    wrappers_cursor *c = (wrappers_cursor *)cur;
    const struct ha_wrap_use *u = &c->uses[c->rc.row];
    const struct ha_wrap_entry *e = u->e;
    bool looked = e->why == HA_WRAP_DETECTED || e->why == HA_WRAP_REJECTED;

    switch (col) {
    case 0:
        sqlite3_result_text(ctx, e->name, -1, SQLITE_TRANSIENT);
        break;
    case 1:
        sqlite3_result_int(ctx, u->wrapper);
        break;
    case 2:
        sqlite3_result_text(ctx, ha_wrap_why_name(e->why), -1,
                            SQLITE_STATIC);
        break;
    case 3:
        if (e->detail != NULL)
            sqlite3_result_text(ctx, e->detail, -1, SQLITE_TRANSIENT);
        break;
    case 4:
        sqlite3_result_int64(ctx, (sqlite3_int64)u->stacks);
        break;
    case 5:
        sqlite3_result_int64(ctx, (sqlite3_int64)(u->bytes + 0.5));
        break;
    case 6:
        if (ha_heapv2_has_accum(&c->prof->p))
            sqlite3_result_int64(ctx, (sqlite3_int64)(u->accum_bytes + 0.5));
        break;
    case 7:
        if (u->module != 0)
            sqlite3_result_text(ctx, ha_syms_str(&c->prof->syms, u->module),
                                -1, SQLITE_TRANSIENT);
        break;
    case 8:
        if (looked)
            sqlite3_result_int64(ctx, e->callers);
        break;
    case 9:
        if (looked && e->fsize > 0)
            sqlite3_result_int64(ctx, e->fsize);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_wrappers_module = {
    0,                  /* iVersion */
    wrappers_connect,   /* xCreate: a session's own (temp) */
    wrappers_connect,   /* xConnect */
    wrappers_best_index, /* xBestIndex - the dump */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    wrappers_open,      /* xOpen */
    wrappers_close,     /* xClose */
    wrappers_filter,    /* xFilter - the profile's set, counted */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    wrappers_column,    /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
