/* SPDX-License-Identifier: MIT
 *
 * conn.c's protocol commands on a live server over loopback, driven byte
 * by byte: COM_STATISTICS' bare string, COM_SET_OPTION and COM_DEBUG
 * answered with EOF (0xFE-OK under DEPRECATE_EOF), COM_CHANGE_USER with
 * and without an AuthSwitchRequest, COM_RESET_CONNECTION dropping
 * prepared statements, the COM_STMT_* commands that must not reply,
 * COM_PROCESS_KILL and COM_FIELD_LIST, each with its sequence ids. The
 * server runs on its own thread and event loop, as in check_server.
 */
#include <arpa/inet.h>
#include <check.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "admin/auth.h"
#include "check_main.h"
#include "loopback.h"
#include "engine/config.h"
#include "vtab/mallctl.h"
#include "admin/proto.h"
#include "admin/server.h"

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
/* A minimal blocking client                                            */
/* ------------------------------------------------------------------ */

struct pkt {
    uint8_t seq;
    size_t len;
    uint8_t data[4096]; /* payloads here are small */
};

/* One logged-in (or not yet) client. */
struct cli {
    int fd;
    uint32_t id;         /* connection id from the greeting */
    uint8_t scramble[20];
};

static int
read_pkt(int fd, struct pkt *p)
{
    uint8_t h[4];

    if (lb_read_full(fd, h, 4) != 0)
        return -1;
    p->len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    p->seq = h[3];
    ck_assert_uint_lt(p->len, sizeof(p->data));
    return lb_read_full(fd, p->data, p->len);
}

static void
expect_pkt(int fd, struct pkt *p, uint8_t seq)
{
    ck_assert_msg(read_pkt(fd, p) == 0, "no packet (expected seq %u)", seq);
    ck_assert_msg(p->seq == seq, "sequence id %u, expected %u", p->seq, seq);
}

#define CLIENT_CAPS                                                          \
    (HA_CLIENT_LONG_PASSWORD | HA_CLIENT_PROTOCOL_41 |                       \
     HA_CLIENT_SECURE_CONNECTION | HA_CLIENT_PLUGIN_AUTH |                   \
     HA_CLIENT_PLUGIN_AUTH_LENENC_DATA | HA_CLIENT_TRANSACTIONS)

/* Connects, reads HandshakeV10 (Protocol::HandshakeV10 offsets) and logs
 * in as user with password. */
static struct cli
login_as(const char *user, const char *password, uint32_t extra_caps)
{
    struct sockaddr_in sin;
    struct timeval tv = {10, 0};
    struct cli c;
    struct pkt p;
    uint8_t b[256], proof[20];
    size_t off, n;

    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(c.fd, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ck_assert_int_eq(connect(c.fd, (struct sockaddr *)&sin, sizeof(sin)), 0);

    expect_pkt(c.fd, &p, 0);
    off = 1 + strnlen((char *)p.data + 1, p.len - 1) + 1;
    c.id = (uint32_t)p.data[off] | (uint32_t)p.data[off + 1] << 8 |
           (uint32_t)p.data[off + 2] << 16 | (uint32_t)p.data[off + 3] << 24;
    off += 4;
    memcpy(c.scramble, p.data + off, 8);
    memcpy(c.scramble + 8, p.data + off + 27, 12);

    ha_auth_native_proof(password, strlen(password), c.scramble, proof);
    lb_put_le(b, CLIENT_CAPS | extra_caps, 4);
    lb_put_le(b + 4, 16u << 20, 4);
    b[8] = 45;
    memset(b + 9, 0, 23);
    n = 32;
    strcpy((char *)b + n, user);
    n += strlen(user) + 1;
    b[n++] = 20;
    memcpy(b + n, proof, 20);
    n += 20;
    strcpy((char *)b + n, "mysql_native_password");
    n += strlen("mysql_native_password") + 1;
    lb_send_pkt(c.fd, 1, b, n);
    expect_pkt(c.fd, &p, 2);
    ck_assert_msg(p.data[0] == 0x00, "login answered 0x%02x", p.data[0]);
    return c;
}

static struct cli
login(uint32_t extra_caps)
{
    return login_as("admin", "admin", extra_caps);
}

/* Sends a command whose payload is the byte cmd followed by n bytes. */
static void
send_cmd(int fd, uint8_t cmd, const void *arg, size_t n)
{
    uint8_t b[512];

    ck_assert_uint_lt(n, sizeof(b));
    b[0] = cmd;
    if (n > 0)
        memcpy(b + 1, arg, n);
    lb_send_pkt(fd, 0, b, n + 1);
}

static void
send_query(int fd, const char *sql)
{
    send_cmd(fd, HA_COM_QUERY, sql, strlen(sql));
}

static int
err_code(const struct pkt *p)
{
    ck_assert_msg(p->data[0] == 0xFF, "expected ERR, got 0x%02x",
                  p->data[0]);
    return p->data[1] | p->data[2] << 8;
}

static bool
is_eof(const struct pkt *p)
{
    return p->len == 5 && p->data[0] == 0xFE;
}

/* Reads a text result set (classic EOF framing) whose first packet has
 * sequence id *seq (1, or the next after an earlier result of the same
 * query) and returns the first value of its first row, and the status
 * flags of the terminating EOF. */
static void
read_result_at(int fd, uint8_t *seqp, char *first, size_t n,
               uint16_t *status)
{
    struct pkt p;
    uint8_t seq = *seqp;
    bool have = false;

    expect_pkt(fd, &p, seq++);
    ck_assert_msg(p.data[0] != 0xFF && p.data[0] != 0x00,
                  "not a result set: 0x%02x", p.data[0]);
    do
        expect_pkt(fd, &p, seq++);
    while (!is_eof(&p));
    for (;;) {
        expect_pkt(fd, &p, seq++);
        if (is_eof(&p))
            break;
        if (!have && first != NULL) {
            size_t l = p.data[0];
            ck_assert_uint_lt(l, n);
            memcpy(first, p.data + 1, l);
            first[l] = '\0';
            have = true;
        }
    }
    if (status != NULL)
        *status = (uint16_t)(p.data[3] | p.data[4] << 8);
    *seqp = seq;
}

static void
read_resultset(int fd, char *first, size_t n, uint16_t *status)
{
    uint8_t seq = 1;

    read_result_at(fd, &seq, first, n, status);
}

/* ------------------------------------------------------------------ */
/* Simple commands                                                      */
/* ------------------------------------------------------------------ */

START_TEST(test_conn_statistics)
{
    struct cli c = login(0);
    struct pkt p;

    send_cmd(c.fd, HA_COM_STATISTICS, NULL, 0);
    expect_pkt(c.fd, &p, 1);
    p.data[p.len] = '\0';
    /* A bare string<EOF>, never an OK (pitfall 18). */
    ck_assert_msg(strncmp((char *)p.data, "Uptime: ", 8) == 0, "got %s",
                  (char *)p.data);
    ck_assert_ptr_nonnull(strstr((char *)p.data, "  Threads: 1  Questions: "));
    ck_assert_ptr_nonnull(strstr((char *)p.data, "Queries per second avg: "));
    send_cmd(c.fd, HA_COM_PING, NULL, 0);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    close(c.fd);
}
END_TEST

START_TEST(test_conn_set_option_and_debug)
{
    struct cli c = login(0);
    struct cli d = login(HA_CLIENT_DEPRECATE_EOF);
    struct pkt p;
    char v[64];
    uint16_t status;
    uint8_t seq = 1;

    /* Multi-statements on: EOF, not OK; then a batch gives two results,
     * the first flagged SERVER_MORE_RESULTS_EXISTS. */
    send_cmd(c.fd, HA_COM_SET_OPTION, "\x00\x00", 2);
    expect_pkt(c.fd, &p, 1);
    ck_assert(is_eof(&p));
    send_query(c.fd, "SELECT 'a'; SELECT 'b'");
    read_result_at(c.fd, &seq, v, sizeof(v), &status);
    ck_assert_str_eq(v, "a");
    ck_assert_uint_eq(status & HA_STATUS_MORE_RESULTS, HA_STATUS_MORE_RESULTS);
    /* The second result continues the sequence. */
    read_result_at(c.fd, &seq, v, sizeof(v), &status);
    ck_assert_str_eq(v, "b");
    ck_assert_uint_eq(status & HA_STATUS_MORE_RESULTS, 0);
    /* Off again, then an unknown option. */
    send_cmd(c.fd, HA_COM_SET_OPTION, "\x01\x00", 2);
    expect_pkt(c.fd, &p, 1);
    ck_assert(is_eof(&p));
    send_query(c.fd, "SELECT 'a'; SELECT 'b'");
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1064);
    send_cmd(c.fd, HA_COM_SET_OPTION, "\x07\x00", 2);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1047);
    send_cmd(c.fd, HA_COM_DEBUG, NULL, 0);
    expect_pkt(c.fd, &p, 1);
    ck_assert(is_eof(&p));

    /* DEPRECATE_EOF: the 0xFE-OK form, under 9 bytes (pitfall 2). */
    send_cmd(d.fd, HA_COM_SET_OPTION, "\x00\x00", 2);
    expect_pkt(d.fd, &p, 1);
    ck_assert(p.data[0] == 0xFE && p.len == 7);
    send_cmd(d.fd, HA_COM_DEBUG, NULL, 0);
    expect_pkt(d.fd, &p, 1);
    ck_assert(p.data[0] == 0xFE && p.len == 7);
    close(c.fd);
    close(d.fd);
}
END_TEST

START_TEST(test_conn_field_list)
{
    struct cli c = login(0);
    struct pkt p;

    send_query(c.fd, "CREATE TABLE ft (a INTEGER, b TEXT)");
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    send_cmd(c.fd, HA_COM_FIELD_LIST, "ft\0", 3);
    for (uint8_t seq = 1; seq <= 2; seq++) {
        expect_pkt(c.fd, &p, seq);
        ck_assert(p.data[0] == 0x03 && memcmp(p.data + 1, "def", 3) == 0);
        /* ... ending with the default value: NULL here. */
        ck_assert_int_eq(p.data[p.len - 1], 0xFB);
    }
    expect_pkt(c.fd, &p, 3);
    ck_assert(is_eof(&p));
    /* A wildcard narrows the list. */
    send_cmd(c.fd, HA_COM_FIELD_LIST, "ft\0b", 4);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x03);
    expect_pkt(c.fd, &p, 2);
    ck_assert(is_eof(&p));
    send_cmd(c.fd, HA_COM_FIELD_LIST, "nosuch\0", 7);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1146);
    close(c.fd);
}
END_TEST

START_TEST(test_conn_process_kill)
{
    struct cli c = login(0);
    struct cli victim = login(0);
    struct pkt p;
    uint8_t id[4];

    lb_put_le(id, victim.id, 4);
    send_cmd(c.fd, HA_COM_PROCESS_KILL, id, 4);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    ck_assert_msg(read_pkt(victim.fd, &p) == -1, "the victim is still open");
    lb_put_le(id, 999999, 4);
    send_cmd(c.fd, HA_COM_PROCESS_KILL, id, 4);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1094);
    send_cmd(c.fd, HA_COM_PROCESS_KILL, id, 2);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1835);
    close(c.fd);
    close(victim.fd);
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
    struct cli c = login(0);
    struct pkt p;
    uint8_t b[256], proof[20];
    char v[64];
    size_t n;

    /* A native proof against the greeting's scramble: OK at once. */
    ha_auth_native_proof("stats", 5, c.scramble, proof);
    n = change_user_pkt(b, "stats", proof, 20, "mysql_native_password");
    lb_send_pkt(c.fd, 0, b, n);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    send_query(c.fd, "SELECT CURRENT_USER()");
    read_resultset(c.fd, v, sizeof(v), NULL);
    ck_assert_str_eq(v, "stats@%");
    send_query(c.fd, "SELECT DATABASE()");
    read_resultset(c.fd, v, sizeof(v), NULL);
    ck_assert_str_eq(v, "main");
    close(c.fd);
}
END_TEST

/* A client that answers for another plugin gets an AuthSwitchRequest
 * with a fresh scramble, and the sequence goes on 1, 2, 3. */
START_TEST(test_conn_change_user_switch)
{
    struct cli c = login(0);
    struct pkt p;
    uint8_t b[256], proof[20], fresh[20], junk[32];
    char v[64];
    size_t n;

    memset(junk, 'x', sizeof(junk));
    n = change_user_pkt(b, "admin", junk, sizeof(junk),
                        "caching_sha2_password");
    lb_send_pkt(c.fd, 0, b, n);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0xFE);
    ck_assert_str_eq((char *)p.data + 1, "mysql_native_password");
    ck_assert_uint_eq(p.len, 1 + 22 + 21);
    memcpy(fresh, p.data + 23, 20);
    ck_assert_msg(memcmp(fresh, c.scramble, 20) != 0, "scramble reused");
    ha_auth_native_proof("admin", 5, fresh, proof);
    lb_send_pkt(c.fd, 2, proof, 20);
    expect_pkt(c.fd, &p, 3);
    ck_assert_int_eq(p.data[0], 0x00);
    send_query(c.fd, "SELECT CURRENT_USER()");
    read_resultset(c.fd, v, sizeof(v), NULL);
    ck_assert_str_eq(v, "admin@%");
    close(c.fd);
}
END_TEST

START_TEST(test_conn_change_user_denied)
{
    struct cli c = login(0);
    struct pkt p;
    uint8_t b[256], proof[20];
    size_t n;

    ha_auth_native_proof("wrong", 5, c.scramble, proof);
    n = change_user_pkt(b, "admin", proof, 20, "mysql_native_password");
    lb_send_pkt(c.fd, 0, b, n);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1045);
    ck_assert_msg(read_pkt(c.fd, &p) == -1, "still open after ERR 1045");
    close(c.fd);

    /* A truncated payload: ERR, then closed. */
    c = login(0);
    lb_send_pkt(c.fd, 0, "\x11" "admin", 6);
    expect_pkt(c.fd, &p, 1);
    ck_assert_uint_eq(p.data[0], 0xFF);
    ck_assert_msg(read_pkt(c.fd, &p) == -1, "still open after bad packet");
    close(c.fd);
}
END_TEST

START_TEST(test_conn_reset_connection)
{
    struct cli c = login(0);
    struct pkt p;
    uint8_t exec[10] = {HA_COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0};

    send_cmd(c.fd, HA_COM_STMT_PREPARE, "SELECT 1", 8);
    expect_pkt(c.fd, &p, 1);
    ck_assert(p.data[0] == 0x00 && p.data[1] == 1);
    expect_pkt(c.fd, &p, 2); /* column */
    expect_pkt(c.fd, &p, 3);
    ck_assert(is_eof(&p));
    send_query(c.fd, "SET autocommit = 0");
    expect_pkt(c.fd, &p, 1);
    ck_assert_uint_eq(p.data[3] & HA_STATUS_AUTOCOMMIT, 0);
    send_cmd(c.fd, HA_COM_RESET_CONNECTION, NULL, 0);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    /* autocommit on again (statements commit as they run: no
     * transaction is ever open). */
    ck_assert_uint_eq(p.data[3] & (HA_STATUS_IN_TRANS | HA_STATUS_AUTOCOMMIT),
                      HA_STATUS_AUTOCOMMIT);
    lb_send_pkt(c.fd, 0, exec, sizeof(exec));
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1243);
    /* Ids keep counting after a reset. */
    send_cmd(c.fd, HA_COM_STMT_PREPARE, "SELECT 2", 8);
    expect_pkt(c.fd, &p, 1);
    ck_assert(p.data[0] == 0x00 && p.data[1] == 2);
    close(c.fd);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Prepared statements on the wire                                      */
/* ------------------------------------------------------------------ */

/* SEND_LONG_DATA and CLOSE have no reply: the next packet the client
 * reads is the answer to its next command (§3.1). */
START_TEST(test_conn_stmt_no_reply)
{
    struct cli c = login(HA_CLIENT_DEPRECATE_EOF);
    struct pkt p;
    uint8_t ld[] = {HA_COM_STMT_SEND_LONG_DATA, 1, 0, 0, 0, 0, 0, 'h', 'i'};
    uint8_t exec[] = {HA_COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0,
                      0x00, 0x01, HA_TYPE_VAR_STRING, 0x00};
    uint8_t close_[] = {HA_COM_STMT_CLOSE, 1, 0, 0, 0};
    uint8_t fetch[] = {HA_COM_STMT_FETCH, 1, 0, 0, 0, 1, 0, 0, 0};

    send_cmd(c.fd, HA_COM_STMT_PREPARE, "SELECT ? AS v", 13);
    expect_pkt(c.fd, &p, 1);
    ck_assert(p.data[0] == 0x00 && p.data[1] == 1);
    expect_pkt(c.fd, &p, 2); /* the parameter; no EOF */
    expect_pkt(c.fd, &p, 3); /* the column; no EOF */
    ck_assert_int_eq(p.data[0], 0x03);
    lb_send_pkt(c.fd, 0, ld, sizeof(ld));
    lb_send_pkt(c.fd, 0, exec, sizeof(exec));
    expect_pkt(c.fd, &p, 1);
    ck_assert(p.len == 1 && p.data[0] == 1);
    expect_pkt(c.fd, &p, 2);
    expect_pkt(c.fd, &p, 3);
    ck_assert_uint_eq(p.len, 5);
    ck_assert_mem_eq(p.data, "\x00\x00\x02hi", 5);
    expect_pkt(c.fd, &p, 4);
    ck_assert(p.data[0] == 0xFE && p.len == 7);
    lb_send_pkt(c.fd, 0, fetch, sizeof(fetch));
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1421);
    lb_send_pkt(c.fd, 0, close_, sizeof(close_));
    lb_send_pkt(c.fd, 0, close_, sizeof(close_)); /* twice: still silent */
    send_cmd(c.fd, HA_COM_PING, NULL, 0);
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    lb_send_pkt(c.fd, 0, exec, sizeof(exec));
    expect_pkt(c.fd, &p, 1);
    ck_assert_int_eq(err_code(&p), 1243);
    close(c.fd);
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
