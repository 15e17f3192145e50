/* SPDX-License-Identifier: MIT
 *
 * Fragmentation by call site, off the loop (see fragmentation.h).
 */
#include "heap/fragmentation.h"

#include <stdlib.h>

#include "core/task.h"
#include "core/util.h"
#include "heap/recentallocs.h"

struct frag_job {
    struct ha_heap_profile *pr;   /* a reference held for the job */
    bool stacks;
    struct ha_frag *f;
    int rc;
    char err[256];
};

static void
frag_run(void *arg)
{
    struct frag_job *j = arg;

    j->rc = -1;
    if ((j->f = calloc(1, sizeof(*j->f))) == NULL) {
        ha_err_set(j->err, sizeof(j->err), "out of memory");
        return;
    }
    j->rc = ha_heap_fragmentation_compute(j->pr, j->stacks, j->f, j->err,
                                          sizeof(j->err));
}

static void
frag_discard(void *arg)
{
    struct frag_job *j = arg;

    ha_heap_fragmentation_free(j->f);
    ha_heap_profile_put(j->pr);
    free(j);
}

int
ha_heap_fragmentation(struct ha_heap_profile *pr, bool stacks,
                      struct ha_frag **out, char *err, size_t errlen)
{
    struct frag_job *j;
    int rc;

    *out = NULL;
    if (pr->mem == NULL || pr->mem->n_bins == 0) {
        ha_err_set(err, errlen,
                   "%s: no size-class statistics were recorded with this "
                   "dump (<dump>.mem: heapadmin's own dumps record them, "
                   "jemalloc's interval and high-water dumps do not); use "
                   "'live' for this process now",
                   pr->name);
        return HA_HEAP_ERROR;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        return HA_HEAP_ERROR;
    }
    j->pr = ha_heap_profile_ref(pr);
    j->stacks = stacks;
    if (ha_task_offload(frag_run, frag_discard, j) != 0)
        return HA_HEAP_STOPPED;
    rc = j->rc;
    if (rc == 0) {
        *out = j->f;
        j->f = NULL;
    } else {
        ha_err_set(err, errlen, "%s: %s", pr->name, j->err);
    }
    frag_discard(j);
    return rc == 0 ? 0 : HA_HEAP_ERROR;
}

void
ha_heap_fragmentation_free(struct ha_frag *f)
{
    if (f == NULL)
        return;
    ha_frag_free(f);
    free(f);
}

int
ha_heap_fragmentation_compute(const struct ha_heap_profile *pr, bool stacks,
                              struct ha_frag *out, char *err, size_t errlen)
{
    struct ha_livesizes now = {0};
    const struct ha_livesizes *sizes = pr->sizes;
    int rc;

    /* A live profile's: read now, a moment after its dump; stacks whose
     * samples changed meanwhile are placed in part by estimate
     * (prof/fragment.h checks each against the dump). */
    if (sizes == NULL && pr->live && pr->ops != NULL) {
        (void)ha_recent_live_sizes(pr->ops, &now);
        sizes = &now;
    }
    rc = ha_frag_compute(&(struct ha_frag_in){
                             .p = &pr->p,
                             .syms = &pr->syms,
                             .bins = pr->mem->bins,
                             .n_bins = pr->mem->n_bins,
                             .sizes = sizes,
                             .sampling_since = pr->mem->sampling_since,
                             .stacks = stacks,
                         },
                         out, err, errlen);
    ha_livesizes_free(&now);
    return rc;
}
