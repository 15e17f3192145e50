/* SPDX-License-Identifier: MIT
 *
 * Allocation wrappers found in a profile's own stacks (the rule is in
 * prof/wrappers.h), and where a set's names show in a profile. Apart
 * from wrappers.c because it walks the stacks with the aggregate's cut
 * (prof/aggregate.h), which itself reads the sets wrappers.h defines.
 *
 * Pure: no I/O.
 */
#ifndef HA_WRAPDETECT_H
#define HA_WRAPDETECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/heapv2.h"
#include "prof/syms.h"
#include "prof/wrappers.h"

/* Makes the set for profile p symbolized by syms (p NULL: no detection)
 * under conf (NULL: no edits) into *out (free with ha_wrap_set_free).
 * Returns 0, or -1 on allocation failure (err set). */
int ha_wrap_set_make(const struct ha_wrap_conf *conf,
                     const struct ha_heapv2 *p, const struct ha_syms *syms,
                     struct ha_wrap_set **out, char *err, size_t errlen);

/* How one name of a set shows in a profile (heap_wrappers). */
struct ha_wrap_use {
    const struct ha_wrap_entry *e; /* in the set's e (a wrapper) or
                                      other (not one) */
    bool wrapper;
    uint64_t stacks;   /* a wrapper: stacks whose cut skipped it; not
                          one: stacks whose site it is */
    double bytes;      /* those stacks' in-use bytes, scaled */
    double objs;
    double accum_bytes; /* ... and cumulative */
    uint32_t module;   /* (syms strs) the module of its first frame seen;
                          0: none */
};

/* The uses of set's names in profile p (symbolized by syms, cut with
 * set) into *out (malloc'd, *n rows): every name that occurs, and the
 * operator's and detection's names even when they do not; wrappers
 * first, then by bytes, then by name. Returns 0 or -1 on allocation
 * failure (err set). */
int ha_wrap_uses(const struct ha_heapv2 *p, const struct ha_syms *syms,
                 const struct ha_wrap_set *set, struct ha_wrap_use **out,
                 size_t *n, char *err, size_t errlen);

#endif /* HA_WRAPDETECT_H */
