/* SPDX-License-Identifier: MIT
 *
 * jemalloc's figures and the profiler's state as Prometheus metric
 * families (core/expo.h), from the same mallctls as stats_memory_jemalloc
 * and refreshed the same way (one "epoch" per scrape, shared within
 * jemalloc-stats_max_age_ms). Names follow Prometheus' conventions (base
 * units: _bytes, _seconds; counters _total):
 *
 *   heapadmin_jemalloc_{allocated,active,metadata,metadata_thp,resident,
 *                       mapped,retained}_bytes           gauge  stats.*
 *   heapadmin_jemalloc_arenas                            gauge  arenas.narenas
 *   heapadmin_jemalloc_background_threads                gauge
 *   heapadmin_jemalloc_background_thread_runs_total      counter
 *   heapadmin_jemalloc_zero_reallocs_total               counter
 *   heapadmin_jemalloc_stats_age_seconds                 gauge
 *   heapadmin_jemalloc_prof_enabled, _prof_active        gauge  0/1
 *   heapadmin_jemalloc_prof_sample_period_bytes          gauge  2^lg_sample
 *   heapadmin_jemalloc_prof_interval_bytes               gauge  0 = off
 *   heapadmin_self_{allocated,active,metadata,resident,mapped,
 *                   retained}_bytes   gauge  heapadmin's own share, which
 *                   the heapadmin_jemalloc_* figures then leave out (an
 *                   agent, a library on its own thread); absent otherwise
 *   heapadmin_process_resident_memory_bytes              gauge  VmRSS
 *   heapadmin_process_swap_bytes                         gauge  VmSwap
 *   heapadmin_memory_breakdown_bytes{component=...}      gauge  the parts
 *                        of stats_memory_breakdown: they sum to the RSS
 *                        (read from /proc/self/status, not smaps, so a
 *                        scrape walks no page tables: stacks and [heap]
 *                        are inside other.anonymous); component
 *                        "heapadmin" (our own arena) only in a host
 *   heapadmin_cgroup_memory_limit_bytes                  gauge  the limit
 *                        that binds the process (its memory cgroup's or
 *                        an ancestor's); absent without one
 *   heapadmin_cgroup_memory_usage_bytes                  gauge  that
 *                        group's usage (page cache included)
 *   heapadmin_cgroup_memory_working_set_bytes            gauge  usage less
 *                        inactive file cache
 *   heapadmin_cgroup_memory_high_bytes                   gauge  v2
 *                        memory.high, where set
 *   heapadmin_cgroup_memory_events_total{event=high|max|oom|oom_kill}
 *                                                        counter
 *                        memory.events (v1: max is memory.failcnt, and
 *                        only max and oom_kill exist)
 *   heapadmin_memory_pressure_seconds_total{kind=some|full}
 *                                                        counter  PSI
 *                        stall time (the process's v2 group's, else the
 *                        system's)
 *   heapadmin_memory_pressure_ratio{kind,window=10s|60s|300s}
 *                                                        gauge  PSI
 *                        averages, 0 to 1
 *   heapadmin_leak_site_*, heapadmin_thread_live_bytes, ...  what the
 *                        heap profiles tell (heap/profmetrics.h)
 * and ProxySQL's, so its dashboards keep working (not in a host
 * gateway's own figures: it is no ProxySQL):
 *   proxysql_jemalloc_bytes{type=resident|active|mapped|metadata|retained}
 *   proxysql_jemalloc_allocated_bytes_total   (a counter in ProxySQL)
 *   proxysql_sqlite3_memory_bytes
 * A figure whose mallctl fails (no --enable-stats, profiling off) is left
 * out rather than reported as 0.
 */
#ifndef HA_VTAB_METRICS_H
#define HA_VTAB_METRICS_H

#include "core/expo.h"
#include "heap/heap.h"

/* Writes the families above into e; ProxySQL's only when proxysql_names
 * (a host gateway's own figures leave them out). */
void ha_metrics_jemalloc(struct ha_heap *heap, bool proxysql_names,
                         struct ha_expo *e);

#endif /* HA_VTAB_METRICS_H */
