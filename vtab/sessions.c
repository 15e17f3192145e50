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
 *   6 state    TEXT     "executing" for the session reading the table
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
#include <time.h>

#include "admin/session.h"

enum sess_kind {
    SESS_PROCESSLIST,   /* stats_admin_sessions */
    SESS_VARIABLES,     /* session_variables */
    SESS_GLOBALS        /* mysql_variables */
};

typedef struct sess_vtab sess_vtab;
struct sess_vtab {
    sqlite3_vtab base;
    struct ha_session *session;  /* the connection's own session */
    enum sess_kind kind;
};

struct sess_row {
    sqlite3_int64 id, time;
    char *text[6];               /* user, host, db, command, state, info */
};

typedef struct sess_cursor sess_cursor;
struct sess_cursor {
    sqlite3_vtab_cursor base;
    struct sess_row *rows;       /* PROCESSLIST */
    struct ha_session_var *vars; /* VARIABLES */
    size_t n, pos;
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
    rc = sqlite3_declare_vtab(
        db, kind == SESS_PROCESSLIST
                ? "CREATE TABLE x(id INTEGER, user TEXT, host TEXT, db TEXT, "
                  "command TEXT, time INTEGER, state TEXT, info TEXT)"
                : "CREATE TABLE x(variable_name TEXT, variable_value)");
    if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("%s", sqlite3_errstr(rc));
        return rc;
    }
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    v = sqlite3_malloc(sizeof(*v));
    if (v == NULL)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof(*v));
    v->session = aux;
    v->kind = kind;
    *out = &v->base;
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
    if (c->vars != NULL)
        ha_session_vars_free(c->vars, c->n);
    c->vars = NULL;
    c->n = c->pos = 0;
}

static int
sess_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **out)
{
    sess_cursor *c = sqlite3_malloc(sizeof(*c));

    (void)vtab;
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    *out = &c->base;
    return SQLITE_OK;
}

static int
sess_close(sqlite3_vtab_cursor *cur)
{
    cursor_clear((sess_cursor *)cur);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Copies one session into row; returns 0 or -1 (OOM). */
static int
fill_row(const struct ha_session *o, const struct ha_session *self,
         time_t now, struct sess_row *row)
{
    const char *text[6] = {
        o->user,
        o->peer[0] != '\0' ? o->peer : o->host,
        o->schema[0] != '\0' ? o->schema : NULL,
        o->command,
        o == self ? "executing" : "",
        o->info,
    };

    row->id = o->id;
    row->time = now > o->command_since ? (sqlite3_int64)(now - o->command_since)
                                       : 0;
    for (size_t k = 0; k < 6; k++) {
        row->text[k] = NULL;
        if (text[k] != NULL &&
            (row->text[k] = sqlite3_mprintf("%s", text[k])) == NULL)
            return -1;
    }
    return 0;
}

static int
sess_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
            int argc, sqlite3_value **argv)
{
    sess_cursor *c = (sess_cursor *)cur;
    sess_vtab *v = (sess_vtab *)cur->pVtab;
    const struct ha_session *self = v->session;
    const struct ha_session_registry *reg = self->shared->registry;
    time_t now = time(NULL);
    size_t n = 0;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    cursor_clear(c);
    if (v->kind != SESS_PROCESSLIST) {
        if (ha_session_vars_snapshot(self, v->kind == SESS_GLOBALS, &c->vars,
                                     &c->n) != 0)
            return SQLITE_NOMEM;
        return SQLITE_OK;
    }
    n = reg != NULL ? reg->n : 1;
    c->rows = sqlite3_malloc64((sqlite3_uint64)(n ? n : 1) * sizeof(*c->rows));
    if (c->rows == NULL)
        return SQLITE_NOMEM;
    memset(c->rows, 0, (n ? n : 1) * sizeof(*c->rows));
    if (reg == NULL) {
        c->n = 1;
        return fill_row(self, self, now, &c->rows[0]) == 0 ? SQLITE_OK
                                                            : SQLITE_NOMEM;
    }
    for (const struct ha_session *o = reg->head; o != NULL && c->n < n;
         o = o->next) {
        int rc = fill_row(o, self, now, &c->rows[c->n]);
        c->n++;
        if (rc != 0)
            return SQLITE_NOMEM;
    }
    /* The list is newest first; PROCESSLIST reads better oldest first. */
    for (size_t i = 0; i < c->n / 2; i++) {
        struct sess_row t = c->rows[i];
        c->rows[i] = c->rows[c->n - 1 - i];
        c->rows[c->n - 1 - i] = t;
    }
    return SQLITE_OK;
}

static int
sess_next(sqlite3_vtab_cursor *cur)
{
    ((sess_cursor *)cur)->pos++;
    return SQLITE_OK;
}

static int
sess_eof(sqlite3_vtab_cursor *cur)
{
    sess_cursor *c = (sess_cursor *)cur;

    return c->pos >= c->n;
}

static int
sess_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    sess_cursor *c = (sess_cursor *)cur;

    if (c->vars != NULL) {
        const struct ha_session_var *var = &c->vars[c->pos];
        if (col == 0)
            sqlite3_result_text(ctx, var->name, -1, SQLITE_TRANSIENT);
        else if (var->type == HA_SYSVAR_INT)
            sqlite3_result_int64(ctx, var->ival);
        else if (var->type == HA_SYSVAR_TEXT)
            sqlite3_result_text(ctx, var->sval, -1, SQLITE_TRANSIENT);
        else
            sqlite3_result_null(ctx);
        return SQLITE_OK;
    }
    {
        const struct sess_row *row = &c->rows[c->pos];
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

static int
sess_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *rowid)
{
    *rowid = (sqlite_int64)((sess_cursor *)cur)->pos;
    return SQLITE_OK;
}

static const sqlite3_module sess_module = {
    0,               /* iVersion */
    NULL,            /* xCreate - NULL: eponymous only */
    sess_connect,    /* xConnect */
    sess_best_index, /* xBestIndex - always a full scan */
    sess_disconnect, /* xDisconnect */
    NULL,            /* xDestroy */
    sess_open,       /* xOpen */
    sess_close,      /* xClose */
    sess_filter,     /* xFilter - snapshot the rows */
    sess_next,       /* xNext */
    sess_eof,        /* xEof */
    sess_column,     /* xColumn */
    sess_rowid,      /* xRowid */
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
ha_sessions_register(sqlite3 *db, struct ha_session *s, char **pzErr)
{
    static const char *const names[] = {
        "stats_admin_sessions", "session_variables", "mysql_variables"};
    int rc = SQLITE_OK;

    *pzErr = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        rc = sqlite3_create_module_v2(db, names[i], &sess_module, s, NULL);
        if (rc != SQLITE_OK) {
            *pzErr = sqlite3_mprintf("registering %s: %s", names[i],
                                     sqlite3_errstr(rc));
            break;
        }
    }
    return rc;
}
