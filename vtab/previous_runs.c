/* SPDX-License-Identifier: MIT
 *
 * stats_previous_runs: the datadir's earlier runs and how each ended,
 * where the kernel says (heap/runs.h): after a restart (systemd
 * Restart=, a container restarted, pid 1 again), one SELECT says
 * whether the last run was OOM-killed, and names the dump to read what
 * was in its heap.
 *
 * Usage:
 *
 *   SELECT pid, how, detail, peak_dump FROM stats_previous_runs LIMIT 1;
 *     The last run before this one: oom-killed, with the evidence.
 *   SELECT * FROM heap_top((SELECT peak_dump FROM stats_previous_runs
 *                           LIMIT 1)) LIMIT 5;
 *     What held its memory at its peak.
 *
 * Schema (newest start first; every run of the datadir but this one):
 *    0 pid                 INTEGER
 *    1 program             TEXT
 *    2 started             INTEGER  unix seconds
 *    3 ended               INTEGER  unix seconds, where known (a clean
 *                                   stop or exit); NULL otherwise
 *    4 last_seen           INTEGER  its last sign of life (a history
 *                                   sample, a look of its limit watch
 *                                   written down, or a dump), unix
 *                                   seconds
 *    5 how                 TEXT     running (another process of the
 *                                   datadir), stopped, exited,
 *                                   oom-killed (the oom_kill count of its
 *                                   memory cgroup rose after its last
 *                                   look), killed (no clean stop, the
 *                                   count did not move), ended (its
 *                                   cgroup is gone: the kernel cannot
 *                                   say)
 *    6 detail              TEXT     the evidence
 *    7 peak_resident_bytes INTEGER  the most resident memory seen (its
 *                                   samples and its dumps)
 *    8 cgroup              TEXT     "v1 /svc", NULL: none
 *    9 memory_limit_bytes  INTEGER  NULL: none
 *   10 last_usage_bytes    INTEGER  its cgroup's usage at its last look
 *                                   written down: near a limit, within
 *                                   1 % of the limit of its watch's last
 *                                   look (engine.c RUN_STEP)
 *   11 dumps               INTEGER  its dumps
 *   12 peak_dump           TEXT     its dump of highest resident memory,
 *                                   as heap_top takes it (under
 *                                   earlier-runs/ when the pid-1 rule
 *                                   moved it)
 *   13 limit_dumps         TEXT     its limit dumps, ", "-joined
 *   14 last_dump           TEXT
 *   15 last_working_set_bytes INTEGER  the working set at that look
 *                                   (usage less inactive file cache)
 *   16 limit_dump_usage_bytes INTEGER  the usage at the look its last
 *                                   limit dump was decided on; NULL:
 *                                   none recorded
 *
 * Settling a run that ended since the last look writes the verdict into
 * its record, so it reads the same later. Listed on the worker thread.
 * SQLITE_VTAB_INNOCUOUS.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "heap/runs.h"
#include "vtab/cursor.h"
#include "vtab/heap_vtab.h"

#define RUNS_SCHEMA                                                       \
    "CREATE TABLE x(pid INTEGER, program TEXT, started INTEGER, ended "   \
    "INTEGER, last_seen INTEGER, how TEXT, detail TEXT, "                 \
    "peak_resident_bytes INTEGER, cgroup TEXT, memory_limit_bytes "       \
    "INTEGER, last_usage_bytes INTEGER, dumps INTEGER, peak_dump TEXT, "  \
    "limit_dumps TEXT, last_dump TEXT, last_working_set_bytes INTEGER, "  \
    "limit_dump_usage_bytes INTEGER)"

typedef struct runs_cursor runs_cursor;
struct runs_cursor {
    struct ha_cursor rc;       /* rows [row, end) of l; must be first */
    struct ha_run_list l;      /* every run; this one skipped */
};

static int
runs_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, RUNS_SCHEMA, pp, pzErr);
}

static int
runs_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    (void)p;
    info->estimatedCost = 1000;
    info->estimatedRows = 10;
    return SQLITE_OK;
}

/* This process's own run is not a previous one. */
static bool
runs_skip(const struct ha_cursor *rc)
{
    const runs_cursor *c = (const runs_cursor *)rc;

    return c->l.e[rc->row].self;
}

static int
runs_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    int rc;

    (void)p;
    if ((rc = ha_cursor_open(sizeof(runs_cursor), pp)) == SQLITE_OK)
        ((runs_cursor *)*pp)->rc.skip = runs_skip;
    return rc;
}

static void
runs_clear(runs_cursor *c)
{
    ha_run_list_free(&c->l);
    ha_cursor_rewind(&c->rc, 0, 0);
}

static int
runs_close(sqlite3_vtab_cursor *cur)
{
    runs_clear((runs_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

static int
runs_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    runs_cursor *c = (runs_cursor *)cur;
    heap_vtab *vt = (heap_vtab *)cur->pVtab;
    char err[256];
    int rc;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    runs_clear(c);
    if ((rc = ha_runs_list(vt->conn->ctx->heap, &c->l, err, sizeof(err))) !=
        0)
        return ha_heap_vtab_fail(&vt->base, rc, "stats_previous_runs", err);
    ha_cursor_rewind(&c->rc, 0, c->l.n);
    return SQLITE_OK;
}

static void
text_or_null(sqlite3_context *ctx, const char *s)
{
    if (s != NULL && *s != '\0')
        sqlite3_result_text(ctx, s, -1, SQLITE_TRANSIENT);
}

static int
runs_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    runs_cursor *c = (runs_cursor *)cur;
    const struct ha_run_entry *e = &c->l.e[c->rc.row];
    const struct ha_runrec *r = &e->r;
    char cg[300];

    switch (col) {
    case 0:
        sqlite3_result_int64(ctx, r->pid);
        break;
    case 1:
        text_or_null(ctx, r->program);
        break;
    case 2:
        sqlite3_result_int64(ctx, r->started_ns / 1000000000LL);
        break;
    case 3:
        if (r->ended_ns > 0)
            sqlite3_result_int64(ctx, r->ended_ns / 1000000000LL);
        break;
    case 4:
        if (r->last_seen_ns > 0)
            sqlite3_result_int64(ctx, r->last_seen_ns / 1000000000LL);
        break;
    case 5:
        text_or_null(ctx, e->alive ? "running" : r->how);
        break;
    case 6:
        if (!e->alive)
            text_or_null(ctx, r->detail);
        break;
    case 7:
        if (e->peak_resident >= 0)
            sqlite3_result_int64(ctx, e->peak_resident);
        break;
    case 8:
        if (r->cgroup_version != 0) {
            snprintf(cg, sizeof(cg), "v%d %s", r->cgroup_version,
                     r->cgroup_path[0] ? r->cgroup_path : "/");
            sqlite3_result_text(ctx, cg, -1, SQLITE_TRANSIENT);
        }
        break;
    case 9:
        if (r->limit >= 0)
            sqlite3_result_int64(ctx, r->limit);
        break;
    case 10:
        if (r->usage >= 0)
            sqlite3_result_int64(ctx, r->usage);
        break;
    case 11:
        sqlite3_result_int64(ctx, e->n_dumps);
        break;
    case 12:
        text_or_null(ctx, e->peak_dump);
        break;
    case 13:
        text_or_null(ctx, e->limit_dumps);
        break;
    case 14:
        text_or_null(ctx, e->last_dump);
        break;
    case 15:
        if (r->working_set >= 0)
            sqlite3_result_int64(ctx, r->working_set);
        break;
    case 16:
        if (r->n_limit_dumps > 0 &&
            r->limit_dumps[r->n_limit_dumps - 1].usage >= 0)
            sqlite3_result_int64(ctx,
                                 r->limit_dumps[r->n_limit_dumps - 1].usage);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_previous_runs_module = {
    0,                  /* iVersion */
    runs_connect,       /* xCreate: a session's own (temp) */
    runs_connect,       /* xConnect */
    runs_best_index,    /* xBestIndex - every run */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    runs_open,          /* xOpen */
    runs_close,         /* xClose */
    runs_filter,        /* xFilter - list and settle, on the worker */
    ha_cursor_next,     /* xNext */
    ha_cursor_eof,      /* xEof */
    runs_column,        /* xColumn */
    ha_heap_vtab_rowid, /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
