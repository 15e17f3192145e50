/* SPDX-License-Identifier: MIT
 *
 * The aggregate one stack at a time (struct ha_agg_walker, see
 * aggregate.h): a stack's cut, its frames, its site and module, its
 * collapsed line and its wrappers, for callers that keep their own
 * figures per stack (growth, fragmentation, lifetimes, wrapper
 * detection).
 */

#include "prof/aggregate.h"

#include <inttypes.h>
#include <stdlib.h>

#include "prof/aggregate_int.h"

/* ------------------------------------------------------------------ */
/* One stack at a time                                                 */
/* ------------------------------------------------------------------ */

struct ha_agg_walker {
    struct resolver r;
    const struct ha_syms_addr *site; /* the last ha_agg_walker_site's */
};

struct ha_agg_walker *
ha_agg_walker_new_with(const struct ha_syms *syms,
                       const struct ha_wrap_set *set)
{
    struct ha_agg_walker *w = malloc(sizeof(*w));

    if (w == NULL)
        return NULL;
    w->site = NULL;
    if (ha_aggregate_resolver_init(&w->r, syms, set) != 0) {
        ha_aggregate_resolver_free(&w->r);
        free(w);
        return NULL;
    }
    return w;
}

struct ha_agg_walker *
ha_agg_walker_new(const struct ha_syms *syms)
{
    return ha_agg_walker_new_with(syms, NULL);
}

void
ha_agg_walker_free(struct ha_agg_walker *w)
{
    if (w == NULL)
        return;
    ha_aggregate_resolver_free(&w->r);
    free(w);
}

size_t
ha_agg_walker_stack(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                    size_t i)
{
    return ha_aggregate_resolve_stack(&w->r, p, i);
}

void
ha_agg_walker_cut(const struct ha_agg_walker *w, struct ha_agg_cut *cut)
{
    cut->alloc_end = w->r.alloc_end;
    cut->start = w->r.start;
    cut->skip = w->r.skip;
}

const struct ha_syms_addr *
ha_agg_walker_frame(const struct ha_agg_walker *w, size_t j)
{
    return w->r.sa[j];
}

int
ha_agg_walker_collapsed(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                        size_t i, struct ha_buf *line)
{
    if (ha_aggregate_resolve_stack(&w->r, p, i) == SIZE_MAX)
        return -1;
    ha_aggregate_collapse_one(&w->r, p, i, w->r.syms, line);
    return ha_buf_failed(line) ? -1 : 0;
}

int
ha_agg_walker_wrapper(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                      size_t i, struct ha_buf *line)
{
    if (ha_aggregate_resolve_stack(&w->r, p, i) == SIZE_MAX)
        return -1;
    ha_aggregate_collapse_wrappers(&w->r, p, i, w->r.syms, line);
    return ha_buf_failed(line) ? -1 : 0;
}

int
ha_agg_walker_site(struct ha_agg_walker *w, const struct ha_heapv2 *p, size_t i,
                   struct ha_buf *name)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);
    size_t start = ha_aggregate_resolve_stack(&w->r, p, i);

    ha_buf_reset(name);
    w->site = NULL;
    if (start == SIZE_MAX)
        return -1;
    /* The first frame ha_agg_add() counts: addresses above 2^63 are not
     * frames. Its innermost name past the wrappers' is the flat
     * function. */
    for (size_t j = start; j < p->stacks[i].n_frames; j++) {
        const struct ha_syms_addr *sa = w->r.sa[j];
        uint32_t q = 0;
        const char *fn;

        if (f[j] >= HA_AGGREGATE_HIGH_ADDR)
            continue;
        w->site = sa;
        if (sa != NULL && sa->n > 0 && j == start)
            q = w->r.skip < sa->n ? w->r.skip : sa->n - 1;
        fn = sa != NULL && sa->n > 0
                 ? ha_syms_str(w->r.syms, w->r.syms->frames[sa->first + q].func)
                 : "";
        if (*fn == '\0')
            ha_buf_printf(name, "0x%016" PRIx64, ha_aggregate_lookup_pc(f, j));
        else
            ha_buf_printf(name, "%s%s", fn,
                          q + 1 < sa->n && !(sa->flags & HA_SYMS_UNNAMED)
                              ? " (inline)"
                              : "");
        return ha_buf_failed(name) ? -1 : 0;
    }
    return 1;
}

const char *
ha_agg_walker_site_module(const struct ha_agg_walker *w)
{
    if (w->site == NULL || w->site->module == 0)
        return NULL;
    return ha_syms_str(w->r.syms, w->site->module);
}
