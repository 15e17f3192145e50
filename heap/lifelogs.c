/* SPDX-License-Identifier: MIT
 *
 * The lifetimes of a loaded log, kept with it (see lifelogs.h).
 */
#include "heap/lifelogs.h"

#include <math.h>
#include <stdlib.h>

#include "core/task.h"
#include "core/util.h"

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
    struct ha_life_opts o = {j->per_stack, 0};

    j->rc = -1;
    /* The tick the window recorded; else the log's own steps say. */
    if (j->pr->log->has_window && j->pr->log->window.clock_tick_ns > 0)
        o.tick_ns = (uint64_t)j->pr->log->window.clock_tick_ns;
    if ((j->l = calloc(1, sizeof(*j->l))) == NULL) {
        ha_err_set(j->err, sizeof(j->err), "out of memory");
        return;
    }
    j->rc = ha_lifetimes_build(&j->pr->log->log, &j->pr->p, &j->pr->syms,
                               &o, j->l, j->err, sizeof(j->err));
}

/* On the loop: keeps the rows with the profile unless some landed. */
static void
life_land(struct life_job *j)
{
    struct ha_lifetimes **slot = &j->pr->log->life[j->per_stack];

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

    if (pr->log == NULL) {
        ha_err_set(err, errlen, "%s is not a lifetime log", pr->name);
        return HA_HEAP_ERROR;
    }
    *out = pr->log->life[per_stack];
    if (*out != NULL)
        return 0;
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
    if (rc != 0 || pr->log->life[per_stack] == NULL)
        return HA_HEAP_ERROR;
    *out = pr->log->life[per_stack];
    return 0;
}

