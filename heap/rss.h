/* SPDX-License-Identifier: MIT
 *
 * Where this process's resident memory goes, read live: jemalloc's
 * figures from one refresh of its statistics and /proc/self/smaps, put
 * together by prof/breakdown.h. For the stats_memory_breakdown table
 * (vtab/breakdown.c) and the Prometheus exposition (metrics.c).
 */
#ifndef HA_RSS_H
#define HA_RSS_H

#include <stdbool.h>
#include <stddef.h>

#include "prof/breakdown.h"
#include "heap/heap.h"

/* Paths read for the process's resident memory. */
#define HA_RSS_SMAPS "/proc/self/smaps"
#define HA_RSS_STATUS "/proc/self/status"

/* Refreshes jemalloc's statistics when refresh is set (within
 * jemalloc-stats_max_age_ms; a caller that just did passes false), reads
 * them on the calling thread, then the process's memory: with detailed,
 * /proc/self/smaps on the worker thread (ha_task_offload: the kernel
 * walks every page table to write it, milliseconds per hundred MB, so
 * neither the loop nor the host's other readers should wait on it
 * whole), else /proc/self/status (the kernel's counters; no walk), and
 * fills rows[HA_BREAKDOWN_ROWS]. Sources that cannot be read leave their
 * rows unknown. Returns 0, or -1 when the calling statement was stopped
 * meanwhile (err set). */
int ha_rss_read(struct ha_heap *heap, bool refresh, bool detailed,
                struct ha_breakdown_row *rows, char *err, size_t errlen);

#endif /* HA_RSS_H */
