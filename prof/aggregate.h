/* SPDX-License-Identifier: MIT
 *
 * What holds memory, per function, from parsed and scaled heap_v2
 * profiles plus their symbolized addresses, with `jeprof --text`
 * semantics (jemalloc 5.3.0 bin/jeprof, --functions granularity):
 *
 *   - every frame but the first is looked up at pc - 1, the call
 *     instruction rather than the return address (FixCallerAddresses);
 *   - the allocation site is the first frame after the allocator's:
 *     every frame up to and including the deepest allocator frame is cut.
 *     With a set of allocation wrappers (prof/wrappers.h: the syms' own,
 *     ha_syms.wrappers, or one given for a series or a diff), the cut
 *     goes on past them: the site is the first frame (or inlined entry)
 *     that is neither allocator nor wrapper. Without a set the cut is
 *     jeprof's alone.
 *     An allocator frame lies in the allocator's own module
 *     (HA_SYMS_ALLOCATOR, a mapped libjemalloc*: Debian's is stripped, so
 *     its internals have no names of their own), or its function is one
 *     of jemalloc's entry points, with or without a prefixed build's
 *     "je_" (malloc, calloc, realloc, free, posix_memalign,
 *     aligned_alloc, mallocx, rallocx, xallocx, dallocx, sdallocx,
 *     nallocx, sallocx, malloc_usable_size, mallctl*, operator new and
 *     delete, ...), or one of jeprof's other allocators
 *     (RemoveUninterestingFrames: tcmalloc's, the C++ runtime's). Entry
 *     points that do not allocate (malloc_usable_size, sdallocx, free)
 *     are on the list because a frame so named in an allocation's stack
 *     is allocator code named after its neighbour: jeprof names stripped
 *     jemalloc code after the nearest exported symbol and keeps, say,
 *     "malloc_usable_size" as an allocation site; heapadmin does not.
 *     pprof (prof/pprof.c) and every table cut with this same rule;
 *   - each address expands to its inline chain, innermost first, inlined
 *     callees named "f (inline)" (TranslateStack); an address with no
 *     certain name is its one frame, "<module>+0x<offset>" (syms.h);
 *     addresses above 2^63 are dropped;
 *   - within one stack a name counts once (recursion; ReduceProfile);
 *   - flat = stacks whose first remaining entry is the function, cum =
 *     stacks holding it anywhere; both in bytes and in objects;
 *   - the total is the sum over all stacks before frames are cut.
 *
 * jeprof_inline reproduces a jeprof quirk for exact agreement: jeprof
 * asks addr2line for inline chains (-i) only in files whose own symbol
 * table (nm) has _fini, so in stripped libraries (debug info found by
 * build-id) it names an address by its innermost inlined function alone,
 * with no " (inline)" and no outer function. Off by default: the full
 * chain is the truth.
 *
 * A diff (`jeprof --base`) adds the base with weight -1: every figure is
 * a sum over stacks, so current minus base per stack and then per
 * function is the same as per function; negative values are kept.
 *
 * Collapsed stacks (`jeprof --collapsed`, for flame graphs): root first,
 * ';'-joined, inlined frames marked "[inline]", identical lines merged.
 *
 * Pure: no ELF, no I/O.
 */
#ifndef HA_AGGREGATE_H
#define HA_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/idmap.h"
#include "prof/heapv2.h"
#include "prof/syms.h"
#include "prof/wrappers.h"

/* One function (or inlined function, or unnamed address). */
struct ha_agg_row {
    uint32_t name;      /* in ha_agg.names; "f (inline)" for inlined */
    uint32_t module;    /* (names) path of the module of its first frame
                           seen; 0 = none */
    bool unnamed;       /* "<module>+0x<offset>" or an address: ranks
                           after named rows of equal value */
    uint32_t last;      /* internal: last stack that counted it */
    double flat_bytes;  /* stacks where it is the allocation site */
    double flat_objs;
    double cum_bytes;   /* stacks that hold it at any depth */
    double cum_objs;
    double alloc_flat_bytes; /* the same four over the cumulative
                                counters (opt.prof_accum: everything
                                allocated since profiling began, freed
                                or not; jeprof --alloc_space) */
    double alloc_flat_objs;
    double alloc_cum_bytes;
    double alloc_cum_objs;
    uint32_t wrapper;   /* (names) the wrappers the cut skipped in the
                           stacks it is the site of (each stack's
                           outermost, the one the site called), most
                           bytes first, ", "-joined; 0: none */
};

/* Internal: how much of a site's weight went through one wrapper. */
struct ha_agg_wrapuse {
    uint32_t site;      /* (names) the site row's name */
    uint32_t wrap;      /* (names) the wrapper's */
    double w;           /* |in-use bytes| + |cumulative bytes| */
};

struct ha_agg {
    struct ha_agg_row *rows;
    size_t n_rows;
    size_t rows_cap;
    uint32_t *index;    /* open-addressed: name -> row + 1 */
    size_t index_cap;
    struct ha_strtab names;

    double total_bytes; /* sum over stacks (jeprof's "Total:") */
    double total_objs;
    double alloc_total_bytes; /* the same over the cumulative counters */
    double alloc_total_objs;
    bool has_alloc;     /* some profile added carried cumulative
                           counters (ha_heapv2_has_accum) */
    size_t n_stacks;    /* stacks added (over all profiles) */
    uint32_t serial;    /* internal: stack counter for dedup */
    bool jeprof_inline; /* set before adding: see above */
    const struct ha_wrap_set *wrappers; /* set before adding: the
                           wrappers to cut with instead of each syms' own
                           (one set for a series or a diff); NULL: each
                           syms' own. Not owned. */

    uint32_t *scratch;  /* internal: one stack's entries */
    size_t scratch_cap;
    struct ha_agg_wrapuse *wuse; /* internal: per (site, wrapper) */
    size_t n_wuse, wuse_cap;
    struct ha_idmap wuse_index;  /* (site << 32 | wrap) -> wuse */
};

/* Adds profile p, symbolized by syms, multiplied by weight (1 to add, -1
 * for a --base). accum selects the cumulative counters (--alloc_space)
 * instead of in-use ones for the flat and cum figures; the alloc_*
 * figures always get the cumulative ones. Returns 0, or -1 on allocation
 * failure (err set; the aggregate is then incomplete but valid to
 * free). */
int ha_agg_add(struct ha_agg *a, const struct ha_heapv2 *p,
               const struct ha_syms *syms, double weight, bool accum,
               char *err, size_t errlen);

/* Row order for ha_agg_sorted(). */
enum ha_agg_order {
    HA_AGG_BY_FLAT_BYTES, /* jeprof --text default order */
    HA_AGG_BY_CUM_BYTES,  /* jeprof --cum */
    HA_AGG_BY_FLAT_OBJS,  /* --inuse_objects */
    HA_AGG_BY_CUM_OBJS,
    HA_AGG_BY_ALLOC_FLAT_BYTES, /* --alloc_space */
    HA_AGG_BY_ALLOC_FLAT_OBJS,  /* --alloc_objects */
    HA_AGG_ORDER_MAX
};

/* Sorts rows in place, largest first; equal values put named rows before
 * unnamed ones, then go by name. */
void ha_agg_sort(struct ha_agg *a, enum ha_agg_order order);

static inline const char *
ha_agg_name(const struct ha_agg *a, const struct ha_agg_row *r)
{
    return ha_strtab_str(&a->names, r->name);
}

/* The wrappers row r's stacks called (ha_agg_row.wrapper), or NULL. */
static inline const char *
ha_agg_wrapper(const struct ha_agg *a, const struct ha_agg_row *r)
{
    return r->wrapper != 0 ? ha_strtab_str(&a->names, r->wrapper) : NULL;
}

/* The module path of row r, or NULL. */
static inline const char *
ha_agg_module(const struct ha_agg *a, const struct ha_agg_row *r)
{
    return r->module != 0 ? ha_strtab_str(&a->names, r->module) : NULL;
}

void ha_agg_free(struct ha_agg *a);

/* Appends `jeprof --text --show_bytes` (or objects) output: the Total
 * line and up to limit rows (0 = all) with flat, flat%, sum%, cum, cum%.
 * Sorts a by flat. */
void ha_agg_format_text(struct ha_agg *a, bool objects, size_t limit,
                        struct ha_buf *out);

/* Which counter of a stack a collapsed line is weighted by. */
enum ha_agg_value {
    HA_AGG_INUSE_BYTES,  /* jeprof --inuse_space (the default) */
    HA_AGG_INUSE_OBJS,   /* --inuse_objects */
    HA_AGG_ALLOC_BYTES,  /* --alloc_space (opt.prof_accum) */
    HA_AGG_ALLOC_OBJS,   /* --alloc_objects */
    HA_AGG_VALUE_MAX
};

/* Appends collapsed stacks of p ("root;...;leaf <n>\n", merged) for
 * flame graphs, weighted by bytes (or objects), frames cut as above.
 * Returns 0 or -1 on allocation failure. */
int ha_agg_collapsed(const struct ha_heapv2 *p, const struct ha_syms *syms,
                     bool objects, struct ha_buf *out);

/* The same, weighted by any of the four counters. */
int ha_agg_collapsed_value(const struct ha_heapv2 *p,
                           const struct ha_syms *syms,
                           enum ha_agg_value value, struct ha_buf *out);

/* Stack s's scaled value of the given counter. */
double ha_agg_stack_value(const struct ha_heapv2_stack *s,
                          enum ha_agg_value value);

/* One stack at a time, with the cut and lookups above, for tables that
 * show stacks and frames (heap_stacks, heap_profile) without building an
 * aggregate. Not thread-safe; syms must outlive the walker. */
struct ha_agg_walker;

/* Cuts with syms' own wrappers. Returns NULL on allocation failure. */
struct ha_agg_walker *ha_agg_walker_new(const struct ha_syms *syms);

/* Cuts with set instead (NULL: syms' own; ha_wrap_set_empty(): no
 * wrapper, only the allocator and inlined entries named like its
 * functions). set must outlive the walker. */
struct ha_agg_walker *ha_agg_walker_new_with(const struct ha_syms *syms,
                                             const struct ha_wrap_set *set);
void ha_agg_walker_free(struct ha_agg_walker *w);

/* Looks up every frame of stack i of p. Returns the index of the site's
 * frame, the first that survives the cut (frames before it are the
 * allocator's and the wrappers'; n_frames when none survives), or
 * SIZE_MAX on allocation failure. The site may be inlined into that
 * frame where a wrapper was: its first ha_agg_cut.skip inline entries
 * (innermost first) are then wrapper code, left out like the frames
 * before it. Frames whose address is at or above 2^63 are kept in the
 * numbering but name nothing (skip them, as jeprof does). */
size_t ha_agg_walker_stack(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                           size_t i);

/* Where the stack last walked was cut. */
struct ha_agg_cut {
    size_t alloc_end;  /* first frame after the allocator's */
    size_t start;      /* the site's frame (ha_agg_walker_stack's) */
    uint32_t skip;     /* inline entries of frame start, innermost first,
                          that are wrapper code; the site is entry skip */
};

void ha_agg_walker_cut(const struct ha_agg_walker *w, struct ha_agg_cut *cut);

/* The part of stack i the wrappers' cut left out (between the
 * allocator's frames and the site) into line (reset first), collapsed as
 * ha_agg_walker_collapsed() writes: root first, so the stack's collapsed
 * form followed by ";" and this is the whole stack past the allocator.
 * Empty when no wrapper was skipped. Returns 0 or -1 on allocation
 * failure. */
int ha_agg_walker_wrapper(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                          size_t i, struct ha_buf *line);

/* The symbolized entry of raw frame j of the stack last walked (looked up
 * at pc - 1 for j > 0), or NULL when the symbolizer had none. */
const struct ha_syms_addr *ha_agg_walker_frame(const struct ha_agg_walker *w,
                                               size_t j);

/* Writes stack i of p into line (reset first) in collapsed form, as one
 * line of ha_agg_collapsed() without its count. Returns 0 or -1 on
 * allocation failure. */
int ha_agg_walker_collapsed(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                            size_t i, struct ha_buf *line);

/* The allocation site of stack i of p, as heap_top counts it flat: the
 * innermost name at the first frame after the allocator's, "f (inline)"
 * when inlined into another, "0x<address>" when nothing names it; into
 * name (reset first). Returns 0, 1 when no frame survives the cut (name
 * empty), or -1 on allocation failure. */
int ha_agg_walker_site(struct ha_agg_walker *w, const struct ha_heapv2 *p,
                       size_t i, struct ha_buf *name);

/* The module of the site the last ha_agg_walker_site() named (its
 * frame's mapped file), or NULL: none, or no site. */
const char *ha_agg_walker_site_module(const struct ha_agg_walker *w);

/* The address jeprof looks up for raw frame j of a stack: the return
 * address minus one for callers (the call instruction), frame 0 as is. */
static inline uint64_t
ha_agg_lookup_pc(const uint64_t *frames, size_t j)
{
    return j == 0 ? frames[0] : frames[j] - 1;
}

#define HA_AGG_HIGH_ADDR (UINT64_C(1) << 63) /* not an address: dropped */

/* The unique lookup addresses of p (frame 0 as is, others pc - 1), sorted,
 * for the symbolizer. *pcs is malloc'd (free() it). Returns 0 or -1. */
int ha_agg_lookup_pcs(const struct ha_heapv2 *p, uint64_t **pcs, size_t *n);

/* The same, and *index (malloc'd, p->n_frames entries): per frame of p,
 * the place of its lookup address in *pcs. A symbolizer's answer for
 * *pcs has its addresses in that order, so the index is what
 * ha_syms_set_frame_index() wants (index may be NULL). */
int ha_agg_lookup_index(const struct ha_heapv2 *p, uint64_t **pcs, size_t *n,
                        uint32_t **index);

/* Per module of a profile (ha_syms.modules, same order). */
struct ha_agg_module {
    size_t frames;  /* distinct addresses looked up in it */
    size_t named;   /* ... of which have a certain name */
    double bytes;   /* in-use bytes of the stacks with a frame in it
                       (allocator frames included: the allocator's
                       module has its bytes too) */
    double objs;
};

/* Fills out[0 .. syms->n_modules) for profile p. Returns 0, or -1 on
 * allocation failure. */
int ha_agg_modules(const struct ha_heapv2 *p, const struct ha_syms *syms,
                   struct ha_agg_module *out);

/* True when name is one of the allocator functions the cut above stops
 * at (with or without jemalloc's "je_" prefix). */
bool ha_agg_is_allocator_name(const char *name);

#endif /* HA_AGGREGATE_H */
