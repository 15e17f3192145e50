/* SPDX-License-Identifier: MIT
 *
 * Stack traces of sampled allocations as jemalloc writes them outside a
 * heap dump (the prof_log file, the recent allocations): arrays of
 * "0x..." return addresses, allocation site (or free site) first. Kept
 * once each (a document repeats the same trace for every allocation made
 * there), and turned into the heap-profile model (prof/heapv2.h: one
 * "stack" per trace, the maps text beside) so that the one symbolizer,
 * the one allocation-site rule (prof/aggregate.h) and the one cache of
 * loaded profiles serve them as they serve dumps.
 *
 * Pure: no I/O.
 */
#ifndef HA_TRACES_H
#define HA_TRACES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/heapv2.h"

/* Longest trace kept: jemalloc's PROF_BT_MAX is 128. */
#define HA_TRACES_MAX_FRAMES 256

struct ha_traces {
    uint64_t *frames;   /* every trace's addresses, concatenated */
    size_t n_frames, cap_frames;
    uint32_t *off;      /* per trace: first frame */
    uint32_t *len;      /* per trace: frames */
    size_t n, cap;
    uint32_t *index;    /* open-addressed: hash -> trace + 1 */
    size_t index_cap;   /* power of two; 0: no dedup index */
};

/* Adds frames[0 .. n) as a trace, or finds the same one added before;
 * *id gets its index. With dedup false every call adds a trace (a
 * document's own numbering kept). Returns 0, or -1 on allocation
 * failure or a trace longer than HA_TRACES_MAX_FRAMES. */
int ha_traces_add(struct ha_traces *t, const uint64_t *frames, size_t n,
                  bool dedup, uint32_t *id);

static inline const uint64_t *
ha_traces_frames(const struct ha_traces *t, size_t id)
{
    return t->frames + t->off[id];
}

void ha_traces_free(struct ha_traces *t);

/* The traces as a heap profile: stack i = trace i with the counters
 * objs[i] / bytes[i] (scaled already; NULL: zero), period for the
 * record, and maps (a copy of /proc/<pid>/maps, NUL-terminated; may be
 * "") as its MAPPED_LIBRARIES. out is zeroed first; free it with
 * ha_heapv2_free(). Returns 0 or -1 on allocation failure. */
int ha_traces_as_heapv2(const struct ha_traces *t, const double *objs,
                        const double *bytes, uint64_t period,
                        const char *maps, size_t maps_len,
                        struct ha_heapv2 *out);

#endif /* HA_TRACES_H */
