/* SPDX-License-Identifier: MIT
 *
 * An open-addressed map from a 64-bit key to a 32-bit value (linear
 * probing, kept at most half full), for the ids the heap-profile code
 * maps to one another: a DIE's offset to its function's interned name, a
 * string of one table to the same string in another, a (parent, name)
 * pair to a node. A zeroed struct is an empty map. One owner at a time.
 */
#ifndef HA_IDMAP_H
#define HA_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ha_idmap {
    uint64_t *keys;
    uint32_t *vals;  /* value + 1; 0: empty */
    size_t cap;      /* power of two, or 0 */
    size_t n;        /* keys in the map */
};

/* True with *val set when key is in m. */
bool ha_idmap_get(const struct ha_idmap *m, uint64_t key, uint32_t *val);

/* Adds key (not yet in m) with val (below UINT32_MAX). Returns 0, or -1
 * for val UINT32_MAX or on allocation failure (the map is then
 * unchanged). */
int ha_idmap_put(struct ha_idmap *m, uint64_t key, uint32_t val);

/* Empties m, keeping its memory. */
void ha_idmap_clear(struct ha_idmap *m);

/* Frees m's memory; m is then an empty map. */
void ha_idmap_free(struct ha_idmap *m);

#endif /* HA_IDMAP_H */
