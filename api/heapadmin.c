/* SPDX-License-Identifier: MIT
 *
 * The public API (include/heapadmin.h): one instance = one configuration,
 * one datadir, one log sink and, while started, one admin server on an
 * event loop, either on a thread of its own or on the host's event_base.
 * Everything below the API is per instance; the only process-wide things
 * it touches are jemalloc's own settings, which are process-wide by
 * nature. This file makes, stops and frees an instance and answers what
 * it is; the other jobs have files of their own (api/instance.h lists
 * them).
 */
#include "include/heapadmin.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/server.h"
#include "core/blockio.h"
#include "api/arena.h"
#include "api/forksafe.h"
#include "api/instance.h"
#include "api/log.h"
#include "api/serve.h"
#include "api/thread.h"
#include "core/datadir.h"
#include "core/log.h"
#include "core/users.h"
#include "core/util.h"
#include "engine/config.h"
#include "engine/diskstore.h"
#include "engine/filevfs.h"
#include "engine/history.h"
#include "heap/dumpfiles.h"
#include "heap/mallctl.h"
#include "heap/profconf.h"

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
    if (ha_api_log_open(h, o, err, errlen) != 0)
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
        /* The host's figures without heapadmin's own arena. */
        ha_api_arena_wrap(&h->ops);
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
 * Stopping
 * ------------------------------------------------------------------ */

void
heapadmin_stop(struct heapadmin *h)
{
    if (h == NULL || h->state != HA_API_RUNNING)
        return;
    /* A statement running on the admin thread ends now, not at its
     * max_execution_time: the join below is prompt. */
    atomic_store(&h->interrupt, true);
    if (h->own_thread)
        ha_api_thread_stop(h);
    else
        ha_api_serve_stop_on_base(h);
    h->state = HA_API_STOPPED;
}

void
heapadmin_interrupt(struct heapadmin *h)
{
    if (h != NULL)
        atomic_store(&h->interrupt, true);
}

/* heapadmin_free's tidy, on a thread of its own: the datadir's disk may
 * have stopped answering. */
static void tidy_dir(const char *datadir);

static void
tidy_run(void *arg)
{
    tidy_dir(arg);
}

/* How long heapadmin_free waits for its tidy: what the stop has left of
 * its five seconds (engine/engine.h HA_ENGINE_STOP_DISK_MS). */
#define TIDY_WAIT_MS 700

void
heapadmin_free(struct heapadmin *h)
{
    char *dir;

    if (h == NULL)
        return;
    heapadmin_stop(h);
    if (h->disk_hung)
        heapadmin_log(h, HA_LOG_WARN,
                      "stopping: the datadir's disk is not answering: its "
                      "SQLite -wal and -shm files and the dumps' staging "
                      "directory are left for the next start");
    else if (h->datadir[0] != '\0' && (dir = strdup(h->datadir)) != NULL &&
             ha_blockio_run_detached(tidy_run, free, dir,
                                     TIDY_WAIT_MS) != 0)
        heapadmin_log(h, HA_LOG_WARN,
                      "stopping: the datadir's disk did not answer within "
                      "%d ms: its SQLite -wal and -shm files and the "
                      "dumps' staging directory are left for the next "
                      "start",
                      TIDY_WAIT_MS);
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
    return h->state == HA_API_RUNNING && h->server != NULL
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

/* heapadmin_tidy_datadir's work on datadir. Returns 0 or -1 as it. */
static int
tidy(const char *datadir)
{
    static const char *const files[] = {HA_DISKSTORE_FILE, HA_HISTORY_FILE};
    char path[PATH_MAX];
    int rc = 0;

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", datadir,
                             files[i]) < sizeof(path) &&
            ha_filevfs_release(path) != 0)
            rc = -1;
    /* Dumps are staged in the datadir (the dump prefix's directory),
     * after memory (this process's directory in /dev/shm). */
    if (ha_dumpfiles_staging_release(datadir) != 0)
        rc = -1;
    ha_dumpfiles_memory_release();
    return rc;
}

static void
tidy_dir(const char *datadir)
{
    (void)tidy(datadir);
}

int
heapadmin_tidy_datadir(const struct heapadmin *h)
{
    if (h == NULL || h->datadir[0] == '\0')
        return 0;
    return tidy(h->datadir);
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
