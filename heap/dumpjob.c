/* SPDX-License-Identifier: MIT
 *
 * A heap dump's work off the loop (see dumpjob.h).
 */
#include "heap/dumpjob.h"

#include <stdio.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "prof/buildid.h"
#include "heap/dumpfiles.h"

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
    bool have_prefix =
        ha_mallctl_prof_prefix(j->ops, prefix, sizeof(prefix)) == 0;

    j->rc = -1;
    j->skipped = false;
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
    if (ha_mallctl_dump(j->ops, j->variable, j->file, sizeof(j->file),
                        j->err, sizeof(j->err)) != 0) {
        if (j->what[0] != '\0')
            ha_log_warn("%s failed: %s", j->what, j->err);
        j->file[0] = '\0';
        return;
    }
    /* Dumps carry no build-ids: record what was running beside the dump,
     * so a later read can tell an upgraded binary from the one that
     * wrote it. A dump without it is still a dump. */
    if (j->file[0] == '/' &&
        ha_buildid_record(j->file, why, sizeof(why)) != 0)
        ha_log_warn("%s: build-ids not recorded: %s", j->file, why);
    else if (j->file[0] == '/')
        (void)ha_dumpfiles_sidecar_perms(j->file, ".buildid");
    if (j->what[0] != '\0')
        ha_log_notice("%s: heap profile written to %s", j->what, j->file);
    if (have_prefix && j->retain)
        (void)ha_dumpfiles_retain(prefix, j->retention_count,
                                  j->retention_bytes);
    j->rc = 0;
}
