/* SPDX-License-Identifier: MIT
 *
 * The session authorizer (engine/authorizer.c): an admin session and a
 * stats session on one memdb database with the fake jemalloc, statements
 * in through ha_exec_query, and the reply reduced to "OK", "ROWS:<first
 * value>" or "ERR <code> <message>". Every class of refusal is checked
 * with its exact text, every compatibility query a stats user needs is
 * checked to pass, and the pure decision function covers what the
 * system SQLite cannot even compile (readfile(), fsdir).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/authorizer.h"
#include "check_main.h"
#include "session_fixture.h"
#include "test/support/replies.h"
#include "admin/proto.h"
#include "admin/query.h"
#include "admin/exec.h"
#include "admin/session.h"
#include "core/util.h"
#include "vtab/vtab.h"

/* ------------------------------------------------------------------ *
 * Fixture: session 1 (admin), session 2 (stats)
 * ------------------------------------------------------------------ */

static struct sf_fixture fx;
static struct ha_session admin, stats;

#define CAPS (HA_CLIENT_PROTOCOL_41 | HA_CLIENT_MULTI_RESULTS | \
              HA_CLIENT_DEPRECATE_EOF)

static void
setup(void)
{
    sf_setup(&fx, "check-authorizer", "admin:secret1", "stats:secret2");
    ck_assert_int_eq(sqlite3_exec(fx.keeper, "CREATE TABLE t(a)", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    sf_open(&fx, &admin, 1, "admin", HA_ROLE_ADMIN);
    sf_open(&fx, &stats, 2, "stats", HA_ROLE_STATS);
}

static void
teardown(void)
{
    ha_session_close(&stats);
    ha_session_close(&admin);
    sf_teardown(&fx);
}

/* ------------------------------------------------------------------ *
 * Running a statement
 * ------------------------------------------------------------------ */

static char result[2048];

/* Runs sql on s and reduces the reply into result: "OK", "ERR <code>
 * <SQLSTATE> <message>", or "ROWS:" and the first row's first value
 * (NULL as NULL; nothing when there is no row). */
static const char *
run(struct ha_session *s, const char *sql)
{
    static struct rp_pkts k;
    struct ha_buf out = HA_BUF_INIT;
    struct rp_result res;
    struct ha_reply r;
    size_t i = 0;
    char why[128];

    ha_reply_init(&r, &out, 1, CAPS, ha_session_status(s));
    ha_exec_query(s, sql, strlen(sql), &r);
    ha_reply_free(&r);
    ck_assert_msg(rp_split(out.data, out.len, 1, &k, why, sizeof(why)) == 0,
                  "%s: %s", sql, why);
    ck_assert_msg(rp_result(&k, &i, true, &res) == 0, "%s: malformed reply",
                  sql);
    if (res.kind == RP_OK) {
        snprintf(result, sizeof(result), "OK");
    } else if (res.kind == RP_ERR) {
        snprintf(result, sizeof(result), "ERR %u %.5s %.*s", res.code,
                 res.sqlstate, (int)res.msg_len, (const char *)res.msg);
    } else if (res.n_rows == 0) {
        snprintf(result, sizeof(result), "ROWS:");
    } else {
        const uint8_t *v;
        size_t sl;
        int got = rp_value(&k, &res, 0, 0, &v, &sl);

        ck_assert_int_ge(got, 0);
        if (got == 0)
            snprintf(result, sizeof(result), "ROWS:NULL");
        else
            snprintf(result, sizeof(result), "ROWS:%.*s", (int)sl,
                     (const char *)v);
    }
    ha_buf_free(&out);
    return result;
}

/* ------------------------------------------------------------------ *
 * Stats users: refusals
 * ------------------------------------------------------------------ */

#define DENIED(cmd, table)                                              \
    "ERR 1142 42000 " cmd " command denied to user 'stats'@'127.0.0.1' " \
    "for table '" table "'"
#define SUPER                                                       \
    "ERR 1227 42000 Access denied; you need (at least one of) the " \
    "SUPER privilege(s) for this operation"
#define NO_ATTACH                                                         \
    "ERR 1227 42000 Access denied; ATTACH, DETACH and VACUUM INTO are not " \
    "allowed: SQL on the admin interface cannot touch files"
#define NO_PRAGMA(p)                                                   \
    "ERR 1227 42000 Access denied; PRAGMA " p " is not allowed: only " \
    "read-only introspection pragmas are (table_info, index_list, ...)"
#define NO_LOAD                                                          \
    "ERR 1227 42000 Access denied; function load_extension() is not "    \
    "allowed: SQL on the admin interface cannot touch files or the process"

static const struct {
    const char *sql;
    const char *want;
} stats_refused[] = {
    {"UPDATE global_variables SET variable_value = 'true' WHERE "
     "variable_name = 'jemalloc-prof_active'",
     DENIED("UPDATE", "global_variables")},
    {"SET jemalloc-prof_active = 'true'",
     DENIED("UPDATE", "global_variables")},
    {"SET admin-mysql_ifaces = '0.0.0.0:6032'",
     DENIED("UPDATE", "global_variables")},
    {"UPDATE global_variables SET variable_value = 1 WHERE variable_name = "
     "'jemalloc-dump_now'",
     DENIED("UPDATE", "global_variables")},
    {"INSERT INTO t VALUES (1)", DENIED("INSERT", "t")},
    {"REPLACE INTO t VALUES (1)", DENIED("INSERT", "t")},
    {"DELETE FROM t", DENIED("DELETE", "t")},
    {"DELETE FROM global_variables", DENIED("DELETE", "global_variables")},
    {"SELECT * FROM t", DENIED("SELECT", "t")},
    {"SELECT count(*) FROM main.t", DENIED("SELECT", "t")},
    {"SELECT * FROM stats_memory_metrics, t", DENIED("SELECT", "t")},
    /* A CTE's name lets only the CTE through, not a table of that name. */
    {"WITH c AS (SELECT 1) SELECT * FROM t", DENIED("SELECT", "t")},
    {"WITH t AS (SELECT 1) SELECT a FROM main.t", DENIED("SELECT", "t")},
    /* The schema table holds what admins created. */
    {"SELECT sql FROM sqlite_master", DENIED("SELECT", "sqlite_master")},
    {"SELECT name FROM main.sqlite_schema", DENIED("SELECT", "sqlite_master")},
    {"SELECT * FROM sqlite_temp_master",
     DENIED("SELECT", "sqlite_temp_master")},
    {"SHOW TABLES WHERE (SELECT sql FROM sqlite_master) IS NOT NULL",
     "ROWS:"},
    {"CREATE TABLE u(a)", DENIED("CREATE", "u")},
    {"CREATE TEMP TABLE u(a)", DENIED("CREATE", "u")},
    {"CREATE VIEW v AS SELECT 1", DENIED("CREATE", "v")},
    {"CREATE INDEX i ON t(a)", DENIED("INDEX", "t")},
    {"CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END",
     DENIED("TRIGGER", "t")},
    {"DROP TABLE t", DENIED("DROP", "t")},
    {"ALTER TABLE t ADD COLUMN b", DENIED("ALTER", "t")},
    {"ANALYZE", SUPER},
    {"PRAGMA table_list", SUPER},
    {"PRAGMA database_list", SUPER},
    {"PRAGMA writable_schema = 1", NO_PRAGMA("writable_schema")},
    {"PRAGMA temp_store_directory = '/tmp'",
     NO_PRAGMA("temp_store_directory")},
    {"PRAGMA query_only = 0", NO_PRAGMA("query_only")},
    {"ATTACH ':memory:' AS x", NO_ATTACH},
    {"VACUUM INTO '/tmp/check-authorizer-vacuum.db'", NO_ATTACH},
    {"SELECT load_extension('/tmp/x.so')", NO_LOAD},
};

START_TEST(test_authorizer_stats_refused)
{
    ck_assert_msg(strcmp(run(&stats, stats_refused[_i].sql),
                         stats_refused[_i].want) == 0,
                  "%d: %s\n  got  %s\n  want %s", _i, stats_refused[_i].sql,
                  result, stats_refused[_i].want);
}
END_TEST

/* Nothing a stats user sent changed anything. */
START_TEST(test_authorizer_stats_changes_nothing)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(stats_refused); i++)
        run(&stats, stats_refused[i].sql);
    ck_assert_str_eq(run(&admin, "SELECT count(*) FROM t"), "ROWS:0");
    ck_assert_str_eq(run(&admin, "SELECT variable_value FROM "
                                 "global_variables WHERE variable_name = "
                                 "'jemalloc-prof_active'"),
                     "ROWS:false");
    ck_assert_str_eq(run(&admin, "SELECT count(*) FROM sqlite_schema"),
                     "ROWS:1");
    ck_assert_int_ne(access("/tmp/check-authorizer-vacuum.db", F_OK), 0);
}
END_TEST

/* ------------------------------------------------------------------ *
 * Stats users: what works
 * ------------------------------------------------------------------ */

static const char *const stats_allowed[] = {
    "SELECT * FROM stats_memory_jemalloc",
    "SELECT * FROM stats_memory_metrics",
    "SELECT * FROM stats.stats_memory_metrics",
    "SELECT count(*) FROM stats_admin_sessions",
    "SELECT variable_name FROM global_variables",
    "SHOW DATABASES",
    "SHOW TABLES",
    "SHOW FULL TABLES FROM stats",
    "SHOW TABLES FROM main",
    /* Common table expressions, by any name. */
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE "
    "x < 3) SELECT count(*) FROM c",
    "WITH a AS (SELECT 1 AS v), b(w) AS MATERIALIZED (SELECT v FROM a) "
    "SELECT * FROM b",
    "SELECT (WITH n AS (SELECT 2) SELECT * FROM n)",
    "SHOW TABLE STATUS FROM main",
    "SHOW TABLE STATUS",
    "SHOW VARIABLES",
    "SHOW GLOBAL VARIABLES LIKE 'jemalloc%'",
    "SHOW VARIABLES LIKE 'version%'",
    "SHOW STATUS",
    "SHOW GLOBAL STATUS LIKE 'Uptime'",
    "SHOW PROCESSLIST",
    "SHOW FULL PROCESSLIST",
    "SHOW COLUMNS FROM stats_memory_metrics",
    "SHOW CREATE TABLE stats_memory_metrics",
    "SHOW INDEX FROM global_variables",
    "SELECT @@version",
    "SELECT @@version_comment LIMIT 1",
    "SELECT @@session.autocommit, @@max_allowed_packet",
    "SELECT DATABASE()",
    "SELECT USER(), CURRENT_USER(), CONNECTION_ID()",
    "SELECT 1",
    "SELECT version()",
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c "
    "WHERE n < 3) SELECT sum(n) FROM c",
    "SET NAMES utf8mb4",
    "SET autocommit = 1",
    "SET @x = 1",
    "SET SESSION sql_mode = ''",
    "USE stats",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
};

START_TEST(test_authorizer_stats_allowed)
{
    run(&stats, stats_allowed[_i]);
    ck_assert_msg(strncmp(result, "ERR", 3) != 0, "%d: %s\n  got %s", _i,
                  stats_allowed[_i], result);
}
END_TEST

/* Values of global_variables read as NULL: no credential list, not even
 * masked, and no WHERE on the value to probe them with. */
START_TEST(test_authorizer_stats_no_credentials)
{
    ck_assert_str_eq(run(&stats, "SELECT variable_value FROM "
                                 "global_variables WHERE variable_name = "
                                 "'admin-admin_credentials'"),
                     "ROWS:NULL");
    ck_assert_str_eq(run(&stats, "SELECT count(*) FROM global_variables "
                                 "WHERE variable_value LIKE '%admin%'"),
                     "ROWS:0");
    ck_assert_str_eq(run(&stats, "SELECT @@admin-stats_credentials"),
                     "ROWS:NULL");
    ck_assert_str_eq(run(&stats, "SHOW VARIABLES LIKE "
                                 "'admin-admin_credentials'"),
                     "ROWS:admin-admin_credentials");
    /* The admin sees the masked list. */
    ck_assert_str_eq(run(&admin, "SELECT @@admin-admin_credentials"),
                     "ROWS:admin:****");
}
END_TEST

/* ------------------------------------------------------------------ *
 * Admins
 * ------------------------------------------------------------------ */

static const struct {
    const char *sql;
    const char *want;
} admin_refused[] = {
    {"ATTACH '/tmp/check-authorizer-attach.db' AS x", NO_ATTACH},
    {"DETACH temp", NO_ATTACH},
    /* VACUUM attaches a temporary copy; on a memdb it has no use. */
    {"VACUUM", NO_ATTACH},
    {"VACUUM INTO '/tmp/check-authorizer-vacuum.db'", NO_ATTACH},
    {"SELECT load_extension('/tmp/x.so')", NO_LOAD},
    {"PRAGMA writable_schema = 1", NO_PRAGMA("writable_schema")},
    {"PRAGMA main.writable_schema = ON", NO_PRAGMA("writable_schema")},
    {"PRAGMA temp_store_directory = '/tmp'",
     NO_PRAGMA("temp_store_directory")},
    {"PRAGMA journal_mode = WAL", NO_PRAGMA("journal_mode")},
    {"PRAGMA temp_store = FILE", NO_PRAGMA("temp_store")},
    {"PRAGMA trusted_schema = 1", NO_PRAGMA("trusted_schema")},
    {"SELECT * FROM pragma_journal_mode", NO_PRAGMA("journal_mode")},
};

START_TEST(test_authorizer_admin_refused)
{
    ck_assert_msg(strcmp(run(&admin, admin_refused[_i].sql),
                         admin_refused[_i].want) == 0,
                  "%d: %s\n  got  %s\n  want %s", _i, admin_refused[_i].sql,
                  result, admin_refused[_i].want);
    ck_assert_int_ne(access("/tmp/check-authorizer-vacuum.db", F_OK), 0);
    ck_assert_int_ne(access("/tmp/check-authorizer-attach.db", F_OK), 0);
}
END_TEST

static const char *const admin_allowed[] = {
    "PRAGMA table_info(global_variables)",
    "PRAGMA table_list",
    "PRAGMA index_list(t)",
    "PRAGMA integrity_check",
    "SELECT * FROM pragma_table_xinfo('t')",
    "SELECT * FROM global_variables",
    "UPDATE global_variables SET variable_value = 'true' WHERE "
    "variable_name = 'jemalloc-prof_active'",
    "SET jemalloc-prof_active = 'false'",
    "INSERT INTO t VALUES (1)",
    "CREATE TABLE u(a)",
    "CREATE INDEX i ON t(a)",
    "CREATE TEMP TABLE tt(a)",
    "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END",
    "ANALYZE",
    "DELETE FROM t",
    "DROP TABLE t",
};

START_TEST(test_authorizer_admin_allowed)
{
    run(&admin, admin_allowed[_i]);
    ck_assert_msg(strncmp(result, "ERR", 3) != 0, "%d: %s\n  got %s", _i,
                  admin_allowed[_i], result);
}
END_TEST

/* The session's role decides, and a change of role takes effect on
 * statements compiled before it (COM_CHANGE_USER). */
START_TEST(test_authorizer_role_change)
{
    ck_assert_str_eq(run(&admin, "SELECT count(*) FROM t"), "ROWS:0");
    ha_strlcpy(admin.user, "stats", sizeof(admin.user));
    ha_session_set_role(&admin, HA_ROLE_STATS);
    ck_assert_str_eq(run(&admin, "SELECT count(*) FROM t"),
                     DENIED("SELECT", "t"));
    ha_session_set_role(&stats, HA_ROLE_ADMIN);
    ck_assert_str_eq(run(&stats, "SELECT count(*) FROM t"), "ROWS:0");
}
END_TEST

/* ------------------------------------------------------------------ *
 * Limits and connection settings
 * ------------------------------------------------------------------ */

START_TEST(test_authorizer_limits)
{
    char *deep = malloc(4096);
    size_t n = 0;

    ck_assert_ptr_nonnull(deep);
    n += (size_t)sprintf(deep, "SELECT 1");
    for (int i = 0; i < 300; i++)
        n += (size_t)sprintf(deep + n, "+1");
    ck_assert_str_eq(run(&admin, deep),
                     "ERR 1105 HY000 Expression tree is too large (maximum "
                     "depth 200)");
    free(deep);
    ck_assert_str_eq(run(&admin, "SELECT length(zeroblob(100000000))"),
                     "ERR 1105 HY000 string or blob too big");
    /* 64 MiB is still allowed: large values must fit. */
    ck_assert_str_eq(run(&admin, "SELECT length(zeroblob(20000000))"),
                     "ROWS:20000000");
    ck_assert_int_eq(sqlite3_limit(admin.db, SQLITE_LIMIT_ATTACHED, -1), 0);
    ck_assert_int_eq(sqlite3_limit(admin.db, SQLITE_LIMIT_SQL_LENGTH, -1),
                     HA_AUTHZ_MAX_LENGTH);
}
END_TEST

START_TEST(test_authorizer_dbconfig)
{
    int on = -1;

    sqlite3_db_config(admin.db, SQLITE_DBCONFIG_DEFENSIVE, -1, &on);
    ck_assert_int_eq(on, 1);
    sqlite3_db_config(admin.db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, -1, &on);
    ck_assert_int_eq(on, 0);
    sqlite3_db_config(admin.db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, -1,
                      &on);
    ck_assert_int_eq(on, 0);
    sqlite3_db_config(stats.db, SQLITE_DBCONFIG_DEFENSIVE, -1, &on);
    ck_assert_int_eq(on, 1);
}
END_TEST

/* ------------------------------------------------------------------ *
 * The pure decision: names the system SQLite does not compile in
 * ------------------------------------------------------------------ */

START_TEST(test_authorizer_decide_file_names)
{
    static const char *const functions[] = {
        "readfile", "writefile", "edit", "fts3_tokenizer", "LOAD_EXTENSION"};
    struct ha_authz_who who = {.role = HA_ROLE_ADMIN, .user = "admin",
                              .host = "127.0.0.1"};
    struct ha_authz_denial d;

    for (size_t i = 0; i < HA_ARRAY_SIZE(functions); i++) {
        ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_FUNCTION, NULL,
                                              functions[i], NULL, NULL, &d),
                         SQLITE_DENY);
        ck_assert_uint_eq(d.code, 1227);
    }
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_READ, "fsdir", "name",
                                          "main", NULL, &d),
                     SQLITE_DENY);
    ck_assert_str_eq(d.msg, "Access denied; table fsdir is not allowed: SQL "
                            "on the admin interface cannot touch files");
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_CREATE_VTABLE, "x",
                                          "zipfile", "main", NULL, &d),
                     SQLITE_DENY);
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_FUNCTION, NULL,
                                          "upper", NULL, NULL, &d),
                     SQLITE_OK);
    who.role = HA_ROLE_STATS;
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_READ,
                                          "global_variables",
                                          "variable_value", "main", NULL, &d),
                     SQLITE_IGNORE);
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_READ,
                                          "global_variables",
                                          "variable_name", "main", NULL, &d),
                     SQLITE_OK);
    /* The runtime_ layer is the same rows: hidden alike. */
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_READ,
                                          "runtime_global_variables",
                                          "variable_value", "main", NULL, &d),
                     SQLITE_IGNORE);
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_READ,
                                          "RUNTIME_GLOBAL_VARIABLES",
                                          "VARIABLE_VALUE", "main", NULL, &d),
                     SQLITE_IGNORE);
    ck_assert_int_eq(ha_authorizer_decide(&who, SQLITE_READ,
                                          "runtime_global_variables",
                                          "variable_name", "main", NULL, &d),
                     SQLITE_OK);
}
END_TEST

/* A refusal is reported once, by the reply that maps SQLITE_AUTH. */
START_TEST(test_authorizer_denial_taken_once)
{
    struct ha_authz_denial d;

    run(&stats, "DELETE FROM t");
    ck_assert(!ha_authorizer_take_denial(&stats.authz, &d));
    ck_assert(!ha_authorizer_take_denial(NULL, &d));
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *
authorizer_suite(void)
{
    Suite *s = suite_create("authorizer");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");
    TCase *errors = tcase_create("errors");

    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_loop_test(core, test_authorizer_stats_allowed, 0,
                        (int)HA_ARRAY_SIZE(stats_allowed));
    tcase_add_test(core, test_authorizer_stats_no_credentials);
    tcase_add_loop_test(core, test_authorizer_admin_allowed, 0,
                        (int)HA_ARRAY_SIZE(admin_allowed));
    tcase_add_test(core, test_authorizer_role_change);
    tcase_add_test(core, test_authorizer_decide_file_names);
    suite_add_tcase(s, core);

    tcase_add_checked_fixture(limits, setup, teardown);
    tcase_add_test(limits, test_authorizer_limits);
    tcase_add_test(limits, test_authorizer_dbconfig);
    suite_add_tcase(s, limits);

    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_loop_test(errors, test_authorizer_stats_refused, 0,
                        (int)HA_ARRAY_SIZE(stats_refused));
    tcase_add_test(errors, test_authorizer_stats_changes_nothing);
    tcase_add_loop_test(errors, test_authorizer_admin_refused, 0,
                        (int)HA_ARRAY_SIZE(admin_refused));
    tcase_add_test(errors, test_authorizer_denial_taken_once);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(authorizer_suite)
