/* SPDX-License-Identifier: MIT
 *
 * The allocation-site rule (see aggregate.h): which frames are the
 * allocator's (jeprof's list and jemalloc's own API), and the cut of
 * one stack past them and past the allocation wrappers, with the
 * symbol lookups of one pass over a profile (struct resolver). Every
 * figure, collapsed stack and walker of the aggregate cuts here, so the
 * rule is written once.
 */

#include "prof/aggregate.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "prof/aggregate_int.h"

/* ------------------------------------------------------------------ */
/* Which frames are the allocator's                                    */
/* ------------------------------------------------------------------ */

/* Where an allocation's stack stops being the allocator's (aggregate.h):
 * jeprof 5.3.0 RemoveUninterestingFrames' heap list; the three names
 * jemalloc 5.3.1's jeprof added (je_malloc_default, do_rallocx,
 * fallbackNewImpl: frames of jemalloc itself that otherwise show up as
 * allocation sites); and the rest of jemalloc's public API
 * (malloc_usable_size, nallocx, sallocx, mallctl*, malloc_stats_print,
 * operator delete): none allocates, so a frame so named in an
 * allocation's stack is allocator code named after its neighbour.
 * Sorted for bsearch (strcmp order). */
static const char *const alloc_names[] = {
    "::do_malloc",
    "::do_malloc_or_cpp_alloc",
    "DoSampledAllocation",
    "__builtin_delete",
    "__builtin_new",
    "__builtin_vec_delete",
    "__builtin_vec_new",
    "__malloc_alloc_template::allocate",
    "__start_google_malloc",
    "__start_malloc_hook",
    "__stop_google_malloc",
    "__stop_malloc_hook",
    "aligned_alloc",
    "calloc",
    "cfree",
    "dallocx",
    "do_malloc",
    "do_rallocx",
    "fallbackNewImpl",
    "free",
    "je_malloc_default",
    "mallctl",
    "mallctlbymib",
    "mallctlnametomib",
    "malloc",
    "malloc_stats_print",
    "malloc_usable_size",
    "malloc_zone_calloc",
    "malloc_zone_free",
    "malloc_zone_malloc",
    "malloc_zone_memalign",
    "malloc_zone_realloc",
    "malloc_zone_valloc",
    "mallocx",
    "memalign",
    "nallocx",
    "newImpl",
    "operator delete",
    "operator delete[]",
    "operator new",
    "operator new[]",
    "posix_memalign",
    "pvalloc",
    "rallocx",
    "realloc",
    "sallocx",
    "sdallocx",
    "sdallocx_noflags",
    "simple_alloc::allocate",
    "smallocx",
    "tc_calloc",
    "tc_cfree",
    "tc_delete",
    "tc_deletearray",
    "tc_free",
    "tc_malloc",
    "tc_memalign",
    "tc_new",
    "tc_new_nothrow",
    "tc_newarray",
    "tc_newarray_nothrow",
    "tc_posix_memalign",
    "tc_pvalloc",
    "tc_realloc",
    "tc_valloc",
    "valloc",
    "void* newImpl",
    "xallocx",
};

static int
cmp_name(const void *k, const void *e)
{
    return strcmp(k, *(const char *const *)e);
}

static bool
in_list(const char *name)
{
    return bsearch(name, alloc_names, HA_ARRAY_SIZE(alloc_names),
                   sizeof(alloc_names[0]), cmp_name) != NULL;
}

bool
ha_agg_is_allocator_name(const char *name)
{
    if (name == NULL || *name == '\0')
        return false;
    /* jeprof also skips each name with Mach-O's "_" prefix, and anything
     * matching /TCMalloc|^tcmalloc::/; a jemalloc built with
     * --with-jemalloc-prefix=je_ exports je_malloc and the like. */
    if (in_list(name) || (name[0] == '_' && in_list(name + 1)) ||
        (strncmp(name, "je_", 3) == 0 && in_list(name + 3)))
        return true;
    return strstr(name, "TCMalloc") != NULL ||
           strncmp(name, "tcmalloc::", 10) == 0;
}

/* ------------------------------------------------------------------ */
/* Walking one stack                                                   */
/* ------------------------------------------------------------------ */

#define NAME_SEEN (1u << 0)  /* the slot holds a name */
#define NAME_ALLOC (1u << 1) /* an allocator function's name */
#define NAME_WRAP                                                              \
    (1u << 2) /* a wrapper's name (or, inlined, an                             \
                 allocator function's) */

/* wrap: the set to cut with, or NULL for syms' own. */
int
ha_aggregate_resolver_init(struct resolver *r, const struct ha_syms *syms,
                           const struct ha_wrap_set *wrap)
{
    size_t n = syms->n_addrs ? syms->n_addrs : 1;

    memset(r, 0, sizeof(r[0]));
    r->syms = syms;
    r->wrap = wrap != NULL ? wrap : syms->wrappers;
    r->alloc = calloc(n, 1);
    r->deep = calloc(n, 1);
    return r->alloc != NULL && r->deep != NULL ? 0 : -1;
}

/* The pc hash, built on the first lookup that needs it: not at all when
 * the syms carry a frame index. */
static int
resolver_hash(struct resolver *r)
{
    const struct ha_syms *syms = r->syms;

    r->cap = 64;
    while (r->cap < syms->n_addrs * 2)
        r->cap *= 2;
    r->keys = malloc(r->cap * sizeof(*r->keys));
    r->vals = calloc(r->cap, sizeof(*r->vals));
    if (r->keys == NULL || r->vals == NULL) {
        free(r->keys);
        free(r->vals);
        r->keys = NULL;
        r->vals = NULL;
        r->cap = 0;
        return -1;
    }
    for (size_t i = 0; i < syms->n_addrs && syms->sorted; i++) {
        size_t j = ha_aggregate_pc_slot(syms->addrs[i].pc, r->cap);

        while (r->vals[j] != 0)
            j = (j + 1) & (r->cap - 1);
        r->keys[j] = syms->addrs[i].pc;
        r->vals[j] = (uint32_t)i + 1;
    }
    return 0;
}

void
ha_aggregate_resolver_free(struct resolver *r)
{
    free(r->keys);
    free(r->vals);
    free(r->alloc);
    free(r->deep);
    free(r->name_keys);
    free(r->name_vals);
    free(r->sa);
}

static const struct ha_syms_addr *
resolve(struct resolver *r, uint64_t pc)
{
    size_t j;

    if (r->cap == 0 && resolver_hash(r) != 0)
        return NULL;
    j = ha_aggregate_pc_slot(pc, r->cap);
    while (r->vals[j] != 0) {
        if (r->keys[j] == pc)
            return &r->syms->addrs[r->vals[j] - 1];
        j = (j + 1) & (r->cap - 1);
    }
    return NULL;
}

static unsigned
name_bits_of(const struct resolver *r, const char *s)
{
    unsigned bits = NAME_SEEN;

    if (ha_agg_is_allocator_name(s))
        bits |= NAME_ALLOC | (r->wrap != NULL ? NAME_WRAP : 0);
    else if (r->wrap != NULL && *s != '\0' && ha_wrap_set_has(r->wrap, s))
        bits |= NAME_WRAP;
    return bits;
}

/* What the function named by strs offset name is (NAME_* bits): worked
 * out once per name (a function's addresses share it), through a small
 * open-addressed table; without memory for one, every time. */
static unsigned
name_bits(struct resolver *r, uint32_t name)
{
    size_t j;

    if (r->name_cap == 0) {
        r->name_cap = 1024;
        while (r->name_cap < r->syms->n_addrs * 2 && r->name_cap < (1u << 20))
            r->name_cap *= 2;
        r->name_keys = malloc(r->name_cap * sizeof(*r->name_keys));
        r->name_vals = calloc(r->name_cap, 1);
        if (r->name_keys == NULL || r->name_vals == NULL) {
            free(r->name_keys);
            free(r->name_vals);
            r->name_keys = NULL;
            r->name_vals = NULL;
            r->name_cap = SIZE_MAX;
        }
    }
    if (r->name_cap == SIZE_MAX)
        return name_bits_of(r, ha_syms_str(r->syms, name));
    for (j = ((size_t)name * 2654435761u) & (r->name_cap - 1);
         r->name_vals[j] != 0; j = (j + 1) & (r->name_cap - 1))
        if (r->name_keys[j] == name)
            return r->name_vals[j];
    {
        unsigned bits = name_bits_of(r, ha_syms_str(r->syms, name));

        /* A half-full table stops caching rather than grow. */
        if ((r->name_n + 1) * 2 <= r->name_cap) {
            r->name_keys[j] = name;
            r->name_vals[j] = (uint8_t)bits;
            r->name_n++;
        }
        return bits;
    }
}

/* True when the symbolized address is an allocator frame: its real
 * (outermost) function is on the list, or it lies in the allocator. */
static bool
is_alloc_frame(struct resolver *r, const struct ha_syms_addr *sa)
{
    size_t k;

    if (sa == NULL)
        return false;
    k = (size_t)(sa - r->syms->addrs);
    if (r->alloc[k] == 0) {
        bool yes = (sa->flags & HA_SYMS_ALLOCATOR) ||
                   (sa->n > 0 &&
                    (name_bits(r, r->syms->frames[sa->first + sa->n - 1].func) &
                     NAME_ALLOC));

        r->alloc[k] = yes ? 2 : 1;
    }
    return r->alloc[k] == 2;
}

/* How many of the address's inline entries, innermost first, are
 * wrapper code: up to and including its outermost entry named as a
 * wrapper (0: none; sa->n: the whole address, its real function is
 * one). Unnamed entries are never wrappers but for the operator's
 * naming them ("<module>+0x<offset>" is their name). */
static uint32_t
wrap_depth(struct resolver *r, const struct ha_syms_addr *sa)
{
    size_t k;

    if (sa == NULL || r->wrap == NULL)
        return 0;
    k = (size_t)(sa - r->syms->addrs);
    if (r->deep[k] == 0) {
        uint32_t d = 0;

        for (uint32_t q = sa->n; q-- > 0;)
            if (name_bits(r, r->syms->frames[sa->first + q].func) & NAME_WRAP) {
                d = q + 1;
                break;
            }
        r->deep[k] = (uint8_t)(d > 254 ? 255 : d + 1);
    }
    return (uint32_t)r->deep[k] - 1;
}

/* The entry of raw frame j of stack i (frames f): by the syms' frame
 * index when it was made for p (checked by its pc), else by pc. */
const struct ha_syms_addr *
ha_aggregate_frame_entry(struct resolver *r, const struct ha_heapv2 *p,
                         size_t i, size_t j, const uint64_t *f)
{
    const struct ha_syms *s = r->syms;
    uint64_t pc = ha_aggregate_lookup_pc(f, j);

    if (s->by_frame != NULL && s->n_by_frame == p->n_frames) {
        uint32_t k = s->by_frame[p->stacks[i].frame_off + j];

        if (k < s->n_addrs && s->addrs[k].pc == pc)
            return &s->addrs[k];
    }
    return resolve(r, pc);
}

/* Looks up every frame of stack i into r->sa, sets the cut (r->alloc_end,
 * r->start, r->skip) and returns r->start, the site's frame, or SIZE_MAX
 * on OOM. The allocator's cut is jeprof's: everything up to and
 * including the deepest allocator frame. The wrappers' goes on to the
 * outermost wrapper entry past it (wrappers.h); when nothing but
 * wrapper code follows, its outermost entry stays as the site. */
size_t
ha_aggregate_resolve_stack(struct resolver *r, const struct ha_heapv2 *p,
                           size_t i)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);
    size_t n = p->stacks[i].n_frames, start = 0, wj = SIZE_MAX;
    uint32_t wd = 0;

    if (n > r->sa_cap) {
        const struct ha_syms_addr **v = realloc(r->sa, n * sizeof(*v));

        if (v == NULL)
            return SIZE_MAX;
        r->sa = v;
        r->sa_cap = n;
    }
    for (size_t j = 0; j < n; j++) {
        uint32_t d;

        r->sa[j] = ha_aggregate_frame_entry(r, p, i, j, f);
        if (is_alloc_frame(r, r->sa[j]))
            start = j + 1;
        else if (f[j] < HA_AGGREGATE_HIGH_ADDR &&
                 (d = wrap_depth(r, r->sa[j])) > 0) {
            wj = j;
            wd = d;
        }
    }
    r->alloc_end = start;
    r->start = start;
    r->skip = 0;
    if (wj != SIZE_MAX && wj >= start) {
        const struct ha_syms_addr *sa = r->sa[wj];
        size_t k = wj + 1;

        while (k < n && f[k] >= HA_AGGREGATE_HIGH_ADDR)
            k++;
        if (wd < sa->n) {
            r->start = wj; /* the site is inlined where the wrapper was */
            r->skip = wd;
        } else if (k < n) {
            r->start = wj + 1;
        } else {
            /* Wrappers to the end: the outermost one is the site. */
            r->start = wj;
            r->skip = sa->n - 1;
        }
    }
    return r->start;
}
