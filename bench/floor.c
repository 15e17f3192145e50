/* SPDX-License-Identifier: MIT
 *
 * The loopback floor: the fastest a request/response of a given size can
 * go over 127.0.0.1 TCP on this machine, measured the way loadgen.c
 * measures a server, so the ratio server/floor is what the server itself
 * costs.
 *
 *   floor [-c conns] [-d seconds | -n requests] [-w warmup_seconds]
 *         [-Q request_bytes] [-R response_bytes]
 *
 * The server is one thread on epoll that reads request_bytes and answers
 * with response_bytes and does nothing else: the same shape as
 * heapadmind (one event loop, non-blocking sockets, TCP_NODELAY), with
 * zero work per request. The clients are one thread per connection
 * doing blocking write + read in a closed loop, like loadgen's. Use the
 * req_bytes/resp_bytes that loadgen printed for the query being compared
 * (a COM_QUERY packet is 4 + 1 + strlen(query) bytes).
 *
 * Output: the lat.h result line plus req_bytes= and resp_bytes=.
 */
#define _GNU_SOURCE     /* accept4 */

#include "lat.h"
#include "loop.h"

#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_MAX_BYTES (16u << 20)    /* cap on -Q/-R, bytes */
#define FLOOR_EVENTS 64                /* epoll_wait batch */

enum floor_phase {
    FLOOR_WARMUP,       /* running, not recording */
    FLOOR_MEASURE,      /* recording */
    FLOOR_STOP,         /* clients finish their request and exit */
    FLOOR_PHASE_MAX
};

struct floor_opts {
    struct bench_loop_opts loop;  /* -c -d -n -w */
    size_t req_bytes;           /* request size, bytes */
    size_t resp_bytes;          /* response size, bytes */
};

/* One server-side connection. */
struct floor_sconn {
    int fd;
    size_t in_have;     /* bytes of the current request received */
    size_t out_left;    /* bytes of the response still to write */
    bool want_out;      /* registered for EPOLLOUT */
};

struct floor_client {
    pthread_t tid;
    int fd;
    unsigned long long quota;   /* requests to measure; 0 = no limit */
    struct bench_lat lat;       /* measured samples and errors */
};

static struct floor_opts opts = {
    .loop = BENCH_LOOP_DEFAULTS,
    .req_bytes = 13,    /* COM_QUERY "SELECT 1" */
    .resp_bytes = 58,   /* its result set (MariaDB 10.11) */
};

static _Atomic int phase = FLOOR_WARMUP;
static char *payload;   /* zeroes, max(req, resp) bytes: content is moot */

static int
set_nodelay(int fd)
{
    int one = 1;

    /* Both MySQL servers and libmariadb set it; without it Nagle and
     * delayed ACK would put 40 ms into some round trips. */
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ------------------------------------------------------------------
 * Server: one epoll thread.
 * ------------------------------------------------------------------ */

struct floor_server {
    int listen_fd;
    int stop_fd;        /* eventfd: written once to end the loop */
    int epoll_fd;
    pthread_t tid;
};

/* Writes as much of the pending response as the socket takes. Returns 0,
 * or -1 when the peer is gone. */
static int
server_flush(struct floor_server *srv, struct floor_sconn *c)
{
    while (c->out_left > 0) {
        ssize_t n = write(c->fd, payload, c->out_left);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0)
            return -1;
        c->out_left -= (size_t)n;
    }
    if ((c->out_left > 0) != c->want_out) {
        struct epoll_event ev = {
            .events = EPOLLIN | (c->out_left > 0 ? EPOLLOUT : 0),
            .data.ptr = c,
        };

        c->want_out = c->out_left > 0;
        epoll_ctl(srv->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
    }
    return 0;
}

/* Reads what has arrived; each complete request queues one response.
 * Returns 0, or -1 when the peer closed or failed. */
static int
server_read(struct floor_server *srv, struct floor_sconn *c)
{
    char buf[65536];

    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof(buf));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0)
            return -1;
        c->in_have += (size_t)n;
        while (c->in_have >= opts.req_bytes) {
            c->in_have -= opts.req_bytes;
            c->out_left += opts.resp_bytes;
        }
    }
    return server_flush(srv, c);
}

static void
server_accept(struct floor_server *srv)
{
    for (;;) {
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK);
        struct floor_sconn *c;
        struct epoll_event ev;

        if (fd < 0)
            return;     /* EAGAIN: drained the backlog */
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        set_nodelay(fd);
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        if (epoll_ctl(srv->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            free(c);
        }
    }
}

static void *
server_main(void *arg)
{
    struct floor_server *srv = arg;
    struct epoll_event events[FLOOR_EVENTS];

    for (;;) {
        int n = epoll_wait(srv->epoll_fd, events, FLOOR_EVENTS, -1);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (int i = 0; i < n; i++) {
            struct floor_sconn *c = events[i].data.ptr;

            if (c == NULL) {
                server_accept(srv);
                continue;
            }
            if ((void *)c == (void *)srv)
                return NULL;    /* stop_fd fired */
            if (((events[i].events & EPOLLOUT) && server_flush(srv, c) != 0) ||
                ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
                 server_read(srv, c) != 0)) {
                /* Closing removes it from the epoll set. Later events in
                 * this batch cannot name it: each fd appears once. */
                close(c->fd);
                free(c);
            }
        }
    }
    return NULL;
}

/* Listens on 127.0.0.1 on a free port and starts the server thread.
 * Returns the port, or -1 with errno-based message printed. */
static int
server_start(struct floor_server *srv)
{
    struct sockaddr_in sin = {
        .sin_family = AF_INET,
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    socklen_t len = sizeof(sin);
    struct epoll_event ev;
    int e;

    srv->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    srv->stop_fd = eventfd(0, EFD_NONBLOCK);
    srv->epoll_fd = epoll_create1(0);
    if (srv->listen_fd < 0 || srv->stop_fd < 0 || srv->epoll_fd < 0 ||
        bind(srv->listen_fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(srv->listen_fd, 1024) != 0 ||
        getsockname(srv->listen_fd, (struct sockaddr *)&sin, &len) != 0) {
        perror("floor: server socket");
        return -1;
    }
    ev.events = EPOLLIN;
    ev.data.ptr = NULL;
    epoll_ctl(srv->epoll_fd, EPOLL_CTL_ADD, srv->listen_fd, &ev);
    ev.data.ptr = srv;
    epoll_ctl(srv->epoll_fd, EPOLL_CTL_ADD, srv->stop_fd, &ev);
    e = pthread_create(&srv->tid, NULL, server_main, srv);
    if (e != 0) {
        fprintf(stderr, "floor: pthread_create: %s\n", strerror(e));
        return -1;
    }
    return ntohs(sin.sin_port);
}

static void
server_stop(struct floor_server *srv)
{
    uint64_t one = 1;

    if (write(srv->stop_fd, &one, sizeof(one)) == sizeof(one))
        pthread_join(srv->tid, NULL);
}

/* ------------------------------------------------------------------
 * Clients: one thread per connection, blocking I/O, closed loop.
 * ------------------------------------------------------------------ */

/* Sends a request and reads the whole response. Returns 0 or -1. */
static int
client_round_trip(int fd)
{
    char sink[65536];   /* the response's content is discarded */
    size_t off = 0;

    while (off < opts.req_bytes) {
        ssize_t n = write(fd, payload + off, opts.req_bytes - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        off += (size_t)n;
    }
    for (off = 0; off < opts.resp_bytes;) {
        size_t want = opts.resp_bytes - off;
        ssize_t n = read(fd, sink, want < sizeof(sink) ? want : sizeof(sink));

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        off += (size_t)n;
    }
    return 0;
}

static void *
client_main(void *arg)
{
    struct floor_client *cl = arg;
    unsigned long long done = 0;

    for (;;) {
        int start_phase = atomic_load(&phase);
        uint64_t t0, t1;
        int ret;

        if (start_phase == FLOOR_STOP)
            break;
        if (cl->quota != 0 && start_phase == FLOOR_MEASURE &&
            done >= cl->quota)
            break;
        t0 = bench_lat_now_ns();
        ret = client_round_trip(cl->fd);
        t1 = bench_lat_now_ns();
        /* Same window rule as loadgen: whole requests only. */
        if (start_phase == FLOOR_MEASURE &&
            (cl->quota != 0 || atomic_load(&phase) == FLOOR_MEASURE)) {
            done++;
            if (ret == 0)
                bench_lat_record(&cl->lat, t1 - t0);
            else
                cl->lat.errors++;
        }
        if (ret != 0)
            break;  /* a loopback socket that fails stays failed */
    }
    return NULL;
}

static int
client_connect(int port)
{
    struct sockaddr_in sin = {
        .sin_family = AF_INET,
        .sin_port = htons((uint16_t)port),
        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
    };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
        perror("floor: connect");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    set_nodelay(fd);
    return fd;
}

static int
parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v > FLOOR_MAX_BYTES)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int
parse_opts(int argc, char **argv)
{
    int c;
    char *end;

    while ((c = getopt(argc, argv, "Q:R:" BENCH_LOOP_GETOPT)) != -1) {
        errno = 0;
        end = NULL;
        switch (c) {
        case 'Q':
            if (parse_size(optarg, &opts.req_bytes) != 0)
                goto bad;
            break;
        case 'R':
            if (parse_size(optarg, &opts.resp_bytes) != 0)
                goto bad;
            break;
        default:
            switch (bench_loop_opt(&opts.loop, c, optarg)) {
            case 1:
                continue;
            case -1:
                goto bad;
            }
            fprintf(stderr,
                    "usage: floor [-c conns] [-d seconds | -n requests]\n"
                    "             [-w warmup_seconds] [-Q request_bytes]"
                    " [-R response_bytes]\n");
            return -1;
        }
        if (errno != 0 || (end != NULL && *end != '\0'))
            goto bad;
    }
    if (optind != argc)
        return -1;
    return 0;

bad:
    fprintf(stderr, "floor: bad value for -%c: %s\n", c, optarg);
    return -1;
}

int
main(int argc, char **argv)
{
    struct floor_server srv;
    struct floor_client *clients = NULL;
    struct bench_lat *total = NULL;
    uint64_t t_start = 0, t_end = 0;
    char extra[96];
    int port, started = 0, status = EXIT_FAILURE;

    if (parse_opts(argc, argv) != 0)
        return 2;
    payload = calloc(1, opts.req_bytes > opts.resp_bytes ? opts.req_bytes
                                                         : opts.resp_bytes);
    clients = calloc((size_t)opts.loop.conns, sizeof(*clients));
    total = calloc(1, sizeof(*total));
    if (payload == NULL || clients == NULL || total == NULL) {
        fprintf(stderr, "floor: out of memory\n");
        return EXIT_FAILURE;
    }
    if ((port = server_start(&srv)) < 0)
        return EXIT_FAILURE;
    for (int i = 0; i < opts.loop.conns; i++) {
        clients[i].fd = client_connect(port);
        if (clients[i].fd < 0)
            return EXIT_FAILURE;
        clients[i].quota = bench_loop_quota(&opts.loop, i);
    }
    for (; started < opts.loop.conns; started++) {
        int e = pthread_create(&clients[started].tid, NULL, client_main,
                               &clients[started]);
        if (e != 0) {
            fprintf(stderr, "floor: pthread_create: %s\n", strerror(e));
            atomic_store(&phase, FLOOR_STOP);
            break;
        }
    }
    if (started == opts.loop.conns) {
        bench_loop_sleep(opts.loop.warmup_s);
        t_start = bench_lat_now_ns();
        atomic_store(&phase, FLOOR_MEASURE);
        if (opts.loop.total == 0) {
            bench_loop_sleep(opts.loop.seconds);
            t_end = bench_lat_now_ns();
            atomic_store(&phase, FLOOR_STOP);
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(clients[i].tid, NULL);
    if (opts.loop.total != 0)
        t_end = bench_lat_now_ns();
    for (int i = 0; i < opts.loop.conns; i++) {
        bench_lat_merge(total, &clients[i].lat);
        close(clients[i].fd);
    }
    server_stop(&srv);
    if (started == opts.loop.conns) {
        snprintf(extra, sizeof(extra), "req_bytes=%zu resp_bytes=%zu",
                 opts.req_bytes, opts.resp_bytes);
        bench_lat_print(stdout, total, t_end - t_start, opts.loop.conns, extra);
        status = total->n > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    }
    free(clients);
    free(total);
    free(payload);
    return status;
}
