/* SPDX-License-Identifier: MIT
 *
 * The recent allocations, read and named off the loop (see
 * recentallocs.h).
 */
#include "heap/recentallocs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/aggregate.h"
#include "prof/maps.h"
#include "prof/proflog.h"
#include "prof/symbolize.h"
#include "prof/traces.h"
#include "heap/mallctl.h"
#include "heap/profiles.h"

/* jemalloc's write callback: its chunks appended (it may allocate: the
 * callback runs outside jemalloc's recent-list lock). */
static void
collect(void *arg, const char *text)
{
    ha_buf_append_str(arg, text);
}

static int
read_maps(struct ha_buf *out)
{
    char chunk[65536];
    ssize_t n;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        ha_buf_append(out, chunk, (size_t)n);
    close(fd);
    return n < 0 || ha_buf_failed(out) ? -1 : 0;
}

static int64_t
clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct recent_job {
    struct ha_heap *heap;         /* ops; its symbolizer is the worker's */
    char wrappers[HA_WRAP_TEXT_MAX]; /* heap->alloc_wrappers, copied on
                                     the loop */
    struct ha_recent_allocs *r;
    int rc;
    char err[512];
};

/* Names every trace: site and collapsed stack. */
static int
name_traces(struct ha_recent_allocs *r, const struct ha_heapv2 *p,
            const struct ha_syms *syms, uint32_t *site, uint32_t *stack)
{
    struct ha_agg_walker *w = ha_agg_walker_new(syms);
    struct ha_buf b = HA_BUF_INIT;
    int ret = -1;

    if (w == NULL)
        return -1;
    for (size_t i = 0; i < p->n_stacks; i++) {
        int rc = ha_agg_walker_site(w, p, i, &b);

        if (rc < 0)
            goto out;
        site[i] = rc == 1 ? 0
                          : ha_strtab_intern(&r->names, (const char *)b.data,
                                             b.len);
        if (site[i] == UINT32_MAX || ha_agg_walker_collapsed(w, p, i, &b) != 0)
            goto out;
        stack[i] = ha_strtab_intern(&r->names, (const char *)b.data, b.len);
        if (stack[i] == UINT32_MAX)
            goto out;
    }
    ret = 0;
out:
    ha_buf_free(&b);
    ha_agg_walker_free(w);
    return ret;
}

static void
recent_run(void *arg)
{
    struct recent_job *j = arg;
    const struct ha_mallctl_ops *ops = j->heap->ops;
    struct ha_buf doc = HA_BUF_INIT, maps_text = HA_BUF_INIT;
    struct ha_recent_allocs *r = calloc(1, sizeof(*r));
    struct ha_heapv2 p = {0};
    struct ha_maps m = {0};
    struct ha_syms syms = {0};
    struct ha_symbolize_ops sops;
    uint64_t *pcs = NULL;
    uint32_t *index = NULL, *site = NULL, *stack = NULL;
    size_t n_pcs = 0;
    const char *res = NULL;
    bool high;
    int64_t mono, real, offset;
    char why[256];
    int rc;

    j->rc = -1;
    if (r == NULL)
        goto oom;
    j->r = r;
    rc = ha_mallctl_recent_dump(ops, collect, &doc);
    if (rc != 0) {
        struct ha_mallctl_failure f = {rc,
                                       "experimental.prof_recent.alloc_dump",
                                       NULL, NULL, NULL,
                                       ha_mallctl_prof_built(ops)};

        ha_mallctl_errmsg(&f, j->err, sizeof(j->err));
        return;
    }
    /* The clocks' offset, read with the document: jemalloc's default is
     * CLOCK_MONOTONIC_COARSE, prof_time_resolution:high is CLOCK_REALTIME. */
    high = ha_mallctl_read_str(ops, "opt.prof_time_resolution", &res) == 0 &&
           strcmp(res, "high") == 0;
    real = clock_ns(CLOCK_REALTIME);
    mono = high ? real : clock_ns(CLOCK_MONOTONIC_COARSE);
    offset = real - mono;
    if (ha_buf_failed(&doc))
        goto oom;
    if (ha_recent_parse((const char *)doc.data, doc.len, &r->recent, why,
                        sizeof(why)) != 0) {
        ha_err_set(j->err, sizeof(j->err),
                   "jemalloc's recent allocations do not read: %s", why);
        return;
    }
    if (read_maps(&maps_text) != 0 ||
        ha_traces_as_heapv2(&r->recent.traces, NULL, NULL,
                            r->recent.sample_interval,
                            (const char *)maps_text.data, maps_text.len,
                            &p) != 0 ||
        ha_maps_parse(p.maps, p.maps_len, &m, why, sizeof(why)) != 0) {
        ha_err_set(j->err, sizeof(j->err),
                   "cannot read this process's mappings");
        goto out;
    }
    if (ha_heap_symbolizer(j->heap) == NULL ||
        ha_agg_lookup_index(&p, &pcs, &n_pcs, &index) != 0)
        goto oom;
    sops = ha_symbolizer_ops(j->heap->symbolizer);
    if (sops.symbolize(sops.ctx, &m, pcs, n_pcs, &syms, why, sizeof(why)) !=
        0) {
        ha_err_set(j->err, sizeof(j->err), "%s", why);
        goto out;
    }
    ha_syms_set_frame_index(&syms, pcs, n_pcs, index, p.n_frames);
    index = NULL;
    if (ha_heap_wrappers_make(j->wrappers, "stats_jemalloc_recent", &p,
                              &syms, j->err, sizeof(j->err)) != 0)
        goto out;
    site = calloc(p.n_stacks ? p.n_stacks : 1, sizeof(*site));
    stack = calloc(p.n_stacks ? p.n_stacks : 1, sizeof(*stack));
    r->rows = calloc(r->recent.n ? r->recent.n : 1, sizeof(*r->rows));
    if (site == NULL || stack == NULL || r->rows == NULL ||
        name_traces(r, &p, &syms, site, stack) != 0)
        goto oom;
    for (size_t i = 0; i < r->recent.n; i++) {
        const struct ha_recent_rec *x = &r->recent.recs[i];
        struct ha_recent_row *row = &r->rows[i];

        row->rec = x;
        row->alloc_s = (double)((int64_t)x->alloc_ns + offset) / 1e9;
        row->age_ms = (double)(mono - (int64_t)x->alloc_ns) / 1e6;
        if (row->age_ms < 0)
            row->age_ms = 0;
        row->objects =
            ha_proflog_weight(r->recent.sample_interval, x->usize);
        row->site = site[x->alloc_trace];
        row->stack = stack[x->alloc_trace];
        if (x->released && x->has_dalloc) {
            row->free_s = (double)((int64_t)x->dalloc_ns + offset) / 1e9;
            if (x->dalloc_trace != HA_RECENT_NO_TRACE) {
                row->free_site = site[x->dalloc_trace];
                row->free_stack = stack[x->dalloc_trace];
            }
        }
    }
    j->rc = 0;
    goto out;
oom:
    ha_err_set(j->err, sizeof(j->err), "out of memory");
out:
    free(site);
    free(stack);
    free(pcs);
    free(index);
    ha_syms_free(&syms);
    ha_maps_free(&m);
    ha_heapv2_free(&p);
    ha_buf_free(&doc);
    ha_buf_free(&maps_text);
}

static void
recent_discard(void *arg)
{
    struct recent_job *j = arg;

    ha_recent_allocs_free(j->r);
    free(j);
}

/* No records to show, and why. */
static int
none(struct ha_recent_allocs **out, const char **why, const char *reason,
     char *err, size_t errlen)
{
    if (why != NULL)
        *why = reason;
    if ((*out = calloc(1, sizeof(**out))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    return 0;
}

int
ha_heap_recent_allocs(struct ha_heap *heap, struct ha_recent_allocs **out,
                      const char **why, char *err, size_t errlen)
{
    struct recent_job *j;
    ssize_t max = 0;

    *out = NULL;
    if (why != NULL)
        *why = NULL;
    if (heap->ops == NULL || !ha_mallctl_prof_enabled(heap->ops))
        return none(out, why, "profiling is off (opt.prof=false)", err,
                    errlen);
    if (ha_mallctl_read_ssize(heap->ops, "experimental.prof_recent.alloc_max",
                              &max) != 0)
        return none(out, why, "this jemalloc keeps no recent allocations "
                              "(jemalloc 5.3 has them)",
                    err, errlen);
    if (max == 0)
        return none(out, why, "jemalloc-recent_alloc_max is 0: jemalloc "
                              "keeps no recent allocations",
                    err, errlen);
    /* Made on the loop before any job uses it (heap/profiles.h). */
    if (ha_heap_symbolizer(heap) == NULL || (j = calloc(1, sizeof(*j))) ==
                                                NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->heap = heap;
    ha_strlcpy(j->wrappers, heap->alloc_wrappers, sizeof(j->wrappers));
    if (ha_task_offload(recent_run, recent_discard, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        ha_err_set(err, errlen, "%s", j->err);
        recent_discard(j);
        return HA_HEAP_ERROR;
    }
    *out = j->r;
    free(j);
    return 0;
}

void
ha_recent_allocs_free(struct ha_recent_allocs *r)
{
    if (r == NULL)
        return;
    ha_recent_free(&r->recent);
    ha_strtab_free(&r->names);
    free(r->rows);
    free(r);
}

int
ha_recent_live_sizes(const struct ha_mallctl_ops *ops,
                     struct ha_livesizes *out)
{
    struct ha_buf doc = HA_BUF_INIT;
    struct ha_recent r;
    ssize_t max = 0;
    char why[192];
    int rc;

    memset(out, 0, sizeof(*out));
    if (ops == NULL || !ha_mallctl_prof_enabled(ops)) {
        ha_livesizes_set_off(out, "profiling is off (opt.prof=false)");
        return 0;
    }
    if (ha_mallctl_read_ssize(ops, "experimental.prof_recent.alloc_max",
                              &max) != 0) {
        ha_livesizes_set_off(out, "this jemalloc keeps no recent "
                                  "allocations (jemalloc 5.3 has them)");
        return 0;
    }
    if (max == 0) {
        ha_livesizes_set_off(out, "jemalloc-recent_alloc_max is 0");
        return 0;
    }
    if ((rc = ha_mallctl_recent_dump(ops, collect, &doc)) != 0) {
        snprintf(why, sizeof(why), "experimental.prof_recent.alloc_dump: "
                                   "%s",
                 strerror(rc));
        ha_livesizes_set_off(out, why);
        ha_buf_free(&doc);
        return 0;
    }
    if (ha_buf_failed(&doc)) {
        ha_buf_free(&doc);
        ha_livesizes_set_off(out, "out of memory reading them");
        return -1;
    }
    if (ha_recent_parse((const char *)doc.data, doc.len, &r, why,
                        sizeof(why)) != 0) {
        char msg[256];

        snprintf(msg, sizeof(msg), "jemalloc's records do not read: %s",
                 why);
        ha_livesizes_set_off(out, msg);
        ha_buf_free(&doc);
        return 0;
    }
    ha_buf_free(&doc);
    rc = ha_livesizes_from_recent(&r, out);
    ha_recent_free(&r);
    if (rc != 0)
        ha_livesizes_set_off(out, "out of memory reading them");
    return rc;
}
