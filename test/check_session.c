/* SPDX-License-Identifier: MIT
 *
 * Sessions at the packet level: two sessions on one memdb database with
 * the fake jemalloc, statements in, MySQL packets out, decoded back into
 * a compact trace ("col,col:v,v;v,v" per result set, "OK", "ERR <code>",
 * a '+' where the terminator says SERVER_MORE_RESULTS_EXISTS). Covers
 * SHOW, SET, KILL, autocommit, multi-statements and the calls the
 * protocol layer makes (reset, field list, special statements).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/catalog.h"
#include "admin/lex.h"
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
 * Fixture: sessions 1 (admin) and 2 (stats user)
 * ------------------------------------------------------------------ */

static struct sf_fixture fx;
static struct ha_session s1, s2;

#define CAPS_EOF (HA_CLIENT_PROTOCOL_41 | HA_CLIENT_MULTI_RESULTS)
#define CAPS_DEPRECATE_EOF (CAPS_EOF | HA_CLIENT_DEPRECATE_EOF)

static void
setup(void)
{
    sf_setup(&fx, "check-session", "admin:admin", "stats:stats");
    sf_open(&fx, &s1, 1, "admin", HA_ROLE_ADMIN);
    sf_open(&fx, &s2, 2, "stats", HA_ROLE_STATS);
}

static void
teardown(void)
{
    ha_session_close(&s2);
    ha_session_close(&s1);
    sf_teardown(&fx);
}

/* ------------------------------------------------------------------ *
 * Decoding replies into a trace
 * ------------------------------------------------------------------ */

static char trace[8192];
static uint16_t last_status;  /* status of the last OK/EOF seen */

static void
append(const char *fmt, const void *p, size_t n)
{
    size_t len = strlen(trace);

    if (p == NULL)
        snprintf(trace + len, sizeof(trace) - len, "%s", fmt);
    else
        snprintf(trace + len, sizeof(trace) - len, "%.*s", (int)n,
                 (const char *)p);
}

/* Turns every result in out into the trace: "OK", "ERR <code>", or
 * "<columns>:<row>;<row>" with values ',' between, NULL as NULL; " / "
 * between results, "+" after one flagged SERVER_MORE_RESULTS_EXISTS. */
static void
decode(const struct ha_buf *out, uint32_t caps)
{
    static struct rp_pkts k;
    bool deprecate_eof = (caps & HA_CLIENT_DEPRECATE_EOF) != 0;
    size_t i = 0;
    char why[128];

    trace[0] = '\0';
    ck_assert_msg(rp_split(out->data, out->len, 1, &k, why, sizeof(why)) ==
                      0,
                  "%s", why);
    while (i < k.n) {
        struct rp_result res;

        if (trace[0] != '\0')
            append(" / ", NULL, 0);
        ck_assert_msg(rp_result(&k, &i, deprecate_eof, &res) == 0,
                      "malformed reply after: %s", trace);
        if (res.kind == RP_ERR) {
            char code[16];
            snprintf(code, sizeof(code), "ERR %u", res.code);
            append(code, NULL, 0);
            continue;
        }
        last_status = res.status;
        if (res.kind == RP_OK) {
            append("OK", NULL, 0);
        } else {
            for (uint64_t c = 0; c < res.n_cols; c++) {
                const uint8_t *s;
                size_t sl;
                ck_assert_int_eq(rp_col_name(&k, &res, c, &s, &sl), 0);
                append(c ? "," : "", NULL, 0);
                append(NULL, s, sl);
            }
            append(":", NULL, 0);
            for (size_t row = 0; row < res.n_rows; row++) {
                append(row ? ";" : "", NULL, 0);
                for (uint64_t c = 0; c < res.n_cols; c++) {
                    const uint8_t *s;
                    size_t sl;
                    int got = rp_value(&k, &res, row, c, &s, &sl);

                    ck_assert_int_ge(got, 0);
                    append(c ? "," : "", NULL, 0);
                    if (got == 0)
                        append("NULL", NULL, 0);
                    else
                        append(NULL, s, sl);
                }
            }
        }
        if (last_status & HA_STATUS_MORE_RESULTS)
            append("+", NULL, 0);
    }
}

/* Runs one COM_QUERY on s and decodes the reply into trace. */
static const char *
query_caps(struct ha_session *s, const char *sql, uint32_t caps)
{
    struct ha_buf out = HA_BUF_INIT;
    struct ha_reply r;

    ha_reply_init(&r, &out, 1, caps, ha_session_status(s));
    ha_exec_query(s, sql, strlen(sql), &r);
    ha_reply_free(&r);
    decode(&out, caps);
    ha_buf_free(&out);
    return trace;
}

static const char *
query(struct ha_session *s, const char *sql)
{
    return query_caps(s, sql, CAPS_EOF);
}

/* Runs each '\n'-separated statement as its own COM_QUERY on s1 and
 * joins the traces with " / ". */
static char steps_trace[16384];

static const char *
steps(const char *script)
{
    char *copy = strdup(script), *save = NULL;

    steps_trace[0] = '\0';
    for (char *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        size_t l = strlen(steps_trace);
        snprintf(steps_trace + l, sizeof(steps_trace) - l, "%s%s",
                 l ? " / " : "", query(&s1, line));
    }
    free(copy);
    return steps_trace;
}

/* ------------------------------------------------------------------ *
 * SHOW, SET and friends, table-driven
 * ------------------------------------------------------------------ */

static const struct {
    const char *script;
    const char *want;
} cases[] = {
    {"SHOW DATABASES", "Database:main;stats;stats_history"},
    {"SHOW SCHEMAS LIKE 'st%'", "Database:stats;stats_history"},
    {"SHOW TABLES",
     "Tables_in_main:global_variables;runtime_global_variables"},
    {"SHOW TABLES FROM stats LIKE '%metrics'",
     "Tables_in_stats:stats_memory_metrics"},
    {"SHOW FULL TABLES IN stats WHERE Tables_in_stats LIKE '%sessions'",
     "Tables_in_stats,Table_type:stats_admin_sessions,BASE TABLE"},
    {"USE stats\nSHOW TABLES LIKE 'stats\\_memory\\_j%'",
     "OK / Tables_in_stats:stats_memory_jemalloc"},
    {"CREATE TABLE t1 (id INTEGER PRIMARY KEY, name TEXT NOT NULL "
     "DEFAULT 'x')\nSHOW TABLES\nSHOW COLUMNS FROM t1",
     "OK / Tables_in_main:global_variables;runtime_global_variables;t1 / "
     "Field,Type,Null,Key,Default,Extra:id,integer,NO,PRI,NULL,;"
     "name,text,NO,,'x',"},
    {"SHOW FIELDS FROM global_variables LIKE 'variable_v%'",
     "Field,Type,Null,Key,Default,Extra:variable_value,text,YES,,NULL,"},
    {"SHOW COLUMNS FROM nosuch", "ERR 1146"},
    {"SHOW COLUMNS FROM global_variables FROM stats", "ERR 1146"},
    /* The FROM clauses: db.table, a trailing FROM db, and each malformed
     * form refused as a syntax error. */
    {"SHOW COLUMNS IN main.global_variables LIKE 'variable_n%'",
     "Field,Type,Null,Key,Default,Extra:variable_name,text,NO,PRI,NULL,"},
    {"SHOW FIELDS FROM stats_memory_metrics FROM stats LIKE 'Variable_V%'",
     "Field,Type,Null,Key,Default,Extra:Variable_Value,varchar,YES,,NULL,"},
    {"SHOW COLUMNS global_variables", "ERR 1064"},
    {"SHOW COLUMNS FROM", "ERR 1064"},
    {"SHOW COLUMNS FROM global_variables FROM", "ERR 1064"},
    {"SHOW INDEX FROM global_variables FROM", "ERR 1064"},
    {"SHOW TABLES FROM", "ERR 1064"},
    {"SHOW TABLE STATUS IN", "ERR 1064"},
    {"SHOW CREATE TABLE stats.stats_memory_jemalloc",
     "Table,Create Table:stats_memory_jemalloc,CREATE TABLE "
     "`stats_memory_jemalloc` (\n  `variable_name` TEXT,\n"
     "  `variable_value` INTEGER\n)"},
    {"CREATE TABLE t2 (a INT)\nSHOW CREATE TABLE `t2`",
     "OK / Table,Create Table:t2,CREATE TABLE t2 (a INT)"},
    {"SHOW CREATE TABLE nosuch", "ERR 1146"},
    {"SHOW VARIABLES WHERE Variable_name in ('max_allowed_packet',"
     "'system_time_zone','time_zone','auto_increment_increment')",
     "Variable_name,Value:auto_increment_increment,1;max_allowed_packet,"
     "67108864;system_time_zone,UTC;time_zone,SYSTEM"},
    {"SHOW VARIABLES LIKE 'version\\_comment'",
     "Variable_name,Value:version_comment," HA_VERSION_COMMENT},
    {"SHOW GLOBAL VARIABLES LIKE 'jemalloc-prof_active'",
     "Variable_name,Value:jemalloc-prof_active,false"},
    {"SET wait_timeout = 7\nSHOW VARIABLES LIKE 'wait_timeout'\n"
     "SHOW GLOBAL VARIABLES LIKE 'wait_timeout'",
     "OK / Variable_name,Value:wait_timeout,7 / "
     "Variable_name,Value:wait_timeout,28800"},
    {"SHOW STATUS LIKE 'Threads_connected'",
     "Variable_name,Value:Threads_connected,2"},
    {"SHOW GLOBAL STATUS WHERE Variable_name = 'Jemalloc_allocated'",
     "Variable_name,Value:Jemalloc_allocated,1000"},
    {"SHOW WARNINGS", "Level,Code,Message:"},
    {"SHOW WARNINGS LIMIT 1", "Level,Code,Message:"},
    {"SHOW ERRORS", "Level,Code,Message:"},
    {"SHOW COUNT(*) WARNINGS", "@@session.warning_count:0"},
    {"SHOW PROCESSLIST",
     "Id,User,Host,db,Command,Time,State,Info:1,admin,127.0.0.1,NULL,Query,"
     "0,executing,SHOW PROCESSLIST;2,stats,127.0.0.1,NULL,Sleep,0,,NULL"},
    {"USE stats\nSELECT id, db, command FROM stats.stats_admin_sessions",
     "OK / id,db,command:1,stats,Query;2,NULL,Sleep"},
    {"SHOW COLLATION LIKE 'utf8mb4_0900%'",
     "Collation,Charset,Id,Default,Compiled,Sortlen,Pad_attribute:"
     "utf8mb4_0900_ai_ci,utf8mb4,255,Yes,Yes,0,NO PAD"},
    {"SHOW CHARACTER SET LIKE 'utf8mb4'",
     "Charset,Description,Default collation,Maxlen:utf8mb4,UTF-8 Unicode,"
     "utf8mb4_0900_ai_ci,4"},
    {"SHOW ENGINES",
     "Engine,Support,Comment,Transactions,XA,Savepoints:SQLite,DEFAULT,"
     "SQLite in-memory database,YES,NO,YES"},
    {"SHOW CREATE DATABASE stats",
     "Database,Create Database:stats,CREATE DATABASE `stats` /*!40100 "
     "DEFAULT CHARACTER SET utf8mb4 */"},
    {"SHOW BOGUS", "ERR 1064"},
    {"SHOW TABLES junk", "ERR 1064"},
    {"select $$", "ERR 1064"},
    /* SET */
    {"SET NAMES latin1\nSELECT @@character_set_client, "
     "@@character_set_results, @@character_set_connection",
     "OK / @@character_set_client,@@character_set_results,"
     "@@character_set_connection:latin1,latin1,latin1"},
    {"SET NAMES utf8mb4 COLLATE utf8mb4_bin\nSELECT @@collation_connection",
     "OK / @@collation_connection:utf8mb4_bin"},
    {"SET @@session.wait_timeout = 5, SESSION sql_mode = 'ANSI', @u = 'x'\n"
     "SELECT @@wait_timeout, @@sql_mode, @u, @never",
     "OK / @@wait_timeout,@@sql_mode,@u,@never:5,ANSI,x,NULL"},
    {"SET wait_timeout = 5\nSET wait_timeout = DEFAULT\nSELECT @@wait_timeout",
     "OK / OK / @@wait_timeout:28800"},
    {"SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')\nSELECT @@sql_mode",
     "OK / @@sql_mode:STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION,ANSI_QUOTES"},
    {"SET sql_safe_updates = ON, sql_select_limit = '10'\n"
     "SELECT @@sql_safe_updates + 0, @@sql_select_limit + 0",
     "OK / @@sql_safe_updates + 0,@@sql_select_limit + 0:1,10"},
    {"SET character_set_results = NULL\nSELECT @@character_set_results",
     "OK / @@character_set_results:NULL"},
    {"SET my_dsn_param = 3\nSELECT @@my_dsn_param",
     "OK / @@my_dsn_param:3"},
    {"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED\n"
     "SELECT @@transaction_isolation",
     "OK / @@transaction_isolation:READ-COMMITTED"},
    {"SET TRANSACTION READ ONLY\nSELECT @@transaction_read_only",
     "OK / @@transaction_read_only:0"},
    {"/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n"
     "SELECT @old_character_set_client",
     "OK / @old_character_set_client:utf8mb4"},
    {"SET version = 'x'", "ERR 1238"},
    {"SET GLOBAL wait_timeout = 1", "ERR 1238"},
    {"SET wait_timeout = 'abc'", "ERR 1232"},
    {"SET autocommit = 2", "ERR 1231"},
    {"SET sql_mode = NULL", "ERR 1231"},
    {"SET = 1", "ERR 1064"},
    {"SET wait_timeout", "ERR 1064"},
    {"SET wait_timeout = 1 b", "ERR 1064"},
    {"SET wait_timeout = no_such_column + 1", "ERR 1054"},
    /* SET <module>-<name>: an UPDATE of global_variables */
    {"SET jemalloc-prof_active = true\nSELECT @@jemalloc-prof_active",
     "OK / @@jemalloc-prof_active:true"},
    {"SET GLOBAL jemalloc-background_thread = 'on'\n"
     "SELECT variable_value FROM global_variables WHERE "
     "variable_name = 'jemalloc-background_thread'",
     "OK / variable_value:true"},
    {"SET jemalloc-nope = 1", "ERR 1193"},
    {"SET jemalloc-prof_active = 'maybe'", "ERR 1105"},
    {"SET jemalloc-prof_active = DEFAULT", "ERR 1231"},
    {"SET jemalloc-prof_active = true, jemalloc-nope = 1\n"
     "SELECT @@jemalloc-prof_active",
     "ERR 1193 / @@jemalloc-prof_active:false"},
    /* KILL (no server here: the registry answers) */
    {"KILL 2", "OK"},
    {"KILL QUERY 1", "OK"},
    {"KILL CONNECTION 1", "ERR 1317"},
    {"KILL 99", "ERR 1094"},
    {"KILL x", "ERR 1064"},
    /* Transactions without one open, and the stats. qualifier */
    {"COMMIT\nROLLBACK", "OK / OK"},
    {"SELECT variable_value FROM stats.stats_memory_jemalloc WHERE "
     "variable_name = 'active'",
     "variable_value:2000"},
    {"SELECT `stats`.`stats_memory_metrics`.Variable_Value FROM "
     "stats.stats_memory_metrics WHERE Variable_Name = 'jemalloc_resident'",
     "Variable_Value:5000"},
    {"SELECT CONCAT('a', 1, NULL) IS NULL, CONCAT_WS(',', 'a', NULL, 'b'), "
     "IF(@@autocommit, 'on', 'off')",
     "CONCAT('a', 1, NULL) IS NULL,CONCAT_WS(',', 'a', NULL, 'b'),"
     "IF(@@autocommit, 'on', 'off'):1,a,b,on"},
};

START_TEST(test_session_statements)
{
    const char *got;

    /* The idle session's Time in PROCESSLIST counts from its open, in
     * the setup: a second boundary crossed since would make it 1. A
     * Sleep dated ahead shows 0 whenever the query runs. */
    s2.command_since = time(NULL) + 60;
    got = steps(cases[_i].script);

    ck_assert_msg(strcmp(got, cases[_i].want) == 0,
                  "case %d: %s\n want [%s]\n got  [%s]", _i, cases[_i].script,
                  cases[_i].want, got);
}
END_TEST

/* The house rule: a COM_QUERY text is lexed once, however many
 * statements it holds and whatever they are (SET, SHOW, @@vars, plain
 * SQL); the dialect, SHOW and SET layers work on views of its tokens. */
START_TEST(test_session_lexes_each_statement_once)
{
    unsigned long before;
    const char *got;

    ha_session_set_multi_statements(&s1, true);
    before = ha_lex_runs();
    got = query(&s1, "SET @a = 1, autocommit = 1; SELECT @@version_comment;"
                     " SHOW TABLES FROM stats LIKE '%metrics'; SELECT @a");
    ck_assert_msg(strstr(got, "ERR") == NULL, "%s", got);
    ck_assert_msg(strstr(got, "stats_memory_metrics") != NULL, "%s", got);
    ck_assert_uint_eq(ha_lex_runs() - before, 1);
    /* A SET that does not parse, as the second statement of one text:
     * the first runs, the second is refused with MySQL's syntax error. */
    before = ha_lex_runs();
    got = query(&s1, "SELECT 1;\nSET @x = ");
    ck_assert_str_eq(got, "1:1+ / ERR 1064");
    ck_assert_uint_eq(ha_lex_runs() - before, 1);
    ha_session_set_multi_statements(&s1, false);
}
END_TEST

/* The catalogue drives SHOW TABLES and the session's tables: every
 * listed table shows in its schema, and every eponymous one answers. */
START_TEST(test_session_catalog_is_what_shows)
{
    size_t n;
    const struct ha_catalog_table *t = ha_catalog_tables(&n);
    char sql[256];

    for (size_t i = 0; i < n; i++) {
        const char *got;

        if (t[i].schema != NULL) {
            snprintf(sql, sizeof(sql), "SHOW TABLES FROM %s LIKE '%s'",
                     t[i].schema, t[i].name);
            got = query(&s1, sql);
            ck_assert_msg(strstr(got, t[i].name) != NULL, "%s: %s", sql,
                          got);
        }
        if (t[i].eponymous) {
            snprintf(sql, sizeof(sql), "SELECT count(*) >= 0 FROM %s",
                     t[i].name);
            got = query(&s1, sql);
            ck_assert_msg(strstr(got, "ERR") == NULL, "%s: %s", sql, got);
        }
    }
}
END_TEST

/* The names PRAGMA module_list gives on db, into names (up to max).
 * Returns how many. */
static size_t
module_list(sqlite3 *db, char names[][64], size_t max)
{
    sqlite3_stmt *st = NULL;
    size_t n = 0;

    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA module_list", -1, &st,
                                        NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        ck_assert_uint_lt(n, max);
        snprintf(names[n++], 64, "%s", sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return n;
}

static bool
listed(char names[][64], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ha_str_ieq(names[i], name))
            return true;
    return false;
}

/* The catalogue and the registration agree: every table the catalogue
 * marks as a module is a virtual table module of an open session's
 * connection and has its private instance in that session's temp
 * schema; and every module the session registers beyond SQLite's own
 * (those of a bare connection) is in the catalogue, as a module. */
START_TEST(test_session_catalog_matches_modules)
{
    static char own[256][64], mods[256][64];
    size_t n_tables, n_own, n_mods, n_ours = 0;
    const struct ha_catalog_table *t = ha_catalog_tables(&n_tables);
    sqlite3 *bare = NULL;

    ck_assert_int_eq(sqlite3_open(":memory:", &bare), SQLITE_OK);
    n_own = module_list(bare, own, 256);
    sqlite3_close(bare);
    /* The session's authorizer refuses PRAGMA module_list to SQL; this
     * looks at the connection itself. */
    sqlite3_set_authorizer(s1.db, NULL, NULL);
    n_mods = module_list(s1.db, mods, 256);
    for (size_t i = 0; i < n_tables; i++) {
        sqlite3_stmt *st = NULL;

        if (!t[i].module)
            continue;
        n_ours++;
        ck_assert_msg(listed(mods, n_mods, t[i].name),
                      "catalogue table %s is no registered module",
                      t[i].name);
        ck_assert_int_eq(sqlite3_prepare_v2(s1.db,
                                            "SELECT 1 FROM temp.sqlite_master "
                                            "WHERE type = 'table' AND name = ?1",
                                            -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(st, 1, t[i].name, -1, SQLITE_STATIC);
        ck_assert_msg(sqlite3_step(st) == SQLITE_ROW,
                      "session has no temp instance of %s", t[i].name);
        sqlite3_finalize(st);
    }
    for (size_t i = 0; i < n_mods; i++) {
        const struct ha_catalog_table *c;

        if (listed(own, n_own, mods[i]))
            continue;
        c = ha_catalog_find(mods[i]);
        ck_assert_msg(c != NULL && c->module,
                      "registered module %s is not in the catalogue as a "
                      "module",
                      mods[i]);
    }
    ck_assert_uint_eq(n_mods, n_own + n_ours);
    ha_authorizer_arm(s1.db, &s1.authz);
}
END_TEST

/* ------------------------------------------------------------------ *
 * Connector/J's start-up SELECT
 * ------------------------------------------------------------------ */

START_TEST(test_session_connector_j)
{
    const char *sql =
        "/* mysql-connector-j-8.0.33 (Revision: "
        "7d6b0800528b6b25c68b52dc10d6c1c8429c100c) */SELECT  "
        "@@session.auto_increment_increment AS auto_increment_increment, "
        "@@character_set_client AS character_set_client, "
        "@@character_set_connection AS character_set_connection, "
        "@@character_set_results AS character_set_results, "
        "@@character_set_server AS character_set_server, @@collation_server "
        "AS collation_server, @@collation_connection AS "
        "collation_connection, @@init_connect AS init_connect, "
        "@@interactive_timeout AS interactive_timeout, @@license AS "
        "license, @@lower_case_table_names AS lower_case_table_names, "
        "@@max_allowed_packet AS max_allowed_packet, @@net_write_timeout AS "
        "net_write_timeout, @@performance_schema AS performance_schema, "
        "@@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, "
        "@@time_zone AS time_zone, @@transaction_isolation AS "
        "transaction_isolation, @@wait_timeout AS wait_timeout";

    ck_assert_str_eq(
        query(&s1, sql),
        "auto_increment_increment,character_set_client,"
        "character_set_connection,character_set_results,"
        "character_set_server,collation_server,collation_connection,"
        "init_connect,interactive_timeout,license,lower_case_table_names,"
        "max_allowed_packet,net_write_timeout,performance_schema,sql_mode,"
        "system_time_zone,time_zone,transaction_isolation,wait_timeout:"
        "1,utf8mb4,utf8mb4,NULL,utf8mb4,utf8mb4_0900_ai_ci,"
        "utf8mb4_0900_ai_ci,,28800,MIT,0,67108864,60,0,"
        "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION,UTC,SYSTEM,SERIALIZABLE,"
        "28800");
}
END_TEST

/* ------------------------------------------------------------------ *
 * autocommit, multi-statements, reset
 * ------------------------------------------------------------------ */

/* Every statement commits as it runs, whatever autocommit says (as in
 * ProxySQL's admin): the memdb database is one lock for all sessions, so
 * a transaction one client leaves open would fail everyone else's reads
 * and control writes with ERR 1205. */
START_TEST(test_session_autocommit)
{
    struct ha_session other;

    sf_open(&fx, &other, 3, "admin", HA_ROLE_ADMIN);
    ck_assert(ha_session_status(&s1) & HA_STATUS_AUTOCOMMIT);
    ck_assert_str_eq(query(&s1, "SET autocommit = 0"), "OK");
    /* Kept for the client, which reads it back... */
    ck_assert(!(last_status & HA_STATUS_AUTOCOMMIT));
    ck_assert_str_eq(query(&s1, "SELECT @@autocommit"), "@@autocommit:0");
    /* ... but a write opens no transaction: the others see it at once. */
    ck_assert_str_eq(query(&s1, "CREATE TABLE t (a INT)"), "OK");
    ck_assert(!(last_status & HA_STATUS_IN_TRANS));
    ck_assert_str_eq(query(&s1, "INSERT INTO t VALUES (1)"), "OK");
    ck_assert(!(last_status & HA_STATUS_IN_TRANS));
    ck_assert_str_eq(query(&other, "SELECT count(*) FROM t"), "count(*):1");
    ck_assert_str_eq(query(&other, "INSERT INTO t VALUES (2)"), "OK");
    /* ROLLBACK is accepted and undoes nothing. */
    ck_assert_str_eq(query(&s1, "ROLLBACK"), "OK");
    ck_assert_str_eq(query(&s1, "SELECT count(*) FROM t"), "count(*):2");
    /* BEGIN opens nothing: another session's write goes through while
     * this one "holds" a transaction with reads and writes in it. */
    ck_assert_str_eq(query(&s1, "BEGIN"), "OK");
    ck_assert(!(last_status & HA_STATUS_IN_TRANS));
    ck_assert_str_eq(query(&s1, "INSERT INTO t VALUES (3)"), "OK");
    ck_assert_str_eq(query(&s1, "SELECT count(*) FROM t"), "count(*):3");
    ck_assert_str_eq(query(&other, "INSERT INTO t VALUES (4)"), "OK");
    ck_assert_str_eq(query(&other, "SELECT count(*) FROM t"), "count(*):4");
    ck_assert_str_eq(query(&s1, "START TRANSACTION"), "OK");
    ck_assert_str_eq(query(&s1, "COMMIT"), "OK");
    /* What would open a transaction inside SQLite is refused, naming
     * what is supported. */
    ck_assert_str_eq(query(&s1, "SAVEPOINT a"), "ERR 1235");
    ck_assert_str_eq(query(&s1, "ROLLBACK TO SAVEPOINT a"), "ERR 1235");
    ck_assert_str_eq(query(&s1, "RELEASE a"), "ERR 1235");
    ck_assert_str_eq(query(&s1, "END"), "ERR 1235");
    ck_assert(!(ha_session_status(&s1) & HA_STATUS_IN_TRANS));
    /* A multi-variable SET stays all or nothing (its own savepoint). */
    ck_assert_str_eq(query(&s1, "SET autocommit = ON"), "OK");
    ck_assert_uint_eq(last_status & (HA_STATUS_IN_TRANS | HA_STATUS_AUTOCOMMIT),
                      HA_STATUS_AUTOCOMMIT);
    ha_session_close(&other);
}
END_TEST

START_TEST(test_session_multi_statements)
{
    ck_assert_str_eq(query(&s1, "SELECT 1 AS a; SELECT 2 AS b"), "ERR 1064");
    ck_assert_str_eq(query(&s1, "SELECT 1 AS a;  -- just a comment"),
                     "a:1");
    ha_session_set_multi_statements(&s1, true);
    ck_assert_str_eq(query(&s1, "SELECT 1 AS a; SELECT 'x;y' AS b;"),
                     "a:1+ / b:x;y");
    ck_assert_str_eq(
        query_caps(&s1, "SET @v = 2; SELECT @v AS v; DO 0", CAPS_DEPRECATE_EOF),
        "OK+ / v:2+ / ERR 1064");
    ck_assert_str_eq(query(&s1, "SELECT 1 AS a; SELEC 2; SELECT 3"),
                     "a:1+ / ERR 1064");
    ck_assert_str_eq(query(&s1, "CREATE TABLE tr (a INT); CREATE TRIGGER "
                                "trg AFTER INSERT ON tr BEGIN SELECT CASE "
                                "WHEN 1 THEN 1 END; SELECT 2; END; INSERT "
                                "INTO tr VALUES (1); SELECT count(*) AS n "
                                "FROM tr"),
                     "OK+ / OK+ / OK+ / n:1");
    ck_assert_str_eq(query(&s1, ";;"), "ERR 1065");
    ck_assert(!(ha_session_status(&s1) & HA_STATUS_MORE_RESULTS));
}
END_TEST

START_TEST(test_session_reset)
{
    ha_session_set_multi_statements(&s1, true);
    ck_assert_str_eq(steps("SET @x = 1\nSET wait_timeout = 3\nUSE stats\n"
                           "SET autocommit = 0"),
                     "OK / OK / OK / OK");
    ck_assert(!(ha_session_status(&s1) & HA_STATUS_AUTOCOMMIT));
    ha_session_reset(&s1);
    ck_assert_uint_eq(ha_session_status(&s1), HA_STATUS_AUTOCOMMIT);
    ck_assert(!s1.multi_statements);
    ck_assert_str_eq(query(&s1, "SELECT @x, @@wait_timeout, database()"),
                     "@x,@@wait_timeout,database():NULL,28800,stats");
}
END_TEST

/* ------------------------------------------------------------------ *
 * What the protocol layer calls
 * ------------------------------------------------------------------ */

static struct ha_buf fl_out;

static struct rp_pkts fl;

/* COM_FIELD_LIST's reply for table, split into fl. Returns fl.n. */
static size_t
field_list(const char *table, const char *wild, uint32_t caps)
{
    struct ha_reply r;
    char why[128];

    ha_buf_init(&fl_out);
    ha_reply_init(&r, &fl_out, 1, caps, ha_session_status(&s1));
    ha_exec_field_list(&s1, table, wild, &r);
    ha_reply_free(&r);
    ck_assert_msg(rp_split(fl_out.data, fl_out.len, 1, &fl, why,
                           sizeof(why)) == 0,
                  "%s", why);
    return fl.n;
}

START_TEST(test_session_field_list)
{
    size_t n;
    struct ha_reader r;
    const uint8_t *s;
    size_t sl;

    n = field_list("global_variables", NULL, CAPS_EOF);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(fl.p[2][0], 0xFE);
    ck_assert_uint_eq(fl.len[2], 5);
    /* A definition with a default: catalog, schema, table, org_table,
     * name, org_name, 0x0c block (13 bytes), then the default (NULL). */
    ha_reader_init(&r, fl.p[0], fl.len[0]);
    for (int k = 0; k < 5; k++)
        ck_assert_int_eq(ha_proto_get_lenenc_str(&r, &s, &sl), 0);
    ck_assert_uint_eq(sl, 13);
    ck_assert_int_eq(memcmp(s, "variable_name", 13), 0);
    ck_assert_uint_eq(fl.p[0][fl.len[0] - 1], 0xFB);
    ha_buf_free(&fl_out);

    n = field_list("global_variables", "variable_v%", CAPS_DEPRECATE_EOF);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(fl.p[1][0], 0xFE);
    ck_assert_uint_ge(fl.len[1], 7);
    ha_buf_free(&fl_out);

    ha_session_use(&s1, "stats");
    n = field_list("stats_admin_sessions", NULL, CAPS_EOF);
    ck_assert_uint_eq(n, 9);
    ha_buf_free(&fl_out);

    n = field_list("global_variables", NULL, CAPS_EOF);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(fl.p[0][0], 0xFF);
    ck_assert_uint_eq(fl.p[0][1] | fl.p[0][2] << 8, 1146);
    ha_buf_free(&fl_out);
}
END_TEST

START_TEST(test_session_special)
{
    static const struct {
        const char *sql;
        int handled;
        const char *trace;
    } sp[] = {
        {"SET @a = 1", 1, "OK"},      {"USE stats", 1, "OK"},
        {"BEGIN", 1, "OK"},           {"COMMIT", 1, "OK"},
        {"select $$", 1, "ERR 1064"}, {"KILL 99", 1, "ERR 1094"},
        {"SELECT ?", 0, ""},          {"SHOW TABLES", 0, ""},
        {"UPDATE t SET a = ?", 0, ""},
    };

    for (size_t i = 0; i < sizeof(sp) / sizeof(sp[0]); i++) {
        struct ha_buf out = HA_BUF_INIT;
        struct ha_reply r;
        int rc;

        ha_reply_init(&r, &out, 1, CAPS_EOF, ha_session_status(&s1));
        rc = ha_exec_special(&s1, sp[i].sql, strlen(sp[i].sql), &r);
        ha_reply_free(&r);
        decode(&out, CAPS_EOF);
        ck_assert_msg(rc == sp[i].handled && strcmp(trace, sp[i].trace) == 0,
                      "%s: rc %d trace [%s]", sp[i].sql, rc, trace);
        ha_buf_free(&out);
    }
}
END_TEST

START_TEST(test_session_processlist_command)
{
    ha_session_set_command(&s2, "Execute", "SELECT 42", 9);
    ck_assert_str_eq(query(&s1, "SELECT id, command, info FROM "
                                "stats_admin_sessions WHERE id = 2"),
                     "id,command,info:2,Execute,SELECT 42");
    ha_session_set_command(&s2, "Sleep", NULL, 0);
    ck_assert_str_eq(query(&s1, "SELECT command, info FROM "
                                "stats_admin_sessions WHERE id = 2"),
                     "command,info:Sleep,NULL");
    /* A stats user may not kill another user's session. */
    ck_assert_str_eq(query(&s2, "KILL 1"), "ERR 1095");
    ck_assert_str_eq(query(&s1, "SHOW STATUS LIKE 'Questions'"),
                     "Variable_name,Value:Questions,3");
}
END_TEST

static Suite *
session_suite(void)
{
    Suite *s = suite_create("session");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");
    TCase *errors = tcase_create("errors");

    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_checked_fixture(limits, setup, teardown);
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(core, test_session_catalog_is_what_shows);
    tcase_add_test(core, test_session_catalog_matches_modules);
    tcase_add_test(core, test_session_lexes_each_statement_once);
    tcase_add_loop_test(core, test_session_statements, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(core, test_session_connector_j);
    tcase_add_test(core, test_session_autocommit);
    tcase_add_test(core, test_session_reset);
    tcase_add_test(core, test_session_field_list);
    tcase_add_test(core, test_session_special);
    tcase_add_test(core, test_session_processlist_command);
    tcase_add_test(limits, test_session_multi_statements);
    suite_add_tcase(s, core);
    suite_add_tcase(s, limits);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(session_suite)
