/* SPDX-License-Identifier: MIT
 *
 * The sizes the agent asks its arena for (slabsize.c).
 */
#ifndef HA_AGENT_SLABSIZE_H
#define HA_AGENT_SLABSIZE_H

#include <stddef.h>

/* The size an allocation of n bytes (n > 0) is made as: n rounded up to
 * a jemalloc size class whose slab is one page (4 KiB pages): 8 to
 * 4096 bytes to the next power of two, up to 8 KiB to 8 KiB, up to
 * 16 KiB to 16 KiB (the first large class); larger sizes unchanged.
 * Never less than n. */
size_t ha_agent_slab_size(size_t n);

#endif /* HA_AGENT_SLABSIZE_H */
