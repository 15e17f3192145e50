/* SPDX-License-Identifier: MIT
 *
 * Admin sessions (see session.h). The admin database is an SQLite memdb
 * database named with a leading '/', which SQLite shares between all
 * connections of the process while giving each its own page cache and
 * transaction; the server keeps one connection open so it outlives
 * sessions.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

#include "dialect.h"
#include "log.h"
#include "sysvar.h"
#include "util.h"

static const char *const schemas[] = {"main", "stats"};

bool
ha_session_schema_exists(const char *name)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(schemas); i++)
        if (strcmp(schemas[i], name) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* MySQL functions SQLite lacks                                         */
/* ------------------------------------------------------------------ */

/* ha_sysvar(name): the value of @@name, as the dialect rewrites it.
 * Unknown names give NULL rather than an error: drivers read whole lists
 * of variables at connect and fail on an error (Connector/J). */
static void
fn_sysvar(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    const struct ha_sysvar *v;

    (void)argc;
    if (name == NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    if (ha_str_ieq(name, "autocommit")) {
        sqlite3_result_int(ctx, s->autocommit ? 1 : 0);
        return;
    }
    if (ha_str_ieq(name, "pseudo_thread_id")) {
        sqlite3_result_int64(ctx, s->id);
        return;
    }
    v = ha_sysvar_find(name);
    if (v == NULL || v->type == HA_SYSVAR_NULL)
        sqlite3_result_null(ctx);
    else if (v->type == HA_SYSVAR_INT)
        sqlite3_result_int64(ctx, v->ival);
    else
        sqlite3_result_text(ctx, v->sval, -1, SQLITE_STATIC);
}

static void
fn_version(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    (void)argv;
    sqlite3_result_text(ctx, HA_SERVER_VERSION, -1, SQLITE_STATIC);
}

static void
fn_database(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);

    (void)argc;
    (void)argv;
    if (s->schema[0] == '\0')
        sqlite3_result_null(ctx);
    else
        sqlite3_result_text(ctx, s->schema, -1, SQLITE_TRANSIENT);
}

static void
fn_user(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);

    (void)argc;
    (void)argv;
    sqlite3_result_text(ctx, sqlite3_mprintf("%s@%s", s->user, s->host), -1,
                        sqlite3_free);
}

static void
fn_current_user(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);

    (void)argc;
    (void)argv;
    sqlite3_result_text(ctx, sqlite3_mprintf("%s@%%", s->user), -1,
                        sqlite3_free);
}

static void
fn_connection_id(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);

    (void)argc;
    (void)argv;
    sqlite3_result_int64(ctx, s->id);
}

static void
fn_last_insert_id(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    (void)argv;
    sqlite3_result_int64(ctx,
                         sqlite3_last_insert_rowid(sqlite3_context_db_handle(ctx)));
}

static const struct {
    const char *name;
    int nargs;
    bool deterministic;   /* same value for the whole session */
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
} functions[] = {
    {"ha_sysvar", 1, false, fn_sysvar},
    {"version", 0, true, fn_version},
    {"database", 0, false, fn_database},
    {"schema", 0, false, fn_database},
    {"user", 0, true, fn_user},
    {"session_user", 0, true, fn_user},
    {"system_user", 0, true, fn_user},
    {"current_user", 0, true, fn_current_user},
    {"connection_id", 0, true, fn_connection_id},
    {"last_insert_id", 0, false, fn_last_insert_id},
};

/* ------------------------------------------------------------------ */
/* Lifecycle                                                            */
/* ------------------------------------------------------------------ */

int
ha_session_open(struct ha_session *s, const struct ha_session_shared *shared,
                uint32_t id, char *err, size_t errlen)
{
    char *zerr = NULL;
    int rc;

    s->shared = shared;
    s->id = id;
    s->autocommit = true;
    s->db = NULL;
    rc = sqlite3_open_v2(shared->db_uri, &s->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                         NULL);
    if (rc != SQLITE_OK) {
        ha_err_set(err, errlen, "cannot open the admin database: %s",
                   s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    for (size_t i = 0; i < HA_ARRAY_SIZE(functions); i++) {
        int flags = SQLITE_UTF8 | SQLITE_INNOCUOUS;
        if (functions[i].deterministic)
            flags |= SQLITE_DETERMINISTIC;
        rc = sqlite3_create_function(s->db, functions[i].name,
                                     functions[i].nargs, flags, s,
                                     functions[i].fn, NULL, NULL);
        if (rc != SQLITE_OK) {
            ha_err_set(err, errlen, "cannot register %s(): %s",
                       functions[i].name, sqlite3_errmsg(s->db));
            goto fail;
        }
    }
    if (shared->vtab != NULL &&
        ha_vtab_register_all(s->db, shared->vtab, &zerr) != SQLITE_OK) {
        ha_err_set(err, errlen, "cannot register virtual tables: %s",
                   zerr ? zerr : "unknown error");
        sqlite3_free(zerr);
        goto fail;
    }
    return 0;
fail:
    sqlite3_close_v2(s->db);
    s->db = NULL;
    return -1;
}

void
ha_session_close(struct ha_session *s)
{
    if (s->db != NULL) {
        /* An open transaction dies with the session, as in MySQL. */
        sqlite3_close_v2(s->db);
        s->db = NULL;
    }
}

uint16_t
ha_session_status(const struct ha_session *s)
{
    uint16_t st = 0;

    if (s->autocommit)
        st |= 0x0002; /* SERVER_STATUS_AUTOCOMMIT */
    if (s->db != NULL && !sqlite3_get_autocommit(s->db))
        st |= 0x0001; /* SERVER_STATUS_IN_TRANS */
    return st;
}

int
ha_session_use(struct ha_session *s, const char *name)
{
    if (!ha_session_schema_exists(name))
        return -1;
    ha_strlcpy(s->schema, name, sizeof(s->schema));
    return 0;
}

/* ------------------------------------------------------------------ */
/* Queries                                                              */
/* ------------------------------------------------------------------ */

static bool
in_transaction(const struct ha_session *s)
{
    return !sqlite3_get_autocommit(s->db);
}

/* Runs a fixed statement (BEGIN/COMMIT/ROLLBACK) and replies OK or ERR. */
static void
exec_simple(struct ha_session *s, const char *sql, struct ha_reply *r)
{
    char *zerr = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &zerr);

    r->status = ha_session_status(s);
    if (rc != SQLITE_OK)
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db), zerr);
    else
        ha_reply_ok(r, 0, 0, NULL);
    sqlite3_free(zerr);
}

/* True when text holds nothing but whitespace, comments and ';'. */
static bool
only_trivia(sqlite3 *db, const char *text)
{
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;

    while (*text != '\0') {
        if (sqlite3_prepare_v2(db, text, -1, &st, &tail) != SQLITE_OK)
            return false;
        if (st != NULL) {
            sqlite3_finalize(st);
            return false;
        }
        if (tail == text)
            break;
        text = tail;
    }
    return true;
}

void
ha_session_query(struct ha_session *s, const char *sql, size_t len,
                 struct ha_reply *r)
{
    struct ha_buf text = HA_BUF_INIT;
    struct ha_dialect_result dr;
    sqlite3_stmt *stmt = NULL;
    const char *tail = NULL;
    char err[256];
    int rc;

    r->status = ha_session_status(s);
    if (ha_dialect_rewrite(sql, len, &text, &dr, err, sizeof(err)) != 0) {
        ha_reply_err(r, 1064, "42000", "You have an error in your SQL "
                     "syntax: %s", err);
        goto out;
    }

    switch (dr.kind) {
    case HA_STMT_EMPTY:
        ha_reply_err(r, 1065, "42000", "Query was empty");
        goto out;
    case HA_STMT_SET:
        /* Session settings (SET NAMES, sql_mode, ...) are accepted so
         * drivers can connect; the dialect layer gives them meaning. */
        ha_reply_ok(r, 0, 0, NULL);
        goto out;
    case HA_STMT_USE:
        if (ha_session_use(s, dr.arg) != 0)
            ha_reply_err(r, 1049, "42000", "Unknown database '%s'", dr.arg);
        else
            ha_reply_ok(r, 0, 0, NULL);
        goto out;
    case HA_STMT_BEGIN:
        /* MySQL commits an open transaction implicitly on BEGIN. */
        if (in_transaction(s))
            sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        exec_simple(s, "BEGIN", r);
        goto out;
    case HA_STMT_COMMIT:
    case HA_STMT_ROLLBACK:
        /* SQLite refuses COMMIT without a transaction; MySQL answers OK. */
        if (!in_transaction(s))
            ha_reply_ok(r, 0, 0, NULL);
        else
            exec_simple(s, dr.kind == HA_STMT_COMMIT ? "COMMIT" : "ROLLBACK",
                        r);
        goto out;
    default:
        break;
    }

    rc = sqlite3_prepare_v2(s->db, (const char *)text.data, (int)text.len + 1,
                            &stmt, &tail);
    if (rc != SQLITE_OK) {
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                            sqlite3_errmsg(s->db));
        goto out;
    }
    if (stmt == NULL) {
        ha_reply_err(r, 1065, "42000", "Query was empty");
        goto out;
    }
    if (tail != NULL && !only_trivia(s->db, tail)) {
        ha_reply_err(r, 1064, "42000",
                     "You have an error in your SQL syntax: more than one "
                     "statement in one query needs CLIENT_MULTI_STATEMENTS");
        goto out;
    }
    r->take_info = ha_vtab_take_info;
    ha_reply_stmt(r, s->db, stmt, NULL);
    {
        /* A failed statement must not leave its message for the next. */
        char sink[1];
        ha_vtab_take_info(s->db, sink, sizeof(sink));
    }
    r->status = ha_session_status(s);
out:
    sqlite3_finalize(stmt);
    ha_buf_free(&text);
}
