/* SPDX-License-Identifier: MIT
 *
 * Fragmentation laid at call sites' doors: each small size class's free
 * regions (its slabs' bytes less its regions in use, from the bins read
 * in the same pass as the profile) shared among the call sites whose
 * sampled objects are in that class, in proportion to their estimated
 * live regions (the profile's objects, scaled as jeprof scales them).
 * The way jemalloc's maintainers suggested instead of a fork: join each
 * sampled stack to its size class.
 *
 * A stack's size class is its sampled objects' mean usable size (the
 * profile records usable sizes): a mean that is a class's size (within
 * 2 %: jemalloc 5.3's unbiased counts stray that little) puts all of it
 * there; any other mean means its objects span several classes, and it
 * is split between the two classes around the mean so that count and
 * bytes both hold (noted on its rows). A mean above the largest small
 * class is large objects: not here.
 *
 * Statistical, exact only in total: the profile samples, and jemalloc
 * 5.3 promotes every sampled small object to a page of its own, so the
 * sampled objects themselves are not in the slabs they stand for. A
 * class with free regions and no sampled objects gets one row of its
 * own with no function, so the rows always add up to the classes' free
 * bytes: the breakdown's jemalloc.fragmentation.slabs.
 *
 * Pure: the profile, its symbols and the bins come from elsewhere.
 */
#ifndef HA_FRAGMENT_H
#define HA_FRAGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/aggregate.h"
#include "prof/dumpmem.h"
#include "prof/heapv2.h"
#include "prof/syms.h"

struct ha_frag_row {
    uint32_t name;        /* (names) function, or collapsed stack for the
                             _stacks form; 0: none (the class's free
                             regions with no sampled objects) */
    uint32_t module;      /* (names) the site's module; 0: none */
    size_t bin;           /* index into the bins given */
    double live_regions;  /* estimated regions of this site in the class */
    double free_bytes;    /* its share of the class's free bytes */
    bool split;           /* some of its objects came from a stack whose
                             mean size is no class's */
    double split_mean;    /* the largest such stack's mean (bytes) */
};

struct ha_frag {
    struct ha_frag_row *rows;   /* largest free_bytes first */
    size_t n_rows;
    struct ha_strtab names;
    const struct ha_dumpmem_bin *bins; /* as given (not owned) */
    size_t n_bins;
    double total_free;          /* sum over the classes: what the rows
                                   add up to */
    double class_free[HA_DUMPMEM_BINS_MAX]; /* per bin */
    double class_regions[HA_DUMPMEM_BINS_MAX]; /* sampled sites' estimated
                                                  regions per bin */
};

/* Computes the rows for profile p (symbolized by syms) against bins[0 ..
 * n_bins) (n_bins <= HA_DUMPMEM_BINS_MAX, sizes ascending). stacks: one
 * row per stack and class (named by its collapsed stack) instead of per
 * allocation-site function. Returns 0, or -1 with err (allocation
 * failure, or no bins). */
int ha_frag_compute(const struct ha_heapv2 *p, const struct ha_syms *syms,
                    const struct ha_dumpmem_bin *bins, size_t n_bins,
                    bool stacks, struct ha_frag *out, char *err,
                    size_t errlen);

void ha_frag_free(struct ha_frag *f);

/* A class's utilization: curregs / (curslabs * nregs); -1 without
 * slabs. */
double ha_frag_utilization(const struct ha_dumpmem_bin *b);

/* A class's free bytes: curslabs * slab_size - curregs * size (>= 0). */
uint64_t ha_frag_class_free(const struct ha_dumpmem_bin *b);

/* Where a stack of objs sampled objects with bytes usable bytes falls:
 * into bins lo and hi (equal when the mean is a class's size) with
 * share_lo of the objects in lo. Returns false when its mean is above
 * every class (large objects) or it has no objects. Exposed for tests. */
bool ha_frag_classes(const struct ha_dumpmem_bin *bins, size_t n_bins,
                     uint64_t objs, uint64_t bytes, size_t *lo, size_t *hi,
                     double *share_lo);

#endif /* HA_FRAGMENT_H */
