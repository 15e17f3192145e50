/* SPDX-License-Identifier: MIT
 *
 * A series of dumps ranked by growth (heap_growth.c): what the SQL tables
 * heap_growth and heap_growth_stacks read, and what the /heap page's
 * growth view draws. One result per series, kept for the next asker
 * (heap->growth, keyed by the series' files with their sizes and times).
 *
 * Loop thread only: results are reference counted without atomics. A
 * result never changes once made, but for its products, which faces land
 * on the loop.
 */
#ifndef HA_HEAP_GROWTH_H
#define HA_HEAP_GROWTH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "heap/heap.h"
#include "heap/products.h"
#include "prof/dumpseries.h"
#include "prof/growth.h"

struct ha_heap;

struct ha_heap_growth {
    int refs;
    char *key;                 /* the series' files, for the cache */
    struct ha_growth funcs;    /* per allocation-site function, finished */
    struct ha_growth stacks;   /* per collapsed stack, finished */
    size_t n_dumps;
    double hours;              /* first dump to last */
    char *first_dump, *last_dump;
    char *skipped;             /* the dumps left out, each with why
                                  ("a.heap: ...; b.heap: ..."); NULL:
                                  none. n_dumps counts those used. */
    char **dumps;              /* the series' file names, in time order */
    double *t_s;               /* their times, unix seconds */
    struct ha_products products; /* what faces made of it, kept
                                  (heap/products.h) */
};

/* The series args[0..2] (since, until, kind; see prof/dumpseries.h) of
 * the datadir's dumps, ranked: from the cache, or computed now (listing
 * and summing on the worker thread while the calling task waits). On
 * success *out holds a reference (ha_heap_growth_put). Returns 0,
 * HA_HEAP_ERROR with err saying what was wrong (a bad argument and the
 * forms allowed, no such dump, a dump that does not parse), or
 * HA_HEAP_STOPPED (heap/profiles.h). */
int ha_heap_growth_get(struct ha_heap *heap, bool admin,
                       const struct ha_dumpseries_arg args[3],
                       struct ha_heap_growth **out, char *err,
                       size_t errlen);

/* Frees the kept result (ha_heap_caches_free). */
void ha_heap_growth_free(struct ha_heap *heap);

/* Drops a reference. NULL-tolerant. */
void ha_heap_growth_put(struct ha_heap_growth *g);

#endif /* HA_HEAP_GROWTH_H */
