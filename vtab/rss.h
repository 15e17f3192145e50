/* SPDX-License-Identifier: MIT
 *
 * Where this process's resident memory goes, read live: jemalloc's
 * figures from one refresh of its statistics and /proc/self/smaps, put
 * together by prof/breakdown.h. For the stats_memory_breakdown table
 * (rss.c) and the Prometheus exposition (metrics.c).
 */
#ifndef HA_RSS_H
#define HA_RSS_H

#include <stdbool.h>
#include <stddef.h>

#include "prof/breakdown.h"
#include "vtab/vtab_util.h"

/* Path read for the process's mappings. */
#define HA_RSS_SMAPS "/proc/self/smaps"

/* Refreshes jemalloc's statistics when refresh is set (within
 * jemalloc-stats_max_age_ms; a caller that just did passes false), reads
 * them on the calling thread and /proc/self/smaps on the worker
 * thread (ha_task_offload: a process with many mappings takes
 * milliseconds to describe), and fills rows[HA_BREAKDOWN_ROWS]. Sources
 * that cannot be read leave their rows unknown. Returns 0, or -1 when
 * the calling statement was stopped meanwhile (err set). */
int ha_rss_read(struct ha_vtab_ctx *ctx, bool refresh,
                struct ha_breakdown_row *rows, char *err, size_t errlen);

#endif /* HA_RSS_H */
