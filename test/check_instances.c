/* SPDX-License-Identifier: MIT
 *
 * Two admin servers in one process, each on its own thread and event
 * loop, as an embedding host and the LD_PRELOAD agent would run them:
 * proves they share no mutable state. Each has its own
 * max_allowed_packet (per-server sysvar limits), its own in-memory
 * database (memdb name), and its own authorizer refusals (per session),
 * checked with both servers answering at the same time; and each ends its
 * own run at the process's exit (heap/runs.h: the "exited" end is armed
 * per instance, and one instance's stop disarms only its own).
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "core/buf.h"
#include "engine/config.h"
#include "heap/runs.h"
#include "test/support/client.h"
#include "test/support/loopback.h"
#include "test/support/replies.h"

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
/* The client (test/support/client.h and replies.h); client_query does */
/* not ck_assert, so client threads may use it: failures come back as  */
/* -1 or as text the test thread checks.                               */
/* ------------------------------------------------------------------ */

/* Runs sql and reduces the reply into out: "OK", "ERR <code> <message>",
 * or the first row's values joined by ',' (NULL as "NULL"). Returns 0, or
 * -1 on a protocol failure. */
static int
client_query(struct mc_conn *c, const char *sql, char *out, size_t outlen)
{
    struct ha_buf b = HA_BUF_INIT;
    struct rp_pkts *k = malloc(sizeof(*k));
    struct rp_result res;
    uint8_t seq = 1;
    size_t i = 0, used = 0;
    int rc = -1;

    out[0] = '\0';
    if (k == NULL || mc_query(c, sql) != 0 ||
        mc_read_reply(c, 0, &seq, &b) != 0 ||
        rp_split(b.data, b.len, 1, k, NULL, 0) != 0 ||
        rp_result(k, &i, false, &res) != 0)
        goto out;
    if (res.kind == RP_OK) {
        snprintf(out, outlen, "OK");
    } else if (res.kind == RP_ERR) {
        snprintf(out, outlen, "ERR %u %.*s", res.code,
                 (int)(res.msg_len < 512 ? res.msg_len : 512),
                 (const char *)res.msg);
    } else {
        for (uint64_t col = 0; res.n_rows > 0 && col < res.n_cols; col++) {
            const uint8_t *v;
            size_t vl;
            int got = rp_value(k, &res, 0, col, &v, &vl), w;

            if (got < 0)
                goto out;
            if (got == 0) {
                v = (const uint8_t *)"NULL";
                vl = 4;
            }
            w = snprintf(out + used, outlen - used, "%s%.*s",
                         col > 0 ? "," : "", (int)vl, (const char *)v);
            if (w < 0 || (size_t)w >= outlen - used)
                goto out;
            used += (size_t)w;
        }
    }
    rc = 0;
out:
    ha_buf_free(&b);
    free(k);
    return rc;
}

/* client_query under ck_assert, for the test thread. */
static const char *
query(struct mc_conn *c, const char *sql)
{
    static char out[1024];

    ck_assert_msg(client_query(c, sql, out, sizeof(out)) == 0,
                  "no reply to %s", sql);
    return out;
}

static struct mc_conn
login(int port, const char *user, const char *password)
{
    struct mc_conn c;

    mc_must_login(&c, port, user, password, 0);
    return c;
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */
/* ------------------------------------------------------------------ */

START_TEST(test_instances_sysvars_apart)
{
    struct mc_conn a = login(lb_a.port, "admin", "admin");
    struct mc_conn b = login(lb_b.port, "admin", "admin");
    char want[64];

    snprintf(want, sizeof(want), "%d", PACKET_A);
    ck_assert_str_eq(query(&a, "SELECT @@max_allowed_packet"), want);
    snprintf(want, sizeof(want), "max_allowed_packet,%d", PACKET_A);
    ck_assert_str_eq(query(&a, "SHOW VARIABLES LIKE 'max_allowed_packet'"),
                     want);
    snprintf(want, sizeof(want), "%d", PACKET_B);
    ck_assert_str_eq(query(&b, "SELECT @@max_allowed_packet"), want);
    snprintf(want, sizeof(want), "max_allowed_packet,%d", PACKET_B);
    ck_assert_str_eq(query(&b, "SHOW VARIABLES LIKE 'max_allowed_packet'"),
                     want);
    /* A, asked again after B started: B did not overwrite it. */
    snprintf(want, sizeof(want), "%d", PACKET_A);
    ck_assert_str_eq(query(&a, "SELECT @@GLOBAL.max_allowed_packet"), want);
    mc_close(&a);
    mc_close(&b);
}
END_TEST

START_TEST(test_instances_tables_apart)
{
    struct mc_conn a = login(lb_a.port, "admin", "admin");
    struct mc_conn b = login(lb_b.port, "admin", "admin");

    ck_assert_str_eq(query(&a, "CREATE TABLE only_in_a (x INTEGER)"), "OK");
    ck_assert_str_eq(query(&a, "INSERT INTO only_in_a VALUES (7)"), "OK");
    ck_assert_str_eq(query(&a, "SELECT x FROM only_in_a"), "7");
    ck_assert_str_eq(query(&b, "SELECT x FROM only_in_a"),
                     "ERR 1146 no such table: only_in_a");
    ck_assert_str_eq(query(&b, "CREATE TABLE only_in_a (y TEXT)"), "OK");
    ck_assert_str_eq(query(&b, "SELECT count(*) FROM only_in_a"), "0");
    ck_assert_str_eq(query(&a, "SELECT count(*) FROM only_in_a"), "1");
    mc_close(&a);
    mc_close(&b);
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
    struct mc_conn c;

    if (mc_login(&c, r->port, "stats", "stats", 0) != 0) {
        r->n_wrong = ROUNDS;
        snprintf(r->wrong, sizeof(r->wrong), "login failed");
        return NULL;
    }
    for (int i = 0; i < ROUNDS; i++) {
        if (client_query(&c, r->sql, out, sizeof(out)) != 0)
            snprintf(out, sizeof(out), "no reply");
        if (strcmp(out, r->want) != 0 && r->n_wrong++ == 0)
            snprintf(r->wrong, sizeof(r->wrong), "%s", out);
    }
    mc_close(&c);
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
    struct mc_conn a = login(lb_a.port, "admin", "admin");
    struct mc_conn b = login(lb_b.port, "admin", "admin");

    ck_assert_str_eq(query(&a, "CREATE TABLE table_a (x INTEGER)"), "OK");
    ck_assert_str_eq(query(&b, "CREATE TABLE table_b (x INTEGER)"), "OK");
    ck_assert_int_eq(pthread_create(&ta, NULL, refuse_loop, &ra), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, refuse_loop, &rb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_msg(ra.n_wrong == 0, "server A: %d wrong replies, first: %s",
                  ra.n_wrong, ra.wrong);
    ck_assert_msg(rb.n_wrong == 0, "server B: %d wrong replies, first: %s",
                  rb.n_wrong, rb.wrong);
    mc_close(&a);
    mc_close(&b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The runs' ends at the process's exit                                 */
/* ------------------------------------------------------------------ */

/* A process that starts servers A and B with datadirs dir_a and dir_b,
 * stops A when stop_a says so, and exits with B (and A unless stopped)
 * still running, as a host that never stops heapadmin does. Returns its
 * exit status. */
static int
exit_with_servers(const char *dir_a, const char *dir_b, bool stop_a)
{
    pid_t pid = fork();
    int status = -1;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct ha_config ca, cb;
        struct lb_server a, b;

        lb_config(&ca);
        lb_config(&cb);
        lb_start(&a, &ca, dir_a, false);
        lb_start(&b, &cb, dir_b, false);
        if (stop_a)
            lb_stop(&a);
        exit(0); /* the destructors run: heap/runs.c's writes the ends */
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* How dir's one run ended: the word its end file (runs/<pid>.<start>.end)
 * starts with, into out (16 bytes); "" when there is none. */
static const char *
end_of(const char *dir, char out[16])
{
    char runs[512], path[1024];
    struct dirent *de;
    DIR *d;
    FILE *f;

    out[0] = '\0';
    snprintf(runs, sizeof(runs), "%s/%s", dir, HA_RUNS_DIR);
    d = opendir(runs);
    ck_assert_msg(d != NULL, "no %s: the run was not recorded", runs);
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);

        if (n < 4 || strcmp(de->d_name + n - 4, ".end") != 0)
            continue;
        ck_assert_msg(out[0] == '\0', "two end files in %s", runs);
        snprintf(path, sizeof(path), "%s/%s", runs, de->d_name);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fscanf(f, "%15s", out), 1);
        fclose(f);
    }
    closedir(d);
    return out;
}

static void
rm_dir(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
    }
}

/* heap/runs.c kept where "exited" goes in one static for the whole
 * library: of two instances in one process, only the last one started
 * had its run ended at the exit (the other read as killed at the next
 * start), and one instance's stop disarmed the other's. */
START_TEST(test_instances_run_ends_apart)
{
    char dir_a[] = "/tmp/check_runs_a.XXXXXX";
    char dir_b[] = "/tmp/check_runs_b.XXXXXX";
    char end[16];
    int status;

    ck_assert_ptr_nonnull(mkdtemp(dir_a));
    ck_assert_ptr_nonnull(mkdtemp(dir_b));

    /* Both running at the exit: each run ends "exited". */
    status = exit_with_servers(dir_a, dir_b, false);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the process with two servers did not exit cleanly: %d",
                  status);
    ck_assert_str_eq(end_of(dir_a, end), "exited");
    ck_assert_str_eq(end_of(dir_b, end), "exited");
    rm_dir(dir_a);
    rm_dir(dir_b);

    /* A stopped first: A's run "stopped", B's still "exited". */
    ck_assert_ptr_nonnull(mkdtemp(strcpy(dir_a, "/tmp/check_runs_a.XXXXXX")));
    ck_assert_ptr_nonnull(mkdtemp(strcpy(dir_b, "/tmp/check_runs_b.XXXXXX")));
    status = exit_with_servers(dir_a, dir_b, true);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the process with two servers did not exit cleanly: %d",
                  status);
    ck_assert_str_eq(end_of(dir_a, end), "stopped");
    ck_assert_str_eq(end_of(dir_b, end), "exited");
    rm_dir(dir_a);
    rm_dir(dir_b);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *
instances_suite(void)
{
    Suite *s = suite_create("instances");
    TCase *core = tcase_create("core");
    TCase *exits = tcase_create("exits");

    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, test_instances_sysvars_apart);
    tcase_add_test(core, test_instances_tables_apart);
    tcase_add_test(core, test_instances_denials_apart);
    suite_add_tcase(s, core);
    /* No fixture: the process that forks has no servers of its own. */
    tcase_add_test(exits, test_instances_run_ends_apart);
    suite_add_tcase(s, exits);
    return s;
}

HA_CHECK_MAIN(instances_suite)
