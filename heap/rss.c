/* SPDX-License-Identifier: MIT
 *
 * Where this process's resident memory goes (rss.h): jemalloc's figures
 * from one refresh of its statistics, with the merged bins' free
 * regions, and /proc/self/smaps or status, put together by
 * prof/breakdown.h.
 */
#include "heap/rss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/task.h"
#include "core/util.h"
#include "heap/mallctl.h"
#include "heap/sizeclasses.h"
#include "prof/fragment.h"
#include "prof/smaps.h"


static bool
read_z(const struct ha_mallctl_ops *ops, const char *name, uint64_t *out)
{
    size_t v;

    if (ha_mallctl_read_size(ops, name, &v) != 0)
        return false;
    *out = v;
    return true;
}

/* The merged bins: fragmentation in slabs and its worst size class. */
static void
read_bins(const struct ha_mallctl_ops *ops, struct ha_breakdown_in *in)
{
    struct ha_dumpmem_bin bins[HA_DUMPMEM_BINS_MAX];
    struct ha_sizeclasses cl;
    size_t n = 0;

    memset(&cl, 0, sizeof(cl));
    if (!ha_sizeclasses_load(ops, &cl) ||
        ha_sizeclasses_read_bins(ops, &cl, bins, HA_DUMPMEM_BINS_MAX, &n) !=
            0)
        goto out;
    for (size_t j = 0; j < n; j++) {
        uint64_t free_b = ha_frag_class_free(&bins[j]);

        in->slab_free += free_b;
        if (free_b > in->worst_free) {
            in->worst_free = free_b;
            in->worst_size = bins[j].size;
            in->worst_slabs = bins[j].curslabs;
            in->worst_util = ha_frag_utilization(&bins[j]) > 0
                                 ? ha_frag_utilization(&bins[j])
                                 : 0;
        }
    }
    in->have_bins = true;
out:
    ha_sizeclasses_free(&cl);
}

/* merged - own, floored at 0 (the two are read one after the other). */
static uint64_t
less(uint64_t merged, uint64_t own)
{
    return merged > own ? merged - own : 0;
}

/* heapadmin's own arena, where it is apart (api/arena.h): stats.* come
 * back without its share already, and so do the bins
 * (ha_sizeclasses_read_bins); the merged arena figures read here do not,
 * so its share is taken off them too, else its dirty pages (say) would
 * count twice, in jemalloc.dirty and in the heapadmin row. */
static void
read_own(const struct ha_mallctl_ops *ops, uint64_t page,
         struct ha_breakdown_in *in)
{
    unsigned own;
    uint64_t v;
    char name[96];

    if (ha_mallctl_read_unsigned(ops, HA_MALLCTL_OWN_ARENA, &own) != 0 ||
        !read_z(ops, "heapadmin.resident", &in->own_resident))
        return;
    in->have_own = true;
    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", own);
    if (read_z(ops, name, &v))
        in->dirty = less(in->dirty, v * page);
    snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", own);
    if (read_z(ops, name, &v))
        in->muzzy = less(in->muzzy, v * page);
    snprintf(name, sizeof(name), "stats.arenas.%u.internal", own);
    if (read_z(ops, name, &v))
        in->internal = less(in->internal, v);
    snprintf(name, sizeof(name), "stats.arenas.%u.tcache_bytes", own);
    if (read_z(ops, name, &v))
        in->tcache = less(in->tcache, v);
    snprintf(name, sizeof(name), "stats.arenas.%u.tcache_stashed_bytes",
             own);
    if (read_z(ops, name, &v))
        in->tcache = less(in->tcache, v);
}

static void
read_jemalloc(struct ha_heap *heap, bool refresh,
              struct ha_breakdown_in *in)
{
    const struct ha_mallctl_ops *ops = heap->ops;
    uint64_t page = 0, pdirty = 0, pmuzzy = 0, stashed = 0;

    if (ops == NULL)
        return;
    if (refresh)
        ha_heap_refresh_stats(heap);
    in->have_jemalloc =
        read_z(ops, "stats.allocated", &in->allocated) &&
        read_z(ops, "stats.active", &in->active) &&
        read_z(ops, "stats.metadata", &in->metadata) &&
        read_z(ops, "stats.resident", &in->resident) &&
        read_z(ops, "stats.mapped", &in->mapped) &&
        read_z(ops, "stats.retained", &in->retained) &&
        read_z(ops, "arenas.page", &page) &&
        read_z(ops, "stats.arenas.4096.pdirty", &pdirty) &&
        read_z(ops, "stats.arenas.4096.pmuzzy", &pmuzzy);
    if (!in->have_jemalloc)
        return;
    in->dirty = pdirty * page;
    in->muzzy = pmuzzy * page;
    (void)read_z(ops, "stats.arenas.4096.internal", &in->internal);
    (void)read_z(ops, "stats.arenas.4096.tcache_bytes", &in->tcache);
    if (read_z(ops, "stats.arenas.4096.tcache_stashed_bytes", &stashed))
        in->tcache += stashed;
    in->dirty_decay_ms = in->muzzy_decay_ms = -1;
    (void)ha_mallctl_read_ssize(ops, "arenas.dirty_decay_ms",
                                &in->dirty_decay_ms);
    (void)ha_mallctl_read_ssize(ops, "arenas.muzzy_decay_ms",
                                &in->muzzy_decay_ms);
    (void)ha_mallctl_read_unsigned(ops, "arenas.narenas", &in->narenas);
    read_own(ops, page, in);
    read_bins(ops, in);
}

/* The worker's job: /proc/self/smaps into memory it owns. */
struct smaps_job {
    struct ha_smaps smaps;
    int rc;
    char err[256];
};

static void
smaps_run(void *arg)
{
    struct smaps_job *j = arg;

    j->rc = ha_smaps_read(HA_RSS_SMAPS, &j->smaps, j->err, sizeof(j->err));
}

int
ha_rss_read(struct ha_heap *heap, bool refresh, bool detailed,
            struct ha_breakdown_row *rows, char *err, size_t errlen)
{
    struct ha_breakdown_in in;
    struct ha_cgroup_state cg;
    struct smaps_job *j;

    memset(&in, 0, sizeof(in));
    read_jemalloc(heap, refresh, &in);
    /* The cgroup's files: the kernel's counters, no walk. */
    ha_cgroup_sample(&heap->cgroup, &cg);
    in.cgroup_version = cg.version;
    in.cgroup_path = heap->cgroup.path;
    in.limit_path = cg.limit_path;
    in.cgroup_limit = ha_cgroup_limited(&cg) ? cg.limit : -1;
    in.cgroup_usage = cg.usage;
    in.cgroup_working_set = cg.working_set;
    if (!detailed) {
        char why[256];

        in.have_smaps = ha_smaps_read_status(HA_RSS_STATUS, &in.smaps, why,
                                             sizeof(why)) == 0;
        ha_breakdown_compute(&in, rows);
        return 0;
    }
    if ((j = calloc(1, sizeof(*j))) != NULL) {
        /* On -1 the job is the worker's to finish and free. */
        if (ha_task_offload(smaps_run, free, j) != 0) {
            ha_err_set(err, errlen, "stopped while reading %s",
                       HA_RSS_SMAPS);
            return -1;
        }
        if (j->rc == 0) {
            in.have_smaps = true;
            in.smaps = j->smaps;
        }
        free(j);
    }
    ha_breakdown_compute(&in, rows);
    return 0;
}
