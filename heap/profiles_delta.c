/* SPDX-License-Identifier: MIT
 *
 * Delta profiles (ha_heap_profile_delta): two live profiles N seconds
 * apart, their cumulative counters subtracted per stack on the worker
 * (prof/delta.h). The dumps are written off the loop; refused when
 * sampling was reset or switched within the window.
 */
#include "heap/profiles.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/delta.h"
#include "heap/dumpfiles.h"
#include "heap/mallctl.h"
#include "heap/profiles_int.h"

/* ------------------------------------------------------------------
 * Deltas: what was allocated in the last N seconds
 * ------------------------------------------------------------------ */

/* A live dump written into the memory directory and read, on the
 * worker. */
struct live_job {
    const struct ha_mallctl_ops *ops;
    char file[PATH_MAX + 32];
    char *text;
    size_t len;
    int rc;
    char err[1024];
};

static void
live_job_run(void *arg)
{
    struct live_job *j = arg;

    j->rc = ha_profiles_dump_read(j->ops, j->file, &j->text, &j->len, j->err,
                                  sizeof(j->err));
}

static void
live_job_discard(void *arg)
{
    struct live_job *j = arg;

    free(j->text);
    free(j);
}

/* A live profile whose dump is written off the loop: into this process's
 * memory directory (heap/dumpfiles.h) on the worker, or, without one,
 * as ha_profiles_live_dump does, in the datadir on the I/O thread; then loaded
 * as any live one. *dumped gets when the dump was written (ha_clock_ns).
 * Returns as ha_heap_profile_get. */
static int
live_off_loop(struct ha_heap *heap, struct ha_heap_profile **out,
              int64_t *dumped, char *err, size_t errlen)
{
    struct ha_heap_cache *c = ha_profiles_cache_of(heap);
    char prefix[PATH_MAX], mem[PATH_MAX];
    struct live_job *j;
    struct load *l;
    struct timespec now;
    int rc;

    *out = NULL;
    if (c == NULL || (j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->ops = heap->ops;
    if (heap->datadir != NULL &&
        (size_t)snprintf(prefix, sizeof(prefix), "%s/live", heap->datadir) <
            sizeof(prefix) &&
        ha_dumpfiles_memory_prefix(prefix, mem, sizeof(mem)) == 0) {
        snprintf(j->file, sizeof(j->file), "%s.%ld.%u.heap", mem,
                 (long)getpid(), c->live_seq++);
        if (ha_task_offload(live_job_run, live_job_discard, j) != 0)
            return HA_HEAP_STOPPED;
    } else {
        j->rc = ha_profiles_live_dump(heap, &j->text, &j->len, j->err,
                                      sizeof(j->err));
    }
    clock_gettime(CLOCK_REALTIME, &now);
    *dumped = ha_clock_ns();
    if (j->rc != 0) {
        rc = j->rc == HA_HEAP_BUSY ? HA_HEAP_BUSY : HA_HEAP_ERROR;
        ha_err_set(err, errlen, "%s", j->err);
        live_job_discard(j);
        return rc;
    }
    if ((l = ha_profiles_load_new(heap, c, HA_HEAP_LIVE, true, false)) ==
        NULL) {
        live_job_discard(j);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    l->pr->ops = heap->ops;
    l->pr->taken_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    l->text = j->text;
    l->text_len = j->len;
    j->text = NULL;
    live_job_discard(j);
    return ha_profiles_run_load(l, out, err, errlen);
}

/* The delta's arithmetic on the worker: end's stacks become the delta
 * from base, and its threads are counted again. */
struct delta_job {
    struct ha_heap_profile *end, *base; /* references held */
    int rc;
    char err[512];
};

static void
delta_run(void *arg)
{
    struct delta_job *j = arg;
    struct ha_heapv2 d;
    struct ha_threads_row *rows = NULL;
    size_t n = 0;

    j->rc =
        ha_heapv2_delta(&j->end->p, &j->base->p, &d, j->err, sizeof(j->err));
    if (j->rc != 0)
        return;
    if (ha_threads_rows(&d, &rows, &n) != 0) {
        ha_heapv2_free(&d);
        j->rc = HA_DELTA_NOMEM;
        ha_strlcpy(j->err, "out of memory", sizeof(j->err));
        return;
    }
    /* The same frames, in the same places: the symbols' frame index
     * (ha_syms_set_frame_index) still holds. The maps text was parsed
     * into end->maps already. */
    free(d.maps);
    d.maps = j->end->p.maps;
    d.maps_len = j->end->p.maps_len;
    j->end->p.maps = NULL;
    ha_heapv2_free(&j->end->p);
    j->end->p = d;
    free(j->end->threads);
    j->end->threads = rows;
    j->end->n_threads = n;
}

static void
delta_discard(void *arg)
{
    struct delta_job *j = arg;

    ha_heap_profile_put(j->end);
    ha_heap_profile_put(j->base);
    free(j);
}

int
ha_heap_profile_delta(struct ha_heap *heap, int seconds, bool admin,
                      struct ha_heap_profile **out, int64_t *waited, char *err,
                      size_t errlen)
{
    struct ha_task *t = ha_task_current();
    struct ha_heap_profile *base = NULL, *end = NULL;
    struct delta_job *j;
    bool accum = false, active = false;
    int64_t since, t0, t1, window;
    int rc;

    *out = NULL;
    if (waited != NULL)
        *waited = 0;
    if (seconds < 1 || seconds > HA_HEAP_DELTA_MAX_S) {
        ha_err_set(err, errlen,
                   "seconds must be 1 to %d (the window of a "
                   "delta profile), not %d",
                   HA_HEAP_DELTA_MAX_S, seconds);
        return HA_HEAP_ERROR;
    }
    if (!admin) {
        ha_err_set(err, errlen,
                   "a delta of the live profile needs an "
                   "admin user");
        return HA_HEAP_ERROR;
    }
    if (heap->ops == NULL || !ha_mallctl_prof_enabled(heap->ops)) {
        ha_err_set(err, errlen,
                   "heap profiling is not available in this "
                   "process (opt.prof=false)");
        return HA_HEAP_CONFLICT;
    }
    if (ha_mallctl_read_bool(heap->ops, "opt.prof_accum", &accum) != 0 ||
        !accum) {
        ha_err_set(err, errlen,
                   "a delta needs cumulative counters, and "
                   "this process runs without prof_accum: "
                   "start it with prof_accum:true "
                   "(MALLOC_CONF, or jemalloc_variables."
                   "prof_accum)");
        return HA_HEAP_CONFLICT;
    }
    if (ha_mallctl_read_bool(heap->ops, "prof.active", &active) != 0 ||
        !active) {
        ha_err_set(err, errlen,
                   "sampling is off (prof.active=false): a "
                   "delta would count nothing; switch it on "
                   "first (SET jemalloc-prof_active=true)");
        return HA_HEAP_CONFLICT;
    }
    if (t == NULL) {
        ha_err_set(err, errlen,
                   "a delta profile waits, which only a "
                   "request can");
        return HA_HEAP_ERROR;
    }
    since = ha_mallctl_sampling_since(heap->ops);
    if ((rc = live_off_loop(heap, &base, &t0, err, errlen)) != 0)
        return rc;
    /* The window is waiting, not work: it does not count toward the
     * request's max_execution_time (a task's deadline, or a statement's:
     * *waited). It runs from the first dump, not from its load. */
    window = (int64_t)seconds * 1000000000;
    if (t->deadline_ns != 0)
        ha_task_set_deadline(t, t->deadline_ns + window);
    if (waited != NULL)
        *waited = window;
    if (ha_task_sleep(t, t0 + window - ha_clock_ns()) != 0) {
        ha_heap_profile_put(base);
        return HA_HEAP_STOPPED;
    }
    if ((rc = live_off_loop(heap, &end, &t1, err, errlen)) != 0) {
        ha_heap_profile_put(base);
        return rc;
    }
    active = false;
    if (ha_mallctl_sampling_since(heap->ops) != since ||
        ha_mallctl_read_bool(heap->ops, "prof.active", &active) != 0 ||
        !active) {
        ha_err_set(err, errlen,
                   "the heap profile was reset, or sampling "
                   "switched off and on, within the %d s "
                   "window: the counts do not cover it; ask "
                   "again",
                   seconds);
        rc = HA_HEAP_CONFLICT;
        goto fail;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        rc = HA_HEAP_ERROR;
        goto fail;
    }
    j->end = end;
    j->base = base;
    if (ha_task_offload(delta_run, delta_discard, j) != 0)
        return HA_HEAP_STOPPED;
    rc = j->rc;
    if (rc != 0) {
        ha_err_set(err, errlen, "%s", j->err);
        delta_discard(j);
        return rc == HA_DELTA_NOMEM ? HA_HEAP_ERROR : HA_HEAP_CONFLICT;
    }
    end->window_ns = t1 - t0;
    *out = end;
    j->end = NULL;
    delta_discard(j);
    return 0;
fail:
    ha_heap_profile_put(base);
    ha_heap_profile_put(end);
    return rc;
}
