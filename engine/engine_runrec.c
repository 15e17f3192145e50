/* SPDX-License-Identifier: MIT
 *
 * This run's record (heap/runs.h) kept up while the engine lives: started
 * with the engine, refreshed at each tick of the watches (the history
 * sampler's, or the engine's own when it does not sample) and at the
 * limit watch's looks as the usage moves, and told of each limit dump;
 * every write on the disk worker, one at a time. The stop writes its end
 * (engine_stop.c).
 */
#include "engine/engine.h"
#include "engine/engine_int.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "engine/history.h"
#include "engine/limitwatch.h"
#include "heap/dumpfiles.h"
#include "heap/dumpjob.h"

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

void
ha_engine_runrec_start(struct ha_engine *e)
{
    start_run(e);
    {
        struct ha_limitwatch_hooks hooks = {watch_looked, watch_dumped, e};

        e->limitwatch =
            ha_limitwatch_new(e->base, e->dump_worker, &e->heap, &hooks);
    }
    if (ha_history_interval(e->history) > 0) {
        ha_history_set_tick(e->history, engine_tick, e);
    } else {
        struct timeval tv = {60, 0};

        e->tick = event_new(e->base, -1, EV_PERSIST, own_tick_cb, e);
        if (e->tick != NULL)
            (void)event_add(e->tick, &tv);
    }
}
