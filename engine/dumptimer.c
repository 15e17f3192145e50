/* SPDX-License-Identifier: MIT
 *
 * Automatic dumps and dump housekeeping on timers (see dumptimer.h). The
 * timers run on the loop and only decide; each dump, and each look at
 * jemalloc's own dumps, is a struct ha_dump_job run on the worker.
 */
#include "engine/dumptimer.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "heap/dumpjob.h"
#include "heap/mallctl.h"

struct ha_dump_req {
    struct ha_job job;           /* first: the worker's */
    struct ha_dump_job dj;
    struct ha_heap *heap;        /* told of what was published */
    void (*done)(void *arg, const char *file); /* NULL: forgotten */
    void *arg;
    bool *low_space;             /* the owner's episode flag */
};

struct ha_dumptimer {
    struct ha_heap *heap;     /* ops, je */
    struct ha_worker *worker;
    struct event *every;         /* dump_interval_s; NULL: off */
    struct event *watch;         /* every HA_DUMPTIMER_WATCH_S; NULL: off */
    bool armed;                  /* resident was below the threshold */
    bool below_floor;            /* in a low-space episode (logged once) */
    time_t last_watch;           /* jemalloc's dumps newer than this are
                                    new to the watch */
    struct ha_dump_req *dumping; /* a dump of ours on the worker */
    struct ha_dump_req *looking; /* the watch's housekeeping on it */
};

/* ------------------------------------------------------------------
 * Requests
 * ------------------------------------------------------------------ */

static void
req_run(void *arg)
{
    struct ha_dump_req *r = arg;

    ha_dump_job_run(&r->dj);
}

static void
req_done(void *arg)
{
    struct ha_dump_req *r = arg;

    if (r->job.ran)
        ha_heap_published(r->heap);
    if (r->done != NULL) {
        if (r->low_space != NULL && r->job.ran)
            *r->low_space = r->dj.low_space;
        r->done(r->arg,
                r->job.ran && r->dj.dump && r->dj.rc == 0 ? r->dj.file
                                                          : NULL);
    }
    free(r);
}

/* The job's configuration, copied on the loop (SET and LOAD change
 * heap->je there). */
static struct ha_dump_req *
req_new(struct ha_heap *heap, const char *variable, const char *trigger,
        bool *low_space, void (*done)(void *, const char *), void *arg)
{
    const struct ha_jemalloc_config *je = heap->je;
    struct ha_dump_req *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->job.run = req_run;
    r->job.done = req_done;
    r->job.arg = r;
    r->done = done;
    r->arg = arg;
    r->low_space = low_space;
    r->heap = heap;
    ha_dump_job_init(&r->dj, heap, variable, trigger);
    r->dj.low_space = low_space != NULL && *low_space;
    if (je != NULL) {
        r->dj.min_free_bytes = je->dump_min_free_bytes;
        r->dj.retain = true;
        r->dj.retention_count = je->dump_retention_count;
        r->dj.retention_bytes = je->dump_retention_bytes;
    }
    return r;
}

static struct ha_dump_req *
req_submit(struct ha_worker *worker, struct ha_dump_req *r)
{
    char err[256];

    r->job.what = r->dj.dump ? "writing a heap dump (automatic)"
                             : "looking after the dumps";
    if (ha_worker_submit(worker, &r->job, err, sizeof(err)) != 0) {
        ha_log_warn("%s: not taken: %s", r->dj.variable, err);
        free(r);
        return NULL;
    }
    return r;
}

struct ha_dump_req *
ha_dumptimer_dump(struct ha_worker *worker, struct ha_heap *heap,
                  const char *variable, const char *trigger,
                  const char *reason, const struct ha_dump_looked *looked,
                  bool *low_space,
                  void (*done)(void *arg, const char *file), void *arg)
{
    struct ha_dump_req *r =
        req_new(heap, variable, trigger, low_space, done, arg);

    if (r == NULL) {
        ha_log_warn("automatic dump (%s) not taken: out of memory", reason);
        return NULL;
    }
    r->dj.dump = true;
    snprintf(r->dj.what, sizeof(r->dj.what), "automatic dump (%s)", reason);
    ha_strlcpy(r->dj.reason, reason, sizeof(r->dj.reason));
    if (looked != NULL)
        r->dj.looked = *looked;
    return req_submit(worker, r);
}

void
ha_dump_req_forget(struct ha_dump_req *r)
{
    if (r != NULL) {
        r->done = NULL;
        r->low_space = NULL;
    }
}

/* ------------------------------------------------------------------
 * Timers
 * ------------------------------------------------------------------ */

static void
dumped(void *arg, const char *file)
{
    struct ha_dumptimer *t = arg;

    (void)file; /* the job logged it */
    t->dumping = NULL;
}

static void
looked(void *arg, const char *file)
{
    struct ha_dumptimer *t = arg;

    (void)file;
    t->looking = NULL;
}

/* One automatic dump (reason says why), unless one is being written. */
static bool
automatic_dump(struct ha_dumptimer *t, const char *variable,
               const char *reason)
{
    if (t->dumping != NULL) {
        ha_log_info("automatic dump (%s) skipped: the last one is still "
                    "being written",
                    reason);
        return false;
    }
    t->dumping = ha_dumptimer_dump(t->worker, t->heap, variable, "automatic",
                                   reason, NULL, &t->below_floor, dumped, t);
    return t->dumping != NULL;
}

static void
every_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_dumptimer *t = arg;
    char reason[64];

    (void)fd;
    (void)what;
    snprintf(reason, sizeof(reason), "dump_interval_s = %lld",
             t->heap->je->dump_interval_s);
    (void)automatic_dump(t, "jemalloc_variables.dump_interval_s", reason);
}

static void
watch_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_dumptimer *t = arg;
    const struct ha_jemalloc_config *je = t->heap->je;
    time_t now = time(NULL);

    (void)fd;
    (void)what;
    /* jemalloc's own dumps since the last look: the floor and retention,
     * on the worker. */
    if (t->looking == NULL) {
        struct ha_dump_req *r =
            req_new(t->heap, "jemalloc_variables.dump_min_free_bytes", NULL,
                    &t->below_floor, looked, t);

        if (r != NULL) {
            r->dj.dump = false;
            r->dj.drop_since = t->last_watch;
            t->looking = req_submit(t->worker, r);
            if (t->looking != NULL)
                t->last_watch = now;
        }
    }
    if (je->dump_resident_bytes > 0) {
        size_t resident = 0;
        char reason[128];

        ha_heap_refresh_stats(t->heap);
        if (ha_mallctl_read_size(t->heap->ops, "stats.resident", &resident) !=
            0)
            return;
        if ((long long)resident < je->dump_resident_bytes / 10 * 9) {
            t->armed = true;
        } else if (t->armed &&
                   (long long)resident >= je->dump_resident_bytes) {
            snprintf(reason, sizeof(reason),
                     "stats.resident %zu >= dump_resident_bytes %lld",
                     resident, je->dump_resident_bytes);
            /* Disarmed once a dump is under way; else tried next look. */
            if (automatic_dump(t, "jemalloc_variables.dump_resident_bytes",
                               reason))
                t->armed = false;
        }
    }
}

/* Can jemalloc write dumps on its own (interval or high-water)? */
static bool
jemalloc_dumps_itself(const struct ha_mallctl_ops *ops)
{
    ssize_t lg = -1;
    bool gdump = false;

    if (!ha_mallctl_prof_enabled(ops))
        return false;
    (void)ha_mallctl_read_ssize(ops, "opt.lg_prof_interval", &lg);
    (void)ha_mallctl_read_bool(ops, "prof.gdump", &gdump);
    return lg >= 0 || gdump;
}

struct ha_dumptimer *
ha_dumptimer_new(struct event_base *base, struct ha_worker *worker,
                 struct ha_heap *heap)
{
    const struct ha_jemalloc_config *je = heap->je;
    struct ha_dumptimer *t;
    bool every, watch;

    if (je == NULL || worker == NULL || !ha_mallctl_prof_enabled(heap->ops))
        return NULL;
    every = je->dump_interval_s > 0;
    watch = je->dump_resident_bytes > 0 || jemalloc_dumps_itself(heap->ops);
    if (!every && !watch)
        return NULL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        goto oom;
    t->heap = heap;
    t->worker = worker;
    t->armed = true;
    t->last_watch = time(NULL);
    if (every) {
        struct timeval tv = {(time_t)je->dump_interval_s, 0};

        t->every = event_new(base, -1, EV_PERSIST, every_cb, t);
        if (t->every == NULL || event_add(t->every, &tv) != 0)
            goto oom;
    }
    if (watch) {
        struct timeval tv = {HA_DUMPTIMER_WATCH_S, 0};

        t->watch = event_new(base, -1, EV_PERSIST, watch_cb, t);
        if (t->watch == NULL || event_add(t->watch, &tv) != 0)
            goto oom;
    }
    ha_log_info("automatic dumps: every %lld s%s, when stats.resident "
                "passes %lld bytes%s; jemalloc's own dumps %s",
                je->dump_interval_s, every ? "" : " (off)",
                je->dump_resident_bytes,
                je->dump_resident_bytes > 0 ? "" : " (off)",
                jemalloc_dumps_itself(heap->ops) ? "watched" : "off");
    return t;
oom:
    ha_log_error("automatic dumps: cannot arm their timers");
    ha_dumptimer_free(t);
    return NULL;
}

void
ha_dumptimer_free(struct ha_dumptimer *t)
{
    if (t == NULL)
        return;
    ha_dump_req_forget(t->dumping);
    ha_dump_req_forget(t->looking);
    if (t->every != NULL)
        event_free(t->every);
    if (t->watch != NULL)
        event_free(t->watch);
    free(t);
}
