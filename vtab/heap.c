/* SPDX-License-Identifier: MIT
 *
 * Heap profiles as SQL: the dumps in the datadir, and what holds memory
 * in one of them, read in-process with prof/ (no jeprof, no Perl).
 *
 * Usage:
 *
 *   SELECT file_name, kind, bytes FROM stats_heap_dumps ORDER BY mtime;
 *     One row per heap dump in the datadir, newest last.
 *   SELECT function, flat_bytes, flat_pct, cum_bytes
 *     FROM heap_top('proxysql.4242.0.m0.heap') LIMIT 20;
 *     The functions holding the most memory: `jeprof --text
 *     --show_bytes` on the same dump, as rows.
 *
 * Schema of stats_heap_dumps (one row per file named as jemalloc names
 * dumps, <prefix>.<pid>.<seq>.{m,i,u}<n>.heap or <prefix>.<pid>.<seq>.f.heap):
 *   0 file_name      TEXT     the name in the datadir
 *   1 kind           TEXT     manual (m), interval (i), high-water (u),
 *                             final (f)
 *   2 pid            INTEGER  process that wrote it
 *   3 seq            INTEGER  jemalloc's dump sequence number
 *   4 kind_seq       INTEGER  sequence within the kind (NULL for final)
 *   5 size_bytes     INTEGER  file size
 *   6 mtime          INTEGER  modification time, unix seconds
 *   7 sample_period  INTEGER  bytes between samples (heap_v2/<period>)
 *   8 bytes          INTEGER  in-use bytes, scaled as jeprof scales them
 *   9 objects        INTEGER  in-use objects, scaled the same way
 * Columns 7-9 parse the file, and only when asked for; a file that does
 * not parse reads NULL there.
 *
 * Schema of heap_top(<dump file name>) (a table-valued function):
 *   0 function      TEXT     function, "f (inline)" for an inlined one,
 *                            or the address when it has no name
 *   1 flat_bytes    INTEGER  bytes allocated by the function itself
 *   2 flat_pct      REAL     share of the total, percent
 *   3 cum_bytes     INTEGER  bytes allocated by it or its callees
 *   4 cum_pct       REAL
 *   5 flat_objects  INTEGER
 *   6 cum_objects   INTEGER
 *   7 dump          HIDDEN   the argument: a file name in the datadir
 * Rows come largest flat_bytes first. Only plain file names are
 * accepted (no '/', no ".."): the datadir is no way into the file system.
 * Symbols are read from the binaries on disk that the dump's
 * MAPPED_LIBRARIES names, with libdwfl, and kept per server across
 * queries (vtab_util.h).
 *
 * Both tables only read: INNOCUOUS, readable by stats users.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/util.h"
#include "prof/aggregate.h"
#include "prof/heapv2.h"
#include "prof/maps.h"
#include "prof/symbolize.h"
#include "vtab/vtab_util.h"

/* ------------------------------------------------------------------
 * Dump names and files
 * ------------------------------------------------------------------ */

struct dump_name {
    const char *kind;   /* "manual", "interval", "high-water", "final" */
    long long pid;
    long long seq;
    long long kind_seq; /* -1 for final */
};

/* Digits-only field [s, e) as a number; -1 when it is not one. */
static long long
number(const char *s, const char *e)
{
    long long v = 0;

    if (s >= e || e - s > 18)
        return -1;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* Parses jemalloc's dump naming (prof_dump_filename in jemalloc 5.3),
 * from the right, since the prefix may itself hold dots. */
static bool
parse_dump_name(const char *name, struct dump_name *d)
{
    size_t len = strlen(name);
    const char *end, *k, *seq, *pid;

    if (len < 6 || strcmp(name + len - 5, ".heap") != 0)
        return false;
    end = name + len - 5;
    for (k = end; k > name && k[-1] != '.'; k--)
        ;
    if (k == name || k == end)
        return false;
    for (seq = k - 1; seq > name && seq[-1] != '.'; seq--)
        ;
    for (pid = seq - 1; pid > name && pid[-1] != '.'; pid--)
        ;
    if (pid <= name + 1) /* an empty prefix is no jemalloc name */
        return false;
    d->seq = number(seq, k - 1);
    d->pid = number(pid, seq - 1);
    if (d->seq < 0 || d->pid < 0)
        return false;
    if (end - k == 1 && *k == 'f') {
        d->kind = "final";
        d->kind_seq = -1;
        return true;
    }
    switch (*k) {
    case 'm':
        d->kind = "manual";
        break;
    case 'i':
        d->kind = "interval";
        break;
    case 'u':
        d->kind = "high-water";
        break;
    default:
        return false;
    }
    d->kind_seq = number(k + 1, end);
    return d->kind_seq >= 0;
}

/* A file name the SQL caller may name: in the datadir, nothing else. */
static bool
plain_name(const char *name, char *why, size_t whylen)
{
    if (name == NULL || name[0] == '\0') {
        ha_err_set(why, whylen, "no dump named: give a file name from "
                                "stats_heap_dumps.file_name");
        return false;
    }
    if (strchr(name, '/') != NULL || strcmp(name, "..") == 0 ||
        strcmp(name, ".") == 0) {
        ha_err_set(why, whylen,
                   "'%s' is refused: only the name of a file in the "
                   "datadir is allowed (no '/', no '..'), as "
                   "stats_heap_dumps.file_name lists them",
                   name);
        return false;
    }
    return true;
}

/* Reads datadir/name whole into *buf (malloc'd). Returns 0, or -1 with
 * err naming the file and the reason. */
static int
read_dump(const char *datadir, const char *name, char **buf, size_t *len,
          char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct stat st;
    size_t got = 0;
    int fd;

    *buf = NULL;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", datadir, name) >=
        sizeof(path)) {
        ha_err_set(err, errlen, "%s: path too long", name);
        return -1;
    }
    /* O_NOFOLLOW: a symlink planted in the datadir leads nowhere. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0) {
        ha_err_set(err, errlen, "%s: cannot read it: %s", name,
                   strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > HA_HEAPV2_MAX_LEN) {
        ha_err_set(err, errlen, "%s: not a regular file of at most %u "
                                "bytes", name, HA_HEAPV2_MAX_LEN);
        close(fd);
        return -1;
    }
    *buf = malloc((size_t)st.st_size + 1);
    if (*buf == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", name);
        close(fd);
        return -1;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);

        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    *len = got;
    return 0;
}

/* ------------------------------------------------------------------
 * stats_heap_dumps
 * ------------------------------------------------------------------ */

#define DUMPS_SCHEMA                                                      \
    "CREATE TABLE x(file_name TEXT, kind TEXT, pid INTEGER, seq INTEGER, " \
    "kind_seq INTEGER, size_bytes INTEGER, mtime INTEGER, "               \
    "sample_period INTEGER, bytes INTEGER, objects INTEGER)"

struct dump_row {
    char *name;
    struct dump_name d;
    long long size, mtime;
    bool parsed, ok;        /* columns 7-9 read / readable */
    long long period, bytes, objects;
};

typedef struct heap_vtab heap_vtab;
struct heap_vtab {
    sqlite3_vtab base;         /* Base class - must be first */
    struct ha_vtab_conn *conn; /* ctx: datadir, symbolizer */
};

typedef struct dumps_cursor dumps_cursor;
struct dumps_cursor {
    sqlite3_vtab_cursor base;  /* Base class - must be first */
    struct dump_row *rows;
    size_t n, i;
};

static int
heap_connect(sqlite3 *db, void *aux, const char *schema, sqlite3_vtab **pp,
             char **pzErr)
{
    heap_vtab *vt;
    int rc = sqlite3_declare_vtab(db, schema);

    if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        return rc;
    }
    vt = sqlite3_malloc(sizeof(*vt));
    if (vt == NULL)
        return SQLITE_NOMEM;
    memset(vt, 0, sizeof(*vt));
    vt->conn = aux;
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    *pp = &vt->base;
    return SQLITE_OK;
}

static int
dumps_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
              sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return heap_connect(db, aux, DUMPS_SCHEMA, pp, pzErr);
}

static int
heap_disconnect(sqlite3_vtab *p)
{
    sqlite3_free(p);
    return SQLITE_OK;
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
        if (!parse_dump_name(de->d_name, &r.d) ||
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
    char *buf, err[256];
    size_t len;

    r->parsed = true;
    if (read_dump(vt->conn->ctx->datadir, r->name, &buf, &len, err,
                  sizeof(err)) != 0)
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
    struct dump_row *r = &c->rows[c->i];

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
    default:
        if (!r->parsed)
            dumps_parse((heap_vtab *)cur->pVtab, r);
        if (r->ok)
            sqlite3_result_int64(ctx, col == 7   ? r->period
                                      : col == 8 ? r->bytes
                                                 : r->objects);
        break;
    }
    return SQLITE_OK;
}

static int
heap_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    (void)cur;
    *rowid = 0;
    return SQLITE_OK;
}

static sqlite3_module dumps_module = {
    0,                /* iVersion */
    NULL,             /* xCreate - NULL: eponymous only */
    dumps_connect,    /* xConnect */
    dumps_best_index, /* xBestIndex */
    heap_disconnect,  /* xDisconnect */
    NULL,             /* xDestroy */
    dumps_open,       /* xOpen */
    dumps_close,      /* xClose */
    dumps_filter,     /* xFilter - list the datadir */
    dumps_next,       /* xNext */
    dumps_eof,        /* xEof */
    dumps_column,     /* xColumn */
    heap_rowid,       /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

/* ------------------------------------------------------------------
 * heap_top(<dump>)
 * ------------------------------------------------------------------ */

#define TOP_SCHEMA                                                        \
    "CREATE TABLE x(function TEXT, flat_bytes INTEGER, flat_pct REAL, "   \
    "cum_bytes INTEGER, cum_pct REAL, flat_objects INTEGER, "             \
    "cum_objects INTEGER, dump HIDDEN)"
#define TOP_COL_DUMP 7

typedef struct top_cursor top_cursor;
struct top_cursor {
    sqlite3_vtab_cursor base;  /* Base class - must be first */
    struct ha_agg agg;         /* rows, sorted by flat bytes */
    size_t i;
};

static int
top_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
            sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return heap_connect(db, aux, TOP_SCHEMA, pp, pzErr);
}

/* The dump argument must be given: heap_top('<file>'). */
static int
top_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];

        if (c->iColumn == TOP_COL_DUMP && c->op == SQLITE_INDEX_CONSTRAINT_EQ) {
            if (!c->usable)
                return SQLITE_CONSTRAINT;
            info->aConstraintUsage[i].argvIndex = 1;
            info->aConstraintUsage[i].omit = 1;
            info->idxNum = 1;
            info->estimatedCost = 100;
            return SQLITE_OK;
        }
    }
    return ha_vtab_set_errmsg(p, "heap_top needs a dump: SELECT * FROM "
                                 "heap_top('<file name from "
                                 "stats_heap_dumps>')");
}

static int
top_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    top_cursor *c = sqlite3_malloc(sizeof(*c));

    (void)p;
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *pp = &c->base;
    return SQLITE_OK;
}

static int
top_close(sqlite3_vtab_cursor *cur)
{
    top_cursor *c = (top_cursor *)cur;

    ha_agg_free(&c->agg);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Parses, symbolizes and aggregates one dump into agg. Returns 0, or -1
 * with err naming the file and what went wrong. */
static int
top_load(struct ha_vtab_ctx *ctx, const char *name, struct ha_agg *agg,
         char *err, size_t errlen)
{
    struct ha_heapv2 p = {0};
    struct ha_maps m = {0};
    struct ha_syms syms = {0};
    struct ha_symbolize_ops ops;
    uint64_t *pcs = NULL;
    size_t len, n_pcs = 0;
    char *buf = NULL, why[512];
    int ret = -1;

    if (!plain_name(name, err, errlen) ||
        read_dump(ctx->datadir, name, &buf, &len, err, errlen) != 0)
        return -1;
    if (ha_heapv2_parse(buf, len, &p, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", name, why);
        goto out;
    }
    if (ha_maps_parse(p.maps, p.maps_len, &m, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", name, why);
        goto out;
    }
    if (ctx->symbolizer == NULL &&
        (ctx->symbolizer = ha_symbolizer_new(NULL)) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        goto out;
    }
    ops = ha_symbolizer_ops(ctx->symbolizer);
    if (ha_agg_lookup_pcs(&p, &pcs, &n_pcs) != 0 ||
        ops.symbolize(ops.ctx, &m, pcs, n_pcs, &syms, why, sizeof(why)) !=
            0 ||
        ha_agg_add(agg, &p, &syms, 1, false, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", name, why);
        goto out;
    }
    ha_agg_sort(agg, HA_AGG_BY_FLAT_BYTES);
    ret = 0;
out:
    free(pcs);
    ha_syms_free(&syms);
    ha_maps_free(&m);
    ha_heapv2_free(&p);
    free(buf);
    return ret;
}

static int
top_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
           int argc, sqlite3_value **argv)
{
    top_cursor *c = (top_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    const char *name = argc > 0 ? (const char *)sqlite3_value_text(argv[0])
                                : NULL;
    char err[1024];

    (void)idxNum;
    (void)idxStr;
    ha_agg_free(&c->agg);
    memset(&c->agg, 0, sizeof(c->agg));
    c->i = 0;
    if (top_load(vt->conn->ctx, name, &c->agg, err, sizeof(err)) != 0)
        return ha_vtab_set_errmsg(&vt->base, "heap_top: %s", err);
    return SQLITE_OK;
}

static int
top_next(sqlite3_vtab_cursor *cur)
{
    ((top_cursor *)cur)->i++;
    return SQLITE_OK;
}

static int
top_eof(sqlite3_vtab_cursor *cur)
{
    top_cursor *c = (top_cursor *)cur;

    return c->i >= c->agg.n_rows;
}

static double
pct(double part, double total)
{
    return total != 0 ? 100.0 * part / total : 0;
}

static int
top_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    top_cursor *c = (top_cursor *)cur;
    const struct ha_agg_row *r = &c->agg.rows[c->i];

    switch (col) {
    case 0:
        sqlite3_result_text(ctx, ha_agg_name(&c->agg, r), -1,
                            SQLITE_TRANSIENT);
        break;
    case 1:
        sqlite3_result_int64(ctx, (sqlite3_int64)(r->flat_bytes + 0.5));
        break;
    case 2:
        sqlite3_result_double(ctx, pct(r->flat_bytes, c->agg.total_bytes));
        break;
    case 3:
        sqlite3_result_int64(ctx, (sqlite3_int64)(r->cum_bytes + 0.5));
        break;
    case 4:
        sqlite3_result_double(ctx, pct(r->cum_bytes, c->agg.total_bytes));
        break;
    case 5:
        sqlite3_result_int64(ctx, (sqlite3_int64)(r->flat_objs + 0.5));
        break;
    case 6:
        sqlite3_result_int64(ctx, (sqlite3_int64)(r->cum_objs + 0.5));
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

static sqlite3_module top_module = {
    0,               /* iVersion */
    NULL,            /* xCreate - NULL: eponymous only */
    top_connect,     /* xConnect */
    top_best_index,  /* xBestIndex - the dump argument */
    heap_disconnect, /* xDisconnect */
    NULL,            /* xDestroy */
    top_open,        /* xOpen */
    top_close,       /* xClose */
    top_filter,      /* xFilter - parse, symbolize, aggregate */
    top_next,        /* xNext */
    top_eof,         /* xEof */
    top_column,      /* xColumn */
    heap_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

int
ha_heap_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    int rc;

    conn->refs++;
    rc = sqlite3_create_module_v2(db, "stats_heap_dumps", &dumps_module,
                                  conn, ha_vtab_conn_unref);
    if (rc != SQLITE_OK)
        return rc;
    conn->refs++;
    return sqlite3_create_module_v2(db, "heap_top", &top_module, conn,
                                    ha_vtab_conn_unref);
}
