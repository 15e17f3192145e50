/* SPDX-License-Identifier: MIT
 *
 * What heap profiles tell that /metrics carries (heap/metrics.c writes
 * it with the rest), so an alert can name a function and a dashboard a
 * thread pool:
 *
 *   heapadmin_leak_site_growth_bytes_per_second{program,pid,function,rank}
 *                        gauge  a leaking site's slope (heap_growth's
 *                        bytes_per_hour / 3600)
 *   heapadmin_leak_site_growth_r2{program,pid,function,rank}
 *                        gauge  how well a line fits its growth, 0..1
 *   heapadmin_leak_site_info{program,pid,function,rank,pattern}
 *                        gauge  1; pattern as heap_growth says it
 *                        (steady, growing, step, ...)
 *     The top sites (heap_growth's rank, a positive score only) of the
 *     last series the leak watch took, ranked when it ends: at most
 *     jemalloc_variables.leak_watch_sites (<= 10) per family and process,
 *     replaced whole at the next series and gone with the process, so a
 *     process never has more than 3 x 10 of these series. pid is the
 *     series' process (the dumps' names).
 *   heapadmin_thread_live_bytes{program,thread_name}
 *                        gauge  in-use bytes by thread name (every thread
 *                        of a name summed: a pool of 64 workers is one
 *                        series; "" for threads without a name), of the
 *                        newest profile of this process heapadmin read (a
 *                        live one, or a dump this process wrote): what
 *                        heap_threads of it gives, summed by name
 *   heapadmin_thread_profile_timestamp_seconds{program}
 *                        gauge  when that profile was taken
 *     Present once a profile with thread lines was read; names need
 *     prof_sys_thread_name (MALLOC_CONF) or thread.prof.name.
 *
 * program is heap->program (the registry's name of this process), so a
 * host gateway, which sets program and pid itself from what the kernel
 * proves, keeps one label of each (core/exposcan.h).
 *
 * Loop thread, like the heap's caches.
 */
#ifndef HA_PROFMETRICS_H
#define HA_PROFMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/expo.h"
#include "heap/heap.h"

struct ha_growth;
struct ha_threads_row;

/* A series of process pid has been ranked, funcs its per-function rows
 * (heap/growth.h's ha_heap_growth.funcs, finished): its top sites (at
 * most heap->je->leak_watch_sites) replace the last series'. */
void ha_profmetrics_set_sites(struct ha_heap *heap, long long pid,
                              const struct ha_growth *funcs);

/* A profile was read (heap/profiles.h: its name, 'live' or a dump's,
 * when it was taken, the thread rows made from it, prof/threads.h): when
 * it is of this process and newer than the one the thread figures are
 * of, they become its. */
void ha_profmetrics_note_profile(struct ha_heap *heap, const char *name,
                                 bool live, int64_t taken_ns,
                                 const struct ha_threads_row *rows,
                                 size_t n_rows);

/* Writes the families above (those with figures) into e. */
void ha_profmetrics_write(struct ha_heap *heap, struct ha_expo *e);

/* Frees what heap keeps of them (ha_heap_caches_free). */
void ha_profmetrics_free(struct ha_heap *heap);

#endif /* HA_PROFMETRICS_H */
