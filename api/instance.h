/* SPDX-License-Identifier: MIT
 *
 * The instance behind include/heapadmin.h's handle, as the files of api/
 * share it: its configuration, log and view of jemalloc, and while it is
 * started, its loop, engine and front-ends. The files, by job:
 * heapadmin.c (creation, stop, free, accessors), log.c (its log),
 * arena.c (heapadmin's own memory and the host's figures), serve.c (the
 * engine and front-ends set up and torn down on a loop; the host's
 * loop), thread.c (a thread and loop of its own), abandon.c (in a fork
 * child), forksafe.c (around a host's fork). Nothing outside api/
 * includes this.
 */
#ifndef HA_API_INSTANCE_H
#define HA_API_INSTANCE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/log.h"
#include "engine/config.h"
#include "heap/mallctl.h"

struct event;
struct event_base;
struct ha_engine;
struct ha_http;
struct ha_server;
struct ha_endpoint_look;

#define HA_API_ERR_MAX 1024

enum ha_api_state {
    HA_API_STOPPED,
    HA_API_STARTING,               /* thread mode: the thread sets up */
    HA_API_RUNNING,
    HA_API_FAILED                  /* thread mode: set-up failed */
};

struct heapadmin {
    /* Configuration, fixed by heapadmin_new() */
    struct ha_config cfg;
    char datadir[PATH_MAX];        /* absolute */
    char log_path[PATH_MAX];       /* default sink's file (absolute) */
    unsigned check_ms;             /* listener re-check period, 0: none */
    bool initial;                  /* discard saved variables (--initial) */
    bool applied_saved;            /* ... done (first start only) */
    bool disk_hung;                /* the last stop gave up on the
                                      datadir's disk: heapadmin_free
                                      leaves it alone */

    /* Logging */
    int log_fd;                    /* default sink's file, or -1 */
    struct ha_log_sink sink;

    /* jemalloc */
    struct ha_mallctl_ops ops;     /* resolved at run time, or absent() */
    bool have_jemalloc;
    bool wrapped;                  /* ops is the host view (own arena
                                      subtracted) of resolved jemalloc */

    /* What kind of process this instance serves in */
    char config_name[PATH_MAX];    /* config_text's file, "" if none */
    bool inherit_profiler;         /* a fork child: profiler as inherited */
    char agent_socket[PATH_MAX];   /* the gateway's socket, "" if none */
    bool refuse_http;              /* http_ifaces not served here */
    char log_name[PATH_MAX];       /* where the host's sink writes, named
                                      instead of the errorlog; "" */
    bool gateway;                  /* a host gateway */
    void (*tick)(void *arg);       /* called with the listener check */
    void *tick_arg;

    /* While started */
    struct event_base *base;
    bool own_thread;               /* thread mode: base is ours */
    struct ha_engine *engine;      /* under both front-ends */
    struct ha_server *server;      /* the MySQL front-end */
    struct ha_http *http;          /* NULL: http_ifaces is empty */
    struct event *stop_ev;         /* thread mode: stop_fds[0] readable */
    struct event *check_ev;        /* listener re-check timer */
    struct ha_endpoint_look *looking; /* the listeners' files being
                                         looked at off the loop
                                         (serve.c); NULL: none */
    struct event *idle_ev;         /* thread mode: caches given back */
    int stop_fds[2];
    dev_t stop_dev[2];             /* the stop pipe's identity, so a fork */
    ino_t stop_ino[2];             /* child closes only what is ours */
    struct {
        int fd;                    /* made by the loop's creation (its
                                      signal pipe): closed by a fork child
                                      while still that pipe or socket */
        dev_t dev;
        ino_t ino;
    } base_fds[4];
    size_t n_base_fds;
    dev_t log_dev;                 /* the default sink's file identity */
    ino_t log_ino;
    pthread_t thread;
    const struct ha_log_sink *host_prev_sink; /* host-base mode */
    _Atomic bool interrupt;        /* heapadmin_interrupt(): running
                                      statements end (ERR 1053) */

    /* Thread start-up handshake */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum ha_api_state state;
    char start_err[HA_API_ERR_MAX];
};

#endif /* HA_API_INSTANCE_H */
