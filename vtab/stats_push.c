/* SPDX-License-Identifier: MIT
 *
 * stats_push: where this process pushes its dumps (admin_variables.
 * push_targets, engine/push.h), one row per target, and how that goes.
 *
 * Usage:
 *
 *   SELECT type, url, queued, sent, failed, dropped, last_error
 *     FROM stats_push;
 *     Each target: what waits in the outbox, what its receiver took,
 *     the attempts that failed and the last reason.
 *   SELECT url FROM stats_push WHERE queued > 0 AND next_attempt > 0;
 *     Receivers being waited for.
 *
 * Schema:
 *    0 target        TEXT     its name in the outbox ("t" + 8 hex)
 *    1 type          TEXT     pyroscope, parca
 *    2 url           TEXT     the receiver's base URL
 *    3 kinds         TEXT     the kinds of dump it takes
 *    4 queued        INTEGER  profiles in the outbox for it now
 *    5 queued_bytes  INTEGER  their bytes
 *    6 sent          INTEGER  profiles its receiver took, since the start
 *    7 sent_bytes    INTEGER  their bytes (the profile, not the wire)
 *    8 failed        INTEGER  attempts that failed, since the start
 *    9 dropped       INTEGER  profiles given up: past
 *                             push_outbox_max_bytes (oldest first), or
 *                             refused for good (a 4xx)
 *   10 last_error    TEXT     the last failure's reason; NULL none
 *   11 last_attempt  INTEGER  Unix s; NULL none
 *   12 last_sent     INTEGER  Unix s; NULL none
 *   13 next_attempt  INTEGER  Unix s of the next retry; NULL none due
 *
 * Figures are the loop's, as of the push thread's last report (after
 * each queueing and each delivery). No constraints used.
 * SQLITE_VTAB_INNOCUOUS: reading it changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "heap/pushrow.h"
#include "vtab/cursor.h"
#include "vtab/vtab_util.h"

#define PUSH_SCHEMA                                                        \
    "CREATE TABLE x(target TEXT, type TEXT, url TEXT, kinds TEXT, "        \
    "queued INTEGER, queued_bytes INTEGER, sent INTEGER, sent_bytes "      \
    "INTEGER, failed INTEGER, dropped INTEGER, last_error TEXT, "          \
    "last_attempt INTEGER, last_sent INTEGER, next_attempt INTEGER)"
#define PUSH_COL_TARGET 0
#define PUSH_COL_TYPE 1
#define PUSH_COL_URL 2
#define PUSH_COL_KINDS 3
#define PUSH_COL_QUEUED 4
#define PUSH_COL_QUEUED_BYTES 5
#define PUSH_COL_SENT 6
#define PUSH_COL_SENT_BYTES 7
#define PUSH_COL_FAILED 8
#define PUSH_COL_DROPPED 9
#define PUSH_COL_LAST_ERROR 10
#define PUSH_COL_LAST_ATTEMPT 11
#define PUSH_COL_LAST_SENT 12
#define PUSH_COL_NEXT_ATTEMPT 13

#define PUSH_ROWS_MAX 16

typedef struct push_vtab push_vtab;
struct push_vtab {
    sqlite3_vtab base;             /* Base class - must be first */
    struct ha_vtab_conn *conn;
};

typedef struct push_cursor push_cursor;
struct push_cursor {
    struct ha_cursor rc;           /* rows [row, end); must be first */
    struct ha_push_row rows[PUSH_ROWS_MAX];
};

static int
push_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **ppVtab, char **pzErr)
{
    int rc = ha_vtab_new(db, PUSH_SCHEMA, SQLITE_VTAB_INNOCUOUS,
                         sizeof(push_vtab), ppVtab, pzErr);

    (void)argc;
    (void)argv;
    if (rc == SQLITE_OK)
        ((push_vtab *)*ppVtab)->conn = aux;
    return rc;
}

static int
push_disconnect(sqlite3_vtab *vtab)
{
    sqlite3_free(vtab);
    return SQLITE_OK;
}

static int
push_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    info->idxNum = 0;
    info->estimatedCost = 10;
    info->estimatedRows = 2;
    return SQLITE_OK;
}

static int
push_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor)
{
    (void)vtab;
    return ha_cursor_open(sizeof(push_cursor), ppCursor);
}

static int
push_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    push_cursor *c = (push_cursor *)cur;
    const struct ha_vtab_ctx *ctx = ((push_vtab *)cur->pVtab)->conn->ctx;
    size_t n = 0;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    if (ctx->push_rows != NULL)
        n = ctx->push_rows(ctx->push_arg, c->rows, PUSH_ROWS_MAX);
    ha_cursor_rewind(&c->rc, 0, n);
    return SQLITE_OK;
}

static void
result_time(sqlite3_context *ctx, long long v)
{
    if (v > 0)
        sqlite3_result_int64(ctx, v);
}

static int
push_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    const struct ha_push_row *r =
        &((push_cursor *)cur)->rows[((push_cursor *)cur)->rc.row];

    switch (col) {
    case PUSH_COL_TARGET:
        sqlite3_result_text(ctx, r->target, -1, SQLITE_TRANSIENT);
        break;
    case PUSH_COL_TYPE:
        sqlite3_result_text(ctx, r->type, -1, SQLITE_TRANSIENT);
        break;
    case PUSH_COL_URL:
        sqlite3_result_text(ctx, r->url, -1, SQLITE_TRANSIENT);
        break;
    case PUSH_COL_KINDS:
        sqlite3_result_text(ctx, r->kinds, -1, SQLITE_TRANSIENT);
        break;
    case PUSH_COL_QUEUED:
        sqlite3_result_int64(ctx, r->queued);
        break;
    case PUSH_COL_QUEUED_BYTES:
        sqlite3_result_int64(ctx, r->queued_bytes);
        break;
    case PUSH_COL_SENT:
        sqlite3_result_int64(ctx, r->sent);
        break;
    case PUSH_COL_SENT_BYTES:
        sqlite3_result_int64(ctx, r->sent_bytes);
        break;
    case PUSH_COL_FAILED:
        sqlite3_result_int64(ctx, r->failed);
        break;
    case PUSH_COL_DROPPED:
        sqlite3_result_int64(ctx, r->dropped);
        break;
    case PUSH_COL_LAST_ERROR:
        if (r->last_error[0] != '\0')
            sqlite3_result_text(ctx, r->last_error, -1, SQLITE_TRANSIENT);
        break;
    case PUSH_COL_LAST_ATTEMPT:
        result_time(ctx, r->last_attempt);
        break;
    case PUSH_COL_LAST_SENT:
        result_time(ctx, r->last_sent);
        break;
    case PUSH_COL_NEXT_ATTEMPT:
        result_time(ctx, r->next_attempt);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

static const sqlite3_module push_module = {
    0,                /* iVersion */
    push_connect,     /* xCreate - a session's own (temp) */
    push_connect,     /* xConnect */
    push_best_index,  /* xBestIndex - always every target */
    push_disconnect,  /* xDisconnect */
    push_disconnect,  /* xDestroy */
    push_open,        /* xOpen */
    ha_cursor_close,  /* xClose */
    push_filter,      /* xFilter */
    ha_cursor_next,   /* xNext */
    ha_cursor_eof,    /* xEof */
    push_column,      /* xColumn */
    ha_cursor_rowid,  /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

int
ha_stats_push_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    conn->refs++;
    return sqlite3_create_module_v2(db, "stats_push", &push_module, conn,
                                    ha_vtab_conn_unref);
}
