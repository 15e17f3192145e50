/* SPDX-License-Identifier: MIT
 *
 * jemalloc's size classes, read once through mallctl (they never change
 * in a process): the small classes (bins: region size, regions per slab,
 * slab size) and the large ones (lextents). For the statistics tables
 * and for what sets figures per size class against each other (the RSS
 * breakdown's fragmentation).
 */
#ifndef HA_SIZECLASSES_H
#define HA_SIZECLASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap/mallctl.h"
#include "prof/dumpmem.h"

struct ha_sizeclasses {
    bool loaded;          /* read (ok or not) */
    bool ok;              /* every figure below was read */
    size_t page;          /* arenas.page */
    unsigned nbins;       /* arenas.nbins */
    size_t *bin_size;     /* arenas.bin.<j>.size */
    uint32_t *bin_nregs;  /* arenas.bin.<j>.nregs */
    size_t *bin_slab;     /* arenas.bin.<j>.slab_size */
    unsigned nlextents;   /* arenas.nlextents */
    size_t *lext_size;    /* arenas.lextent.<j>.size */
};

/* Reads c once (later calls return at once); c starts zeroed. Returns
 * true when c->ok. */
bool ha_sizeclasses_load(const struct ha_mallctl_ops *ops,
                         struct ha_sizeclasses *c);

/* The small classes' slabs merged over every arena (stats.arenas.
 * <all>.bins.<j>.curregs and curslabs, with c's constants) into
 * out[0 .. *n), from the statistics as last refreshed (the caller writes
 * "epoch" first), less heapadmin's own arena's in a host
 * (HA_MALLCTL_OWN_ARENA): the host's heap. Returns 0, or -1 when a
 * figure cannot be read or c is not loaded (*n is 0). Any thread. */
int ha_sizeclasses_read_bins(const struct ha_mallctl_ops *ops,
                             const struct ha_sizeclasses *c,
                             struct ha_dumpmem_bin *out, size_t max,
                             size_t *n);

/* Frees what ha_sizeclasses_load allocated and zeroes c. */
void ha_sizeclasses_free(struct ha_sizeclasses *c);

#endif /* HA_SIZECLASSES_H */
