/* SPDX-License-Identifier: MIT
 *
 * The figures made of a loaded profile off the loop: heap_top's
 * aggregate and heap_modules' per-module figures, each kept with the
 * profile once made, and heap_top's aggregate of some threads' part,
 * made for one query.
 */
#include "heap/profiles.h"

#include <stdlib.h>
#include <string.h>

#include "core/task.h"
#include "core/util.h"
#include "heap/profiles_int.h"

/* The figures kept with a profile, each made once off the loop: heap_top's
 * aggregate (pr->top) and heap_modules' per-module figures
 * (pr->modules). */
enum figure { FIG_TOP, FIG_MODULES, FIG_MAX };

struct figure_job {
    struct ha_heap_profile *pr; /* a reference held for the job */
    enum figure kind;
    struct ha_agg *agg;      /* FIG_TOP's, once made */
    struct ha_agg_module *m; /* FIG_MODULES', once made */
    int rc;
};

static void
figure_run(void *arg)
{
    struct figure_job *j = arg;
    char why[256];
    size_t n;

    j->rc = -1;
    switch (j->kind) {
    case FIG_TOP:
        if ((j->agg = calloc(1, sizeof(*j->agg))) == NULL)
            return;
        if (ha_agg_add(j->agg, &j->pr->p, &j->pr->syms, 1, false, why,
                       sizeof(why)) != 0)
            return;
        ha_agg_sort(j->agg, HA_AGG_BY_FLAT_BYTES);
        j->rc = 0;
        return;
    case FIG_MODULES:
        n = j->pr->syms.n_modules ? j->pr->syms.n_modules : 1;
        if ((j->m = calloc(n, sizeof(*j->m))) != NULL &&
            ha_agg_modules(&j->pr->p, &j->pr->syms, j->m) == 0)
            j->rc = 0;
        return;
    default:
        return;
    }
}

/* Lands the figure on its profile (on the loop), unless one landed
 * meanwhile; frees what was not landed. */
static void
figure_land(struct figure_job *j)
{
    struct ha_heap_profile *pr = j->pr;

    if (j->rc == 0 && j->kind == FIG_TOP && pr->top == NULL) {
        pr->top = j->agg;
        j->agg = NULL;
        pr->bytes = ha_profiles_bytes(pr);
    } else if (j->rc == 0 && j->kind == FIG_MODULES && pr->modules == NULL) {
        pr->modules = j->m;
        j->m = NULL;
        pr->bytes = ha_profiles_bytes(pr);
    }
    if (j->agg != NULL) {
        ha_agg_free(j->agg);
        free(j->agg);
        j->agg = NULL;
    }
    free(j->m);
    j->m = NULL;
}

static void
figure_discard(void *arg)
{
    struct figure_job *j = arg;

    figure_land(j);
    ha_heap_profile_put(j->pr);
    free(j);
}

/* Makes pr's figure kind off the loop and lands it. Returns 0 (the
 * figure is on pr), HA_HEAP_ERROR (err set) or HA_HEAP_STOPPED. */
static int
figure_make(struct ha_heap_profile *pr, enum figure kind, char *err,
            size_t errlen)
{
    struct figure_job *j;

    if ((j = calloc(1, sizeof(*j))) == NULL)
        goto oom;
    j->pr = pr;
    j->kind = kind;
    pr->refs++;
    if (ha_task_offload(figure_run, figure_discard, j) != 0)
        return HA_HEAP_STOPPED;
    figure_land(j);
    ha_heap_profile_put(pr);
    free(j);
    if ((kind == FIG_TOP && pr->top != NULL) ||
        (kind == FIG_MODULES && pr->modules != NULL))
        return 0;
oom:
    ha_err_set(err, errlen, "%s: out of memory", pr->name);
    return HA_HEAP_ERROR;
}

int
ha_heap_profile_top(struct ha_heap_profile *pr, const struct ha_agg **out,
                    char *err, size_t errlen)
{
    int rc = pr->top != NULL ? 0 : figure_make(pr, FIG_TOP, err, errlen);

    *out = pr->top;
    return rc;
}

/* heap_top's aggregate of some threads' part, made for one query. */
struct top_threads_job {
    struct ha_heap_profile *pr; /* a reference held for the job */
    struct ha_threads_match m;
    char *name; /* m.name's copy */
    struct ha_agg *agg;
    int rc;
};

static void
top_threads_run(void *arg)
{
    struct top_threads_job *j = arg;
    struct ha_heapv2 part;
    char why[256];

    j->rc = -1;
    if (ha_threads_filter(&j->pr->p, &j->m, &part) != 0)
        return;
    if ((j->agg = calloc(1, sizeof(*j->agg))) != NULL &&
        ha_agg_add(j->agg, &part, &j->pr->syms, 1, false, why, sizeof(why)) ==
            0) {
        ha_agg_sort(j->agg, HA_AGG_BY_FLAT_BYTES);
        j->rc = 0;
    }
    ha_heapv2_free(&part);
}

static void
top_threads_free(void *arg)
{
    struct top_threads_job *j = arg;

    if (j->agg != NULL) {
        ha_agg_free(j->agg);
        free(j->agg);
    }
    ha_heap_profile_put(j->pr);
    free(j->name);
    free(j);
}

int
ha_heap_profile_top_threads(struct ha_heap_profile *pr,
                            const struct ha_threads_match *m,
                            struct ha_agg **out, char *err, size_t errlen)
{
    struct top_threads_job *j = calloc(1, sizeof(*j));

    *out = NULL;
    if (j == NULL || (m->name != NULL && (j->name = strdup(m->name)) == NULL)) {
        free(j);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->pr = ha_heap_profile_ref(pr);
    j->m = *m;
    j->m.name = j->name;
    if (ha_task_offload(top_threads_run, top_threads_free, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        top_threads_free(j);
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        return HA_HEAP_ERROR;
    }
    *out = j->agg;
    j->agg = NULL;
    top_threads_free(j);
    return 0;
}

int
ha_heap_profile_modules(struct ha_heap_profile *pr,
                        const struct ha_agg_module **out, char *err,
                        size_t errlen)
{
    int rc =
        pr->modules != NULL ? 0 : figure_make(pr, FIG_MODULES, err, errlen);

    *out = pr->modules;
    return rc;
}
