/* SPDX-License-Identifier: MIT
 *
 * Per-function flat/cumulative figures, collapsed stacks and diffs of
 * heap profiles, with jeprof --text semantics (see aggregate.h). Names
 * are interned; each stack is walked once; the name list of a symbolized
 * address is worked out once per ha_agg_add() and reused by every stack
 * that holds the address.
 */
#include "prof/aggregate.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/idmap.h"
#include "core/radix.h"
#include "core/util.h"

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

#define HIGH_ADDR (UINT64_C(1) << 63)

static inline uint64_t
lookup_pc(const uint64_t *f, size_t i)
{
    return i == 0 ? f[0] : f[i] - 1;
}

/* Symbol lookups for one pass over a profile: a hash from lookup pc to
 * the syms entry (a binary search per frame was a fifth of the time on a
 * 65k-stack dump), whether each entry is an allocator frame and how far
 * into it wrapper code reaches (worked out once per entry, not per
 * frame), and the current stack's entries and cut. */
struct resolver {
    const struct ha_syms *syms;
    const struct ha_wrap_set *wrap; /* the wrappers the cut skips; NULL:
                                       none (jeprof's cut) */
    uint64_t *keys;  /* pc; slot empty when vals[j] == 0 */
    uint32_t *vals;  /* syms->addrs index + 1 */
    size_t cap;      /* power of two */
    uint8_t *alloc;  /* per entry: 0 not yet, 1 no, 2 yes */
    uint8_t *deep;   /* per entry: 0 not yet, else 1 + the number of its
                        inline entries, innermost first, up to and
                        including its outermost wrapper entry (1: none) */
    uint32_t *name_keys; /* name (strs offset) -> NAME_* bits */
    uint8_t *name_vals;  /* 0: empty slot */
    size_t name_cap;     /* SIZE_MAX: no table */
    size_t name_n;
    const struct ha_syms_addr **sa; /* the stack's frames' entries */
    size_t sa_cap;
    size_t alloc_end;    /* the last stack's cut: first frame after the
                            allocator's */
    size_t start;        /* ... the site's frame */
    uint32_t skip;       /* ... its inline entries that are wrapper code */
};

#define NAME_SEEN (1u << 0)  /* the slot holds a name */
#define NAME_ALLOC (1u << 1) /* an allocator function's name */
#define NAME_WRAP (1u << 2)  /* a wrapper's name (or, inlined, an
                                allocator function's) */

static size_t
pc_slot(uint64_t pc, size_t cap)
{
    return (size_t)((pc * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

/* wrap: the set to cut with, or NULL for syms' own. */
static int
resolver_init(struct resolver *r, const struct ha_syms *syms,
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
        size_t j = pc_slot(syms->addrs[i].pc, r->cap);

        while (r->vals[j] != 0)
            j = (j + 1) & (r->cap - 1);
        r->keys[j] = syms->addrs[i].pc;
        r->vals[j] = (uint32_t)i + 1;
    }
    return 0;
}

static void
resolver_free(struct resolver *r)
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
    j = pc_slot(pc, r->cap);
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
                    (name_bits(r, r->syms->frames[sa->first + sa->n - 1]
                                      .func) &
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
            if (name_bits(r, r->syms->frames[sa->first + q].func) &
                NAME_WRAP) {
                d = q + 1;
                break;
            }
        r->deep[k] = (uint8_t)(d > 254 ? 255 : d + 1);
    }
    return (uint32_t)r->deep[k] - 1;
}

/* The entry of raw frame j of stack i (frames f): by the syms' frame
 * index when it was made for p (checked by its pc), else by pc. */
static inline const struct ha_syms_addr *
frame_entry(struct resolver *r, const struct ha_heapv2 *p, size_t i,
            size_t j, const uint64_t *f)
{
    const struct ha_syms *s = r->syms;
    uint64_t pc = lookup_pc(f, j);

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
static size_t
resolve_stack(struct resolver *r, const struct ha_heapv2 *p, size_t i)
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

        r->sa[j] = frame_entry(r, p, i, j, f);
        if (is_alloc_frame(r, r->sa[j]))
            start = j + 1;
        else if (f[j] < HIGH_ADDR && (d = wrap_depth(r, r->sa[j])) > 0) {
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

        while (k < n && f[k] >= HIGH_ADDR)
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

/* ------------------------------------------------------------------ */
/* Rows                                                                */
/* ------------------------------------------------------------------ */

static int
index_rehash(struct ha_agg *a, size_t cap)
{
    uint32_t *idx = calloc(cap, sizeof(*idx));

    if (idx == NULL)
        return -1;
    for (size_t r = 0; r < a->n_rows; r++) {
        size_t j = ((size_t)a->rows[r].name * 2654435761u) & (cap - 1);

        while (idx[j] != 0)
            j = (j + 1) & (cap - 1);
        idx[j] = (uint32_t)r + 1;
    }
    free(a->index);
    a->index = idx;
    a->index_cap = cap;
    return 0;
}

/* Row for an interned name, created on first use. -1 on OOM. */
static long
row_for(struct ha_agg *a, uint32_t name)
{
    size_t j;

    if ((a->n_rows + 1) * 2 > a->index_cap &&
        index_rehash(a, a->index_cap ? a->index_cap * 2 : 1024) != 0)
        return -1;
    j = ((size_t)name * 2654435761u) & (a->index_cap - 1);
    while (a->index[j] != 0) {
        if (a->rows[a->index[j] - 1].name == name)
            return (long)a->index[j] - 1;
        j = (j + 1) & (a->index_cap - 1);
    }
    if (a->n_rows == a->rows_cap) {
        size_t ncap = a->rows_cap ? a->rows_cap * 2 : 256;
        struct ha_agg_row *r = realloc(a->rows, ncap * sizeof(*r));

        if (r == NULL)
            return -1;
        a->rows = r;
        a->rows_cap = ncap;
    }
    if (a->n_rows >= UINT32_MAX - 1)
        return -1;
    memset(&a->rows[a->n_rows], 0, sizeof(a->rows[0]));
    a->rows[a->n_rows].name = name;
    a->index[j] = (uint32_t)a->n_rows + 1;
    return (long)a->n_rows++;
}

static long
row_for_str(struct ha_agg *a, const char *s, const char *suffix)
{
    char buf[512];
    uint32_t off;
    size_t n = strlen(s), m = strlen(suffix);

    if (m == 0) {
        off = ha_strtab_intern(&a->names, s, n);
    } else if (n + m < sizeof(buf)) {
        memcpy(buf, s, n);
        memcpy(buf + n, suffix, m + 1);
        off = ha_strtab_intern(&a->names, buf, n + m);
    } else {
        /* A name this long is cut; the suffix still marks it. */
        memcpy(buf, s, sizeof(buf) - m - 1);
        memcpy(buf + sizeof(buf) - m - 1, suffix, m + 1);
        off = ha_strtab_intern(&a->names, buf, sizeof(buf) - 1);
    }
    return off == UINT32_MAX ? -1 : row_for(a, off);
}

static long
row_for_addr(struct ha_agg *a, uint64_t pc)
{
    char buf[24];
    long r;

    snprintf(buf, sizeof(buf), "0x%016" PRIx64, pc);
    if ((r = row_for_str(a, buf, "")) >= 0)
        a->rows[r].unnamed = true;
    return r;
}

/* Notes on a row what its first address says: whether it has a name,
 * and its module. Returns 0 or -1 on allocation failure. */
static int
row_note(struct ha_agg *a, long r, const struct ha_syms *syms,
         const struct ha_syms_addr *sa, bool outermost)
{
    struct ha_agg_row *row = &a->rows[r];

    /* Only the outermost frame of an unnamed address carries its
     * "<module>+0x..." name; inlined callees are named. */
    if (outermost && (sa->flags & HA_SYMS_UNNAMED))
        row->unnamed = true;
    if (row->module == 0 && sa->module != 0) {
        const char *m = ha_syms_str(syms, sa->module);
        uint32_t off = ha_strtab_intern(&a->names, m, strlen(m));

        if (off == UINT32_MAX)
            return -1;
        row->module = off;
    }
    return 0;
}

static int
push_scratch(struct ha_agg *a, size_t *n, uint32_t v)
{
    if (*n == a->scratch_cap) {
        size_t ncap = a->scratch_cap ? a->scratch_cap * 2 : 256;
        uint32_t *s = realloc(a->scratch, ncap * sizeof(*s));

        if (s == NULL)
            return -1;
        a->scratch = s;
        a->scratch_cap = ncap;
    }
    a->scratch[(*n)++] = v;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Adding a profile                                                    */
/* ------------------------------------------------------------------ */

/* Rows of one symbolized address, innermost first, worked out once per
 * ha_agg_add(): slot[k] is (offset into list) + 1, 0 = not yet. */
struct addr_rows {
    uint32_t *slot;  /* per syms->addrs index */
    uint32_t *list;  /* [count, row, row, ...] runs */
    size_t n, cap;
};

static int
addr_rows_get(struct ha_agg *a, struct addr_rows *ar,
              const struct ha_syms *syms, const struct ha_syms_addr *sa,
              const uint32_t **rows, size_t *n_rows)
{
    size_t k = (size_t)(sa - syms->addrs), need = sa->n + 1;
    /* jeprof without addr2line -i: the innermost name alone. */
    bool one = a->jeprof_inline && (sa->flags & HA_SYMS_NO_FINI);

    if (ar->slot[k] == 0) {
        size_t at = ar->n;
        uint32_t nf = one ? 1 : sa->n;

        if (ar->n + need > ar->cap) {
            size_t ncap = ar->cap ? ar->cap : 1024;
            uint32_t *l;

            while (ncap < ar->n + need)
                ncap *= 2;
            if ((l = realloc(ar->list, ncap * sizeof(*l))) == NULL)
                return -1;
            ar->list = l;
            ar->cap = ncap;
        }
        ar->list[at] = nf;
        for (uint32_t f = 0; f < nf; f++) {
            const struct ha_syms_frame *fr = &syms->frames[sa->first + f];
            const char *name = ha_syms_str(syms, fr->func);
            long r;

            if (*name == '\0')
                r = row_for_addr(a, sa->pc);
            else
                r = row_for_str(a, name,
                                f + 1 < sa->n && !one ? " (inline)" : "");
            if (r < 0 || row_note(a, r, syms, sa, f + 1 == sa->n) != 0)
                return -1;
            ar->list[at + 1 + f] = (uint32_t)r;
        }
        ar->n += nf + 1;
        ar->slot[k] = (uint32_t)at + 1;
    }
    *rows = ar->list + ar->slot[k] - 1 + 1;
    *n_rows = ar->list[ar->slot[k] - 1];
    return 0;
}

/* ------------------------------------------------------------------ */
/* The wrappers a site called                                          */
/* ------------------------------------------------------------------ */

/* The inline rows of the site's frame to leave out: the cut's skip, but
 * never all of them (jeprof_inline keeps one name per address). */
static size_t
skip_of(const struct resolver *r, size_t n_rows)
{
    return r->skip < n_rows ? r->skip : n_rows > 0 ? n_rows - 1 : 0;
}

/* The name of entry q of the address of raw frame j (resolved into r),
 * or its address when it has none, into out (reset first). */
static void
entry_name(const struct resolver *r, const struct ha_heapv2 *p, size_t i,
           size_t j, uint32_t q, struct ha_buf *out)
{
    const struct ha_syms_addr *sa = r->sa[j];
    const char *fn = sa != NULL && q < sa->n
                         ? ha_syms_str(r->syms,
                                       r->syms->frames[sa->first + q].func)
                         : "";

    ha_buf_reset(out);
    if (*fn == '\0')
        ha_buf_printf(out, "0x%016" PRIx64,
                      lookup_pc(ha_heapv2_stack_frames(p, i), j));
    else
        ha_buf_append_str(out, fn);
}

/* The outermost entry the cut skipped past the allocator's frames (the
 * wrapper the site called) into out; false when it skipped none. */
static bool
outer_skipped(const struct resolver *r, const struct ha_heapv2 *p, size_t i,
              struct ha_buf *out)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);

    if (r->skip > 0) {
        entry_name(r, p, i, r->start, r->skip - 1, out);
        return true;
    }
    for (size_t j = r->start; j-- > r->alloc_end;) {
        const struct ha_syms_addr *sa = r->sa[j];

        if (f[j] >= HIGH_ADDR)
            continue;
        entry_name(r, p, i, j, sa != NULL && sa->n > 0 ? sa->n - 1 : 0, out);
        return true;
    }
    return false;
}

/* Notes that the stack last resolved, whose site row is named site,
 * called the wrapper it skipped, with weight w. 0 or -1 on OOM. */
static int
wrapper_note(struct ha_agg *a, const struct resolver *r,
             const struct ha_heapv2 *p, size_t i, uint32_t site, double w,
             struct ha_buf *name)
{
    uint32_t wrap, k;
    uint64_t key;

    if (!outer_skipped(r, p, i, name) || ha_buf_failed(name))
        return ha_buf_failed(name) ? -1 : 0;
    wrap = ha_strtab_intern(&a->names, (const char *)name->data, name->len);
    if (wrap == UINT32_MAX)
        return -1;
    key = (uint64_t)site << 32 | wrap;
    if (ha_idmap_get(&a->wuse_index, key, &k)) {
        a->wuse[k].w += w;
        return 0;
    }
    if (a->n_wuse == a->wuse_cap) {
        size_t cap = a->wuse_cap ? a->wuse_cap * 2 : 64;
        struct ha_agg_wrapuse *v = realloc(a->wuse, cap * sizeof(*v));

        if (v == NULL)
            return -1;
        a->wuse = v;
        a->wuse_cap = cap;
    }
    if (ha_idmap_put(&a->wuse_index, key, (uint32_t)a->n_wuse) != 0)
        return -1;
    a->wuse[a->n_wuse].site = site;
    a->wuse[a->n_wuse].wrap = wrap;
    a->wuse[a->n_wuse].w = w;
    a->n_wuse++;
    return 0;
}

static int
cmp_wuse(const void *x, const void *y, void *arg)
{
    const struct ha_agg_wrapuse *a = x, *b = y;
    const struct ha_agg *agg = arg;

    if (a->site != b->site)
        return a->site < b->site ? -1 : 1;
    if (a->w != b->w)
        return a->w > b->w ? -1 : 1;
    return strcmp(ha_strtab_str(&agg->names, a->wrap),
                  ha_strtab_str(&agg->names, b->wrap));
}

/* The row named name, or NULL. */
static struct ha_agg_row *
row_find(struct ha_agg *a, uint32_t name)
{
    if (a->index_cap == 0)
        return NULL;
    for (size_t j = ((size_t)name * 2654435761u) & (a->index_cap - 1);
         a->index[j] != 0; j = (j + 1) & (a->index_cap - 1))
        if (a->rows[a->index[j] - 1].name == name)
            return &a->rows[a->index[j] - 1];
    return NULL;
}

#define WRAPPERS_SHOWN 8 /* names in a row's wrapper text at most */

/* Each row's wrapper text from the notes: its wrappers, most weight
 * first, ", "-joined. 0 or -1 on OOM. */
static int
wrappers_finish(struct ha_agg *a)
{
    struct ha_agg_wrapuse *v;
    struct ha_buf b = HA_BUF_INIT;
    int ret = -1;

    if (a->n_wuse == 0)
        return 0;
    if ((v = malloc(a->n_wuse * sizeof(*v))) == NULL)
        return -1;
    memcpy(v, a->wuse, a->n_wuse * sizeof(*v));
    qsort_r(v, a->n_wuse, sizeof(*v), cmp_wuse, a);
    for (size_t i = 0; i < a->n_wuse;) {
        struct ha_agg_row *row = row_find(a, v[i].site);
        size_t k = i, shown = 0;
        uint32_t off;

        ha_buf_reset(&b);
        for (; k < a->n_wuse && v[k].site == v[i].site; k++) {
            if (shown++ == WRAPPERS_SHOWN) {
                ha_buf_append_str(&b, ", ...");
                continue;
            }
            if (shown > WRAPPERS_SHOWN)
                continue;
            ha_buf_printf(&b, "%s%s", b.len ? ", " : "",
                          ha_strtab_str(&a->names, v[k].wrap));
        }
        i = k;
        if (ha_buf_failed(&b))
            goto out;
        if (row == NULL)
            continue;
        off = ha_strtab_intern(&a->names, (const char *)b.data, b.len);
        if (off == UINT32_MAX)
            goto out;
        row->wrapper = off;
    }
    ret = 0;
out:
    ha_buf_free(&b);
    free(v);
    return ret;
}

int
ha_agg_add(struct ha_agg *a, const struct ha_heapv2 *p,
           const struct ha_syms *syms, double weight, bool accum, char *err,
           size_t errlen)
{
    struct addr_rows ar = {0};
    struct resolver rs;
    struct ha_buf wname = HA_BUF_INIT;
    int ret = -1;

    if (resolver_init(&rs, syms, a->wrappers) != 0)
        goto oom;
    if (syms->n_addrs > 0 &&
        (ar.slot = calloc(syms->n_addrs, sizeof(*ar.slot))) == NULL)
        goto oom;
    a->has_alloc = a->has_alloc || ha_heapv2_has_accum(p);

    for (size_t i = 0; i < p->n_stacks; i++) {
        const struct ha_heapv2_stack *st = &p->stacks[i];
        const uint64_t *f = ha_heapv2_stack_frames(p, i);
        double bytes = weight * (accum ? st->accum_bytes : st->bytes);
        double objs = weight * (accum ? st->accum_objs : st->objs);
        double abytes = weight * st->accum_bytes;
        double aobjs = weight * st->accum_objs;
        size_t n = 0, start;
        uint32_t serial;

        a->total_bytes += bytes;
        a->total_objs += objs;
        a->alloc_total_bytes += abytes;
        a->alloc_total_objs += aobjs;
        a->n_stacks++;
        if (++a->serial == 0) {
            /* 2^32 stacks: restart the dedup stamps. */
            for (size_t r = 0; r < a->n_rows; r++)
                a->rows[r].last = 0;
            a->serial = 1;
        }
        serial = a->serial;

        if ((start = resolve_stack(&rs, p, i)) == SIZE_MAX)
            goto oom;
        for (size_t j = start; j < st->n_frames; j++) {
            uint64_t pc = lookup_pc(f, j);
            const struct ha_syms_addr *sa;
            const uint32_t *rows;
            size_t nr;
            long r;

            if (f[j] >= HIGH_ADDR)
                continue;
            sa = rs.sa[j];
            if (sa != NULL && sa->n > 0) {
                if (addr_rows_get(a, &ar, syms, sa, &rows, &nr) != 0)
                    goto oom;
            } else {
                if ((r = row_for_addr(a, pc)) < 0)
                    goto oom;
                if (push_scratch(a, &n, (uint32_t)r) != 0)
                    goto oom;
                continue;
            }
            for (size_t k = j == start ? skip_of(&rs, nr) : 0; k < nr; k++)
                if (push_scratch(a, &n, rows[k]) != 0)
                    goto oom;
        }
        if (n > 0 && wrapper_note(a, &rs, p, i, a->rows[a->scratch[0]].name,
                                  fabs(bytes) + fabs(abytes), &wname) != 0)
            goto oom;
        for (size_t k = 0; k < n; k++) {
            struct ha_agg_row *row = &a->rows[a->scratch[k]];

            if (row->last == serial)
                continue; /* recursion: once per stack */
            row->last = serial;
            if (k == 0) {
                row->flat_bytes += bytes;
                row->flat_objs += objs;
                row->alloc_flat_bytes += abytes;
                row->alloc_flat_objs += aobjs;
            }
            row->cum_bytes += bytes;
            row->cum_objs += objs;
            row->alloc_cum_bytes += abytes;
            row->alloc_cum_objs += aobjs;
        }
    }
    if (wrappers_finish(a) != 0)
        goto oom;
    ret = 0;
    goto done;

oom:
    ha_err_set(err, errlen, "out of memory aggregating %zu stacks",
               p->n_stacks);
done:
    resolver_free(&rs);
    ha_buf_free(&wname);
    free(ar.slot);
    free(ar.list);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Ordering and text                                                   */
/* ------------------------------------------------------------------ */

/* qsort_r's context: two instances on two threads sort at once, so the
 * order and the names live here, not in statics. */
struct sort_ctx {
    const struct ha_agg *agg;
    enum ha_agg_order order;
};

static double
key_of(const struct ha_agg_row *r, enum ha_agg_order order)
{
    switch (order) {
    case HA_AGG_BY_CUM_BYTES:
        return r->cum_bytes;
    case HA_AGG_BY_FLAT_OBJS:
        return r->flat_objs;
    case HA_AGG_BY_CUM_OBJS:
        return r->cum_objs;
    case HA_AGG_BY_ALLOC_FLAT_BYTES:
        return r->alloc_flat_bytes;
    case HA_AGG_BY_ALLOC_FLAT_OBJS:
        return r->alloc_flat_objs;
    default:
        return r->flat_bytes;
    }
}

static int
cmp_row(const void *x, const void *y, void *arg)
{
    const struct sort_ctx *c = arg;
    const struct ha_agg_row *a = x, *b = y;
    double ka = key_of(a, c->order), kb = key_of(b, c->order);

    if (ka != kb)
        return ka > kb ? -1 : 1;
    /* "0x..." and "libfoo.so+0x..." sort before letters: a name that
     * says nothing would push named functions of equal weight down. */
    if (a->unnamed != b->unnamed)
        return a->unnamed ? 1 : -1;
    return strcmp(ha_agg_name(c->agg, a), ha_agg_name(c->agg, b));
}

void
ha_agg_sort(struct ha_agg *a, enum ha_agg_order order)
{
    /* The index maps names to row positions: rebuilt after sorting. */
    struct sort_ctx c = {a, order};

    if (a->n_rows > 1)
        qsort_r(a->rows, a->n_rows, sizeof(*a->rows), cmp_row, &c);
    if (a->index_cap > 0 && index_rehash(a, a->index_cap) != 0) {
        /* Without an index ha_agg_add() would duplicate rows: drop it so
         * the next add rebuilds it from scratch. */
        free(a->index);
        a->index = NULL;
        a->index_cap = 0;
    }
}

static void
pct(char *buf, size_t n, double v, double total)
{
    if (total != 0)
        snprintf(buf, n, "%.1f%%", v * 100.0 / total);
    else
        snprintf(buf, n, "%s", v == 0 ? "nan" : v > 0 ? "+inf" : "-inf");
}

void
ha_agg_format_text(struct ha_agg *a, bool objects, size_t limit,
                   struct ha_buf *out)
{
    double total = objects ? a->total_objs : a->total_bytes;
    double flat_total = 0, running = 0;
    size_t shown = 0;

    ha_agg_sort(a, objects ? HA_AGG_BY_FLAT_OBJS : HA_AGG_BY_FLAT_BYTES);
    /* Percentages are of the flat total (stacks left after the cut), as
     * jeprof's PrintText computes them. */
    for (size_t i = 0; i < a->n_rows; i++)
        flat_total += objects ? a->rows[i].flat_objs : a->rows[i].flat_bytes;
    if (total != 0)
        ha_buf_printf(out, "Total: %.0f %s\n", trunc(total),
                      objects ? "objects" : "B");
    for (size_t i = 0; i < a->n_rows && (limit == 0 || shown < limit); i++) {
        const struct ha_agg_row *r = &a->rows[i];
        double f = objects ? r->flat_objs : r->flat_bytes;
        double c = objects ? r->cum_objs : r->cum_bytes;
        char p1[16], p2[16], p3[16];

        running += f;
        shown++;
        if (f == 0 && c == 0)
            continue;
        pct(p1, sizeof(p1), f, flat_total);
        pct(p2, sizeof(p2), running, flat_total);
        pct(p3, sizeof(p3), c, flat_total);
        /* %d of a double in Perl truncates toward zero. */
        ha_buf_printf(out, "%8.0f %6s %6s %8.0f %6s %s\n", trunc(f), p1, p2,
                      trunc(c), p3, ha_agg_name(a, r));
    }
}

void
ha_agg_free(struct ha_agg *a)
{
    if (a == NULL)
        return;
    free(a->rows);
    free(a->index);
    free(a->scratch);
    free(a->wuse);
    ha_idmap_free(&a->wuse_index);
    ha_strtab_free(&a->names);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------ */
/* Collapsed stacks                                                    */
/* ------------------------------------------------------------------ */

/* Merged lines: the string table interns each distinct line once; an
 * open-addressed map from its offset to a slot in values. */
struct collapsed {
    struct ha_strtab lines;
    uint32_t *offs;   /* per line, in first-seen order */
    double *values;
    size_t n, cap;
    uint32_t *map;    /* offset -> line + 1 */
    size_t map_cap;
};

static int
collapsed_map_grow(struct collapsed *c)
{
    size_t cap = c->map_cap ? c->map_cap * 2 : 1024;
    uint32_t *m = calloc(cap, sizeof(*m));

    if (m == NULL)
        return -1;
    for (size_t k = 0; k < c->n; k++) {
        size_t j = ((size_t)c->offs[k] * 2654435761u) & (cap - 1);

        while (m[j] != 0)
            j = (j + 1) & (cap - 1);
        m[j] = (uint32_t)k + 1;
    }
    free(c->map);
    c->map = m;
    c->map_cap = cap;
    return 0;
}

static int
collapsed_add(struct collapsed *c, const char *text, size_t len, double v)
{
    uint32_t off = ha_strtab_intern(&c->lines, text, len);
    size_t j;

    if (off == UINT32_MAX)
        return -1;
    if ((c->n + 1) * 2 > c->map_cap && collapsed_map_grow(c) != 0)
        return -1;
    j = ((size_t)off * 2654435761u) & (c->map_cap - 1);
    while (c->map[j] != 0) {
        if (c->offs[c->map[j] - 1] == off) {
            c->values[c->map[j] - 1] += v;
            return 0;
        }
        j = (j + 1) & (c->map_cap - 1);
    }
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 256;
        uint32_t *o = realloc(c->offs, ncap * sizeof(*o));
        double *vv;

        if (o == NULL)
            return -1;
        c->offs = o;
        if ((vv = realloc(c->values, ncap * sizeof(*vv))) == NULL)
            return -1;
        c->values = vv;
        c->cap = ncap;
    }
    c->offs[c->n] = off;
    c->values[c->n] = v;
    c->map[j] = (uint32_t)++c->n;
    return 0;
}

/* Writes frames [from, to) of stack i (resolved into r->sa), inline
 * entries below skip of frame `from` left out, into line in collapsed
 * form, replacing what line held. */
static void
collapse_span(const struct resolver *r, const struct ha_heapv2 *p, size_t i,
              size_t from, uint32_t skip, size_t to,
              const struct ha_syms *syms, struct ha_buf *line)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);

    ha_buf_reset(line);
    /* Root first: outermost frame, and within a frame the real
     * function before what was inlined into it. */
    for (size_t j = to; j-- > from;) {
        uint64_t pc = lookup_pc(f, j);
        const struct ha_syms_addr *sa;
        uint32_t low = j == from ? skip : 0;

        if (f[j] >= HIGH_ADDR)
            continue;
        sa = r->sa[j];
        if (sa == NULL || sa->n == 0) {
            ha_buf_printf(line, "%s0x%016" PRIx64, line->len ? ";" : "", pc);
            continue;
        }
        if (low >= sa->n)
            low = sa->n - 1;
        for (uint32_t q = sa->n; q-- > low;) {
            const char *name =
                ha_syms_str(syms, syms->frames[sa->first + q].func);

            if (line->len)
                ha_buf_append_u8(line, ';');
            if (*name == '\0')
                ha_buf_printf(line, "0x%016" PRIx64, pc);
            else
                ha_buf_append_str(line, name);
            if (q + 1 < sa->n) /* inlined into the next outer one */
                ha_buf_append_str(line, "[inline]");
        }
    }
}

/* The stack (resolved into r, cut) from its site on, collapsed. */
static void
collapse_one(const struct resolver *r, const struct ha_heapv2 *p, size_t i,
             const struct ha_syms *syms, struct ha_buf *line)
{
    collapse_span(r, p, i, r->start, r->skip, p->stacks[i].n_frames, syms,
                  line);
}

/* The wrapper part the cut skipped (between the allocator's frames and
 * the site), collapsed; empty when none. */
static void
collapse_wrappers(const struct resolver *r, const struct ha_heapv2 *p,
                  size_t i, const struct ha_syms *syms, struct ha_buf *line)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);
    const struct ha_syms_addr *sa;

    ha_buf_reset(line);
    if (r->start <= r->alloc_end && r->skip == 0)
        return;
    /* Frames [alloc_end, start) whole, then the site frame's inline
     * entries below the site, its innermost last. */
    collapse_span(r, p, i, r->alloc_end, 0, r->start, syms, line);
    if (r->skip == 0 || f[r->start] >= HIGH_ADDR ||
        (sa = r->sa[r->start]) == NULL)
        return;
    {
        struct ha_buf tail = HA_BUF_INIT;
        size_t keep = line->len;

        for (uint32_t q = r->skip; q-- > 0;) {
            const char *name =
                ha_syms_str(syms, syms->frames[sa->first + q].func);

            if (tail.len)
                ha_buf_append_u8(&tail, ';');
            if (*name == '\0')
                ha_buf_printf(&tail, "0x%016" PRIx64,
                              lookup_pc(f, r->start));
            else
                ha_buf_append_str(&tail, name);
            ha_buf_append_str(&tail, "[inline]");
        }
        /* Root first: the site frame's entries come before the frames
         * it called. */
        if (keep > 0) {
            ha_buf_append_u8(&tail, ';');
            ha_buf_append(&tail, line->data, keep);
        }
        ha_buf_reset(line);
        ha_buf_append(line, tail.data, tail.len);
        if (ha_buf_failed(&tail))
            line->failed = true;
        ha_buf_free(&tail);
    }
}

double
ha_agg_stack_value(const struct ha_heapv2_stack *s, enum ha_agg_value value)
{
    switch (value) {
    case HA_AGG_INUSE_OBJS:
        return s->objs;
    case HA_AGG_ALLOC_BYTES:
        return s->accum_bytes;
    case HA_AGG_ALLOC_OBJS:
        return s->accum_objs;
    default:
        return s->bytes;
    }
}

int
ha_agg_collapsed(const struct ha_heapv2 *p, const struct ha_syms *syms,
                 bool objects, struct ha_buf *out)
{
    return ha_agg_collapsed_value(
        p, syms, objects ? HA_AGG_INUSE_OBJS : HA_AGG_INUSE_BYTES, out);
}

int
ha_agg_collapsed_value(const struct ha_heapv2 *p, const struct ha_syms *syms,
                       enum ha_agg_value value, struct ha_buf *out)
{
    struct collapsed c = {0};
    struct ha_buf line = HA_BUF_INIT;
    struct resolver rs;
    int ret = -1;

    if (resolver_init(&rs, syms, NULL) != 0)
        goto done;
    for (size_t i = 0; i < p->n_stacks; i++) {
        size_t start = resolve_stack(&rs, p, i);
        double v = ha_agg_stack_value(&p->stacks[i], value);

        if (start == SIZE_MAX)
            goto done;
        if (v == 0)
            continue; /* a stack with no weight draws nothing */
        collapse_one(&rs, p, i, syms, &line);
        if (ha_buf_failed(&line))
            goto done;
        if (line.len > 0 &&
            collapsed_add(&c, (const char *)line.data, line.len, v) != 0)
            goto done;
    }
    for (size_t k = 0; k < c.n; k++)
        ha_buf_printf(out, "%s %.0f\n", ha_strtab_str(&c.lines, c.offs[k]),
                      c.values[k]);
    ret = ha_buf_failed(out) ? -1 : 0;
done:
    resolver_free(&rs);
    free(c.offs);
    free(c.values);
    free(c.map);
    ha_strtab_free(&c.lines);
    ha_buf_free(&line);
    return ret;
}

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
    if (resolver_init(&w->r, syms, set) != 0) {
        resolver_free(&w->r);
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
    resolver_free(&w->r);
    free(w);
}

size_t
ha_agg_walker_stack(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                    size_t i)
{
    return resolve_stack(&w->r, p, i);
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
    if (resolve_stack(&w->r, p, i) == SIZE_MAX)
        return -1;
    collapse_one(&w->r, p, i, w->r.syms, line);
    return ha_buf_failed(line) ? -1 : 0;
}

int
ha_agg_walker_wrapper(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                      size_t i, struct ha_buf *line)
{
    if (resolve_stack(&w->r, p, i) == SIZE_MAX)
        return -1;
    collapse_wrappers(&w->r, p, i, w->r.syms, line);
    return ha_buf_failed(line) ? -1 : 0;
}

int
ha_agg_walker_site(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                   size_t i, struct ha_buf *name)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);
    size_t start = resolve_stack(&w->r, p, i);

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

        if (f[j] >= HIGH_ADDR)
            continue;
        w->site = sa;
        if (sa != NULL && sa->n > 0 && j == start)
            q = w->r.skip < sa->n ? w->r.skip : sa->n - 1;
        fn = sa != NULL && sa->n > 0
                 ? ha_syms_str(w->r.syms,
                               w->r.syms->frames[sa->first + q].func)
                 : "";
        if (*fn == '\0')
            ha_buf_printf(name, "0x%016" PRIx64, lookup_pc(f, j));
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

/* ------------------------------------------------------------------ */
/* Per module                                                          */
/* ------------------------------------------------------------------ */

int
ha_agg_modules(const struct ha_heapv2 *p, const struct ha_syms *syms,
               struct ha_agg_module *out)
{
    struct resolver rs;
    uint32_t *mod_of = NULL; /* per syms->addrs: module index + 1 */
    uint32_t *seen = NULL;   /* per module: last stack + 1 counted */
    int ret = -1;

    memset(out, 0, syms->n_modules * sizeof(*out));
    if (resolver_init(&rs, syms, NULL) != 0)
        goto done;
    mod_of = calloc(syms->n_addrs ? syms->n_addrs : 1, sizeof(*mod_of));
    seen = calloc(syms->n_modules ? syms->n_modules : 1, sizeof(*seen));
    if (mod_of == NULL || seen == NULL)
        goto done;
    /* A dump maps tens of modules: a scan per address is cheap. */
    for (size_t i = 0; i < syms->n_addrs; i++) {
        const struct ha_syms_addr *a = &syms->addrs[i];

        for (size_t k = 0; a->module != 0 && k < syms->n_modules; k++)
            if (syms->modules[k].path == a->module) {
                mod_of[i] = (uint32_t)k + 1;
                out[k].frames++;
                out[k].named += a->n > 0 && !(a->flags & HA_SYMS_UNNAMED);
                break;
            }
    }
    for (size_t i = 0; i < p->n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(p, i);

        for (size_t j = 0; j < p->stacks[i].n_frames; j++) {
            const struct ha_syms_addr *a = frame_entry(&rs, p, i, j, f);
            uint32_t k;

            if (a == NULL || (k = mod_of[a - syms->addrs]) == 0 ||
                seen[k - 1] == i + 1)
                continue;
            seen[k - 1] = (uint32_t)i + 1;
            out[k - 1].bytes += p->stacks[i].bytes;
            out[k - 1].objs += p->stacks[i].objs;
        }
    }
    ret = 0;
done:
    resolver_free(&rs);
    free(mod_of);
    free(seen);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Addresses to symbolize                                              */
/* ------------------------------------------------------------------ */

int
ha_agg_lookup_index(const struct ha_heapv2 *p, uint64_t **pcs, size_t *n,
                    uint32_t **index)
{
    /* Deduplicated through a hash first: sorting every frame (most are
     * repeats) took a third of a warm query. The table grows with the
     * distinct pcs, not with the frames: sized for the frames, its
     * zeroed pages cost a 15 MB dump more than the hashing. */
    size_t cap = 4096, n_seen = 0;
    uint64_t *keys = NULL, *v = NULL;
    uint32_t *ids = NULL, *rank = NULL, *idx = NULL;
    struct ha_radix_item *seen = NULL; /* pc, order first seen */
    size_t seen_cap = 0;
    int ret = -1;

    *pcs = NULL;
    *n = 0;
    if (index != NULL)
        *index = NULL;
    keys = malloc(cap * sizeof(*keys));
    ids = malloc(cap * sizeof(*ids));
    if (index != NULL)
        idx = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*idx));
    if (keys == NULL || ids == NULL || (index != NULL && idx == NULL))
        goto done;
    memset(ids, 0xff, cap * sizeof(*ids));
    for (size_t i = 0; i < p->n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(p, i);

        for (size_t j = 0; j < p->stacks[i].n_frames; j++) {
            uint64_t pc = lookup_pc(f, j);
            size_t k = pc_slot(pc, cap);

            while (ids[k] != UINT32_MAX && keys[k] != pc)
                k = (k + 1) & (cap - 1);
            if (ids[k] == UINT32_MAX) {
                if (n_seen == seen_cap) {
                    size_t nc = seen_cap ? seen_cap * 2 : 4096;
                    struct ha_radix_item *ns = realloc(seen,
                                                       nc * sizeof(*ns));

                    if (ns == NULL)
                        goto done;
                    seen = ns;
                    seen_cap = nc;
                }
                keys[k] = pc;
                ids[k] = (uint32_t)n_seen;
                seen[n_seen].key = pc;
                seen[n_seen].val = n_seen;
                n_seen++;
                if (n_seen * 2 > cap) {
                    /* Grow: rehash what is there. */
                    size_t nc = cap * 2;
                    uint64_t *nk = malloc(nc * sizeof(*nk));
                    uint32_t *ni = malloc(nc * sizeof(*ni));

                    if (nk == NULL || ni == NULL) {
                        free(nk);
                        free(ni);
                        goto done;
                    }
                    memset(ni, 0xff, nc * sizeof(*ni));
                    for (size_t q = 0; q < cap; q++) {
                        size_t r;

                        if (ids[q] == UINT32_MAX)
                            continue;
                        for (r = pc_slot(keys[q], nc); ni[r] != UINT32_MAX;
                             r = (r + 1) & (nc - 1))
                            ;
                        nk[r] = keys[q];
                        ni[r] = ids[q];
                    }
                    free(keys);
                    free(ids);
                    keys = nk;
                    ids = ni;
                    cap = nc;
                    if (idx != NULL)
                        idx[p->stacks[i].frame_off + j] =
                            (uint32_t)n_seen - 1;
                    continue;
                }
            }
            if (idx != NULL)
                idx[p->stacks[i].frame_off + j] = ids[k];
        }
    }
    if (ha_radix_sort(seen, n_seen) != 0)
        goto done;
    v = malloc((n_seen ? n_seen : 1) * sizeof(*v));
    rank = malloc((n_seen ? n_seen : 1) * sizeof(*rank));
    if (v == NULL || rank == NULL)
        goto done;
    for (size_t k = 0; k < n_seen; k++) {
        v[k] = seen[k].key;
        rank[seen[k].val] = (uint32_t)k;
    }
    /* First-seen ids to places in the sorted list. */
    for (size_t k = 0; idx != NULL && k < p->n_frames; k++)
        idx[k] = rank[idx[k]];
    *pcs = v;
    *n = n_seen;
    v = NULL;
    if (index != NULL) {
        *index = idx;
        idx = NULL;
    }
    ret = 0;
done:
    free(keys);
    free(ids);
    free(seen);
    free(rank);
    free(v);
    free(idx);
    return ret;
}

int
ha_agg_lookup_pcs(const struct ha_heapv2 *p, uint64_t **pcs, size_t *n)
{
    return ha_agg_lookup_index(p, pcs, n, NULL);
}
