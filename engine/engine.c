/* SPDX-License-Identifier: MIT
 *
 * The engine (see engine.h): what ha_engine_new sets up and
 * ha_engine_free takes down, in that order.
 */
#include "engine/engine.h"

#include <event2/event.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/agentreg.h"
#include "core/fiber.h"
#include "core/log.h"
#include "core/util.h"
#include "core/worker.h"
#include "engine/diskstore.h"
#include "engine/dumptimer.h"
#include "engine/history.h"
#include "engine/leakwatch.h"
#include "engine/persist.h"
#include "heap/caches.h"
#include "heap/dumpfiles.h"
#include "heap/heap.h"
#include "vtab/vtab.h"

struct ha_engine {
    struct event_base *base;
    const struct ha_config *cfg;
    char *datadir;

    struct ha_heap heap;           /* jemalloc, dumps, profiles */
    struct ha_vtab_ctx vtab;       /* the tables' context: heap and the
                                      rows this layer owns */
    char scratch_uri[128];         /* admin sessions' shared tables */
    sqlite3 *keeper;               /* holds that database open */

    struct ha_accounts accounts;   /* logins of both front-ends */
    struct ha_clients clients;     /* PROCESSLIST, KILL, counters */
    struct ha_tls tls;             /* certificate, RSA key */

    struct ha_fiber_pool fibers;   /* stacks for tasks */
    struct ha_worker *worker;      /* long work off the loop */
    struct ha_worker *dump_worker; /* writes to the datadir that a disk may
                                      stall: heap dumps, history samples */
    struct ha_task_env tasks;      /* what every task shares */

    struct ha_dumptimer *dumptimer; /* automatic dumps; NULL: none */
    struct ha_history *history;    /* stats_history sampler; NULL: none */

    bool gateway;                  /* serves the datadir's agents too */
    char endpoint[PATH_MAX];       /* where the MySQL front-end listens */
    char program[64];              /* this process's program name */
    struct ha_leakwatch *leakwatch; /* on the sampler's samples; NULL:
                                       off */
};

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
    ha_agentreg_self_program(e->program, sizeof(e->program));
    e->heap.ops = ops;
    e->vtab.heap = &e->heap;
    e->vtab.admin_value = ha_config_admin_value;
    e->vtab.admin_arg = cfg;
    e->heap.datadir = e->datadir;
    e->heap.lg_prof_sample_min = (unsigned)cfg->jemalloc.lg_prof_sample_min;
    e->heap.stats_max_age_ms = (unsigned)cfg->jemalloc.stats_max_age_ms;
    e->heap.dump_symbolized = cfg->jemalloc.dump_symbolized != 0;
    e->heap.je = &cfg->jemalloc;
    e->heap.thread_init = thread_init;
    e->heap.thread_init_arg = init_arg;
    ha_accounts_init(&e->accounts, cfg->users, cfg->n_users);
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
    e->worker = ha_worker_new(base, thread_init, init_arg, err, errlen);
    /* Its thread starts at the first dump: most instances never have it. */
    if (e->worker != NULL)
        e->dump_worker =
            ha_worker_new(base, thread_init, init_arg, err, errlen);
    if (e->dump_worker != NULL)
        ha_worker_set_name(e->dump_worker, "heapadmin-disk");
    if (e->worker == NULL || e->dump_worker == NULL) {
        ha_engine_free(e);
        return NULL;
    }
    e->tasks.base = base;
    e->tasks.fibers = &e->fibers;
    e->tasks.worker = e->worker;
    e->heap.dump_worker = e->dump_worker;
    if (cfg->sql_memory_limit > 0) {
        /* SQLite's limit is per process: the agent and heapadmind have
         * SQLite to themselves; a host that links the same libsqlite3
         * shares it (README: Limits). */
        sqlite3_hard_heap_limit64(cfg->sql_memory_limit);
        ha_log_info("admin SQL memory limit: %lld bytes (sql_memory_limit)",
                    cfg->sql_memory_limit);
    }
    /* Dumps are private (0600), or readable by dump_group (0640): made so
     * as jemalloc writes them, through its dump hook. */
    if (cfg->jemalloc.dump_group[0] != '\0') {
        struct group gr, *found = NULL;
        char buf[4096];

        if (getgrnam_r(cfg->jemalloc.dump_group, &gr, buf, sizeof(buf),
                       &found) == 0 &&
            found != NULL)
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
    e->dumptimer = ha_dumptimer_new(base, e->dump_worker, &e->heap);
    e->history = ha_history_new(base, e->dump_worker, &e->heap, e->datadir,
                                cfg->stats_system_memory);
    e->leakwatch =
        ha_leakwatch_new(base, e->dump_worker, &e->heap, e->history);
    e->vtab.engine_value = ha_leakwatch_value;
    e->vtab.engine_arg = e->leakwatch;
    /* The disk layer exists before the first session, which attaches
     * it; a failure only means SAVE will report it. */
    if (ha_diskstore_init(e->datadir, why, sizeof(why)) != 0)
        ha_log_warn("disk layer: %s", why);
    return e;
}

int
ha_engine_enable_tls(struct ha_engine *e, char *err, size_t errlen)
{
    return ha_tls_init(&e->tls, e->cfg, e->datadir, err, errlen);
}

int
ha_engine_apply_saved(struct ha_engine *e, bool initial)
{
    struct ha_vtab_conn *vc = NULL;
    struct ha_persist_ctx ctx;
    sqlite3 *db = NULL;
    char *zerr = NULL;
    int n = -1;

    /* A private connection with the tables: each saved value goes
     * through global_variables as an operator's UPDATE would. */
    if (sqlite3_open_v2(":memory:", &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        ha_vtab_register_all(db, &e->vtab, &vc, &zerr) != SQLITE_OK) {
        ha_log_error("saved variables not applied: %s",
                     zerr != NULL ? zerr : "cannot open a connection");
        goto out;
    }
    ha_vtab_set_admin(vc, true);
    ha_vtab_set_who(vc, "start-up (saved on disk)");
    memset(&ctx, 0, sizeof(ctx));
    ctx.db = db;
    ctx.who = "start-up";
    ctx.datadir = e->datadir;
    ctx.cfg = e->cfg;
    n = ha_persist_apply_saved(&ctx, initial);
out:
    sqlite3_free(zerr);
    sqlite3_close_v2(db);
    ha_vtab_release(vc);
    return n;
}

void
ha_engine_set_shutdown_flag(struct ha_engine *e, const _Atomic bool *flag)
{
    e->tasks.shutdown = flag;
}

void
ha_engine_free(struct ha_engine *e)
{
    if (e == NULL)
        return;
    /* First: a job still running may use the tables' context. */
    ha_worker_free(e->worker);
    ha_worker_free(e->dump_worker);
    ha_fiber_pool_clear(&e->fibers);
    ha_dumptimer_free(e->dumptimer);
    ha_leakwatch_free(e->leakwatch);
    ha_history_free(e->history);
    if (e->keeper != NULL)
        sqlite3_close_v2(e->keeper);
    ha_tls_free(&e->tls);
    ha_accounts_free(&e->accounts);
    ha_heap_caches_free(&e->heap);
    free(e->datadir);
    free(e);
}

void
ha_engine_abandon(struct ha_engine *e)
{
    if (e != NULL) {
        ha_worker_abandon(e->worker);
        ha_worker_abandon(e->dump_worker);
    }
}

struct event_base *
ha_engine_base(const struct ha_engine *e)
{
    return e->base;
}

const struct ha_config *
ha_engine_config(const struct ha_engine *e)
{
    return e->cfg;
}

const char *
ha_engine_datadir(const struct ha_engine *e)
{
    return e->datadir;
}

struct ha_vtab_ctx *
ha_engine_vtab(struct ha_engine *e)
{
    return &e->vtab;
}

struct ha_heap *
ha_engine_heap(struct ha_engine *e)
{
    return &e->heap;
}

struct ha_clients *
ha_engine_clients(struct ha_engine *e)
{
    return &e->clients;
}

struct ha_accounts *
ha_engine_accounts(struct ha_engine *e)
{
    return &e->accounts;
}

const struct ha_tls *
ha_engine_tls(const struct ha_engine *e)
{
    return &e->tls;
}

const struct ha_task_env *
ha_engine_tasks(const struct ha_engine *e)
{
    return &e->tasks;
}

const _Atomic bool *
ha_engine_shutdown_flag(const struct ha_engine *e)
{
    return e->tasks.shutdown;
}

void
ha_engine_set_gateway(struct ha_engine *e, bool gateway)
{
    e->gateway = gateway;
}

bool
ha_engine_is_gateway(const struct ha_engine *e)
{
    return e->gateway;
}

void
ha_engine_set_endpoint(struct ha_engine *e, const char *endpoint)
{
    ha_strlcpy(e->endpoint, endpoint != NULL ? endpoint : "",
               sizeof(e->endpoint));
}

const char *
ha_engine_endpoint(const struct ha_engine *e)
{
    return e->endpoint;
}

const char *
ha_engine_program(const struct ha_engine *e)
{
    return e->program;
}

int
ha_engine_release_caches(struct ha_engine *e, unsigned idle_s)
{
    if (ha_worker_pending(e->worker) > 0 ||
        ha_worker_pending(e->dump_worker) > 0)
        return -1;
    return ha_heap_caches_release(&e->heap, idle_s);
}

const char *
ha_engine_scratch_uri(const struct ha_engine *e)
{
    return e->scratch_uri;
}
