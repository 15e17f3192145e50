/* SPDX-License-Identifier: MIT
 *
 * conn.c's protocol commands on a live server over loopback, driven byte
 * by byte by the test client (test/support/client.h): COM_STATISTICS'
 * bare string, COM_SET_OPTION and COM_DEBUG answered with EOF (0xFE-OK
 * under DEPRECATE_EOF), COM_CHANGE_USER with and without an
 * AuthSwitchRequest, COM_RESET_CONNECTION dropping prepared statements,
 * the COM_STMT_* commands that must not reply, COM_PROCESS_KILL and
 * COM_FIELD_LIST, each with its sequence ids. The server runs on its own
 * thread and event loop, as in check_server.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "admin/auth.h"
#include "admin/proto.h"
#include "check_main.h"
#include "core/buf.h"
#include "engine/config.h"
#include "test/support/client.h"
#include "test/support/loopback.h"
#include "test/support/replies.h"

/* ------------------------------------------------------------------ */
/* Fixture: a server on 127.0.0.1, port chosen by the kernel            */
/* ------------------------------------------------------------------ */

static struct ha_config cfg;
static struct lb_server lb;
static int port;

static void
setup(void)
{
    lb_config(&cfg);
    lb_start(&lb, &cfg, "/tmp", false);
    port = lb.port;
}

static void
teardown(void)
{
    lb_stop(&lb);
    ha_config_free(&cfg);
}

/* ------------------------------------------------------------------ */
/* The client (test/support/client.h)                                   */
/* ------------------------------------------------------------------ */

static struct mc_conn
login_as(const char *user, const char *password, uint32_t extra_caps)
{
    struct mc_conn c;

    mc_must_login(&c, port, user, password, extra_caps);
    return c;
}

static struct mc_conn
login(uint32_t extra_caps)
{
    return login_as("admin", "admin", extra_caps);
}

/* Reads a text result set (classic EOF framing) whose first packet has
 * sequence id *seq (1, or the next after an earlier result of the same
 * query) and returns the first value of its first row, and the status
 * flags of the terminating EOF. */
static void
read_result_at(struct mc_conn *c, uint8_t *seqp, char *first, size_t n,
               uint16_t *status)
{
    static struct rp_pkts k;
    struct ha_buf b = HA_BUF_INIT;
    struct rp_result res;
    uint8_t from = *seqp;
    size_t i = 0;
    char why[128];

    ck_assert_msg(mc_read_reply(c, 0, seqp, &b) == 0,
                  "no reply at sequence id %u", from);
    ck_assert_msg(rp_split(b.data, b.len, from, &k, why, sizeof(why)) == 0,
                  "%s", why);
    ck_assert_int_eq(rp_result(&k, &i, false, &res), 0);
    ck_assert_msg(res.kind == RP_ROWS, "not a result set: 0x%02x",
                  k.p[0][0]);
    if (first != NULL && res.n_rows > 0) {
        const uint8_t *v;
        size_t l;

        ck_assert_int_eq(rp_value(&k, &res, 0, 0, &v, &l), 1);
        ck_assert_uint_lt(l, n);
        memcpy(first, v, l);
        first[l] = '\0';
    }
    if (status != NULL)
        *status = res.status;
    ha_buf_free(&b);
}

static void
read_resultset(struct mc_conn *c, char *first, size_t n, uint16_t *status)
{
    uint8_t seq = 1;

    read_result_at(c, &seq, first, n, status);
}

/* ------------------------------------------------------------------ */
/* Simple commands                                                      */
/* ------------------------------------------------------------------ */

START_TEST(test_conn_statistics)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;

    mc_must_command(&c, HA_COM_STATISTICS, NULL, 0);
    mc_expect(&c, &p, 1);
    p.data[p.len] = '\0';
    /* A bare string<EOF>, never an OK (MySQL protocol: COM_STATISTICS). */
    ck_assert_msg(strncmp((char *)p.data, "Uptime: ", 8) == 0, "got %s",
                  (char *)p.data);
    ck_assert_ptr_nonnull(strstr((char *)p.data, "  Threads: 1  Questions: "));
    ck_assert_ptr_nonnull(strstr((char *)p.data, "Queries per second avg: "));
    mc_must_command(&c, HA_COM_PING, NULL, 0);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    mc_close(&c);
}
END_TEST

START_TEST(test_conn_set_option_and_debug)
{
    struct mc_conn c = login(0);
    struct mc_conn d = login(HA_CLIENT_DEPRECATE_EOF);
    struct mc_pkt p;
    char v[64];
    uint16_t status;
    uint8_t seq = 1;

    /* Multi-statements on: EOF, not OK; then a batch gives two results,
     * the first flagged SERVER_MORE_RESULTS_EXISTS. */
    mc_must_command(&c, HA_COM_SET_OPTION, "\x00\x00", 2);
    mc_expect(&c, &p, 1);
    ck_assert(mc_is_eof(&p));
    mc_must_query(&c, "SELECT 'a'; SELECT 'b'");
    read_result_at(&c, &seq, v, sizeof(v), &status);
    ck_assert_str_eq(v, "a");
    ck_assert_uint_eq(status & HA_STATUS_MORE_RESULTS, HA_STATUS_MORE_RESULTS);
    /* The second result continues the sequence. */
    read_result_at(&c, &seq, v, sizeof(v), &status);
    ck_assert_str_eq(v, "b");
    ck_assert_uint_eq(status & HA_STATUS_MORE_RESULTS, 0);
    /* Off again, then an unknown option. */
    mc_must_command(&c, HA_COM_SET_OPTION, "\x01\x00", 2);
    mc_expect(&c, &p, 1);
    ck_assert(mc_is_eof(&p));
    mc_must_query(&c, "SELECT 'a'; SELECT 'b'");
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1064);
    mc_must_command(&c, HA_COM_SET_OPTION, "\x07\x00", 2);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1047);
    mc_must_command(&c, HA_COM_DEBUG, NULL, 0);
    mc_expect(&c, &p, 1);
    ck_assert(mc_is_eof(&p));

    /* DEPRECATE_EOF: the 0xFE-OK form, under 9 bytes (longer, clients
     * read it as a row). */
    mc_must_command(&d, HA_COM_SET_OPTION, "\x00\x00", 2);
    mc_expect(&d, &p, 1);
    ck_assert(p.data[0] == 0xFE && p.len == 7);
    mc_must_command(&d, HA_COM_DEBUG, NULL, 0);
    mc_expect(&d, &p, 1);
    ck_assert(p.data[0] == 0xFE && p.len == 7);
    mc_close(&c);
    mc_close(&d);
}
END_TEST

START_TEST(test_conn_field_list)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;

    mc_must_query(&c, "CREATE TABLE ft (a INTEGER, b TEXT)");
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    mc_must_command(&c, HA_COM_FIELD_LIST, "ft\0", 3);
    for (uint8_t seq = 1; seq <= 2; seq++) {
        mc_expect(&c, &p, seq);
        ck_assert(p.data[0] == 0x03 && memcmp(p.data + 1, "def", 3) == 0);
        /* ... ending with the default value: NULL here. */
        ck_assert_int_eq(p.data[p.len - 1], 0xFB);
    }
    mc_expect(&c, &p, 3);
    ck_assert(mc_is_eof(&p));
    /* A wildcard narrows the list. */
    mc_must_command(&c, HA_COM_FIELD_LIST, "ft\0b", 4);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x03);
    mc_expect(&c, &p, 2);
    ck_assert(mc_is_eof(&p));
    mc_must_command(&c, HA_COM_FIELD_LIST, "nosuch\0", 7);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1146);
    mc_close(&c);
}
END_TEST

START_TEST(test_conn_process_kill)
{
    struct mc_conn c = login(0);
    struct mc_conn victim = login(0);
    struct mc_pkt p;
    uint8_t id[4];

    mc_put_le(id, victim.id, 4);
    mc_must_command(&c, HA_COM_PROCESS_KILL, id, 4);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    ck_assert_msg(mc_read(&victim, &p) == -1, "the victim is still open");
    mc_put_le(id, 999999, 4);
    mc_must_command(&c, HA_COM_PROCESS_KILL, id, 4);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1094);
    mc_must_command(&c, HA_COM_PROCESS_KILL, id, 2);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1835);
    mc_close(&c);
    mc_close(&victim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* COM_CHANGE_USER and COM_RESET_CONNECTION                             */
/* ------------------------------------------------------------------ */

/* COM_CHANGE_USER payload: user, 1-byte auth length + auth, schema,
 * collation, plugin. */
static size_t
change_user_pkt(uint8_t *b, const char *user, const uint8_t *auth,
                size_t auth_len, const char *plugin)
{
    size_t n = 0;

    b[n++] = HA_COM_CHANGE_USER;
    strcpy((char *)b + n, user);
    n += strlen(user) + 1;
    b[n++] = (uint8_t)auth_len;
    memcpy(b + n, auth, auth_len);
    n += auth_len;
    strcpy((char *)b + n, "main");
    n += 5;
    b[n++] = 45;
    b[n++] = 0;
    strcpy((char *)b + n, plugin);
    n += strlen(plugin) + 1;
    return n;
}

START_TEST(test_conn_change_user)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;
    uint8_t b[256], proof[20];
    char v[64];
    size_t n;

    /* A native proof against the greeting's scramble: OK at once. */
    ha_auth_native_proof("stats", 5, c.scramble, proof);
    n = change_user_pkt(b, "stats", proof, 20, "mysql_native_password");
    mc_must_write(&c, 0, b, n);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    mc_must_query(&c, "SELECT CURRENT_USER()");
    read_resultset(&c, v, sizeof(v), NULL);
    ck_assert_str_eq(v, "stats@%");
    mc_must_query(&c, "SELECT DATABASE()");
    read_resultset(&c, v, sizeof(v), NULL);
    ck_assert_str_eq(v, "main");
    mc_close(&c);
}
END_TEST

/* A client that answers for another plugin gets an AuthSwitchRequest
 * with a fresh scramble, and the sequence goes on 1, 2, 3. */
START_TEST(test_conn_change_user_switch)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;
    uint8_t b[256], proof[20], fresh[20], junk[32];
    char v[64];
    size_t n;

    memset(junk, 'x', sizeof(junk));
    n = change_user_pkt(b, "admin", junk, sizeof(junk),
                        "caching_sha2_password");
    mc_must_write(&c, 0, b, n);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0xFE);
    ck_assert_str_eq((char *)p.data + 1, "mysql_native_password");
    ck_assert_uint_eq(p.len, 1 + 22 + 21);
    memcpy(fresh, p.data + 23, 20);
    ck_assert_msg(memcmp(fresh, c.scramble, 20) != 0, "scramble reused");
    ha_auth_native_proof("admin", 5, fresh, proof);
    mc_must_write(&c, 2, proof, 20);
    mc_expect(&c, &p, 3);
    ck_assert_int_eq(p.data[0], 0x00);
    mc_must_query(&c, "SELECT CURRENT_USER()");
    read_resultset(&c, v, sizeof(v), NULL);
    ck_assert_str_eq(v, "admin@%");
    mc_close(&c);
}
END_TEST

START_TEST(test_conn_change_user_denied)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;
    uint8_t b[256], proof[20];
    size_t n;

    ha_auth_native_proof("wrong", 5, c.scramble, proof);
    n = change_user_pkt(b, "admin", proof, 20, "mysql_native_password");
    mc_must_write(&c, 0, b, n);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1045);
    ck_assert_msg(mc_read(&c, &p) == -1, "still open after ERR 1045");
    mc_close(&c);

    /* A truncated payload: ERR, then closed. */
    c = login(0);
    mc_must_write(&c, 0, "\x11" "admin", 6);
    mc_expect(&c, &p, 1);
    ck_assert_uint_eq(p.data[0], 0xFF);
    ck_assert_msg(mc_read(&c, &p) == -1, "still open after bad packet");
    mc_close(&c);
}
END_TEST

START_TEST(test_conn_reset_connection)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;
    uint8_t exec[10] = {HA_COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0};

    mc_must_command(&c, HA_COM_STMT_PREPARE, "SELECT 1", 8);
    mc_expect(&c, &p, 1);
    ck_assert(p.data[0] == 0x00 && p.data[1] == 1);
    mc_expect(&c, &p, 2); /* column */
    mc_expect(&c, &p, 3);
    ck_assert(mc_is_eof(&p));
    mc_must_query(&c, "SET autocommit = 0");
    mc_expect(&c, &p, 1);
    ck_assert_uint_eq(p.data[3] & HA_STATUS_AUTOCOMMIT, 0);
    mc_must_command(&c, HA_COM_RESET_CONNECTION, NULL, 0);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    /* autocommit on again (statements commit as they run: no
     * transaction is ever open). */
    ck_assert_uint_eq(p.data[3] & (HA_STATUS_IN_TRANS | HA_STATUS_AUTOCOMMIT),
                      HA_STATUS_AUTOCOMMIT);
    mc_must_write(&c, 0, exec, sizeof(exec));
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1243);
    /* Ids keep counting after a reset. */
    mc_must_command(&c, HA_COM_STMT_PREPARE, "SELECT 2", 8);
    mc_expect(&c, &p, 1);
    ck_assert(p.data[0] == 0x00 && p.data[1] == 2);
    mc_close(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Prepared statements on the wire                                      */
/* ------------------------------------------------------------------ */

/* SEND_LONG_DATA and CLOSE have no reply: the next packet the client
 * reads is the answer to its next command (MySQL protocol:
 * COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE). */
START_TEST(test_conn_stmt_no_reply)
{
    struct mc_conn c = login(HA_CLIENT_DEPRECATE_EOF);
    struct mc_pkt p;
    uint8_t ld[] = {HA_COM_STMT_SEND_LONG_DATA, 1, 0, 0, 0, 0, 0, 'h', 'i'};
    uint8_t exec[] = {HA_COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0,
                      0x00, 0x01, HA_TYPE_VAR_STRING, 0x00};
    uint8_t close_[] = {HA_COM_STMT_CLOSE, 1, 0, 0, 0};
    uint8_t fetch[] = {HA_COM_STMT_FETCH, 1, 0, 0, 0, 1, 0, 0, 0};

    mc_must_command(&c, HA_COM_STMT_PREPARE, "SELECT ? AS v", 13);
    mc_expect(&c, &p, 1);
    ck_assert(p.data[0] == 0x00 && p.data[1] == 1);
    mc_expect(&c, &p, 2); /* the parameter; no EOF */
    mc_expect(&c, &p, 3); /* the column; no EOF */
    ck_assert_int_eq(p.data[0], 0x03);
    mc_must_write(&c, 0, ld, sizeof(ld));
    mc_must_write(&c, 0, exec, sizeof(exec));
    mc_expect(&c, &p, 1);
    ck_assert(p.len == 1 && p.data[0] == 1);
    mc_expect(&c, &p, 2);
    mc_expect(&c, &p, 3);
    ck_assert_uint_eq(p.len, 5);
    ck_assert_mem_eq(p.data, "\x00\x00\x02hi", 5);
    mc_expect(&c, &p, 4);
    ck_assert(p.data[0] == 0xFE && p.len == 7);
    mc_must_write(&c, 0, fetch, sizeof(fetch));
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1421);
    mc_must_write(&c, 0, close_, sizeof(close_));
    mc_must_write(&c, 0, close_, sizeof(close_)); /* twice: still silent */
    mc_must_command(&c, HA_COM_PING, NULL, 0);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    mc_must_write(&c, 0, exec, sizeof(exec));
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(mc_err_code(&p), 1243);
    mc_close(&c);
}
END_TEST

static Suite *
conn_suite(void)
{
    Suite *s = suite_create("conn");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_conn_statistics);
    tcase_add_test(tc, test_conn_set_option_and_debug);
    tcase_add_test(tc, test_conn_field_list);
    tcase_add_test(tc, test_conn_process_kill);
    tcase_add_test(tc, test_conn_change_user);
    tcase_add_test(tc, test_conn_change_user_switch);
    tcase_add_test(tc, test_conn_reset_connection);
    tcase_add_test(tc, test_conn_stmt_no_reply);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_conn_change_user_denied);
    suite_add_tcase(s, tc);

    return s;
}

HA_CHECK_MAIN(conn_suite)
