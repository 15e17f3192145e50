/* SPDX-License-Identifier: MIT
 *
 * jemalloc's size classes (sizeclasses.h).
 */
#include "heap/sizeclasses.h"

#include <stdlib.h>
#include <string.h>


bool
ha_sizeclasses_load(const struct ha_mallctl_ops *ops,
                        struct ha_sizeclasses *c)
{
    struct ha_mallctl_mib m_size = {0}, m_nregs = {0}, m_slab = {0},
                          m_lsize = {0};
    bool ok;

    if (c->loaded)
        return c->ok;
    c->loaded = true;
    ok = ha_mallctl_read_size(ops, "arenas.page", &c->page) == 0 &&
         ha_mallctl_read_unsigned(ops, "arenas.nbins", &c->nbins) == 0 &&
         ha_mallctl_read_unsigned(ops, "arenas.nlextents", &c->nlextents) ==
             0 &&
         c->nbins <= 1024 && c->nlextents <= 1024;
    if (!ok)
        return false;
    c->bin_size = calloc(c->nbins + 1, sizeof(*c->bin_size));
    c->bin_nregs = calloc(c->nbins + 1, sizeof(*c->bin_nregs));
    c->bin_slab = calloc(c->nbins + 1, sizeof(*c->bin_slab));
    c->lext_size = calloc(c->nlextents + 1, sizeof(*c->lext_size));
    if (c->bin_size == NULL || c->bin_nregs == NULL || c->bin_slab == NULL ||
        c->lext_size == NULL)
        return false;
    for (unsigned j = 0; ok && j < c->nbins; j++)
        ok = ha_mallctl_read_at(ops, "arenas.bin.%u.size", &m_size, j, 0,
                                &c->bin_size[j], sizeof(size_t)) == 0 &&
             ha_mallctl_read_at(ops, "arenas.bin.%u.nregs", &m_nregs, j, 0,
                                &c->bin_nregs[j], sizeof(uint32_t)) == 0 &&
             ha_mallctl_read_at(ops, "arenas.bin.%u.slab_size", &m_slab, j,
                                0, &c->bin_slab[j], sizeof(size_t)) == 0;
    for (unsigned j = 0; ok && j < c->nlextents; j++)
        ok = ha_mallctl_read_at(ops, "arenas.lextent.%u.size", &m_lsize, j,
                                0, &c->lext_size[j], sizeof(size_t)) == 0;
    c->ok = ok;
    return ok;
}

void
ha_sizeclasses_free(struct ha_sizeclasses *c)
{
    free(c->bin_size);
    free(c->bin_nregs);
    free(c->bin_slab);
    free(c->lext_size);
    memset(c, 0, sizeof(*c));
}

int
ha_sizeclasses_read_bins(const struct ha_mallctl_ops *ops,
                         const struct ha_sizeclasses *c,
                         struct ha_dumpmem_bin *out, size_t max, size_t *n)
{
    struct ha_mallctl_mib m_regs = {0}, m_slabs = {0}, o_regs = {0},
                          o_slabs = {0};
    unsigned own = 0;
    bool apart = ha_mallctl_read_unsigned(ops, HA_MALLCTL_OWN_ARENA, &own) ==
                 0;

    *n = 0;
    if (!c->ok || c->nbins > max)
        return -1;
    for (unsigned j = 0; j < c->nbins; j++) {
        size_t regs, slabs, oregs = 0, oslabs = 0;

        if (ha_mallctl_read_at(ops, "stats.arenas.%u.bins.%u.curregs",
                               &m_regs, HA_MALLCTL_ARENAS_ALL, j, &regs,
                               sizeof(regs)) != 0 ||
            ha_mallctl_read_at(ops, "stats.arenas.%u.bins.%u.curslabs",
                               &m_slabs, HA_MALLCTL_ARENAS_ALL, j, &slabs,
                               sizeof(slabs)) != 0) {
            *n = 0;
            return -1;
        }
        /* heapadmin's own arena is not the host's heap (api/arena.h): its
         * slabs are taken off, as its bytes are off stats.allocated */
        if (apart &&
            (ha_mallctl_read_at(ops, "stats.arenas.%u.bins.%u.curregs",
                                &o_regs, own, j, &oregs,
                                sizeof(oregs)) != 0 ||
             ha_mallctl_read_at(ops, "stats.arenas.%u.bins.%u.curslabs",
                                &o_slabs, own, j, &oslabs,
                                sizeof(oslabs)) != 0))
            oregs = oslabs = 0;
        out[j] = (struct ha_dumpmem_bin){
            c->bin_size[j], c->bin_nregs[j], c->bin_slab[j],
            regs > oregs ? regs - oregs : 0,
            slabs > oslabs ? slabs - oslabs : 0};
    }
    *n = c->nbins;
    return 0;
}
