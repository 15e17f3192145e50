/* SPDX-License-Identifier: MIT
 *
 * A heap dump's work off the loop (see dumpjob.h).
 */
#include "heap/dumpjob.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/util.h"
#include "prof/buildid.h"
#include "heap/dumpfiles.h"
#include "heap/heap.h"
#include "heap/recentallocs.h"
#include "heap/sizeclasses.h"

void
ha_dump_job_init(struct ha_dump_job *j, const struct ha_heap *heap,
                 const char *variable, const char *trigger)
{
    j->ops = heap->ops;
    j->variable = variable;
    j->trigger = trigger;
    j->cgroup = heap->cgroup;
}

/* What memory looks like just before the dump: resident, the cgroup
 * (as the watch that asked for the dump saw it, when one did), jemalloc's
 * allocated bytes and the bins (a fresh epoch), for <dump>.mem. */
static void
measure(struct ha_dump_job *j)
{
    struct ha_dumpmem *m = &j->mem;
    struct ha_sizeclasses cl;
    struct timespec now;

    ha_dumpmem_init(m);
    if (clock_gettime(CLOCK_REALTIME, &now) == 0)
        m->taken_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    ha_strlcpy(m->trigger, j->trigger != NULL ? j->trigger : "manual",
               sizeof(m->trigger));
    ha_strlcpy(m->reason, j->reason, sizeof(m->reason));
    m->resident = ha_dumpfiles_resident();
    if (j->cgroup.version != 0) {
        struct ha_cgroup_state st;

        ha_cgroup_sample(&j->cgroup, &st);
        m->cgroup_version = st.version;
        ha_strlcpy(m->cgroup_path, j->cgroup.path, sizeof(m->cgroup_path));
        m->cgroup_limit = st.limit;
        m->cgroup_usage = st.usage;
        m->cgroup_working_set = st.working_set;
    }
    m->sampling_since = ha_mallctl_sampling_since(j->ops);
    if (j->looked.ns > 0) {
        m->cgroup_looked_ns = j->looked.ns;
        m->cgroup_limit = j->looked.limit;
        m->cgroup_usage = j->looked.usage;
        m->cgroup_working_set = j->looked.working_set;
    }
    memset(&cl, 0, sizeof(cl));
    if (ha_mallctl_epoch(j->ops) == 0) {
        size_t allocated = 0;

        if (ha_mallctl_read_size(j->ops, "stats.allocated", &allocated) == 0)
            m->allocated = (int64_t)allocated;
        if (ha_sizeclasses_load(j->ops, &cl))
            (void)ha_sizeclasses_read_bins(j->ops, &cl, m->bins,
                                           HA_DUMPMEM_BINS_MAX, &m->n_bins);
    }
    ha_sizeclasses_free(&cl);
}

/* <file>.mem from j->mem and the live samples' sizes read just after
 * the dump (replacing the hook's shorter note, when the dump was not
 * staged). */
static void
record_memory(struct ha_dump_job *j, const struct ha_livesizes *sizes)
{
    char text[8192];
    int len = ha_dumpmem_format(&j->mem, text, sizeof(text));
    struct ha_buf b = HA_BUF_INIT;
    int rc;

    if (len < 0)
        return;
    /* out of memory for the sizes still records the rest */
    ha_buf_append(&b, text, (size_t)len);
    if (ha_livesizes_format(sizes, &b) != 0 || ha_buf_failed(&b)) {
        ha_buf_reset(&b);
        ha_buf_append(&b, text, (size_t)len);
    }
    if (ha_buf_failed(&b)) {
        ha_buf_free(&b);
        return;
    }
    rc = ha_dumpfiles_write_sidecar(j->file, HA_DUMPMEM_SUFFIX,
                                    (const char *)b.data, b.len);
    if (rc == EEXIST) {
        char path[PATH_MAX];

        if ((size_t)snprintf(path, sizeof(path), "%s%s", j->file,
                             HA_DUMPMEM_SUFFIX) < sizeof(path))
            unlink(path);
        rc = ha_dumpfiles_write_sidecar(j->file, HA_DUMPMEM_SUFFIX,
                                        (const char *)b.data, b.len);
    }
    ha_buf_free(&b);
    if (rc != 0)
        ha_log_warn("%s: memory at dump time not recorded: %s", j->file,
                    strerror(rc));
}

/* Is free space below the floor? Logs each skip, and an episode's end
 * (when j->low_space says one was on). */
static bool
below_floor(struct ha_dump_job *j, const char *prefix, const char *what)
{
    long long floor = j->min_free_bytes;
    long long avail = floor > 0 ? ha_dumpfiles_free_bytes(prefix) : -1;

    if (floor <= 0 || avail < 0 || avail >= floor) {
        if (j->low_space && floor > 0 && avail >= 0)
            ha_log_notice("automatic dumps resume: %lld bytes free for %s "
                          "(dump_min_free_bytes = %lld)",
                          avail, prefix, floor);
        j->low_space = false;
        return false;
    }
    ha_log_warn("%s skipped: %lld bytes free for %s, below "
                "jemalloc_variables.dump_min_free_bytes = %lld",
                what, avail, prefix, floor);
    j->low_space = true;
    return true;
}

void
ha_dump_job_run(void *arg)
{
    struct ha_dump_job *j = arg;
    char prefix[PATH_MAX], why[512];
    struct ha_livesizes sizes;
    bool have_prefix =
        ha_mallctl_prof_prefix(j->ops, prefix, sizeof(prefix)) == 0;

    j->rc = -1;
    j->skipped = false;
    j->bytes = -1;
    j->file[0] = j->err[0] = '\0';
    if (!j->dump) {
        /* jemalloc's own interval and high-water dumps since the last
         * look: over the floor they are removed, as skipped. */
        if (have_prefix &&
            below_floor(j, prefix, "jemalloc's interval dumps are"))
            (void)ha_dumpfiles_drop_automatic(prefix, (long)getpid(),
                                              j->drop_since);
        if (have_prefix && j->retain)
            (void)ha_dumpfiles_retain(prefix, j->retention_count,
                                      j->retention_bytes);
        j->rc = 0;
        return;
    }
    if (have_prefix && below_floor(j, prefix, j->what[0] ? j->what
                                                         : j->variable)) {
        j->skipped = true;
        ha_err_set(j->err, sizeof(j->err),
                   "%s: skipped, less than dump_min_free_bytes = %lld "
                   "free for %s",
                   j->variable, j->min_free_bytes, prefix);
        return;
    }
    measure(j);
    if (ha_mallctl_dump(j->ops, j->variable, j->file, sizeof(j->file),
                        j->err, sizeof(j->err)) != 0) {
        if (j->what[0] != '\0')
            ha_log_warn("%s failed: %s", j->what, j->err);
        j->file[0] = '\0';
        return;
    }
    /* At once, while the samples are as the dump saw them:
     * heap_fragmentation places each by its own size with these
     * (prof/fragment.h). */
    (void)ha_recent_live_sizes(j->ops, &sizes);
    /* Dumps carry no build-ids: record what was running beside the dump,
     * so a later read can tell an upgraded binary from the one that
     * wrote it. A dump without it is still a dump. */
    if (j->file[0] == '/' &&
        ha_buildid_record(j->file, why, sizeof(why)) != 0)
        ha_log_warn("%s: build-ids not recorded: %s", j->file, why);
    else if (j->file[0] == '/')
        (void)ha_dumpfiles_sidecar_perms(j->file, ".buildid");
    if (j->file[0] == '/') {
        struct stat sb;

        record_memory(j, &sizes);
        if (stat(j->file, &sb) == 0)
            j->bytes = (long long)sb.st_size;
    }
    ha_livesizes_free(&sizes);
    if (j->what[0] != '\0')
        ha_log_notice("%s: heap profile written to %s", j->what, j->file);
    if (have_prefix && j->retain)
        (void)ha_dumpfiles_retain(prefix, j->retention_count,
                                  j->retention_bytes);
    j->rc = 0;
}
