/* SPDX-License-Identifier: MIT
 *
 * ha_engine_new: what it sets up, in that order (the scratch database,
 * the disk layer, the workers and the I/O thread's binding, the tasks'
 * environment, the dump files' modes, the memory cgroup, the timers and
 * the watches); a step that fails takes down what came before through
 * ha_engine_free (engine_stop.c).
 */
#include "engine/engine.h"
#include "engine/engine_int.h"

#include <event2/event.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/agentreg.h"
#include "core/forkguard.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/diskstore.h"
#include "engine/diskwatch.h"
#include "engine/dumptimer.h"
#include "engine/history.h"
#include "engine/leakrank.h"
#include "engine/leakwatch.h"
#include "engine/limitwatch.h"
#include "engine/logtimer.h"
#include "heap/dumpfiles.h"
#include "prof/breakdown.h"
#include "prof/wrappers.h"

/* struct ha_heap's engine_value: the watches' state rows. */
static bool
engine_value(const void *arg, const char *name, char *buf, size_t len)
{
    const struct ha_engine *e = arg;

    return ha_leakwatch_value(e->leakwatch, name, buf, len) ||
           ha_limitwatch_value(e->limitwatch, name, buf, len);
}

/* The config's wrapper edits, made canonical (as the variable reads
 * them back) into heap; the config was checked when it was read. */
static void
engine_wrappers(struct ha_heap *heap, const char *text)
{
    struct ha_wrap_conf conf;
    char why[512];

    if (ha_wrap_conf_parse(text, &conf, why, sizeof(why)) != 0) {
        ha_log_warn("config: " HA_CONFIG_JEMALLOC ".alloc_wrappers "
                    "ignored: %s",
                    why);
        heap->alloc_wrappers[0] = '\0';
        return;
    }
    ha_strlcpy(heap->alloc_wrappers, conf.text, sizeof(heap->alloc_wrappers));
    ha_wrap_conf_free(&conf);
}

/* Where the process's memory cgroup is, and its limit, said once. */
static void
locate_cgroup(struct ha_heap *heap)
{
    struct ha_cgroup_state st;
    char err[256], lim[32];

    if (ha_cgroup_locate(NULL, &heap->cgroup, err, sizeof(err)) != 0) {
        ha_log_info("memory cgroup: not read (%s)", err);
        return;
    }
    ha_cgroup_sample(&heap->cgroup, &st);
    if (heap->cgroup.version == 0) {
        ha_log_info("memory cgroup: none (no memory controller holds this "
                    "process): no memory limit");
        return;
    }
    if (!ha_cgroup_limited(&st)) {
        ha_log_info("memory cgroup: v%d %s, no memory limit",
                    heap->cgroup.version, heap->cgroup.path);
        return;
    }
    ha_breakdown_format_bytes(st.limit, lim, sizeof(lim));
    ha_log_notice("memory cgroup: v%d %s, memory limit %s (%lld bytes) set "
                  "by %s",
                  heap->cgroup.version, heap->cgroup.path, lim,
                  (long long)st.limit,
                  strcmp(st.limit_path, heap->cgroup.path) == 0
                      ? "the process's own group"
                      : st.limit_path);
}

/* The loop's first pass: its thread is the one whose disk calls go to
 * the I/O thread (the worker's done callbacks run there too). */
static void
bind_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_engine *e = arg;

    (void)fd;
    (void)what;
    (void)ha_blockio_bind(&e->blockio);
    e->bound = true;
}

struct ha_engine *
ha_engine_new(struct event_base *base, const struct ha_config *cfg,
              const char *datadir, const struct ha_mallctl_ops *ops,
              void (*thread_init)(void *), void *init_arg, char *err,
              size_t errlen)
{
    struct ha_engine *e = calloc(1, sizeof(*e));
    char why[PATH_MAX + 128];
    int rc;

    if (e == NULL || (e->datadir = strdup(datadir)) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        free(e);
        return NULL;
    }
    e->base = base;
    e->cfg = cfg;
    ha_dumpfiles_memory_hold(); /* ha_engine_free's stop pairs it */
    ha_agentreg_self_program(e->program, sizeof(e->program));
    ha_labels_init(&e->labels, e->program, cfg->services, cfg->n_services);
    e->heap.labels = &e->labels;
    e->heap.program = e->program;
    e->heap.ops = ops;
    e->vtab.heap = &e->heap;
    e->heap.admin_value = ha_config_admin_value;
    e->heap.admin_arg = cfg;
    e->heap.datadir = e->datadir;
    e->heap.lg_prof_sample_min = (unsigned)cfg->jemalloc.lg_prof_sample_min;
    e->heap.stats_max_age_ms = (unsigned)cfg->jemalloc.stats_max_age_ms;
    e->heap.dump_symbolized = cfg->jemalloc.dump_symbolized != 0;
    engine_wrappers(&e->heap, cfg->jemalloc.alloc_wrappers);
    e->heap.je = &cfg->jemalloc;
    e->heap.thread_init = thread_init;
    e->heap.thread_init_arg = init_arg;
    ha_accounts_init(&e->accounts, cfg->users, cfg->n_users, base);
    ha_clients_init(&e->clients);
    /* A leading '/' makes the memdb database shared by every connection
     * of this process under that name. The engine's own address keeps
     * two live engines apart without a counter that engines created on
     * two threads would race on; the keeper holds the database for as
     * long as e (and so its address) is alive. */
    snprintf(e->scratch_uri, sizeof(e->scratch_uri),
             "file:/heapadmin-%ld-%p?vfs=memdb", (long)getpid(), (void *)e);
    rc = sqlite3_open_v2(e->scratch_uri, &e->keeper,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                         NULL);
    if (rc != SQLITE_OK) {
        ha_err_set(err, errlen, "cannot create the admin database: %s",
                   e->keeper ? sqlite3_errmsg(e->keeper) : sqlite3_errstr(rc));
        ha_engine_free(e);
        return NULL;
    }
    /* The keeper only holds the database open: no lookaside memory
     * (48 KiB per connection by default) for statements it never runs. */
    (void)sqlite3_db_config(e->keeper, SQLITE_DBCONFIG_LOOKASIDE, NULL, 0, 0);
    /* The disk layer exists before the first session, which attaches
     * it, and before anything runs that a refusal would leave behind. A
     * heapadmin.db that is not ours (a view named global_variables, other
     * columns) refuses the start, the file untouched; any other failure
     * only means SAVE will report it. */
    rc = ha_diskstore_init(e->datadir, why, sizeof(why));
    if (rc == HA_DISKSTORE_FOREIGN) {
        ha_err_set(err, errlen, "disk layer: %s", why);
        ha_engine_free(e);
        return NULL;
    }
    if (rc != 0)
        ha_log_warn("disk layer: %s", why);
    e->worker = ha_worker_new(base, thread_init, init_arg, err, errlen);
    /* Its thread starts at the first dump: most instances never have it. */
    if (e->worker != NULL)
        e->dump_worker =
            ha_worker_new(base, thread_init, init_arg, err, errlen);
    if (e->dump_worker != NULL)
        ha_worker_set_name(e->dump_worker, "heapadmin-disk");
    if (e->dump_worker != NULL)
        e->io_worker =
            ha_worker_new(base, thread_init, init_arg, err, errlen);
    if (e->io_worker != NULL)
        ha_worker_set_name(e->io_worker, "heapadmin-io");
    if (e->worker == NULL || e->dump_worker == NULL || e->io_worker == NULL) {
        ha_engine_free(e);
        return NULL;
    }
    /* Once the loop runs, what its thread asks of the datadir's disk is
     * done on the I/O thread and waited for a bounded time
     * (core/blockio.h); the start-up, on whatever thread makes the
     * engine, does its own. */
    e->blockio.worker = e->io_worker;
    atomic_store(&e->blockio.timeout_ms, cfg->disk_timeout_ms);
    {
        static const struct timeval now = {0, 0};

        e->bind_ev = evtimer_new(base, bind_cb, e);
        if (e->bind_ev == NULL || evtimer_add(e->bind_ev, &now) != 0) {
            ha_err_set(err, errlen, "cannot arm the I/O thread's binding");
            ha_engine_free(e);
            return NULL;
        }
    }
    e->tasks.base = base;
    e->tasks.fibers = &e->fibers;
    e->tasks.worker = e->worker;
    e->tasks.sched = ha_task_sched_new(base);
    e->tasks.blockio = &e->blockio;
    e->heap.dump_worker = e->dump_worker;
    e->diskwatch = ha_diskwatch_new(
        base, e->dump_worker, &e->clients, "the disk worker",
        "heap dumps and history samples wait behind it, sessions do not");
    e->iowatch = ha_diskwatch_new(
        base, e->io_worker, &e->clients, "the I/O thread",
        "logins, dump_now and statements that need the disk give up "
        "after admin_variables.disk_timeout_ms, with an error; other "
        "statements do not wait");
    if (cfg->sql_memory_limit > 0) {
        /* SQLite's limit is per process: the agent and heapadmind have
         * SQLite to themselves; a host that links the same libsqlite3
         * shares it (docs/security.md: Limits). */
        sqlite3_hard_heap_limit64(cfg->sql_memory_limit);
        ha_log_info("admin SQL memory limit: %lld bytes (sql_memory_limit)",
                    cfg->sql_memory_limit);
    }
    /* Dumps are private (0600), or readable by dump_group (0640): made so
     * as jemalloc writes them, through its dump hook. */
    if (cfg->jemalloc.dump_group[0] != '\0') {
        struct group gr, *found = NULL;
        char buf[4096];

        int grc;

        /* NSS's locks (core/forkguard.h): never held at a fork. */
        ha_forkguard_enter();
        grc = getgrnam_r(cfg->jemalloc.dump_group, &gr, buf, sizeof(buf),
                         &found);
        ha_forkguard_leave();
        if (grc == 0 && found != NULL)
            ha_dumpfiles_set_perms(found->gr_gid);
        else
            ha_log_warn("jemalloc_variables.dump_group: no group named "
                        "'%s'; dumps are mode 0600",
                        cfg->jemalloc.dump_group);
    }
    if (ops != NULL && ha_mallctl_prof_enabled(ops) &&
        ha_mallctl_watch_dumps(ops) != 0)
        ha_log_info("this jemalloc has no dump hook: dumps it writes on its "
                    "own (interval, high-water) keep its mode 0644");
    locate_cgroup(&e->heap);
    e->dumptimer = ha_dumptimer_new(base, e->dump_worker, &e->heap);
    e->history = ha_history_new(base, e->dump_worker, &e->heap, e->datadir,
                                cfg->stats_system_memory);
    if (cfg->jemalloc.leak_watch_growth_bytes > 0 &&
        cfg->jemalloc.leak_watch_sites > 0)
        e->leakrank = ha_leakrank_new(&e->heap, &e->tasks);
    e->leakwatch = ha_leakwatch_new(base, e->dump_worker, &e->heap,
                                    e->history, e->leakrank);
    ha_engine_runrec_start(e);
    e->heap.engine_value = engine_value;
    e->heap.engine_arg = e;
    e->logtimer = ha_logtimer_new(base, &e->heap);
    e->heap.window_opened = ha_logtimer_kick;
    e->heap.window_arg = e->logtimer;
    return e;
}
