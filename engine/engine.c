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

#include "core/forkguard.h"
#include "engine/hostmetrics.h"
#include "engine/labels.h"
#include "engine/push.h"
#include "core/agentreg.h"
#include "core/blockio.h"
#include "core/clock.h"
#include "core/fiber.h"
#include "core/log.h"
#include "core/util.h"
#include "core/worker.h"
#include "engine/diskstore.h"
#include "engine/diskwatch.h"
#include "engine/dumptimer.h"
#include "engine/history.h"
#include "engine/leakrank.h"
#include "engine/leakwatch.h"
#include "engine/limitwatch.h"
#include "prof/breakdown.h"
#include "engine/logtimer.h"
#include "engine/persist.h"
#include "heap/caches.h"
#include "heap/dumpfiles.h"
#include "heap/dumpjob.h"
#include "heap/heap.h"
#include "heap/runs.h"
#include "heap/logwin.h"
#include "prof/wrappers.h"
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
    struct ha_worker *askers[HA_ENGINE_ASKERS]; /* a gateway's: asking
                                       its agents (ha_task_offload_ask) */
    struct ha_diskwatch *diskwatch; /* the dump worker in PROCESSLIST and
                                       the log when a job runs long */
    struct ha_worker *dump_worker; /* writes to the datadir that a disk may
                                      stall: heap dumps, history samples */
    struct ha_worker *io_worker;   /* the loop's own disk calls: a login's
                                      ATTACH, a dump's checks, SQLite's
                                      file calls (core/blockio.h) */
    struct ha_blockio blockio;     /* ... and how long they are waited for */
    bool bound;                    /* blockio is bound to the loop's thread */
    struct event *bind_ev;         /* binds it at the loop's first pass */
    struct ha_diskwatch *iowatch;  /* the I/O thread in PROCESSLIST */
    struct ha_task_env tasks;      /* what every task shares */

    struct ha_dumptimer *dumptimer; /* automatic dumps; NULL: none */
    struct ha_history *history;    /* stats_history sampler; NULL: none */

    bool gateway;                  /* serves the datadir's agents too */
    struct ha_hostmetrics *hostmetrics; /* a gateway's merged exposition */
    char endpoint[PATH_MAX];       /* where the MySQL front-end listens */
    char program[64];              /* this process's program name */
    struct ha_labels labels;       /* the label contract (labels.h) */
    struct ha_push *push;          /* dumps pushed (push.h); NULL: none */
    struct ha_leakwatch *leakwatch; /* on the sampler's samples; NULL:
                                       off */
    struct ha_leakrank *leakrank;  /* ranks its complete series for the
                                      metrics; NULL: none */
    struct ha_limitwatch *limitwatch; /* on the sampler's ticks; NULL:
                                         off */
    struct ha_runrec run;          /* this run's record (heap/runs.h) */
    bool run_recorded;             /* written at start: kept up, ended */
    struct run_job *run_writing;   /* a refresh on the disk worker */
    bool run_dirty;                /* ... and newer figures to write */
    int64_t run_written_usage;     /* the usage the last refresh wrote */
    struct event *tick;            /* the watches' tick when no sampler
                                      serves; NULL: the sampler's */
    struct ha_logtimer *logtimer;  /* ticks an open lifetime window */
};

static void bind_cb(evutil_socket_t fd, short what, void *arg);

/* A refresh of this run's record, on the disk worker. */
struct run_job {
    struct ha_job job;             /* the worker's */
    struct ha_engine *e;           /* NULL: the engine went first */
    char datadir[PATH_MAX];
    struct ha_runrec r;
};

static void
run_job_run(void *arg)
{
    struct run_job *j = arg;

    (void)ha_runs_write(j->datadir, &j->r);
}

static void run_save(struct ha_engine *e);

static void
run_job_done(void *arg)
{
    struct run_job *j = arg;
    struct ha_engine *e = j->e;

    free(j);
    if (e == NULL)
        return;
    e->run_writing = NULL;
    if (e->run_dirty)
        run_save(e);
}

/* This run's record as it is now, written on the disk worker (one write
 * at a time: figures that change meanwhile are written after it). The
 * file is replaced whole (heap/runs.h), so a kill mid-write leaves the
 * one before. */
static void
run_save(struct ha_engine *e)
{
    struct run_job *j;
    char err[128];

    if (!e->run_recorded)
        return;
    if (e->run_writing != NULL) {
        e->run_dirty = true;
        return;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return;
    j->job.run = run_job_run;
    j->job.done = run_job_done;
    j->job.arg = j;
    j->job.what = "writing this run's record";
    j->e = e;
    ha_strlcpy(j->datadir, e->datadir, sizeof(j->datadir));
    j->r = e->run;
    if (ha_worker_submit(e->dump_worker, &j->job, err, sizeof(err)) != 0) {
        free(j);
        return;
    }
    e->run_dirty = false;
    e->run_written_usage = e->run.usage;
    e->run_writing = j;
}

/* This run's figures now, into its record (the kernel's oom_kill count
 * of the process's own group: what the next start compares). */
static void
run_refresh(struct ha_engine *e, const struct ha_cgroup_state *cg)
{
    struct ha_runrec *r = &e->run;
    struct timespec now;
    long long rss = ha_dumpfiles_resident();

    clock_gettime(CLOCK_REALTIME, &now);
    r->last_seen_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    r->resident = rss;
    if (rss > r->peak_resident)
        r->peak_resident = rss;
    r->cgroup_version = cg->version;
    ha_strlcpy(r->cgroup_path, e->heap.cgroup.path, sizeof(r->cgroup_path));
    ha_strlcpy(r->cgroup_dir, e->heap.cgroup.dir, sizeof(r->cgroup_dir));
    r->limit = ha_cgroup_limited(cg) ? cg->limit : -1;
    r->usage = cg->usage;
    r->working_set = cg->working_set;
    r->oom_kills = cg->self_oom_kill;
}

/* The watches' tick (the history sampler's, or the engine's own): the
 * limit watch looks, the run record is kept up. */
static void
engine_tick(void *arg, const struct ha_cgroup_state *cg,
            const struct ha_history_sample *s)
{
    struct ha_engine *e = arg;

    (void)s;
    ha_limitwatch_tick(e->limitwatch, cg);
    if (!e->run_recorded)
        return;
    run_refresh(e, cg);
    run_save(e);
}

/* The share of the limit the usage moves before the limit watch's looks
 * are written into this run's record: near a limit the looks come up to
 * every 10 ms, and the record is a file; at most 100 writes a climb from
 * nothing to the limit, and the last before a kill within 1 % of the
 * limit of the last look (or the look a limit dump was decided on). */
#define RUN_STEP 0.01

/* The limit watch looked (ha_limitwatch_hooks). */
static void
watch_looked(void *arg, const struct ha_cgroup_state *st, int64_t looked_ns,
             bool dumping)
{
    struct ha_engine *e = arg;
    struct ha_runrec *r = &e->run;
    int64_t moved = st->usage - e->run_written_usage;

    if (!e->run_recorded || st->usage < 0)
        return;
    r->last_seen_ns = looked_ns;
    r->usage = st->usage;
    r->working_set = st->working_set;
    r->limit = st->limit;
    if (st->self_oom_kill >= 0)
        r->oom_kills = st->self_oom_kill;
    if (!dumping && (moved < 0 ? -moved : moved) <
                        (int64_t)(RUN_STEP * (double)st->limit))
        return;
    r->resident = ha_dumpfiles_resident();
    if (r->resident > r->peak_resident)
        r->peak_resident = r->resident;
    run_save(e);
}

/* A limit dump was written: the record keeps it with the look it was
 * decided on. */
static void
watch_dumped(void *arg, const char *file, const struct ha_dump_looked *l)
{
    struct ha_engine *e = arg;
    struct ha_runrec_dump d;

    if (!e->run_recorded)
        return;
    memset(&d, 0, sizeof(d));
    d.ns = l->ns;
    d.usage = l->usage;
    d.working_set = l->working_set;
    ha_strlcpy(d.file, file, sizeof(d.file));
    ha_runrec_add_limit_dump(&e->run, &d);
    run_save(e);
}

/* The tick when no history sampler serves. */
static void
own_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_engine *e = arg;
    struct ha_cgroup_state cg;
    char err[256];

    (void)fd;
    (void)what;
    if (ha_cgroup_locate(NULL, &e->heap.cgroup, err, sizeof(err)) != 0)
        e->heap.cgroup.version = 0;
    ha_cgroup_sample(&e->heap.cgroup, &cg);
    engine_tick(e, &cg, NULL);
}

/* This run recorded, the earlier ones settled (heap/runs.h). */
static void
start_run(struct ha_engine *e)
{
    struct ha_runrec *r = &e->run;
    struct ha_cgroup_state cg;
    struct timespec now;

    ha_runrec_init(r);
    clock_gettime(CLOCK_REALTIME, &now);
    r->pid = (int64_t)getpid();
    r->started_ns = ha_runs_process_start_ns((long)getpid());
    if (r->started_ns <= 0)
        r->started_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    ha_strlcpy(r->program, e->program, sizeof(r->program));
    ha_strlcpy(r->prefix, e->cfg->jemalloc.dump_prefix, sizeof(r->prefix));
    ha_cgroup_sample(&e->heap.cgroup, &cg);
    run_refresh(e, &cg);
    r->peak_resident = r->resident;
    e->heap.run_started_ns = r->started_ns;
    e->run_recorded = ha_runs_start(e->datadir, r, &e->heap.run_exit) == 0;
}

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
    start_run(e);
    {
        struct ha_limitwatch_hooks hooks = {watch_looked, watch_dumped, e};

        e->limitwatch =
            ha_limitwatch_new(base, e->dump_worker, &e->heap, &hooks);
    }
    if (ha_history_interval(e->history) > 0) {
        ha_history_set_tick(e->history, engine_tick, e);
    } else {
        struct timeval tv = {60, 0};

        e->tick = event_new(base, -1, EV_PERSIST, own_tick_cb, e);
        if (e->tick != NULL)
            (void)event_add(e->tick, &tv);
    }
    e->heap.engine_value = engine_value;
    e->heap.engine_arg = e;
    e->logtimer = ha_logtimer_new(base, &e->heap);
    e->heap.window_opened = ha_logtimer_kick;
    e->heap.window_arg = e->logtimer;
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
    struct ha_persist_ctx ctx;

    /* Each saved value goes through the settings engine as an
     * operator's UPDATE of global_variables would. */
    memset(&ctx, 0, sizeof(ctx));
    ctx.heap = &e->heap;
    ctx.who = "start-up";
    ctx.datadir = e->datadir;
    ctx.cfg = e->cfg;
    return ha_persist_apply_saved(&ctx, initial);
}

void
ha_engine_set_shutdown_flag(struct ha_engine *e, const _Atomic bool *flag)
{
    e->tasks.shutdown = flag;
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

/* What the stop writes to the datadir, on the I/O thread: a disk that
 * stopped answering holds that thread, never the stop. No job runs any
 * more (the workers are gone), so nothing races it. */
static void
stop_writes(void *arg)
{
    struct ha_engine *e = arg;

    /* A lifetime window still open is closed and published. */
    ha_logwin_shutdown(&e->heap);
    if (e->run_recorded)
        ha_runs_end(e->datadir, &e->run, "stopped");
    ha_history_free(e->history);
    e->history = NULL;
}

void
ha_engine_stopping(struct ha_engine *e)
{
    int64_t by = ha_clock_ns() + (int64_t)HA_ENGINE_STOP_DISK_MS * 1000000;
    int64_t zero = 0;

    if (e != NULL)
        (void)atomic_compare_exchange_strong(&e->blockio.stop_by_ns, &zero,
                                             by);
}

/* The loop's thread forgets e's I/O thread (ha_engine_new): its calls
 * run on it again, as before an engine. */
static void
unbind(struct ha_engine *e)
{
    if (e->bind_ev != NULL)
        event_free(e->bind_ev);
    e->bind_ev = NULL;
    if (e->bound)
        ha_blockio_unbind(&e->blockio);
    e->bound = false;
}

/* Whether a job running since since (CLOCK_MONOTONIC) has run past the
 * disk timeout. */
static bool
past_timeout(struct ha_engine *e, int64_t since)
{
    int64_t limit = atomic_load(&e->blockio.timeout_ms);

    return limit > 0 && ha_clock_ns() - since >= limit * 1000000;
}

int
ha_engine_free(struct ha_engine *e)
{
    char err[512];
    int64_t by, disk_by;

    if (e == NULL)
        return 0;
    ha_engine_stopping(e);
    disk_by = atomic_load(&e->blockio.stop_by_ns);
    /* The end is written below, or cannot be: never at the exit. */
    if (e->run_recorded)
        ha_runs_disarm_exit(&e->heap.run_exit);
    /* First: a job still running may use the tables' context. Both are
     * told to stop at once and get one deadline: a job blocked on a disk
     * that stopped answering (a heap dump to a hung mount) must not keep
     * the owner (SIGTERM, heapadmin_stop) waiting. */
    /* Its encoding waits on the worker: it goes first, and a push being
     * sent gets a share of the stop's wait (its outbox stays). */
    ha_push_free(e->push, ha_clock_ns() +
                              (int64_t)HA_ENGINE_STOP_WAIT_MS * 500000);
    e->push = NULL;
    ha_diskwatch_free(e->diskwatch);
    ha_diskwatch_free(e->iowatch);
    ha_worker_stop(e->worker);
    ha_worker_stop(e->dump_worker);
    for (size_t i = 0; i < HA_ENGINE_ASKERS; i++)
        ha_worker_stop(e->askers[i]);
    by = ha_clock_ns() + (int64_t)HA_ENGINE_STOP_WAIT_MS * 1000000;
    if (by > disk_by)
        by = disk_by;
    {
        const char *what = NULL;
        int64_t since = 0;
        bool stuck = ha_worker_running(e->dump_worker, &what, &since);
        int lost = 0;

        if (ha_worker_free_by(e->worker, by) != 0)
            lost++;
        /* A gateway's asks end by their own deadlines (seconds). */
        for (size_t i = 0; i < HA_ENGINE_ASKERS; i++)
            if (ha_worker_free_by(e->askers[i], by) != 0)
                lost++;
        /* One stuck past the disk timeout is not waited for at all:
         * the disk is not answering (core/blockio.h). */
        if (ha_worker_free_by(e->dump_worker,
                              stuck && past_timeout(e, since) ? ha_clock_ns()
                                                              : by) != 0) {
            ha_log_warn("stopping: the disk worker has been %s for %lld s "
                        "and does not end: left behind (what it was "
                        "writing stays in the staging directory, which "
                        "the next start cleans; this run's end record "
                        "and an open lifetime window are not written)",
                        stuck ? what : "busy",
                        stuck ? (long long)((ha_clock_ns() - since) /
                                            1000000000)
                              : 0LL);
            lost++;
        }
        if (lost > 0) {
            /* Its job may still use the engine (a history sample, the
             * heap's caches): all of it is left to it. */
            unbind(e);
            return -1;
        }
    }
    /* A ranking paused on a job ends while its task's fiber and the
     * scheduler are still there; the watch is told it is gone. */
    ha_leakrank_free(e->leakrank);
    e->leakrank = NULL;
    if (e->io_worker != NULL &&
        ha_blockio_call("writing what the stop leaves in the datadir",
                        stop_writes, NULL, e, err, sizeof(err)) != 0) {
        ha_log_warn("stopping: %s; not written: this run's end record "
                    "(the next start finds the run ended without one), "
                    "an open lifetime window, the last history samples "
                    "not yet on disk; the I/O thread is left behind",
                    err);
        unbind(e);
        return -1; /* its call still uses e */
    }
    if (ha_worker_free_by(e->io_worker, disk_by + 200000000) != 0) {
        ha_log_warn("stopping: the I/O thread does not end (a file of "
                    "the datadir still being closed): left behind");
        unbind(e);
        return -1;
    }
    unbind(e);
    ha_logtimer_free(e->logtimer);
    ha_dumpfiles_memory_stop();
    ha_fiber_pool_clear(&e->fibers);
    ha_task_sched_free(e->tasks.sched);
    ha_dumptimer_free(e->dumptimer);
    ha_leakwatch_free(e->leakwatch);
    ha_limitwatch_free(e->limitwatch);
    if (e->tick != NULL)
        event_free(e->tick);
    if (e->run_writing != NULL)
        e->run_writing->e = NULL;
    if (e->keeper != NULL)
        sqlite3_close_v2(e->keeper);
    ha_tls_free(&e->tls);
    ha_hostmetrics_free(e->hostmetrics);
    ha_accounts_free(&e->accounts);
    ha_heap_caches_free(&e->heap);
    free(e->datadir);
    free(e);
    return 0;
}

void
ha_engine_abandon(struct ha_engine *e)
{
    if (e != NULL) {
        ha_worker_abandon(e->worker);
        ha_worker_abandon(e->dump_worker);
        ha_worker_abandon(e->io_worker);
        for (size_t i = 0; i < HA_ENGINE_ASKERS; i++)
            ha_worker_abandon(e->askers[i]);
        ha_limitwatch_abandon(e->limitwatch);
        ha_push_abandon(e->push);
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
    if (gateway && e->hostmetrics == NULL)
        e->hostmetrics = ha_hostmetrics_new();
    /* Its own threads for asking the agents, each started at its first
     * job: a slow agent holds a scrape to its deadline, never the
     * profile work, nor a scrape queued behind a stats_agents. */
    for (size_t i = 0; gateway && i < HA_ENGINE_ASKERS; i++) {
        char err[256];

        if (e->askers[i] != NULL)
            continue;
        e->askers[i] = ha_worker_new(e->base, e->heap.thread_init,
                                     e->heap.thread_init_arg, err,
                                     sizeof(err));
        if (e->askers[i] == NULL) {
            ha_log_warn("gateway: %s (asking the agents on %zu threads)",
                        err, i);
            break;
        }
        ha_worker_set_name(e->askers[i], "heapadmin-ask");
        e->tasks.askers = e->askers;
        e->tasks.n_askers = i + 1;
    }
}

struct ha_hostmetrics *
ha_engine_hostmetrics(struct ha_engine *e)
{
    return e->gateway ? e->hostmetrics : NULL;
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

static size_t
push_rows(const void *arg, struct ha_push_row *rows, size_t max)
{
    return ha_push_rows(arg, rows, max);
}

void
ha_engine_start_push(struct ha_engine *e, ha_push_encode_fn encode,
                     void *encode_arg)
{
    if (e->push != NULL || e->cfg->n_push == 0)
        return;
    e->push = ha_push_new(e->base, e->cfg, &e->heap, &e->labels, &e->tasks,
                          encode, encode_arg, e->heap.thread_init,
                          e->heap.thread_init_arg);
    e->vtab.push_rows = e->push != NULL ? push_rows : NULL;
    e->vtab.push_arg = e->push;
}

const struct ha_labels *
ha_engine_labels(const struct ha_engine *e)
{
    return &e->labels;
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
