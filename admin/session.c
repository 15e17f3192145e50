/* SPDX-License-Identifier: MIT
 *
 * Admin sessions (see session.h). The admin database is an SQLite memdb
 * database named with a leading '/', which SQLite shares between all
 * connections of the process while giving each its own page cache and
 * transaction; the server keeps one connection open so it outlives
 * sessions.
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
#include "admin/session.h"

#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/catalog.h"
#include "admin/dialect.h"
#include "engine/diskstore.h"
#include "engine/history.h"
#include "admin/lex.h"
#include "engine/metrics.h"
#include "admin/persist_stmt.h"
#include "core/log.h"
#include "admin/proto.h"
#include "admin/schemas.h"
#include "vtab/sessions.h"
#include "admin/setvar.h"
#include "admin/show.h"
#include "admin/sysvar.h"
#include "core/util.h"
#include "vtab/vtab.h"

static const char *const schemas[] = {"main", "stats", "stats_history"};

bool
ha_session_schema_exists(const char *name)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(schemas); i++)
        if (strcmp(schemas[i], name) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Session and user variables                                           */
/* ------------------------------------------------------------------ */

static struct ha_session_var *
var_find(struct ha_session_var *vars, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ha_str_ieq(vars[i].name, name))
            return &vars[i];
    return NULL;
}

/* Sets (or adds) name in *vars to v's value (copied). Returns 0 or -1. */
static int
var_set(struct ha_session_var **vars, size_t *n, const char *name,
        const struct ha_session_var *v)
{
    struct ha_session_var *slot = var_find(*vars, *n, name);
    char *sval = NULL;

    if (v->type == HA_SYSVAR_TEXT &&
        (sval = strdup(v->sval != NULL ? v->sval : "")) == NULL)
        return -1;
    if (slot == NULL) {
        struct ha_session_var *p = realloc(*vars, (*n + 1) * sizeof(*p));
        if (p == NULL) {
            free(sval);
            return -1;
        }
        *vars = p;
        slot = &p[(*n)++];
        memset(slot, 0, sizeof(*slot));
        ha_strlcpy(slot->name, name, sizeof(slot->name));
    }
    free(slot->sval);
    slot->type = v->type;
    slot->ival = v->ival;
    slot->sval = sval;
    return 0;
}

static void
var_unset(struct ha_session_var *vars, size_t *n, const char *name)
{
    struct ha_session_var *slot = var_find(vars, *n, name);

    if (slot == NULL)
        return;
    free(slot->sval);
    *slot = vars[--*n];
}

void
ha_session_vars_free(struct ha_session_var *vars, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(vars[i].sval);
    free(vars);
}

static void
vars_clear(struct ha_session_var **vars, size_t *n)
{
    ha_session_vars_free(*vars, *n);
    *vars = NULL;
    *n = 0;
}

static void
result_var(sqlite3_context *ctx, enum ha_sysvar_type type, int64_t ival,
           const char *sval)
{
    if (type == HA_SYSVAR_INT)
        sqlite3_result_int64(ctx, ival);
    else if (type == HA_SYSVAR_TEXT)
        sqlite3_result_text(ctx, sval, -1, SQLITE_TRANSIENT);
    else
        sqlite3_result_null(ctx);
}

int
ha_session_vars_snapshot(const struct ha_session *s, bool global,
                         struct ha_session_var **vars, size_t *n)
{
    struct ha_session_var *v = NULL, tmp;
    size_t nv = 0;
    const struct ha_sysvar *sv;

    *vars = NULL;
    *n = 0;
    memset(&tmp, 0, sizeof(tmp));
    tmp.type = HA_SYSVAR_INT;
    tmp.ival = global ? 1 : s->autocommit;
    if (var_set(&v, &nv, "autocommit", &tmp) != 0)
        goto fail;
    for (size_t i = 0; (sv = ha_sysvar_at(i)) != NULL; i++) {
        const struct ha_session_var *o =
            global ? NULL : var_find(s->vars, s->n_vars, sv->name);
        if (o == NULL) {
            tmp.type = sv->type;
            tmp.ival = ha_sysvar_int(sv, &s->shared->limits);
            tmp.sval = (char *)sv->sval;
            o = &tmp;
        }
        if (var_set(&v, &nv, sv->name, o) != 0)
            goto fail;
    }
    if (!global) {
        tmp.type = HA_SYSVAR_INT;
        tmp.ival = s->id;
        if (var_set(&v, &nv, "pseudo_thread_id", &tmp) != 0)
            goto fail;
        /* Names SET accepted that the table does not know. */
        for (size_t i = 0; i < s->n_vars; i++)
            if (var_find(v, nv, s->vars[i].name) == NULL &&
                var_set(&v, &nv, s->vars[i].name, &s->vars[i]) != 0)
                goto fail;
    }
    *vars = v;
    *n = nv;
    return 0;
fail:
    ha_session_vars_free(v, nv);
    return -1;
}

/* ------------------------------------------------------------------ */
/* MySQL functions SQLite lacks                                         */
/* ------------------------------------------------------------------ */

/* ha_sysvar(name): the value of @@name, as the dialect rewrites it: this
 * session's SET value, else the server's; jemalloc-* and admin-* names
 * read global_variables. Unknown names give NULL rather than an error:
 * drivers read whole lists of variables at connect and fail on an error
 * (Connector/J). */
static void
fn_sysvar(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    const struct ha_session_var *o;
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
    if (strchr(name, '-') != NULL) {
        sqlite3_stmt *st = NULL;
        sqlite3_result_null(ctx);
        if (sqlite3_prepare_v2(s->db,
                               "SELECT variable_value FROM "
                               "temp.global_variables "
                               "WHERE variable_name = ?1",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW)
                sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
        }
        sqlite3_finalize(st);
        return;
    }
    o = var_find(s->vars, s->n_vars, name);
    if (o != NULL) {
        result_var(ctx, o->type, o->ival, o->sval);
        return;
    }
    v = ha_sysvar_find(name);
    if (v == NULL)
        sqlite3_result_null(ctx);
    else
        result_var(ctx, v->type, ha_sysvar_int(v, &s->shared->limits),
                   v->sval);
}

/* ha_uservar(name): @name, NULL when never set (as in MySQL). */
static void
fn_uservar(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    const struct ha_session_var *o;

    (void)argc;
    o = name ? var_find(s->user_vars, s->n_user_vars, name) : NULL;
    if (o == NULL)
        sqlite3_result_null(ctx);
    else
        result_var(ctx, o->type, o->ival, o->sval);
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

/* CONCAT(a, ...): NULL if any argument is NULL, as in MySQL (SQLite
 * before 3.44 has no concat()). */
static void
fn_concat(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    sqlite3_str *str = sqlite3_str_new(sqlite3_context_db_handle(ctx));

    for (int i = 0; i < argc; i++) {
        if (sqlite3_value_type(argv[i]) == SQLITE_NULL) {
            sqlite3_free(sqlite3_str_finish(str));
            sqlite3_result_null(ctx);
            return;
        }
        sqlite3_str_appendall(str, (const char *)sqlite3_value_text(argv[i]));
    }
    sqlite3_result_text(ctx, sqlite3_str_finish(str), -1, sqlite3_free);
}

/* CONCAT_WS(sep, a, ...): NULL arguments are skipped. */
static void
fn_concat_ws(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    sqlite3_str *str;
    const char *sep;
    int n = 0;

    if (argc < 1 || sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    sep = (const char *)sqlite3_value_text(argv[0]);
    str = sqlite3_str_new(sqlite3_context_db_handle(ctx));
    for (int i = 1; i < argc; i++) {
        if (sqlite3_value_type(argv[i]) == SQLITE_NULL)
            continue;
        if (n++ > 0)
            sqlite3_str_appendall(str, sep);
        sqlite3_str_appendall(str, (const char *)sqlite3_value_text(argv[i]));
    }
    sqlite3_result_text(ctx, sqlite3_str_finish(str), -1, sqlite3_free);
}

/* IF(cond, a, b) */
static void
fn_if(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    sqlite3_result_value(ctx, sqlite3_value_type(argv[0]) != SQLITE_NULL &&
                                      sqlite3_value_double(argv[0]) != 0.0
                                  ? argv[1]
                                  : argv[2]);
}

/* NOW(), CURRENT_TIMESTAMP(): local time as MySQL formats it. */
static void
fn_now(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    time_t t = time(NULL);
    struct tm tm;
    char buf[32];

    (void)argc;
    (void)argv;
    localtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
    sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

/* ------------------------------------------------------------------
 * max_execution_time
 * ------------------------------------------------------------------ */

static int64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool
shutting_down(const struct ha_session *s)
{
    return s->shared->shutdown != NULL && atomic_load(s->shared->shutdown);
}

/* SQLite's progress handler, every 1000 VM steps: a command that has had
 * its slice yields (s->yield), so one long statement does not hold the
 * port; a statement past its deadline (ERR 3024), killed (KILL QUERY, ERR
 * 1317) or running when the server is told to stop (ERR 1053, so SIGTERM
 * is obeyed at once) is interrupted. */
static int
progress_cb(void *arg)
{
    struct ha_session *s = arg;
    int64_t now = now_ns();

    if (s->yield != NULL && !s->killed && !shutting_down(s)) {
        if (s->slice_from_ns == 0) {
            s->slice_from_ns = now;
        } else if (now - s->slice_from_ns >= HA_SESSION_SLICE_NS) {
            s->yield(s->yield_arg);
            now = s->slice_from_ns = now_ns();
        }
    }
    if (s->killed || shutting_down(s))
        return 1;
    /* A client that closed its connection is waiting for nothing: at
     * most every 100 ms, a peek at its socket (0 bytes: EOF) ends the
     * statement instead of letting it run to max_execution_time. */
    if (s->client_fd >= 0 && now - s->peeked_ns >= 100000000) {
        char c;

        s->peeked_ns = now;
        if (recv(s->client_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
            ha_log_info("connection %u: the client went away; its "
                        "statement is interrupted",
                        s->id);
            s->client_fd = -1;
            return 1;
        }
    }
    return s->deadline_ns != 0 && now > s->deadline_ns;
}

/* SQLite's busy handler: a lock held by another session's paused
 * statement (the admin database is shared) is waited for by yielding, so
 * the holder gets its turns and finishes; without s->yield, or once the
 * statement is killed, past its deadline or the server stops, the lock
 * error is returned. Returns nonzero to retry. */
static int
busy_cb(void *arg, int n)
{
    struct ha_session *s = arg;

    (void)n;
    if (s->yield == NULL || s->killed || shutting_down(s) ||
        (s->deadline_ns != 0 && now_ns() > s->deadline_ns))
        return 0;
    s->yield(s->yield_arg);
    s->slice_from_ns = now_ns();
    return 1;
}

int64_t
ha_session_arm_deadline(struct ha_session *s)
{
    int64_t ceiling = s->shared->limits.max_execution_time, ms = ceiling;

    for (size_t i = 0; i < s->n_vars; i++)
        if (strcmp(s->vars[i].name, "max_execution_time") == 0 &&
            s->vars[i].type == HA_SYSVAR_INT && s->vars[i].ival > 0 &&
            (ceiling == 0 || s->vars[i].ival < ceiling))
            ms = s->vars[i].ival;
    s->deadline_ns = ms > 0 ? now_ns() + ms * 1000000 : 0;
    return ms;
}

void
ha_session_disarm_deadline(struct ha_session *s)
{
    s->deadline_ns = 0;
}

/* ha_prometheus_metrics(): SHOW PROMETHEUS METRICS' text. */
static void
fn_prometheus_metrics(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);
    struct ha_clients_stats st;
    struct ha_admin_counters c = {0};
    struct ha_buf out = HA_BUF_INIT;

    (void)argc;
    (void)argv;
    ha_clients_stats(s->shared->clients, &st);
    c.uptime_s = st.uptime;
    c.sessions = st.threads;
    c.sessions_max = st.max_used;
    c.connections = st.connections;
    c.questions = st.questions;
    c.http = s->shared->config != NULL && s->shared->config->n_http > 0;
    c.http_requests = st.http_requests;
    if (ha_admin_metrics(s->shared->vtab, &c, HA_EXPO_PROMETHEUS, &out) !=
        0) {
        ha_buf_free(&out);
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sqlite3_result_text(ctx, (const char *)out.data, (int)out.len,
                        SQLITE_TRANSIENT);
    ha_buf_free(&out);
}

/* ha_status(name): a SHOW STATUS counter, NULL for unknown names. */
static void
fn_status(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);
    const struct ha_clients *reg = s->shared->clients;
    const char *name = (const char *)sqlite3_value_text(argv[0]);
    struct ha_clients_stats st;

    (void)argc;
    if (name == NULL || reg == NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    ha_clients_stats(reg, &st);
    if (ha_str_ieq(name, "Uptime") ||
        ha_str_ieq(name, "Uptime_since_flush_status"))
        sqlite3_result_int64(ctx, (int64_t)st.uptime);
    else if (ha_str_ieq(name, "Threads_connected"))
        sqlite3_result_int64(ctx, (int64_t)st.threads);
    else if (ha_str_ieq(name, "Threads_running"))
        sqlite3_result_int64(ctx, 1); /* this one: queries are serial */
    else if (ha_str_ieq(name, "Connections"))
        sqlite3_result_int64(ctx, (int64_t)st.connections);
    else if (ha_str_ieq(name, "Questions") || ha_str_ieq(name, "Queries"))
        sqlite3_result_int64(ctx, (int64_t)st.questions);
    else if (ha_str_ieq(name, "Max_used_connections"))
        sqlite3_result_int64(ctx, (int64_t)st.max_used);
    else if (ha_str_ieq(name, "Ssl_version"))
        sqlite3_result_text(ctx, s->ssl_version, -1, SQLITE_TRANSIENT);
    else if (ha_str_ieq(name, "Ssl_cipher"))
        sqlite3_result_text(ctx, s->ssl_cipher, -1, SQLITE_TRANSIENT);
    else
        sqlite3_result_null(ctx);
}

/* True when table exists in schema db as SHOW TABLES lists it; main also
 * answers for the stats tables, which resolve unqualified there. */
/* The SQLite schema table lives in: the attached stats_history file for
 * the history tables, else main. Named explicitly because a table of the
 * attached disk schema would otherwise win over main's eponymous one of
 * the same name (global_variables). */
static const char *
table_schema(const char *table)
{
    const struct ha_catalog_table *t = ha_catalog_find(table);

    return t != NULL && t->schema != NULL &&
                   ha_str_ieq(t->schema, "stats_history")
               ? "stats_history"
               : "main";
}

static bool
table_exists(sqlite3 *db, const char *schema, const char *table)
{
    sqlite3_stmt *st = NULL;
    bool found = false;

    const struct ha_catalog_table *t = ha_catalog_find(table);

    if (t != NULL && t->schema != NULL)
        return ha_str_ieq(schema, t->schema) || ha_str_ieq(schema, "main");
    if (!ha_str_ieq(schema, "main"))
        return false;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM main.sqlite_schema WHERE type IN "
                           "('table', 'view') AND name = ?1 COLLATE NOCASE",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* ha_table_check(db, t): t, or the error "no such table: db.t" (which the
 * reply maps to ERR 1146). */
static void
fn_table_check(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *db = (const char *)sqlite3_value_text(argv[0]);
    const char *t = (const char *)sqlite3_value_text(argv[1]);

    (void)argc;
    if (db == NULL || t == NULL ||
        !table_exists(sqlite3_context_db_handle(ctx), db, t)) {
        char *msg = sqlite3_mprintf("no such table: %s.%s", db ? db : "",
                                    t ? t : "");
        sqlite3_result_error(ctx, msg ? msg : "no such table", -1);
        sqlite3_free(msg);
        return;
    }
    sqlite3_result_value(ctx, argv[1]);
}

/* ha_schema_check(db): db, or the error "Unknown database 'db'". */
static void
fn_schema_check(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *db = (const char *)sqlite3_value_text(argv[0]);

    (void)argc;
    if (db == NULL || !ha_session_schema_exists(db)) {
        char *msg = sqlite3_mprintf("Unknown database '%s'", db ? db : "");
        sqlite3_result_error(ctx, msg ? msg : "Unknown database", -1);
        sqlite3_free(msg);
        return;
    }
    sqlite3_result_value(ctx, argv[0]);
}

/* ha_create_table(db, t): the CREATE statement of a table: what SQLite
 * stored for tables users created, else one built from the columns (the
 * virtual tables have no stored text). */
static void
fn_create_table(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    sqlite3 *db = sqlite3_context_db_handle(ctx);
    const char *t = (const char *)sqlite3_value_text(argv[1]);
    sqlite3_stmt *st = NULL;
    sqlite3_str *str;
    int n_pk = 0, n = 0;

    (void)argc;
    if (t == NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    if (sqlite3_prepare_v2(db,
                           "SELECT sql FROM main.sqlite_schema WHERE type IN "
                           "('table', 'view') AND name = ?1 COLLATE NOCASE",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW &&
            sqlite3_column_type(st, 0) != SQLITE_NULL) {
            sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
            sqlite3_finalize(st);
            return;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    str = sqlite3_str_new(db);
    sqlite3_str_appendf(str, "CREATE TABLE `%w` (", t);
    if (sqlite3_prepare_v2(db,
                           "SELECT name, type, \"notnull\", dflt_value, pk "
                           "FROM pragma_table_xinfo(?1, ?2) WHERE hidden IN "
                           "(0, 2, 3) ORDER BY cid",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, table_schema(t), -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *type = (const char *)sqlite3_column_text(st, 1);
            sqlite3_str_appendf(str, "%s\n  `%w` %s", n++ ? "," : "",
                                (const char *)sqlite3_column_text(st, 0),
                                type && *type ? type : "TEXT");
            if (sqlite3_column_int(st, 2))
                sqlite3_str_appendall(str, " NOT NULL");
            if (sqlite3_column_type(st, 3) != SQLITE_NULL)
                sqlite3_str_appendf(str, " DEFAULT %s",
                                    sqlite3_column_text(st, 3));
            if (sqlite3_column_int(st, 4))
                n_pk++;
        }
        if (n_pk > 0) {
            sqlite3_reset(st);
            sqlite3_str_appendall(str, ",\n  PRIMARY KEY (");
            for (int k = 0; sqlite3_step(st) == SQLITE_ROW;)
                if (sqlite3_column_int(st, 4))
                    sqlite3_str_appendf(
                        str, "%s`%w`", k++ ? ", " : "",
                        (const char *)sqlite3_column_text(st, 0));
            sqlite3_str_appendall(str, ")");
        }
    }
    sqlite3_finalize(st);
    sqlite3_str_appendall(str, "\n)");
    sqlite3_result_text(ctx, sqlite3_str_finish(str), -1, sqlite3_free);
}

static const struct {
    const char *name;
    int nargs;
    bool deterministic;   /* same value for the whole session */
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
} functions[] = {
    {"ha_sysvar", 1, false, fn_sysvar},
    {"ha_uservar", 1, false, fn_uservar},
    {"ha_status", 1, false, fn_status},
    {"ha_prometheus_metrics", 0, false, fn_prometheus_metrics},
    {"ha_table_check", 2, false, fn_table_check},
    {"ha_schema_check", 1, false, fn_schema_check},
    {"ha_create_table", 2, false, fn_create_table},
    {"version", 0, true, fn_version},
    {"database", 0, false, fn_database},
    {"schema", 0, false, fn_database},
    {"user", 0, true, fn_user},
    {"session_user", 0, true, fn_user},
    {"system_user", 0, true, fn_user},
    {"current_user", 0, true, fn_current_user},
    {"connection_id", 0, true, fn_connection_id},
    {"last_insert_id", 0, false, fn_last_insert_id},
    {"concat", -1, true, fn_concat},
    {"concat_ws", -1, true, fn_concat_ws},
    {"if", 3, true, fn_if},
    {"now", 0, false, fn_now},
};

/* ------------------------------------------------------------------ */
/* Lifecycle                                                            */
/* ------------------------------------------------------------------ */

/* struct ha_sessions_source for the session tables (vtab/sessions.h):
 * every client of the engine's registry, both front-ends, oldest
 * first, and the variables. */
void
ha_session_client_row(const struct ha_client *client, time_t now,
                      struct ha_sessions_row *r)
{
    const struct ha_session *o =
        HA_CONTAINER_OF(client, const struct ha_session, client);

    r->id = o->id;
    r->user = o->user;
    r->host = o->peer[0] != '\0' ? o->peer : o->host;
    r->db = o->schema[0] != '\0' ? o->schema : NULL;
    r->command = o->command;
    r->time = now > o->command_since ? (int64_t)(now - o->command_since) : 0;
    /* Another session's command shows too, paused between its slices
     * (o->yield is set while one runs). */
    r->state = o->sending                          ? "Sending to client"
               : o->running || o->yield != NULL ? "executing"
                                                 : "";
    r->info = o->info;
}

static const struct ha_client_ops session_client_ops = {
    .row = ha_session_client_row,
};

struct source_walk {
    time_t now;
    int (*row)(void *, const struct ha_sessions_row *);
    void *ctx;
};

static int
source_one(const struct ha_client *c, void *arg)
{
    struct source_walk *w = arg;
    struct ha_sessions_row r;

    memset(&r, 0, sizeof(r));
    if (c->ops == NULL || c->ops->row == NULL)
        return 0;
    c->ops->row(c, w->now, &r);
    return w->row(w->ctx, &r) != 0 ? -1 : 0;
}

static int
source_sessions(void *arg, int (*row)(void *, const struct ha_sessions_row *),
                void *ctx)
{
    const struct ha_session *self = arg;
    struct source_walk w = {time(NULL), row, ctx};

    if (self->shared->clients == NULL)
        return source_one(&self->client, &w);
    return ha_clients_each(self->shared->clients, source_one, &w);
}

static int
source_vars(void *arg, bool global,
            int (*var)(void *, const struct ha_sessions_var *), void *ctx)
{
    static const enum ha_sessions_type types[] = {
        [HA_SYSVAR_INT] = HA_SESSIONS_INT,
        [HA_SYSVAR_TEXT] = HA_SESSIONS_TEXT,
        [HA_SYSVAR_NULL] = HA_SESSIONS_NULL,
    };
    struct ha_session_var *vars;
    size_t n;
    int ret = 0;

    if (ha_session_vars_snapshot(arg, global, &vars, &n) != 0)
        return -1;
    for (size_t i = 0; i < n && ret == 0; i++) {
        struct ha_sessions_var v = {
            .name = vars[i].name,
            .type = types[vars[i].type],
            .ival = vars[i].ival,
            .sval = vars[i].sval,
        };
        ret = var(ctx, &v);
    }
    ha_session_vars_free(vars, n);
    return ret;
}


int
ha_session_open(struct ha_session *s, const struct ha_session_shared *shared,
                uint32_t id, char *err, size_t errlen)
{
    struct ha_clients *reg = shared->clients;
    char *zerr = NULL;
    int rc;

    memset(s, 0, sizeof(*s));
    s->shared = shared;
    s->id = id;
    s->client_fd = -1;
    s->autocommit = true;
    s->opened_at = s->command_since = time(NULL);
    ha_strlcpy(s->command, "Sleep", sizeof(s->command));
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
    /* Every 1000 VM steps: the max_execution_time deadline. */
    sqlite3_progress_handler(s->db, 1000, progress_cb, s);
    sqlite3_busy_handler(s->db, busy_cb, s);
    /* Before hardening forbids ATTACH: the disk layer (SAVE ... TO
     * DISK, engine/diskstore.h) and the memory history (engine/history.h),
     * read-only. */
    ha_schemas_open(s->db,
                    shared->vtab != NULL ? shared->vtab->datadir : NULL,
                    &s->schemas);
    if (ha_authorizer_harden(s->db, err, errlen) != 0)
        goto fail;
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
        ha_vtab_register_all(s->db, shared->vtab, &s->vtab, &zerr) !=
            SQLITE_OK) {
        ha_err_set(err, errlen, "cannot register virtual tables: %s",
                   zerr ? zerr : "unknown error");
        sqlite3_free(zerr);
        goto fail;
    }
    s->sessions_src.sessions = source_sessions;
    s->sessions_src.vars = source_vars;
    s->sessions_src.arg = s;
    if (ha_sessions_register(s->db, &s->sessions_src, &zerr) != SQLITE_OK) {
        ha_err_set(err, errlen, "cannot register the session tables: %s",
                   zerr ? zerr : "unknown error");
        sqlite3_free(zerr);
        goto fail;
    }
    /* Each table a private instance in this connection's temp schema,
     * which bare names resolve to before main and the attached files:
     * statements on them take no lock of the shared scratch database,
     * so a paused reader never holds up a control write, a long write to
     * a scratch table never holds up a reader of the tables, and the
     * disk schema's saved global_variables never shadows the live one.
     * Made before the authorizer is armed (it refuses CREATE VIRTUAL
     * TABLE); a module not registered here (tests) is skipped. */
    size_t n_tables;
    const struct ha_catalog_table *tables = ha_catalog_tables(&n_tables);

    for (size_t i = 0; i < n_tables; i++) {
        char sql[160];

        if (!tables[i].module)
            continue;
        snprintf(sql, sizeof(sql),
                 "CREATE VIRTUAL TABLE temp.\"%s\" USING \"%s\"",
                 tables[i].name, tables[i].name);
        (void)sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    }
    /* Armed last: the setup above runs unchecked. */
    s->authz.role = s->role;
    s->authz.user = s->user;
    s->authz.host = s->host;
    ha_authorizer_arm(s->db, &s->authz);
    s->client.id = id;
    s->client.role = s->role;
    s->client.user = s->user;
    s->client.ops = &session_client_ops;
    if (reg != NULL)
        ha_clients_add(reg, &s->client);
    return 0;
fail:
    sqlite3_close_v2(s->db);
    s->db = NULL;
    ha_vtab_release(s->vtab);
    s->vtab = NULL;
    return -1;
}

void
ha_session_set_role(struct ha_session *s, enum ha_role role)
{
    s->role = role;
    s->client.role = role;
    s->authz.role = role;
    ha_vtab_set_admin(s->vtab, role == HA_ROLE_ADMIN);
    if (s->db != NULL)
        ha_authorizer_arm(s->db, &s->authz);
}

void
ha_session_close(struct ha_session *s)
{
    struct ha_clients *reg = s->shared ? s->shared->clients : NULL;

    if (s->db == NULL)
        return;
    if (reg != NULL)
        ha_clients_remove(reg, &s->client);
    /* An open transaction dies with the session, as in MySQL. */
    ha_stmtcache_clear(&s->cache);
    sqlite3_close_v2(s->db);
    s->db = NULL;
    ha_vtab_release(s->vtab);
    s->vtab = NULL;
    vars_clear(&s->vars, &s->n_vars);
    vars_clear(&s->user_vars, &s->n_user_vars);
    free(s->info);
    s->info = NULL;
}

uint16_t
ha_session_status(const struct ha_session *s)
{
    uint16_t st = 0;

    if (s->autocommit)
        st |= HA_STATUS_AUTOCOMMIT;
    if (s->db != NULL && !sqlite3_get_autocommit(s->db))
        st |= HA_STATUS_IN_TRANS;
    if (s->more_results)
        st |= HA_STATUS_MORE_RESULTS;
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

void
ha_session_reset(struct ha_session *s)
{
    if (s->db != NULL && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    vars_clear(&s->vars, &s->n_vars);
    vars_clear(&s->user_vars, &s->n_user_vars);
    s->autocommit = true;
    s->multi_statements = s->multi_statements_login;
    s->more_results = false;
}

void
ha_session_set_command(struct ha_session *s, const char *command,
                       const char *info, size_t info_len)
{
    ha_strlcpy(s->command, command, sizeof(s->command));
    s->running = strcmp(command, "Sleep") != 0;
    free(s->info);
    s->info = NULL;
    if (info != NULL) {
        if (info_len > HA_SESSION_INFO_MAX)
            info_len = HA_SESSION_INFO_MAX;
        s->info = malloc(info_len + 1);
        if (s->info != NULL) {
            memcpy(s->info, info, info_len);
            s->info[info_len] = '\0';
        }
    }
    s->command_since = time(NULL);
}

void
ha_session_set_multi_statements(struct ha_session *s, bool on)
{
    if (!s->multi_statements_known) {
        s->multi_statements_login = on;
        s->multi_statements_known = true;
    }
    s->multi_statements = on;
}

/* ------------------------------------------------------------------ */
/* SET                                                                  */
/* ------------------------------------------------------------------ */

/* ON/OFF, TRUE/FALSE, 1/0 as MySQL's boolean variables take them.
 * Returns 0 with *b set, or -1. */
static int
parse_bool(const struct ha_session_var *v, bool *b)
{
    static const struct {
        const char *word;
        bool value;
    } words[] = {{"on", true},   {"true", true},   {"1", true},
                 {"off", false}, {"false", false}, {"0", false}};

    if (v->type == HA_SYSVAR_INT && (v->ival == 0 || v->ival == 1)) {
        *b = v->ival == 1;
        return 0;
    }
    if (v->type != HA_SYSVAR_TEXT)
        return -1;
    for (size_t i = 0; i < HA_ARRAY_SIZE(words); i++) {
        if (ha_str_ieq(v->sval, words[i].word)) {
            *b = words[i].value;
            return 0;
        }
    }
    return -1;
}

/* The value as text, for messages. */
static const char *
var_text(const struct ha_session_var *v, char *buf, size_t len)
{
    if (v->type == HA_SYSVAR_TEXT)
        return v->sval;
    if (v->type == HA_SYSVAR_NULL)
        return "NULL";
    snprintf(buf, len, "%lld", (long long)v->ival);
    return buf;
}

/* Evaluates a SET value: a bare word is text; an expression is run as
 * SELECT <expr> on the session's connection. Returns 0, or -1 having
 * replied with the SQLite error. */
static int
eval_value(struct ha_session *s, const struct ha_set_item *it,
           struct ha_session_var *out, struct ha_reply *r)
{
    sqlite3_stmt *st = NULL;
    char *sql;
    int rc;

    memset(out, 0, sizeof(*out));
    ha_strlcpy(out->name, it->name, sizeof(out->name));
    if (it->kind == HA_SET_DEFAULT) {
        out->type = HA_SYSVAR_NULL;
        return 0;
    }
    if (it->kind == HA_SET_WORD) {
        out->type = HA_SYSVAR_TEXT;
        out->sval = strdup(it->value);
        return out->sval != NULL ? 0 : -1;
    }
    /* Parenthesised, so "1 b" is an error and not a column alias. */
    sql = sqlite3_mprintf("SELECT (%s)", it->value);
    rc = sql ? sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                            sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        return -1;
    }
    switch (sqlite3_column_type(st, 0)) {
    case SQLITE_NULL:
        out->type = HA_SYSVAR_NULL;
        break;
    case SQLITE_INTEGER:
        out->type = HA_SYSVAR_INT;
        out->ival = sqlite3_column_int64(st, 0);
        break;
    default:
        out->type = HA_SYSVAR_TEXT;
        out->sval = strdup((const char *)sqlite3_column_text(st, 0));
        break;
    }
    sqlite3_finalize(st);
    if (out->type == HA_SYSVAR_TEXT && out->sval == NULL) {
        ha_reply_err(r, 1105, "HY000", "out of memory");
        return -1;
    }
    return 0;
}

/* Checks a MySQL variable assignment and puts it in the form it is kept
 * in (integers for integer variables). Returns 0, or -1 having replied
 * with MySQL's error. */
static int
check_mysql_var(const struct ha_set_item *it, struct ha_session_var *v,
                bool is_default, const struct ha_sysvar_limits *lim,
                struct ha_reply *r)
{
    const struct ha_sysvar *sv = ha_sysvar_find(it->name);
    char num[32];
    bool b;

    if (ha_str_ieq(it->name, "autocommit")) {
        if (!is_default && parse_bool(v, &b) != 0) {
            ha_reply_err(r, 1231, "42000",
                         "Variable 'autocommit' can't be set to the value "
                         "of '%s'",
                         var_text(v, num, sizeof(num)));
            return -1;
        }
        return 0;
    }
    if ((sv != NULL && sv->read_only) || it->scope == HA_SET_GLOBAL) {
        ha_reply_err(r, 1238, "HY000",
                     "Variable '%s' is a read only variable%s", it->name,
                     sv != NULL && sv->read_only
                         ? ""
                         : " (MySQL variables here are per session: use "
                           "SET SESSION)");
        return -1;
    }
    if (is_default || sv == NULL)
        return 0;
    if (v->type == HA_SYSVAR_NULL) {
        if (strncmp(it->name, "character_set_", 14) == 0)
            return 0;
        ha_reply_err(r, 1231, "42000",
                     "Variable '%s' can't be set to the value of 'NULL'",
                     it->name);
        return -1;
    }
    if (sv->type == HA_SYSVAR_INT && v->type == HA_SYSVAR_TEXT) {
        char *end;
        long long n = strtoll(v->sval, &end, 10);
        if (parse_bool(v, &b) == 0)
            n = b;
        else if (*v->sval == '\0' || *end != '\0') {
            ha_reply_err(r, 1232, "42000",
                         "Incorrect argument type to variable '%s'",
                         it->name);
            return -1;
        }
        free(v->sval);
        v->sval = NULL;
        v->type = HA_SYSVAR_INT;
        v->ival = n;
    } else if (sv->type != HA_SYSVAR_INT && v->type == HA_SYSVAR_INT) {
        snprintf(num, sizeof(num), "%lld", (long long)v->ival);
        v->sval = strdup(num);
        if (v->sval == NULL)
            return -1;
        v->type = HA_SYSVAR_TEXT;
    }
    /* Honoured (run_deadline), so only what it can mean: 0 (the admin
     * ceiling) up to the ceiling admin_variables.max_execution_time. */
    if (ha_str_ieq(it->name, "max_execution_time") &&
        v->type == HA_SYSVAR_INT &&
        (v->ival < 0 ||
         (lim->max_execution_time > 0 && v->ival > lim->max_execution_time))) {
        ha_reply_err(r, 1231, "42000",
                     "Variable 'max_execution_time' can't be set to the value "
                     "of '%lld': allowed 0..%lld ms (0: the server's limit, "
                     "admin_variables.max_execution_time = %lld ms, which a "
                     "session may lower but not raise)",
                     (long long)v->ival,
                     (long long)(lim->max_execution_time > 0
                                     ? lim->max_execution_time
                                     : INT64_MAX),
                     (long long)lim->max_execution_time);
        return -1;
    }
    return 0;
}

/* Runs the global_variables UPDATE for each module assignment, all or
 * nothing (one savepoint: the vtab stages rows and applies them when
 * the outermost transaction commits). Returns 0, or -1 having replied. */
static int
set_module_vars(struct ha_session *s, const struct ha_setvar *sv,
                const struct ha_session_var *vals, const bool *dflt,
                struct ha_reply *r, char *info, size_t infolen)
{
    sqlite3_stmt *st = NULL;
    char *zerr = NULL;
    int rc;

    if (sqlite3_exec(s->db, "SAVEPOINT ha_set", NULL, NULL, &zerr) !=
        SQLITE_OK)
        goto sqlite_fail;
    rc = sqlite3_prepare_v2(s->db,
                            "UPDATE temp.global_variables "
                            "SET variable_value = ?1 "
                            "WHERE variable_name = ?2",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        goto sqlite_fail_rollback;
    for (size_t k = 0; k < sv->n; k++) {
        const struct ha_set_item *it = &sv->items[k];
        if (!it->is_module)
            continue;
        if (dflt[k]) {
            ha_reply_err(r, 1231, "42000",
                         "Variable '%s' can't be set to the value of "
                         "'DEFAULT'",
                         it->name);
            goto rollback;
        }
        sqlite3_reset(st);
        if (vals[k].type == HA_SYSVAR_INT)
            sqlite3_bind_int64(st, 1, vals[k].ival);
        else if (vals[k].type == HA_SYSVAR_TEXT)
            sqlite3_bind_text(st, 1, vals[k].sval, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 1);
        sqlite3_bind_text(st, 2, it->name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            goto sqlite_fail_rollback;
        if (sqlite3_changes(s->db) == 0) {
            ha_reply_err(r, 1193, "HY000", "Unknown system variable '%s'",
                         it->name);
            goto rollback;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(s->db, "RELEASE ha_set", NULL, NULL, &zerr) !=
        SQLITE_OK)
        goto sqlite_fail_rollback;
    ha_vtab_take_info(s->vtab, info, infolen);
    return 0;
sqlite_fail_rollback:
    ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                        zerr ? zerr : sqlite3_errmsg(s->db));
rollback:
    sqlite3_finalize(st);
    sqlite3_free(zerr);
    sqlite3_exec(s->db, "ROLLBACK TO ha_set", NULL, NULL, NULL);
    sqlite3_exec(s->db, "RELEASE ha_set", NULL, NULL, NULL);
    {
        char sink[1];
        ha_vtab_take_info(s->vtab, sink, sizeof(sink));
    }
    return -1;
sqlite_fail:
    ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                        zerr ? zerr : sqlite3_errmsg(s->db));
    sqlite3_free(zerr);
    return -1;
}

/* SET ...: every value is evaluated and checked before anything
 * changes; then the global_variables rows, then this session's
 * variables. Returns 0 (OK sent) or -1 (ERR sent). */
static int
exec_set(struct ha_session *s, const struct ha_lex *lx, struct ha_reply *r)
{
    struct ha_setvar sv;
    struct ha_session_var *vals = NULL;
    bool *dflt = NULL, any_module = false;
    char err[512], info[HA_VTAB_INFO_MAX] = "";
    int rc = -1;

    if (ha_setvar_parse_lexed(lx, &sv, err, sizeof(err)) != 0) {
        ha_reply_err(r, 1064, "42000", "%s", err);
        goto out;
    }
    vals = calloc(sv.n ? sv.n : 1, sizeof(*vals));
    dflt = calloc(sv.n ? sv.n : 1, sizeof(*dflt));
    if (vals == NULL || dflt == NULL) {
        ha_reply_err(r, 1105, "HY000", "out of memory");
        goto out;
    }
    for (size_t k = 0; k < sv.n; k++) {
        const struct ha_set_item *it = &sv.items[k];
        if (eval_value(s, it, &vals[k], r) != 0)
            goto out;
        dflt[k] = it->kind == HA_SET_DEFAULT;
        if (it->is_module)
            any_module = true;
        else if (it->scope != HA_SET_USER &&
                 check_mysql_var(it, &vals[k], dflt[k], &s->shared->limits,
                                 r) != 0)
            goto out;
    }
    if (any_module &&
        set_module_vars(s, &sv, vals, dflt, r, info, sizeof(info)) != 0)
        goto out;
    for (size_t k = 0; k < sv.n; k++) {
        const struct ha_set_item *it = &sv.items[k];
        bool b = true;
        if (it->is_module)
            continue;
        if (it->scope == HA_SET_USER) {
            if (var_set(&s->user_vars, &s->n_user_vars, it->name,
                        &vals[k]) != 0)
                goto oom;
        } else if (ha_str_ieq(it->name, "autocommit")) {
            if (!dflt[k])
                parse_bool(&vals[k], &b);
            s->autocommit = b; /* reported, never acted on */
        } else if (dflt[k]) {
            var_unset(s->vars, &s->n_vars, it->name);
        } else if (var_set(&s->vars, &s->n_vars, it->name, &vals[k]) !=
                   0) {
            goto oom;
        }
    }
    r->status = ha_session_status(s);
    ha_reply_ok(r, 0, 0, info[0] ? info : NULL);
    rc = 0;
    goto out;
oom:
    ha_reply_err(r, 1105, "HY000", "out of memory");
out:
    if (vals != NULL)
        for (size_t k = 0; k < sv.n; k++)
            free(vals[k].sval);
    free(vals);
    free(dflt);
    ha_setvar_free(&sv);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Statements                                                           */
/* ------------------------------------------------------------------ */

int
ha_session_kill(struct ha_session *s, uint32_t id, bool query_only,
                int *code, char *err, size_t errlen)
{
    if (s->shared->clients == NULL) {
        /* No registry (tests): only this session is known. */
        if (id != s->id) {
            *code = 1094;
            ha_err_set(err, errlen, "Unknown thread id: %u", id);
            return -1;
        }
        s->killed = s->killed || query_only;
        return 0;
    }
    return ha_clients_kill(s->shared->clients, id, query_only, s->role,
                           s->user, code, err, errlen);
}

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

/* SAVE/LOAD: parsed from the statement's tokens, run by admin/persist.c
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
    ctx.datadir = s->shared->vtab != NULL ? s->shared->vtab->datadir : NULL;
    ctx.cfg = s->shared->config;
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
        ret = exec_set(s, lx, r);
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
    s->authz.in_show = dr.kind == HA_STMT_SHOW;
    s->authz.ctes = (const char(*)[HA_AUTHZ_CTE_NAME])s->ctes;
    s->authz.n_ctes =
        ha_dialect_cte_names(lx, 0, lx->n, s->ctes, HA_AUTHZ_MAX_CTES);
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
    r->status = ha_session_status(s);
    r->info_from = s->vtab;
    r->timeout_ms = ha_session_arm_deadline(s);
    rc = ha_reply_stmt(r, s->db, stmt, NULL);
    ha_session_disarm_deadline(s);
    r->timeout_ms = 0;
    {
        /* A failed statement must not leave its message for the next. */
        char sink[1];
        ha_vtab_take_info(s->vtab, sink, sizeof(sink));
    }
    ret = rc == SQLITE_DONE ? 0 : -1;
out:
    s->authz.in_show = false;
    s->authz.n_ctes = 0;
    if (s->shared->clients != NULL)
        s->shared->clients->questions++;
    r->status = ha_session_status(s);
    ha_stmtcache_done(&s->cache, stmt);
    ha_buf_free(&text);
    return ret;
}

void
ha_session_query(struct ha_session *s, const char *sql, size_t len,
                 struct ha_reply *r)
{
    struct ha_dialect_span *spans = NULL;
    struct ha_lex lx;
    size_t n = 0;
    char err[256];
    int lexed;

    ha_session_set_command(s, "Query", sql, len);
    r->authz = &s->authz;
    r->shutdown = s->shared->shutdown;
    r->killed = &s->killed;
    r->status = ha_session_status(s);
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
ha_session_special(struct ha_session *s, const char *sql, size_t len,
                   struct ha_reply *r)
{
    struct ha_lex lx;
    char err[256];
    int rc;

    r->authz = &s->authz;
    r->shutdown = s->shared->shutdown;
    r->killed = &s->killed;
    if (ha_lex_run(&lx, sql, len, err, sizeof(err)) != 0) {
        ha_lex_free(&lx);
        s->more_results = false;
        ha_reply_err(r, 1064, "42000", "You have an error in your SQL "
                     "syntax: %s", err);
        return 1;
    }
    rc = ha_session_special_lexed(s, &lx, r);
    ha_lex_free(&lx);
    return rc;
}

int
ha_session_special_lexed(struct ha_session *s, const struct ha_lex *lx,
                         struct ha_reply *r)
{
    struct ha_buf text = HA_BUF_INIT;
    struct ha_dialect_result dr;
    char err[256];
    int rc;

    r->authz = &s->authz;
    r->shutdown = s->shared->shutdown;
    r->killed = &s->killed;
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
ha_session_field_list(struct ha_session *s, const char *table,
                      const char *wildcard, struct ha_reply *r)
{
    const char *schema = s->schema[0] != '\0' ? s->schema : "main";
    sqlite3_stmt *st = NULL;

    r->authz = &s->authz;
    r->shutdown = s->shared->shutdown;
    r->killed = &s->killed;
    r->status = ha_session_status(s);
    if (!table_exists(s->db, schema, table)) {
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
    sqlite3_bind_text(st, 3, table_schema(table), -1, SQLITE_STATIC);
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
