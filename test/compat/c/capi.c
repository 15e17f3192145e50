/* SPDX-License-Identifier: MIT */
/*
 * libmariadb C API client for test/compat/capi.sh: mysql_real_connect,
 * text queries (mysql_query/mysql_store_result), then mysql_stmt_*
 * prepared statements with MYSQL_TYPE_LONGLONG, DOUBLE, STRING and NULL
 * parameters, binary results bound to typed buffers, and re-execution of
 * a statement with new values but no new mysql_stmt_bind_param (so the
 * client sends new_params_bind_flag=0). Prints the "key<TAB>value" lines
 * described in test/compat/compat.sh, plus ps_long_data: a parameter sent
 * in two COM_STMT_SEND_LONG_DATA chunks, then, after mysql_stmt_reset
 * (COM_STMT_RESET), the same statement with an ordinary value:
 * "<first>|<second>". Built by capi.sh with pkg-config libmariadb.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

static MYSQL *db;

static void
out(const char *key, const char *fmt, ...)
{
    va_list ap;

    printf("%s\t", key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static void
out_db_error(const char *key, int err_only)
{
    out(key, "%s%u\t%s\t%s", err_only ? "" : "ERROR ", mysql_errno(db),
        mysql_sqlstate(db), mysql_error(db));
}

static void
out_stmt_error(const char *key, MYSQL_STMT *stmt, int err_only)
{
    out(key, "%s%u\t%s\t%s", err_only ? "" : "ERROR ", mysql_stmt_errno(stmt),
        mysql_stmt_sqlstate(stmt), mysql_stmt_error(stmt));
}

static int
is_count(const char *s)
{
    char *end;

    if (s == NULL || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    (void)strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}

/* One text query whose first row's first column is printed under key. */
static void
text_value(const char *key, const char *sql)
{
    MYSQL_RES *res;
    MYSQL_ROW row;

    if (mysql_query(db, sql) != 0 || (res = mysql_store_result(db)) == NULL) {
        out_db_error(key, 0);
        return;
    }
    row = mysql_fetch_row(res);
    if (row == NULL)
        out(key, "(no row)");
    else
        out(key, "%s", row[0] ? row[0] : "NULL");
    mysql_free_result(res);
}

static void
text_steps(void)
{
    MYSQL_RES *res;
    MYSQL_ROW row;
    char allocated[64] = "(no row)";
    unsigned long n = 0, bad = 0;
    const char *value;
    unsigned i;

    if (mysql_query(db, "SELECT * FROM stats_memory_jemalloc") != 0 ||
        (res = mysql_store_result(db)) == NULL) {
        out_db_error("stats_allocated", 0);
    } else {
        MYSQL_FIELD *f = mysql_fetch_fields(res);
        char cols[256] = "";

        for (i = 0; i < mysql_num_fields(res); i++) {
            if (i > 0)
                strncat(cols, ",", sizeof(cols) - strlen(cols) - 1);
            strncat(cols, f[i].name, sizeof(cols) - strlen(cols) - 1);
        }
        out("stats_columns", "%s", cols);
        while ((row = mysql_fetch_row(res)) != NULL) {
            n++;
            if (mysql_num_fields(res) < 2 || !is_count(row[1])) {
                bad++;
                continue;
            }
            /* The C API is text: also check the declared type is integral. */
            if (!IS_NUM(f[1].type) || f[1].type == MYSQL_TYPE_DOUBLE ||
                f[1].type == MYSQL_TYPE_FLOAT)
                bad++;
            if (row[0] != NULL && strcmp(row[0], "allocated") == 0)
                snprintf(allocated, sizeof(allocated), "%s", row[1]);
        }
        out("stats_rows", "%lu", n);
        out("stats_nonnumeric", "%lu", bad);
        out("stats_allocated", "%s", allocated);
        mysql_free_result(res);
    }

    for (i = 0; i < 2; i++) {
        const char *v = i == 0 ? "true" : "false";
        char sql[256], key[64];

        snprintf(sql, sizeof(sql),
                 "UPDATE global_variables SET variable_value = '%s' "
                 "WHERE variable_name = 'jemalloc-prof_active'", v);
        snprintf(key, sizeof(key), "update_%s", v);
        if (mysql_query(db, sql) != 0)
            out_db_error(key, 0);
        else
            out(key, "%" PRIu64, (uint64_t)mysql_affected_rows(db));
        snprintf(key, sizeof(key), "prof_active_%s", v);
        text_value(key, "SELECT variable_value FROM global_variables "
                        "WHERE variable_name = 'jemalloc-prof_active'");
    }

    if (mysql_query(db, "SELECT * FROM no_such_table") != 0) {
        out_db_error("error", 1);
    } else {
        res = mysql_store_result(db);
        if (res != NULL)
            mysql_free_result(res);
        out("error", "no error");
    }
    text_value("after_error", "SELECT 1");

    /* The C API has no client-side parameters: the application escapes. */
    {
        const char *s = "it's \\ \xc3\xbc";
        char esc[64], sql[256];

        mysql_real_escape_string(db, esc, s, strlen(s));
        snprintf(sql, sizeof(sql), "SELECT 42, 2.5, '%s', NULL", esc);
        if (mysql_query(db, sql) != 0 || (res = mysql_store_result(db)) == NULL) {
            out_db_error("param_echo", 0);
        } else if ((row = mysql_fetch_row(res)) == NULL ||
                   mysql_num_fields(res) != 4) {
            out("param_echo", "(no row)");
            mysql_free_result(res);
        } else {
            out("param_echo", "%s|%s|%s|%s", row[0] ? row[0] : "NULL",
                row[1] ? row[1] : "NULL", row[2] ? row[2] : "NULL",
                row[3] ? row[3] : "NULL");
            mysql_free_result(res);
        }
    }
    {
        char a[64] = "", b[64] = "";

        value = NULL;
        if (mysql_query(db, "SELECT variable_value FROM stats_memory_jemalloc "
                            "WHERE variable_name = 'allocated'") == 0 &&
            (res = mysql_store_result(db)) != NULL) {
            if ((row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
                snprintf(a, sizeof(a), "%s", row[0]);
            mysql_free_result(res);
            if (mysql_query(db, "SELECT variable_value FROM stats_memory_jemalloc "
                                "WHERE variable_name = 'narenas'") == 0 &&
                (res = mysql_store_result(db)) != NULL) {
                if ((row = mysql_fetch_row(res)) != NULL && row[0] != NULL)
                    snprintf(b, sizeof(b), "%s", row[0]);
                mysql_free_result(res);
                value = "";
            }
        }
        if (value == NULL)
            out_db_error("param_point", 0);
        else
            out("param_point", "%s|%s", a, b);
    }
}

/* ------------------------------------------------------------------------
 * Prepared statements
 * ---------------------------------------------------------------------- */

static MYSQL_STMT *
prepare(const char *key, const char *sql)
{
    MYSQL_STMT *stmt = mysql_stmt_init(db);

    if (stmt == NULL) {
        out_db_error(key, 0);
        return NULL;
    }
    if (mysql_stmt_prepare(stmt, sql, strlen(sql)) != 0) {
        out_stmt_error(key, stmt, 0);
        mysql_stmt_close(stmt);
        return NULL;
    }
    return stmt;
}

/* Executes stmt (params already bound) and fetches its single row of one
 * string column into buf; -1 (error printed under key) on failure. */
static int
exec_fetch_string(const char *key, MYSQL_STMT *stmt, char *buf, size_t size)
{
    MYSQL_BIND res;
    unsigned long len = 0;
    my_bool is_null = 0;
    int rc;

    if (mysql_stmt_execute(stmt) != 0) {
        out_stmt_error(key, stmt, 0);
        return -1;
    }
    memset(&res, 0, sizeof(res));
    res.buffer_type = MYSQL_TYPE_STRING;
    res.buffer = buf;
    res.buffer_length = size - 1;
    res.length = &len;
    res.is_null = &is_null;
    if (mysql_stmt_bind_result(stmt, &res) != 0 ||
        mysql_stmt_store_result(stmt) != 0) {
        out_stmt_error(key, stmt, 0);
        return -1;
    }
    rc = mysql_stmt_fetch(stmt);
    if (rc != 0 && rc != MYSQL_DATA_TRUNCATED) {
        if (rc == MYSQL_NO_DATA)
            out(key, "(no row)");
        else
            out_stmt_error(key, stmt, 0);
        mysql_stmt_free_result(stmt);
        return -1;
    }
    buf[is_null ? 0 : (len < size ? len : size - 1)] = '\0';
    if (is_null)
        snprintf(buf, size, "NULL");
    mysql_stmt_free_result(stmt);
    return 0;
}

static void
ps_echo(void)
{
    MYSQL_STMT *stmt = prepare("ps_echo", "SELECT ?, ?, ?, ?");
    MYSQL_BIND p[4], r[4];
    long long i = 42, ri = 0;
    double d = 2.5, rd = 0;
    char s[32] = "it's \\ \xc3\xbc", rs[64];
    unsigned long slen = strlen(s), rslen = 0, rnlen = 0;
    my_bool is_null = 1, rnull[4] = {0, 0, 0, 0};
    char rn[8];
    int rc;

    if (stmt == NULL)
        return;
    if (mysql_stmt_param_count(stmt) != 4 || mysql_stmt_field_count(stmt) != 4) {
        out("ps_echo", "prepare reports %lu params and %u columns, not 4 and 4",
            mysql_stmt_param_count(stmt), mysql_stmt_field_count(stmt));
        goto done;
    }
    memset(p, 0, sizeof(p));
    p[0].buffer_type = MYSQL_TYPE_LONGLONG;
    p[0].buffer = &i;
    p[1].buffer_type = MYSQL_TYPE_DOUBLE;
    p[1].buffer = &d;
    p[2].buffer_type = MYSQL_TYPE_STRING;
    p[2].buffer = s;
    p[2].buffer_length = sizeof(s);
    p[2].length = &slen;
    p[3].buffer_type = MYSQL_TYPE_NULL;
    p[3].is_null = &is_null;
    if (mysql_stmt_bind_param(stmt, p) != 0 || mysql_stmt_execute(stmt) != 0) {
        out_stmt_error("ps_echo", stmt, 0);
        goto done;
    }
    /* Typed result buffers: the server converts per declared type. */
    memset(r, 0, sizeof(r));
    r[0].buffer_type = MYSQL_TYPE_LONGLONG;
    r[0].buffer = &ri;
    r[0].is_null = &rnull[0];
    r[1].buffer_type = MYSQL_TYPE_DOUBLE;
    r[1].buffer = &rd;
    r[1].is_null = &rnull[1];
    r[2].buffer_type = MYSQL_TYPE_STRING;
    r[2].buffer = rs;
    r[2].buffer_length = sizeof(rs) - 1;
    r[2].length = &rslen;
    r[2].is_null = &rnull[2];
    r[3].buffer_type = MYSQL_TYPE_STRING;
    r[3].buffer = rn;
    r[3].buffer_length = sizeof(rn) - 1;
    r[3].length = &rnlen;
    r[3].is_null = &rnull[3];
    if (mysql_stmt_bind_result(stmt, r) != 0 ||
        mysql_stmt_store_result(stmt) != 0) {
        out_stmt_error("ps_echo", stmt, 0);
        goto done;
    }
    rc = mysql_stmt_fetch(stmt);
    if (rc != 0) {
        if (rc == MYSQL_NO_DATA)
            out("ps_echo", "(no row)");
        else if (rc == MYSQL_DATA_TRUNCATED)
            out("ps_echo", "(data truncated)");
        else
            out_stmt_error("ps_echo", stmt, 0);
        goto done;
    }
    rs[rslen < sizeof(rs) ? rslen : sizeof(rs) - 1] = '\0';
    rn[rnlen < sizeof(rn) ? rnlen : sizeof(rn) - 1] = '\0';
    out("ps_echo", "%s%lld|%s%g|%s|%s", rnull[0] ? "NULL:" : "", ri,
        rnull[1] ? "NULL:" : "", rd, rnull[2] ? "NULL" : rs,
        rnull[3] ? "NULL" : rn);
done:
    mysql_stmt_close(stmt);
}

static void
ps_point(void)
{
    MYSQL_STMT *stmt = prepare("ps_point", "SELECT variable_value FROM "
                               "stats_memory_jemalloc WHERE variable_name = ?");
    MYSQL_BIND p;
    char name[32] = "allocated", a[64], b[64];
    unsigned long len = strlen(name);

    if (stmt == NULL)
        return;
    memset(&p, 0, sizeof(p));
    p.buffer_type = MYSQL_TYPE_STRING;
    p.buffer = name;
    p.buffer_length = sizeof(name);
    p.length = &len;
    if (mysql_stmt_bind_param(stmt, &p) != 0) {
        out_stmt_error("ps_point", stmt, 0);
        goto done;
    }
    if (exec_fetch_string("ps_point", stmt, a, sizeof(a)) != 0)
        goto done;
    /* New value in the bound buffer, no new bind: new_params_bind_flag=0. */
    snprintf(name, sizeof(name), "narenas");
    len = strlen(name);
    if (exec_fetch_string("ps_point", stmt, b, sizeof(b)) != 0)
        goto done;
    out("ps_point", "%s|%s", a, b);
done:
    mysql_stmt_close(stmt);
}

static void
ps_update(void)
{
    MYSQL_STMT *upd = prepare("ps_update", "UPDATE global_variables SET "
                              "variable_value = ? WHERE variable_name = ?");
    MYSQL_STMT *sel = NULL;
    MYSQL_BIND p[2], q;
    char value[16] = "true", name[] = "jemalloc-prof_active", r1[32], r2[32];
    unsigned long vlen = strlen(value), nlen = strlen(name);
    uint64_t n1, n2;

    if (upd == NULL)
        return;
    sel = prepare("ps_update", "SELECT variable_value FROM global_variables "
                  "WHERE variable_name = ?");
    if (sel == NULL)
        goto done;
    memset(p, 0, sizeof(p));
    p[0].buffer_type = MYSQL_TYPE_STRING;
    p[0].buffer = value;
    p[0].buffer_length = sizeof(value);
    p[0].length = &vlen;
    p[1].buffer_type = MYSQL_TYPE_STRING;
    p[1].buffer = name;
    p[1].buffer_length = sizeof(name);
    p[1].length = &nlen;
    q = p[1];
    if (mysql_stmt_bind_param(upd, p) != 0 || mysql_stmt_bind_param(sel, &q) != 0 ||
        mysql_stmt_execute(upd) != 0) {
        out_stmt_error("ps_update", mysql_stmt_errno(upd) ? upd : sel, 0);
        goto done;
    }
    n1 = mysql_stmt_affected_rows(upd);
    if (exec_fetch_string("ps_update", sel, r1, sizeof(r1)) != 0)
        goto done;
    snprintf(value, sizeof(value), "false");
    vlen = strlen(value);
    if (mysql_stmt_execute(upd) != 0) {
        out_stmt_error("ps_update", upd, 0);
        goto done;
    }
    n2 = mysql_stmt_affected_rows(upd);
    if (exec_fetch_string("ps_update", sel, r2, sizeof(r2)) != 0)
        goto done;
    out("ps_update", "%" PRIu64 "|%s|%" PRIu64 "|%s", n1, r1, n2, r2);
done:
    if (sel != NULL)
        mysql_stmt_close(sel);
    mysql_stmt_close(upd);
}

static void
ps_long_data(void)
{
    MYSQL_STMT *stmt = prepare("ps_long_data", "SELECT ?");
    MYSQL_BIND p;
    char value[16] = "", first[64], second[64];
    unsigned long len = 0;

    if (stmt == NULL)
        return;
    memset(&p, 0, sizeof(p));
    p.buffer_type = MYSQL_TYPE_STRING;
    p.buffer = value;
    p.buffer_length = sizeof(value);
    p.length = &len;
    if (mysql_stmt_bind_param(stmt, &p) != 0 ||
        mysql_stmt_send_long_data(stmt, 0, "heap", 4) != 0 ||
        mysql_stmt_send_long_data(stmt, 0, "admin", 5) != 0) {
        out_stmt_error("ps_long_data", stmt, 0);
        goto done;
    }
    if (exec_fetch_string("ps_long_data", stmt, first, sizeof(first)) != 0)
        goto done;
    /* COM_STMT_RESET drops any long data; the bound buffer is used again. */
    if (mysql_stmt_reset(stmt) != 0) {
        out_stmt_error("ps_long_data", stmt, 0);
        goto done;
    }
    snprintf(value, sizeof(value), "plain");
    len = strlen(value);
    if (exec_fetch_string("ps_long_data", stmt, second, sizeof(second)) != 0)
        goto done;
    out("ps_long_data", "%s|%s", first, second);
done:
    mysql_stmt_close(stmt);
}

static void
ps_error(void)
{
    MYSQL_STMT *stmt = mysql_stmt_init(db);
    const char *sql = "SELECT * FROM no_such_table";

    if (stmt == NULL) {
        out_db_error("ps_error", 0);
        return;
    }
    if (mysql_stmt_prepare(stmt, sql, strlen(sql)) != 0)
        out_stmt_error("ps_error", stmt, 1);
    else
        out("ps_error", "no error");
    mysql_stmt_close(stmt);
}

int
main(void)
{
    const char *host = getenv("HC_HOST"), *port = getenv("HC_PORT");
    unsigned int timeout = 10, rw_timeout = 20;

    if (host == NULL || port == NULL) {
        fprintf(stderr, "capi: set HC_HOST, HC_PORT, HC_USER, HC_PASS, HC_DB\n");
        return 2;
    }
    db = mysql_init(NULL);
    if (db == NULL)
        return 1;
    mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(db, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
    mysql_options(db, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
    mysql_options(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (mysql_real_connect(db, host, getenv("HC_USER"), getenv("HC_PASS"),
                           getenv("HC_DB"), (unsigned)atoi(port), NULL, 0) == NULL) {
        out_db_error("connect", 0);
        out("done", "ok");
        mysql_close(db);
        return 0;
    }
    out("connect", "ok");
    text_steps();
    ps_echo();
    ps_point();
    ps_update();
    ps_long_data();
    ps_error();
    mysql_close(db);
    out("done", "ok");
    return 0;
}
