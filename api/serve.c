/* SPDX-License-Identifier: MIT
 *
 * Serving on an event loop (see serve.h): the engine and both front-ends
 * set up and torn down on the loop's thread, the listener check, the
 * caches given back when idle; and the host's own loop
 * (heapadmin_start_on_base). The thread of heapadmin_start() is
 * thread.c's.
 */
#include "api/serve.h"

#include <event2/event.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/server.h"
#include "api/arena.h"
#include "api/instance.h"
#include "core/agentreg.h"
#include "core/blockio.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "heap/profconf.h"
#include "http/http.h"
#include "http/pprof.h"
#include "include/heapadmin.h"

/* ------------------------------------------------------------------
 * Set-up and tear-down on the loop's thread
 * ------------------------------------------------------------------ */

/* The unix listeners' files (an agent's .sock and .http are in its
 * datadir) looked at on the I/O thread: an lstat() there waits for the
 * datadir's disk, which must never hold the loop (core/blockio.h). One
 * look at a time: while a disk does not answer, its look waits and no
 * other is queued behind it. */
struct ha_endpoint_look {
    struct heapadmin *h;           /* NULL: the instance stopped serving */
    struct ha_listen_look look;
};

static void
look_run(void *arg)
{
    struct ha_endpoint_look *l = arg;

    ha_listen_look_run(&l->look);
}

/* On the loop, after the look: a file deleted or replaced is bound again
 * (a bind() in the datadir too, but only then, just after the disk
 * answered the look). */
static void
look_done(void *arg)
{
    struct ha_endpoint_look *l = arg;
    struct heapadmin *h = l->h;
    char err[512];

    if (h != NULL) {
        h->looking = NULL;
        if (ha_server_check_listeners(h->server, &l->look, err,
                                      sizeof(err)) < 0)
            ha_log_error("cannot bind a listener again: %s", err);
        if (ha_http_check_agent(h->http, &l->look, err, sizeof(err)) < 0)
            ha_log_error("cannot bind the agent socket again: %s", err);
    }
    ha_listen_look_free(&l->look);
    free(l);
}

/* The instance stops serving: a look still out is forgotten. */
static void
look_forget(struct heapadmin *h)
{
    if (h->looking != NULL)
        h->looking->h = NULL;
    h->looking = NULL;
}

static void
check_cb(evutil_socket_t fd, short what, void *arg)
{
    struct heapadmin *h = arg;
    struct ha_endpoint_look *l;
    char err[512];

    (void)fd;
    (void)what;
    /* The descriptors (fstat on a socket: no disk) at once. */
    if (ha_server_check_listeners(h->server, NULL, err, sizeof(err)) < 0)
        ha_log_error("cannot bind a listener again: %s", err);
    if (h->looking == NULL && (l = calloc(1, sizeof(*l))) != NULL) {
        l->h = h;
        ha_server_listen_files(h->server, &l->look);
        ha_http_agent_files(h->http, &l->look);
        if (l->look.n == 0) {
            ha_listen_look_free(&l->look);
            free(l);
        } else {
            /* look_done may run inside (no I/O thread to queue on). */
            h->looking = l;
            ha_blockio_post("looking at the endpoint's socket files",
                            look_run, look_done, l);
        }
    }
    if (h->tick != NULL)
        h->tick(h->tick_arg);
}

/* ------------------------------------------------------------------
 * Caches given back when idle (thread mode): the heap profiles and
 * symbols the last queries loaded are dropped once none was used for
 * HA_API_IDLE_S (scrapes of /metrics, which use none, do not keep them).
 * The timer is armed when the last client leaves and runs until they
 * are dropped: an idle process that has dropped them wakes for nothing.
 * ------------------------------------------------------------------ */

#define HA_API_IDLE_S 60

static void
idle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct heapadmin *h = arg;

    (void)fd;
    (void)what;
    if (h->engine != NULL &&
        ha_engine_release_caches(h->engine, HA_API_IDLE_S) != 0) {
        /* A job is still running: look again later. */
        struct timeval tv = {HA_API_IDLE_S, 0};

        event_add(h->idle_ev, &tv);
    }
}

static void
clients_changed(void *arg, size_t n)
{
    struct heapadmin *h = arg;
    struct timeval tv = {HA_API_IDLE_S, 0};

    if (h->idle_ev == NULL || n != 0 || event_pending(h->idle_ev, EV_TIMEOUT,
                                                        NULL))
        return;
    event_add(h->idle_ev, &tv);
}

static void
log_removed(void *arg, const char *path, const char *why)
{
    (void)arg;
    ha_log_notice("removed the stale endpoint %s: %s", path, why);
}

void
ha_api_serve_teardown(struct heapadmin *h)
{
    if (h->check_ev != NULL)
        event_free(h->check_ev);
    h->check_ev = NULL;
    look_forget(h);
    if (h->idle_ev != NULL)
        event_free(h->idle_ev);
    h->idle_ev = NULL;
    if (h->stop_ev != NULL)
        event_free(h->stop_ev);
    h->stop_ev = NULL;
    ha_http_free(h->http);
    h->http = NULL;
    ha_server_free(h->server);
    h->server = NULL;
    if (ha_engine_free(h->engine) != 0)
        h->disk_hung = true;
    h->engine = NULL;
    if (h->own_thread && h->base != NULL)
        event_base_free(h->base);
    h->base = NULL;
}

/* The engine's worker thread starts like the admin thread: logging to
 * this instance's sink and, in thread mode, out of the host's profiles
 * and in heapadmin's arena. */
static void
worker_thread_init(void *arg)
{
    struct heapadmin *h = arg;

    ha_log_bind(&h->sink);
    if (h->own_thread)
        ha_api_arena_hide_thread(h);
}

/* True when an interface of the list is TCP. */
static bool
has_tcp(const struct ha_iface *ifs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ifs[i].kind == HA_IFACE_TCP)
            return true;
    return false;
}

/* libdebuginfod reads its servers from DEBUGINFOD_URLS alone, and the
 * library never writes a host's environment: say what will be asked. */
static void
log_debuginfod(const struct ha_jemalloc_config *j)
{
    const char *env = getenv("DEBUGINFOD_URLS");

    if (!j->debuginfod)
        return;
    if (env == NULL || *env == '\0')
        ha_log_warn("jemalloc_variables.debuginfod is on but DEBUGINFOD_URLS "
                    "is not set in this process's environment: no server "
                    "will be asked%s",
                    j->debuginfod_urls[0] ? " (debuginfod_urls applies only "
                                            "to heapadmind, which sets it at "
                                            "start; a host sets it itself)"
                                          : "");
    else if (j->debuginfod_urls[0] && strcmp(env, j->debuginfod_urls) != 0)
        ha_log_warn("jemalloc_variables.debuginfod_urls is not this "
                    "process's DEBUGINFOD_URLS, which is what will be asked "
                    "(\"%.200s\"): only heapadmind sets it from the config",
                    env);
    else
        ha_log_info("heap profiles: missing debug info is asked of "
                    "debuginfod at %.200s (jemalloc_variables.debuginfod)",
                    env);
}

int
ha_api_serve_setup(struct heapadmin *h, char *err, size_t errlen)
{
    char why[HA_API_ERR_MAX];
    struct ha_jemalloc_config jc = h->cfg.jemalloc;
    bool http_tcp = h->cfg.n_http > 0 && !h->refuse_http;

    /* A fork child keeps the profiler as its parent left it (an
     * operator's live changes included); only its dumps' place is its
     * own. */
    if (h->inherit_profiler)
        jc.prof_active = jc.lg_prof_sample = jc.prof_gdump = HA_UNSET;
    if (h->have_jemalloc &&
        ha_profconf_apply(&h->ops, &jc, h->datadir, why, sizeof(why)) != 0)
        ha_log_warn("jemalloc_variables: %s", why);
    /* Before the saved variables: a saved jemalloc-recent_alloc_max
     * wins. A fork child keeps its parent's. */
    if (h->have_jemalloc && !h->inherit_profiler) {
        int rc = ha_profconf_recent(&h->ops, getenv("MALLOC_CONF"), why,
                                    sizeof(why));

        if (rc < 0)
            ha_log_warn("%s", why);
        else if (why[0] != '\0')
            ha_log_info("%s", why);
    }
    if (h->have_jemalloc)
        ha_profconf_log_effective(&h->ops);
    log_debuginfod(&h->cfg.jemalloc);
    h->disk_hung = false;
    h->engine = ha_engine_new(h->base, &h->cfg, h->datadir, &h->ops,
                              worker_thread_init, h, err, errlen);
    if (h->engine == NULL)
        return -1;
    atomic_store(&h->interrupt, false);
    ha_engine_set_shutdown_flag(h->engine, &h->interrupt);
    ha_engine_set_gateway(h->engine, h->gateway);
    /* Pushed dumps are the bytes /debug/pprof/allocs?dump= serves. */
    ha_engine_start_push(h->engine, ha_http_pprof_push_encode, h->engine);
    /* Endpoints a process left behind (kill -9, a crash) go at the next
     * start in the datadir: the agents' and the gateway's. */
    if (h->agent_socket[0] != '\0' || h->gateway)
        (void)ha_agentreg_clean(h->datadir, log_removed, h);
    /* Config first, then what SAVE ... TO DISK kept (each logged),
     * unless --initial: once per instance, not at each restart of the
     * instance (a later start keeps what runs now). A fork child
     * inherited what its parent applied. */
    if (!h->applied_saved && !h->inherit_profiler) {
        (void)ha_engine_apply_saved(h->engine, h->initial);
        h->applied_saved = true;
    }
    /* TLS and the RSA key serve TCP clients only: a process served on
     * unix sockets alone never loads them (nor OpenSSL's memory). */
    if (has_tcp(h->cfg.ifaces, h->cfg.n_ifaces) || http_tcp) {
        if (ha_engine_enable_tls(h->engine, err, errlen) != 0)
            return -1;
    }
    if ((h->server = ha_server_new(h->engine, err, errlen)) == NULL ||
        ha_server_listen(h->server, err, errlen) != 0)
        return -1;
    if (ha_server_n_listeners(h->server) > 0) {
        const char *path = ha_server_listener_path(h->server, 0);
        char desc[PATH_MAX];

        if (path == NULL)
            snprintf(desc, sizeof(desc), "port %d",
                     ha_server_port(h->server, 0));
        ha_engine_set_endpoint(h->engine, path != NULL ? path : desc);
    }
    if ((http_tcp || h->agent_socket[0] != '\0') &&
        (h->http = ha_http_new(h->engine, err, errlen)) == NULL)
        return -1;
    if (http_tcp && ha_http_listen(h->http, err, errlen) != 0)
        return -1;
    if (h->agent_socket[0] != '\0' &&
        ha_http_listen_agent(h->http, h->agent_socket, err, errlen) != 0)
        return -1;
    if (h->own_thread && h->wrapped) {
        h->idle_ev = event_new(h->base, -1, 0, idle_cb, h);
        if (h->idle_ev != NULL) {
            ha_engine_clients(h->engine)->on_change = clients_changed;
            ha_engine_clients(h->engine)->on_change_arg = h;
        }
    }
    if (h->check_ms > 0) {
        struct timeval tv = {h->check_ms / 1000,
                             (suseconds_t)(h->check_ms % 1000) * 1000};

        h->check_ev = event_new(h->base, -1, EV_PERSIST, check_cb, h);
        if (h->check_ev == NULL || event_add(h->check_ev, &tv) != 0) {
            ha_err_set(err, errlen, "cannot arm the listener check timer");
            return -1;
        }
    }
    if (h->gateway)
        ha_log_notice("heapadmin %s ready for connections: a host gateway "
                      "for the agents of %s (stats_agents; /metrics covers "
                      "every process, /pid/N/ and ?pid=N answer from "
                      "process N)",
                      HEAPADMIN_VERSION, h->datadir);
    else
        ha_log_notice("heapadmin %s ready for connections",
                      HEAPADMIN_VERSION);
    return 0;
}

void
ha_api_serve_quiesce(struct heapadmin *h)
{
    /* The sessions about to close may wait for a disk that stopped
     * answering: not past the stop's deadline. */
    ha_engine_stopping(h->engine);
    look_forget(h);
    ha_server_stop(h->server);
    ha_http_free(h->http);
    h->http = NULL;
}

/* ------------------------------------------------------------------
 * The host's loop
 * ------------------------------------------------------------------ */

int
heapadmin_start_on_base(struct heapadmin *h, struct event_base *base,
                        char *err, size_t errlen)
{
    struct sigaction sa;
    sigset_t cur;

    if (h->state != HA_API_STOPPED) {
        ha_err_set(err, errlen, "already started");
        return -1;
    }
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL &&
        (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0 ||
         !sigismember(&cur, SIGPIPE))) {
        ha_err_set(err, errlen,
                   "SIGPIPE is at its default action: a client that goes "
                   "away mid-reply would kill the process; ignore it "
                   "(signal(SIGPIPE, SIG_IGN)) or use heapadmin_start()");
        return -1;
    }
    h->own_thread = false;
    h->base = base;
    /* Callbacks run on this thread from now on: they log to this
     * instance's sink. */
    h->host_prev_sink = ha_log_bind(&h->sink);
    if (ha_api_serve_setup(h, err, errlen) != 0) {
        ha_log_error("%s", err);
        ha_api_serve_teardown(h);
        ha_log_bind(h->host_prev_sink);
        return -1;
    }
    h->state = HA_API_RUNNING;
    return 0;
}

void
ha_api_serve_stop_on_base(struct heapadmin *h)
{
    ha_api_serve_quiesce(h);
    ha_log_notice("heapadmin stopped");
    ha_api_serve_teardown(h);
    ha_log_bind(h->host_prev_sink);
}
