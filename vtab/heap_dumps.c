/* SPDX-License-Identifier: MIT
 *
 * stats_heap_dumps: one row per heap dump in the datadir, named as
 * jemalloc names dumps (<prefix>.<pid>.<seq>.{m,i,u}<n>.heap or
 * <prefix>.<pid>.<seq>.f.heap; heap_load.h).
 *
 *   0 file_name          TEXT     the name in the datadir: what heap_top()
 *                                 and the other functions take
 *   1 kind               TEXT     manual (m), interval (i), high-water (u),
 *                                 final (f)
 *   2 pid                INTEGER  process that wrote it
 *   3 seq                INTEGER  jemalloc's dump sequence number
 *   4 kind_seq           INTEGER  sequence within the kind (NULL: final)
 *   5 size_bytes         INTEGER  file size
 *   6 mtime              INTEGER  modification time, unix seconds
 *   7 sample_period      INTEGER  bytes between samples (heap_v2/<period>)
 *   8 bytes              INTEGER  in-use bytes, scaled as jeprof does
 *   9 objects            INTEGER  in-use objects, scaled the same way
 *  10 build_id_mismatch  TEXT     binaries replaced on disk since the dump
 *                                 ("path (dump build-id X, on disk Y)",
 *                                 "; "-joined); '' when all match, NULL
 *                                 when no build-ids were recorded
 * Columns 7-10 read the file (and its .buildid), only when asked for; a
 * file that does not parse reads NULL there.
 */
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "prof/heapv2.h"
#include "vtab/heap_load.h"
#include "vtab/heap_vtab.h"

#define DUMPS_SCHEMA                                                      \
    "CREATE TABLE x(file_name TEXT, kind TEXT, pid INTEGER, seq INTEGER, " \
    "kind_seq INTEGER, size_bytes INTEGER, mtime INTEGER, "               \
    "sample_period INTEGER, bytes INTEGER, objects INTEGER, "             \
    "build_id_mismatch TEXT)"

struct dump_row {
    char *name;
    struct ha_dump_name d;
    long long size, mtime;
    bool parsed, ok;        /* columns 7-9 read / readable */
    long long period, bytes, objects;
};

typedef struct dumps_cursor dumps_cursor;
struct dumps_cursor {
    sqlite3_vtab_cursor base;  /* Base class - must be first */
    struct dump_row *rows;
    size_t n, i;
};

static int
dumps_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
              sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_connect(db, aux, DUMPS_SCHEMA, pp, pzErr);
}

static int
dumps_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    info->estimatedCost = 1000;
    info->estimatedRows = 100;
    return SQLITE_OK;
}

static int
dumps_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    dumps_cursor *c = sqlite3_malloc(sizeof(*c));

    (void)p;
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *pp = &c->base;
    return SQLITE_OK;
}

static void
dumps_clear(dumps_cursor *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->rows[i].name);
    free(c->rows);
    c->rows = NULL;
    c->n = c->i = 0;
}

static int
dumps_close(sqlite3_vtab_cursor *cur)
{
    dumps_clear((dumps_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
dumps_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
             int argc, sqlite3_value **argv)
{
    dumps_cursor *c = (dumps_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    const char *dir = vt->conn->ctx->datadir;
    size_t cap = 0;
    struct dirent *de;
    DIR *d;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    dumps_clear(c);
    if (dir == NULL || (d = opendir(dir)) == NULL)
        return SQLITE_OK; /* no datadir: no dumps */
    while ((de = readdir(d)) != NULL) {
        struct dump_row r;
        struct stat st;
        char path[PATH_MAX];

        memset(&r, 0, sizeof(r));
        if (!ha_dumpname_parse(de->d_name, &r.d) ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
                sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (c->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct dump_row *p = realloc(c->rows, ncap * sizeof(*p));

            if (p == NULL)
                break;
            c->rows = p;
            cap = ncap;
        }
        r.name = strdup(de->d_name);
        if (r.name == NULL)
            break;
        r.size = (long long)st.st_size;
        r.mtime = (long long)st.st_mtime;
        c->rows[c->n++] = r;
    }
    closedir(d);
    return SQLITE_OK;
}

static int
dumps_next(sqlite3_vtab_cursor *cur)
{
    ((dumps_cursor *)cur)->i++;
    return SQLITE_OK;
}

static int
dumps_eof(sqlite3_vtab_cursor *cur)
{
    dumps_cursor *c = (dumps_cursor *)cur;

    return c->i >= c->n;
}

/* Parses the row's file for its header and totals, once. */
static void
dumps_parse(heap_vtab *vt, struct dump_row *r)
{
    struct ha_heapv2 p;
    struct stat st;
    char *buf, err[256];
    size_t len;

    r->parsed = true;
    if (ha_heap_read_file(vt->conn->ctx->datadir, r->name, &buf, &len, &st,
                          err, sizeof(err)) != 0)
        return;
    if (ha_heapv2_parse(buf, len, &p, err, sizeof(err)) == 0) {
        r->ok = true;
        r->period = (long long)p.period;
        r->bytes = (long long)(p.scaled_bytes + 0.5);
        r->objects = (long long)(p.scaled_objs + 0.5);
        ha_heapv2_free(&p);
    }
    free(buf);
}

static int
dumps_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    dumps_cursor *c = (dumps_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    struct dump_row *r = &c->rows[c->i];
    char *report;

    switch (col) {
    case 0:
        sqlite3_result_text(ctx, r->name, -1, SQLITE_TRANSIENT);
        break;
    case 1:
        sqlite3_result_text(ctx, r->d.kind, -1, SQLITE_STATIC);
        break;
    case 2:
        sqlite3_result_int64(ctx, r->d.pid);
        break;
    case 3:
        sqlite3_result_int64(ctx, r->d.seq);
        break;
    case 4:
        if (r->d.kind_seq >= 0)
            sqlite3_result_int64(ctx, r->d.kind_seq);
        break;
    case 5:
        sqlite3_result_int64(ctx, r->size);
        break;
    case 6:
        sqlite3_result_int64(ctx, r->mtime);
        break;
    case 10:
        report = ha_heap_buildid_report(vt->conn->ctx, r->name);
        if (report != NULL)
            sqlite3_result_text(ctx, report, -1, free);
        break;
    default:
        if (!r->parsed)
            dumps_parse(vt, r);
        if (r->ok)
            sqlite3_result_int64(ctx, col == 7   ? r->period
                                      : col == 8 ? r->bytes
                                                 : r->objects);
        break;
    }
    return SQLITE_OK;
}

sqlite3_module ha_heap_dumps_module = {
    0,                  /* iVersion */
    NULL,               /* xCreate - NULL: eponymous only */
    dumps_connect,      /* xConnect */
    dumps_best_index,   /* xBestIndex */
    ha_heap_disconnect, /* xDisconnect */
    NULL,               /* xDestroy */
    dumps_open,         /* xOpen */
    dumps_close,        /* xClose */
    dumps_filter,       /* xFilter - list the datadir */
    dumps_next,         /* xNext */
    dumps_eof,          /* xEof */
    dumps_column,       /* xColumn */
    ha_heap_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
