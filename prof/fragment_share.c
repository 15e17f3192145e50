/* SPDX-License-Identifier: MIT
 *
 * Fragmentation laid at call sites' doors (see fragment.h): each stack
 * named by heap_top's rule, its samples placed in their own classes,
 * exactly where their sizes are known (rules 1 and 2), the rest left to
 * the estimates (fragment_estimate.c); then each class settled to its
 * regions in use and its free bytes shared among its rows. Pure.
 */
#include "prof/fragment.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "prof/fragment_int.h"

#define MEAN_TOL 0.02      /* a mean this close to a class's size is it */

/* ------------------------------------------------------------------
 * Each stack's samples placed
 * ------------------------------------------------------------------ */

/* The class of usable size usize: the first whose size holds it; -1
 * above every small class. */
static long
class_of(const struct ha_dumpmem_bin *bins, size_t n_bins, uint64_t usize)
{
    for (size_t k = 0; k < n_bins; k++)
        if (bins[k].size >= usize)
            return (long)k;
    return -1;
}

static int
by_free_desc(const void *a, const void *b)
{
    const struct ha_frag_row *x = a, *y = b;

    if (x->free_bytes != y->free_bytes)
        return x->free_bytes > y->free_bytes ? -1 : 1;
    if (x->bin != y->bin)
        return x->bin < y->bin ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

/* Grows the scratch arrays for n recorded sizes. */
static int
scratch(uint64_t **u, uint64_t **c, size_t *cap, size_t n)
{
    uint64_t *nu, *nc;

    if (n <= *cap)
        return 0;
    nu = realloc(*u, n * sizeof(*nu));
    if (nu == NULL)
        return -1;
    *u = nu;
    nc = realloc(*c, n * sizeof(*nc));
    if (nc == NULL)
        return -1;
    *c = nc;
    *cap = n;
    return 0;
}

/* Classifies a pending part: large (dropped: false), the mean rule's
 * candidate, or the fit's. */
static bool
classify(const struct ha_frag_in *in, struct pend *pd)
{
    const struct ha_dumpmem_bin *bins = in->bins;
    size_t K = in->n_bins;
    double m, zmin = HUGE_VAL, zmax = 0;

    if (pd->objs <= 0 || pd->bytes <= 0)
        return false;
    m = pd->bytes / pd->objs;
    if (m > (double)bins[K - 1].size * (1 + MEAN_TOL))
        return false; /* large objects */
    pd->mean_bin = -1;
    for (size_t k = 0; k < K; k++)
        if (fabs(m - (double)bins[k].size) <= MEAN_TOL * (double)bins[k].size)
            pd->mean_bin = (long)k;
    pd->fit = pd->mean_bin < 0;
    /* a seed that cannot give the mean is no shape for it */
    if (pd->seed != NULL) {
        for (size_t k = 0; k < K; k++)
            if (pd->seed[k] > 0) {
                zmin = fmin(zmin, (double)bins[k].size);
                zmax = fmax(zmax, (double)bins[k].size);
            }
        if (m < zmin * (1 - MEAN_TOL) || m > zmax * (1 + MEAN_TOL)) {
            free(pd->seed);
            pd->seed = NULL;
        }
    }
    return true;
}

/* A stack's name and module rows are keyed by. */
static int
name_stack(struct ha_agg_walker *w, const struct ha_frag_in *in,
           struct ha_frag *out, size_t i, struct ha_buf *name,
           struct ha_buf *line, uint32_t *n_off, uint32_t *m_off)
{
    const char *module;
    int rc = ha_agg_walker_site(w, in->p, i, name); /* heap_top's rule */

    if (rc < 0)
        return -1;
    if (rc > 0)
        ha_buf_append_str(name, "(allocator)");
    module = ha_agg_walker_site_module(w);
    if (in->stacks) {
        if (ha_agg_walker_collapsed(w, in->p, i, line) != 0)
            return -1;
        *n_off = ha_strtab_intern(&out->names, (const char *)line->data,
                                  line->len);
    } else {
        *n_off = ha_strtab_intern(&out->names, (const char *)name->data,
                                  name->len);
    }
    *m_off = module != NULL
                 ? ha_strtab_intern(&out->names, module, strlen(module))
                 : 0;
    if (*n_off == UINT32_MAX || *m_off == UINT32_MAX)
        return -1;
    if (*n_off == 0) /* an empty stack: name it as heap_top would */
        *n_off = ha_strtab_intern(&out->names, "(allocator)", 11);
    return *n_off == UINT32_MAX ? -1 : 0;
}

static bool
near(uint64_t a, uint64_t b)
{
    return a + 1 >= b && b + 1 >= a;
}

/* One stack: its recorded samples placed exactly, a single sample by its
 * size, the rest into *pd (pd->objs 0: nothing left). */
static int
place_stack(struct work *wk, size_t i, uint32_t name, uint32_t module,
            uint64_t **u, uint64_t **c, size_t *ucap, struct pend *pd)
{
    const struct ha_frag_in *in = wk->in;
    const struct ha_heapv2_stack *st = &in->p->stacks[i];
    uint64_t period = in->p->period;
    size_t K = in->n_bins, first = 0, n = 0;
    uint64_t jo, jb, po = 0, pb = 0;
    double o_rec = 0, b_rec = 0, scale = 1;
    bool complete, exceeds;
    unsigned how = HA_FRAG_RECORDED;

    memset(pd, 0, sizeof(*pd));
    pd->name = name;
    pd->module = module;
    pd->mean_bin = -1;
    if (in->sizes != NULL && in->sizes->state == HA_LIVESIZES_RECENT)
        n = ha_livesizes_find(in->sizes,
                              ha_livesizes_hash(
                                  ha_heapv2_stack_frames(in->p, i),
                                  st->n_frames),
                              &first);
    if (n == 0 && st->raw.objs == 1) {
        /* one sample: its byte count is its usable size */
        long k = class_of(in->bins, K, st->raw.bytes);

        wk->f->stacks_exact++;
        if (k < 0)
            return 0;
        return ha_fragment_add(
            wk, name, module, (size_t)k,
            period == 0 ? 1 : ha_frag_weight(period, st->raw.bytes) - 1,
            period == 0 ? 1 : ha_frag_weight(period, st->raw.bytes) - 1,
            HA_FRAG_ONE, 0);
    }
    if (n == 0) {
        pd->objs = st->objs;
        pd->bytes = st->bytes;
        wk->f->stacks_estimated++;
        return 0;
    }
    if (scratch(u, c, ucap, n) != 0)
        return -1;
    for (size_t j = 0; j < n; j++) {
        const struct ha_livesizes_ent *e = &in->sizes->ents[first + j];
        double w = ha_frag_weight(period, e->usize);

        (*u)[j] = e->usize;
        (*c)[j] = e->count;
        po += e->count;
        pb += e->count * e->usize;
        o_rec += (double)e->count * w;
        b_rec += (double)e->count * (double)e->usize * w;
    }
    /* Do they account for the dump's figures, as jemalloc computes them
     * (prof_unbias), or as plain counts (without it)? */
    ha_frag_unbiased_counts(period, *u, *c, n, &jo, &jb);
    complete = (near(jo, st->raw.objs) && near(jb, st->raw.bytes)) ||
               (po == st->raw.objs && pb == st->raw.bytes);
    exceeds = !complete && (jo > st->raw.objs + 1 || jb > st->raw.bytes + 1);
    if (exceeds) {
        /* read at another moment than the dump: their shape, its count */
        scale = o_rec > 0 && st->objs < o_rec ? st->objs / o_rec : 1;
        how = HA_FRAG_RESCALED;
    }
    for (size_t j = 0; j < n; j++) {
        long k = class_of(in->bins, K, (*u)[j]);
        double rg;

        if (k < 0)
            continue;
        rg = (double)(*c)[j] *
             (period == 0 ? 1 : ha_frag_weight(period, (*u)[j]) - 1) * scale;
        if (ha_fragment_add(wk, name, module, (size_t)k, rg,
                            exceeds ? 0 : rg, how, 0) != 0)
            return -1;
    }
    if (complete) {
        wk->f->stacks_exact++;
        return 0;
    }
    wk->f->stacks_estimated++;
    if (exceeds || st->objs - o_rec < 0.5 || st->bytes - b_rec <= 0)
        return 0;
    /* the samples not recorded: what the dump has beyond them, shaped
     * like the recorded ones */
    pd->objs = st->objs - o_rec;
    pd->bytes = st->bytes - b_rec;
    if ((pd->seed = calloc(K, sizeof(*pd->seed))) == NULL)
        return -1;
    for (size_t j = 0; j < n; j++) {
        long k = class_of(in->bins, K, (*u)[j]);

        if (k >= 0)
            pd->seed[k] += (double)(*c)[j] * ha_frag_weight(period, (*u)[j]);
    }
    return 0;
}

/* ------------------------------------------------------------------
 * The computation
 * ------------------------------------------------------------------ */

/* Per class: estimates over its curregs scaled down to them, regions the
 * samples do not account for given a row of their own, then each row's
 * share of the free bytes. */
static int
settle(struct work *wk)
{
    struct ha_frag *f = wk->f;
    const struct ha_dumpmem_bin *bins = wk->in->bins;
    uint64_t period = wk->in->p->period;
    size_t K = wk->in->n_bins, n_site_rows = f->n_rows;
    double denom[HA_DUMPMEM_BINS_MAX] = {0};

    for (size_t k = 0; k < K; k++) {
        double have = wk->claimed[k], curregs = (double)bins[k].curregs;

        if (have > curregs && have > 0) {
            double s = curregs / have;

            for (size_t r = 0; r < n_site_rows; r++)
                if (f->rows[r].bin == k) {
                    f->rows[r].live_regions *= s;
                    f->rows[r].exact_regions *= s;
                    f->rows[r].how |= HA_FRAG_CAPPED;
                }
            have = curregs;
        }
        f->class_regions[k] = have;
        denom[k] = have;
        if (have <= 0 && f->class_free[k] > 0) {
            long r = ha_fragment_row_for(f, &wk->ix, &wk->cap, 0, 0, k);

            if (r < 0)
                return -1;
            f->rows[r].rest = HA_FRAG_NONE_LIVE;
            f->rows[r].live_regions = curregs;
            denom[k] = curregs;
        } else if (have > 0 && curregs - have >= 1 &&
                   curregs - have >
                       SIGMAS * ha_frag_sigma(period, &bins[k])) {
            long r = ha_fragment_row_for(f, &wk->ix, &wk->cap, 0, 0, k);

            if (r < 0)
                return -1;
            f->rows[r].rest = HA_FRAG_UNACCOUNTED;
            f->rows[r].live_regions = curregs - have;
            denom[k] = curregs;
        }
    }
    for (size_t r = 0; r < f->n_rows; r++) {
        struct ha_frag_row *row = &f->rows[r];

        if (denom[row->bin] > 0)
            row->free_bytes =
                f->class_free[row->bin] * row->live_regions /
                denom[row->bin];
        else if (row->name == 0)
            row->free_bytes = f->class_free[row->bin];
    }
    return 0;
}

int
ha_frag_compute(const struct ha_frag_in *in, struct ha_frag *out,
                char *err, size_t errlen)
{
    struct work wk = {.in = in, .f = out};
    struct ha_agg_walker *w = NULL;
    struct ha_buf line = {0}, name = {0};
    struct pend *pend = NULL;
    uint64_t *u = NULL, *c = NULL;
    size_t ucap = 0, n_pend = 0;
    int ret = -1;

    memset(out, 0, sizeof(*out));
    out->bins = in->bins;
    out->n_bins = in->n_bins;
    out->period = in->p->period;
    out->sampling_since = in->sampling_since;
    out->sizes = in->sizes != NULL ? in->sizes->state : HA_LIVESIZES_NONE;
    if (in->sizes != NULL)
        ha_strlcpy(out->sizes_why, in->sizes->why, sizeof(out->sizes_why));
    if (in->n_bins == 0 || in->n_bins > HA_DUMPMEM_BINS_MAX) {
        ha_err_set(err, errlen, "no size classes to share out");
        return -1;
    }
    for (size_t k = 0; k < in->n_bins; k++) {
        out->class_free[k] = (double)ha_frag_class_free(&in->bins[k]);
        out->total_free += out->class_free[k];
    }
    if ((w = ha_agg_walker_new(in->syms)) == NULL ||
        (pend = calloc(in->p->n_stacks ? in->p->n_stacks : 1,
                       sizeof(*pend))) == NULL)
        goto oom;
    for (size_t i = 0; i < in->p->n_stacks; i++) {
        const struct ha_heapv2_stack *st = &in->p->stacks[i];
        uint32_t n_off, m_off;

        if (st->raw.objs == 0 || st->raw.bytes == 0)
            continue;
        if (name_stack(w, in, out, i, &name, &line, &n_off, &m_off) != 0 ||
            place_stack(&wk, i, n_off, m_off, &u, &c, &ucap,
                        &pend[n_pend]) != 0)
            goto oom;
        if (classify(in, &pend[n_pend]))
            n_pend++;
        else
            free(pend[n_pend].seed);
    }
    if (ha_fragment_estimate(&wk, pend, n_pend) != 0 || settle(&wk) != 0)
        goto oom;
    if (out->n_rows > 1)
        qsort(out->rows, out->n_rows, sizeof(out->rows[0]), by_free_desc);
    ret = 0;
    goto done;
oom:
    ha_err_set(err, errlen, "out of memory sharing out the free regions");
    ha_frag_free(out);
done:
    for (size_t i = 0; pend != NULL && i < n_pend; i++)
        free(pend[i].seed);
    free(pend);
    free(u);
    free(c);
    ha_buf_free(&line);
    ha_buf_free(&name);
    free(wk.ix.keys);
    free(wk.ix.vals);
    ha_agg_walker_free(w);
    return ret;
}

void
ha_frag_free(struct ha_frag *f)
{
    free(f->rows);
    ha_strtab_free(&f->names);
    f->rows = NULL;
    f->n_rows = 0;
}
