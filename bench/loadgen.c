/* SPDX-License-Identifier: MIT
 *
 * Closed-loop MySQL-protocol load generator on libmariadb.
 *
 * N connections, one thread each; every thread sends a query, reads the
 * whole result (mysql_real_query + mysql_store_result, so the last row
 * has crossed the wire before the clock stops), records the latency and
 * sends the next. Closed loop on purpose: that is how a monitoring poller
 * behaves, and it makes queries/s and latency two views of one number
 * (qps = conns / mean latency), so a server cannot look fast by queueing.
 *
 *   loadgen [-h host] [-P port] [-u user] [-p password] [-c conns]
 *           [-d seconds | -n queries] [-w warmup_seconds] [-r]
 *           -q query [-q query ...]
 *
 * Several -q alternate round-robin on each connection (the prof_active
 * true/false toggle); each connection starts at a different one so the
 * server sees a mix. -r reconnects for every query (connect, query,
 * disconnect: the monitoring pattern that would leak per-connection
 * state). Before the run, one connection runs each query once and
 * measures the first query's wire size from TCP_INFO, so the loopback
 * floor (floor.c) can replay the same sizes.
 *
 * Output: the lat.h result line plus req_bytes=, resp_bytes=,
 * all_queries= (every successful query, warm-up and probe included, to
 * divide the server's CPU time by) and server_version= (from the
 * handshake, blanks made '_'). Exit 1
 * with the client's error message if the first connection fails, or if
 * not one query succeeded.
 */
#include "lat.h"
#include "loop.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <errmsg.h>
#include <mysql.h>

#define LOADGEN_MAX_QUERIES 8
#define LOADGEN_CONNECT_TIMEOUT_S 5u   /* per connect, seconds */
#define LOADGEN_IO_TIMEOUT_S 30u       /* per read/write, seconds */

enum loadgen_phase {
    LOADGEN_WARMUP,     /* running, not recording */
    LOADGEN_MEASURE,    /* recording */
    LOADGEN_STOP,       /* threads finish their query and exit */
    LOADGEN_PHASE_MAX
};

struct loadgen_opts {
    const char *host;
    unsigned port;
    const char *user;
    const char *password;
    struct bench_loop_opts loop;  /* -c -d -n -w */
    bool reconnect;             /* connect/query/disconnect per query */
    const char *queries[LOADGEN_MAX_QUERIES];
    unsigned n_queries;
};

struct loadgen_worker {
    pthread_t tid;
    int id;
    MYSQL *mysql;                   /* NULL between queries with -r */
    unsigned long long quota;       /* queries to measure; 0 = no limit */
    unsigned long long completed;   /* successful queries, warm-up too */
    struct bench_lat lat;           /* measured samples and errors */
    char first_err[256];            /* first error, for stderr */
};

static struct loadgen_opts opts = {
    .host = "127.0.0.1",
    .port = 6032,
    .user = "admin",
    .password = "admin",
    .loop = BENCH_LOOP_DEFAULTS,
};

static _Atomic int phase = LOADGEN_WARMUP;

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: loadgen [-h host] [-P port] [-u user] [-p password]\n"
            "               [-c conns] [-d seconds | -n queries]\n"
            "               [-w warmup_seconds] [-r] -q query [-q query]...\n"
            "  several -q alternate round-robin; -r reconnects per query\n");
}

/* Opens one client connection. Returns the handle, or NULL with the
 * client's message in err. */
static MYSQL *
open_conn(char *err, size_t errlen)
{
    MYSQL *mysql = mysql_init(NULL);
    unsigned protocol = MYSQL_PROTOCOL_TCP;
    unsigned connect_timeout = LOADGEN_CONNECT_TIMEOUT_S;
    unsigned io_timeout = LOADGEN_IO_TIMEOUT_S;

    if (mysql == NULL) {
        snprintf(err, errlen, "mysql_init: out of memory");
        return NULL;
    }
    /* TCP even for "localhost": the benchmark is about the TCP port. The
     * timeouts keep a hung server from hanging the whole run. */
    mysql_options(mysql, MYSQL_OPT_PROTOCOL, &protocol);
    mysql_options(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
    mysql_options(mysql, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
    mysql_options(mysql, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
    if (mysql_real_connect(mysql, opts.host, opts.user, opts.password, NULL,
                           opts.port, NULL, 0) == NULL) {
        snprintf(err, errlen, "connect to %s:%u as %s: %s (%u)", opts.host,
                 opts.port, opts.user, mysql_error(mysql), mysql_errno(mysql));
        mysql_close(mysql);
        return NULL;
    }
    return mysql;
}

/* Runs one query and reads every result set to the end. Returns 0, or -1
 * with the server's or client's message in err. */
static int
run_query(MYSQL *mysql, const char *query, char *err, size_t errlen)
{
    int status;

    if (mysql_real_query(mysql, query, strlen(query)) != 0)
        goto fail;
    do {
        MYSQL_RES *res = mysql_store_result(mysql);

        if (res != NULL)
            mysql_free_result(res);
        else if (mysql_field_count(mysql) != 0)
            goto fail;  /* a result set was due but did not arrive */
        status = mysql_next_result(mysql);
        if (status > 0)
            goto fail;
    } while (status == 0);
    return 0;

fail:
    snprintf(err, errlen, "%s (%u)", mysql_error(mysql), mysql_errno(mysql));
    return -1;
}

static bool
is_connection_lost(MYSQL *mysql)
{
    unsigned code = mysql_errno(mysql);

    return code == CR_SERVER_GONE_ERROR || code == CR_SERVER_LOST;
}

/* One iteration: in -r mode a full connect/query/close cycle, otherwise a
 * query on the thread's connection, reopening it if the server dropped
 * it. Returns 0 or -1 with err set. */
static int
one_iteration(struct loadgen_worker *w, const char *query, char *err,
              size_t errlen)
{
    int ret;

    if (w->mysql == NULL && (w->mysql = open_conn(err, errlen)) == NULL)
        return -1;
    ret = run_query(w->mysql, query, err, errlen);
    if (opts.reconnect || (ret != 0 && is_connection_lost(w->mysql))) {
        mysql_close(w->mysql);
        w->mysql = NULL;
    }
    return ret;
}

static void *
worker_main(void *arg)
{
    struct loadgen_worker *w = arg;
    unsigned qi = (unsigned)w->id % opts.n_queries;
    unsigned long long done = 0;
    char err[256];

    mysql_thread_init();
    for (;;) {
        int start_phase = atomic_load(&phase);
        uint64_t t0, t1;
        int ret;

        if (start_phase == LOADGEN_STOP)
            break;
        if (w->quota != 0 && start_phase == LOADGEN_MEASURE &&
            done >= w->quota)
            break;
        t0 = bench_lat_now_ns();
        ret = one_iteration(w, opts.queries[qi], err, sizeof(err));
        t1 = bench_lat_now_ns();
        qi = (qi + 1) % opts.n_queries;
        if (ret == 0)
            w->completed++;

        /* Only queries that began and ended inside the measured window
         * count, so the rate is not inflated by queries straddling its
         * edges. */
        if (start_phase != LOADGEN_MEASURE ||
            (w->quota == 0 && atomic_load(&phase) != LOADGEN_MEASURE)) {
            if (ret != 0)
                goto backoff;
            continue;
        }
        done++;
        if (ret == 0) {
            bench_lat_record(&w->lat, t1 - t0);
            continue;
        }
        w->lat.errors++;
backoff:
        if (w->first_err[0] == '\0')
            snprintf(w->first_err, sizeof(w->first_err), "%s", err);
        /* A server that refuses everything must not turn the loop into a
         * busy spin that starves the server of the CPU. */
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    if (w->mysql != NULL)
        mysql_close(w->mysql);
    w->mysql = NULL;
    mysql_thread_end();
    return NULL;
}

/* Bytes sent (acked) and received on a client connection's socket, from
 * TCP_INFO. Returns 0, or -1 if the kernel would not say. */
static int
tcp_bytes(MYSQL *mysql, uint64_t *sent, uint64_t *received)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);
    int fd = (int)mysql_get_socket(mysql);

    memset(&info, 0, sizeof(info));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) +
                  sizeof(info.tcpi_bytes_received))
        return -1;
    *sent = info.tcpi_bytes_acked;
    *received = info.tcpi_bytes_received;
    return 0;
}

/* Runs every query once on mysql (a check that they work before the
 * timed run) and measures the first one's request and response size on
 * the wire, TCP payload bytes. Returns 0, or -1 with err set. */
static int
probe(MYSQL *mysql, uint64_t *req_bytes, uint64_t *resp_bytes, char *err,
      size_t errlen)
{
    uint64_t s0 = 0, r0 = 0, s1 = 0, r1 = 0;
    int have_info = tcp_bytes(mysql, &s0, &r0) == 0;

    for (unsigned i = 0; i < opts.n_queries; i++) {
        if (run_query(mysql, opts.queries[i], err, errlen) != 0)
            return -1;
        if (i == 0 && have_info && tcp_bytes(mysql, &s1, &r1) == 0) {
            *req_bytes = s1 - s0;
            *resp_bytes = r1 - r0;
        }
    }
    return 0;
}

static int
parse_opts(int argc, char **argv)
{
    int c;
    char *end;

    while ((c = getopt(argc, argv, "h:P:u:p:q:r" BENCH_LOOP_GETOPT)) != -1) {
        errno = 0;
        end = NULL;
        switch (c) {
        case 'h':
            opts.host = optarg;
            break;
        case 'P':
            opts.port = (unsigned)strtoul(optarg, &end, 10);
            if (opts.port == 0 || opts.port > 65535)
                goto bad;
            break;
        case 'u':
            opts.user = optarg;
            break;
        case 'p':
            opts.password = optarg;
            break;
        case 'q':
            if (opts.n_queries == LOADGEN_MAX_QUERIES) {
                fprintf(stderr, "loadgen: at most %d -q\n",
                        LOADGEN_MAX_QUERIES);
                return -1;
            }
            opts.queries[opts.n_queries++] = optarg;
            break;
        case 'r':
            opts.reconnect = true;
            break;
        default:
            switch (bench_loop_opt(&opts.loop, c, optarg)) {
            case 1:
                break;
            case 0:
                usage(stderr);
                return -1;
            default:
                goto bad;
            }
        }
        if (errno != 0 || (end != NULL && *end != '\0'))
            goto bad;
    }
    if (optind != argc || opts.n_queries == 0) {
        usage(stderr);
        return -1;
    }
    return 0;

bad:
    fprintf(stderr, "loadgen: bad value for -%c: %s\n", c, optarg);
    return -1;
}

int
main(int argc, char **argv)
{
    struct loadgen_worker *workers = NULL;
    struct bench_lat *total = NULL;
    MYSQL *first = NULL;
    uint64_t req_bytes = 0, resp_bytes = 0, t_start = 0, t_end = 0;
    unsigned long long all_queries;
    char err[512], extra[256], version[96];
    int status = EXIT_FAILURE;
    int started = 0;

    if (parse_opts(argc, argv) != 0)
        return 2;
    if (mysql_library_init(0, NULL, NULL) != 0) {
        fprintf(stderr, "loadgen: mysql_library_init failed\n");
        return EXIT_FAILURE;
    }
    workers = calloc((size_t)opts.loop.conns, sizeof(*workers));
    total = calloc(1, sizeof(*total));
    if (workers == NULL || total == NULL) {
        fprintf(stderr, "loadgen: out of memory\n");
        goto out;
    }

    /* Connect up front, in this thread, so a refused connection or a bad
     * password ends the run at once with the client's own message rather
     * than as an error count. */
    if ((first = open_conn(err, sizeof(err))) == NULL) {
        fprintf(stderr, "loadgen: %s\n", err);
        goto out;
    }
    /* The handshake's version string names the server in the results
     * even when it does not support SELECT @@version. */
    snprintf(version, sizeof(version), "%s", mysql_get_server_info(first));
    for (char *p = version; *p != '\0'; p++)
        if (*p == ' ' || *p == '\t' || *p == '=')
            *p = '_';
    if (probe(first, &req_bytes, &resp_bytes, err, sizeof(err)) != 0) {
        fprintf(stderr, "loadgen: query failed: %s\n", err);
        goto out;
    }
    for (int i = 0; i < opts.loop.conns; i++) {
        struct loadgen_worker *w = &workers[i];

        w->id = i;
        w->quota = bench_loop_quota(&opts.loop, i);
        if (opts.reconnect)
            continue;
        if (i == 0) {
            w->mysql = first;
            first = NULL;
        } else if ((w->mysql = open_conn(err, sizeof(err))) == NULL) {
            fprintf(stderr, "loadgen: connection %d of %d: %s\n", i + 1,
                    opts.loop.conns, err);
            goto out;
        }
    }
    if (first != NULL) {
        mysql_close(first);
        first = NULL;
    }

    for (; started < opts.loop.conns; started++) {
        int e = pthread_create(&workers[started].tid, NULL, worker_main,
                               &workers[started]);
        if (e != 0) {
            fprintf(stderr, "loadgen: pthread_create: %s\n", strerror(e));
            atomic_store(&phase, LOADGEN_STOP);
            goto join;
        }
    }
    bench_loop_sleep(opts.loop.warmup_s);
    t_start = bench_lat_now_ns();
    atomic_store(&phase, LOADGEN_MEASURE);
    if (opts.loop.total == 0) {
        bench_loop_sleep(opts.loop.seconds);
        t_end = bench_lat_now_ns();
        atomic_store(&phase, LOADGEN_STOP);
    }

join:
    for (int i = 0; i < started; i++)
        pthread_join(workers[i].tid, NULL);
    if (started < opts.loop.conns)
        goto out;
    if (opts.loop.total != 0)
        t_end = bench_lat_now_ns();

    all_queries = opts.n_queries;   /* the probe's */
    for (int i = 0; i < opts.loop.conns; i++) {
        all_queries += workers[i].completed;
        bench_lat_merge(total, &workers[i].lat);
        if (workers[i].first_err[0] != '\0' && total->errors != 0 &&
            workers[i].lat.errors != 0)
            fprintf(stderr, "loadgen: connection %d: %s\n", i + 1,
                    workers[i].first_err);
    }
    snprintf(extra, sizeof(extra),
             "req_bytes=%llu resp_bytes=%llu all_queries=%llu "
             "server_version=%s",
             (unsigned long long)req_bytes, (unsigned long long)resp_bytes,
             all_queries, version);
    bench_lat_print(stdout, total, t_end - t_start, opts.loop.conns, extra);
    status = total->n > 0 ? EXIT_SUCCESS : EXIT_FAILURE;

out:
    if (first != NULL)
        mysql_close(first);
    if (workers != NULL) {
        for (int i = 0; i < opts.loop.conns; i++)
            if (workers[i].mysql != NULL)
                mysql_close(workers[i].mysql);
    }
    free(workers);
    free(total);
    mysql_library_end();
    return status;
}
