/* SPDX-License-Identifier: MIT
 *
 * jemalloc as Prometheus metrics (see metrics.h).
 */
#include "heap/metrics.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "heap/mallctl.h"
#include "heap/profmetrics.h"
#include "heap/rss.h"

static const struct {
    const char *name;    /* heapadmin_jemalloc_<name>_bytes */
    const char *mallctl;
    const char *help;
} bytes_rows[] = {
    {"allocated", "stats.allocated",
     "Bytes allocated by the application (stats.allocated)."},
    {"active", "stats.active",
     "Bytes in active pages allocated by the application (stats.active)."},
    {"metadata", "stats.metadata",
     "Bytes dedicated to jemalloc's metadata (stats.metadata)."},
    {"metadata_thp", "stats.metadata_thp",
     "Bytes of metadata backed by transparent huge pages "
     "(stats.metadata_thp)."},
    {"resident", "stats.resident",
     "Bytes in physically resident data pages mapped by jemalloc "
     "(stats.resident)."},
    {"mapped", "stats.mapped",
     "Bytes in active extents mapped by jemalloc (stats.mapped)."},
    {"retained", "stats.retained",
     "Bytes in virtual memory mappings retained rather than returned to "
     "the operating system (stats.retained)."},
};

/* ProxySQL's proxysql_jemalloc_bytes{type=...}. */
static const char *const proxysql_types[] = {
    "resident", "active", "mapped", "metadata", "retained",
};

static int
read_size(struct ha_heap *heap, const char *name, double *v)
{
    size_t z;

    if (ha_mallctl_read_size(heap->ops, name, &z) != 0)
        return -1;
    *v = (double)z;
    return 0;
}

/* Where resident memory goes (stats_memory_breakdown), as gauges: the
 * process's RSS, PSS and swap, and one sample per part, so that
 * sum(heapadmin_memory_breakdown_bytes) is the RSS. */
static void
metrics_breakdown(struct ha_heap *heap, struct ha_expo *e)
{
    static const struct {
        const char *component;
        const char *name;
        const char *help;
    } totals[] = {
        {"rss", "heapadmin_process_resident_memory_bytes",
         "Resident memory of the process (RssAnon + RssFile + RssShmem in "
         "/proc/self/status)."},
        {"swap", "heapadmin_process_swap_bytes",
         "Memory of the process swapped out (not in RSS)."},
    };
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    bool family = false;
    char err[128];

    /* The kernel's counters, not smaps: a scrape must not walk the
     * host's page tables. */
    if (ha_rss_read(heap, false, false, rows, err, sizeof(err)) != 0)
        return;
    for (size_t t = 0; t < sizeof(totals) / sizeof(totals[0]); t++)
        for (int i = 0; i < HA_BREAKDOWN_ROWS; i++)
            if (rows[i].known &&
                strcmp(rows[i].component, totals[t].component) == 0)
                ha_expo_one(e, totals[t].name, HA_EXPO_GAUGE,
                            totals[t].help, (double)rows[i].bytes);
    for (int i = 0; i < HA_BREAKDOWN_ROWS; i++) {
        const char *labels[] = {"component", rows[i].component, NULL};

        if (rows[i].kind != HA_BREAKDOWN_PART || !rows[i].known)
            continue;
        if (!family)
            ha_expo_family(e, "heapadmin_memory_breakdown_bytes",
                           HA_EXPO_GAUGE,
                           "Resident memory by component "
                           "(stats_memory_breakdown's parts): they add up "
                           "to heapadmin_process_resident_memory_bytes. "
                           "jemalloc.untouched is negative.");
        family = true;
        ha_expo_sample(e, labels, (double)rows[i].bytes);
    }
}

/* The memory cgroup: its limit, usage, events and pressure (the
 * kernel's counters: a few small files, no walk). */
static void
metrics_cgroup(struct ha_heap *heap, struct ha_expo *e)
{
    static const char *const events[] = {"high", "max", "oom", "oom_kill"};
    struct ha_cgroup_state st;
    bool family = false;

    ha_cgroup_sample(&heap->cgroup, &st);
    if (ha_cgroup_limited(&st))
        ha_expo_one(e, "heapadmin_cgroup_memory_limit_bytes", HA_EXPO_GAUGE,
                    "The memory limit that binds the process: its cgroup's "
                    "or an ancestor's (v2 memory.max, v1 "
                    "memory.limit_in_bytes).",
                    (double)st.limit);
    if (st.usage >= 0)
        ha_expo_one(e, "heapadmin_cgroup_memory_usage_bytes", HA_EXPO_GAUGE,
                    "Memory charged to the limiting cgroup (or the "
                    "process's own without a limit), page cache included.",
                    (double)st.usage);
    if (st.working_set >= 0)
        ha_expo_one(e, "heapadmin_cgroup_memory_working_set_bytes",
                    HA_EXPO_GAUGE,
                    "The cgroup's usage less its inactive file cache, "
                    "which the kernel reclaims first: what the limit "
                    "watch holds against the limit.",
                    (double)st.working_set);
    if (st.version == 2 && st.high != HA_CGPARSE_UNLIMITED)
        ha_expo_one(e, "heapadmin_cgroup_memory_high_bytes", HA_EXPO_GAUGE,
                    "memory.high: past it the kernel throttles and "
                    "reclaims.",
                    (double)st.high);
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
        int64_t v = i == 0   ? st.ev_high
                    : i == 1 ? st.ev_max
                    : i == 2 ? st.ev_oom
                             : st.ev_oom_kill;
        const char *labels[] = {"event", events[i], NULL};

        if (v < 0)
            continue;
        if (!family)
            ha_expo_family(e, "heapadmin_cgroup_memory_events",
                           HA_EXPO_COUNTER,
                           "Memory events of the cgroup (v2 memory.events; "
                           "v1: max is memory.failcnt, oom_kill "
                           "memory.oom_control's).");
        family = true;
        ha_expo_sample(e, labels, (double)v);
    }
    if (!st.has_psi)
        return;
    ha_expo_family(e, "heapadmin_memory_pressure_seconds", HA_EXPO_COUNTER,
                   "Time tasks stalled on memory (PSI total: some = at least "
                   "one, full = all at once), of the process's v2 group or "
                   "the system.");
    for (int k = 0; k < 2; k++) {
        const struct ha_psi_line *l = k == 0 ? &st.psi.some : &st.psi.full;
        const char *labels[] = {"kind", k == 0 ? "some" : "full", NULL};

        if (l->present)
            ha_expo_sample(e, labels, (double)l->total_us / 1e6);
    }
    ha_expo_family(e, "heapadmin_memory_pressure_ratio", HA_EXPO_GAUGE,
                   "Share of time tasks stalled on memory over the last 10, "
                   "60 and 300 s (PSI avg10, avg60, avg300).");
    for (int k = 0; k < 2; k++) {
        const struct ha_psi_line *l = k == 0 ? &st.psi.some : &st.psi.full;
        static const char *const windows[] = {"10s", "60s", "300s"};

        if (!l->present)
            continue;
        for (int w = 0; w < 3; w++) {
            const char *labels[] = {"kind", k == 0 ? "some" : "full",
                                    "window", windows[w], NULL};

            ha_expo_sample(e, labels,
                           (w == 0   ? l->avg10
                            : w == 1 ? l->avg60
                                     : l->avg300) /
                               100.0);
        }
    }
}

void
ha_metrics_jemalloc(struct ha_heap *heap, bool proxysql_names,
                    struct ha_expo *e)
{
    char name[96];
    double v;
    uint64_t u;
    unsigned n;
    bool b;
    size_t z;
    long long age;

    ha_heap_refresh_stats(heap);
    for (size_t i = 0; i < sizeof(bytes_rows) / sizeof(bytes_rows[0]); i++) {
        if (read_size(heap, bytes_rows[i].mallctl, &v) != 0)
            continue;
        snprintf(name, sizeof(name), "heapadmin_jemalloc_%s_bytes",
                 bytes_rows[i].name);
        ha_expo_one(e, name, HA_EXPO_GAUGE, bytes_rows[i].help, v);
    }
    if (ha_mallctl_read_unsigned(heap->ops, "arenas.narenas", &n) == 0)
        ha_expo_one(e, "heapadmin_jemalloc_arenas", HA_EXPO_GAUGE,
                    "Arenas jemalloc has (arenas.narenas).", n);
    if (read_size(heap, "stats.background_thread.num_threads", &v) == 0)
        ha_expo_one(e, "heapadmin_jemalloc_background_threads",
                    HA_EXPO_GAUGE,
                    "jemalloc background threads running "
                    "(stats.background_thread.num_threads).",
                    v);
    if (ha_mallctl_read_u64(heap->ops, "stats.background_thread.num_runs",
                            &u) == 0)
        ha_expo_one(e, "heapadmin_jemalloc_background_thread_runs",
                    HA_EXPO_COUNTER,
                    "Runs of jemalloc's background threads "
                    "(stats.background_thread.num_runs).",
                    (double)u);
    if (read_size(heap, "stats.zero_reallocs", &v) == 0)
        ha_expo_one(e, "heapadmin_jemalloc_zero_reallocs", HA_EXPO_COUNTER,
                    "realloc(p, 0) calls (stats.zero_reallocs).", v);
    /* heapadmin's own share (left out of the figures above), when it has
     * an arena of its own. */
    for (size_t i = 0; i < sizeof(bytes_rows) / sizeof(bytes_rows[0]); i++) {
        char own[64], help[160];

        if (strcmp(bytes_rows[i].name, "metadata_thp") == 0)
            continue;
        snprintf(own, sizeof(own), "heapadmin.%s", bytes_rows[i].name);
        if (read_size(heap, own, &v) != 0)
            continue;
        snprintf(name, sizeof(name), "heapadmin_self_%s_bytes",
                 bytes_rows[i].name);
        snprintf(help, sizeof(help), "heapadmin's own %s bytes, left out "
                 "of heapadmin_jemalloc_%s_bytes.", bytes_rows[i].name,
                 bytes_rows[i].name);
        ha_expo_one(e, name, HA_EXPO_GAUGE, help, v);
    }
    age = ha_heap_stats_age_ms(heap);
    if (age >= 0)
        ha_expo_one(e, "heapadmin_jemalloc_stats_age_seconds", HA_EXPO_GAUGE,
                    "Age of jemalloc's statistics: time since the last "
                    "epoch refresh (bounded by jemalloc-stats_max_age_ms).",
                    (double)age / 1000.0);

    /* The profiler. */
    b = ha_mallctl_prof_enabled(heap->ops);
    ha_expo_one(e, "heapadmin_jemalloc_prof_enabled", HA_EXPO_GAUGE,
                "1 when heap profiling is available in this process "
                "(opt.prof).",
                b);
    if (b && ha_mallctl_read_bool(heap->ops, "prof.active", &b) == 0)
        ha_expo_one(e, "heapadmin_jemalloc_prof_active", HA_EXPO_GAUGE,
                    "1 while allocations are being sampled (prof.active).",
                    b);
    if (ha_mallctl_prof_enabled(heap->ops) &&
        ha_mallctl_read_size(heap->ops, "prof.lg_sample", &z) == 0 && z < 64)
        ha_expo_one(e, "heapadmin_jemalloc_prof_sample_period_bytes",
                    HA_EXPO_GAUGE,
                    "Mean bytes allocated between samples "
                    "(2^prof.lg_sample).",
                    (double)((uint64_t)1 << z));
    if (ha_mallctl_prof_enabled(heap->ops) &&
        ha_mallctl_read_u64(heap->ops, "prof.interval", &u) == 0)
        ha_expo_one(e, "heapadmin_jemalloc_prof_interval_bytes",
                    HA_EXPO_GAUGE,
                    "Mean bytes allocated between interval dumps "
                    "(prof.interval; 0: no interval dumps).",
                    (double)u);

    metrics_breakdown(heap, e);
    metrics_cgroup(heap, e);
    /* What the profiles tell: leak sites, memory by thread. */
    ha_profmetrics_write(heap, e);

    /* ProxySQL's names, for its dashboards. */
    if (!proxysql_names)
        return;
    ha_expo_family(e, "proxysql_jemalloc_bytes", HA_EXPO_GAUGE,
                   "Jemalloc memory statistics, as ProxySQL names them.");
    for (size_t i = 0; i < sizeof(proxysql_types) / sizeof(*proxysql_types);
         i++) {
        const char *labels[] = {"type", proxysql_types[i], NULL};

        snprintf(name, sizeof(name), "stats.%s", proxysql_types[i]);
        if (read_size(heap, name, &v) == 0)
            ha_expo_sample(e, labels, v);
    }
    if (read_size(heap, "stats.allocated", &v) == 0)
        ha_expo_one(e, "proxysql_jemalloc_allocated_bytes", HA_EXPO_COUNTER,
                    "Bytes allocated by the application, as ProxySQL "
                    "names it.",
                    v);
    ha_expo_one(e, "proxysql_sqlite3_memory_bytes", HA_EXPO_GAUGE,
                "Memory used by SQLite (sqlite3_memory_used(); "
                "process-wide).",
                (double)sqlite3_memory_used());
}
