/* SPDX-License-Identifier: MIT
 *
 * Prepared statements (see stmt.h). The table is an array sorted by id:
 * ids only grow, so a new statement is appended and lookups bisect.
 * Parameter values are bound with SQLITE_TRANSIENT because they point
 * into the packet being dispatched; long data lives in the statement
 * until the next execute or COM_STMT_RESET consumes it, as in MySQL
 * (libmysqlclient sends a long-data parameter again for each execute).
 */
#include "admin/stmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "admin/dialect.h"
#include "admin/exec.h"
#include "admin/lex.h"
#include "core/log.h"
#include "admin/proto.h"
#include "core/util.h"
#include "vtab/vtab.h"

struct ha_stmt {
    /* Identity */
    uint32_t id;
    char *sql;                 /* the MySQL text as prepared (PROCESSLIST,
                                * special statements) */
    size_t sql_len;

    struct ha_lex lex;         /* sql's tokens, lexed at prepare: a
                                * special statement runs from them at
                                * every execute, never lexed again */

    /* SQLite side */
    sqlite3_stmt *stmt;        /* NULL for a special statement */
    uint16_t n_params;
    char (*ctes)[HA_AUTHZ_CTE_NAME]; /* its CTE names (authz.ctes);
                                * malloc'd, NULL when none */
    size_t n_ctes;
    bool is_show;              /* a SHOW rewrite: the authorizer hides
                                * the schema table instead of refusing
                                * it (ha_authz_who.in_show) */

    /* Carried between executions */
    uint8_t *types;            /* 2 * n_params: (type, flag) pairs */
    bool have_types;           /* an execute has sent types */
    struct ha_buf *long_data;  /* n_params buffers */
    bool *has_long_data;       /* n_params: long data was sent */
    char long_err[128];        /* SEND_LONG_DATA problem, for execute */
};

/* ------------------------------------------------------------------ */
/* The table                                                            */
/* ------------------------------------------------------------------ */

void
ha_stmt_table_init(struct ha_stmt_table *t)
{
    memset(t, 0, sizeof(*t));
    t->max = HA_STMT_MAX_PER_CONN;
}

static void
stmt_free(struct ha_stmt *st)
{
    if (st == NULL)
        return;
    sqlite3_finalize(st->stmt);
    if (st->long_data != NULL)
        for (uint16_t i = 0; i < st->n_params; i++)
            ha_buf_free(&st->long_data[i]);
    free(st->long_data);
    free(st->has_long_data);
    free(st->types);
    free(st->ctes);
    ha_lex_free(&st->lex);
    free(st->sql);
    free(st);
}

void
ha_stmt_table_clear(struct ha_stmt_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        stmt_free(t->v[i]);
    t->n = 0;
}

void
ha_stmt_table_free(struct ha_stmt_table *t)
{
    ha_stmt_table_clear(t);
    free(t->v);
    t->v = NULL;
    t->cap = 0;
}

/* Index of id in t->v, or -1. */
static ptrdiff_t
find_index(const struct ha_stmt_table *t, uint32_t id)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid]->id == id)
            return (ptrdiff_t)mid;
        if (t->v[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static struct ha_stmt *
find(const struct ha_stmt_table *t, uint32_t id)
{
    ptrdiff_t i = find_index(t, id);

    return i < 0 ? NULL : t->v[i];
}

static void
clear_long_data(struct ha_stmt *st)
{
    for (uint16_t i = 0; i < st->n_params; i++) {
        ha_buf_free(&st->long_data[i]);
        st->has_long_data[i] = false;
    }
    st->long_err[0] = '\0';
}

/* What the authorizer must know of st when it is prepared or run. */
static struct ha_exec_scope
stmt_scope(const struct ha_stmt *st)
{
    struct ha_exec_scope scope = {
        .is_show = st->is_show,
        .ctes = (const char(*)[HA_AUTHZ_CTE_NAME])st->ctes,
        .n_ctes = st->n_ctes,
    };

    return scope;
}

const char *
ha_stmt_sql(const struct ha_stmt_table *t, uint32_t id, size_t *len)
{
    const struct ha_stmt *st = find(t, id);

    if (st == NULL)
        return NULL;
    if (len != NULL)
        *len = st->sql_len;
    return st->sql;
}

/* ------------------------------------------------------------------ */
/* COM_STMT_PREPARE                                                     */
/* ------------------------------------------------------------------ */

/* Builds the statement for sql; replies ERR and returns NULL when it
 * cannot be prepared. */
static struct ha_stmt *
stmt_build(struct ha_session *s, const char *sql, size_t len,
           struct ha_reply *r)
{
    struct ha_exec_scope scope;
    struct ha_buf text = HA_BUF_INIT;
    struct ha_dialect_result dr;
    struct ha_stmt *st = NULL;
    const char *tail = NULL;
    char err[256];
    int n, rc;

    st = calloc(1, sizeof(*st));
    if (st == NULL || (st->sql = malloc(len + 1)) == NULL)
        goto oom;
    memcpy(st->sql, sql, len);
    st->sql[len] = '\0';
    st->sql_len = len;
    /* Lexed once, here, from the statement's own copy of its text. The
     * schema matters to SHOW TABLES and SHOW COLUMNS. */
    if (ha_lex_run(&st->lex, st->sql, len, err, sizeof(err)) != 0) {
        ha_reply_err(r, 1064, "42000", "You have an error in your SQL "
                     "syntax: %s", err);
        goto fail;
    }
    if (ha_dialect_rewrite_lexed(&st->lex, s->schema, &text, &dr, err,
                                 sizeof(err)) != 0)
        goto oom;

    switch (dr.kind) {
    case HA_STMT_EMPTY:
        ha_reply_err(r, 1065, "42000", "Query was empty");
        goto fail;
    case HA_STMT_ERROR:
        ha_reply_err(r, dr.err_code, dr.sqlstate, "%s", dr.arg);
        goto fail;
    case HA_STMT_OTHER:
    case HA_STMT_SHOW:
        break;
    default:
        /* SET, USE, BEGIN, COMMIT, ROLLBACK, KILL: the session answers
         * them (OK or ERR) when the statement is executed. */
        ha_buf_free(&text);
        return st;
    }

    {
        char why[640];
        int code = 0;

        /* Every schema it names is there, or it fails saying why. */
        if (ha_schemas_check(s->db, &s->schemas, &st->lex, 0, st->lex.n,
                             &s->authz, &code, why, sizeof(why)) != 0) {
            ha_reply_err(r, (uint16_t)code, "42S02", "%s", why);
            goto fail;
        }
    }
    {
        char names[HA_AUTHZ_MAX_CTES][HA_AUTHZ_CTE_NAME];
        size_t k = ha_dialect_cte_names(&st->lex, 0, st->lex.n, names,
                                        HA_AUTHZ_MAX_CTES);

        if (k > 0 && (st->ctes = malloc(k * sizeof(*st->ctes))) != NULL) {
            memcpy(st->ctes, names, k * sizeof(*st->ctes));
            st->n_ctes = k;
        }
    }
    /* SQLite holds the statement from here on: the tokens are not needed
     * again. */
    ha_lex_free(&st->lex);
    st->is_show = dr.kind == HA_STMT_SHOW;
    scope = stmt_scope(st);
    ha_exec_scope_set(s, &scope);
    rc = sqlite3_prepare_v2(s->db, (const char *)text.data,
                            (int)text.len + 1, &st->stmt, &tail);
    ha_exec_scope_clear(s);
    if (rc != SQLITE_OK) {
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                            sqlite3_errmsg(s->db));
        goto fail;
    }
    if (st->stmt == NULL) {
        ha_reply_err(r, 1065, "42000", "Query was empty");
        goto fail;
    }
    if (tail != NULL && !ha_lex_only_trivia(tail, strlen(tail))) {
        ha_reply_err(r, 1064, "42000",
                     "You have an error in your SQL syntax: a prepared "
                     "statement holds exactly one statement");
        goto fail;
    }
    n = sqlite3_bind_parameter_count(st->stmt);
    if (n > 0xFFFF) {
        ha_reply_err(r, 1390, "HY000",
                     "Prepared statement contains too many placeholders");
        goto fail;
    }
    st->n_params = (uint16_t)n;
    if (n > 0) {
        st->types = calloc((size_t)n, 2);
        st->long_data = calloc((size_t)n, sizeof(*st->long_data));
        st->has_long_data = calloc((size_t)n, sizeof(*st->has_long_data));
        if (st->types == NULL || st->long_data == NULL ||
            st->has_long_data == NULL)
            goto oom;
    }
    ha_buf_free(&text);
    return st;

oom:
    ha_reply_err(r, 1037, "HY001", "Out of memory preparing a statement");
fail:
    stmt_free(st);
    ha_buf_free(&text);
    return NULL;
}

void
ha_stmt_prepare(struct ha_stmt_table *t, struct ha_session *s,
                const char *sql, size_t len, struct ha_reply *r)
{
    struct ha_stmt *st;

    ha_exec_begin(s, r);
    if (t->n >= t->max) {
        ha_reply_err(r, 1461, "42000",
                     "Can't create more than max_prepared_stmt_count "
                     "statements (current value: %zu)",
                     t->max);
        return;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        struct ha_stmt **v = realloc(t->v, cap * sizeof(*v));
        if (v == NULL) {
            ha_reply_err(r, 1037, "HY001",
                         "Out of memory preparing a statement");
            return;
        }
        t->v = v;
        t->cap = cap;
    }
    st = stmt_build(s, sql, len, r);
    if (st == NULL)
        return;
    st->id = ++t->last_id;
    if (st->id == 0) /* after 2^32 prepares on one connection */
        st->id = ++t->last_id;
    t->v[t->n++] = st;
    ha_reply_prepare_ok(r, st->id, st->stmt, st->n_params);
}

/* ------------------------------------------------------------------ */
/* COM_STMT_EXECUTE                                                     */
/* ------------------------------------------------------------------ */

static bool
is_blob_type(uint8_t type)
{
    return type == HA_TYPE_TINY_BLOB || type == HA_TYPE_MEDIUM_BLOB ||
           type == HA_TYPE_LONG_BLOB || type == HA_TYPE_BLOB ||
           type == HA_TYPE_GEOMETRY;
}

/* Binds parameter i (0-based) to value v. Returns an SQLite code. */
static int
bind_one(struct ha_stmt *st, int i, const struct ha_binval *v)
{
    sqlite3_stmt *q = st->stmt;
    const void *data;
    size_t n;

    switch (v->kind) {
    case HA_BINVAL_INT:
        /* An unsigned value past INT64_MAX has no SQLite integer. */
        if (v->is_unsigned && v->i < 0)
            return sqlite3_bind_double(q, i + 1, (double)(uint64_t)v->i);
        return sqlite3_bind_int64(q, i + 1, v->i);
    case HA_BINVAL_DOUBLE:
        return sqlite3_bind_double(q, i + 1, v->d);
    case HA_BINVAL_TEXT:
        return sqlite3_bind_text(q, i + 1, v->text, (int)v->n,
                                 SQLITE_TRANSIENT);
    case HA_BINVAL_BYTES:
    case HA_BINVAL_LONG_DATA:
        if (v->kind == HA_BINVAL_LONG_DATA) {
            data = st->long_data[i].data;
            n = st->long_data[i].len;
        } else {
            data = v->s;
            n = v->n;
        }
        if (data == NULL)
            data = "";
        if (n > 0x7FFFFFFF)
            return SQLITE_TOOBIG;
        if (is_blob_type(v->type))
            return sqlite3_bind_blob(q, i + 1, data, (int)n,
                                     SQLITE_TRANSIENT);
        return sqlite3_bind_text(q, i + 1, data, (int)n, SQLITE_TRANSIENT);
    default:
        return sqlite3_bind_null(q, i + 1);
    }
}

void
ha_stmt_execute(struct ha_stmt_table *t, struct ha_session *s,
                const uint8_t *p, size_t len, struct ha_reply *r)
{
    struct ha_stmt_execute h;
    struct ha_exec_scope scope;
    struct ha_binval *vals = NULL;
    struct ha_stmt *st;
    char err[256];
    int rc;

    ha_exec_begin(s, r);
    if (ha_proto_decode_stmt_execute(p, len, &h, err, sizeof(err)) != 0) {
        ha_reply_err(r, 1835, "HY000", "Malformed communication packet: %s",
                     err);
        return;
    }
    st = find(t, h.stmt_id);
    if (st == NULL) {
        ha_reply_err(r, 1243, "HY000",
                     "Unknown prepared statement handler (%u) given to "
                     "mysqld_stmt_execute",
                     h.stmt_id);
        return;
    }
    ha_session_set_command(s, "Execute", st->sql, st->sql_len);
    if (st->long_err[0] != '\0') {
        ha_reply_err(r, 1210, "HY000",
                     "Incorrect arguments to mysqld_stmt_execute: %s",
                     st->long_err);
        goto out;
    }
    if (st->n_params > 0) {
        vals = calloc(st->n_params, sizeof(*vals));
        if (vals == NULL) {
            ha_reply_err(r, 1037, "HY001", "Out of memory");
            goto out;
        }
    }
    if (ha_proto_decode_stmt_params(p, len, h.params_pos, st->n_params,
                                    st->types, &st->have_types,
                                    st->has_long_data, vals, err,
                                    sizeof(err)) != 0) {
        ha_reply_err(r, 1835, "HY000", "Malformed communication packet: %s",
                     err);
        goto out;
    }

    r->binary = true;
    if (st->stmt == NULL) {
        /* SET, USE, BEGIN, COMMIT, ROLLBACK, KILL. */
        if (ha_exec_special_lexed(s, &st->lex, r) != 1)
            ha_reply_err(r, 1295, "HY000",
                         "This command is not supported in the prepared "
                         "statement protocol yet");
        goto out;
    }

    sqlite3_reset(st->stmt);
    sqlite3_clear_bindings(st->stmt);
    for (int i = 0; i < st->n_params; i++) {
        rc = bind_one(st, i, &vals[i]);
        if (rc != SQLITE_OK) {
            ha_reply_sqlite_err(r, rc, sqlite3_errmsg(s->db));
            goto out;
        }
    }
    scope = stmt_scope(st);
    (void)ha_exec_step(s, st->stmt, &scope, r);
    sqlite3_reset(st->stmt);
    /* Drop bound copies of large values now rather than at the next
     * execute. */
    sqlite3_clear_bindings(st->stmt);
out:
    /* Long data serves one execute (MySQL resets it after each). */
    clear_long_data(st);
    free(vals);
    ha_exec_done(s, r); /* MySQL counts executes */
}

/* ------------------------------------------------------------------ */
/* SEND_LONG_DATA, RESET, CLOSE                                         */
/* ------------------------------------------------------------------ */

int
ha_stmt_send_long_data(struct ha_stmt_table *t, const uint8_t *p, size_t len,
                       char *err, size_t errlen)
{
    struct ha_stmt *st;
    uint32_t id;
    uint16_t param;
    const uint8_t *data;
    size_t n;

    if (ha_proto_decode_long_data(p, len, &id, &param, &data, &n, err,
                                  errlen) != 0)
        return -1;
    st = find(t, id);
    if (st == NULL) {
        ha_err_set(err, errlen, "no prepared statement %u", id);
        return -1;
    }
    if (param >= st->n_params) {
        snprintf(st->long_err, sizeof(st->long_err),
                 "long data for parameter %u of a statement with %u", param,
                 st->n_params);
        ha_err_set(err, errlen, "%s", st->long_err);
        return -1;
    }
    if (st->long_data[param].len + n > HA_STMT_MAX_LONG_DATA) {
        snprintf(st->long_err, sizeof(st->long_err),
                 "long data for parameter %u exceeds %u bytes", param,
                 HA_STMT_MAX_LONG_DATA);
        ha_buf_free(&st->long_data[param]);
        ha_err_set(err, errlen, "%s", st->long_err);
        return -1;
    }
    st->has_long_data[param] = true;
    ha_buf_append(&st->long_data[param], data, n);
    if (ha_buf_failed(&st->long_data[param])) {
        snprintf(st->long_err, sizeof(st->long_err),
                 "out of memory storing long data for parameter %u", param);
        ha_buf_free(&st->long_data[param]);
        ha_err_set(err, errlen, "%s", st->long_err);
        return -1;
    }
    return 0;
}

void
ha_stmt_reset(struct ha_stmt_table *t, const uint8_t *p, size_t len,
              struct ha_reply *r)
{
    struct ha_stmt *st;
    uint32_t id;
    char err[128];

    if (ha_proto_decode_u32_arg(p, len, 4, &id, err, sizeof(err)) != 0) {
        ha_reply_err(r, 1835, "HY000", "Malformed communication packet: %s",
                     err);
        return;
    }
    st = find(t, id);
    if (st == NULL) {
        ha_reply_err(r, 1243, "HY000",
                     "Unknown prepared statement handler (%u) given to "
                     "mysqld_stmt_reset",
                     id);
        return;
    }
    clear_long_data(st);
    if (st->stmt != NULL)
        sqlite3_reset(st->stmt);
    ha_reply_ok(r, 0, 0, NULL);
}

int
ha_stmt_close(struct ha_stmt_table *t, const uint8_t *p, size_t len)
{
    uint32_t id;
    ptrdiff_t i;

    if (ha_proto_decode_u32_arg(p, len, 4, &id, NULL, 0) != 0)
        return -1;
    i = find_index(t, id);
    if (i < 0)
        return -1;
    stmt_free(t->v[i]);
    memmove(&t->v[i], &t->v[i + 1],
            (t->n - (size_t)i - 1) * sizeof(*t->v));
    t->n--;
    return 0;
}
