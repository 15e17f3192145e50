/* SPDX-License-Identifier: MIT
 *
 * Dialect rewriter: MySQL statement text in, SQLite text and statement
 * kind out. Table-driven; each failure names the case.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "dialect.h"

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
    {"SELECT @@max_allowed_packet + 1", "SELECT ha_sysvar('max_allowed_packet') + 1",
     HA_STMT_OTHER},
    {"SELECT IF(@@autocommit, 1, 0)", "SELECT IF(ha_sysvar('autocommit'), 1, 0)",
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
    {"ROLLBACK TO SAVEPOINT a", "ROLLBACK TO SAVEPOINT a", HA_STMT_OTHER},
    {"UPDATE global_variables SET variable_value='true'",
     "UPDATE global_variables SET variable_value='true'", HA_STMT_OTHER},
};

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
