/* SPDX-License-Identifier: MIT
 *
 * The limit watch's dumps: each one the look decided on, queued on the
 * disk worker at once (behind any still being written, at most
 * DUMPS_QUEUED), as the dump timer's automatic dump with trigger
 * "limit"; once written, counted and told to the owner's hook, which
 * records it in the run.
 */
#include "engine/limitwatch.h"
#include "engine/limitwatch_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "engine/dumptimer.h"

static void
dumped(void *arg, const char *file)
{
    struct limit_dump *d = arg;
    struct ha_limitwatch *w = d->w;

    for (size_t i = 0; i < DUMPS_QUEUED; i++)
        if (w->queued[i] == d)
            w->queued[i] = NULL;
    if (file != NULL) {
        const char *base = strrchr(file, '/');

        w->dumps++;
        ha_strlcpy(w->last_file, base != NULL ? base + 1 : file,
                   sizeof(w->last_file));
        ha_strlcpy(w->last_reason, d->reason, sizeof(w->last_reason));
        w->last_time = time(NULL);
        if (w->hooks.dumped != NULL)
            w->hooks.dumped(w->hooks.arg, w->last_file, &d->looked);
    }
    free(d);
}

/* A limit dump, decided on st (read at looked_ns, unix ns): queued on
 * the disk worker at once, behind any still being written, so a fast
 * climb is not held up by the dump of the level before. */
void
ha_limitwatch_dump_take(struct ha_limitwatch *w, const char *reason,
                        const struct ha_cgroup_state *st, int64_t looked_ns)
{
    struct limit_dump *d;
    size_t slot = DUMPS_QUEUED;

    for (size_t i = 0; i < DUMPS_QUEUED; i++)
        if (w->queued[i] == NULL)
            slot = i;
    if (slot == DUMPS_QUEUED || (d = calloc(1, sizeof(*d))) == NULL) {
        ha_log_warn("limit watch: %s: no limit dump (%s)", reason,
                    slot == DUMPS_QUEUED ? "the disk worker still has "
                                           "earlier ones to write"
                                         : "out of memory");
        return;
    }
    d->w = w;
    ha_strlcpy(d->reason, reason, sizeof(d->reason));
    d->looked.ns = looked_ns;
    d->looked.limit = ha_cgroup_limited(st) ? st->limit : -1;
    d->looked.usage = st->usage;
    d->looked.working_set = st->working_set;
    ha_log_notice("limit watch: %s: a limit dump", reason);
    d->req = ha_dumptimer_dump(
        w->worker, w->heap, "jemalloc_variables.limit_dump_fractions", "limit",
        reason, &d->looked, &w->low_space, dumped, d);
    if (d->req == NULL) {
        free(d); /* not queued (logged) */
        return;
    }
    w->queued[slot] = d;
}
