/* SPDX-License-Identifier: MIT
 *
 * Dialect rewriter: MySQL statement text in, SQLite text and statement
 * kind out. Table-driven; each failure names the case.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "admin/dialect.h"
#include "admin/lex.h"
#include "admin/persist_parse.h"
#include "admin/setvar.h"

struct rewrite_case {
    const char *in;
    const char *out;
    enum ha_stmt_kind kind;
};

static const struct rewrite_case rewrites[] = {
    /* The mysql/mariadb CLI's first statement. */
    {"select @@version_comment limit 1",
     "select ha_sysvar('version_comment') AS `@@version_comment` limit 1",
     HA_STMT_OTHER},
    {"SELECT @@session.auto_increment_increment AS auto_increment_increment",
     "SELECT ha_sysvar('auto_increment_increment') AS "
     "auto_increment_increment",
     HA_STMT_OTHER},
    {"SELECT @@GLOBAL.max_allowed_packet, @@wait_timeout",
     "SELECT ha_sysvar('max_allowed_packet') AS "
     "`@@GLOBAL.max_allowed_packet`, ha_sysvar('wait_timeout') AS "
     "`@@wait_timeout`",
     HA_STMT_OTHER},
    /* Inside an expression no label is added. */
    /* An expression a rewrite changed keeps its MySQL text as label. */
    {"SELECT @@max_allowed_packet + 1",
     "SELECT ha_sysvar('max_allowed_packet') + 1 AS "
     "`@@max_allowed_packet + 1`",
     HA_STMT_OTHER},
    {"SELECT IF(@@autocommit, 1, 0)",
     "SELECT IF(ha_sysvar('autocommit'), 1, 0) AS `IF(@@autocommit, 1, 0)`",
     HA_STMT_OTHER},
    {"SELECT IF(@@autocommit, 1, 0) AS ac FROM t WHERE @@x = 1",
     "SELECT IF(ha_sysvar('autocommit'), 1, 0) AS ac FROM t WHERE "
     "ha_sysvar('x') = 1",
     HA_STMT_OTHER},
    {"UPDATE t SET a = @@x", "UPDATE t SET a = ha_sysvar('x')",
     HA_STMT_OTHER},
    {"SELECT @@`sql_mode`", "SELECT ha_sysvar('sql_mode') AS `@@``sql_mode```",
     HA_STMT_OTHER},
    /* Strings: backslash escapes decoded, double quotes are literals. */
    {"SELECT 'it\\'s'", "SELECT 'it''s'", HA_STMT_OTHER},
    {"SELECT \"a\\\"b\"", "SELECT 'a\"b'", HA_STMT_OTHER},
    {"SELECT 'a''b'", "SELECT 'a''b'", HA_STMT_OTHER},
    {"SELECT 'x\\\\y'", "SELECT 'x\\y'", HA_STMT_OTHER},
    {"SELECT 'a\\0b'", "SELECT 'a'||char(0)||'b'", HA_STMT_OTHER},
    {"SELECT 'a\\%'", "SELECT 'a\\%'", HA_STMT_OTHER},
    {"SELECT '@@not_a_var'", "SELECT '@@not_a_var'", HA_STMT_OTHER},
    {"SELECT `@@x` FROM t", "SELECT `@@x` FROM t", HA_STMT_OTHER},
    /* Comments. */
    {"SELECT 1 # trailing", "SELECT 1 -- trailing", HA_STMT_OTHER},
    {"SELECT 1 -- x\n", "SELECT 1 -- x\n", HA_STMT_OTHER},
    {"/*!40101 SET NAMES utf8 */", "  SET NAMES utf8  ", HA_STMT_SET},
    {"SELECT 1 /*!99999 , 2 */", "SELECT 1 /*!99999 , 2 */", HA_STMT_OTHER},
    {"SELECT /* @@x */ 1", "SELECT /* @@x */ 1", HA_STMT_OTHER},
    /* LIMIT offset, count. */
    {"SELECT * FROM t LIMIT 5, 10", "SELECT * FROM t LIMIT 10 OFFSET 5",
     HA_STMT_OTHER},
    {"SELECT * FROM t LIMIT 10", "SELECT * FROM t LIMIT 10", HA_STMT_OTHER},
    /* Classification. */
    {"  ", "  ", HA_STMT_EMPTY},
    {";", ";", HA_STMT_EMPTY},
    {"/* only a comment */", "/* only a comment */", HA_STMT_EMPTY},
    {"set autocommit=0", "set autocommit=0", HA_STMT_SET},
    {"use `stats`", "use `stats`", HA_STMT_USE},
    {"BEGIN", "BEGIN", HA_STMT_BEGIN},
    {"start transaction read only", "start transaction read only",
     HA_STMT_BEGIN},
    {"commit work", "commit work", HA_STMT_COMMIT},
    {"ROLLBACK", "ROLLBACK", HA_STMT_ROLLBACK},
    {"ROLLBACK TO SAVEPOINT a", "ROLLBACK TO SAVEPOINT a", HA_STMT_ERROR},
    {"SAVEPOINT a", "SAVEPOINT a", HA_STMT_ERROR},
    {"release a", "release a", HA_STMT_ERROR},
    {"END TRANSACTION", "END TRANSACTION", HA_STMT_ERROR},
    /* A bare global_variables is main's (the eponymous virtual table),
     * not the saved copy in the attached schema disk. */
    {"UPDATE global_variables SET variable_value='true'",
     "UPDATE temp.global_variables SET variable_value='true'", HA_STMT_OTHER},
    {"SELECT global_variables.variable_name FROM GLOBAL_VARIABLES g",
     "SELECT global_variables.variable_name FROM temp.GLOBAL_VARIABLES g",
     HA_STMT_OTHER},
    {"SELECT * FROM disk.global_variables d JOIN `global_variables` AS v",
     "SELECT * FROM disk.global_variables d JOIN temp.`global_variables` AS v",
     HA_STMT_OTHER},
    /* main.<one of heapadmin's tables>: the session's own instance;
     * main.<anything else> (a scratch table) stays. */
    {"UPDATE main.global_variables SET variable_value = 1",
     "UPDATE temp.global_variables SET variable_value = 1", HA_STMT_OTHER},
    {"SELECT * FROM main.stats_memory_jemalloc, main.w",
     "SELECT * FROM temp.stats_memory_jemalloc, main.w", HA_STMT_OTHER},
    {"PRAGMA table_info(global_variables)",
     "PRAGMA table_info(global_variables)", HA_STMT_OTHER},
    /* Every schema would include the read-only attached files. */
    {"ANALYZE", "ANALYZE main", HA_STMT_OTHER},
    {"analyze;", "ANALYZE main", HA_STMT_OTHER},
    {"ANALYZE t1", "ANALYZE t1", HA_STMT_OTHER},
    {"REINDEX", "REINDEX", HA_STMT_ERROR},
    {"REINDEX main.t1", "REINDEX main.t1", HA_STMT_OTHER},
    /* User variables, module variables, the stats. qualifier. */
    {"SELECT @x, @`y z`", "SELECT ha_uservar('x') AS `@x`, "
     "ha_uservar('y z') AS `@``y z```", HA_STMT_OTHER},
    {"SELECT 'a'@'b'", "SELECT 'a'@'b'", HA_STMT_OTHER},
    {"SELECT @@jemalloc-prof_active, @@wait_timeout-1",
     "SELECT ha_sysvar('jemalloc-prof_active') AS `@@jemalloc-prof_active`, "
     "ha_sysvar('wait_timeout')-1 AS `@@wait_timeout-1`",
     HA_STMT_OTHER},
    {"SELECT * FROM stats.stats_memory_jemalloc s JOIN `stats`.`stats_x`",
     "SELECT * FROM stats_memory_jemalloc s JOIN `stats_x`", HA_STMT_OTHER},
    {"SELECT stats.x, main.stats_y FROM stats", "SELECT stats.x, "
     "main.stats_y FROM stats", HA_STMT_OTHER},
    /* Statements the session answers. */
    {"KILL 7", "KILL 7", HA_STMT_KILL},
    {"kill query 8;", "kill query 8;", HA_STMT_KILL},
    {"SHOW DATABASES", "SELECT * FROM (SELECT 'main' AS \"Database\" UNION "
     "ALL SELECT 'stats' UNION ALL SELECT 'stats_history') ORDER BY 1",
     HA_STMT_SHOW},
    {"SHOW PROCESSLIST", "SELECT id AS Id, user AS User, host AS Host, db, "
     "command AS Command, time AS Time, state AS State, substr(info, 1, 100) "
     "AS Info FROM stats_admin_sessions ORDER BY id", HA_STMT_SHOW},
    {"SHOW VARIABLES LIKE 'gtid\\_mode'", "SELECT * FROM (SELECT "
     "variable_name AS Variable_name, ifnull(CAST(variable_value AS TEXT), "
     "'') AS Value FROM temp.global_variables UNION ALL SELECT variable_name, "
     "ifnull(CAST(variable_value AS TEXT), '') FROM session_variables) WHERE "
     "\"Variable_name\" LIKE 'gtid\\_mode' ESCAPE '\\' ORDER BY 1",
     HA_STMT_SHOW},
    {"select $$", "select $$", HA_STMT_ERROR},
    {"SELECT 1 FROM t WHERE a = $$x$$", "SELECT 1 FROM t WHERE a = $$x$$",
     HA_STMT_ERROR},
    {"SHOW NONSENSE", "SHOW NONSENSE", HA_STMT_ERROR},
    {"KILL", "KILL", HA_STMT_ERROR},
};

/* Error texts and KILL arguments. */
static const struct {
    const char *in;
    const char *arg;
    unsigned kill_id;
    bool kill_query;
} details[] = {
    {"select $$", "You have an error in your SQL syntax; check the manual "
     "that corresponds to your MySQL server version for the right syntax "
     "to use near '$$' at line 1", 0, false},
    {"SELECT 1,\n  $$ ;", "You have an error in your SQL syntax; check the "
     "manual that corresponds to your MySQL server version for the right "
     "syntax to use near '$$' at line 2", 0, false},
    {"SHOW TABLES junk", "You have an error in your SQL syntax; check the "
     "manual that corresponds to your MySQL server version for the right "
     "syntax to use near 'junk' at line 1", 0, false},
    {"KILL CONNECTION 42", "", 42, false},
    {"KILL QUERY 4294967295", "", 4294967295u, true},
};

START_TEST(test_dialect_details)
{
    struct ha_buf out = HA_BUF_INIT;
    struct ha_dialect_result res;

    ck_assert_int_eq(ha_dialect_rewrite(details[_i].in,
                                        strlen(details[_i].in), &out, &res,
                                        NULL, 0),
                     0);
    ck_assert_msg(strcmp(res.arg, details[_i].arg) == 0,
                  "case %d: arg [%s]", _i, res.arg);
    ck_assert_uint_eq(res.kill_id, details[_i].kill_id);
    ck_assert_int_eq(res.kill_query, details[_i].kill_query);
    if (res.kind == HA_STMT_ERROR) {
        ck_assert_uint_eq(res.err_code, 1064);
        ck_assert_str_eq(res.sqlstate, "42000");
    }
    ha_buf_free(&out);
}
END_TEST

/* ------------------------------------------------------------------ */

static const struct {
    const char *in;
    const char *pieces;   /* the statements, joined with '|' */
} splits[] = {
    {"SELECT 1", "SELECT 1"},
    {"SELECT 1;", "SELECT 1"},
    {"SELECT 1; SELECT 2 ;", "SELECT 1| SELECT 2 "},
    {"SELECT ';' ; SELECT \";\"; SELECT `a;b`", "SELECT ';' | SELECT "
     "\";\"| SELECT `a;b`"},
    {"SELECT 1 /* ; */; -- ;\n", "SELECT 1 /* ; */"},
    {";; ;", ""},
    {"/*!40101 SET a=1; SET b=2 */; SELECT 1",
     "/*!40101 SET a=1; SET b=2 */| SELECT 1"},
    {"CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT CASE WHEN 1 THEN 2 "
     "END; DELETE FROM y; END; SELECT 1",
     "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT CASE WHEN 1 THEN 2 "
     "END; DELETE FROM y; END| SELECT 1"},
    {"BEGIN; COMMIT", "BEGIN| COMMIT"},
};

START_TEST(test_dialect_split)
{
    struct ha_dialect_span *spans = NULL;
    size_t n = 0;
    char got[512] = "";

    ck_assert_int_eq(ha_dialect_split(splits[_i].in, strlen(splits[_i].in),
                                      &spans, &n, NULL, 0),
                     0);
    for (size_t k = 0; k < n; k++) {
        size_t l = strlen(got);
        snprintf(got + l, sizeof(got) - l, "%s%.*s", k ? "|" : "",
                 (int)spans[k].len, splits[_i].in + spans[k].off);
    }
    ck_assert_msg(strcmp(got, splits[_i].pieces) == 0,
                  "case %d: want [%s] got [%s]", _i, splits[_i].pieces, got);
    free(spans);
}
END_TEST

/* ------------------------------------------------------------------ */

static const struct {
    const char *in;
    const char *items;    /* scope:name=kind:value, joined with ' ' */
} sets[] = {
    {"SET autocommit=0", "S:autocommit=E:0"},
    {"SET NAMES utf8mb4", "S:character_set_client=W:utf8mb4 "
     "S:character_set_results=W:utf8mb4 "
     "S:character_set_connection=W:utf8mb4"},
    {"SET NAMES 'latin1' COLLATE 'latin1_bin'",
     "S:character_set_client=W:latin1 S:character_set_results=W:latin1 "
     "S:character_set_connection=W:latin1 "
     "S:collation_connection=W:latin1_bin"},
    {"SET CHARACTER SET DEFAULT", "S:character_set_client=D: "
     "S:character_set_results=D:"},
    {"SET GLOBAL a = 1, b := 'x', SESSION c = ON",
     "G:a=E:1 G:b=E:'x' S:c=W:ON"},
    {"SET @@global.wait_timeout = 1, @@Session.SQL_MODE = DEFAULT",
     "G:wait_timeout=E:1 S:sql_mode=D:"},
    {"SET @x = CONCAT(@@sql_mode, ',X'), @`y` = 'a\\'b'",
     "U:x=E:CONCAT(ha_sysvar('sql_mode'), ',X') U:y=E:'a''b'"},
    {"SET jemalloc-prof_active = true", "S:jemalloc-prof_active=W:true"},
    {"SET GLOBAL jemalloc-lg_prof_sample=19",
     "G:jemalloc-lg_prof_sample=E:19"},
    {"SET @@jemalloc-prof_active = 'false'",
     "S:jemalloc-prof_active=E:'false'"},
    {"SET character_set_results = NULL", "S:character_set_results=E:NULL"},
    {"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY",
     "S:transaction_isolation=W:READ-COMMITTED "
     "S:transaction_read_only=W:ON"},
    {"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", ""},
    {"/*!40101 SET SQL_MODE='' */", "S:sql_mode=E:''"},
};

static const char *const bad_sets[] = {
    "SET", "SET = 1", "SET a", "SET a = ", "SET a = 1,", "SET NAMES",
    "SET TRANSACTION ISOLATION LEVEL", "SET jemalloc - x = 1",
};

START_TEST(test_dialect_setvar)
{
    static const char scope[] = "SGU", kind[] = "EWD";
    struct ha_setvar v;
    char err[256] = "", got[1024] = "";

    ck_assert_msg(ha_setvar_parse(sets[_i].in, strlen(sets[_i].in), &v, err,
                                  sizeof(err)) == 0,
                  "case %d: %s", _i, err);
    for (size_t k = 0; k < v.n; k++) {
        size_t l = strlen(got);
        snprintf(got + l, sizeof(got) - l, "%s%c:%s=%c:%s", k ? " " : "",
                 scope[v.items[k].scope], v.items[k].name,
                 kind[v.items[k].kind],
                 v.items[k].value ? v.items[k].value : "");
        ck_assert_int_eq(v.items[k].is_module,
                         strchr(v.items[k].name, '-') != NULL);
    }
    ck_assert_msg(strcmp(got, sets[_i].items) == 0,
                  "case %d: want [%s] got [%s]", _i, sets[_i].items, got);
    ha_setvar_free(&v);
}
END_TEST

START_TEST(test_dialect_setvar_errors)
{
    struct ha_setvar v;
    char err[256] = "";

    ck_assert_msg(ha_setvar_parse(bad_sets[_i], strlen(bad_sets[_i]), &v, err,
                                  sizeof(err)) == -1,
                  "case %d (%s) accepted", _i, bad_sets[_i]);
    ck_assert_msg(strstr(err, "You have an error in your SQL syntax") != NULL,
                  "case %d: %s", _i, err);
    ha_setvar_free(&v);
}
END_TEST

START_TEST(test_dialect_rewrite)
{
    const struct rewrite_case *c = &rewrites[_i];
    struct ha_buf out = HA_BUF_INIT;
    struct ha_dialect_result res;
    char err[128] = "";
    int rc = ha_dialect_rewrite(c->in, strlen(c->in), &out, &res, err,
                                sizeof(err));

    ck_assert_msg(rc == 0, "case %d (%s): rc %d, err %s", _i, c->in, rc, err);
    ck_assert_msg(strcmp((const char *)out.data, c->out) == 0,
                  "case %d: in [%s]\n want [%s]\n got  [%s]", _i, c->in,
                  c->out, (const char *)out.data);
    ck_assert_msg(out.len == strlen(c->out), "case %d: len %zu", _i, out.len);
    ck_assert_msg(res.kind == c->kind, "case %d (%s): kind %d, want %d", _i,
                  c->in, res.kind, c->kind);
    ha_buf_free(&out);
}
END_TEST

START_TEST(test_dialect_use_argument)
{
    struct ha_buf out = HA_BUF_INIT;
    struct ha_dialect_result res;
    const char *sql = "USE `stats`;";

    ck_assert_int_eq(
        ha_dialect_rewrite(sql, strlen(sql), &out, &res, NULL, 0), 0);
    ck_assert_int_eq(res.kind, HA_STMT_USE);
    ck_assert_str_eq(res.arg, "stats");
    ha_buf_free(&out);
}
END_TEST

START_TEST(test_dialect_not_nul_terminated)
{
    /* COM_QUERY text is not NUL-terminated: only len bytes may be read. */
    const char sql[] = {'S', 'E', 'L', 'E', 'C', 'T', ' ', '1', '\''};
    struct ha_buf out = HA_BUF_INIT;
    struct ha_dialect_result res;

    ck_assert_int_eq(ha_dialect_rewrite(sql, 8, &out, &res, NULL, 0), 0);
    ck_assert_str_eq((const char *)out.data, "SELECT 1");
    ha_buf_free(&out);
}
END_TEST

/* ------------------------------------------------------------------ */

static const struct {
    const char *in;
    const char *err_part;
} bad[] = {
    {"SELECT 'abc", "unterminated string literal"},
    {"SELECT \"abc", "unterminated string literal"},
    {"SELECT `abc", "unterminated `quoted identifier`"},
    {"SELECT 1 /* open", "unterminated /* comment"},
    {"/*!40101 SET NAMES utf8", "unterminated /*! comment"},
    {"SELECT 'a\\'", "unterminated string literal"},
};

START_TEST(test_dialect_errors)
{
    struct ha_buf out = HA_BUF_INIT;
    struct ha_dialect_result res;
    char err[128] = "";

    ck_assert_msg(ha_dialect_rewrite(bad[_i].in, strlen(bad[_i].in), &out,
                                     &res, err, sizeof(err)) == -1,
                  "case %d (%s) accepted", _i, bad[_i].in);
    ck_assert_msg(strstr(err, bad[_i].err_part) != NULL,
                  "case %d: error [%s] lacks [%s]", _i, err,
                  bad[_i].err_part);
    ha_buf_free(&out);
}
END_TEST

START_TEST(test_dialect_every_prefix)
{
    /* Every prefix of a statement full of quotes and comments either
     * rewrites or fails cleanly: never reads past len (run under
     * valgrind/ASan to prove it). */
    const char *sql = "SELECT @@a, 'x\\'y', \"q\", `b``c` /*!1 2*/ # h\n"
                      "FROM t LIMIT 1, 2 -- end";
    size_t n = strlen(sql);

    for (size_t len = 0; len <= n; len++) {
        struct ha_buf out = HA_BUF_INIT;
        struct ha_dialect_result res;
        char *copy = malloc(len ? len : 1);
        memcpy(copy, sql, len);
        int rc = ha_dialect_rewrite(copy, len, &out, &res, NULL, 0);
        ck_assert_msg(rc == 0 || rc == -1, "prefix %zu: rc %d", len, rc);
        free(copy);
        ha_buf_free(&out);
    }
}
END_TEST

static const struct {
    const char *text;
    bool trivia;
} trivia_cases[] = {
    {"", true},
    {" \t\n", true},
    {";", true},
    {" ; ;\n", true},
    {"-- comment\n;", true},
    {"/* a */ ; /* b */", true},
    {"SELECT 1", false},
    {"; SELECT 1", false},
    {"-- c\nDROP TABLE t", false},
    {"'unterminated", false},
    {"/* unterminated", false},
};

START_TEST(test_lex_only_trivia)
{
    const char *t = trivia_cases[_i].text;

    ck_assert_msg(ha_lex_only_trivia(t, strlen(t)) == trivia_cases[_i].trivia,
                  "case %d [%s]: want %s", _i, t,
                  trivia_cases[_i].trivia ? "trivia" : "not trivia");
}
END_TEST

/* One text lexed once, split into views: each statement rewrites and
 * parses from its view, and its errors quote it from its own start. */
START_TEST(test_dialect_views_of_one_lex)
{
    const char *sql = "SELECT @@version_comment;\n  SET @x = ;\nSHOW TABLES";
    struct ha_dialect_span *spans = NULL;
    struct ha_dialect_result dr;
    struct ha_setvar sv;
    struct ha_buf out = HA_BUF_INIT;
    struct ha_lex lx, view;
    size_t n = 0;
    char err[512];

    ck_assert_int_eq(ha_lex_run(&lx, sql, strlen(sql), err, sizeof(err)), 0);
    ck_assert_int_eq(ha_dialect_split_lexed(&lx, &spans, &n, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 3);
    ha_lex_view(&lx, spans[0].tok_from, spans[0].tok_to, spans[0].off, &view);
    ck_assert_int_eq(ha_dialect_rewrite_lexed(&view, NULL, &out, &dr, err,
                                              sizeof(err)),
                     0);
    ck_assert_msg(strstr((const char *)out.data, "ha_sysvar") != NULL &&
                      strstr((const char *)out.data, "SET") == NULL,
                  "%s", (const char *)out.data);
    ha_lex_view(&lx, spans[1].tok_from, spans[1].tok_to, spans[1].off, &view);
    ck_assert_int_eq(ha_setvar_parse_lexed(&view, &sv, err, sizeof(err)), -1);
    /* Lines count from the byte after the previous ';' (MySQL's way),
     * which here is the newline: line 2, not line 3 of the whole text. */
    ck_assert_msg(strstr(err, "at line 2") != NULL &&
                      strstr(err, "near ''") != NULL,
                  "%s", err);
    ha_buf_reset(&out);
    ha_lex_view(&lx, spans[2].tok_from, spans[2].tok_to, spans[2].off, &view);
    ck_assert_int_eq(ha_dialect_rewrite_lexed(&view, NULL, &out, &dr, err,
                                              sizeof(err)),
                     0);
    ck_assert_int_eq(dr.kind, HA_STMT_SHOW);
    ha_buf_free(&out);
    free(spans);
    ha_lex_free(&lx);
}
END_TEST

/* ProxySQL's SAVE/LOAD spellings, each mapped to what it means here. */
static const struct {
    const char *sql;
    int module;      /* -1: a parse error */
    int action;
    const char *file;
} persist_cases[] = {
    {"SAVE JEMALLOC VARIABLES TO DISK", HA_PERSIST_JEMALLOC,
     HA_PERSIST_TO_DISK, ""},
    {"save jemalloc variables from memory;", HA_PERSIST_JEMALLOC,
     HA_PERSIST_TO_DISK, ""},
    {"SAVE JEMALLOC VARIABLES FROM MEM", HA_PERSIST_JEMALLOC,
     HA_PERSIST_TO_DISK, ""},
    {"SAVE JEMALLOC VARIABLES TO MEMORY", HA_PERSIST_JEMALLOC,
     HA_PERSIST_TO_MEMORY, ""},
    {"SAVE JEMALLOC VARIABLES FROM RUNTIME", HA_PERSIST_JEMALLOC,
     HA_PERSIST_TO_MEMORY, ""},
    {"LOAD JEMALLOC VARIABLES FROM DISK", HA_PERSIST_JEMALLOC,
     HA_PERSIST_FROM_DISK, ""},
    {"LOAD JEMALLOC VARIABLES TO MEMORY", HA_PERSIST_JEMALLOC,
     HA_PERSIST_FROM_DISK, ""},
    {"LOAD JEMALLOC VARIABLES TO RUNTIME", HA_PERSIST_JEMALLOC,
     HA_PERSIST_TO_RUNTIME, ""},
    {"LOAD JEMALLOC VARIABLES TO RUN", HA_PERSIST_JEMALLOC,
     HA_PERSIST_TO_RUNTIME, ""},
    {"LOAD ADMIN VARIABLES FROM MEMORY", HA_PERSIST_ADMIN,
     HA_PERSIST_TO_RUNTIME, ""},
    {"SAVE CONFIG TO FILE saved.cnf", HA_PERSIST_CONFIG, HA_PERSIST_TO_FILE,
     "saved.cnf"},
    {"SAVE CONFIG TO FILE 'my file.cnf';", HA_PERSIST_CONFIG,
     HA_PERSIST_TO_FILE, "my file.cnf"},
    {"SAVE JEMALLOC VARIABLES FROM DISK", -1, 0, NULL},
    {"LOAD JEMALLOC VARIABLES TO DISK", -1, 0, NULL},
    {"SAVE MYSQL VARIABLES TO DISK", -1, 0, NULL},
    {"SAVE JEMALLOC VARIABLES TO DISK NOW", -1, 0, NULL},
    {"LOAD CONFIG FROM FILE x", -1, 0, NULL},
    {"SAVE CONFIG TO FILE", -1, 0, NULL},
    {"LOAD DATA INFILE 'x' INTO TABLE t", -1, 0, NULL},
};

START_TEST(test_dialect_persist_parse)
{
    struct ha_persist_cmd cmd;
    struct ha_lex lx;
    char err[256];
    const char *sql = persist_cases[_i].sql;
    int rc;

    ck_assert_int_eq(ha_lex_run(&lx, sql, strlen(sql), err, sizeof(err)), 0);
    rc = ha_persist_parse(&lx, ha_lex_next(&lx, SIZE_MAX), &cmd, err,
                          sizeof(err));
    if (persist_cases[_i].module < 0) {
        ck_assert_msg(rc == -1, "%s: parsed", sql);
        ck_assert_msg(err[0] != '\0', "%s: no message", sql);
    } else {
        ck_assert_msg(rc == 0, "%s: %s", sql, err);
        ck_assert_int_eq(cmd.module, persist_cases[_i].module);
        ck_assert_int_eq(cmd.action, persist_cases[_i].action);
        ck_assert_str_eq(cmd.file, persist_cases[_i].file);
    }
    ha_lex_free(&lx);
}
END_TEST

#define HA_DIALECT_TEST_MAX 8
/* CTE names, as the authorizer gets them. */
START_TEST(test_dialect_cte_names)
{
    static const struct {
        const char *sql;
        const char *names; /* joined by ',' */
    } cases[] = {
        {"SELECT 1", ""},
        {"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
         "SELECT * FROM c", "c"},
        {"WITH a AS (SELECT 1), `b b` AS NOT MATERIALIZED (SELECT 2) "
         "SELECT 1", "a,b b"},
        {"SELECT (WITH n AS (SELECT (WITH m AS (SELECT 1) SELECT * FROM m)) "
         "SELECT * FROM n)", "n,m"},
        {"WITH", ""},
        {"WITH x AS", "x"},
        {"with y as (select 1", "y"},
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char names[HA_DIALECT_TEST_MAX][64], joined[256] = "";
        struct ha_lex lx;
        char err[128];
        size_t n;

        ck_assert_int_eq(ha_lex_run(&lx, cases[k].sql, strlen(cases[k].sql),
                                    err, sizeof(err)),
                         0);
        n = ha_dialect_cte_names(&lx, 0, lx.n, names, HA_DIALECT_TEST_MAX);
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                strcat(joined, ",");
            strcat(joined, names[i]);
        }
        ck_assert_msg(strcmp(joined, cases[k].names) == 0, "%s: [%s]",
                      cases[k].sql, joined);
        ha_lex_free(&lx);
    }
}
END_TEST

static Suite *
dialect_suite(void)
{
    Suite *s = suite_create("dialect");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");
    TCase *errors = tcase_create("errors");

    tcase_add_loop_test(core, test_dialect_rewrite, 0,
                        (int)(sizeof(rewrites) / sizeof(rewrites[0])));
    tcase_add_test(core, test_dialect_use_argument);
    tcase_add_test(core, test_dialect_cte_names);
    tcase_add_loop_test(
        core, test_dialect_persist_parse, 0,
        (int)(sizeof(persist_cases) / sizeof(persist_cases[0])));
    tcase_add_test(core, test_dialect_views_of_one_lex);
    tcase_add_loop_test(core, test_lex_only_trivia, 0,
                        (int)(sizeof(trivia_cases) / sizeof(trivia_cases[0])));
    tcase_add_loop_test(core, test_dialect_details, 0,
                        (int)(sizeof(details) / sizeof(details[0])));
    tcase_add_loop_test(core, test_dialect_split, 0,
                        (int)(sizeof(splits) / sizeof(splits[0])));
    tcase_add_loop_test(core, test_dialect_setvar, 0,
                        (int)(sizeof(sets) / sizeof(sets[0])));
    tcase_add_loop_test(errors, test_dialect_setvar_errors, 0,
                        (int)(sizeof(bad_sets) / sizeof(bad_sets[0])));
    tcase_add_test(limits, test_dialect_not_nul_terminated);
    tcase_add_test(limits, test_dialect_every_prefix);
    tcase_add_loop_test(errors, test_dialect_errors, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    suite_add_tcase(s, core);
    suite_add_tcase(s, limits);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(dialect_suite)
