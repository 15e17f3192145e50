/* SPDX-License-Identifier: MIT
 *
 * Fragmentation laid at call sites' doors: each small size class's free
 * regions (its slabs' bytes less its regions in use, from the bins read
 * in the same pass as the profile) shared among the call sites whose
 * sampled objects are in that class, in proportion to their estimated
 * regions there. The way jemalloc's maintainers suggested instead of a
 * fork: join each sampled object to its size class.
 *
 * Each sampled object is placed in its own class, never at a stack's
 * mean: a heap_v2 dump gives per stack only a count and a byte total
 * (jemalloc 5.3 "pre-unbiases" them, prof_do_unbias in src/prof_data.c),
 * and one stack often allocates objects of several classes (redis's
 * value strings of every length come from one). So, per stack:
 *
 *   1. recorded: the usable sizes of its live samples recorded beside the
 *      profile (prof/livesizes.h, from jemalloc's recent-allocation
 *      records). When they account for the dump's count and bytes
 *      exactly (recomputed as jemalloc computes them), every sample is
 *      placed by its own size: exact. When they are some of its samples,
 *      those are placed exactly and the rest (the dump's figures less
 *      theirs) is estimated as below, the recorded ones giving its shape.
 *   2. one sample: a stack the dump counts as one sample is that
 *      sample's size (its byte count): exact.
 *   3. mean: a stack (or rest) whose mean size is a class's (within 2 %:
 *      neighbouring classes are 12.5 % and more apart) goes there, if the
 *      class holds that many regions (beyond 3 sigma of sampling error
 *      with the others there); estimated.
 *   4. fitted: the rest goes where the classes have regions not yet
 *      claimed by the rules above, never more than they hold; estimated.
 *      A rest shaped by recorded sizes is spread by an iterative
 *      proportional fit over those sizes' classes (tilted exponentially
 *      in size to keep its count and bytes; a class's factor scaled down
 *      while the stacks would give it more than its room). A stack with
 *      no recorded size (largest first) takes the two nearest classes
 *      around its mean that have room, split so its bytes hold, and
 *      where one has too little fills it and goes round again with the
 *      rest's own mean: the least spread that keeps count and bytes,
 *      which is the old two-class split wherever the classes had room
 *      and spreads as wide as the classes' regions make it.
 *
 * Regions: each sample of usable size u stands for 1/(1 - exp(-u/P))
 * objects (P the sample period; weighted by its own size, not a mean),
 * and is itself kept by jemalloc 5.3 on a page of its own, outside the
 * slabs: a sample counts exp(-u/P)/(1 - exp(-u/P)) regions. No class is
 * given more regions than its curregs: a class whose estimate exceeds
 * them is scaled down to them (capped). The estimate of a class's total
 * has a standard error of sqrt(curregs * (w - 1)) regions, w =
 * 1/(1 - exp(-size/P)) (Poisson sampling): that many regions more or
 * fewer than it holds is sampling error. Regions beyond what the samples
 * account for by more than 3 such errors get a row of their own with no
 * function, as does a class with free regions and no sampled object, so
 * the rows always add up to the classes' free bytes: the breakdown's
 * jemalloc.fragmentation.slabs. A mean above the largest small class is
 * large objects: not here.
 *
 * Pure: the profile, its symbols, the sizes and the bins come from
 * elsewhere.
 */
#ifndef HA_FRAGMENT_H
#define HA_FRAGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/aggregate.h"
#include "prof/dumpmem.h"
#include "prof/heapv2.h"
#include "prof/livesizes.h"
#include "prof/syms.h"

/* How a row's regions were placed (ha_frag_row.how). */
#define HA_FRAG_RECORDED (1u << 0) /* by recorded sizes: exact */
#define HA_FRAG_ONE      (1u << 1) /* by a one-sample stack's size: exact */
#define HA_FRAG_MEAN     (1u << 2) /* by a stack's mean size */
#define HA_FRAG_FITTED   (1u << 3) /* by the capacity fit */
#define HA_FRAG_RESCALED (1u << 4) /* recorded sizes of another moment
                                      than the dump, scaled to its count */
#define HA_FRAG_CAPPED   (1u << 5) /* the class's estimate exceeded its
                                      curregs: scaled down to them */

/* What a row without a function stands for. */
enum ha_frag_rest {
    HA_FRAG_SITE,        /* not such a row: a call site's */
    HA_FRAG_NONE_LIVE,   /* the class's regions; no sampled object in it */
    HA_FRAG_UNACCOUNTED, /* regions beyond what its samples account for */
};

struct ha_frag_row {
    uint32_t name;        /* (names) function, or collapsed stack for the
                             _stacks form; 0: none (rest says why) */
    uint32_t module;      /* (names) the site's module; 0: none */
    size_t bin;           /* index into the bins given */
    double live_regions;  /* estimated regions of this site in the class's
                             slabs */
    double exact_regions; /* of which placed exactly (recorded sizes, a
                             single sample) */
    double free_bytes;    /* its share of the class's free bytes */
    unsigned how;         /* HA_FRAG_* */
    double fit_mean;      /* HA_FRAG_FITTED: the largest such stack's
                             mean size (bytes) */
    enum ha_frag_rest rest;
};

struct ha_frag {
    struct ha_frag_row *rows;   /* largest free_bytes first */
    size_t n_rows;
    struct ha_strtab names;
    const struct ha_dumpmem_bin *bins; /* as given (not owned) */
    size_t n_bins;
    uint64_t period;            /* the profile's sample period, bytes */
    int64_t sampling_since;     /* as given (ha_dumpmem's) */
    enum ha_livesizes_state sizes; /* how sizes were known */
    char sizes_why[160];        /* HA_LIVESIZES_OFF: why none */
    double total_free;          /* sum over the classes: what the rows
                                   add up to */
    double class_free[HA_DUMPMEM_BINS_MAX];    /* per bin */
    double class_regions[HA_DUMPMEM_BINS_MAX]; /* call sites' estimated
                                                  regions per bin */
    size_t stacks_exact;        /* stacks placed exactly */
    size_t stacks_estimated;    /* stacks placed in part by estimate */
};

/* What a computation reads. */
struct ha_frag_in {
    const struct ha_heapv2 *p;        /* the profile */
    const struct ha_syms *syms;       /* its symbols */
    const struct ha_dumpmem_bin *bins; /* n_bins <= HA_DUMPMEM_BINS_MAX,
                                         sizes ascending */
    size_t n_bins;
    const struct ha_livesizes *sizes; /* NULL: none recorded */
    int64_t sampling_since;           /* ha_dumpmem.sampling_since */
    bool stacks;                      /* one row per stack and class
                                         (named by its collapsed stack)
                                         instead of per allocation-site
                                         function */
};

/* Computes the rows (see above). Returns 0, or -1 with err (allocation
 * failure, or no bins). */
int ha_frag_compute(const struct ha_frag_in *in, struct ha_frag *out,
                    char *err, size_t errlen);

void ha_frag_free(struct ha_frag *f);

/* The note of row r of f into out (len bytes; "" when there is nothing
 * to say: a call site's row placed exactly). A call site's row says what
 * of it is estimated and how; a row without a function says why no
 * sample stands for those regions: too few to expect one at this rate,
 * or, when more were expected, when sampling started as far as
 * heapadmin saw (objects older than that are not in the profile). */
void ha_frag_note(const struct ha_frag *f, const struct ha_frag_row *r,
                  char *out, size_t len);

/* A class's utilization: curregs / (curslabs * nregs); -1 without
 * slabs. */
double ha_frag_utilization(const struct ha_dumpmem_bin *b);

/* A class's free bytes: curslabs * slab_size - curregs * size (>= 0). */
uint64_t ha_frag_class_free(const struct ha_dumpmem_bin *b);

/* Objects one sample of usable size usize stands for at sample period
 * period: 1/(1 - exp(-usize/period)); 1 when period is 0. */
double ha_frag_weight(uint64_t period, uint64_t usize);

/* The sampled objects a class's curregs would hold on average at
 * period: curregs / (w - 1), w = ha_frag_weight(period, its size); the
 * number of them is Poisson. -1 when period is 0. */
double ha_frag_expected_samples(uint64_t period,
                                const struct ha_dumpmem_bin *b);

/* The standard error of a class's estimated regions at period:
 * sqrt(curregs * (w - 1)); 0 when period is 0. */
double ha_frag_sigma(uint64_t period, const struct ha_dumpmem_bin *b);

/* A dump's counts for samples[0 .. n) (usable sizes, each with a count)
 * as jemalloc 5.3 writes them with opt.prof_unbias at period: the
 * shifted unbiased sums run through prof_do_unbias (src/prof_data.c),
 * into *objs and *bytes. Exposed for tests. */
void ha_frag_unbiased_counts(uint64_t period, const uint64_t *usize,
                             const uint64_t *count, size_t n,
                             uint64_t *objs, uint64_t *bytes);

#endif /* HA_FRAGMENT_H */
