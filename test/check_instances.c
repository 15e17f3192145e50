/* SPDX-License-Identifier: MIT
 *
 * Two admin servers in one process, each on its own thread and event
 * loop, as an embedding host and the LD_PRELOAD agent would run them:
 * proves they share no mutable state. Each has its own
 * max_allowed_packet (per-server sysvar limits), its own in-memory
 * database (memdb name), and its own authorizer refusals (per session),
 * checked with both servers answering at the same time.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/auth.h"
#include "engine/config.h"
#include "admin/proto.h"
#include "check_main.h"
#include "loopback.h"

#define PACKET_A 2097152  /* max_allowed_packet of server A */
#define PACKET_B 4194304  /* ... and of server B */
#define ROUNDS 200        /* refusals each client asks for at once */

/* ------------------------------------------------------------------ */
/* Fixture: servers A and B, both running                               */
/* ------------------------------------------------------------------ */

static struct ha_config cfg_a, cfg_b;
static struct lb_server lb_a, lb_b;

static void
setup(void)
{
    lb_config(&cfg_a);
    cfg_a.max_allowed_packet = PACKET_A;
    lb_config(&cfg_b);
    cfg_b.max_allowed_packet = PACKET_B;
    lb_start(&lb_a, &cfg_a, "/tmp", false);
    lb_start(&lb_b, &cfg_b, "/tmp", false);
}

static void
teardown(void)
{
    lb_stop(&lb_a);
    lb_stop(&lb_b);
    ha_config_free(&cfg_a);
    ha_config_free(&cfg_b);
}

/* ------------------------------------------------------------------ */
/* A minimal blocking client; no ck_assert, so client threads may use  */
/* it: failures come back as -1 or as text the test thread checks.     */
/* ------------------------------------------------------------------ */

/* Reads one packet's payload (at most len bytes; longer ones fail).
 * Returns its length, or -1. */
static long
read_pkt(int fd, uint8_t *buf, size_t len)
{
    uint8_t h[4];
    size_t n;

    if (lb_read_full(fd, h, 4) != 0)
        return -1;
    n = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    if (n > len || lb_read_full(fd, buf, n) != 0)
        return -1;
    return (long)n;
}

/* Sends one packet in one send(): header and payload apart would meet
 * Nagle and delayed ACK, 40 ms a round trip. len < 4096. */
static void
send_pkt(int fd, uint8_t seq, const void *p, size_t len)
{
    uint8_t b[4 + 4096];

    if (len > sizeof(b) - 4)
        return;
    lb_put_le(b, len, 3);
    b[3] = seq;
    memcpy(b + 4, p, len);
    (void)send(fd, b, 4 + len, MSG_NOSIGNAL);
}

/* Logs in to port as user with password (mysql_native_password).
 * Returns the socket, or -1. */
static int
client_login(int port, const char *user, const char *password)
{
    uint8_t b[512], scramble[20], proof[20];
    size_t vlen, off, n;
    long len;
    int fd = lb_connect(port);

    len = read_pkt(fd, b, sizeof(b));
    if (len < 60)
        goto fail;
    vlen = strnlen((char *)b + 1, (size_t)len - 1);
    off = 1 + vlen + 1 + 4;
    memcpy(scramble, b + off, 8);
    memcpy(scramble + 8, b + off + 27, 12);
    ha_auth_native_proof(password, strlen(password), scramble, proof);

    lb_put_le(b, HA_CLIENT_LONG_PASSWORD | HA_CLIENT_PROTOCOL_41 |
                     HA_CLIENT_SECURE_CONNECTION | HA_CLIENT_PLUGIN_AUTH |
                     HA_CLIENT_PLUGIN_AUTH_LENENC_DATA |
                     HA_CLIENT_TRANSACTIONS,
              4);
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
    send_pkt(fd, 1, b, n);
    if (read_pkt(fd, b, sizeof(b)) < 1 || b[0] != 0x00)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

/* Runs sql and reduces the reply into out: "OK", "ERR <code> <message>",
 * or the first row's values joined by ',' (short text values only).
 * Returns 0, or -1 on a protocol failure. */
static int
client_query(int fd, const char *sql, char *out, size_t outlen)
{
    uint8_t b[4096];
    size_t n = strlen(sql), ncol, pos, used = 0;
    long len;
    bool have_row = false;

    out[0] = '\0';
    if (n + 1 > sizeof(b))
        return -1;
    b[0] = HA_COM_QUERY;
    memcpy(b + 1, sql, n);
    send_pkt(fd, 0, b, n + 1);
    if ((len = read_pkt(fd, b, sizeof(b) - 1)) < 1)
        return -1;
    if (b[0] == 0x00) {
        snprintf(out, outlen, "OK");
        return 0;
    }
    if (b[0] == 0xFF) {
        /* code (2), '#', SQLSTATE (5), message */
        snprintf(out, outlen, "ERR %u %.*s", b[1] | b[2] << 8,
                 (int)(len - 9 < 512 ? len - 9 : 512), (char *)b + 9);
        return 0;
    }
    ncol = b[0];
    for (size_t i = 0; i < ncol + 1; i++) /* definitions, then EOF */
        if (read_pkt(fd, b, sizeof(b)) < 1)
            return -1;
    for (;;) {
        if ((len = read_pkt(fd, b, sizeof(b))) < 1)
            return -1;
        if (b[0] == 0xFE && len < 9)
            return 0;
        if (have_row)
            continue;
        have_row = true;
        pos = 0;
        for (size_t c = 0; c < ncol && pos < (size_t)len; c++) {
            size_t vl = b[pos] == 0xFB ? 0 : b[pos];
            const char *v = b[pos] == 0xFB ? "NULL" : (char *)b + pos + 1;
            int w;

            if (b[pos] >= 0xFB && b[pos] != 0xFB)
                return -1; /* long value: not needed here */
            if (b[pos] == 0xFB)
                vl = 4;
            w = snprintf(out + used, outlen - used, "%s%.*s",
                         c > 0 ? "," : "", (int)vl, v);
            if (w < 0 || (size_t)w >= outlen - used)
                return -1;
            used += (size_t)w;
            pos += b[pos] == 0xFB ? 1 : 1 + vl;
        }
    }
}

/* client_query under ck_assert, for the test thread. */
static const char *
query(int fd, const char *sql)
{
    static char out[1024];

    ck_assert_msg(client_query(fd, sql, out, sizeof(out)) == 0,
                  "no reply to %s", sql);
    return out;
}

static int
login(int port, const char *user, const char *password)
{
    int fd = client_login(port, user, password);

    ck_assert_msg(fd >= 0, "login as %s on port %d failed", user, port);
    return fd;
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */
/* ------------------------------------------------------------------ */

START_TEST(test_instances_sysvars_apart)
{
    int a = login(lb_a.port, "admin", "admin");
    int b = login(lb_b.port, "admin", "admin");
    char want[64];

    snprintf(want, sizeof(want), "%d", PACKET_A);
    ck_assert_str_eq(query(a, "SELECT @@max_allowed_packet"), want);
    snprintf(want, sizeof(want), "max_allowed_packet,%d", PACKET_A);
    ck_assert_str_eq(query(a, "SHOW VARIABLES LIKE 'max_allowed_packet'"),
                     want);
    snprintf(want, sizeof(want), "%d", PACKET_B);
    ck_assert_str_eq(query(b, "SELECT @@max_allowed_packet"), want);
    snprintf(want, sizeof(want), "max_allowed_packet,%d", PACKET_B);
    ck_assert_str_eq(query(b, "SHOW VARIABLES LIKE 'max_allowed_packet'"),
                     want);
    /* A, asked again after B started: B did not overwrite it. */
    snprintf(want, sizeof(want), "%d", PACKET_A);
    ck_assert_str_eq(query(a, "SELECT @@GLOBAL.max_allowed_packet"), want);
    close(a);
    close(b);
}
END_TEST

START_TEST(test_instances_tables_apart)
{
    int a = login(lb_a.port, "admin", "admin");
    int b = login(lb_b.port, "admin", "admin");

    ck_assert_str_eq(query(a, "CREATE TABLE only_in_a (x INTEGER)"), "OK");
    ck_assert_str_eq(query(a, "INSERT INTO only_in_a VALUES (7)"), "OK");
    ck_assert_str_eq(query(a, "SELECT x FROM only_in_a"), "7");
    ck_assert_str_eq(query(b, "SELECT x FROM only_in_a"),
                     "ERR 1146 no such table: only_in_a");
    ck_assert_str_eq(query(b, "CREATE TABLE only_in_a (y TEXT)"), "OK");
    ck_assert_str_eq(query(b, "SELECT count(*) FROM only_in_a"), "0");
    ck_assert_str_eq(query(a, "SELECT count(*) FROM only_in_a"), "1");
    close(a);
    close(b);
}
END_TEST

/* One client hammering one server with refused statements. */
struct refuser {
    int port;
    const char *sql;          /* refused for the stats user */
    const char *want;         /* the exact error text */
    int n_wrong;              /* replies with another text */
    char wrong[512];          /* the first of them */
};

static void *
refuse_loop(void *arg)
{
    struct refuser *r = arg;
    char out[512];
    int fd = client_login(r->port, "stats", "stats");

    if (fd < 0) {
        r->n_wrong = ROUNDS;
        snprintf(r->wrong, sizeof(r->wrong), "login failed");
        return NULL;
    }
    for (int i = 0; i < ROUNDS; i++) {
        if (client_query(fd, r->sql, out, sizeof(out)) != 0)
            snprintf(out, sizeof(out), "no reply");
        if (strcmp(out, r->want) != 0 && r->n_wrong++ == 0)
            snprintf(r->wrong, sizeof(r->wrong), "%s", out);
    }
    close(fd);
    return NULL;
}

/* Both servers refuse at the same time, each on its own thread; every
 * reply must name its own table (a shared denial slot would hand one
 * server's refusal to the other's reply). */
START_TEST(test_instances_denials_apart)
{
    struct refuser ra = {
        .port = lb_a.port,
        .sql = "DELETE FROM table_a",
        .want = "ERR 1142 DELETE command denied to user 'stats'@'127.0.0.1' "
                "for table 'table_a'",
    };
    struct refuser rb = {
        .port = lb_b.port,
        .sql = "DELETE FROM table_b",
        .want = "ERR 1142 DELETE command denied to user 'stats'@'127.0.0.1' "
                "for table 'table_b'",
    };
    pthread_t ta, tb;
    int a = login(lb_a.port, "admin", "admin");
    int b = login(lb_b.port, "admin", "admin");

    ck_assert_str_eq(query(a, "CREATE TABLE table_a (x INTEGER)"), "OK");
    ck_assert_str_eq(query(b, "CREATE TABLE table_b (x INTEGER)"), "OK");
    ck_assert_int_eq(pthread_create(&ta, NULL, refuse_loop, &ra), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, refuse_loop, &rb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_msg(ra.n_wrong == 0, "server A: %d wrong replies, first: %s",
                  ra.n_wrong, ra.wrong);
    ck_assert_msg(rb.n_wrong == 0, "server B: %d wrong replies, first: %s",
                  rb.n_wrong, rb.wrong);
    close(a);
    close(b);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *
instances_suite(void)
{
    Suite *s = suite_create("instances");
    TCase *core = tcase_create("core");

    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, test_instances_sysvars_apart);
    tcase_add_test(core, test_instances_tables_apart);
    tcase_add_test(core, test_instances_denials_apart);
    suite_add_tcase(s, core);
    return s;
}

HA_CHECK_MAIN(instances_suite)
