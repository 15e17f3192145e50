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
 * Schema of heap_profile_diff(<base>, <current>) (`jeprof --base`):
 *   0 stack_id  INTEGER  row number, in stack order
 *   1 stack     TEXT     the stack collapsed for flame graphs: root
 *                        first, frames joined by ';', "[inline]" marks
 *   2 bytes     INTEGER  current minus base (negative: memory released)
 *   3 objects   INTEGER  the same for objects
 *   4 base      HIDDEN   the older dump's file name
 *   5 current   HIDDEN   the newer dump's file name
 * One row per stack present in either dump. jemalloc's steady-state
 * recipe (dump, let it run, dump again, compare) is one SELECT:
 *   SELECT stack, bytes FROM heap_profile_diff('a.heap', 'b.heap')
 *    ORDER BY bytes DESC LIMIT 10;
 *
 * All three only read: INNOCUOUS, readable by stats users.
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
    /* No argument in this plan. SQLite may be trying one of several
     * (an OR in the WHERE clause): price it out rather than fail the
     * query; xFilter says what is missing if it is ever run. */
    (void)p;
    info->idxNum = 0;
    info->estimatedCost = 1e99;
    return SQLITE_OK;
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

/* One dump, parsed and symbolized. */
struct profile {
    struct ha_heapv2 p;
    struct ha_syms syms;
};

static void
profile_free(struct profile *pr)
{
    ha_syms_free(&pr->syms);
    ha_heapv2_free(&pr->p);
}

/* Reads, parses and symbolizes the dump called name in the datadir, with
 * the server's cached symbolizer. Returns 0, or -1 with err naming the
 * file and what went wrong (*pr is then empty). */
static int
load_profile(struct ha_vtab_ctx *ctx, const char *name, struct profile *pr,
             char *err, size_t errlen)
{
    struct ha_maps m = {0};
    struct ha_symbolize_ops ops;
    uint64_t *pcs = NULL;
    size_t len, n_pcs = 0;
    char *buf = NULL, why[512];
    int ret = -1;

    memset(pr, 0, sizeof(*pr));
    if (!plain_name(name, err, errlen) ||
        read_dump(ctx->datadir, name, &buf, &len, err, errlen) != 0)
        return -1;
    if (ha_heapv2_parse(buf, len, &pr->p, why, sizeof(why)) != 0 ||
        ha_maps_parse(pr->p.maps, pr->p.maps_len, &m, why, sizeof(why)) !=
            0) {
        ha_err_set(err, errlen, "%s: %s", name, why);
        goto out;
    }
    if (ctx->symbolizer == NULL &&
        (ctx->symbolizer = ha_symbolizer_new(NULL)) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        goto out;
    }
    ops = ha_symbolizer_ops(ctx->symbolizer);
    if (ha_agg_lookup_pcs(&pr->p, &pcs, &n_pcs) != 0 ||
        ops.symbolize(ops.ctx, &m, pcs, n_pcs, &pr->syms, why,
                      sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", name, why);
        goto out;
    }
    ret = 0;
out:
    if (ret != 0)
        profile_free(pr);
    free(pcs);
    ha_maps_free(&m);
    free(buf);
    return ret;
}

/* Parses, symbolizes and aggregates one dump into agg. Returns 0, or -1
 * with err naming the file and what went wrong. */
static int
top_load(struct ha_vtab_ctx *ctx, const char *name, struct ha_agg *agg,
         char *err, size_t errlen)
{
    struct profile pr;
    char why[512];
    int ret = 0;

    if (load_profile(ctx, name, &pr, err, errlen) != 0)
        return -1;
    if (ha_agg_add(agg, &pr.p, &pr.syms, 1, false, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", name, why);
        ret = -1;
    } else {
        ha_agg_sort(agg, HA_AGG_BY_FLAT_BYTES);
    }
    profile_free(&pr);
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

    (void)idxStr;
    ha_agg_free(&c->agg);
    memset(&c->agg, 0, sizeof(c->agg));
    c->i = 0;
    if (idxNum != 1)
        return ha_vtab_set_errmsg(&vt->base,
                                  "heap_top needs a dump: SELECT * FROM "
                                  "heap_top('<file name from "
                                  "stats_heap_dumps>')");
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

/* ------------------------------------------------------------------
 * heap_profile_diff(<base>, <current>)
 * ------------------------------------------------------------------ */

#define DIFF_SCHEMA                                                       \
    "CREATE TABLE x(stack_id INTEGER, stack TEXT, bytes INTEGER, "        \
    "objects INTEGER, base HIDDEN, current HIDDEN)"
#define DIFF_COL_BASE 4
#define DIFF_COL_CURRENT 5

/* One collapsed stack and its share of a diff. */
struct diff_row {
    char *stack;
    double bytes;
    double objs;
};

typedef struct diff_cursor diff_cursor;
struct diff_cursor {
    sqlite3_vtab_cursor base;  /* Base class - must be first */
    struct diff_row *rows;
    size_t n, cap, i;
};

static int
diff_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return heap_connect(db, aux, DIFF_SCHEMA, pp, pzErr);
}

/* Both arguments are required: heap_profile_diff('<base>', '<current>'). */
static int
diff_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    int have = 0, at[2] = {-1, -1};

    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        int col = c->iColumn;

        if ((col != DIFF_COL_BASE && col != DIFF_COL_CURRENT) ||
            c->op != SQLITE_INDEX_CONSTRAINT_EQ)
            continue;
        if (!c->usable)
            return SQLITE_CONSTRAINT;
        at[col == DIFF_COL_BASE ? 0 : 1] = i;
        have |= col == DIFF_COL_BASE ? 1 : 2;
    }
    /* argv positions must run 1..n without gaps: both, or none. */
    if (have == 3) {
        for (int k = 0; k < 2; k++) {
            info->aConstraintUsage[at[k]].argvIndex = k + 1;
            info->aConstraintUsage[at[k]].omit = 1;
        }
    }
    (void)p;
    /* A plan without both arguments is priced out, not refused (see
     * top_best_index); xFilter names what is missing. */
    info->idxNum = have;
    info->estimatedCost = have == 3 ? 100 : 1e99;
    return SQLITE_OK;
}

static int
diff_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    diff_cursor *c = sqlite3_malloc(sizeof(*c));

    (void)p;
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *pp = &c->base;
    return SQLITE_OK;
}

static void
diff_clear(diff_cursor *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->rows[i].stack);
    free(c->rows);
    c->rows = NULL;
    c->n = c->cap = c->i = 0;
}

static int
diff_close(sqlite3_vtab_cursor *cur)
{
    diff_clear((diff_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Adds the lines of a collapsed-stacks text ("a;b;c <n>\n") to c, each
 * count times sign into bytes (objects false) or objs. */
static int
diff_add_lines(diff_cursor *c, const struct ha_buf *text, bool objects,
               double sign)
{
    const char *s = (const char *)text->data, *end = s + text->len;

    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *sp;
        struct diff_row *r;

        if (nl == NULL)
            nl = end;
        for (sp = nl; sp > s && sp[-1] != ' '; sp--)
            ;
        if (sp > s) {
            if (c->n == c->cap) {
                size_t ncap = c->cap ? c->cap * 2 : 256;
                struct diff_row *p = realloc(c->rows, ncap * sizeof(*p));

                if (p == NULL)
                    return -1;
                c->rows = p;
                c->cap = ncap;
            }
            r = &c->rows[c->n];
            r->stack = strndup(s, (size_t)(sp - 1 - s));
            if (r->stack == NULL)
                return -1;
            r->bytes = r->objs = 0;
            *(objects ? &r->objs : &r->bytes) = sign * strtod(sp, NULL);
            c->n++;
        }
        s = nl + 1;
    }
    return 0;
}

static int
cmp_stack(const void *x, const void *y)
{
    return strcmp(((const struct diff_row *)x)->stack,
                  ((const struct diff_row *)y)->stack);
}

/* Merges rows of the same stack (sorted), summing their figures. */
static void
diff_merge(diff_cursor *c)
{
    size_t out = 0;

    if (c->n > 1)
        qsort(c->rows, c->n, sizeof(*c->rows), cmp_stack);
    for (size_t i = 0; i < c->n; i++) {
        if (out > 0 && strcmp(c->rows[out - 1].stack, c->rows[i].stack) == 0) {
            c->rows[out - 1].bytes += c->rows[i].bytes;
            c->rows[out - 1].objs += c->rows[i].objs;
            free(c->rows[i].stack);
            continue;
        }
        c->rows[out++] = c->rows[i];
    }
    c->n = out;
}

/* Loads one side of the diff into c with sign (+1 current, -1 base). */
static int
diff_side(diff_cursor *c, struct ha_vtab_ctx *ctx, const char *name,
          double sign, char *err, size_t errlen)
{
    struct ha_buf bytes = HA_BUF_INIT, objs = HA_BUF_INIT;
    struct profile pr;
    int ret = -1;

    if (load_profile(ctx, name, &pr, err, errlen) != 0)
        return -1;
    if (ha_agg_collapsed(&pr.p, &pr.syms, false, &bytes) != 0 ||
        ha_agg_collapsed(&pr.p, &pr.syms, true, &objs) != 0 ||
        ha_buf_failed(&bytes) || ha_buf_failed(&objs) ||
        diff_add_lines(c, &bytes, false, sign) != 0 ||
        diff_add_lines(c, &objs, true, sign) != 0)
        ha_err_set(err, errlen, "%s: out of memory", name);
    else
        ret = 0;
    ha_buf_free(&bytes);
    ha_buf_free(&objs);
    profile_free(&pr);
    return ret;
}

static int
diff_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    diff_cursor *c = (diff_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    const char *base, *current;
    char err[1024];

    (void)idxStr;
    diff_clear(c);
    if (idxNum != 3 || argc < 2)
        return ha_vtab_set_errmsg(&vt->base,
                                  "heap_profile_diff needs two dumps: "
                                  "SELECT * FROM heap_profile_diff("
                                  "'<base>', '<current>')");
    base = (const char *)sqlite3_value_text(argv[0]);
    current = (const char *)sqlite3_value_text(argv[1]);
    if (diff_side(c, vt->conn->ctx, base, -1, err, sizeof(err)) != 0 ||
        diff_side(c, vt->conn->ctx, current, 1, err, sizeof(err)) != 0) {
        diff_clear(c);
        return ha_vtab_set_errmsg(&vt->base, "heap_profile_diff: %s", err);
    }
    diff_merge(c);
    return SQLITE_OK;
}

static int
diff_next(sqlite3_vtab_cursor *cur)
{
    ((diff_cursor *)cur)->i++;
    return SQLITE_OK;
}

static int
diff_eof(sqlite3_vtab_cursor *cur)
{
    diff_cursor *c = (diff_cursor *)cur;

    return c->i >= c->n;
}

static int
diff_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    diff_cursor *c = (diff_cursor *)cur;
    const struct diff_row *r = &c->rows[c->i];

    switch (col) {
    case 0:
        sqlite3_result_int64(ctx, (sqlite3_int64)c->i + 1);
        break;
    case 1:
        sqlite3_result_text(ctx, r->stack, -1, SQLITE_TRANSIENT);
        break;
    case 2:
        sqlite3_result_int64(ctx, (sqlite3_int64)r->bytes);
        break;
    case 3:
        sqlite3_result_int64(ctx, (sqlite3_int64)r->objs);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

static sqlite3_module diff_module = {
    0,               /* iVersion */
    NULL,            /* xCreate - NULL: eponymous only */
    diff_connect,    /* xConnect */
    diff_best_index, /* xBestIndex - both dump arguments */
    heap_disconnect, /* xDisconnect */
    NULL,            /* xDestroy */
    diff_open,       /* xOpen */
    diff_close,      /* xClose */
    diff_filter,     /* xFilter - both dumps, collapsed, merged */
    diff_next,       /* xNext */
    diff_eof,        /* xEof */
    diff_column,     /* xColumn */
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
    rc = sqlite3_create_module_v2(db, "heap_top", &top_module, conn,
                                  ha_vtab_conn_unref);
    if (rc != SQLITE_OK)
        return rc;
    conn->refs++;
    return sqlite3_create_module_v2(db, "heap_profile_diff", &diff_module,
                                    conn, ha_vtab_conn_unref);
}
