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
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/server.h"
#include "api/forksafe.h"
#include "core/agentreg.h"
#include "engine/config.h"
#include "engine/diskstore.h"
#include "engine/filevfs.h"
#include "engine/history.h"
#include "engine/engine.h"
#include "http/http.h"
#include "core/datadir.h"
#include "core/dirwalk.h"
#include "core/users.h"
#include "core/log.h"
#include "core/util.h"
#include "heap/dumpfiles.h"
#include "heap/mallctl.h"
#include "heap/profconf.h"

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
 * heapadmin's own memory: one jemalloc arena per process, and the host's
 * figures without it.
 *
 * Every thread that does heapadmin's work (the admin thread, the worker,
 * debuginfod's fetchers, the agent's start-up) allocates from one arena
 * of its own, without a thread cache (nothing hoarded between two
 * queries), with freed pages given back at once (decay 0), and outside
 * heap profiles. The arena is created once per process and kept across
 * fork (a child's instance reuses it). What the tables and /metrics call
 * allocated, active, metadata, resident, mapped and retained is then the
 * host's alone: the resolved jemalloc is wrapped (host_ops) so that
 * those statistics come back with the arena's share taken off, and
 * heapadmin.<same> names read the arena's share itself.
 * ------------------------------------------------------------------ */

enum arena_state { ARENA_NONE, ARENA_CREATING, ARENA_READY, ARENA_FAILED };

static struct ha_mallctl_ops resolved;  /* jemalloc, as resolved first */
static _Atomic bool have_resolved;
static _Atomic int arena_state;
static unsigned own_arena;               /* valid when ARENA_READY */

/* The statistics that are reported apart, and the arena's share of each
 * (stats.arenas.<i>.<name>, summed; pactive is in pages). */
static const struct {
    const char *global;   /* what the tables read */
    const char *own;      /* heapadmin's share, as its own name */
    const char *parts[2]; /* stats.arenas.<i>.<part>, summed */
} apart[] = {
    {"stats.allocated", "heapadmin.allocated",
     {"small.allocated", "large.allocated"}},
    {"stats.active", "heapadmin.active", {"pactive", NULL}},
    {"stats.metadata", "heapadmin.metadata", {"base", "internal"}},
    {"stats.resident", "heapadmin.resident", {"resident", NULL}},
    {"stats.mapped", "heapadmin.mapped", {"mapped", NULL}},
    {"stats.retained", "heapadmin.retained", {"retained", NULL}},
};

/* Creates the arena at the first call; false when there is none. */
static bool
arena_ready(void)
{
    int st = atomic_load(&arena_state);

    if (st == ARENA_NONE &&
        atomic_compare_exchange_strong(&arena_state, &st, ARENA_CREATING)) {
        unsigned a = 0;
        size_t len = sizeof(a);
        ssize_t zero = 0;
        char name[64];
        bool ok = atomic_load(&have_resolved) &&
                  resolved.mallctl("arenas.create", &a, &len, NULL, 0) == 0;

        if (ok) {
            /* Freed pages go back to the system at once: heapadmin is
             * idle most of the time, and an idle arena never decays. */
            snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", a);
            (void)resolved.mallctl(name, NULL, NULL, &zero, sizeof(zero));
            snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", a);
            (void)resolved.mallctl(name, NULL, NULL, &zero, sizeof(zero));
            own_arena = a;
        }
        atomic_store(&arena_state, ok ? ARENA_READY : ARENA_FAILED);
        return ok;
    }
    /* Another thread creates it: wait a little (a fork child whose
     * parent forked mid-creation gives up). */
    for (int i = 0; i < 1000 && st == ARENA_CREATING; i++) {
        sched_yield();
        st = atomic_load(&arena_state);
    }
    return st == ARENA_READY;
}

/* heapadmin's share of the statistic at apart[i], or -1. */
static int
own_share(size_t i, size_t *out)
{
    char name[96];
    size_t sum = 0, page = 4096;

    if (atomic_load(&arena_state) != ARENA_READY)
        return -1;
    for (size_t k = 0; k < 2 && apart[i].parts[k] != NULL; k++) {
        size_t v = 0, len = sizeof(v);

        snprintf(name, sizeof(name), "stats.arenas.%u.%s", own_arena,
                 apart[i].parts[k]);
        if (resolved.mallctl(name, &v, &len, NULL, 0) != 0)
            return -1;
        sum += v;
    }
    if (strcmp(apart[i].parts[0], "pactive") == 0) {
        size_t len = sizeof(page);

        (void)resolved.mallctl("arenas.page", &page, &len, NULL, 0);
        sum *= page;
    }
    *out = sum;
    return 0;
}

static int
host_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
             size_t newlen)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(apart); i++) {
        bool global = strcmp(name, apart[i].global) == 0;
        size_t own, total;
        int rc;

        if (!global && strcmp(name, apart[i].own) != 0)
            continue;
        if (newp != NULL || oldp == NULL || oldlenp == NULL ||
            *oldlenp != sizeof(size_t))
            return global ? resolved.mallctl(name, oldp, oldlenp, newp,
                                             newlen)
                          : EINVAL;
        if (!global)
            return own_share(i, &own) == 0
                       ? (memcpy(oldp, &own, sizeof(own)), 0)
                       : ENOENT;
        rc = resolved.mallctl(name, oldp, oldlenp, NULL, 0);
        if (rc != 0 || own_share(i, &own) != 0)
            return rc;
        memcpy(&total, oldp, sizeof(total));
        total = total > own ? total - own : 0;
        memcpy(oldp, &total, sizeof(total));
        return 0;
    }
    return resolved.mallctl(name, oldp, oldlenp, newp, newlen);
}

/* The wrapped names have no MIB: reads of them go by name, through
 * host_mallctl. */
static int
host_nametomib(const char *name, size_t *mibp, size_t *miblenp)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(apart); i++)
        if (strcmp(name, apart[i].global) == 0 ||
            strcmp(name, apart[i].own) == 0)
            return ENOENT;
    return resolved.nametomib(name, mibp, miblenp);
}

static int
host_bymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
           void *newp, size_t newlen)
{
    return resolved.bymib(mib, miblen, oldp, oldlenp, newp, newlen);
}

/* The calling thread allocates from the arena, uncached and unsampled.
 * Returns 0, or -1 without an arena. */
static int
adopt_thread(const char *prof_name)
{
    bool off = false;
    unsigned a;

    if (!atomic_load(&have_resolved))
        return -1;
    (void)resolved.mallctl("thread.prof.active", NULL, NULL, &off,
                           sizeof(off));
    if (prof_name != NULL)
        (void)resolved.mallctl("thread.prof.name", NULL, NULL,
                               (void *)&prof_name, sizeof(prof_name));
    if (!arena_ready())
        return -1;
    /* No thread cache: what a query frees goes back to the arena (and,
     * decay 0, to the system), not into a cache no one will use. */
    (void)resolved.mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    (void)resolved.mallctl("thread.tcache.enabled", NULL, NULL, &off,
                           sizeof(off));
    a = own_arena;
    return resolved.mallctl("thread.arena", NULL, NULL, &a, sizeof(a)) == 0
               ? 0
               : -1;
}

int
heapadmin_adopt_thread(void)
{
    if (!atomic_load(&have_resolved)) {
        struct ha_mallctl_ops ops;

        if (ha_mallctl_resolve(&ops, NULL, 0) != 0)
            return -1;
        resolved = ops;
        atomic_store(&have_resolved, true);
    }
    return adopt_thread(NULL);
}

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
    if (o->log != NULL && o->log_name != NULL)
        ha_strlcpy(h->log_name, o->log_name, sizeof(h->log_name));
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
    {
        struct stat st;

        if (fstat(h->log_fd, &st) == 0) {
            h->log_dev = st.st_dev;
            h->log_ino = st.st_ino;
        }
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
    ha_config_log(&h->cfg, h->log_name[0] != '\0' ? h->log_name : NULL);
    if (ha_config_default_exposed(&h->cfg, why, sizeof(why)))
        ha_log_warn("%s", why);
    ha_log_info("datadir %s", h->datadir);
    if (h->have_jemalloc &&
        (ha_mallctl_read_bool(&h->ops, "opt.prof", &prof) != 0 || !prof))
        ha_log_warn("jemalloc runs without profiling (opt.prof is false): "
                    "statistics work, heap profiles do not. opt.prof is "
                    "fixed when jemalloc starts: start this process with "
                    "MALLOC_CONF=%s in its environment (a program that "
                    "defines its own malloc_conf, as kresd does, hides "
                    "the agent's), or define malloc_conf with "
                    "HEAPADMIN_DEFINE_MALLOC_CONF in the executable",
                    HEAPADMIN_MALLOC_CONF);
    if (h->refuse_http && h->cfg.n_http > 0)
        ha_log_warn("admin_variables.http_ifaces = \"%s\" is not served "
                    "by this process: in a host of several processes one "
                    "fixed address fits only one of them (the others fail "
                    "with \"Address already in use\"), and Prometheus "
                    "cannot scrape per-process ports it does not know. "
                    "Run heapadmind --gateway on this datadir instead: "
                    "one /metrics for every process (pid and program "
                    "labels) and /debug/pprof/heap?pid=N",
                    h->cfg.http_ifaces);
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
    ha_forksafe_init();
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    h->log_fd = -1;
    h->stop_fds[0] = h->stop_fds[1] = -1;
    h->check_ms = o->listener_check_ms;
    h->initial = o->initial != 0;
    h->inherit_profiler = o->inherit_profiler != 0;
    h->refuse_http = o->refuse_http_ifaces != 0;
    h->gateway = o->gateway != 0;
    h->tick = o->tick;
    h->tick_arg = o->tick_arg;
    if (o->agent_socket != NULL &&
        ha_strlcpy(h->agent_socket, o->agent_socket,
                   sizeof(h->agent_socket)) != 0) {
        ha_err_set(err, errlen, "agent socket path too long");
        free(h);
        return -1;
    }
    if (o->config_name != NULL)
        ha_strlcpy(h->config_name, o->config_name, sizeof(h->config_name));
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    ha_config_init(&h->cfg);
    if (o->config_file != NULL) {
        if (ha_config_load_file(&h->cfg, o->config_file, err, errlen) != 0)
            goto fail;
    } else if (o->config_text != NULL) {
        if (ha_config_load_string(&h->cfg, o->config_text,
                                  h->config_name[0] ? h->config_name
                                                    : "config_text",
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
        /* The log names what is listened on, not the config's line. */
        free(h->cfg.mysql_ifaces);
        h->cfg.mysql_ifaces = strdup(o->mysql_ifaces);
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
        if (!atomic_load(&have_resolved)) {
            resolved = h->ops;
            atomic_store(&have_resolved, true);
        }
        /* The host's figures without heapadmin's own arena. */
        h->ops.mallctl = host_mallctl;
        if (h->ops.nametomib != NULL && h->ops.bymib != NULL) {
            h->ops.nametomib = host_nametomib;
            h->ops.bymib = host_bymib;
        }
        h->wrapped = true;
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

static void
teardown(struct heapadmin *h)
{
    if (h->check_ev != NULL)
        event_free(h->check_ev);
    h->check_ev = NULL;
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

static int
setup(struct heapadmin *h, char *err, size_t errlen)
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
    if (h->have_jemalloc)
        ha_profconf_log_effective(&h->ops);
    log_debuginfod(&h->cfg.jemalloc);
    h->engine = ha_engine_new(h->base, &h->cfg, h->datadir, &h->ops,
                              worker_thread_init, h, err, errlen);
    if (h->engine == NULL)
        return -1;
    atomic_store(&h->interrupt, false);
    ha_engine_set_shutdown_flag(h->engine, &h->interrupt);
    ha_engine_set_gateway(h->engine, h->gateway);
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

/* ------------------------------------------------------------------
 * Thread mode
 * ------------------------------------------------------------------ */

/* The admin thread's own allocations stay out of the host's heap
 * profiles, and go to heapadmin's own arena so that the host's figures
 * can be told apart from ours. Best effort: without profiling or with an
 * old jemalloc these names do not exist. */
static void
hide_thread_from_profiler(struct heapadmin *h)
{
    if (!h->have_jemalloc)
        return;
    if (h->wrapped) {
        (void)adopt_thread("heapadmin");
        return;
    }
    /* A jemalloc the host handed over: only its profiling switch. */
    {
        bool off = false;
        const char *name = "heapadmin";

        (void)h->ops.mallctl("thread.prof.active", NULL, NULL, &off,
                             sizeof(off));
        (void)h->ops.mallctl("thread.prof.name", NULL, NULL, (void *)&name,
                             sizeof(name));
    }
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

/* The descriptors open now, into fds (sorted ascending, as the kernel
 * lists them); returns how many, up to max. */
struct fd_list {
    int *fds;
    size_t n, max;
};

static bool
add_fd(long fd, void *arg)
{
    struct fd_list *l = arg;

    l->fds[l->n++] = (int)fd;
    return l->n < l->max;
}

static size_t
list_fds(int *fds, size_t max)
{
    struct fd_list l = {.fds = fds, .n = 0, .max = max};

    if (max > 0)
        (void)ha_dirwalk_fds(add_fd, &l);
    return l.n;
}

/* The loop's own pipes and sockets (libevent's signal pipe), which it
 * does not name: the descriptors that appeared while it was made. A
 * host thread opening one at that moment could be counted too; each is
 * then closed in a fork child only while it is still the same pipe or
 * socket, which is never the host's. */
static struct event_base *
new_base(struct heapadmin *h)
{
    enum { MAX = 4096 };
    int *before = malloc(MAX * sizeof(int)), after[64];
    size_t nb = before != NULL ? list_fds(before, MAX) : 0, na;
    struct event_base *base = event_base_new();

    h->n_base_fds = 0;
    if (base == NULL || before == NULL || nb == MAX) {
        free(before);
        return base;
    }
    na = list_fds(after, sizeof(after) / sizeof(after[0]));
    for (size_t i = 0; i < na; i++) {
        bool old = false;
        struct stat st;

        for (size_t j = 0; j < nb && !old; j++)
            old = before[j] == after[i];
        if (old || h->n_base_fds == HA_ARRAY_SIZE(h->base_fds) ||
            fstat(after[i], &st) != 0 ||
            !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
            continue;
        h->base_fds[h->n_base_fds].fd = after[i];
        h->base_fds[h->n_base_fds].dev = st.st_dev;
        h->base_fds[h->n_base_fds].ino = st.st_ino;
        h->n_base_fds++;
    }
    free(before);
    return base;
}

static void *
run_thread(void *arg)
{
    struct heapadmin *h = arg;
    char err[HA_API_ERR_MAX] = "";

    pthread_setname_np(pthread_self(), "heapadmin");
    ha_log_bind(&h->sink);
    hide_thread_from_profiler(h);
    h->base = new_base(h);
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
    for (int i = 0; i < 2; i++) {
        struct stat st;

        if (fstat(h->stop_fds[i], &st) == 0) {
            h->stop_dev[i] = st.st_dev;
            h->stop_ino[i] = st.st_ino;
        }
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

/* True when fd is still the file (dev, ino) we opened. */
static bool
fd_is(int fd, dev_t dev, ino_t ino)
{
    struct stat st;

    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev &&
           st.st_ino == ino;
}

/* Closes the epoll descriptor of our loop, found by proof, not by
 * number: an epoll instance whose watch list holds descriptor fd with
 * inode ino (our stop pipe; /proc/self/fdinfo lists each watched
 * descriptor with its inode). Any other epoll is the host's. No memory
 * is allocated (it runs in a fork child's atfork handler). */
struct epoll_search {
    int fd;                 /* the watched descriptor ... */
    ino_t ino;              /* ... and its inode */
};

static bool
close_if_our_epoll(long e, void *arg)
{
    const struct epoll_search *s = arg;
    char path[64], link[64], info[4096], *p;
    ssize_t k;
    int ifd;

    snprintf(path, sizeof(path), "/proc/self/fd/%ld", e);
    k = readlink(path, link, sizeof(link) - 1);
    if (k <= 0)
        return true;
    link[k] = '\0';
    if (strcmp(link, "anon_inode:[eventpoll]") != 0)
        return true;
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%ld", e);
    ifd = open(path, O_RDONLY | O_CLOEXEC);
    if (ifd < 0)
        return true;
    k = read(ifd, info, sizeof(info) - 1);
    close(ifd);
    if (k <= 0)
        return true;
    info[k] = '\0';
    for (p = strstr(info, "tfd:"); p != NULL; p = strstr(p + 4, "tfd:")) {
        int tfd;
        unsigned long tino;
        const char *q = strstr(p, " ino:");

        if (sscanf(p, "tfd: %d", &tfd) == 1 && tfd == s->fd && q != NULL &&
            sscanf(q, " ino:%lx", &tino) == 1 && (ino_t)tino == s->ino) {
            close((int)e);
            return false;
        }
    }
    return true;
}

static void
close_our_epoll(int fd, ino_t ino)
{
    struct epoll_search s = {.fd = fd, .ino = ino};

    (void)ha_dirwalk_fds(close_if_our_epoll, &s);
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
    /* The descriptors that are provably ours go too (a child need not
     * carry its parent's loop): the loop's epoll first, then the stop
     * pipe and the log file. */
    if (h->own_thread && h->stop_fds[0] >= 0)
        close_our_epoll(h->stop_fds[0], h->stop_ino[0]);
    for (int i = 0; i < 2; i++)
        if (fd_is(h->stop_fds[i], h->stop_dev[i], h->stop_ino[i]))
            close(h->stop_fds[i]);
    for (size_t i = 0; h->own_thread && i < h->n_base_fds; i++)
        if (fd_is(h->base_fds[i].fd, h->base_fds[i].dev, h->base_fds[i].ino))
            close(h->base_fds[i].fd);
    if (fd_is(h->log_fd, h->log_dev, h->log_ino))
        close(h->log_fd);
    h->stop_fds[0] = h->stop_fds[1] = h->log_fd = -1;
}

void
heapadmin_free(struct heapadmin *h)
{
    if (h == NULL)
        return;
    heapadmin_stop(h);
    (void)heapadmin_tidy_datadir(h);
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

void
heapadmin_log(struct heapadmin *h, int level, const char *fmt, ...)
{
    const struct ha_log_sink *prev;
    char line[2048];
    va_list ap;

    if (h == NULL || level < 0 || level >= HA_LOG_LEVEL_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    prev = ha_log_bind(&h->sink);
    ha_log((enum ha_log_level)level, "%s", line);
    ha_log_bind(prev);
}

size_t
heapadmin_log_format(char *out, size_t len, int level, const char *fmt, ...)
{
    size_t n;
    va_list ap;
    int m;

    if (out == NULL || len == 0)
        return 0;
    out[0] = '\0';
    if (len < 40)
        return 0;
    n = ha_log_prefix(out, len,
                      level >= 0 && level < HA_LOG_LEVEL_MAX
                          ? (enum ha_log_level)level
                          : HA_LOG_INFO);
    va_start(ap, fmt);
    m = vsnprintf(out + n, len - n, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += (size_t)m < len - n ? (size_t)m : len - n - 1;
    return n;
}

const char *
heapadmin_datadir(const struct heapadmin *h)
{
    return h->datadir;
}

int
heapadmin_tidy_datadir(const struct heapadmin *h)
{
    static const char *const files[] = {HA_DISKSTORE_FILE, HA_HISTORY_FILE};
    char path[PATH_MAX];
    int rc = 0;

    if (h == NULL || h->datadir[0] == '\0')
        return 0;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", h->datadir,
                             files[i]) < sizeof(path) &&
            ha_filevfs_release(path) != 0)
            rc = -1;
    /* Dumps are staged in the datadir (the dump prefix's directory),
     * after memory (this process's directory in /dev/shm). */
    if (ha_dumpfiles_staging_release(h->datadir) != 0)
        rc = -1;
    ha_dumpfiles_memory_release();
    return rc;
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

int
heapadmin_user_name(long uid, char *out, size_t len)
{
    if (uid < 0) {
        snprintf(out, len, "%ld", uid);
        return -1;
    }
    return ha_users_name((uid_t)uid, out, len);
}

const char *
heapadmin_version(void)
{
    return HEAPADMIN_VERSION;
}
