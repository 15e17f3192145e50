/* SPDX-License-Identifier: MIT
 *
 * stats_admin_sessions, session_variables and mysql_variables: read-only,
 * eponymous virtual tables over the admin sessions (see sessions.h).
 *
 * Usage:
 *
 *   SELECT * FROM stats_admin_sessions;
 *     One row per logged-in session of this server (all users), like
 *     MySQL's information_schema.PROCESSLIST.
 *   SELECT * FROM stats.stats_admin_sessions WHERE command <> 'Sleep';
 *     The same, qualified as in ProxySQL (the dialect drops "stats.").
 *   SELECT * FROM session_variables WHERE variable_name LIKE 'char%';
 *     This session's MySQL variables: SET values over the defaults.
 *   SELECT * FROM mysql_variables;
 *     The server's defaults (SHOW GLOBAL VARIABLES).
 *
 * Schema of stats_admin_sessions:
 *   0 id       INTEGER  connection id (CONNECTION_ID(), KILL's argument)
 *   1 user     TEXT     authenticated user
 *   2 host     TEXT     client "address:port" (or address, "localhost")
 *   3 db       TEXT     current schema, NULL when none
 *   4 command  TEXT     "Sleep", "Query", "Execute", ...
 *   5 time     INTEGER  seconds in this command
 *   6 state    TEXT     "executing" while a statement runs (the reader's,
 *                       and others' between their slices), "Sending to
 *                       client" while one waits for its client to take
 *                       rows, else ""
 *   7 info     TEXT     statement running, NULL when idle
 *
 * Schema of session_variables and mysql_variables:
 *   0 variable_name  TEXT  lower case
 *   1 variable_value       integer, text or NULL as the variable holds
 *
 * No HIDDEN columns, no constraints used: every scan copies the rows
 * (a few dozen) at xFilter, so a scan sees one consistent snapshot.
 *
 * SQLITE_VTAB_INNOCUOUS: reading them has no side effect.
 */
#include "vtab/sessions.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vtab/cursor.h"
#include "vtab/vtab_util.h"

enum sess_kind {
    SESS_PROCESSLIST,   /* stats_admin_sessions */
    SESS_VARIABLES,     /* session_variables */
    SESS_GLOBALS        /* mysql_variables */
};

typedef struct sess_vtab sess_vtab;
struct sess_vtab {
    sqlite3_vtab base;
    const struct ha_sessions_source *src; /* the admin layer's sessions */
    enum sess_kind kind;
};

/* A copied row: PROCESSLIST uses id, time and text[0..5] (user, host,
 * db, command, state, info); the VARIABLES tables use type, id as the
 * integer value and text[0..1] (name, text value). */
struct sess_row {
    sqlite3_int64 id, time;
    enum ha_sessions_type type;
    char *text[6];
};

typedef struct sess_cursor sess_cursor;
struct sess_cursor {
    struct ha_cursor rc;         /* rows [row, end) of rows; must be
                                  * first */
    struct sess_row *rows;       /* sqlite3_malloc'd */
    size_t n, cap;
    bool oom;                    /* a copy failed */
};

#define SESS_COL_ID 0
#define SESS_COL_USER 1
#define SESS_COL_HOST 2
#define SESS_COL_DB 3
#define SESS_COL_COMMAND 4
#define SESS_COL_TIME 5
#define SESS_COL_STATE 6
#define SESS_COL_INFO 7

static int
sess_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
             sqlite3_vtab **out, char **pzErr)
{
    sess_vtab *v;
    enum sess_kind kind;
    int rc;

    (void)argc;
    if (strcmp(argv[0], "stats_admin_sessions") == 0)
        kind = SESS_PROCESSLIST;
    else if (strcmp(argv[0], "session_variables") == 0)
        kind = SESS_VARIABLES;
    else
        kind = SESS_GLOBALS;
    rc = ha_vtab_new(
        db,
        kind == SESS_PROCESSLIST
            ? "CREATE TABLE x(id INTEGER, user TEXT, host TEXT, db TEXT, "
              "command TEXT, time INTEGER, state TEXT, info TEXT)"
            : "CREATE TABLE x(variable_name TEXT, variable_value)",
        SQLITE_VTAB_INNOCUOUS, sizeof(*v), out, pzErr);
    if (rc != SQLITE_OK)
        return rc;
    v = (sess_vtab *)*out;
    v->src = aux;
    v->kind = kind;
    return SQLITE_OK;
}

static int
sess_disconnect(sqlite3_vtab *vtab)
{
    sqlite3_free(vtab);
    return SQLITE_OK;
}

static int
sess_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    info->estimatedCost = 100.0;
    info->estimatedRows = 100;
    return SQLITE_OK;
}

static void
cursor_clear(sess_cursor *c)
{
    for (size_t i = 0; c->rows != NULL && i < c->n; i++)
        for (size_t k = 0; k < 6; k++)
            sqlite3_free(c->rows[i].text[k]);
    sqlite3_free(c->rows);
    c->rows = NULL;
    c->n = c->cap = 0;
    c->oom = false;
    ha_cursor_rewind(&c->rc, 0, 0);
}

/* A new zeroed row at the end of c->rows, or NULL (OOM, c->oom set). */
static struct sess_row *
add_row(sess_cursor *c)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct sess_row *rows =
            sqlite3_realloc64(c->rows, (sqlite3_uint64)cap * sizeof(*rows));
        if (rows == NULL) {
            c->oom = true;
            return NULL;
        }
        c->rows = rows;
        c->cap = cap;
    }
    memset(&c->rows[c->n], 0, sizeof(c->rows[0]));
    return &c->rows[c->n++];
}

/* text[k] = copy of s (NULL stays NULL); returns 0 or -1 (OOM). */
static int
copy_text(sess_cursor *c, struct sess_row *row, size_t k, const char *s)
{
    if (s != NULL && (row->text[k] = sqlite3_mprintf("%s", s)) == NULL) {
        c->oom = true;
        return -1;
    }
    return 0;
}

static int
sess_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out)
{
    (void)vtab;
    return ha_cursor_open(sizeof(sess_cursor), out);
}

static int
sess_close(sqlite3_vtab_cursor *cur)
{
    cursor_clear((sess_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Source callbacks: copy one session or variable into the cursor. */
static int
take_session(void *ctx, const struct ha_sessions_row *r)
{
    sess_cursor *c = ctx;
    struct sess_row *row = add_row(c);
    const char *text[6] = {r->user,    r->host,  r->db,
                           r->command, r->state, r->info};

    if (row == NULL)
        return -1;
    row->id = r->id;
    row->time = r->time;
    for (size_t k = 0; k < 6; k++)
        if (copy_text(c, row, k, text[k]) != 0)
            return -1;
    return 0;
}

static int
take_var(void *ctx, const struct ha_sessions_var *v)
{
    sess_cursor *c = ctx;
    struct sess_row *row = add_row(c);

    if (row == NULL)
        return -1;
    row->type = v->type;
    row->id = v->ival;
    if (copy_text(c, row, 0, v->name) != 0 ||
        (v->type == HA_SESSIONS_TEXT && copy_text(c, row, 1, v->sval) != 0))
        return -1;
    return 0;
}

static int
sess_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    sess_cursor *c = (sess_cursor *)cur;
    sess_vtab *v = (sess_vtab *)cur->pVtab;
    int rc;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    cursor_clear(c);
    if (v->kind == SESS_PROCESSLIST)
        rc = v->src->sessions(v->src->arg, take_session, c);
    else
        rc = v->src->vars(v->src->arg, v->kind == SESS_GLOBALS, take_var, c);
    ha_cursor_rewind(&c->rc, 0, c->n);
    return rc == 0 && !c->oom ? SQLITE_OK : SQLITE_NOMEM;
}

static int
sess_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    sess_cursor *c = (sess_cursor *)cur;

    if (((sess_vtab *)cur->pVtab)->kind != SESS_PROCESSLIST) {
        const struct sess_row *var = &c->rows[c->rc.row];
        if (col == 0)
            sqlite3_result_text(ctx, var->text[0], -1, SQLITE_TRANSIENT);
        else if (var->type == HA_SESSIONS_INT)
            sqlite3_result_int64(ctx, var->id);
        else if (var->type == HA_SESSIONS_TEXT)
            sqlite3_result_text(ctx, var->text[1], -1, SQLITE_TRANSIENT);
        else
            sqlite3_result_null(ctx);
        return SQLITE_OK;
    }
    {
        const struct sess_row *row = &c->rows[c->rc.row];
        static const int text_of[] = {-1, 0, 1, 2, 3, -1, 4, 5};
        if (col == SESS_COL_ID)
            sqlite3_result_int64(ctx, row->id);
        else if (col == SESS_COL_TIME)
            sqlite3_result_int64(ctx, row->time);
        else if (col > 0 && col <= SESS_COL_INFO &&
                 row->text[text_of[col]] != NULL)
            sqlite3_result_text(ctx, row->text[text_of[col]], -1,
                                SQLITE_TRANSIENT);
        else
            sqlite3_result_null(ctx);
    }
    return SQLITE_OK;
}

static const sqlite3_module sess_module = {
    0,               /* iVersion */
    sess_connect,       /* xCreate: a session's own (temp) */
    sess_connect,    /* xConnect */
    sess_best_index, /* xBestIndex - always a full scan */
    sess_disconnect, /* xDisconnect */
    sess_disconnect,    /* xDestroy */
    sess_open,       /* xOpen */
    sess_close,      /* xClose */
    sess_filter,     /* xFilter - snapshot the rows */
    ha_cursor_next,  /* xNext */
    ha_cursor_eof,   /* xEof */
    sess_column,     /* xColumn */
    ha_cursor_rowid, /* xRowid */
    NULL,            /* xUpdate - read-only */
    NULL,            /* xBegin */
    NULL,            /* xSync */
    NULL,            /* xCommit */
    NULL,            /* xRollback */
    NULL,            /* xFindFunction */
    NULL,            /* xRename */
    NULL,            /* xSavepoint */
    NULL,            /* xRelease */
    NULL,            /* xRollbackTo */
    NULL,            /* xShadowName */
};

int
ha_sessions_register(sqlite3 *db, const struct ha_sessions_source *src,
                     char **pzErr)
{
    static const char *const names[] = {
        "stats_admin_sessions", "session_variables", "mysql_variables"};
    int rc = SQLITE_OK;

    *pzErr = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        rc = sqlite3_create_module_v2(db, names[i], &sess_module,
                                      (void *)src, NULL);
        if (rc != SQLITE_OK) {
            *pzErr = sqlite3_mprintf("registering %s: %s", names[i],
                                     sqlite3_errstr(rc));
            break;
        }
    }
    return rc;
}
