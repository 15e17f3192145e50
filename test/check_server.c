/* SPDX-License-Identifier: MIT
 *
 * The server on loopback, driven byte by byte by the test client
 * (test/support/client.h): the framings and paths the real CLIs never
 * exercise (CLIENT_DEPRECATE_EOF, AuthSwitchRequest, 16 MiB splitting,
 * sequence errors), checked against the protocol rather than against our
 * own decoder. The server runs on its own thread and event loop.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/auth.h"
#include "admin/proto.h"
#include "check_main.h"
#include "engine/config.h"
#include "engine/history.h"
#include "test/support/client.h"
#include "test/support/loopback.h"

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

/* Reads HandshakeV10 and returns its 20-byte scramble, checking every
 * byte of its layout (byte offsets per Protocol::HandshakeV10). */
static void
read_greeting(struct mc_conn *c, uint8_t scramble[20], uint32_t *caps)
{
    struct mc_pkt p;
    size_t vlen, off;

    mc_expect(c, &p, 0);
    ck_assert_int_eq(p.data[0], 10);
    vlen = strnlen((char *)p.data + 1, p.len - 1);
    ck_assert_msg(strncmp((char *)p.data + 1, "8.0.35-heapadmin-", 17) == 0,
                  "server version %s", (char *)p.data + 1);
    off = 1 + vlen + 1 + 4;            /* version, NUL, connection id */
    memcpy(scramble, p.data + off, 8);
    ck_assert_int_eq(p.data[off + 8], 0); /* filler */
    *caps = (uint32_t)p.data[off + 9] | (uint32_t)p.data[off + 10] << 8;
    ck_assert_int_eq(p.data[off + 11], 255);          /* utf8mb4_0900 */
    *caps |= (uint32_t)p.data[off + 14] << 16 | (uint32_t)p.data[off + 15] << 24;
    ck_assert_int_eq(p.data[off + 16], 21);           /* auth data len */
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(p.data[off + 17 + i], 0);    /* reserved */
    memcpy(scramble + 8, p.data + off + 27, 12);
    ck_assert_int_eq(p.data[off + 39], 0);
    ck_assert_str_eq((char *)p.data + off + 40, "mysql_native_password");
    for (int i = 0; i < 20; i++)
        ck_assert_msg(scramble[i] != 0 && scramble[i] != '$',
                      "scramble byte %d is %u", i, scramble[i]);
    mc_pkt_free(&p);
}

/* Sends HandshakeResponse41 with lenenc auth data. */
static void
send_login(struct mc_conn *c, uint32_t caps, const char *user,
           const uint8_t *auth, size_t auth_len, const char *plugin)
{
    uint8_t b[512];
    size_t n = mc_response41(b, sizeof(b), caps, user, auth, auth_len, plugin);

    ck_assert_uint_gt(n, 0);
    ck_assert_int_eq(mc_write(c, 1, b, n), 0);
}

#define CLIENT_CAPS MC_CLIENT_CAPS

/* Logs in as admin:admin. */
static struct mc_conn
login(uint32_t extra_caps)
{
    struct mc_conn c;

    mc_must_login(&c, port, "admin", "admin", extra_caps);
    return c;
}

/* A connection, not yet greeted. */
static struct mc_conn
connect_raw(void)
{
    struct mc_conn c;

    ck_assert_int_eq(mc_connect(&c, port), 0);
    return c;
}

/* Logs in and out again: the server still serves. */
static void
login_and_close(void)
{
    struct mc_conn c = login(0);

    mc_close(&c);
}

/* ------------------------------------------------------------------ */
/* Connection phase                                                     */
/* ------------------------------------------------------------------ */

START_TEST(test_server_greeting_capabilities)
{
    uint8_t scramble[20];
    uint32_t caps;
    struct mc_conn c = connect_raw();

    read_greeting(&c, scramble, &caps);
    ck_assert(caps & HA_CLIENT_PROTOCOL_41);
    ck_assert(caps & HA_CLIENT_SECURE_CONNECTION);
    ck_assert(caps & HA_CLIENT_PLUGIN_AUTH);
    ck_assert(caps & HA_CLIENT_LONG_PASSWORD);
    /* Only what is implemented: no TLS, compression or session tracking
     * yet, and never query attributes (they change COM_QUERY's layout). */
    ck_assert(!(caps & HA_CLIENT_SSL));
    ck_assert(!(caps & HA_CLIENT_COMPRESS));
    ck_assert(!(caps & HA_CLIENT_SESSION_TRACK));
    ck_assert(!(caps & (1u << 27)));
    mc_close(&c);
}
END_TEST

START_TEST(test_server_login_ok_and_wrong_password)
{
    uint8_t scramble[20], proof[20];
    uint32_t caps;
    struct mc_pkt p;
    struct mc_conn c = login(0);

    mc_close(&c);
    c = connect_raw();
    read_greeting(&c, scramble, &caps);
    ha_auth_native_proof("wrong", 5, scramble, proof);
    send_login(&c, CLIENT_CAPS, "admin", proof, 20, "mysql_native_password");
    mc_expect(&c, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1045);
    ck_assert(memcmp(p.data + 3, "#28000", 6) == 0);
    ck_assert(memmem(p.data, p.len, "Access denied for user 'admin'", 30));
    mc_pkt_free(&p);
    ck_assert_msg(mc_read(&c, &p) == -1, "connection still open");
    mc_close(&c);
}
END_TEST

START_TEST(test_server_auth_switch)
{
    /* libmysqlclient <= 8.0.25 answers for caching_sha2_password with a
     * 32-byte scramble: the server must switch it to native, once. */
    uint8_t scramble[20], proof[20], junk[32];
    uint32_t caps;
    struct mc_pkt p;
    struct mc_conn c = connect_raw();

    read_greeting(&c, scramble, &caps);
    memset(junk, 0x5a, sizeof(junk));
    send_login(&c, CLIENT_CAPS, "admin", junk, sizeof(junk),
               "caching_sha2_password");
    mc_expect(&c, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFE);
    ck_assert_str_eq((char *)p.data + 1, "mysql_native_password");
    ck_assert_uint_eq(p.len, 1 + 22 + 20 + 1);   /* name, NUL, data, NUL */
    ck_assert_int_eq(p.data[p.len - 1], 0);
    ck_assert(memcmp(p.data + 23, scramble, 20) == 0);
    mc_pkt_free(&p);
    ha_auth_native_proof("admin", 5, scramble, proof);
    mc_must_write(&c, 3, proof, 20);
    mc_expect(&c, &p, 4);
    ck_assert_int_eq(p.data[0], 0x00);
    mc_pkt_free(&p);
    mc_close(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Result sets                                                          */
/* ------------------------------------------------------------------ */

/* Runs SELECT 1, NULL, 'x' and checks the framing: classic EOF after the
 * definitions and after the rows, or none and a 0xFE OK terminator. */
static void
check_select(bool deprecate_eof)
{
    struct mc_conn c = login(deprecate_eof ? HA_CLIENT_DEPRECATE_EOF : 0);
    uint8_t seq = 1;
    struct mc_pkt p;

    mc_must_query(&c, "SELECT 1 AS a, NULL AS b, 'x' AS c");
    mc_expect(&c, &p, seq++);
    ck_assert_uint_eq(p.len, 1);
    ck_assert_int_eq(p.data[0], 3);
    mc_pkt_free(&p);
    for (int i = 0; i < 3; i++) {
        mc_expect(&c, &p, seq++);
        ck_assert(memcmp(p.data, "\x03" "def", 4) == 0);
        /* The 12-byte fixed part ends with two zero filler bytes. */
        ck_assert_int_eq(p.data[p.len - 1], 0);
        ck_assert_int_eq(p.data[p.len - 2], 0);
        ck_assert_int_eq(p.data[p.len - 13], 0x0c);
        mc_pkt_free(&p);
    }
    if (!deprecate_eof) {
        mc_expect(&c, &p, seq++);
        ck_assert(mc_is_end(&p));
        ck_assert_uint_eq(p.len, 5);
        mc_pkt_free(&p);
    }
    mc_expect(&c, &p, seq++);
    ck_assert_uint_eq(p.len, 5);
    ck_assert(memcmp(p.data, "\x01" "1" "\xfb" "\x01" "x", 5) == 0);
    mc_pkt_free(&p);
    mc_expect(&c, &p, seq++);
    ck_assert(mc_is_end(&p));
    if (deprecate_eof) {
        /* OK with header 0xFE: affected 0, insert id 0, status, warnings */
        ck_assert_uint_eq(p.len, 7);
        ck_assert_int_eq(p.data[1], 0);
        ck_assert_int_eq(p.data[2], 0);
        ck_assert(p.data[3] & HA_STATUS_AUTOCOMMIT);
    } else {
        ck_assert_uint_eq(p.len, 5);
        ck_assert(p.data[3] & HA_STATUS_AUTOCOMMIT);
    }
    mc_pkt_free(&p);
    mc_close(&c);
}

START_TEST(test_server_resultset_eof_framing)
{
    check_select(false);
}
END_TEST

START_TEST(test_server_resultset_deprecate_eof_framing)
{
    check_select(true);
}
END_TEST

START_TEST(test_server_empty_resultset)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;

    mc_must_query(&c, "SELECT 1 WHERE 0");
    mc_expect(&c, &p, 1);                 /* column count */
    mc_pkt_free(&p);
    mc_expect(&c, &p, 2);                 /* definition */
    mc_pkt_free(&p);
    mc_expect(&c, &p, 3);
    ck_assert(mc_is_end(&p));
    mc_pkt_free(&p);
    mc_expect(&c, &p, 4);
    ck_assert(mc_is_end(&p));
    mc_pkt_free(&p);
    mc_close(&c);
}
END_TEST

START_TEST(test_server_ok_counts)
{
    struct mc_conn c = login(0);
    struct mc_pkt p;

    mc_must_query(&c, "CREATE TABLE okc(a)");
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    mc_pkt_free(&p);
    mc_must_query(&c, "INSERT INTO okc VALUES (1), (2), (3)");
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    ck_assert_int_eq(p.data[1], 3);        /* affected rows */
    ck_assert_int_eq(p.data[2], 3);        /* last insert id */
    mc_pkt_free(&p);
    mc_must_query(&c, "SELECT * FROM no_such_table");
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1146);
    ck_assert(memcmp(p.data + 3, "#42S02", 6) == 0);
    mc_pkt_free(&p);
    mc_close(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Limits: 16 MiB splitting in both directions                          */
/* ------------------------------------------------------------------ */

START_TEST(test_server_split_row)
{
    /* A 17,000,000-byte value: its row packet is split into one
     * 0xFFFFFF-byte packet and the rest, with consecutive ids. */
    struct mc_conn c = login(0);
    struct mc_pkt p;
    size_t total = 0;
    uint8_t seq;

    mc_must_query(&c, "SELECT zeroblob(17000000)");
    for (seq = 1; seq <= 3; seq++) {  /* count, definition, EOF */
        mc_expect(&c, &p, seq);
        mc_pkt_free(&p);
    }
    mc_expect(&c, &p, seq++);
    ck_assert_uint_eq(p.len, HA_PROTO_MAX_CHUNK);
    ck_assert_int_eq(p.data[0], 0xFE);     /* 8-byte lenenc length */
    total += p.len;
    mc_pkt_free(&p);
    mc_expect(&c, &p, seq++);
    ck_assert_uint_lt(p.len, HA_PROTO_MAX_CHUNK);
    total += p.len;
    mc_pkt_free(&p);
    ck_assert_uint_eq(total, 9 + 17000000);
    mc_expect(&c, &p, seq++);
    ck_assert(mc_is_end(&p));
    mc_pkt_free(&p);
    mc_close(&c);
}
END_TEST

START_TEST(test_server_split_query)
{
    /* A query of exactly 0xFFFFFF bytes (command byte included) is sent as
     * a full packet plus an empty one; the server must join them. */
    size_t n = HA_PROTO_MAX_CHUNK;
    uint8_t *q = malloc(n);
    /* Aliased: unnamed, the column would be labelled with the whole
     * 16 MiB expression (and its definition split too). */
    const char *head = "SELECT length('", *tail = "') AS n";
    size_t hl = strlen(head), tl = strlen(tail), body = n - 1 - hl - tl;
    struct mc_pkt p;
    char want[32];
    struct mc_conn c = login(0);

    q[0] = HA_COM_QUERY;
    memcpy(q + 1, head, hl);
    memset(q + 1 + hl, 'a', body);
    memcpy(q + 1 + hl + body, tail, tl);
    mc_must_write(&c, 0, q, n);
    mc_must_write(&c, 1, NULL, 0);
    free(q);
    for (uint8_t seq = 2; seq <= 4; seq++) {
        mc_expect(&c, &p, seq);
        mc_pkt_free(&p);
    }
    mc_expect(&c, &p, 5);
    snprintf(want, sizeof(want), "%zu", body);
    ck_assert_msg(p.data[0] != 0xFE && p.data[0] != 0xFF,
                  "row expected, got 0x%02x len %zu", p.data[0], p.len);
    ck_assert_uint_eq(p.data[0], strlen(want));
    ck_assert(memcmp(p.data + 1, want, strlen(want)) == 0);
    mc_pkt_free(&p);
    mc_close(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Errors: bad input closes that one connection, never the server       */
/* ------------------------------------------------------------------ */

START_TEST(test_server_out_of_order_sequence)
{
    struct mc_conn c = login(0);
    uint8_t q[] = {HA_COM_QUERY, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'};
    struct mc_pkt p;

    mc_must_write(&c, 5, q, sizeof(q));
    ck_assert_int_eq(mc_read(&c, &p), 0);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1156);
    mc_pkt_free(&p);
    ck_assert_msg(mc_read(&c, &p) == -1, "connection still open");
    mc_close(&c);
    login_and_close(); /* and the server still serves others */
}
END_TEST

START_TEST(test_server_truncated_handshake_response)
{
    uint8_t scramble[20];
    uint32_t caps;
    uint8_t junk[10] = {0};
    struct mc_pkt p;
    struct mc_conn c = connect_raw();

    read_greeting(&c, scramble, &caps);
    mc_must_write(&c, 1, junk, sizeof(junk));
    mc_expect(&c, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFF);
    mc_pkt_free(&p);
    ck_assert_msg(mc_read(&c, &p) == -1, "connection still open");
    mc_close(&c);
    login_and_close();
}
END_TEST

START_TEST(test_server_quit_and_unknown_command)
{
    struct mc_conn c = login(0);
    uint8_t cmd = 0x7f, quit = HA_COM_QUIT;
    struct mc_pkt p;

    mc_must_write(&c, 0, &cmd, 1);
    mc_expect(&c, &p, 1);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1047);
    mc_pkt_free(&p);
    mc_must_write(&c, 0, &quit, 1);
    ck_assert_msg(mc_read(&c, &p) == -1, "COM_QUIT got a reply");
    mc_close(&c);
}
END_TEST

/* The history store: samples, hour and day averages, retention by age. */
static int64_t
one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;

    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

START_TEST(test_server_history_store)
{
    char dir[] = "/tmp/check_history.XXXXXX", path[256], err[256];
    int64_t t0 = 1700000000 / 86400 * 86400; /* a day's start */
    sqlite3 *db;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/%s", dir, HA_HISTORY_FILE);
    db = ha_history_open(path, err, sizeof(err));
    ck_assert_msg(db != NULL, "%s", err);
    /* Two samples in the first hour, one in the second. */
    for (int i = 0; i < 3; i++) {
        struct ha_history_sample smp = {
            .timestamp = t0 + (i == 2 ? 3600 : i * 60),
            .allocated = 100 * (i + 1), .resident = 1000 * (i + 1),
            .active = 1, .mapped = 2, .metadata = 3, .retained = 4};

        ck_assert_msg(ha_history_record(db, &smp, err, sizeof(err)) == 0,
                      "%s", err);
    }
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory"), 3);
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory_hour"),
                     2);
    ck_assert_int_eq(one_int(db, "SELECT allocated FROM system_memory_hour "
                                 "ORDER BY timestamp LIMIT 1"),
                     150);
    ck_assert_int_eq(one_int(db, "SELECT resident FROM system_memory_day"),
                     2000);
    ck_assert_int_eq(one_int(db, "SELECT min(timestamp) FROM "
                                 "system_memory_day"),
                     t0);
    /* 8 days later: the raw rows are gone, the hours and the day stay. */
    {
        struct ha_history_sample late = {.timestamp = t0 + 8 * 86400,
                                         .allocated = 7};

        ck_assert(ha_history_record(db, &late, err, sizeof(err)) == 0);
    }
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory"), 1);
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory_hour"),
                     3);
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory_day"),
                     2);
    sqlite3_close(db);
    /* Reopened: everything is still there (a restart). */
    db = ha_history_open(path, err, sizeof(err));
    ck_assert_ptr_nonnull(db);
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory_hour"),
                     3);
    sqlite3_close(db);
    unlink(path);
    rmdir(dir);
}
END_TEST


/* Processes sharing a datadir sample into one file: rows carry the pid,
 * the same second from two processes is two rows, averages are per
 * process; a file from before the pid column is migrated, rows kept. */
START_TEST(test_server_history_pids)
{
    char dir[] = "/tmp/check_history.XXXXXX", path[256], err[256];
    int64_t t0 = 1700000000 / 3600 * 3600;
    sqlite3 *db;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/%s", dir, HA_HISTORY_FILE);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(db,
                     "CREATE TABLE system_memory (timestamp INT NOT NULL, "
                     "allocated INT NOT NULL, resident INT NOT NULL, active "
                     "INT NOT NULL, mapped INT NOT NULL, metadata INT NOT "
                     "NULL, retained INT NOT NULL, PRIMARY KEY (timestamp));"
                     "CREATE TABLE system_memory_hour AS SELECT * FROM "
                     "system_memory; CREATE TABLE system_memory_day AS "
                     "SELECT * FROM system_memory;"
                     "INSERT INTO system_memory VALUES (1, 2, 3, 4, 5, 6, 7)",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    db = ha_history_open(path, err, sizeof(err));
    ck_assert_msg(db != NULL, "%s", err);
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory WHERE "
                                 "pid = 0 AND allocated = 2"),
                     1);
    for (int i = 0; i < 4; i++) {
        struct ha_history_sample smp = {.timestamp = t0 + (i / 2) * 60,
                                        .allocated = 100 * (i % 2 + 1),
                                        .pid = 5 + i % 2};

        ck_assert_msg(ha_history_record(db, &smp, err, sizeof(err)) == 0,
                      "%s", err);
    }
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory WHERE "
                                 "timestamp = " "1699999200"),
                     2);
    ck_assert_int_eq(one_int(db, "SELECT count(*) FROM system_memory_hour"),
                     2);
    ck_assert_int_eq(one_int(db, "SELECT allocated FROM system_memory_hour "
                                 "WHERE pid = 6"),
                     200);
    sqlite3_close(db);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s-wal", dir, HA_HISTORY_FILE);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s-shm", dir, HA_HISTORY_FILE);
    unlink(path);
    rmdir(dir);
}
END_TEST

static Suite *
server_suite(void)
{
    Suite *s = suite_create("server");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");
    TCase *errors = tcase_create("errors");

    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_checked_fixture(limits, setup, teardown);
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(core, test_server_greeting_capabilities);
    tcase_add_test(core, test_server_login_ok_and_wrong_password);
    tcase_add_test(core, test_server_auth_switch);
    tcase_add_test(core, test_server_resultset_eof_framing);
    tcase_add_test(core, test_server_resultset_deprecate_eof_framing);
    tcase_add_test(core, test_server_empty_resultset);
    tcase_add_test(core, test_server_ok_counts);
    tcase_add_test(core, test_server_history_store);
    tcase_add_test(core, test_server_history_pids);
    tcase_add_test(limits, test_server_split_row);
    tcase_add_test(limits, test_server_split_query);
    tcase_set_timeout(limits, 60);
    tcase_add_test(errors, test_server_out_of_order_sequence);
    tcase_add_test(errors, test_server_truncated_handshake_response);
    tcase_add_test(errors, test_server_quit_and_unknown_command);
    suite_add_tcase(s, core);
    suite_add_tcase(s, limits);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(server_suite)
