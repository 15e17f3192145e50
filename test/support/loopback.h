/* SPDX-License-Identifier: MIT
 *
 * Test fixture shared by the loopback suites (check_server, check_conn,
 * check_tls, check_instances): the real server on 127.0.0.1, port chosen
 * by the kernel, running its own event loop on a thread. The suites
 * speak to it with test/support/client.h. Header-only, like
 * fake_mallctl.h.
 */
#ifndef HA_TEST_LOOPBACK_H
#define HA_TEST_LOOPBACK_H

#include <check.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "engine/config.h"
#include "heap/mallctl.h"
#include "admin/server.h"
#include "engine/engine.h"

struct lb_server {
    struct event_base *base;
    struct ha_engine *engine;
    struct ha_server *server;
    pthread_t thread;        /* runs the event loop */
    atomic_bool stop;        /* set by lb_stop, polled by the loop */
    struct event *poller;    /* checks stop every 5 ms */
    int port;                /* the bound TCP port */
    bool running;
    char dir[64];            /* private datadir made for "/tmp", removed
                                by lb_stop; "" for a caller's */
};

/* ha_config_init() with one listener, 127.0.0.1 on a kernel-chosen port
 * (0 is refused in config files, allowed programmatically). */
static inline void
lb_config(struct ha_config *cfg)
{
    ha_config_init(cfg);
    free(cfg->ifaces);
    cfg->ifaces = calloc(1, sizeof(*cfg->ifaces));
    ck_assert_ptr_nonnull(cfg->ifaces);
    cfg->n_ifaces = 1;
    cfg->ifaces[0].kind = HA_IFACE_TCP;
    strcpy(cfg->ifaces[0].host, "127.0.0.1");
    cfg->ifaces[0].port = 0;
}

static inline void
lb_poll_stop(evutil_socket_t fd, short what, void *arg)
{
    struct lb_server *lb = arg;

    (void)fd;
    (void)what;
    if (atomic_load(&lb->stop))
        event_base_loopbreak(lb->base);
}

static inline void *
lb_run_loop(void *arg)
{
    struct lb_server *lb = arg;

    event_base_dispatch(lb->base);
    return NULL;
}

/* Starts a server for cfg (which must outlive it) with dumps and TLS
 * files in datadir, TLS enabled when tls, and runs its loop on a thread.
 * libevent is not thread-safe here: the test thread touches the server
 * only through sockets until lb_stop(). */
static inline void
lb_start(struct lb_server *lb, const struct ha_config *cfg,
         const char *datadir, bool tls)
{
    struct timeval tick = {0, 5000};
    char err[512];

    memset(lb, 0, sizeof(*lb));
    /* "/tmp" asks for a datadir of the server's own: tests run in
     * parallel and must not share the SQLite files a server keeps in its
     * datadir (heapadmin.db, heapadmin_stats.db). */
    if (strcmp(datadir, "/tmp") == 0) {
        snprintf(lb->dir, sizeof(lb->dir), "/tmp/check_lb.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(lb->dir));
        datadir = lb->dir;
    }
    lb->base = event_base_new();
    ck_assert_ptr_nonnull(lb->base);
    lb->engine = ha_engine_new(lb->base, cfg, datadir, &ha_mallctl_jemalloc,
                               NULL, NULL, err, sizeof(err));
    ck_assert_msg(lb->engine != NULL, "ha_engine_new: %s", err);
    if (tls)
        ck_assert_msg(ha_engine_enable_tls(lb->engine, err, sizeof(err)) == 0,
                      "enable_tls: %s", err);
    lb->server = ha_server_new(lb->engine, err, sizeof(err));
    ck_assert_msg(lb->server != NULL, "ha_server_new: %s", err);
    ck_assert_msg(ha_server_listen(lb->server, err, sizeof(err)) == 0,
                  "listen: %s", err);
    lb->port = ha_server_port(lb->server, 0);
    ck_assert_int_gt(lb->port, 0);
    lb->poller = event_new(lb->base, -1, EV_PERSIST, lb_poll_stop, lb);
    event_add(lb->poller, &tick);
    atomic_store(&lb->stop, false);
    ck_assert_int_eq(pthread_create(&lb->thread, NULL, lb_run_loop, lb), 0);
    lb->running = true;
}

/* Stops the loop, joins its thread and frees the server. Safe to call
 * when lb_start() never ran or failed. */
static inline void
lb_stop(struct lb_server *lb)
{
    if (!lb->running)
        return;
    lb->running = false;
    atomic_store(&lb->stop, true);
    pthread_join(lb->thread, NULL);
    event_free(lb->poller);
    ha_server_free(lb->server);
    ha_engine_free(lb->engine);
    /* A bufferevent freed while a deferred callback of its own was
     * queued (a client's close just before the stop) is finished by
     * that callback on the loop; event_base_free cancels it instead,
     * and the TLS connection leaks. One pass runs what is queued. */
    event_base_loop(lb->base, EVLOOP_NONBLOCK);
    event_base_free(lb->base);
    if (lb->dir[0] != '\0') {
        char cmd[96];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", lb->dir);
        if (system(cmd) != 0) {
        }
    }
}

#endif /* HA_TEST_LOOPBACK_H */
