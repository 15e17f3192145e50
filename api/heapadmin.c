/* SPDX-License-Identifier: MIT
 *
 * The public API (include/heapadmin.h): one instance = one configuration,
 * one datadir, one log sink and, while started, one admin server on an
 * event loop, either on a thread of its own or on the host's event_base.
 * Everything below the API is per instance; the only process-wide things
 * it touches are jemalloc's own settings, which are process-wide by
 * nature.
 */
#include "include/heapadmin.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/server.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "http/http.h"
#include "core/datadir.h"
#include "core/log.h"
#include "core/util.h"
#include "vtab/mallctl.h"
#include "vtab/profconf.h"

#define HA_API_ERR_MAX 1024

enum run_state { RUN_STOPPED, RUN_STARTING, RUN_RUNNING, RUN_FAILED };

struct heapadmin {
    /* Configuration, fixed by heapadmin_new() */
    struct ha_config cfg;
    char datadir[PATH_MAX];        /* absolute */
    char log_path[PATH_MAX];       /* default sink's file (absolute) */
    unsigned check_ms;             /* listener re-check period, 0: none */
    bool initial;                  /* discard saved variables (--initial) */
    bool applied_saved;            /* ... done (first start only) */

    /* Logging */
    int log_fd;                    /* default sink's file, or -1 */
    struct ha_log_sink sink;

    /* jemalloc */
    struct ha_mallctl_ops ops;     /* resolved at run time, or absent() */
    bool have_jemalloc;
    unsigned arena;                /* the admin thread's own arena */
    bool have_arena;

    /* While started */
    struct event_base *base;
    bool own_thread;               /* thread mode: base is ours */
    struct ha_engine *engine;      /* under both front-ends */
    struct ha_server *server;      /* the MySQL front-end */
    struct ha_http *http;          /* NULL: http_ifaces is empty */
    struct event *stop_ev;         /* thread mode: stop_fds[0] readable */
    struct event *check_ev;        /* listener re-check timer */
    int stop_fds[2];
    pthread_t thread;
    const struct ha_log_sink *host_prev_sink; /* host-base mode */
    _Atomic bool interrupt;        /* heapadmin_interrupt(): running
                                      statements end (ERR 1053) */

    /* Thread start-up handshake */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum run_state state;
    char start_err[HA_API_ERR_MAX];
};

/* ------------------------------------------------------------------
 * jemalloc absent: every name is unknown, as with a jemalloc whose
 * profiling and statistics are missing, so the tables show NULLs and
 * each control says why it cannot act.
 * ------------------------------------------------------------------ */

static int
absent_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
               size_t newlen)
{
    (void)name;
    (void)oldp;
    (void)oldlenp;
    (void)newp;
    (void)newlen;
    return ENOENT;
}

static const struct ha_mallctl_ops absent_ops = {
    .mallctl = absent_mallctl,
};

/* ------------------------------------------------------------------
 * Logging
 * ------------------------------------------------------------------ */

static void
file_sink(int level, const char *line, void *arg)
{
    struct heapadmin *h = arg;

    (void)level;
    if (h->log_fd >= 0)
        ha_log_write_fd(h->log_fd, line);
}

static int
open_log(struct heapadmin *h, const struct heapadmin_options *o, char *err,
         size_t errlen)
{
    const char *el = h->cfg.errorlog;
    int n;

    if (el != NULL && *el != '\0')
        n = el[0] == '/'
                ? snprintf(h->log_path, sizeof(h->log_path), "%s", el)
                : snprintf(h->log_path, sizeof(h->log_path), "%s/%s",
                           h->datadir, el);
    else
        n = snprintf(h->log_path, sizeof(h->log_path), "%s/heapadmind.log",
                     h->datadir);
    if (n < 0 || (size_t)n >= sizeof(h->log_path)) {
        ha_err_set(err, errlen, "errorlog path too long");
        return -1;
    }
    h->sink.level = o->log_level > 0 && o->log_level < HA_LOG_LEVEL_MAX
                        ? (enum ha_log_level)o->log_level
                        : HA_LOG_INFO;
    if (o->no_log)
        return 0;
    if (o->log != NULL) {
        h->sink.fn = o->log;
        h->sink.arg = o->log_arg;
        return 0;
    }
    h->log_fd = open(h->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                     0640);
    if (h->log_fd < 0) {
        ha_err_set(err, errlen, "cannot open the log %s: %s", h->log_path,
                   strerror(errno));
        return -1;
    }
    h->sink.fn = file_sink;
    h->sink.arg = h;
    return 0;
}

/* ------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------ */

static void
log_config(struct heapadmin *h)
{
    char why[512];
    bool prof = false;

    for (size_t i = 0; i < h->cfg.n_messages; i++) {
        /* Unknown keys are likely typos (warn); ProxySQL sections we do
         * not use are expected (notice). */
        if (h->cfg.messages[i].severity == HA_CONFIG_WARNING)
            ha_log_warn("%s", h->cfg.messages[i].text);
        else
            ha_log_notice("%s", h->cfg.messages[i].text);
    }
    ha_config_log(&h->cfg);
    if (ha_config_default_exposed(&h->cfg, why, sizeof(why)))
        ha_log_warn("%s", why);
    ha_log_info("datadir %s", h->datadir);
    if (h->have_jemalloc &&
        (ha_mallctl_read_bool(&h->ops, "opt.prof", &prof) != 0 || !prof))
        ha_log_warn("jemalloc runs without profiling (opt.prof is false): "
                    "statistics work, heap profiles do not. opt.prof is "
                    "fixed when jemalloc starts: define malloc_conf with "
                    "HEAPADMIN_DEFINE_MALLOC_CONF in the executable, or "
                    "start it with MALLOC_CONF=%s",
                    HEAPADMIN_MALLOC_CONF);
}

int
heapadmin_new(const struct heapadmin_options *o, struct heapadmin **out,
              char *err, size_t errlen)
{
    static const struct heapadmin_options none;
    const struct ha_log_sink *prev;
    struct heapadmin *h;
    char why[512];

    *out = NULL;
    if (o == NULL)
        o = &none;
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    h->log_fd = -1;
    h->stop_fds[0] = h->stop_fds[1] = -1;
    h->check_ms = o->listener_check_ms;
    h->initial = o->initial != 0;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    ha_config_init(&h->cfg);
    if (o->config_file != NULL) {
        if (ha_config_load_file(&h->cfg, o->config_file, err, errlen) != 0)
            goto fail;
    } else if (o->config_text != NULL) {
        if (ha_config_load_string(&h->cfg, o->config_text, "config_text",
                                  err, errlen) != 0)
            goto fail;
    }
    if (o->mysql_ifaces != NULL) {
        struct ha_iface *ifaces = NULL;
        size_t n = 0;

        if (ha_iface_parse(o->mysql_ifaces, &ifaces, &n, why,
                           sizeof(why)) != 0) {
            ha_err_set(err, errlen, "mysql_ifaces \"%s\": %s",
                       o->mysql_ifaces, why);
            goto fail;
        }
        free(h->cfg.ifaces);
        h->cfg.ifaces = ifaces;
        h->cfg.n_ifaces = n;
    }
    if (ha_datadir_prepare(o->datadir != NULL ? o->datadir : h->cfg.datadir,
                           h->datadir, sizeof(h->datadir), err, errlen) != 0)
        goto fail;
    if (open_log(h, o, err, errlen) != 0)
        goto fail;
    if (o->mallctl != NULL) {
        /* The host vouches for it. Without the MIB pair, reads go by
         * name. */
        memset(&h->ops, 0, sizeof(h->ops));
        h->ops.mallctl = o->mallctl;
        if (o->mallctlnametomib != NULL && o->mallctlbymib != NULL) {
            h->ops.nametomib = o->mallctlnametomib;
            h->ops.bymib = o->mallctlbymib;
        }
        h->have_jemalloc = true;
    } else if (ha_mallctl_resolve(&h->ops, why, sizeof(why)) == 0) {
        h->have_jemalloc = true;
    } else {
        h->ops = absent_ops;
        prev = ha_log_bind(&h->sink);
        ha_log_warn("%s", why);
        ha_log_bind(prev);
    }
    prev = ha_log_bind(&h->sink);
    log_config(h);
    ha_log_bind(prev);
    *out = h;
    return 0;

fail:
    heapadmin_free(h);
    return -1;
}

/* ------------------------------------------------------------------
 * Serving: set-up and tear-down on the loop's thread
 * ------------------------------------------------------------------ */

static void
check_cb(evutil_socket_t fd, short what, void *arg)
{
    struct heapadmin *h = arg;
    char err[512];

    (void)fd;
    (void)what;
    if (ha_server_check_listeners(h->server, err, sizeof(err)) < 0)
        ha_log_error("cannot bind a listener again: %s", err);
}

static void
teardown(struct heapadmin *h)
{
    if (h->check_ev != NULL)
        event_free(h->check_ev);
    h->check_ev = NULL;
    if (h->stop_ev != NULL)
        event_free(h->stop_ev);
    h->stop_ev = NULL;
    ha_http_free(h->http);
    h->http = NULL;
    ha_server_free(h->server);
    h->server = NULL;
    ha_engine_free(h->engine);
    h->engine = NULL;
    if (h->own_thread && h->base != NULL)
        event_base_free(h->base);
    h->base = NULL;
}

static void hide_thread_from_profiler(struct heapadmin *h);

/* The engine's worker thread starts like the admin thread: logging to
 * this instance's sink and, in thread mode, out of the host's profiles
 * and in heapadmin's arena. */
static void
worker_thread_init(void *arg)
{
    struct heapadmin *h = arg;

    ha_log_bind(&h->sink);
    if (h->own_thread)
        hide_thread_from_profiler(h);
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

static int
setup(struct heapadmin *h, char *err, size_t errlen)
{
    char why[HA_API_ERR_MAX];

    if (h->have_jemalloc &&
        ha_profconf_apply(&h->ops, &h->cfg.jemalloc, h->datadir, why,
                          sizeof(why)) != 0)
        ha_log_warn("jemalloc_variables: %s", why);
    if (h->have_jemalloc)
        ha_profconf_log_effective(&h->ops);
    log_debuginfod(&h->cfg.jemalloc);
    h->engine = ha_engine_new(h->base, &h->cfg, h->datadir, &h->ops,
                              worker_thread_init, h, err, errlen);
    if (h->engine == NULL)
        return -1;
    atomic_store(&h->interrupt, false);
    ha_engine_set_shutdown_flag(h->engine, &h->interrupt);
    /* Config first, then what SAVE ... TO DISK kept (each logged),
     * unless --initial: once per instance, not at each restart of the
     * instance (a later start keeps what runs now). */
    if (!h->applied_saved) {
        (void)ha_engine_apply_saved(h->engine, h->initial);
        h->applied_saved = true;
    }
    if (ha_engine_enable_tls(h->engine, err, errlen) != 0 ||
        (h->server = ha_server_new(h->engine, err, errlen)) == NULL ||
        ha_server_listen(h->server, err, errlen) != 0)
        return -1;
    if (h->cfg.n_http > 0 &&
        ((h->http = ha_http_new(h->engine, err, errlen)) == NULL ||
         ha_http_listen(h->http, err, errlen) != 0))
        return -1;
    if (h->check_ms > 0) {
        struct timeval tv = {h->check_ms / 1000,
                             (suseconds_t)(h->check_ms % 1000) * 1000};

        h->check_ev = event_new(h->base, -1, EV_PERSIST, check_cb, h);
        if (h->check_ev == NULL || event_add(h->check_ev, &tv) != 0) {
            ha_err_set(err, errlen, "cannot arm the listener check timer");
            return -1;
        }
    }
    ha_log_notice("heapadmin %s ready for connections", HEAPADMIN_VERSION);
    return 0;
}

/* ------------------------------------------------------------------
 * Thread mode
 * ------------------------------------------------------------------ */

/* The admin thread's own allocations stay out of the host's heap
 * profiles, and go to an arena of their own so that the host's figures
 * can be told apart from ours. Best effort: without profiling or with an
 * old jemalloc these names do not exist. */
static void
hide_thread_from_profiler(struct heapadmin *h)
{
    bool off = false;
    const char *name = "heapadmin";

    if (!h->have_jemalloc)
        return;
    (void)h->ops.mallctl("thread.prof.active", NULL, NULL, &off,
                         sizeof(off));
    (void)h->ops.mallctl("thread.prof.name", NULL, NULL, (void *)&name,
                         sizeof(name));
    if (!h->have_arena) {
        size_t len = sizeof(h->arena);

        h->have_arena = h->ops.mallctl("arenas.create", &h->arena, &len,
                                       NULL, 0) == 0;
        if (h->have_arena)
            ha_log_info("admin thread allocates from jemalloc arena %u",
                        h->arena);
    }
    if (h->have_arena)
        (void)h->ops.mallctl("thread.arena", NULL, NULL, &h->arena,
                             sizeof(h->arena));
}

static void
stop_cb(evutil_socket_t fd, short what, void *arg)
{
    struct heapadmin *h = arg;
    char c;

    (void)what;
    while (read(fd, &c, 1) > 0) {
    }
    ha_server_stop(h->server);
    ha_http_free(h->http);
    h->http = NULL;
    event_base_loopbreak(h->base);
}

static void
report_start(struct heapadmin *h, enum run_state state, const char *err)
{
    pthread_mutex_lock(&h->mu);
    h->state = state;
    if (err != NULL)
        ha_strlcpy(h->start_err, err, sizeof(h->start_err));
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void *
run_thread(void *arg)
{
    struct heapadmin *h = arg;
    char err[HA_API_ERR_MAX] = "";

    pthread_setname_np(pthread_self(), "heapadmin");
    ha_log_bind(&h->sink);
    hide_thread_from_profiler(h);
    h->base = event_base_new();
    if (h->base == NULL) {
        ha_err_set(err, sizeof(err), "cannot create an event loop");
        goto fail;
    }
    h->stop_ev = event_new(h->base, h->stop_fds[0], EV_READ | EV_PERSIST,
                           stop_cb, h);
    if (h->stop_ev == NULL || event_add(h->stop_ev, NULL) != 0) {
        ha_err_set(err, sizeof(err), "cannot watch the stop pipe");
        goto fail;
    }
    if (setup(h, err, sizeof(err)) != 0)
        goto fail;
    report_start(h, RUN_RUNNING, NULL);
    event_base_dispatch(h->base);
    ha_log_notice("heapadmin stopped");
    teardown(h);
    return NULL;

fail:
    ha_log_error("%s", err);
    teardown(h);
    report_start(h, RUN_FAILED, err);
    return NULL;
}

static void
close_stop_pipe(struct heapadmin *h)
{
    for (int i = 0; i < 2; i++) {
        if (h->stop_fds[i] >= 0)
            close(h->stop_fds[i]);
        h->stop_fds[i] = -1;
    }
}

int
heapadmin_start(struct heapadmin *h, char *err, size_t errlen)
{
    sigset_t all, old;
    int rc;

    if (h->state != RUN_STOPPED) {
        ha_err_set(err, errlen, "already started");
        return -1;
    }
    if (pipe2(h->stop_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        ha_err_set(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    h->own_thread = true;
    h->state = RUN_STARTING;
    h->start_err[0] = '\0';
    /* The thread inherits this mask: no signal of the host's is ever
     * delivered to it (a host reading SIGTERM through signalfd, or one
     * that leaves SIGPIPE at its default, keeps working). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&h->thread, NULL, run_thread, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        h->state = RUN_STOPPED;
        close_stop_pipe(h);
        ha_err_set(err, errlen, "cannot start the admin thread: %s",
                   strerror(rc));
        return -1;
    }
    pthread_mutex_lock(&h->mu);
    while (h->state == RUN_STARTING)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (h->state == RUN_FAILED) {
        pthread_join(h->thread, NULL);
        h->state = RUN_STOPPED;
        close_stop_pipe(h);
        ha_err_set(err, errlen, "%s", h->start_err);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------
 * Host-base mode
 * ------------------------------------------------------------------ */

int
heapadmin_start_on_base(struct heapadmin *h, struct event_base *base,
                        char *err, size_t errlen)
{
    struct sigaction sa;
    sigset_t cur;

    if (h->state != RUN_STOPPED) {
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
    if (setup(h, err, errlen) != 0) {
        ha_log_error("%s", err);
        teardown(h);
        ha_log_bind(h->host_prev_sink);
        return -1;
    }
    h->state = RUN_RUNNING;
    return 0;
}

/* ------------------------------------------------------------------
 * Stopping
 * ------------------------------------------------------------------ */

void
heapadmin_stop(struct heapadmin *h)
{
    if (h == NULL || h->state != RUN_RUNNING)
        return;
    /* A statement running on the admin thread ends now, not at its
     * max_execution_time: the join below is prompt. */
    atomic_store(&h->interrupt, true);
    if (h->own_thread) {
        if (write(h->stop_fds[1], "x", 1) < 0) {
        }
        pthread_join(h->thread, NULL);
        close_stop_pipe(h);
    } else {
        ha_server_stop(h->server);
        ha_http_free(h->http);
        h->http = NULL;
        ha_log_notice("heapadmin stopped");
        teardown(h);
        ha_log_bind(h->host_prev_sink);
    }
    h->state = RUN_STOPPED;
}

void
heapadmin_interrupt(struct heapadmin *h)
{
    if (h != NULL)
        atomic_store(&h->interrupt, true);
}

void
heapadmin_abandon(struct heapadmin *h)
{
    if (h == NULL)
        return;
    /* No libevent call, no join, no free: the loop's thread does not
     * exist in this process and its locks may be held forever. */
    ha_http_abandon(h->http);
    ha_server_abandon(h->server);
    ha_engine_abandon(h->engine);
}

void
heapadmin_free(struct heapadmin *h)
{
    if (h == NULL)
        return;
    heapadmin_stop(h);
    ha_config_free(&h->cfg);
    if (h->log_fd >= 0)
        close(h->log_fd);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

/* ------------------------------------------------------------------
 * Accessors
 * ------------------------------------------------------------------ */

size_t
heapadmin_listener_count(const struct heapadmin *h)
{
    return h->state == RUN_RUNNING && h->server != NULL
               ? ha_server_n_listeners(h->server)
               : 0;
}

int
heapadmin_listener_port(const struct heapadmin *h, size_t i)
{
    if (i >= heapadmin_listener_count(h))
        return 0;
    return ha_server_port(h->server, i);
}

const char *
heapadmin_listener_path(const struct heapadmin *h, size_t i)
{
    if (i >= heapadmin_listener_count(h))
        return NULL;
    return ha_server_listener_path(h->server, i);
}

const char *
heapadmin_datadir(const struct heapadmin *h)
{
    return h->datadir;
}

const char *
heapadmin_log_path(const struct heapadmin *h)
{
    return h->log_path;
}

int
heapadmin_startup_malloc_conf(const struct heapadmin *h, char *out,
                              size_t outlen)
{
    if (outlen == 0)
        return -1;
    out[0] = '\0';
    if (!h->have_jemalloc)
        return 0;
    return ha_profconf_startup_conf(&h->ops, &h->cfg.jemalloc,
                                    getenv("MALLOC_CONF"), out, outlen);
}

/* A host that dlclose()s the library must not leave jemalloc holding a
 * pointer to our dump hook. */
__attribute__((destructor)) static void
unload(void)
{
    ha_mallctl_detach();
}

const char *
heapadmin_debuginfod_urls(const struct heapadmin *h)
{
    const struct ha_jemalloc_config *j = &h->cfg.jemalloc;

    return j->debuginfod && j->debuginfod_urls[0] ? j->debuginfod_urls
                                                  : NULL;
}

const char *
heapadmin_version(void)
{
    return HEAPADMIN_VERSION;
}
