/* SPDX-License-Identifier: MIT
 *
 * The limit watch's state as jemalloc-limit_watch_state shows it: the
 * working set against the limit, the levels and which have passed, the
 * sampling and the pressure read, the limit dumps so far.
 */
#include "engine/limitwatch.h"
#include "engine/limitwatch_int.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "heap/mallctl.h"
#include "prof/breakdown.h"

static double
share(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0;
}

/* "sampling on (lg_prof_sample 19)", or why the watch does not sample,
 * and the pressure it reads, for its state. */
static void
sampling_state(const struct ha_limitwatch *w, char *buf, size_t len)
{
    bool active = false;
    size_t rate = 0;

    (void)ha_mallctl_read_bool(w->heap->ops, "prof.active", &active);
    (void)ha_mallctl_read_size(w->heap->ops, "prof.lg_sample", &rate);
    if (active)
        snprintf(buf, len, "sampling on (lg_prof_sample %zu)%s", rate,
                 w->holding ? "" : ", the operator's");
    else
        snprintf(buf, len, "%s",
                 w->sampling_note[0] ? w->sampling_note
                                     : "sampling off (switched off by the "
                                       "operator: limit dumps hold nothing "
                                       "sampled since)");
    if (w->psi_note[0] != '\0') {
        size_t n = strlen(buf);

        snprintf(buf + n, len - n, "; %s", w->psi_note);
    }
}

bool
ha_limitwatch_value(const void *arg, const char *name, char *buf, size_t len)
{
    const struct ha_limitwatch *w = arg;
    char ws[32], lim[32], levels[96], t[32], smp[PATH_MAX + 512];
    size_t at = 0;

    if (name == NULL || strcmp(name, "jemalloc-limit_watch_state") != 0)
        return false;
    if (w == NULL) {
        ha_strlcpy(buf, "off", len);
        return true;
    }
    if (!w->have_last || !ha_cgroup_limited(&w->last)) {
        snprintf(buf, len, "watching for a memory limit: %s",
                 w->heap->cgroup.version == 0 ? "no memory cgroup"
                                              : "its cgroup sets none now");
        return true;
    }
    levels[0] = '\0';
    for (size_t i = 0; i < w->rule.n && at < sizeof(levels); i++)
        at += (size_t)snprintf(levels + at, sizeof(levels) - at, "%s%.2f%s",
                               i ? " " : "", w->rule.fractions[i],
                               w->arm.armed[i] ? "" : " (passed)");
    ha_breakdown_format_bytes(w->last.working_set, ws, sizeof(ws));
    ha_breakdown_format_bytes(w->last.limit, lim, sizeof(lim));
    sampling_state(w, smp, sizeof(smp));
    if (w->dumps > 0) {
        (void)ha_utc_stamp(t, sizeof(t), w->last_time, ' ');
        snprintf(buf, len,
                 "watching: working set %s of %s (%.0f%%, cgroup v%d %s); "
                 "levels %s; %s; %lld limit dump%s, last %s at %s UTC: %s",
                 ws, lim, share(w->last.working_set, w->last.limit) * 100,
                 w->last.version, w->last.limit_path,
                 levels[0] ? levels : "none", smp, w->dumps,
                 w->dumps == 1 ? "" : "s", w->last_file, t, w->last_reason);
    } else {
        snprintf(buf, len,
                 "watching: working set %s of %s (%.0f%%, cgroup v%d %s); "
                 "levels %s; %s; no limit dump yet",
                 ws, lim, share(w->last.working_set, w->last.limit) * 100,
                 w->last.version, w->last.limit_path,
                 levels[0] ? levels : "none", smp);
    }
    return true;
}
