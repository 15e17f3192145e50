/* SPDX-License-Identifier: MIT
 *
 * The public API (include/heapadmin.h) as a host uses it: errors come
 * back as messages, start/stop/start works on the same port, two
 * instances in one process stay apart, the log goes only to the sink the
 * host chose, host-base mode refuses a default SIGPIPE, and an abandoned
 * instance (a fork child's view) releases its listeners. The agent's
 * socket registers the process for a host gateway and answers it, and a
 * thread-mode instance reports its own memory apart from the host's.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>
#include <sqlite3.h>

#include "core/agenthttp.h"
#include "core/agentreg.h"
#include "core/exposcan.h"
#include "engine/families.h"
#include "engine/filevfs.h"
#include "engine/history.h"
#include "heap/dumpfiles.h"
#include "include/heapadmin.h"
#include "test/check_main.h"
#include "test/support/client.h"

static char tmpdir[] = "/tmp/check_api.XXXXXX";

static void
setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd) != 0) {
    }
    strcpy(tmpdir, "/tmp/check_api.XXXXXX");
}

/* A port nobody uses on any local address, drawn below the kernel's
 * ephemeral range (ip_local_port_range): a bind(0) port is an ephemeral
 * one, which an outgoing connection of a parallel test may hold as its
 * local port by the time the library binds it. The probe binds 0.0.0.0
 * without SO_REUSEADDR, so TIME_WAIT counts as used too. */
static int
free_port(void)
{
    int lo = 32768, hi;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    static unsigned seed;

    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2 || lo <= 12000)
            lo = 32768;
        fclose(f);
    }
    if (!seed)
        seed = (unsigned)getpid() ^ (unsigned)time(NULL);
    for (int i = 0; i < 200; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        int port = 10000 + (int)(rand_r(&seed) % (unsigned)(lo - 10000));
        int ok;

        ck_assert_int_ge(fd, 0);
        a.sin_port = htons((uint16_t)port);
        ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        close(fd);
        if (ok)
            return port;
    }
    ck_abort_msg("no free port below %d", lo);
    return -1;
}

/* The first packet on a fresh connection: MySQL's HandshakeV10 starts
 * with protocol version 10. Returns it, or -1 when nothing answers. */
static int
greeting(int port)
{
    struct mc_conn c;
    int ret = -1;

    if (mc_connect(&c, port) == 0 && mc_greet(&c) == 0)
        ret = c.protocol;
    mc_close(&c);
    return ret;
}

static char *
config_text(int port, const char *sub)
{
    char *text = NULL;

    ck_assert_int_gt(asprintf(&text,
                              "datadir = \"%s/%s\"\n"
                              "admin_variables = { mysql_ifaces = "
                              "\"127.0.0.1:%d;%s/%s.sock\" }\n",
                              tmpdir, sub, port, tmpdir, sub),
                     0);
    return text;
}

/* A log sink that counts lines and remembers the last one. */
struct sink {
    pthread_mutex_t mu;
    int lines;
    char last[512];
};

static void
sink_fn(int level, const char *line, void *arg)
{
    struct sink *s = arg;

    (void)level;
    pthread_mutex_lock(&s->mu);
    s->lines++;
    snprintf(s->last, sizeof(s->last), "%s", line);
    pthread_mutex_unlock(&s->mu);
}

START_TEST(test_api_bad_config_is_a_message)
{
    struct heapadmin_options o = {
        .config_text = "admin_variables = { max_connections = 0 }\n",
        .no_log = 1,
    };
    struct heapadmin *h = (struct heapadmin *)&o;
    char err[512] = "";

    ck_assert_int_eq(heapadmin_new(&o, &h, err, sizeof(err)), -1);
    ck_assert_ptr_null(h);
    ck_assert_msg(strstr(err, "config_text:1:") != NULL &&
                      strstr(err, "max_connections") != NULL,
                  "%s", err);
    /* NULL options: built-in defaults, but the default datadir "." must
     * be writable: run in the temp dir. */
    heapadmin_free(NULL);
}
END_TEST

START_TEST(test_api_start_stop_start)
{
    int port = free_port();
    char *text = config_text(port, "a");
    struct sink s = {PTHREAD_MUTEX_INITIALIZER, 0, ""};
    struct heapadmin_options o = {
        .config_text = text, .log = sink_fn, .log_arg = &s};
    struct heapadmin *h = NULL;
    char err[512] = "", path[256];
    struct stat st;

    ck_assert_msg(heapadmin_new(&o, &h, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(heapadmin_listener_count(h), 0);
    for (int round = 0; round < 2; round++) {
        ck_assert_msg(heapadmin_start(h, err, sizeof(err)) == 0, "%s", err);
        ck_assert_int_eq(heapadmin_listener_count(h), 2);
        ck_assert_int_eq(heapadmin_listener_port(h, 0), port);
        ck_assert_ptr_null(heapadmin_listener_path(h, 0));
        snprintf(path, sizeof(path), "%s/a.sock", tmpdir);
        ck_assert_str_eq(heapadmin_listener_path(h, 1), path);
        ck_assert_int_eq(greeting(port), 10);
        ck_assert_int_eq(heapadmin_start(h, err, sizeof(err)), -1);
        ck_assert_str_eq(err, "already started");
        heapadmin_stop(h);
        ck_assert_int_eq(greeting(port), -1);
        ck_assert_int_eq(stat(path, &st), -1); /* socket file removed */
    }
    heapadmin_stop(h); /* twice is harmless */
    heapadmin_free(h);
    ck_assert_int_gt(s.lines, 0);
    ck_assert_msg(strstr(s.last, "heapadmin stopped") != NULL, "%s", s.last);
    free(text);
}
END_TEST

START_TEST(test_api_two_instances)
{
    int p1 = free_port(), p2 = free_port();
    char *t1 = config_text(p1, "one"), *t2 = config_text(p2, "two");
    struct heapadmin_options o1 = {.config_text = t1, .no_log = 1};
    struct heapadmin_options o2 = {.config_text = t2, .no_log = 1};
    struct heapadmin *h1 = NULL, *h2 = NULL;
    char err[512] = "";

    ck_assert_msg(heapadmin_new(&o1, &h1, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(heapadmin_new(&o2, &h2, err, sizeof(err)) == 0, "%s", err);
    ck_assert_str_ne(heapadmin_datadir(h1), heapadmin_datadir(h2));
    ck_assert_msg(heapadmin_start(h1, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(heapadmin_start(h2, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(greeting(p1), 10);
    ck_assert_int_eq(greeting(p2), 10);
    heapadmin_free(h1);
    ck_assert_int_eq(greeting(p1), -1);
    ck_assert_int_eq(greeting(p2), 10);
    heapadmin_free(h2);
    free(t1);
    free(t2);
}
END_TEST

START_TEST(test_api_host_base_needs_sigpipe_ignored)
{
    int port = free_port();
    char *text = config_text(port, "b");
    struct heapadmin_options o = {.config_text = text, .no_log = 1};
    struct event_base *base = event_base_new();
    struct heapadmin *h = NULL;
    char err[512] = "";

    signal(SIGPIPE, SIG_DFL);
    ck_assert_msg(heapadmin_new(&o, &h, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(heapadmin_start_on_base(h, base, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "SIGPIPE") != NULL, "%s", err);
    signal(SIGPIPE, SIG_IGN);
    ck_assert_msg(heapadmin_start_on_base(h, base, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(heapadmin_listener_port(h, 0), port);
    heapadmin_free(h);
    event_base_free(base);
    free(text);
}
END_TEST

START_TEST(test_api_abandon_closes_only_listeners)
{
    int port = free_port();
    char *text = config_text(port, "c");
    struct heapadmin_options o = {.config_text = text, .no_log = 1};
    struct heapadmin *h = NULL;
    char err[512] = "";
    pid_t pid;
    int status;

    ck_assert_msg(heapadmin_new(&o, &h, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(heapadmin_start(h, err, sizeof(err)) == 0, "%s", err);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The child inherited h without its thread. */
        heapadmin_abandon(h);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    /* The parent's listener is untouched by the child's close. */
    ck_assert_int_eq(greeting(port), 10);
    heapadmin_free(h);
    free(text);
}
END_TEST


/* The value of metric name (unlabelled) in an exposition, or -1. */
static double
metric(const char *text, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    return -1;
}

/* agent_socket: the process is in the datadir's registry, a gateway
 * (this process's own user) is answered without a password, and its
 * /metrics shows heapadmin's own memory beside the host's, whose
 * allocated bytes leave the own share out. */
START_TEST(test_api_agent_socket_and_own_memory)
{
    char dir[256], sock[400], text[1024], err[512] = "", prog[64];
    struct heapadmin_options o = {.no_log = 1};
    struct heapadmin *h = NULL;
    struct ha_agent *list = NULL;
    struct ha_agent_reply rep;
    size_t n = 0, total = 0, len = sizeof(total);
    uint64_t epoch = 1;
    double host, own;
    void *big;

    ha_agentreg_self_program(prog, sizeof(prog));
    snprintf(dir, sizeof(dir), "%s/a", tmpdir);
    snprintf(sock, sizeof(sock), "%s/%s.%ld.http", dir, prog, (long)getpid());
    snprintf(text, sizeof(text),
             "datadir = \"%s\"\nadmin_variables = { mysql_ifaces = "
             "\"%s/m.sock\" }\n",
             dir, tmpdir);
    o.config_text = text;
    o.agent_socket = sock;
    ck_assert_msg(heapadmin_new(&o, &h, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(heapadmin_start(h, err, sizeof(err)) == 0, "%s", err);

    ck_assert_int_eq(ha_agentreg_list(dir, &list, &n, NULL, 0), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(list[0].pid, getpid());
    ck_assert_int_eq(list[0].state, HA_AGENT_SERVING);
    ck_assert_str_eq(list[0].program, prog);
    ha_agenthttp_get(list, 1, "GET", "/agent", NULL, NULL, 5000, 65536, &rep);
    ck_assert_msg(rep.status == 200, "%d %s", rep.status, rep.err);
    ha_buf_append_u8(&rep.body, 0);
    ck_assert_msg(strstr((const char *)rep.body.data, "endpoint: ") != NULL,
                  "%s", (const char *)rep.body.data);
    ha_agenthttp_replies_free(&rep, 1);

    /* heapadmin allocates on its own thread: its share is apart. */
    big = malloc(8 << 20); /* the host's: counted as the host's */
    ck_assert_ptr_nonnull(big);
    memset(big, 1, 8 << 20);
    ha_agenthttp_get(list, 1, "GET", "/metrics", "X-Heapadmin-Role: stats\r\n",
                    NULL, 5000, 1 << 20, &rep);
    ck_assert_int_eq(rep.status, 200);
    ha_buf_append_u8(&rep.body, 0);
    {
        /* Every family heapadmin writes is one a gateway accepts
         * (engine/families.h): nothing of a real agent is refused. */
        struct ha_exposcan_policy pol = {ha_families, ha_families_n,
                                         "pid program user", 2000, 1 << 20};
        struct ha_exposcan scan;
        struct ha_exposcan_report r;
        const char *extra[] = {"pid", "1", "program", "p", NULL};

        ha_exposcan_init(&scan, &pol);
        ck_assert_int_eq(ha_exposcan_add(&scan, (const char *)rep.body.data,
                                         rep.body.len - 1, extra, &r),
                         0);
        for (int i = 0; i < HA_EXPOSCAN_REFUSAL_MAX; i++)
            ck_assert_msg(r.refused[i] == 0,
                          "%zu samples refused (%s): a family or label "
                          "missing from engine/families.c?\n%s",
                          r.refused[i], ha_exposcan_refusal_name(i),
                          (const char *)rep.body.data);
        ck_assert_uint_ge(r.accepted, 20);
        ha_exposcan_free(&scan);
    }
    host = metric((const char *)rep.body.data,
                  "heapadmin_jemalloc_allocated_bytes");
    own = metric((const char *)rep.body.data, "heapadmin_self_allocated_bytes");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* (Under ASan or TSan, the sanitizer's allocator serves malloc: no
     * jemalloc figures.) */
    ck_assert(mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch)) == 0);
    ck_assert(mallctl("stats.allocated", &total, &len, NULL, 0) == 0);
    ck_assert_msg(own > 0 && host >= 8 << 20, "own %f host %f", own, host);
    /* host + own is jemalloc's total, within what moved meanwhile. */
    ck_assert_msg(host + own > (double)total * 0.9 &&
                      host + own < (double)total * 1.1,
                  "host %f + own %f vs total %zu", host, own, total);
#else
    (void)own;
    (void)host;
    (void)epoch;
    (void)len;
#endif
    ha_agenthttp_replies_free(&rep, 1);
    free(big);
    free(list);
    heapadmin_free(h);
    ck_assert_msg(access(sock, F_OK) != 0, "the agent socket outlived it");
}
END_TEST

/* fork() beside a running instance: the child gets SQLite's locks free
 * (it opens and uses a database), and when a lock cannot be had the
 * prepare gives up within its bound and the child is told. */
START_TEST(test_api_fork_locks)
{
    char text[512], err[512] = "";
    struct heapadmin_options o = {.no_log = 1};
    struct heapadmin *h = NULL;
    sqlite3_mutex *mem;
    struct timespec t0, t1;
    long ms;
    int status = -1, ok;
    pid_t pid;

    snprintf(text, sizeof(text),
             "datadir = \"%s/f\"\nadmin_variables = { mysql_ifaces = "
             "\"%s/f.sock\" }\n",
             tmpdir, tmpdir);
    o.config_text = text;
    ck_assert_msg(heapadmin_new(&o, &h, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(heapadmin_start(h, err, sizeof(err)) == 0, "%s", err);

    ck_assert_int_eq(heapadmin_fork_prepare(), 1);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        sqlite3 *db = NULL;

        ok = heapadmin_fork_child() == 1 &&
             sqlite3_open(":memory:", &db) == SQLITE_OK &&
             sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1)",
                          NULL, NULL, NULL) == SQLITE_OK;
        sqlite3_close(db);
        _exit(ok ? 0 : 1);
    }
    heapadmin_fork_parent();
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child could not use SQLite (status %d)", status);

    /* A lock held throughout (outside the fork gate: this SQLite is
     * shared, so libheapadmin does not configure its mutexes): prepare
     * gives up at its bound, about 1 s. */
    mem = sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_MEM);
    sqlite3_mutex_enter(mem);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ok = heapadmin_fork_prepare();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    heapadmin_fork_parent();
    sqlite3_mutex_leave(mem);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    ck_assert_int_eq(ok, 0);
    ck_assert_msg(ms >= 950 && ms < 10000, "gave up after %ld ms", ms);
    heapadmin_free(h);
}
END_TEST

/* How many of this process's descriptors are open on path. */
static int
fds_on(const char *path)
{
    char link[64], target[4096];
    int n = 0;

    for (int fd = 0; fd < 1024; fd++) {
        ssize_t len;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        n += strcmp(target, path) == 0;
    }
    return n;
}

/* fork() while the parent has the history open (a session attached it,
 * and a connection is inside a read transaction): SQLite's unix VFS
 * keeps one record per open file for the process, which a connection
 * the child opened on the same file would join, with the parent's lock
 * counts and mutexes. The child must have forgotten the parent's files
 * (none of their descriptors left) and write its own sample, which the
 * parent then reads, the file intact. */
START_TEST(test_api_fork_forgets_parent_files)
{
    int port = free_port();
    char *text = config_text(port, "g");
    char err[512] = "", path[512], real[4096];
    struct heapadmin_options o = {.config_text = text, .no_log = 1};
    struct heapadmin *h = NULL;
    struct mc_conn c;
    sqlite3 *db, *check = NULL;
    sqlite3_stmt *st = NULL;
    int status = -1;
    pid_t pid;

    ck_assert_msg(heapadmin_new(&o, &h, err, sizeof(err)) == 0, "%s", err);
    ck_assert_msg(heapadmin_start(h, err, sizeof(err)) == 0, "%s", err);
    mc_must_login(&c, port, "admin", "admin", 0);
    snprintf(path, sizeof(path), "%s/g/%s", tmpdir, HA_HISTORY_FILE);
    ck_assert_ptr_nonnull(realpath(path, real));
    db = ha_history_open(real, err, sizeof(err));
    ck_assert_msg(db != NULL, "%s", err);
    ck_assert_int_eq(sqlite3_exec(db, "BEGIN; SELECT count(*) FROM "
                                      "system_memory",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_ge(fds_on(real), 1);

    ck_assert_int_eq(heapadmin_fork_prepare(), 1);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct ha_history_sample s = {.timestamp = time(NULL),
                                      .allocated = 1,
                                      .resident = 2,
                                      .pid = getpid()};
        int usable = heapadmin_fork_child();
        int left = fds_on(real), files = ha_filevfs_open_files();
        sqlite3 *mine = ha_history_open(real, err, sizeof(err));
        int stored = mine != NULL &&
                     ha_history_record(mine, &s, err, sizeof(err)) == 0;

        if (!usable || left != 0 || files != 0 || !stored) {
            fprintf(stderr, "child: usable %d, %d descriptors and %d files "
                            "of the parent's left, sample %s (%s)\n",
                    usable, left, files, stored ? "stored" : "not stored",
                    err);
            _exit(1);
        }
        sqlite3_close(mine);
        _exit(0);
    }
    heapadmin_fork_parent();
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child kept the parent's files (status %d)", status);

    ck_assert_int_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT count(*) FROM system_memory "
                                        "WHERE pid = ?1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, pid);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    ck_assert_int_eq(sqlite3_open_v2(real, &check, SQLITE_OPEN_READONLY, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(check, "PRAGMA integrity_check", -1,
                                        &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(check);
    sqlite3_close(db);
    mc_close(&c);
    heapadmin_free(h);
    free(text);
}
END_TEST

/* heapadmin_log_format: heapadmin's line head, the text, always
 * terminated; a buffer too small for the head gets an empty string. */
START_TEST(test_api_log_format)
{
    char line[128], tiny[8];
    size_t n = heapadmin_log_format(line, sizeof(line), HEAPADMIN_LOG_WARN,
                                    "child %d: %s", 7, "not served");
    int year, mon, day, hh, mm, ss, ms;
    char level[16], rest[64];

    ck_assert_uint_eq(n, strlen(line));
    ck_assert_int_eq(sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ [%15[^]]] %63[^\n]",
                            &year, &mon, &day, &hh, &mm, &ss, &ms, level, rest),
                     9);
    ck_assert_int_ge(year, 2024);
    ck_assert_str_eq(level, "warn");
    ck_assert_str_eq(rest, "child 7: not served");
    n = heapadmin_log_format(line, 50, HEAPADMIN_LOG_INFO, "%s",
                             "a text far longer than the fifty bytes given");
    ck_assert_uint_eq(n, 49);
    ck_assert_uint_eq(strlen(line), 49);
    ck_assert_uint_eq(heapadmin_log_format(tiny, sizeof(tiny), 0, "x"), 0);
    ck_assert_str_eq(tiny, "");
}
END_TEST

/* A clean exit leaves no journal: the history as the agent leaves it (a
 * session's read-only ATTACH closed last, which SQLite may not
 * checkpoint from, so its -wal and -shm stay) is folded back by
 * ha_filevfs_release once nobody else has it open, and left alone
 * while anyone does; the sample survives. The dumps' staging directory
 * goes when empty, and only then. */
static bool
exists(const char *dir, const char *name)
{
    char p[1024];
    struct stat st;

    snprintf(p, sizeof(p), "%s%s", dir, name);
    return lstat(p, &st) == 0;
}

START_TEST(test_api_tidy_folds_journals_back)
{
    char dir[256], path[512], err[512] = "", uri[600];
    struct ha_history_sample smp = {.timestamp = 1700000000,
                                    .allocated = 7,
                                    .resident = 8,
                                    .pid = 42};
    sqlite3 *rw, *ro = NULL, *holder = NULL;
    sqlite3_stmt *st = NULL;

    snprintf(dir, sizeof(dir), "%s/tidy", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, HA_HISTORY_FILE);
    rw = ha_history_open(path, err, sizeof(err));
    ck_assert_msg(rw != NULL, "%s", err);
    ck_assert_int_eq(ha_history_record(rw, &smp, err, sizeof(err)), 0);
    snprintf(uri, sizeof(uri), "file:%s?mode=ro&vfs=%s", path,
             ha_filevfs_name());
    for (int i = 0; i < 2; i++) {
        sqlite3 **c = i == 0 ? &ro : &holder;

        ck_assert_int_eq(sqlite3_open_v2(uri, c,
                                         SQLITE_OPEN_READONLY |
                                             SQLITE_OPEN_URI,
                                         NULL),
                         SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(*c, "SELECT count(*) FROM "
                                          "system_memory",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    }
    sqlite3_close(rw);
    sqlite3_close(ro);
    ck_assert(exists(path, "-wal"));
    ck_assert(exists(path, "-shm"));
    /* Someone still reads it: left for that one. */
    ck_assert_int_eq(ha_filevfs_release(path), -1);
    ck_assert(exists(path, "-wal"));
    sqlite3_close(holder); /* read-only, last: cannot fold it back */
    ck_assert(exists(path, "-wal"));
    ck_assert_int_eq(ha_filevfs_release(path), 0);
    ck_assert(!exists(path, "-wal"));
    ck_assert(!exists(path, "-shm"));
    ck_assert_int_eq(sqlite3_open_v2(path, &rw, SQLITE_OPEN_READONLY, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(rw, "SELECT resident FROM "
                                            "system_memory WHERE pid = 42",
                                        -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(st, 0), 8);
    sqlite3_finalize(st);
    sqlite3_close(rw);
    ck_assert_int_eq(ha_filevfs_release(path), 0); /* none: nothing to do */

    /* The staging directory: kept while it holds a dump being written. */
    snprintf(path, sizeof(path), "%s/%s", dir, HA_DUMPFILES_STAGING);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    strcat(path, "/proxysql.1.0.m0.heap");
    fclose(fopen(path, "w"));
    ck_assert_int_eq(ha_dumpfiles_staging_release(dir), ENOTEMPTY);
    unlink(path);
    ck_assert_int_eq(ha_dumpfiles_staging_release(dir), 0);
    ck_assert(!exists(dir, "/" HA_DUMPFILES_STAGING));
    ck_assert_int_eq(ha_dumpfiles_staging_release(dir), 0);
}
END_TEST

static Suite *
api_suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_api_bad_config_is_a_message);
    tcase_add_test(tc, test_api_start_stop_start);
    tcase_add_test(tc, test_api_two_instances);
    tcase_add_test(tc, test_api_host_base_needs_sigpipe_ignored);
    tcase_add_test(tc, test_api_abandon_closes_only_listeners);
    tcase_add_test(tc, test_api_agent_socket_and_own_memory);
    tcase_add_test(tc, test_api_fork_locks);
    tcase_add_test(tc, test_api_fork_forgets_parent_files);
    tcase_add_test(tc, test_api_tidy_folds_journals_back);
    tcase_add_test(tc, test_api_log_format);
    suite_add_tcase(s, tc);
    return s;
}

HA_CHECK_MAIN(api_suite)
