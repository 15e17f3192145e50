/* SPDX-License-Identifier: MIT
 *
 * The leak watch: evidence gathered unattended. When resident memory has
 * grown by more than jemalloc_variables.leak_watch_growth_bytes over the
 * last leak_watch_window_s seconds (read from stats_history's samples,
 * engine/history.h, as each one is stored), it turns sampling on (at
 * leak_watch_lg_prof_sample, or the current rate), takes a dump at once
 * and then every leak_watch_dump_interval_s until leak_watch_dumps are
 * taken (automatic dumps: the free-space floor and the retention rules
 * apply), and then puts sampling back as it was. By the time an operator
 * looks, heap_growth has a series to rank; jemalloc-leak_watch_state
 * names it, and the log has each step. A complete series is also ranked
 * at once (engine/leakrank.h), so its top sites reach /metrics.
 *
 * It runs no timer of its own while it watches (the history sampler's
 * is the one an idle daemon has); a timer exists only while a series is
 * being taken. A new series can start once the growth is seen again in
 * samples taken after the last one ended.
 *
 * Sampling and the operator: when sampling was already on, the watch
 * leaves the rate alone (prof.reset would discard the operator's
 * samples) and only dumps; when it was off, the watch sets the rate
 * (discarding stale samples, logged), turns it on, and at the end turns
 * it off and puts the rate back (the series is on disk by then).
 */
#ifndef HA_LEAKWATCH_H
#define HA_LEAKWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "engine/history.h"
#include "engine/leakrank.h"
#include "core/worker.h"
#include "heap/jeconfig.h"
#include "heap/heap.h"

struct ha_leakwatch;

/* Starts watching h's samples as heap->je says; a series' dumps are
 * written on worker's thread, and a complete series is handed to rank
 * (NULL: none). Returns NULL when the watch is off
 * (leak_watch_growth_bytes 0), or cannot run (no history: logged). heap,
 * worker and h must outlive it, rank until ha_leakwatch_free. */
struct ha_leakwatch *ha_leakwatch_new(struct event_base *base,
                                      struct ha_worker *worker,
                                      struct ha_heap *heap,
                                      struct ha_history *h,
                                      struct ha_leakrank *rank);

/* Stops (a series in progress ends where it is, sampling put back).
 * NULL is a no-op. */
void ha_leakwatch_free(struct ha_leakwatch *w);

/* struct ha_vtab_ctx's engine_value: "jemalloc-leak_watch_state" as
 * text (w may be NULL: "off"). */
bool ha_leakwatch_value(const void *w, const char *name, char *buf,
                        size_t len);

/* Whether resident memory grew by more than growth_bytes from oldest to
 * newest; why gets the figures either way ("+300.0 MiB over 3600 s").
 * Pure. */
bool ha_leakwatch_grown(long long growth_bytes, int64_t oldest_ts,
                        int64_t oldest_resident, int64_t newest_ts,
                        int64_t newest_resident, char *why, size_t whylen);

#endif /* HA_LEAKWATCH_H */
