/* SPDX-License-Identifier: MIT
 *
 * The server on loopback, driven byte by byte by a minimal client in this
 * file: the framings and paths the real CLIs never exercise
 * (CLIENT_DEPRECATE_EOF, AuthSwitchRequest, 16 MiB splitting, sequence
 * errors), checked against the protocol rather than against our own
 * decoder. The server runs on its own thread and event loop.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
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
#include "engine/history.h"

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
    uint8_t *data;   /* malloc'd payload of one physical packet */
};

/* Reads one physical packet; returns -1 on EOF or timeout. */
static int
read_pkt(int fd, struct pkt *p)
{
    uint8_t h[4];

    if (lb_read_full(fd, h, 4) != 0)
        return -1;
    p->len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    p->seq = h[3];
    p->data = malloc(p->len ? p->len : 1);
    ck_assert_ptr_nonnull(p->data);
    return lb_read_full(fd, p->data, p->len);
}

static void
expect_pkt(int fd, struct pkt *p, uint8_t seq)
{
    ck_assert_msg(read_pkt(fd, p) == 0, "no packet (expected seq %u)", seq);
    ck_assert_msg(p->seq == seq, "sequence id %u, expected %u", p->seq, seq);
}

/* Reads HandshakeV10 and returns its 20-byte scramble (byte offsets per
 * Protocol::HandshakeV10). */
static void
read_greeting(int fd, uint8_t scramble[20], uint32_t *caps)
{
    struct pkt p;
    size_t vlen, off;

    expect_pkt(fd, &p, 0);
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
    free(p.data);
}

/* Sends HandshakeResponse41 with lenenc auth data. */
static void
send_login(int fd, uint32_t caps, const char *user, const uint8_t *auth,
           size_t auth_len, const char *plugin)
{
    uint8_t b[512];
    size_t n = 0;

    lb_put_le(b, caps, 4);
    lb_put_le(b + 4, 16u << 20, 4);
    b[8] = 45;
    memset(b + 9, 0, 23);
    n = 32;
    strcpy((char *)b + n, user);
    n += strlen(user) + 1;
    b[n++] = (uint8_t)auth_len;
    memcpy(b + n, auth, auth_len);
    n += auth_len;
    strcpy((char *)b + n, plugin);
    n += strlen(plugin) + 1;
    lb_send_pkt(fd, 1, b, n);
}

#define CLIENT_CAPS                                                          \
    (HA_CLIENT_LONG_PASSWORD | HA_CLIENT_PROTOCOL_41 |                       \
     HA_CLIENT_SECURE_CONNECTION | HA_CLIENT_PLUGIN_AUTH |                   \
     HA_CLIENT_PLUGIN_AUTH_LENENC_DATA | HA_CLIENT_TRANSACTIONS)

/* Logs in as admin:admin; returns the connected socket. */
static int
login(uint32_t extra_caps)
{
    uint8_t scramble[20], proof[20];
    uint32_t caps;
    struct pkt p;
    int fd = lb_connect(port);

    read_greeting(fd, scramble, &caps);
    ha_auth_native_proof("admin", 5, scramble, proof);
    send_login(fd, CLIENT_CAPS | extra_caps, "admin", proof, 20,
               "mysql_native_password");
    expect_pkt(fd, &p, 2);
    ck_assert_msg(p.data[0] == 0x00, "login answered 0x%02x", p.data[0]);
    free(p.data);
    return fd;
}

static void
send_query(int fd, const char *sql)
{
    size_t n = strlen(sql);
    uint8_t *b = malloc(n + 1);

    b[0] = HA_COM_QUERY;
    memcpy(b + 1, sql, n);
    lb_send_pkt(fd, 0, b, n + 1);
    free(b);
}

static bool
is_eof(const struct pkt *p)
{
    return p->len < 9 && p->data[0] == 0xFE;
}

/* ------------------------------------------------------------------ */
/* Connection phase                                                     */
/* ------------------------------------------------------------------ */

START_TEST(test_server_greeting_capabilities)
{
    uint8_t scramble[20];
    uint32_t caps;
    int fd = lb_connect(port);

    read_greeting(fd, scramble, &caps);
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
    close(fd);
}
END_TEST

START_TEST(test_server_login_ok_and_wrong_password)
{
    uint8_t scramble[20], proof[20];
    uint32_t caps;
    struct pkt p;
    int fd = login(0);

    close(fd);
    fd = lb_connect(port);
    read_greeting(fd, scramble, &caps);
    ha_auth_native_proof("wrong", 5, scramble, proof);
    send_login(fd, CLIENT_CAPS, "admin", proof, 20, "mysql_native_password");
    expect_pkt(fd, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1045);
    ck_assert(memcmp(p.data + 3, "#28000", 6) == 0);
    ck_assert(memmem(p.data, p.len, "Access denied for user 'admin'", 30));
    free(p.data);
    ck_assert_msg(read_pkt(fd, &p) == -1, "connection still open");
    close(fd);
}
END_TEST

START_TEST(test_server_auth_switch)
{
    /* libmysqlclient <= 8.0.25 answers for caching_sha2_password with a
     * 32-byte scramble: the server must switch it to native, once. */
    uint8_t scramble[20], proof[20], junk[32];
    uint32_t caps;
    struct pkt p;
    int fd = lb_connect(port);

    read_greeting(fd, scramble, &caps);
    memset(junk, 0x5a, sizeof(junk));
    send_login(fd, CLIENT_CAPS, "admin", junk, sizeof(junk),
               "caching_sha2_password");
    expect_pkt(fd, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFE);
    ck_assert_str_eq((char *)p.data + 1, "mysql_native_password");
    ck_assert_uint_eq(p.len, 1 + 22 + 20 + 1);   /* name, NUL, data, NUL */
    ck_assert_int_eq(p.data[p.len - 1], 0);
    ck_assert(memcmp(p.data + 23, scramble, 20) == 0);
    free(p.data);
    ha_auth_native_proof("admin", 5, scramble, proof);
    lb_send_pkt(fd, 3, proof, 20);
    expect_pkt(fd, &p, 4);
    ck_assert_int_eq(p.data[0], 0x00);
    free(p.data);
    close(fd);
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
    int fd = login(deprecate_eof ? HA_CLIENT_DEPRECATE_EOF : 0);
    uint8_t seq = 1;
    struct pkt p;

    send_query(fd, "SELECT 1 AS a, NULL AS b, 'x' AS c");
    expect_pkt(fd, &p, seq++);
    ck_assert_uint_eq(p.len, 1);
    ck_assert_int_eq(p.data[0], 3);
    free(p.data);
    for (int i = 0; i < 3; i++) {
        expect_pkt(fd, &p, seq++);
        ck_assert(memcmp(p.data, "\x03" "def", 4) == 0);
        /* The 12-byte fixed part ends with two zero filler bytes. */
        ck_assert_int_eq(p.data[p.len - 1], 0);
        ck_assert_int_eq(p.data[p.len - 2], 0);
        ck_assert_int_eq(p.data[p.len - 13], 0x0c);
        free(p.data);
    }
    if (!deprecate_eof) {
        expect_pkt(fd, &p, seq++);
        ck_assert(is_eof(&p));
        ck_assert_uint_eq(p.len, 5);
        free(p.data);
    }
    expect_pkt(fd, &p, seq++);
    ck_assert_uint_eq(p.len, 5);
    ck_assert(memcmp(p.data, "\x01" "1" "\xfb" "\x01" "x", 5) == 0);
    free(p.data);
    expect_pkt(fd, &p, seq++);
    ck_assert(is_eof(&p));
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
    free(p.data);
    close(fd);
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
    int fd = login(0);
    struct pkt p;

    send_query(fd, "SELECT 1 WHERE 0");
    expect_pkt(fd, &p, 1);                 /* column count */
    free(p.data);
    expect_pkt(fd, &p, 2);                 /* definition */
    free(p.data);
    expect_pkt(fd, &p, 3);
    ck_assert(is_eof(&p));
    free(p.data);
    expect_pkt(fd, &p, 4);
    ck_assert(is_eof(&p));
    free(p.data);
    close(fd);
}
END_TEST

START_TEST(test_server_ok_counts)
{
    int fd = login(0);
    struct pkt p;

    send_query(fd, "CREATE TABLE okc(a)");
    expect_pkt(fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    free(p.data);
    send_query(fd, "INSERT INTO okc VALUES (1), (2), (3)");
    expect_pkt(fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0x00);
    ck_assert_int_eq(p.data[1], 3);        /* affected rows */
    ck_assert_int_eq(p.data[2], 3);        /* last insert id */
    free(p.data);
    send_query(fd, "SELECT * FROM no_such_table");
    expect_pkt(fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1146);
    ck_assert(memcmp(p.data + 3, "#42S02", 6) == 0);
    free(p.data);
    close(fd);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Limits: 16 MiB splitting in both directions                          */
/* ------------------------------------------------------------------ */

START_TEST(test_server_split_row)
{
    /* A 17,000,000-byte value: its row packet is split into one
     * 0xFFFFFF-byte packet and the rest, with consecutive ids. */
    int fd = login(0);
    struct pkt p;
    size_t total = 0;
    uint8_t seq;

    send_query(fd, "SELECT zeroblob(17000000)");
    for (seq = 1; seq <= 3; seq++) {  /* count, definition, EOF */
        expect_pkt(fd, &p, seq);
        free(p.data);
    }
    expect_pkt(fd, &p, seq++);
    ck_assert_uint_eq(p.len, HA_PROTO_MAX_CHUNK);
    ck_assert_int_eq(p.data[0], 0xFE);     /* 8-byte lenenc length */
    total += p.len;
    free(p.data);
    expect_pkt(fd, &p, seq++);
    ck_assert_uint_lt(p.len, HA_PROTO_MAX_CHUNK);
    total += p.len;
    free(p.data);
    ck_assert_uint_eq(total, 9 + 17000000);
    expect_pkt(fd, &p, seq++);
    ck_assert(is_eof(&p));
    free(p.data);
    close(fd);
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
    struct pkt p;
    char want[32];
    int fd = login(0);

    q[0] = HA_COM_QUERY;
    memcpy(q + 1, head, hl);
    memset(q + 1 + hl, 'a', body);
    memcpy(q + 1 + hl + body, tail, tl);
    lb_send_pkt(fd, 0, q, n);
    lb_send_pkt(fd, 1, NULL, 0);
    free(q);
    for (uint8_t seq = 2; seq <= 4; seq++) {
        expect_pkt(fd, &p, seq);
        free(p.data);
    }
    expect_pkt(fd, &p, 5);
    snprintf(want, sizeof(want), "%zu", body);
    ck_assert_msg(p.data[0] != 0xFE && p.data[0] != 0xFF,
                  "row expected, got 0x%02x len %zu", p.data[0], p.len);
    ck_assert_uint_eq(p.data[0], strlen(want));
    ck_assert(memcmp(p.data + 1, want, strlen(want)) == 0);
    free(p.data);
    close(fd);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Errors: bad input closes that one connection, never the server       */
/* ------------------------------------------------------------------ */

START_TEST(test_server_out_of_order_sequence)
{
    int fd = login(0);
    uint8_t q[] = {HA_COM_QUERY, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'};
    struct pkt p;

    lb_send_pkt(fd, 5, q, sizeof(q));
    ck_assert_int_eq(read_pkt(fd, &p), 0);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1156);
    free(p.data);
    ck_assert_msg(read_pkt(fd, &p) == -1, "connection still open");
    close(fd);
    close(login(0)); /* and the server still serves others */
}
END_TEST

START_TEST(test_server_truncated_handshake_response)
{
    uint8_t scramble[20];
    uint32_t caps;
    uint8_t junk[10] = {0};
    struct pkt p;
    int fd = lb_connect(port);

    read_greeting(fd, scramble, &caps);
    lb_send_pkt(fd, 1, junk, sizeof(junk));
    expect_pkt(fd, &p, 2);
    ck_assert_int_eq(p.data[0], 0xFF);
    free(p.data);
    ck_assert_msg(read_pkt(fd, &p) == -1, "connection still open");
    close(fd);
    close(login(0));
}
END_TEST

START_TEST(test_server_quit_and_unknown_command)
{
    int fd = login(0);
    uint8_t cmd = 0x7f, quit = HA_COM_QUIT;
    struct pkt p;

    lb_send_pkt(fd, 0, &cmd, 1);
    expect_pkt(fd, &p, 1);
    ck_assert_int_eq(p.data[0], 0xFF);
    ck_assert_int_eq(p.data[1] | p.data[2] << 8, 1047);
    free(p.data);
    lb_send_pkt(fd, 0, &quit, 1);
    ck_assert_msg(read_pkt(fd, &p) == -1, "COM_QUIT got a reply");
    close(fd);
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
