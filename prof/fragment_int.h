/* SPDX-License-Identifier: MIT
 *
 * What the files of fragmentation by call site (fragment.h) share: one
 * computation's state, the rows keyed by (site, class) and how regions
 * are added to them (fragment_rows.c), the stacks left to place by
 * estimate (fragment_estimate.c). fragment_share.c runs the computation
 * with them. Private to prof/fragment*.c.
 */
#ifndef HA_FRAGMENT_INT_H
#define HA_FRAGMENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/dumpmem.h"
#include "prof/fragment.h"

#define SIGMAS 3.0         /* beyond this many standard errors: not noise */

/* Row lookup by (name, bin). */
struct index {
    uint64_t *keys;   /* (name << 8 | bin) + 1; 0 empty */
    uint32_t *vals;   /* row */
    size_t cap;       /* power of two */
    size_t n;
};

/* Everything one computation holds. */
struct work {
    const struct ha_frag_in *in;
    struct ha_frag *f;
    struct index ix;
    size_t cap;                          /* rows allocated */
    double claimed[HA_DUMPMEM_BINS_MAX]; /* regions placed so far */
};

/* A stack's objects (or the part its recorded sizes leave) to place by
 * estimate. */
struct pend {
    uint32_t name, module;
    double objs, bytes;   /* objects they stand for, and their bytes */
    double *seed;         /* per bin: the recorded samples' objects;
                             NULL: none (the classes' room instead) */
    long mean_bin;        /* the class its mean is; -1: none */
    bool fit;             /* left to the fit */
};

/* ------------------------------------------------------------------ */
/* Rows (fragment_rows.c)                                              */
/* ------------------------------------------------------------------ */

long ha_fragment_row_for(struct ha_frag *f, struct index *ix, size_t *cap,
                         uint32_t name, uint32_t module, size_t bin);
int ha_fragment_add(struct work *wk, uint32_t name, uint32_t module,
                    size_t bin, double regions, double exact, unsigned how,
                    double mean);

/* ------------------------------------------------------------------ */
/* Estimates (fragment_estimate.c)                                     */
/* ------------------------------------------------------------------ */

int ha_fragment_estimate(struct work *wk, struct pend *pend, size_t n_pend);

#endif
