/* SPDX-License-Identifier: MIT
 *
 * heap_modules(<dump>): the mapped files that hold the dump's frames, and
 * where the symbolizer found their names (prof/symbolize.h): DWARF in
 * the file or a debug file under a debug root, DWARF from debuginfod,
 * the full symbol table, only the exported symbols, or nothing. What is
 * not named is "<module>+0x<offset>" in every other table; this says why
 * and what would name it.
 *
 *   SELECT path, names_from, frames, named_frames, detail
 *     FROM heap_modules('proxysql.4242.0.m0.heap') ORDER BY bytes DESC;
 * lists, heaviest first, each module with how many of its frames have
 * names and, for a stripped one, the debug file that would name them.
 *
 *   0 path          TEXT     the file as the dump mapped it
 *   1 build_id      TEXT     its GNU build-id (the file on disk's, or the
 *                            one recorded at the dump when it was
 *                            replaced since); NULL: none
 *   2 names_from    TEXT     'dwarf', 'debuginfod', 'symtab', 'dynsym'
 *                            or 'none'
 *   3 frames        INTEGER  distinct addresses of the dump in it
 *   4 bytes         INTEGER  in-use bytes of the stacks through it
 *                            (allocator frames included)
 *   5 detail        TEXT     where the names came from, or why there are
 *                            none: the debug file that would name them,
 *                            debuginfod's answer (one per module, never
 *                            per frame), a file that cannot be read or
 *                            was replaced since the dump
 *   6 named_frames  INTEGER  ... of its frames with a certain name
 *   7 from_index    INTEGER  1: named from the module's symbol index in
 *                            the datadir's cache/ (prof/symindex.h),
 *                            none of its files read; 0: from its files
 *   8 dump          HIDDEN   a file name from stats_heap_dumps, or 'live'
 * One row per module with frames, in the order the dump mapped them.
 * Only reads: INNOCUOUS, readable by stats users like the other heap
 * tables.
 */
#include <stdlib.h>
#include <string.h>

#include "prof/aggregate.h"
#include "prof/syms.h"
#include "heap/profiles.h"
#include "vtab/heap_vtab.h"

#define MODULES_SCHEMA                                                    \
    "CREATE TABLE x(path TEXT, build_id TEXT, names_from TEXT, "          \
    "frames INTEGER, bytes INTEGER, detail TEXT, named_frames INTEGER, "  \
    "from_index INTEGER, dump HIDDEN)"
#define MODULES_COL_PATH 0
#define MODULES_COL_BUILD_ID 1
#define MODULES_COL_NAMES_FROM 2
#define MODULES_COL_FRAMES 3
#define MODULES_COL_BYTES 4
#define MODULES_COL_DETAIL 5
#define MODULES_COL_NAMED 6
#define MODULES_COL_FROM_INDEX 7
#define MODULES_COL_DUMP 8

typedef struct modules_cursor modules_cursor;
struct modules_cursor {
    struct ha_cursor rc;              /* modules [row, end) of
                                       * prof->syms; must be first */
    struct ha_heap_profile *prof;     /* holds syms and figures */
    const struct ha_agg_module *figs; /* per prof->syms.modules */
};

static int
modules_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, MODULES_SCHEMA, pp, pzErr);
}

static int
modules_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    return ha_heap_vtab_best_index(info, MODULES_COL_DUMP, 1, NULL, 0, 30);
}

/* Whether module c->row has no frames (a record the dump's build-ids
 * made for a module none of its stacks reach): not shown. */
static bool
modules_skip(const struct ha_cursor *rc)
{
    const modules_cursor *c = (const modules_cursor *)rc;

    return c->figs[rc->row].frames == 0;
}

static int
modules_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    int rc;

    (void)p;
    if ((rc = ha_cursor_open(sizeof(modules_cursor), pp)) == SQLITE_OK)
        ((modules_cursor *)*pp)->rc.skip = modules_skip;
    return rc;
}

static void
modules_clear(modules_cursor *c)
{
    ha_heap_profile_put(c->prof);
    c->prof = NULL;
    c->figs = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
modules_close(sqlite3_vtab_cursor *cur)
{
    modules_clear((modules_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
modules_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
               int argc, sqlite3_value **argv)
{
    modules_cursor *c = (modules_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    char err[1024];
    int rc;

    (void)idxStr;
    modules_clear(c);
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 1)
        return ha_vtab_set_errmsg(&vt->base,
                                  "heap_modules needs a dump: SELECT * FROM "
                                  "heap_modules('<file name from "
                                  "stats_heap_dumps>') or "
                                  "heap_modules('live')");
    if ((rc = ha_heap_profile_get(vt->conn->ctx->heap,
                                  (const char *)sqlite3_value_text(argv[0]),
                                  vt->conn->admin, &c->prof, err,
                                  sizeof(err))) != 0 ||
        (rc = ha_heap_profile_modules(c->prof, &c->figs, err,
                                      sizeof(err))) != 0)
        return ha_heap_vtab_fail(&vt->base, rc, "heap_modules", err);
    ha_cursor_rewind(&c->rc, 0, c->prof->syms.n_modules);
    return SQLITE_OK;
}

/* A string of the profile's table; 0 is NULL in SQL. */
static void
result_str(sqlite3_context *ctx, const struct ha_syms *s, uint32_t off)
{
    if (off != 0)
        sqlite3_result_text(ctx, ha_syms_str(s, off), -1, SQLITE_TRANSIENT);
}

static int
modules_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    modules_cursor *c = (modules_cursor *)cur;
    const struct ha_syms *s = &c->prof->syms;
    const struct ha_syms_module *m = &s->modules[c->rc.row];
    const struct ha_agg_module *f = &c->figs[c->rc.row];

    switch (col) {
    case MODULES_COL_PATH:
        result_str(ctx, s, m->path);
        break;
    case MODULES_COL_BUILD_ID:
        result_str(ctx, s, m->build_id);
        break;
    case MODULES_COL_NAMES_FROM:
        sqlite3_result_text(ctx, ha_syms_source_name(m->from), -1,
                            SQLITE_STATIC);
        break;
    case MODULES_COL_FRAMES:
        sqlite3_result_int64(ctx, (sqlite3_int64)f->frames);
        break;
    case MODULES_COL_BYTES:
        sqlite3_result_int64(ctx, (sqlite3_int64)(f->bytes + 0.5));
        break;
    case MODULES_COL_DETAIL:
        result_str(ctx, s, m->detail);
        break;
    case MODULES_COL_NAMED:
        sqlite3_result_int64(ctx, (sqlite3_int64)f->named);
        break;
    case MODULES_COL_FROM_INDEX:
        sqlite3_result_int(ctx, m->from_index);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_modules_module = {
    0,                  /* iVersion */
    modules_connect,    /* xCreate: a session's own (temp) */
    modules_connect,    /* xConnect */
    modules_best_index, /* xBestIndex - the dump */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    modules_open,       /* xOpen */
    modules_close,      /* xClose */
    modules_filter,     /* xFilter - the cached profile's modules */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    modules_column,     /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
