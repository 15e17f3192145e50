/* SPDX-License-Identifier: MIT
 *
 * heapadmin's Prometheus families (see families.h).
 */
#include "engine/families.h"

#define G HA_EXPO_GAUGE
#define C HA_EXPO_COUNTER

const struct ha_exposcan_rule ha_families[] = {
    /* engine/metrics.c */
    {"heapadmin_info", G, "version", "heapadmin's build; always 1."},
    /* engine/labels.c; its program is the gateway's to say */
    {"heapadmin_build_info", G, "service_name build_id version",
     "The label contract of this process: its program, service, the GNU "
     "build-id of its executable and heapadmin's version; always 1."},
    {"heapadmin_uptime_seconds", G, "",
     "Seconds since the admin server started."},
    {"heapadmin_admin_sessions", G, "",
     "Admin sessions (MySQL protocol) open now."},
    {"heapadmin_admin_sessions_max", G, "",
     "Most admin sessions open at once since the start."},
    {"heapadmin_admin_connections", C, "",
     "Admin sessions opened since the start."},
    {"heapadmin_admin_questions", C, "",
     "Statements the admin sessions ran since the start."},
    {"heapadmin_http_requests", C, "",
     "HTTP requests answered since the start."},
    /* heap/metrics.c */
    {"heapadmin_jemalloc_allocated_bytes", G, "",
     "Bytes allocated by the application (stats.allocated)."},
    {"heapadmin_jemalloc_active_bytes", G, "",
     "Bytes in active pages allocated by the application (stats.active)."},
    {"heapadmin_jemalloc_metadata_bytes", G, "",
     "Bytes dedicated to jemalloc's metadata (stats.metadata)."},
    {"heapadmin_jemalloc_metadata_thp_bytes", G, "",
     "Bytes of metadata backed by transparent huge pages "
     "(stats.metadata_thp)."},
    {"heapadmin_jemalloc_resident_bytes", G, "",
     "Bytes in physically resident data pages mapped by jemalloc "
     "(stats.resident)."},
    {"heapadmin_jemalloc_mapped_bytes", G, "",
     "Bytes in active extents mapped by jemalloc (stats.mapped)."},
    {"heapadmin_jemalloc_retained_bytes", G, "",
     "Bytes in virtual memory mappings retained rather than returned to "
     "the operating system (stats.retained)."},
    {"heapadmin_jemalloc_arenas", G, "",
     "Arenas jemalloc has (arenas.narenas)."},
    {"heapadmin_jemalloc_background_threads", G, "",
     "jemalloc background threads running "
     "(stats.background_thread.num_threads)."},
    {"heapadmin_jemalloc_background_thread_runs", C, "",
     "Runs of jemalloc's background threads "
     "(stats.background_thread.num_runs)."},
    {"heapadmin_jemalloc_zero_reallocs", C, "",
     "realloc(p, 0) calls (stats.zero_reallocs)."},
    {"heapadmin_self_allocated_bytes", G, "",
     "heapadmin's own allocated bytes, left out of "
     "heapadmin_jemalloc_allocated_bytes."},
    {"heapadmin_self_active_bytes", G, "",
     "heapadmin's own active bytes, left out of "
     "heapadmin_jemalloc_active_bytes."},
    {"heapadmin_self_metadata_bytes", G, "",
     "heapadmin's own metadata bytes, left out of "
     "heapadmin_jemalloc_metadata_bytes."},
    {"heapadmin_self_resident_bytes", G, "",
     "heapadmin's own resident bytes, left out of "
     "heapadmin_jemalloc_resident_bytes."},
    {"heapadmin_self_mapped_bytes", G, "",
     "heapadmin's own mapped bytes, left out of "
     "heapadmin_jemalloc_mapped_bytes."},
    {"heapadmin_self_retained_bytes", G, "",
     "heapadmin's own retained bytes, left out of "
     "heapadmin_jemalloc_retained_bytes."},
    {"heapadmin_jemalloc_stats_age_seconds", G, "",
     "Age of jemalloc's statistics: time since the last epoch refresh "
     "(bounded by jemalloc-stats_max_age_ms)."},
    {"heapadmin_jemalloc_prof_enabled", G, "",
     "1 when heap profiling is available in this process (opt.prof)."},
    {"heapadmin_jemalloc_prof_active", G, "",
     "1 while allocations are being sampled (prof.active)."},
    {"heapadmin_jemalloc_prof_sample_period_bytes", G, "",
     "Mean bytes allocated between samples (2^prof.lg_sample)."},
    {"heapadmin_jemalloc_prof_interval_bytes", G, "",
     "Mean bytes allocated between interval dumps (prof.interval; 0: no "
     "interval dumps)."},
    {"heapadmin_process_resident_memory_bytes", G, "",
     "Resident memory of the process (RssAnon + RssFile + RssShmem in "
     "/proc/self/status)."},
    {"heapadmin_process_swap_bytes", G, "",
     "Memory of the process swapped out (not in RSS)."},
    {"heapadmin_memory_breakdown_bytes", G, "component",
     "Resident memory by component (stats_memory_breakdown's parts): they "
     "add up to heapadmin_process_resident_memory_bytes. "
     "jemalloc.untouched is negative."},
    {"heapadmin_cgroup_memory_limit_bytes", G, "",
     "The memory limit that binds the process: its cgroup's or an "
     "ancestor's (v2 memory.max, v1 memory.limit_in_bytes)."},
    {"heapadmin_cgroup_memory_usage_bytes", G, "",
     "Memory charged to the limiting cgroup (or the process's own without "
     "a limit), page cache included."},
    {"heapadmin_cgroup_memory_working_set_bytes", G, "",
     "The cgroup's usage less its inactive file cache, which the kernel "
     "reclaims first: what the limit watch holds against the limit."},
    {"heapadmin_cgroup_memory_high_bytes", G, "",
     "memory.high: past it the kernel throttles and reclaims."},
    {"heapadmin_cgroup_memory_events", C, "event",
     "Memory events of the cgroup (v2 memory.events; v1: max is "
     "memory.failcnt, oom_kill memory.oom_control's)."},
    {"heapadmin_memory_pressure_seconds", C, "kind",
     "Time tasks stalled on memory (PSI total: some = at least one, full = "
     "all at once), of the process's v2 group or the system."},
    {"heapadmin_memory_pressure_ratio", G, "kind window",
     "Share of time tasks stalled on memory over the last 10, 60 and 300 s "
     "(PSI avg10, avg60, avg300)."},
    /* heap/profmetrics.c: a process's own program and pid labels are the
     * gateway's too (kept once, core/exposcan.h) */
    {"heapadmin_leak_site_growth_bytes_per_second", G, "function rank",
     "A leaking allocation site's growth (heap_growth's slope) in the "
     "last series the leak watch ranked; its top sites by rank."},
    {"heapadmin_leak_site_growth_r2", G, "function rank",
     "How well a line fits that site's growth over the series "
     "(heap_growth's r2, 0..1)."},
    {"heapadmin_leak_site_info", G, "function rank pattern",
     "1 for each leaking site of that series, with the shape of its "
     "growth (heap_growth's pattern)."},
    {"heapadmin_thread_live_bytes", G, "thread_name",
     "In-use bytes by thread name (a pool's threads summed) in the newest "
     "heap profile read of this process (heap_threads)."},
    {"heapadmin_thread_profile_timestamp_seconds", G, "",
     "When the profile heapadmin_thread_live_bytes is of was taken (unix "
     "seconds)."},
    {"proxysql_jemalloc_bytes", G, "type",
     "Jemalloc memory statistics, as ProxySQL names them."},
    {"proxysql_jemalloc_allocated_bytes", C, "",
     "Bytes allocated by the application, as ProxySQL names it."},
    {"proxysql_sqlite3_memory_bytes", G, "",
     "Memory used by SQLite (sqlite3_memory_used(); process-wide)."},
};

const size_t ha_families_n = sizeof(ha_families) / sizeof(ha_families[0]);
