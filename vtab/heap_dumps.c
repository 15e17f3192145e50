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
 * Columns 7-10 read the file (and its .buildid), only when the
 * statement reads them (xBestIndex's colUsed); a file that does not
 * parse reads NULL there. The scan runs on the worker thread, and the
 * totals of a dump are parsed once per file identity.
 */
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/task.h"
#include "prof/dumpfile.h"
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
    bool ok;                /* columns 7-9 read */
    long long period, bytes, objects;
    char *report;           /* column 10, when asked for; malloc'd */
    bool has_report;
};

typedef struct dumps_cursor dumps_cursor;
struct dumps_cursor {
    struct ha_cursor rc;       /* rows [row, end) of rows; must be first */
    struct dump_row *rows;
    size_t n;
};

/* idxNum bits: which costly columns the statement reads (colUsed), so
 * `SELECT file_name` or `count(*)` parses no dump. */
#define DUMPS_IDX_TOTALS (1u << 0) /* sample_period, bytes, objects */
#define DUMPS_IDX_REPORT (1u << 1) /* build_id_mismatch */

/* Totals of a dump already parsed, keyed by the file's identity: the
 * worker's, like the symbolizer (only jobs touch it). */
struct ha_dump_totals {
    struct totals_entry {
        char *name;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        bool ok;
        long long period, bytes, objects;
        uint64_t seen;      /* the scan that last listed it */
    } *e;
    size_t n, cap;
    uint64_t scan;
};

#define TOTALS_MAX 8192     /* entries kept; the oldest scans' go first */

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
    info->idxNum = 0;
    if (info->colUsed & ((1u << 7) | (1u << 8) | (1u << 9)))
        info->idxNum |= DUMPS_IDX_TOTALS;
    if (info->colUsed & (1u << 10))
        info->idxNum |= DUMPS_IDX_REPORT;
    info->estimatedCost = info->idxNum != 0 ? 100000 : 1000;
    info->estimatedRows = 100;
    return SQLITE_OK;
}

static int
dumps_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    (void)p;
    return ha_cursor_open(sizeof(dumps_cursor), pp);
}

static void
rows_free(struct dump_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].name);
        free(rows[i].report);
    }
    free(rows);
}

static void
dumps_clear(dumps_cursor *c)
{
    rows_free(c->rows, c->n);
    c->rows = NULL;
    c->n = 0;
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
dumps_close(sqlite3_vtab_cursor *cur)
{
    dumps_clear((dumps_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* The totals of the dump st describes: cached, or parsed now and kept.
 * Worker thread. */
static void
totals_of(struct ha_dump_totals *t, const char *dir, struct dump_row *r,
          const struct stat *st)
{
    struct totals_entry *e = NULL;
    struct ha_heapv2 p;
    struct stat rst;
    char *buf, err[256];
    size_t len;

    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->e[i].name, r->name) == 0) {
            e = &t->e[i];
            break;
        }
    if (e != NULL && e->dev == st->st_dev && e->ino == st->st_ino &&
        e->size == st->st_size && e->mtime.tv_sec == st->st_mtim.tv_sec &&
        e->mtime.tv_nsec == st->st_mtim.tv_nsec)
        goto found;
    if (e == NULL) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 64;
            struct totals_entry *v = realloc(t->e, cap * sizeof(*v));

            if (v == NULL)
                return;
            t->e = v;
            t->cap = cap;
        }
        e = &t->e[t->n];
        memset(e, 0, sizeof(*e));
        if ((e->name = strdup(r->name)) == NULL)
            return;
        t->n++;
    }
    e->ok = false;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->size = st->st_size;
    e->mtime = st->st_mtim;
    if (ha_dumpfile_read(dir, r->name, HA_DUMPFILE_DUMP, &buf, &len, &rst,
                         err, sizeof(err)) == 0) {
        if (ha_heapv2_parse(buf, len, &p, err, sizeof(err)) == 0) {
            e->ok = true;
            e->period = (long long)p.period;
            e->bytes = (long long)(p.scaled_bytes + 0.5);
            e->objects = (long long)(p.scaled_objs + 0.5);
            ha_heapv2_free(&p);
        }
        free(buf);
    }
found:
    e->seen = t->scan;
    r->ok = e->ok;
    r->period = e->period;
    r->bytes = e->bytes;
    r->objects = e->objects;
}

/* Keeps the entries of the latest scans within TOTALS_MAX. */
static void
totals_trim(struct ha_dump_totals *t)
{
    size_t out = 0;

    for (size_t i = 0; i < t->n; i++) {
        if (t->n - (i - out) > TOTALS_MAX && t->e[i].seen != t->scan) {
            free(t->e[i].name);
            continue;
        }
        t->e[out++] = t->e[i];
    }
    t->n = out;
}

void
ha_dump_totals_free(struct ha_dump_totals *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->e[i].name);
    free(t->e);
    free(t);
}

/* One scan of the datadir, off the loop. */
struct scan_job {
    struct ha_vtab_ctx *ctx;     /* datadir; dump_totals is the worker's */
    unsigned what;               /* DUMPS_IDX_* */
    struct dump_row *rows;
    size_t n;
};

static void
scan_run(void *arg)
{
    struct scan_job *j = arg;
    const char *dir = j->ctx->datadir;
    struct ha_dump_totals *t = j->ctx->dump_totals;
    size_t cap = 0;
    struct dirent *de;
    DIR *d;

    if ((j->what & DUMPS_IDX_TOTALS) && t == NULL)
        t = j->ctx->dump_totals = calloc(1, sizeof(*t));
    if (t != NULL)
        t->scan++;
    if (dir == NULL || (d = opendir(dir)) == NULL)
        return; /* no datadir: no dumps */
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
        if (j->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct dump_row *p = realloc(j->rows, ncap * sizeof(*p));

            if (p == NULL)
                break;
            j->rows = p;
            cap = ncap;
        }
        r.name = strdup(de->d_name);
        if (r.name == NULL)
            break;
        r.size = (long long)st.st_size;
        r.mtime = (long long)st.st_mtime;
        if ((j->what & DUMPS_IDX_TOTALS) && t != NULL)
            totals_of(t, dir, &r, &st);
        if (j->what & DUMPS_IDX_REPORT) {
            r.report = ha_heap_buildid_report(dir, r.name);
            r.has_report = true;
        }
        j->rows[j->n++] = r;
    }
    closedir(d);
    if (t != NULL)
        totals_trim(t);
}

static void
scan_discard(void *arg)
{
    struct scan_job *j = arg;

    rows_free(j->rows, j->n);
    free(j);
}

static int
dumps_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
             int argc, sqlite3_value **argv)
{
    dumps_cursor *c = (dumps_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    struct scan_job *j;

    (void)idxStr;
    (void)argc;
    (void)argv;
    dumps_clear(c);
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return SQLITE_NOMEM;
    j->ctx = vt->conn->ctx;
    j->what = (unsigned)idxNum;
    /* A datadir of a thousand dumps is a thousand stat()s, and each dump
     * whose totals are asked for the first time is read whole: never on
     * the loop. */
    if (ha_task_offload(scan_run, scan_discard, j) != 0)
        return ha_heap_fail(&vt->base, HA_HEAP_STOPPED, "stats_heap_dumps",
                            NULL);
    c->rows = j->rows;
    c->n = j->n;
    free(j);
    ha_cursor_rewind(&c->rc, 0, c->n);
    return SQLITE_OK;
}

static int
dumps_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    dumps_cursor *c = (dumps_cursor *)cur;
    struct dump_row *r = &c->rows[c->rc.row];

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
        if (r->report != NULL)
            sqlite3_result_text(ctx, r->report, -1, SQLITE_TRANSIENT);
        break;
    default:
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
    dumps_connect,      /* xCreate: a session's own (temp) */
    dumps_connect,      /* xConnect */
    dumps_best_index,   /* xBestIndex */
    ha_heap_disconnect, /* xDisconnect */
    ha_heap_disconnect, /* xDestroy */
    dumps_open,         /* xOpen */
    dumps_close,        /* xClose */
    dumps_filter,       /* xFilter - list the datadir */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    dumps_column,       /* xColumn */
    ha_heap_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
