/* SPDX-License-Identifier: MIT
 *
 * Lifetime logs as loaded profiles (see lifelogs.h).
 */
#include "heap/lifelogs.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/task.h"
#include "core/util.h"
#include "prof/dumpfile.h"
#include "prof/traces.h"

/* Reads pr's side file "<name><suffix>" of kind; NULL when missing. */
static char *
side_file(const struct ha_heap *heap, const struct ha_heap_profile *pr,
          const char *suffix, enum ha_dumpfile_kind kind, size_t *len)
{
    char name[NAME_MAX + 16], *buf = NULL;
    struct stat st;

    if ((size_t)snprintf(name, sizeof(name), "%s%s", pr->name, suffix) >=
            sizeof(name) ||
        ha_dumpfile_read(heap->datadir, name, kind, &buf, len, &st, NULL,
                         0) != 0)
        return NULL;
    return buf;
}

int
ha_lifelog_parse(struct ha_heap *heap, struct ha_heap_profile *pr,
                 const char *buf, size_t len, char *err, size_t errlen)
{
    struct ha_proflog *log = calloc(1, sizeof(*log));
    double *objs = NULL, *bytes = NULL;
    char *maps = NULL, *win = NULL, why[256];
    size_t maps_len = 0, win_len = 0;
    uint64_t period;
    int ret = -1;

    if (log == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    if (ha_proflog_parse(buf, len, log, err, errlen) != 0) {
        free(log);
        return -1;
    }
    pr->log = log;
    period = ha_proflog_period(log);
    /* Each trace's freed objects and bytes as its stack's counters (so a
     * profile's totals mean something too). */
    objs = calloc(log->traces.n ? log->traces.n : 1, sizeof(*objs));
    bytes = calloc(log->traces.n ? log->traces.n : 1, sizeof(*bytes));
    if (objs == NULL || bytes == NULL)
        goto oom;
    for (size_t i = 0; i < log->n_allocs; i++) {
        const struct ha_proflog_alloc *a = &log->allocs[i];
        double w = ha_proflog_weight(period, a->usize);

        objs[a->alloc_trace] += w;
        bytes[a->alloc_trace] += w * (double)a->usize;
    }
    maps = side_file(heap, pr, ".maps", HA_DUMPFILE_LOG_MAPS, &maps_len);
    if (ha_traces_as_heapv2(&log->traces, objs, bytes, period,
                            maps != NULL ? maps : "", maps_len,
                            &pr->p) != 0)
        goto oom;
    win = side_file(heap, pr, ".window", HA_DUMPFILE_LOG_WINDOW, &win_len);
    if (win != NULL &&
        ha_proflog_window_parse(win, win_len, &pr->window, why,
                                sizeof(why)) == 0)
        pr->has_window = true;
    if (pr->has_window && pr->window.closed_ns > 0)
        pr->taken_ns = pr->window.closed_ns;
    ret = 0;
    goto out;
oom:
    ha_err_set(err, errlen, "out of memory");
out:
    free(objs);
    free(bytes);
    free(maps);
    free(win);
    return ret;
}

/* ------------------------------------------------------------------
 * Lifetimes, off the loop, kept with the profile
 * ------------------------------------------------------------------ */

struct life_job {
    struct ha_heap_profile *pr;   /* a reference held for the job */
    bool per_stack;
    struct ha_lifetimes *l;
    int rc;
    char err[256];
};

static void
life_run(void *arg)
{
    struct life_job *j = arg;
    struct ha_life_opts o = {j->per_stack, NAN};

    j->rc = -1;
    if (j->pr->has_window)
        o.events_per_s = ha_proflog_window_events_per_s(&j->pr->window);
    if ((j->l = calloc(1, sizeof(*j->l))) == NULL) {
        ha_err_set(j->err, sizeof(j->err), "out of memory");
        return;
    }
    j->rc = ha_lifetimes_build(j->pr->log, &j->pr->p, &j->pr->syms, &o,
                               j->l, j->err, sizeof(j->err));
}

/* On the loop: keeps the rows with the profile unless some landed. */
static void
life_land(struct life_job *j)
{
    struct ha_lifetimes **slot = &j->pr->life[j->per_stack];

    if (j->rc == 0 && *slot == NULL) {
        *slot = j->l;
        j->l = NULL;
    }
    if (j->l != NULL) {
        ha_lifetimes_free(j->l);
        free(j->l);
        j->l = NULL;
    }
}

static void
life_discard(void *arg)
{
    struct life_job *j = arg;

    life_land(j);
    ha_heap_profile_put(j->pr);
    free(j);
}

int
ha_heap_profile_lifetimes(struct ha_heap_profile *pr, bool per_stack,
                          const struct ha_lifetimes **out, char *err,
                          size_t errlen)
{
    struct life_job *j;
    int rc;

    *out = pr->life[per_stack];
    if (*out != NULL)
        return 0;
    if (pr->log == NULL) {
        ha_err_set(err, errlen, "%s is not a lifetime log", pr->name);
        return HA_HEAP_ERROR;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        return HA_HEAP_ERROR;
    }
    j->pr = ha_heap_profile_ref(pr);
    j->per_stack = per_stack;
    if (ha_task_offload(life_run, life_discard, j) != 0)
        return HA_HEAP_STOPPED;
    rc = j->rc;
    if (rc != 0)
        ha_err_set(err, errlen, "%s: %s", pr->name, j->err);
    life_land(j);
    ha_heap_profile_put(pr);
    free(j);
    if (rc != 0 || pr->life[per_stack] == NULL)
        return HA_HEAP_ERROR;
    *out = pr->life[per_stack];
    return 0;
}

size_t
ha_lifelog_bytes(const struct ha_heap_profile *pr)
{
    size_t b = 0;

    if (pr->log != NULL)
        b += sizeof(*pr->log) + pr->log->n_allocs * sizeof(*pr->log->allocs) +
             pr->log->n_threads * sizeof(*pr->log->threads) +
             pr->log->names.buf.cap + pr->log->traces.cap_frames * 8 +
             pr->log->traces.cap * 8 + pr->log->traces.index_cap * 4;
    for (int k = 0; k < 2; k++)
        if (pr->life[k] != NULL)
            b += sizeof(*pr->life[k]) +
                 pr->life[k]->n_rows * sizeof(*pr->life[k]->rows) +
                 pr->life[k]->names.buf.cap + pr->life[k]->names.n_slots * 4;
    return b;
}

void
ha_lifelog_free(struct ha_heap_profile *pr)
{
    if (pr->log != NULL) {
        ha_proflog_free(pr->log);
        free(pr->log);
        pr->log = NULL;
    }
    for (int k = 0; k < 2; k++)
        if (pr->life[k] != NULL) {
            ha_lifetimes_free(pr->life[k]);
            free(pr->life[k]);
            pr->life[k] = NULL;
        }
}
