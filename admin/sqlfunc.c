/* SPDX-License-Identifier: MIT
 *
 * The MySQL functions SQLite lacks, registered on every session's
 * connection (see sqlfunc.h): the values of @@x and @x as the dialect
 * rewrites them, SHOW STATUS counters and SHOW PROMETHEUS METRICS, the
 * table and schema checks and CREATE TABLE text behind SHOW, and the
 * MySQL built-ins clients call (VERSION(), DATABASE(), USER(), CONCAT(),
 * IF(), NOW(), ...). Each reads its session through sqlite3_user_data.
 */
#include "admin/sqlfunc.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "admin/schemas.h"
#include "admin/sysvar.h"
#include "admin/vars.h"
#include "core/forkguard.h"
#include "engine/hostmetrics.h"
#include "core/buf.h"
#include "core/util.h"
#include "engine/clients.h"
#include "engine/metrics.h"

/* ------------------------------------------------------------------ */
/* @@x and @x                                                         */
/* ------------------------------------------------------------------ */

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
    o = ha_vars_find(s->vars, s->n_vars, name);
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
    o = name ? ha_vars_find(s->user_vars, s->n_user_vars, name) : NULL;
    if (o == NULL)
        sqlite3_result_null(ctx);
    else
        result_var(ctx, o->type, o->ival, o->sval);
}

/* ------------------------------------------------------------------ */
/* MySQL's built-ins                                                  */
/* ------------------------------------------------------------------ */

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
    /* The time-zone lock (core/forkguard.h): never held at a fork. */
    ha_forkguard_enter();
    localtime_r(&t, &tm);
    ha_forkguard_leave();
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
    sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

/* ------------------------------------------------------------------ */
/* What SHOW reads                                                    */
/* ------------------------------------------------------------------ */

/* ha_prometheus_metrics(): SHOW PROMETHEUS METRICS' text. */
static void
fn_prometheus_metrics(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct ha_session *s = sqlite3_user_data(ctx);
    struct ha_admin_counters c;
    struct ha_buf out = HA_BUF_INIT;

    (void)argc;
    (void)argv;
    ha_admin_counters_of(s->shared->clients,
                         s->shared->config != NULL &&
                             s->shared->config->n_http > 0,
                         &c);
    if (ha_admin_metrics(s->shared->vtab != NULL ? s->shared->vtab->heap : NULL, &c, HA_EXPO_PROMETHEUS, &out) !=
        0) {
        ha_buf_free(&out);
        sqlite3_result_error_nomem(ctx);
        return;
    }
    /* A host gateway answers what its /metrics serves: its own and every
     * agent's, merged (engine/hostmetrics.h), asked off the loop. */
    if (s->shared->engine != NULL &&
        ha_engine_hostmetrics(s->shared->engine) != NULL) {
        struct ha_buf merged = HA_BUF_INIT;
        char err[512];

        if (ha_hostmetrics_collect(ha_engine_hostmetrics(s->shared->engine),
                                   ha_engine_datadir(s->shared->engine),
                                   (const char *)out.data, out.len,
                                   (long)getpid(),
                                   ha_engine_program(s->shared->engine),
                                   HA_EXPO_PROMETHEUS, 3000, &merged, err,
                                   sizeof(err)) != 0) {
            ha_buf_free(&merged);
            ha_buf_free(&out);
            sqlite3_result_error(ctx, err, -1);
            return;
        }
        ha_buf_free(&out);
        out = merged;
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

/* ha_table_check(db, t): t, or the error "no such table: db.t" (which the
 * reply maps to ERR 1146). */
static void
fn_table_check(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *db = (const char *)sqlite3_value_text(argv[0]);
    const char *t = (const char *)sqlite3_value_text(argv[1]);

    (void)argc;
    if (db == NULL || t == NULL ||
        !ha_schemas_table_exists(sqlite3_context_db_handle(ctx), db, t)) {
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
    if (db == NULL || !ha_schemas_exists(db)) {
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
        sqlite3_bind_text(st, 2, ha_schemas_table_home(t), -1, SQLITE_STATIC);
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

/* ------------------------------------------------------------------ */
/* Registration                                                       */
/* ------------------------------------------------------------------ */

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

int
ha_sqlfunc_register(sqlite3 *db, struct ha_session *s, char *err,
                    size_t errlen)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(functions); i++) {
        int flags = SQLITE_UTF8 | SQLITE_INNOCUOUS;
        int rc;

        if (functions[i].deterministic)
            flags |= SQLITE_DETERMINISTIC;
        rc = sqlite3_create_function(db, functions[i].name,
                                     functions[i].nargs, flags, s,
                                     functions[i].fn, NULL, NULL);
        if (rc != SQLITE_OK) {
            ha_err_set(err, errlen, "cannot register %s(): %s",
                       functions[i].name, sqlite3_errmsg(db));
            return -1;
        }
    }
    return 0;
}
