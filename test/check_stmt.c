/* SPDX-License-Identifier: MIT
 *
 * Unit tests for admin/stmt.c, prepared statements on a real session over
 * a private memdb database: the packets of COM_STMT_PREPARE_OK in both EOF
 * framings, execution with every parameter kind and re-execution with
 * new_params_bind_flag = 0, binary rows encoded by the declared column
 * type, long data, reset, close, the per-connection limit, statements
 * SQLite cannot prepare (BEGIN, COMMIT), and malformed payloads answered
 * with ERR while the statement stays usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "test/support/replies.h"

#include "core/buf.h"
#include "admin/proto.h"
#include "admin/query.h"
#include "admin/exec.h"
#include "admin/session.h"
#include "admin/stmt.h"
#include "core/util.h"

#define CAPS_EOF (HA_SERVER_CAPABILITIES & ~HA_CLIENT_DEPRECATE_EOF)
#define CAPS_NOEOF (HA_SERVER_CAPABILITIES | HA_CLIENT_DEPRECATE_EOF)

static struct ha_session_shared shared;
static struct ha_session sess;
static struct ha_stmt_table tab;
static struct ha_buf out;
static uint32_t caps = CAPS_EOF;


static void
setup(void)
{
    static int n;
    char err[256];

    memset(&shared, 0, sizeof(shared));
    snprintf(shared.db_uri, sizeof(shared.db_uri),
             "file:/check-stmt-%d-%d?vfs=memdb", (int)getpid(), n++);
    memset(&sess, 0, sizeof(sess));
    ck_assert_msg(ha_session_open(&sess, &shared, 7, err, sizeof(err)) == 0,
                  "session: %s", err);
    ha_stmt_table_init(&tab);
    ha_buf_init(&out);
    caps = CAPS_EOF;
}

static void
teardown(void)
{
    ha_stmt_table_free(&tab);
    ha_session_close(&sess);
    ha_buf_free(&out);
}

/* Splits out into packets, checking that sequence ids run from 1. */
static void
split(struct rp_pkts *k)
{
    char why[128];

    ck_assert_msg(rp_split(out.data, out.len, 1, k, why, sizeof(why)) == 0,
                  "%s", why);
}

static void
reply_begin(struct ha_reply *r)
{
    ha_buf_reset(&out);
    ha_reply_init(r, &out, 1, caps, ha_session_status(&sess));
}

static void
prepare(const char *sql, struct rp_pkts *k)
{
    struct ha_reply r;

    reply_begin(&r);
    ha_stmt_prepare(&tab, &sess, sql, strlen(sql), &r);
    ha_reply_free(&r);
    split(k);
}

static void
execute(const struct ha_buf *pkt, struct rp_pkts *k)
{
    struct ha_reply r;
    /* Exact-size copy so valgrind sees any overread. */
    uint8_t *copy = malloc(pkt->len);

    ck_assert_ptr_nonnull(copy);
    memcpy(copy, pkt->data, pkt->len);
    reply_begin(&r);
    ha_stmt_execute(&tab, &sess, copy, pkt->len, &r);
    ha_reply_free(&r);
    free(copy);
    split(k);
}

/* Prepares sql and returns its id, checking the counts. */
static uint32_t
prepare_ok(const char *sql, uint16_t ncol, uint16_t nparams)
{
    struct rp_pkts k;

    prepare(sql, &k);
    ck_assert_msg(k.n >= 1 && k.p[0][0] == 0x00 && k.len[0] == 12,
                  "%s: not PREPARE_OK (0x%02x, %zu bytes: %.*s)", sql,
                  k.n ? k.p[0][0] : 0, k.n ? k.len[0] : 0,
                  k.n ? (int)k.len[0] - 9 : 0,
                  k.n && k.len[0] > 9 ? (const char *)k.p[0] + 9 : "");
    ck_assert_uint_eq(k.p[0][5] | k.p[0][6] << 8, ncol);
    ck_assert_uint_eq(k.p[0][7] | k.p[0][8] << 8, nparams);
    return (uint32_t)(k.p[0][1] | k.p[0][2] << 8 | k.p[0][3] << 16 |
                      (uint32_t)k.p[0][4] << 24);
}

static int
err_code(const struct rp_pkts *k)
{
    ck_assert_msg(k->n == 1 && k->p[0][0] == 0xFF,
                  "expected one ERR, got %zu packets starting 0x%02x", k->n,
                  k->n ? k->p[0][0] : 0);
    return k->p[0][1] | k->p[0][2] << 8;
}

/* Builds COM_STMT_EXECUTE: head, then the parameter block given raw. */
static void
exec_pkt(struct ha_buf *b, uint32_t id, const void *params, size_t n)
{
    ha_buf_reset(b);
    ha_buf_append_u8(b, HA_COM_STMT_EXECUTE);
    ha_buf_append_le(b, id, 4);
    ha_buf_append_u8(b, 0);
    ha_buf_append_le(b, 1, 4);
    if (n > 0)
        ha_buf_append(b, params, n);
}

#define RAW(s) s, sizeof(s) - 1

/* ------------------------------------------------------------------ */
/* Prepare                                                              */
/* ------------------------------------------------------------------ */

START_TEST(test_stmt_prepare_packets)
{
    struct rp_pkts k;

    /* Classic framing: OK, 2 params, EOF, 2 columns, EOF. */
    prepare("SELECT ? + 1 AS a, ? AS b", &k);
    ck_assert_uint_eq(k.n, 7);
    ck_assert_mem_eq(k.p[0], "\x00\x01\x00\x00\x00\x02\x00\x02\x00\x00\x00"
                             "\x00", 12);
    ck_assert(k.p[1][0] == 0x03 && memcmp(k.p[1] + 1, "def", 3) == 0);
    ck_assert(k.p[3][0] == 0xFE && k.len[3] == 5);
    ck_assert(k.p[6][0] == 0xFE && k.len[6] == 5);

    /* DEPRECATE_EOF: no EOF after either block; ids keep counting. */
    caps = CAPS_NOEOF;
    prepare("SELECT ? + 1 AS a, ? AS b", &k);
    ck_assert_uint_eq(k.n, 5);
    ck_assert_uint_eq(k.p[0][1], 2);
    for (size_t i = 1; i < k.n; i++)
        ck_assert_uint_eq(k.p[i][0], 0x03);

    /* No parameters, no columns: the header alone. */
    caps = CAPS_EOF;
    prepare("CREATE TABLE t (i INTEGER)", &k);
    ck_assert_uint_eq(k.n, 1);
    ck_assert_uint_eq(k.p[0][1], 3);
    /* "?" inside literals and comments is not a parameter (a client
     * counts only the real ones);
     * the dialect's MySQL escapes and LIMIT a,b apply. */
    prepare_ok("SELECT '?', \"it\\'s ?\" /* ? */, ? LIMIT 1, ?", 3, 2);
}
END_TEST

START_TEST(test_stmt_prepare_errors)
{
    struct rp_pkts k;

    prepare("SELEC 1", &k);
    ck_assert_int_eq(err_code(&k), 1064);
    prepare("SELECT * FROM nosuch", &k);
    ck_assert_int_eq(err_code(&k), 1146);
    prepare("  ", &k);
    ck_assert_int_eq(err_code(&k), 1065);
    prepare("SELECT 1; SELECT 2", &k);
    ck_assert_int_eq(err_code(&k), 1064);
    prepare("SELECT 'open", &k);
    ck_assert_int_eq(err_code(&k), 1064);
    /* Failed prepares use no id. */
    ck_assert_uint_eq(prepare_ok("SELECT 1", 1, 0), 1);
}
END_TEST

START_TEST(test_stmt_limit)
{
    struct rp_pkts k;
    uint8_t close_pkt[5] = {HA_COM_STMT_CLOSE, 2, 0, 0, 0};

    tab.max = 3;
    for (uint32_t i = 1; i <= 3; i++)
        ck_assert_uint_eq(prepare_ok("SELECT 1", 1, 0), i);
    prepare("SELECT 1", &k);
    ck_assert_int_eq(err_code(&k), 1461);
    ck_assert_int_eq(ha_stmt_close(&tab, close_pkt, sizeof(close_pkt)), 0);
    ck_assert_int_eq(ha_stmt_close(&tab, close_pkt, sizeof(close_pkt)), -1);
    ck_assert_int_eq(ha_stmt_close(&tab, close_pkt, 3), -1);
    ck_assert_uint_eq(prepare_ok("SELECT 1", 1, 0), 4);
    ck_assert_ptr_null(ha_stmt_sql(&tab, 2, NULL));
    ck_assert_str_eq(ha_stmt_sql(&tab, 4, NULL), "SELECT 1");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Execute                                                              */
/* ------------------------------------------------------------------ */

START_TEST(test_stmt_execute_roundtrip)
{
    struct ha_buf b = HA_BUF_INIT;
    struct rp_pkts k;
    uint32_t ins, sel;

    prepare_ok("CREATE TABLE t (i INTEGER, d REAL, s TEXT, x BLOB)", 0, 0);
    exec_pkt(&b, 1, NULL, 0);
    execute(&b, &k);
    ck_assert(k.n == 1 && k.p[0][0] == 0x00);

    ins = prepare_ok("INSERT INTO t VALUES (?, ?, ?, ?)", 0, 4);
    /* longlong 42, double 2.5, string "hi", blob 00 01 */
    exec_pkt(&b, ins,
             RAW("\x00\x01"
                 "\x08\x00\x05\x00\xFE\x00\xFC\x00"
                 "\x2A\x00\x00\x00\x00\x00\x00\x00"
                 "\x00\x00\x00\x00\x00\x00\x04\x40"
                 "\x02hi"
                 "\x02\x00\x01"));
    execute(&b, &k);
    ck_assert_msg(k.n == 1 && k.p[0][0] == 0x00 && k.p[0][1] == 1,
                  "insert: %zu packets, first 0x%02x", k.n, k.p[0][0]);
    /* new_params_bind_flag = 0: the same types again; the
     * string and blob are NULL this time. */
    exec_pkt(&b, ins,
             RAW("\x0C\x00"
                 "\xF9\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
                 "\x00\x00\x00\x00\x00\x00\xF0\xBF"));
    execute(&b, &k);
    ck_assert(k.n == 1 && k.p[0][0] == 0x00 && k.p[0][1] == 1);

    sel = prepare_ok("SELECT i, d, s, x FROM t WHERE i > ? ORDER BY rowid",
                     4, 1);
    exec_pkt(&b, sel, RAW("\x00\x01\x03\x00\x00\x00\x00\x80"));
    execute(&b, &k);
    /* count, 4 defs, EOF, 2 rows, EOF */
    ck_assert_uint_eq(k.n, 9);
    ck_assert(k.len[0] == 1 && k.p[0][0] == 4);
    ck_assert_uint_eq(k.p[1][k.len[1] - 6], HA_TYPE_LONGLONG);
    ck_assert_uint_eq(k.p[2][k.len[2] - 6], HA_TYPE_DOUBLE);
    ck_assert_uint_eq(k.p[3][k.len[3] - 6], HA_TYPE_VAR_STRING);
    ck_assert_uint_eq(k.p[4][k.len[4] - 6], HA_TYPE_BLOB);
    ck_assert(k.p[5][0] == 0xFE && k.len[5] == 5);
    ck_assert_uint_eq(k.len[6], 1 + 1 + 8 + 8 + 3 + 3);
    ck_assert_mem_eq(k.p[6],
                     "\x00\x00"
                     "\x2A\x00\x00\x00\x00\x00\x00\x00"
                     "\x00\x00\x00\x00\x00\x00\x04\x40"
                     "\x02hi"
                     "\x02\x00\x01",
                     k.len[6]);
    /* Row 2: s and x NULL = bits 4 and 5 of the offset bitmap. */
    ck_assert_uint_eq(k.len[7], 1 + 1 + 8 + 8);
    ck_assert_mem_eq(k.p[7],
                     "\x00\x30"
                     "\xF9\xFF\xFF\xFF\xFF\xFF\xFF\xFF"
                     "\x00\x00\x00\x00\x00\x00\xF0\xBF",
                     k.len[7]);
    ck_assert(k.p[8][0] == 0xFE && k.len[8] == 5);

    /* Re-execute with the stored type and a new value: only row 1. */
    exec_pkt(&b, sel, RAW("\x00\x00\x00\x00\x00\x00"));
    execute(&b, &k);
    ck_assert_uint_eq(k.n, 8);

    /* DEPRECATE_EOF: no EOF after the definitions, 0xFE-OK at the end. */
    caps = CAPS_NOEOF;
    execute(&b, &k);
    ck_assert_uint_eq(k.n, 7);
    ck_assert(k.p[6][0] == 0xFE && k.len[6] == 7);
    ha_buf_free(&b);
}
END_TEST

/* A value whose storage class differs from the declared type is sent as
 * the declared type: libmysqlclient advances by the type's width. */
START_TEST(test_stmt_execute_declared_type)
{
    struct ha_buf b = HA_BUF_INIT;
    struct rp_pkts k;
    uint32_t id;

    prepare_ok("CREATE TABLE t (i INTEGER, d REAL, s TEXT)", 0, 0);
    exec_pkt(&b, 1, NULL, 0);
    execute(&b, &k);
    prepare_ok("INSERT INTO t VALUES ('abc', 'x', 12)", 0, 0);
    exec_pkt(&b, 2, NULL, 0);
    execute(&b, &k);
    id = prepare_ok("SELECT i, d, s FROM t", 3, 0);
    exec_pkt(&b, id, NULL, 0);
    execute(&b, &k);
    ck_assert_uint_eq(k.n, 7);
    ck_assert_uint_eq(k.len[5], 1 + 1 + 8 + 8 + 3);
    ck_assert_mem_eq(k.p[5],
                     "\x00\x00"
                     "\x00\x00\x00\x00\x00\x00\x00\x00"
                     "\x00\x00\x00\x00\x00\x00\x00\x00"
                     "\x02"
                     "12",
                     k.len[5]);
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_stmt_execute_errors)
{
    struct ha_buf b = HA_BUF_INIT;
    struct rp_pkts k;
    uint32_t id = prepare_ok("SELECT ? AS v", 1, 1);
    uint8_t close_pkt[5] = {HA_COM_STMT_CLOSE, 0, 0, 0, 0};

    exec_pkt(&b, 99, RAW("\x00\x01\x08\x00\x01\x00\x00\x00\x00\x00\x00\x00"));
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1243);
    /* Types never sent, then truncated, then a lying length. */
    exec_pkt(&b, id, RAW("\x00\x00\x01"));
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1835);
    exec_pkt(&b, id, RAW("\x00\x01\x08\x00\x01\x00"));
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1835);
    exec_pkt(&b, id, RAW("\x00\x01\xFD\x00\xFC\xFF\xFF" "ab"));
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1835);
    b.len = 3;
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1835);
    /* The statement still works, and no types were kept from the bad
     * packets. */
    exec_pkt(&b, id, RAW("\x00\x00"));
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1835);
    exec_pkt(&b, id, RAW("\x00\x01\xFD\x00\x02ok"));
    execute(&b, &k);
    ck_assert_uint_eq(k.n, 5);
    ck_assert_mem_eq(k.p[3], "\x00\x00\x02ok", 5);

    close_pkt[1] = (uint8_t)id;
    ck_assert_int_eq(ha_stmt_close(&tab, close_pkt, sizeof(close_pkt)), 0);
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1243);
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_stmt_long_data_and_reset)
{
    struct ha_buf b = HA_BUF_INIT;
    struct ha_reply r;
    struct rp_pkts k;
    char err[256];
    uint32_t id = prepare_ok("SELECT ? AS a, ? AS b", 2, 2);
    uint8_t ld1[] = "\x18\x01\x00\x00\x00\x00\x00"
                    "ab";
    uint8_t ld2[] = "\x18\x01\x00\x00\x00\x00\x00"
                    "cd";
    uint8_t ld_bad[] = "\x18\x01\x00\x00\x00\x05\x00"
                       "x";
    uint8_t reset[] = {HA_COM_STMT_RESET, 1, 0, 0, 0};

    ck_assert_uint_eq(id, 1);
    ck_assert_int_eq(ha_stmt_send_long_data(&tab, ld1, sizeof(ld1) - 1, err,
                                            sizeof(err)),
                     0);
    ck_assert_int_eq(ha_stmt_send_long_data(&tab, ld2, sizeof(ld2) - 1, err,
                                            sizeof(err)),
                     0);
    /* Parameter 0 has no value in the packet: it came as long data. */
    exec_pkt(&b, id, RAW("\x00\x01\xFC\x00\x08\x00\x07\x00\x00\x00\x00\x00"
                         "\x00\x00"));
    execute(&b, &k);
    ck_assert_uint_eq(k.n, 6);
    ck_assert_uint_eq(k.len[4], 2 + 5 + 8);
    ck_assert_mem_eq(k.p[4], "\x00\x00\x04"
                             "abcd",
                     7);

    /* Long data serves one execute; after a reset it is gone too. */
    ck_assert_int_eq(ha_stmt_send_long_data(&tab, ld1, sizeof(ld1) - 1, err,
                                            sizeof(err)),
                     0);
    reply_begin(&r);
    ha_stmt_reset(&tab, reset, sizeof(reset), &r);
    ha_reply_free(&r);
    split(&k);
    ck_assert(k.n == 1 && k.p[0][0] == 0x00);
    exec_pkt(&b, id, RAW("\x00\x00\x02xy\x01\x00\x00\x00\x00\x00\x00\x00"));
    execute(&b, &k);
    ck_assert_uint_eq(k.n, 6);
    ck_assert_mem_eq(k.p[4], "\x00\x00\x02xy", 5);

    /* Long data for a parameter the statement lacks: reported by the
     * next execute, then forgotten. */
    ck_assert_int_eq(ha_stmt_send_long_data(&tab, ld_bad, sizeof(ld_bad) - 1,
                                            err, sizeof(err)),
                     -1);
    execute(&b, &k);
    ck_assert_int_eq(err_code(&k), 1210);
    execute(&b, &k);
    ck_assert_uint_eq(k.n, 6);

    reset[1] = 9;
    reply_begin(&r);
    ha_stmt_reset(&tab, reset, sizeof(reset), &r);
    ha_reply_free(&r);
    split(&k);
    ck_assert_int_eq(err_code(&k), 1243);
    ck_assert_int_eq(ha_stmt_send_long_data(&tab, ld1, 5, err, sizeof(err)),
                     -1);
    ha_buf_free(&b);
}
END_TEST

/* sysbench prepares BEGIN and COMMIT; the session answers them (OK, no
 * effect) at execute time. */
START_TEST(test_stmt_special)
{
    struct ha_buf b = HA_BUF_INIT;
    struct rp_pkts k;
    uint32_t begin = prepare_ok("BEGIN", 0, 0);
    uint32_t commit = prepare_ok("COMMIT", 0, 0);

    exec_pkt(&b, begin, NULL, 0);
    execute(&b, &k);
    ck_assert(k.n == 1 && k.p[0][0] == 0x00);
    /* Statements commit as they run: BEGIN opens nothing. */
    ck_assert_uint_eq(ha_session_status(&sess) & HA_STATUS_IN_TRANS, 0);
    exec_pkt(&b, commit, NULL, 0);
    execute(&b, &k);
    ck_assert(k.n == 1 && k.p[0][0] == 0x00);
    ck_assert_uint_eq(ha_session_status(&sess) & HA_STATUS_IN_TRANS, 0);
    /* COMMIT with no transaction open answers OK, as MySQL does. */
    execute(&b, &k);
    ck_assert(k.n == 1 && k.p[0][0] == 0x00);
    ha_buf_free(&b);
}
END_TEST

/* Under autocommit=0 an executed write still commits at once, as a
 * COM_QUERY write does: another session sees it before any COMMIT. */
START_TEST(test_stmt_autocommit_off)
{
    struct ha_buf b = HA_BUF_INIT;
    struct ha_reply r;
    struct rp_pkts k;
    uint32_t create = prepare_ok("CREATE TABLE a (i INTEGER)", 0, 0);
    uint32_t sel, ins, commit;

    exec_pkt(&b, create, NULL, 0);
    execute(&b, &k);
    reply_begin(&r);
    ha_exec_query(&sess, "SET autocommit=0", 16, &r);
    ha_reply_free(&r);
    sel = prepare_ok("SELECT count(*) FROM a", 1, 0);
    ins = prepare_ok("INSERT INTO a VALUES (?)", 0, 1);
    commit = prepare_ok("COMMIT", 0, 0);
    exec_pkt(&b, sel, NULL, 0);
    execute(&b, &k);
    ck_assert_uint_eq(ha_session_status(&sess) & HA_STATUS_IN_TRANS, 0);
    exec_pkt(&b, ins, RAW("\x00\x01\x01\x00\x05"));
    execute(&b, &k);
    ck_assert(k.n == 1 && k.p[0][0] == 0x00);
    /* The OK reports no open transaction, and autocommit as set. */
    ck_assert_uint_eq((k.p[0][3] | k.p[0][4] << 8) &
                          (HA_STATUS_IN_TRANS | HA_STATUS_AUTOCOMMIT),
                      0);
    exec_pkt(&b, commit, NULL, 0);
    execute(&b, &k);
    ck_assert_uint_eq(ha_session_status(&sess) & HA_STATUS_IN_TRANS, 0);
    ha_buf_free(&b);
}
END_TEST

static Suite *
stmt_suite(void)
{
    Suite *s = suite_create("stmt");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_stmt_prepare_packets);
    tcase_add_test(tc, test_stmt_execute_roundtrip);
    tcase_add_test(tc, test_stmt_execute_declared_type);
    tcase_add_test(tc, test_stmt_long_data_and_reset);
    tcase_add_test(tc, test_stmt_special);
    tcase_add_test(tc, test_stmt_autocommit_off);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_stmt_limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_stmt_prepare_errors);
    tcase_add_test(tc, test_stmt_execute_errors);
    suite_add_tcase(s, tc);

    return s;
}

HA_CHECK_MAIN(stmt_suite)
