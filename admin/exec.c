/* SPDX-License-Identifier: MIT
 *
 * Statements and commands run on a session (see exec.h).
 *
 * Every statement commits as it runs, whatever the client's autocommit,
 * as in ProxySQL's admin: BEGIN, START TRANSACTION, COMMIT and ROLLBACK
 * answer OK and do nothing, SET autocommit = 0 is kept for @@autocommit
 * and the status flags but opens nothing, and SAVEPOINT (which would open
 * a transaction in SQLite) is refused by the authorizer. The memdb
 * database is one lock for every session: a transaction left open by one
 * client (PyMySQL's default autocommit off, a stats user's BEGIN) would
 * make every other session's reads or control writes fail with ERR 1205,
 * and a control write (prof_active, dump_now) acts on jemalloc at once,
 * so it must never be answered ERR after it acted.
 */
#include "admin/exec.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/dialect.h"
#include "admin/lex.h"
#include "admin/persist_stmt.h"
#include "admin/proto.h"
#include "admin/schemas.h"
#include "admin/setexec.h"
#include "core/buf.h"
#include "core/util.h"
#include "vtab/vtab.h"

/* ------------------------------------------------------------------ */
/* The one statement path                                               */
/* ------------------------------------------------------------------ */

void
ha_exec_begin(struct ha_session *s, struct ha_reply *r)
{
    r->authz = &s->authz;
    r->shutdown = s->shared->shutdown;
    r->killed = &s->killed;
    r->status = ha_session_status(s);
}

void
ha_exec_scope_set(struct ha_session *s, const struct ha_exec_scope *scope)
{
    s->authz.in_show = scope->is_show;
    s->authz.ctes = scope->ctes;
    s->authz.n_ctes = scope->n_ctes;
}

void
ha_exec_scope_clear(struct ha_session *s)
{
    s->authz.in_show = false;
    s->authz.n_ctes = 0;
}

int
ha_exec_step(struct ha_session *s, sqlite3_stmt *stmt,
             const struct ha_exec_scope *scope, struct ha_reply *r)
{
    int rc;

    ha_exec_scope_set(s, scope); /* SQLite may prepare it again */
    r->status = ha_session_status(s);
    r->info_from = s->vtab;
    r->timeout_ms = ha_session_arm_deadline(s);
    rc = ha_reply_stmt(r, s->db, stmt, NULL);
    ha_session_disarm_deadline(s);
    r->timeout_ms = 0;
    r->info_from = NULL;
    ha_exec_scope_clear(s);
    {
        /* A failed statement must not leave its message for the next. */
        char sink[1];
        ha_vtab_take_info(s->vtab, sink, sizeof(sink));
    }
    return rc == SQLITE_DONE ? 0 : -1;
}

void
ha_exec_done(struct ha_session *s, struct ha_reply *r)
{
    if (s->shared->clients != NULL)
        s->shared->clients->questions++;
    r->status = ha_session_status(s);
}

/* ------------------------------------------------------------------ */
/* COM_QUERY                                                            */
/* ------------------------------------------------------------------ */

/* KILL [QUERY|CONNECTION] id. Killing one's own connection answers ERR
 * 1317 and then closes it, as MySQL does; stats users may only kill
 * their own user's sessions. */
static int
exec_kill(struct ha_session *s, uint32_t id, bool query_only,
          struct ha_reply *r)
{
    char err[128];
    int code = 0;

    if (ha_session_kill(s, id, query_only, &code, err, sizeof(err)) != 0) {
        ha_reply_err(r, (uint16_t)code, "HY000", "%s", err);
        return -1;
    }
    if (id == s->id && !query_only) {
        ha_reply_err(r, 1317, "70100", "Query execution was interrupted");
        return -1;
    }
    ha_reply_ok(r, 0, 0, NULL);
    return 0;
}

/* SAVE/LOAD: parsed from the statement's tokens, run by persist_stmt.c
 * with what it needs of the session. */
static int
exec_persist(struct ha_session *s, const struct ha_lex *lx,
             struct ha_reply *r)
{
    struct ha_persist_cmd cmd;
    struct ha_persist_ctx ctx;
    char err[512], who[256];

    if (ha_persist_parse(lx, ha_lex_next(lx, SIZE_MAX), &cmd, err,
                         sizeof(err)) != 0) {
        ha_reply_err(r, 1064, "42000",
                     "You have an error in your SQL syntax: %s", err);
        return -1;
    }
    snprintf(who, sizeof(who), "%.64s@%.100s (connection %u)", s->user,
             s->peer[0] ? s->peer : s->host, s->id);
    memset(&ctx, 0, sizeof(ctx));
    ctx.db = s->db;
    ctx.who = who;
    ctx.datadir = s->shared->vtab != NULL ? s->shared->vtab->heap->datadir : NULL;
    ctx.cfg = s->shared->config;
    ctx.disk_worker =
        s->shared->vtab != NULL ? s->shared->vtab->heap->dump_worker : NULL;
    if (ctx.datadir == NULL) {
        ha_reply_err(r, 1105, "HY000", "no datadir: nothing can be saved");
        return -1;
    }
    return ha_persist_exec(&ctx, s->role == HA_ROLE_ADMIN, &cmd, r);
}

/* Runs one statement and replies. more: another result follows
 * (SERVER_MORE_RESULTS_EXISTS). Returns 0, or -1 when the reply was an
 * ERR (a batch stops there). */
static int
run_one(struct ha_session *s, const struct ha_lex *lx, bool more,
        struct ha_reply *r)
{
    struct ha_exec_scope scope = {false, NULL, 0};
    struct ha_buf text = HA_BUF_INIT;
    struct ha_dialect_result dr;
    sqlite3_stmt *stmt = NULL;
    const char *tail = NULL;
    char err[640];
    int rc, ret = -1;

    s->more_results = more;
    r->status = ha_session_status(s);
    if (ha_dialect_rewrite_lexed(lx, s->schema, &text, &dr, err,
                                 sizeof(err)) != 0) {
        ha_reply_err(r, 1105, "HY000", "%s", err);
        goto out;
    }

    switch (dr.kind) {
    case HA_STMT_EMPTY:
        ha_reply_err(r, 1065, "42000", "Query was empty");
        goto out;
    case HA_STMT_ERROR:
        ha_reply_err(r, dr.err_code, dr.sqlstate, "%s", dr.arg);
        goto out;
    case HA_STMT_SET:
        ret = ha_setexec_run(s, lx, r);
        goto out;
    case HA_STMT_USE:
        if (ha_session_use(s, dr.arg) != 0) {
            ha_reply_err(r, 1049, "42000", "Unknown database '%s'", dr.arg);
            goto out;
        }
        ha_reply_ok(r, 0, 0, NULL);
        ret = 0;
        goto out;
    case HA_STMT_BEGIN:
    case HA_STMT_COMMIT:
    case HA_STMT_ROLLBACK:
        /* Statements commit as they run (see the top of this file). */
        ha_reply_ok(r, 0, 0, NULL);
        ret = 0;
        goto out;
    case HA_STMT_KILL:
        ret = exec_kill(s, dr.kill_id, dr.kill_query, r);
        goto out;
    case HA_STMT_PERSIST:
        ret = exec_persist(s, lx, r);
        goto out;
    default:
        break;
    }

    /* Every schema it names is there, or it fails saying why. */
    {
        int code = 0;

        if (ha_schemas_check(s->db, &s->schemas, lx, 0, lx->n, &s->authz,
                             &code, err, sizeof(err)) != 0) {
            ha_reply_err(r, (uint16_t)code, "42S02", "%s", err);
            goto out;
        }
    }
    /* A SHOW is prepared and run (SQLite may prepare it again) with the
     * authorizer told so: see ha_authz_who.in_show. */
    scope.is_show = dr.kind == HA_STMT_SHOW;
    scope.ctes = (const char(*)[HA_AUTHZ_CTE_NAME])s->ctes;
    scope.n_ctes =
        ha_dialect_cte_names(lx, 0, lx->n, s->ctes, HA_AUTHZ_MAX_CTES);
    ha_exec_scope_set(s, &scope);
    stmt = ha_stmtcache_get(&s->cache, s->db, (const char *)text.data,
                            text.len, &tail, &rc);
    if (rc != SQLITE_OK) {
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                            sqlite3_errmsg(s->db));
        goto out;
    }
    if (stmt == NULL) {
        ha_reply_err(r, 1065, "42000", "Query was empty");
        goto out;
    }
    if (tail != NULL && !ha_lex_only_trivia(tail, strlen(tail))) {
        ha_reply_err(r, 1064, "42000",
                     "You have an error in your SQL syntax: more than one "
                     "statement in one query needs CLIENT_MULTI_STATEMENTS");
        goto out;
    }
    ret = ha_exec_step(s, stmt, &scope, r);
out:
    ha_exec_scope_clear(s);
    ha_exec_done(s, r);
    ha_stmtcache_done(&s->cache, stmt);
    ha_buf_free(&text);
    return ret;
}

void
ha_exec_query(struct ha_session *s, const char *sql, size_t len,
              struct ha_reply *r)
{
    struct ha_dialect_span *spans = NULL;
    struct ha_lex lx;
    size_t n = 0;
    char err[256];
    int lexed;

    ha_session_set_command(s, "Query", sql, len);
    ha_exec_begin(s, r);
    /* The text is lexed here, once: the split and every statement's
     * rewrite and SET parse work on views of these tokens. */
    lexed = ha_lex_run(&lx, sql, len, err, sizeof(err));
    if (lexed != 0 ||
        ha_dialect_split_lexed(&lx, &spans, &n, err, sizeof(err)) != 0) {
        ha_reply_err(r, 1064, "42000", "You have an error in your SQL "
                     "syntax: %s", err);
    } else if (n == 0) {
        ha_reply_err(r, 1065, "42000", "Query was empty");
    } else if (n > 1 && !s->multi_statements) {
        ha_reply_err(r, 1064, "42000",
                     "You have an error in your SQL syntax: more than one "
                     "statement in one query needs CLIENT_MULTI_STATEMENTS");
    } else {
        for (size_t k = 0; k < n; k++) {
            struct ha_lex view;

            ha_lex_view(&lx, spans[k].tok_from, spans[k].tok_to,
                        spans[k].off, &view);
            if (run_one(s, &view, k + 1 < n, r) != 0)
                break;
        }
    }
    free(spans);
    ha_lex_free(&lx);
    s->more_results = false;
    r->status = ha_session_status(s);
    ha_session_set_command(s, "Sleep", NULL, 0);
}

int
ha_exec_special(struct ha_session *s, const char *sql, size_t len,
                struct ha_reply *r)
{
    struct ha_lex lx;
    char err[256];
    int rc;

    ha_exec_begin(s, r);
    if (ha_lex_run(&lx, sql, len, err, sizeof(err)) != 0) {
        ha_lex_free(&lx);
        s->more_results = false;
        ha_reply_err(r, 1064, "42000", "You have an error in your SQL "
                     "syntax: %s", err);
        return 1;
    }
    rc = ha_exec_special_lexed(s, &lx, r);
    ha_lex_free(&lx);
    return rc;
}

int
ha_exec_special_lexed(struct ha_session *s, const struct ha_lex *lx,
                      struct ha_reply *r)
{
    struct ha_buf text = HA_BUF_INIT;
    struct ha_dialect_result dr;
    char err[256];
    int rc;

    ha_exec_begin(s, r);
    rc = ha_dialect_rewrite_lexed(lx, s->schema, &text, &dr, err,
                                  sizeof(err));
    ha_buf_free(&text);
    if (rc == 0 && (dr.kind == HA_STMT_OTHER || dr.kind == HA_STMT_SHOW))
        return 0;
    s->more_results = false;
    run_one(s, lx, false, r);
    return 1;
}

/* ------------------------------------------------------------------ */
/* COM_FIELD_LIST                                                       */
/* ------------------------------------------------------------------ */

static void
field_coldef(const char *schema, const char *table, const char *name,
             const char *decl, bool not_null, bool pk, struct ha_coldef *c)
{
    memset(c, 0, sizeof(*c));
    c->schema = schema;
    c->table = c->org_table = table;
    c->name = c->org_name = name;
    if (decl != NULL && strcasestr(decl, "INT") != NULL) {
        c->type = HA_TYPE_LONGLONG;
        c->collation = HA_COLLATION_BINARY;
        c->length = 20;
        c->flags = HA_FLAG_BINARY | HA_FLAG_NUM;
    } else if (decl != NULL && (strcasestr(decl, "REAL") != NULL ||
                                strcasestr(decl, "FLOA") != NULL ||
                                strcasestr(decl, "DOUB") != NULL)) {
        c->type = HA_TYPE_DOUBLE;
        c->collation = HA_COLLATION_BINARY;
        c->length = 22;
        c->flags = HA_FLAG_BINARY | HA_FLAG_NUM;
        c->decimals = 0x1f;
    } else if (decl != NULL && strcasestr(decl, "BLOB") != NULL) {
        c->type = HA_TYPE_BLOB;
        c->collation = HA_COLLATION_BINARY;
        c->length = 0xffffffffu;
        c->flags = HA_FLAG_BLOB | HA_FLAG_BINARY;
    } else {
        c->type = HA_TYPE_VAR_STRING;
        c->collation = HA_COLLATION_UTF8MB4_0900;
        c->length = 1024;
    }
    if (not_null || pk)
        c->flags |= HA_FLAG_NOT_NULL;
    if (pk)
        c->flags |= HA_FLAG_PRI_KEY;
}

static void
put_packet(struct ha_reply *r)
{
    ha_proto_write_packet(r->out, &r->seq, r->scratch.data, r->scratch.len);
    ha_buf_reset(&r->scratch);
}

void
ha_exec_field_list(struct ha_session *s, const char *table,
                   const char *wildcard, struct ha_reply *r)
{
    const char *schema = s->schema[0] != '\0' ? s->schema : "main";
    sqlite3_stmt *st = NULL;

    ha_exec_begin(s, r);
    if (!ha_schemas_table_exists(s->db, schema, table)) {
        ha_reply_err(r, 1146, "42S02", "Table '%s.%s' doesn't exist", schema,
                     table);
        return;
    }
    if (sqlite3_prepare_v2(s->db,
                           "SELECT name, type, \"notnull\", pk FROM "
                           "pragma_table_xinfo(?1, ?3) "
                           "WHERE hidden IN (0, 2, 3) "
                           "AND (?2 IS NULL OR ?2 = '' OR name LIKE ?2) "
                           "ORDER BY cid",
                           -1, &st, NULL) != SQLITE_OK) {
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                            sqlite3_errmsg(s->db));
        return;
    }
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, wildcard, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, ha_schemas_table_home(table), -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct ha_coldef c;
        field_coldef(schema, table, (const char *)sqlite3_column_text(st, 0),
                     (const char *)sqlite3_column_text(st, 1),
                     sqlite3_column_int(st, 2) != 0,
                     sqlite3_column_int(st, 3) != 0, &c);
        ha_proto_encode_coldef(&r->scratch, &c, true);
        put_packet(r);
    }
    sqlite3_finalize(st);
    if (r->caps & HA_CLIENT_DEPRECATE_EOF)
        ha_proto_encode_ok(&r->scratch, 0xFE, 0, 0, r->status, r->warnings,
                           NULL);
    else
        ha_proto_encode_eof(&r->scratch, r->warnings, r->status);
    put_packet(r);
}
