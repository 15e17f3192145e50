/* SPDX-License-Identifier: MIT
 *
 * Allocation wrappers found in a profile (see wrapdetect.h): candidates
 * walked with the aggregate's cut, judged round by round, and where a
 * set's names show in a profile (heap_wrappers).
 */
#include "prof/wrapdetect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/idmap.h"
#include "core/util.h"
#include "prof/aggregate.h"
#include "prof/heapv2.h"
#include "prof/syms.h"
#include "prof/wrappers.h"

/* ------------------------------------------------------------------ */
/* Detection                                                           */
/* ------------------------------------------------------------------ */

/* One caller of a candidate and what its stacks allocated. */
struct caller {
    uint64_t key;     /* its name (strs offset), or 1 << 63 | pc */
    double bytes;     /* sampled bytes, objects: raw counts */
    double objs;
};

/* A function that was the site of some stack in a round. */
struct cand {
    uint32_t name;    /* strs offset */
    bool unnamed;     /* "<module>+0x<offset>": judged, never taken */
    uint32_t fsize;
    uint32_t at_site; /* stacks it is the site of */
    struct caller *callers;
    size_t n_callers, cap_callers;
};

struct detect {
    const struct ha_heapv2 *p;
    const struct ha_syms *syms;
    const struct ha_wrap_conf *conf;
    struct ha_idmap names;     /* name (strs offset) -> index below */
    uint32_t *anywhere;        /* per name: stacks holding it past the
                                  allocator's frames */
    uint32_t *last;            /* per name: last stack counted + 1 */
    size_t n_names, cap_names;
    struct cand *c;
    size_t n_c, cap_c;
    struct ha_idmap c_index;   /* name -> cand */
};

static const char *
str(const struct detect *d, uint32_t off)
{
    return ha_syms_str(d->syms, off);
}

/* The index of name in d->names, added (zero) when new; UINT32_MAX on
 * OOM. */
static uint32_t
name_index(struct detect *d, uint32_t name)
{
    uint32_t k;

    if (ha_idmap_get(&d->names, name, &k))
        return k;
    if (d->n_names == d->cap_names) {
        size_t nc = d->cap_names ? d->cap_names * 2 : 1024;
        uint32_t *a = realloc(d->anywhere, nc * sizeof(*a));

        if (a == NULL)
            return UINT32_MAX;
        d->anywhere = a;
        if ((a = realloc(d->last, nc * sizeof(*a))) == NULL)
            return UINT32_MAX;
        d->last = a;
        d->cap_names = nc;
    }
    k = (uint32_t)d->n_names;
    if (ha_idmap_put(&d->names, name, k) != 0)
        return UINT32_MAX;
    d->anywhere[k] = 0;
    d->last[k] = 0;
    d->n_names++;
    return k;
}

/* Counts, per name, the stacks holding it past the allocator's frames
 * (at any depth, inlined or not), once per stack. */
static int
count_anywhere(struct detect *d, const struct ha_wrap_set *none)
{
    struct ha_agg_walker *w = ha_agg_walker_new_with(d->syms, none);
    int ret = -1;

    if (w == NULL)
        return -1;
    for (size_t i = 0; i < d->p->n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(d->p, i);
        struct ha_agg_cut cut;

        if (ha_agg_walker_stack(w, d->p, i) == SIZE_MAX)
            goto out;
        ha_agg_walker_cut(w, &cut);
        for (size_t j = cut.alloc_end; j < d->p->stacks[i].n_frames; j++) {
            const struct ha_syms_addr *sa = ha_agg_walker_frame(w, j);

            if (f[j] >= HA_AGG_HIGH_ADDR || sa == NULL)
                continue;
            for (uint32_t q = 0; q < sa->n; q++) {
                uint32_t name = d->syms->frames[sa->first + q].func, k;

                if (name == 0)
                    continue;
                if ((k = name_index(d, name)) == UINT32_MAX)
                    goto out;
                if (d->last[k] == (uint32_t)i + 1)
                    continue;
                d->last[k] = (uint32_t)i + 1;
                d->anywhere[k]++;
            }
        }
    }
    ret = 0;
out:
    ha_agg_walker_free(w);
    return ret;
}

static void
cands_clear(struct detect *d)
{
    for (size_t i = 0; i < d->n_c; i++)
        free(d->c[i].callers);
    d->n_c = 0;
    ha_idmap_clear(&d->c_index);
}

/* The candidate for name, added when new; NULL on OOM. */
static struct cand *
cand_of(struct detect *d, uint32_t name, uint32_t fsize)
{
    uint32_t k;
    struct cand *c;

    if (ha_idmap_get(&d->c_index, name, &k))
        return &d->c[k];
    if (d->n_c == d->cap_c) {
        size_t nc = d->cap_c ? d->cap_c * 2 : 64;
        struct cand *v = realloc(d->c, nc * sizeof(*v));

        if (v == NULL)
            return NULL;
        d->c = v;
        d->cap_c = nc;
    }
    if (ha_idmap_put(&d->c_index, name, (uint32_t)d->n_c) != 0)
        return NULL;
    c = &d->c[d->n_c++];
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->fsize = fsize;
    return c;
}

static int
cand_note(struct cand *c, uint64_t caller, double bytes, double objs)
{
    for (size_t i = 0; i < c->n_callers; i++)
        if (c->callers[i].key == caller) {
            c->callers[i].bytes += bytes;
            c->callers[i].objs += objs;
            return 0;
        }
    if (c->n_callers == c->cap_callers) {
        size_t nc = c->cap_callers ? c->cap_callers * 2 : 8;
        struct caller *v = realloc(c->callers, nc * sizeof(*v));

        if (v == NULL)
            return -1;
        c->callers = v;
        c->cap_callers = nc;
    }
    c->callers[c->n_callers].key = caller;
    c->callers[c->n_callers].bytes = bytes;
    c->callers[c->n_callers].objs = objs;
    c->n_callers++;
    return 0;
}

/* One round: every stack's site under set, as a candidate when it is a
 * named out-of-line function whose name says it allocates, or an unnamed
 * address (a stripped static function: judged so heap_wrappers can say
 * it looks like a wrapper's helper, never taken). */
static int
collect(struct detect *d, const struct ha_wrap_set *set)
{
    struct ha_agg_walker *w = ha_agg_walker_new_with(d->syms, set);
    bool accum = ha_heapv2_has_accum(d->p);
    int ret = -1;

    if (w == NULL)
        return -1;
    cands_clear(d);
    for (size_t i = 0; i < d->p->n_stacks; i++) {
        const struct ha_heapv2_stack *st = &d->p->stacks[i];
        const uint64_t *f = ha_heapv2_stack_frames(d->p, i);
        const struct ha_syms_addr *sa;
        struct ha_agg_cut cut;
        struct cand *c;
        uint64_t caller = 0;
        uint32_t name;
        const char *s;

        if (ha_agg_walker_stack(w, d->p, i) == SIZE_MAX)
            goto out;
        ha_agg_walker_cut(w, &cut);
        if (cut.start >= st->n_frames || f[cut.start] >= HA_AGG_HIGH_ADDR ||
            (sa = ha_agg_walker_frame(w, cut.start)) == NULL || sa->n == 0 ||
            cut.skip + 1 != sa->n)
            continue; /* no site, or inlined: never detected */
        name = d->syms->frames[sa->first + cut.skip].func;
        s = str(d, name);
        if (*s == '\0' || ha_wrap_set_has(set, s) ||
            (!(sa->flags & HA_SYMS_UNNAMED) && !ha_wrap_name_allocates(s)) ||
            ha_wrap_conf_removes(d->conf, s))
            continue;
        /* An unnamed site matters only above a wrapper: one right above
         * the allocator is as likely a real site as not. */
        if ((sa->flags & HA_SYMS_UNNAMED) && cut.start == cut.alloc_end)
            continue;
        for (size_t j = cut.start + 1; j < st->n_frames; j++) {
            const struct ha_syms_addr *ca;

            if (f[j] >= HA_AGG_HIGH_ADDR)
                continue;
            ca = ha_agg_walker_frame(w, j);
            caller = ca != NULL && ca->n > 0 &&
                             d->syms->frames[ca->first].func != 0
                         ? d->syms->frames[ca->first].func
                         : UINT64_C(1) << 63 | ha_agg_lookup_pc(f, j);
            break;
        }
        if ((c = cand_of(d, name, sa->fsize)) == NULL)
            goto out;
        c->unnamed = (sa->flags & HA_SYMS_UNNAMED) != 0;
        c->at_site++;
        if (cand_note(c, caller,
                      (double)(accum ? st->raw.accum_bytes : st->raw.bytes),
                      (double)(accum ? st->raw.accum_objs : st->raw.objs)) !=
            0)
            goto out;
    }
    ret = 0;
out:
    ha_agg_walker_free(w);
    return ret;
}

static int
cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
}

/* Distinct mean object sizes among c's callers: means within 1 % (and a
 * byte) of their neighbour count once (rounding of a scaled mean). */
static uint32_t
distinct_sizes(const struct cand *c)
{
    double *m = malloc((c->n_callers ? c->n_callers : 1) * sizeof(*m));
    size_t n = 0;
    uint32_t k = 0;

    if (m == NULL)
        return 0;
    for (size_t i = 0; i < c->n_callers; i++)
        if (c->callers[i].objs > 0)
            m[n++] = c->callers[i].bytes / c->callers[i].objs;
    qsort(m, n, sizeof(*m), cmp_double);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || m[i] - m[i - 1] > (m[i - 1] / 100 > 1 ? m[i - 1] / 100
                                                            : 1))
            k++;
    free(m);
    return k;
}

/* Judges c: fills e's evidence and detail; true when it is a wrapper.
 * *listed: whether a refusal is worth listing (an unnamed address only
 * when all but its name says wrapper). */
static bool
judge(const struct detect *d, const struct cand *c, struct ha_wrap_entry *e,
      bool *listed)
{
    uint32_t k = 0, any = 0;
    char why[256], code[48];
    bool yes = false;

    *listed = !c->unnamed;
    if (ha_idmap_get(&d->names, c->name, &k))
        any = d->anywhere[k];
    e->callers = (uint32_t)c->n_callers;
    e->sizes = distinct_sizes(c);
    e->fsize = c->fsize;
    e->elsewhere = any > c->at_site ? any - c->at_site : 0;
    if (c->fsize > 0)
        snprintf(code, sizeof(code), "%u bytes of code", c->fsize);
    else
        snprintf(code, sizeof(code), "code size unknown");
    if (e->elsewhere > 0)
        snprintf(why, sizeof(why),
                 "not detected: %u stacks hold it elsewhere than directly "
                 "above the allocator or a wrapper",
                 e->elsewhere);
    else if (e->callers < HA_WRAP_MIN_CALLERS)
        snprintf(why, sizeof(why),
                 "not detected: reached from %u caller%s (%d needed)",
                 e->callers, e->callers == 1 ? "" : "s",
                 HA_WRAP_MIN_CALLERS);
    else if (e->sizes < HA_WRAP_MIN_SIZES)
        snprintf(why, sizeof(why),
                 "not detected: one object size whatever its caller (%u "
                 "callers): it allocates its own type",
                 e->callers);
    else if (c->fsize > HA_WRAP_MAX_FSIZE)
        snprintf(why, sizeof(why), "not detected: %s, over %d", code,
                 HA_WRAP_MAX_FSIZE);
    else if (c->unnamed) {
        *listed = true;
        snprintf(why, sizeof(why),
                 "not detected: no name (stripped), though it looks like a "
                 "wrapper's helper (always directly above a wrapper, %u "
                 "callers, %u object sizes): if it is, add '+%.60s'",
                 e->callers, e->sizes, str(d, c->name));
    } else {
        snprintf(why, sizeof(why),
                 "detected: always directly above the allocator or a "
                 "wrapper, %u callers, %u object sizes, %s",
                 e->callers, e->sizes, code);
        yes = true;
    }
    free(e->detail);
    e->detail = strdup(why);
    return yes;
}

/* Rounds of detection into set (its wrappers so far), the candidates
 * refused into (*rej, *n_rej). Returns 0 or -1 on OOM. */
static int
detect_rounds(struct detect *d, struct ha_wrap_set *set, size_t *cap,
              struct ha_wrap_entry **rej, size_t *n_rej, size_t *cap_rej)
{
    struct ha_wrap_set *none = ha_wrap_set_empty();
    int ret = -1;

    if (none == NULL || count_anywhere(d, none) != 0)
        goto out;
    for (int round = 0; round < HA_WRAP_MAX_ROUNDS; round++) {
        size_t added = 0;

        if (collect(d, set) != 0)
            goto out;
        for (size_t i = 0; i < d->n_c; i++) {
            struct ha_wrap_entry tmp = {0}, *e;
            const char *name = str(d, d->c[i].name);
            bool listed, yes = judge(d, &d->c[i], &tmp, &listed);

            if (tmp.detail == NULL)
                goto out;
            if (!yes && !listed) {
                free(tmp.detail);
                continue;
            }
            if (yes) {
                if ((e = ha_wrap_entry_add(&set->e, &set->n, cap, name,
                                   HA_WRAP_DETECTED)) == NULL) {
                    free(tmp.detail);
                    goto out;
                }
                tmp.name = e->name;
                tmp.why = HA_WRAP_DETECTED;
                *e = tmp;
                added++;
                continue;
            }
            /* Refused: kept (the last round's word) unless detected. */
            e = NULL;
            for (size_t r = 0; r < *n_rej; r++)
                if (strcmp((*rej)[r].name, name) == 0)
                    e = &(*rej)[r];
            if (e == NULL &&
                (e = ha_wrap_entry_add(rej, n_rej, cap_rej, name,
                               HA_WRAP_REJECTED)) == NULL) {
                free(tmp.detail);
                goto out;
            }
            tmp.name = e->name;
            tmp.why = HA_WRAP_REJECTED;
            free(e->detail);
            *e = tmp;
        }
        if (added == 0)
            break;
        ha_wrap_entries_sort(set->e, set->n);
    }
    ret = 0;
out:
    ha_wrap_set_free(none);
    return ret;
}

int
ha_wrap_set_make(const struct ha_wrap_conf *conf, const struct ha_heapv2 *p,
                 const struct ha_syms *syms, struct ha_wrap_set **out,
                 char *err, size_t errlen)
{
    struct ha_wrap_set *s = NULL;
    struct ha_wrap_entry *rej = NULL;
    size_t cap = 0, cap_other = 0, n_rej = 0, cap_rej = 0;
    struct detect d;

    memset(&d, 0, sizeof(d));
    *out = NULL;
    if (ha_wrap_set_base(conf, &s, &cap, &cap_other) != 0)
        goto oom;
    if (p != NULL && syms != NULL && (conf == NULL || !conf->none)) {
        d.p = p;
        d.syms = syms;
        d.conf = conf;
        if (detect_rounds(&d, s, &cap, &rej, &n_rej, &cap_rej) != 0)
            goto oom;
    }
    /* The refused candidates join the removed names. */
    for (size_t i = 0; i < n_rej; i++) {
        struct ha_wrap_entry *e;

        if (ha_wrap_set_has(s, rej[i].name))
            continue;
        if ((e = ha_wrap_entry_add(&s->other, &s->n_other, &cap_other, rej[i].name,
                           HA_WRAP_REJECTED)) == NULL)
            goto oom;
        free(e->name);
        *e = rej[i];
        rej[i].name = NULL;
        rej[i].detail = NULL;
    }
    ha_wrap_entries_sort(s->other, s->n_other);
    for (size_t i = 0; i < n_rej; i++)
        ha_wrap_entry_free(&rej[i]);
    free(rej);
    cands_clear(&d);
    free(d.c);
    free(d.anywhere);
    free(d.last);
    ha_idmap_free(&d.names);
    ha_idmap_free(&d.c_index);
    *out = s;
    return 0;
oom:
    for (size_t i = 0; i < n_rej; i++)
        ha_wrap_entry_free(&rej[i]);
    free(rej);
    cands_clear(&d);
    free(d.c);
    free(d.anywhere);
    free(d.last);
    ha_idmap_free(&d.names);
    ha_idmap_free(&d.c_index);
    ha_wrap_set_free(s);
    ha_err_set(err, errlen, "out of memory finding allocation wrappers");
    return -1;
}

/* ------------------------------------------------------------------ */
/* Where a set's names show                                            */
/* ------------------------------------------------------------------ */

struct uses {
    struct ha_wrap_use *u;     /* one per set entry, e then other */
    uint64_t *last;            /* per use: last stack counted + 1 */
    struct ha_idmap by_name;   /* name (strs offset) -> use + 1, 0: none */
};

/* The use of the name at strs offset name, or NULL (not in the set). */
static struct ha_wrap_use *
use_of(struct uses *us, const struct ha_wrap_set *set,
       const struct ha_syms *syms, uint32_t name, int *oom)
{
    uint32_t v;

    if (!ha_idmap_get(&us->by_name, name, &v)) {
        const char *s = ha_syms_str(syms, name);
        const struct ha_wrap_entry *e = ha_wrap_set_find(set, s);

        if (e == NULL)
            e = ha_wrap_set_find_other(set, s);
        v = e == NULL ? 0
            : e >= set->e && e < set->e + set->n
                ? (uint32_t)(e - set->e) + 1
                : (uint32_t)(set->n + (size_t)(e - set->other)) + 1;
        if (ha_idmap_put(&us->by_name, name, v) != 0) {
            *oom = 1;
            return NULL;
        }
    }
    return v == 0 ? NULL : &us->u[v - 1];
}

static void
use_count(struct uses *us, struct ha_wrap_use *u, const struct ha_heapv2 *p,
          size_t i, uint32_t module)
{
    const struct ha_heapv2_stack *st = &p->stacks[i];
    size_t k = (size_t)(u - us->u);

    if (us->last[k] == i + 1)
        return;
    us->last[k] = i + 1;
    u->stacks++;
    u->bytes += st->bytes;
    u->objs += st->objs;
    u->accum_bytes += st->accum_bytes;
    if (u->module == 0)
        u->module = module;
}

static int
cmp_use(const void *x, const void *y)
{
    const struct ha_wrap_use *a = x, *b = y;

    if (a->wrapper != b->wrapper)
        return a->wrapper ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->accum_bytes != b->accum_bytes)
        return a->accum_bytes > b->accum_bytes ? -1 : 1;
    return strcmp(a->e->name, b->e->name);
}

int
ha_wrap_uses(const struct ha_heapv2 *p, const struct ha_syms *syms,
             const struct ha_wrap_set *set, struct ha_wrap_use **out,
             size_t *n, char *err, size_t errlen)
{
    size_t total = set != NULL ? set->n + set->n_other : 0, kept = 0;
    struct uses us = {0};
    struct ha_agg_walker *w = NULL;
    int oom = 0;

    *out = NULL;
    *n = 0;
    if (total == 0)
        return 0;
    us.u = calloc(total, sizeof(*us.u));
    us.last = calloc(total, sizeof(*us.last));
    if (us.u == NULL || us.last == NULL ||
        (w = ha_agg_walker_new_with(syms, set)) == NULL)
        goto oom;
    for (size_t k = 0; k < total; k++) {
        us.u[k].wrapper = k < set->n;
        us.u[k].e = k < set->n ? &set->e[k] : &set->other[k - set->n];
    }
    for (size_t i = 0; i < p->n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(p, i);
        struct ha_agg_cut cut;
        size_t end;

        if (ha_agg_walker_stack(w, p, i) == SIZE_MAX)
            goto oom;
        ha_agg_walker_cut(w, &cut);
        /* The skipped entries: frames [alloc_end, start) whole, then
         * the site frame's below the site; then the site itself. */
        end = cut.start < p->stacks[i].n_frames ? cut.start + 1 : cut.start;
        for (size_t j = cut.alloc_end; j < end; j++) {
            const struct ha_syms_addr *sa = ha_agg_walker_frame(w, j);
            uint32_t upto;

            if (f[j] >= HA_AGG_HIGH_ADDR || sa == NULL || sa->n == 0)
                continue;
            upto = j < cut.start ? sa->n
                                 : (cut.skip < sa->n ? cut.skip + 1 : sa->n);
            for (uint32_t q = 0; q < upto; q++) {
                uint32_t name = syms->frames[sa->first + q].func;
                bool site = j == cut.start && q == upto - 1;
                struct ha_wrap_use *u;

                if (name == 0)
                    continue;
                u = use_of(&us, set, syms, name, &oom);
                if (oom)
                    goto oom;
                /* A wrapper counts where it was skipped; another name
                 * where it is the site. */
                if (u != NULL && u->wrapper != site)
                    use_count(&us, u, p, i, sa->module);
            }
        }
    }
    for (size_t k = 0; k < total; k++) {
        enum ha_wrap_why why = us.u[k].e->why;

        if (us.u[k].stacks > 0 || why != HA_WRAP_BUILTIN)
            us.u[kept++] = us.u[k];
    }
    if (kept > 1)
        qsort(us.u, kept, sizeof(*us.u), cmp_use);
    *out = us.u;
    *n = kept;
    us.u = NULL;
    ha_agg_walker_free(w);
    free(us.last);
    ha_idmap_free(&us.by_name);
    return 0;
oom:
    ha_agg_walker_free(w);
    free(us.u);
    free(us.last);
    ha_idmap_free(&us.by_name);
    ha_err_set(err, errlen, "out of memory");
    return -1;
}
