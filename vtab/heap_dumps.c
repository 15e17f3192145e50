/* SPDX-License-Identifier: MIT
 *
 * stats_heap_dumps: one row per heap dump in the datadir, named as
 * jemalloc names dumps (<prefix>.<pid>.<seq>.{m,i,u}<n>.heap or
 * <prefix>.<pid>.<seq>.f.heap; heap/profiles.h), and per lifetime log
 * (<prefix>.<pid>.<seq>.json, jemalloc's prof_log file, written by
 * jemalloc-log_now and read by heap_lifetimes).
 *
 *   0 file_name          TEXT     the name in the datadir: what heap_top()
 *                                 and the other functions take
 *   1 kind               TEXT     manual (m), interval (i), high-water (u),
 *                                 final (f), log (a lifetime log), or
 *                                 limit: taken by the limit watch
 *                                 (engine/limitwatch.h) as memory neared
 *                                 the cgroup's limit (its name is a
 *                                 manual dump's)
 *   2 pid                INTEGER  process that wrote it
 *   3 seq                INTEGER  jemalloc's dump sequence number (a
 *                                 log's: the logs' own sequence)
 *   4 kind_seq           INTEGER  sequence within the kind (NULL: final)
 *   5 size_bytes         INTEGER  file size
 *   6 mtime              INTEGER  modification time, unix seconds
 *   7 sample_period      INTEGER  bytes between samples (heap_v2/<period>)
 *   8 bytes              INTEGER  in-use bytes, scaled as jeprof does; a
 *                                 log's: the bytes freed in its window
 *   9 objects            INTEGER  in-use objects, scaled the same way
 *  10 build_id_mismatch  TEXT     binaries replaced on disk since the dump
 *                                 ("path (dump build-id X, on disk Y)",
 *                                 "; "-joined); '' when all match, NULL
 *                                 when no build-ids were recorded
 *  11 alloc_bytes        INTEGER  bytes allocated since profiling began,
 *                                 freed or not (the cumulative counters
 *                                 of a process started with prof_accum),
 *                                 scaled; NULL when the dump has none:
 *                                 then every alloc_* column of heap_top,
 *                                 heap_stacks, heap_profile_diff and
 *                                 heap_growth is NULL for it too
 *  12 alloc_objects      INTEGER
 *  13 resident_bytes     INTEGER  the process's resident memory (VmRSS)
 *                                 when the dump was taken, recorded
 *                                 beside it (<dump>.mem); NULL when not
 *                                 recorded (a dump from before, another
 *                                 tool's)
 *  14 cgroup_usage_bytes INTEGER  the memory cgroup's usage then (the
 *                                 limiting group's); NULL: no cgroup
 *  15 cgroup_limit_bytes INTEGER  its memory limit then; NULL: none
 *  16 peak               INTEGER  1 for the dump of highest resident
 *                                 memory of its process (pid): retention
 *                                 keeps it out of rotation; else 0
 *  17 reason             TEXT     why it was taken ("working set 57.6 MiB
 *                                 reached 0.90 of the memory limit
 *                                 64.0 MiB", "dump_interval_s = 60",
 *                                 "jemalloc-dump_now"); NULL: not
 *                                 recorded
 *  18 cgroup_working_set_bytes INTEGER  the cgroup's working set then
 *                                 (usage less inactive file cache); a
 *                                 limit dump's, with its usage: the look
 *                                 the watch decided on; NULL: no cgroup
 *  19 allocated_bytes    INTEGER  jemalloc's stats.allocated when it was
 *                                 taken (the host's; heapadmin's own
 *                                 arena apart): what `bytes` estimates
 *                                 from the samples; NULL: not recorded
 * Columns 7-12 but 10 read the file (and its .buildid), only when the
 * statement reads them (xBestIndex's colUsed); a file that does not
 * parse reads NULL there. The listing is heap/dumps.h's: on the worker
 * thread, the totals of a dump parsed once per file identity.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "heap/dumps.h"
#include "heap/profiles.h"
#include "vtab/cursor.h"
#include "vtab/heap_vtab.h"

#define DUMPS_SCHEMA                                                      \
    "CREATE TABLE x(file_name TEXT, kind TEXT, pid INTEGER, seq INTEGER, " \
    "kind_seq INTEGER, size_bytes INTEGER, mtime INTEGER, "               \
    "sample_period INTEGER, bytes INTEGER, objects INTEGER, "             \
    "build_id_mismatch TEXT, alloc_bytes INTEGER, alloc_objects INTEGER, " \
    "resident_bytes INTEGER, cgroup_usage_bytes INTEGER, "                \
    "cgroup_limit_bytes INTEGER, peak INTEGER, reason TEXT, "             \
    "cgroup_working_set_bytes INTEGER, allocated_bytes INTEGER)"

typedef struct dumps_cursor dumps_cursor;
struct dumps_cursor {
    struct ha_cursor rc;       /* rows [row, end) of rows; must be first */
    struct ha_dump_list l;     /* the rows */
};

/* idxNum bits: which costly columns the statement reads (colUsed), so
 * `SELECT file_name` or `count(*)` parses no dump. */
#define DUMPS_IDX_TOTALS HA_DUMPS_TOTALS /* sample_period, bytes, objects */
#define DUMPS_IDX_REPORT HA_DUMPS_REPORT /* build_id_mismatch */

static int
dumps_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
              sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, DUMPS_SCHEMA, pp, pzErr);
}

static int
dumps_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    info->idxNum = HA_DUMPS_LOGS;
    if (info->colUsed &
        ((1u << 7) | (1u << 8) | (1u << 9) | (1u << 11) | (1u << 12)))
        info->idxNum |= DUMPS_IDX_TOTALS;
    if (info->colUsed & (1u << 10))
        info->idxNum |= DUMPS_IDX_REPORT;
    info->estimatedCost =
        (info->idxNum & ~HA_DUMPS_LOGS) != 0 ? 100000 : 1000;
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
dumps_clear(dumps_cursor *c)
{
    ha_dump_list_free(&c->l);
    ha_cursor_rewind(&c->rc, 0, 0);
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
    char err[256];
    int rc;

    (void)idxStr;
    (void)argc;
    (void)argv;
    dumps_clear(c);
    if ((rc = ha_dumps_list(vt->conn->ctx->heap, (unsigned)idxNum, &c->l,
                            err, sizeof(err))) != 0)
        return ha_heap_vtab_fail(&vt->base, rc, "stats_heap_dumps", err);
    ha_cursor_rewind(&c->rc, 0, c->l.n);
    return SQLITE_OK;
}

static int
dumps_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    dumps_cursor *c = (dumps_cursor *)cur;
    const struct ha_dump_entry *r = &c->l.e[c->rc.row];

    switch (col) {
    case 0:
        sqlite3_result_text(ctx, r->name, -1, SQLITE_TRANSIENT);
        break;
    case 1:
        sqlite3_result_text(ctx, r->kind != NULL ? r->kind : r->d.kind, -1,
                            SQLITE_STATIC);
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
        sqlite3_result_int64(ctx, r->mtime_ns / 1000000000);
        break;
    case 10:
        if (r->report != NULL)
            sqlite3_result_text(ctx, r->report, -1, SQLITE_TRANSIENT);
        break;
    case 13:
        if (r->resident >= 0)
            sqlite3_result_int64(ctx, r->resident);
        break;
    case 14:
        if (r->cgroup_usage >= 0)
            sqlite3_result_int64(ctx, r->cgroup_usage);
        break;
    case 15:
        if (r->cgroup_limit >= 0)
            sqlite3_result_int64(ctx, r->cgroup_limit);
        break;
    case 16:
        sqlite3_result_int(ctx, r->peak ? 1 : 0);
        break;
    case 17:
        if (r->reason != NULL)
            sqlite3_result_text(ctx, r->reason, -1, SQLITE_TRANSIENT);
        break;
    case 18:
        if (r->cgroup_working_set >= 0)
            sqlite3_result_int64(ctx, r->cgroup_working_set);
        break;
    case 19:
        if (r->allocated >= 0)
            sqlite3_result_int64(ctx, r->allocated);
        break;
    case 11:
    case 12:
        if (r->has_totals && r->has_alloc)
            sqlite3_result_int64(ctx, col == 11 ? r->alloc_bytes
                                                : r->alloc_objects);
        break;
    default:
        if (r->has_totals)
            sqlite3_result_int64(ctx, col == 7   ? r->period
                                      : col == 8 ? r->bytes
                                                 : r->objects);
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_dumps_module = {
    0,                  /* iVersion */
    dumps_connect,      /* xCreate: a session's own (temp) */
    dumps_connect,      /* xConnect */
    dumps_best_index,   /* xBestIndex */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    dumps_open,         /* xOpen */
    dumps_close,        /* xClose */
    dumps_filter,       /* xFilter - list the datadir */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    dumps_column,       /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
