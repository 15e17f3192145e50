/* SPDX-License-Identifier: MIT
 *
 * The one list of admin tables (see catalog.h).
 */
#include "engine/catalog.h"

#include "core/util.h"

static const struct ha_catalog_table tables[] = {
    /* name, schema, eponymous, stats_readable, module, doc */
    {"stats_admin_sessions", "stats", true, true, true,
     "One row per logged-in session of this server, all users, as MySQL's "
     "PROCESSLIST: what `SHOW PROCESSLIST` shows. HTTP requests are "
     "clients of the same engine and show there too."},
    {"stats_memory_jemalloc", "stats", true, true, true,
     "One row per jemalloc scalar (`allocated`, `active`, `metadata`, "
     "`resident`, `mapped`, `retained`, ...; bytes or counts), read live "
     "on every query. When heapadmin runs on a thread of its own, as the "
     "agent does, those are the host's alone and rows `heapadmin.allocated`"
     ", ..., `heapadmin.retained` hold heapadmin's own share; heapadmind "
     "has no such rows, so every value is an integer."},
    {"stats_memory_metrics", "stats", true, true, true,
     "The figures of `stats_memory_jemalloc` under ProxySQL's row names "
     "(`jemalloc_resident`, ..., `SQLite3_memory_bytes`), values as text, "
     "so monitoring scripts written for ProxySQL keep working."},
    {"stats_memory_breakdown", "stats", true, true, true,
     "Where resident memory goes: one row per component, read together "
     "(one refresh of jemalloc's statistics, then `/proc/self/smaps`, on "
     "the worker thread), so the `part` rows add up to `rss` exactly. "
     "Inside a host, heapadmin's own memory is its own `heapadmin` row, "
     "not the host's. Reading smaps makes the kernel walk the process's page tables: the "
     "table is for an operator's question, not for frequent polling."},
    {"stats_jemalloc_arenas", "stats", true, true, true,
     "One row per jemalloc arena in use, and one of all of them merged "
     "(`arena` NULL), from one refresh of jemalloc's statistics: pages in "
     "use, pages waiting for decay, and the decay settings that return "
     "them. `arena = N` and `arena IS NULL` read no other arena."},
    {"stats_jemalloc_bins", "stats", true, true, true,
     "jemalloc's small size classes (bins), per arena and merged (`arena` "
     "NULL): regions and slabs in use, how full they are, and the free "
     "bytes that are the class's part of fragmentation. With "
     "`opt.prof_stats` the merged rows also carry the sampled objects' "
     "requested sizes and the bytes lost to rounding."},
    {"stats_jemalloc_lextents", "stats", true, true, true,
     "jemalloc's large size classes (extents of their own), per arena and "
     "merged (`arena` NULL)."},
    {"stats_heap_dumps", "stats", true, true, true,
     "One row per heap dump in the datadir, named as jemalloc names them, "
     "and per lifetime log (`kind` 'log', from `jemalloc-log_now`): the "
     "names every heap table takes, with what each holds and what was "
     "recorded beside it when it was taken."},
    /* The datadir's earlier runs and how each ended (heap/runs.h). */
    {"stats_previous_runs", "stats", true, true, true,
     "The datadir's earlier runs, newest start first, and how each ended, "
     "as far as the kernel can say: after a restart, whether the last run "
     "was OOM-killed, and which dump holds what was in its heap at its "
     "peak."},
    /* jemalloc's last sampled allocations (vtab/recent.c). */
    {"stats_jemalloc_recent", "stats", true, true, true,
     "The last sampled allocations jemalloc keeps, freed or not "
     "(`jemalloc-recent_alloc_max` of them; none while it is 0), oldest "
     "first, named in the process's mappings as they are now, with "
     "wall-clock times: what were the last allocations before a spike, "
     "where, by which thread, and were they freed."},
    /* The processes the agent serves in the datadir (a host gateway's
     * view, vtab/agents.c). */
    {"stats_agents", "stats", true, true, true,
     "The processes the LD_PRELOAD agent serves in this datadir, one row "
     "each, as a host gateway sees them: who they are (what the kernel "
     "proves), where to reach them and their memory now. Every serving "
     "agent is asked at once, for at most 2 s."},
    /* Where this process pushes its dumps (engine/push.h). */
    {"stats_push", "stats", true, true, true,
     "Where this process pushes its published dumps "
     "(`admin_variables.push_targets`: Grafana Pyroscope or Parca), one "
     "row per target: what waits in the datadir's `push-outbox/` for it, "
     "what its receiver took, the attempts that failed and the last "
     "reason. Empty when no target is configured. Figures are as of the "
     "push thread's last report (after each queueing and each delivery)."},
    /* A table-valued function: it needs its argument, so no warm-up. */
    {"heap_top", NULL, false, true, true,
     "What holds memory in a dump, per function, as `jeprof --text "
     "--show_bytes` shows it: one row per function, largest `flat_bytes` "
     "first, counted at the allocation site (past the allocator and the "
     "allocation wrappers). `function = '...'` is answered without a "
     "scan."},
    {"heap_stacks", NULL, false, true, true,
     "One row per stack of a dump, collapsed root first for flame graphs, "
     "its last frame the allocation site. `stack_id = N` is answered "
     "without a scan."},
    {"heap_profile", NULL, false, true, true,
     "One row per frame of each stack of a dump, allocation site first, "
     "with file, line and module. `stack_id = N` and `function = '...'` "
     "are answered without a scan."},
    {"heap_profile_diff", NULL, false, true, true,
     "`jeprof --base` as rows: one per stack present in either dump, "
     "current minus base. Stacks are matched by their symbolized form, so "
     "two dumps of one binary compare across restarts."},
    {"heap_modules", NULL, false, true, true,
     "One row per mapped file that holds frames of a dump, in the order "
     "the dump mapped them: where its names came from and, for one that "
     "has too few, the debug file that would name it or debuginfod's "
     "answer."},
    {"heap_threads", NULL, false, true, true,
     "Which thread holds the memory of a dump, and which allocated it: one "
     "row per thread jemalloc tracked (its number, its name where it has "
     "one), each stack's figures shared among its threads by their lines, "
     "so the rows add up to the dump's total; largest `bytes` first. With "
     "'live', a second argument makes it a delta over that many seconds."},
    {"heap_wrappers", NULL, false, true, true,
     "The allocation wrappers the allocation-site rule skipped in a dump, "
     "and why each is one (built-in list, operator, detected), with the "
     "names looked at and not taken and why; wrappers first, then "
     "heaviest first."},
    {"heap_growth", NULL, false, true, true,
     "Over a series of dumps of one process, one row per allocation-site "
     "function: how much more it holds dump after dump, how fast (a "
     "least-squares line over the dumps' times) and how steadily, ranked "
     "so the steady leak comes first (`score = max(slope, 0) x r2 x "
     "grew_share`)."},
    {"heap_growth_stacks", NULL, false, true, true,
     "`heap_growth` per stack (collapsed as `heap_stacks` collapses them) "
     "instead of per function: the same series, arguments and ranking."},
    {"heap_fragmentation", NULL, false, true, true,
     "Whose objects pin the fragmented size classes: each small class's "
     "free regions shared among the call sites whose sampled objects are "
     "in that class, in proportion to their estimated regions there; "
     "largest `free_bytes` first. The rows add up to the classes' free "
     "bytes, the breakdown's `jemalloc.fragmentation.slabs`."},
    {"heap_fragmentation_stacks", NULL, false, true, true,
     "`heap_fragmentation` per stack (`stack`, collapsed root first) "
     "instead of per function."},
    {"heap_lifetimes", NULL, false, true, true,
     "How long the objects freed during a lifetime window lived, one row "
     "per allocation site (`heap_top`'s flat function): how many and how "
     "fast, lifetime percentiles, where they were freed, and the share "
     "that was temporary. Objects still live at the window's close are "
     "not in it (jemalloc logs frees)."},
    {"heap_lifetimes_stacks", NULL, false, true, true,
     "`heap_lifetimes` per allocation stack, with the stack that freed "
     "most of them."},
    {"global_variables", "main", true, true, true,
     "The settings, in ProxySQL's `<module>-<name>` naming: `admin-*` "
     "rows show the configuration (read-only), `jemalloc-*` rows the "
     "allocator and profiler, read live; an admin's UPDATE acts at once, "
     "all or nothing. Stats users read every value as NULL. "
     "`disk.global_variables` (the same two columns) holds what `SAVE "
     "JEMALLOC VARIABLES TO DISK` kept."},
    {"runtime_global_variables", "main", true, true, true,
     "A read-only view of `global_variables`: an UPDATE is already the "
     "runtime, so this is the same rows, under ProxySQL's name."},
    /* Memory history (engine/history.h): real tables in the attached
     * schema stats_history, which stats users read too. */
    {"system_memory", "stats_history", false, true, false,
     "A sample of jemalloc's figures every "
     "`admin_variables.stats_system_memory` seconds, as ProxySQL keeps it "
     "(its table and columns, then `pid` and the memory cgroup's), kept 7 "
     "days in `<datadir>/heapadmin_stats.db`."},
    {"system_memory_hour", "stats_history", false, true, false,
     "Hourly averages of `system_memory`, per pid, each hour averaged as "
     "its samples land; kept 365 days. The limit column keeps the "
     "smallest limit."},
    {"system_memory_day", "stats_history", false, true, false,
     "Daily averages of `system_memory`, per pid; kept 365 days. The "
     "limit column keeps the smallest limit."},
    {"session_variables", NULL, true, true, true,
     "This session's MySQL variables: its SET values over the server's "
     "defaults (`SHOW VARIABLES`)."},
    {"mysql_variables", NULL, true, true, true,
     "The server's defaults of the MySQL variables (`SHOW GLOBAL "
     "VARIABLES`)."},
    /* SQLite's own catalogue, which admin clients read to list tables;
     * it holds what admins created, so stats users may not. */
    {"sqlite_master", NULL, false, false, false,
     "SQLite's own catalogue of the scratch database (the tables admins "
     "created), which admin clients read to list tables; stats users may "
     "not read it."},
    {"sqlite_temp_master", NULL, false, false, false,
     "SQLite's catalogue of the session's temp schema; stats users may "
     "not read it."},
};

const struct ha_catalog_table *
ha_catalog_tables(size_t *n_out)
{
    *n_out = HA_ARRAY_SIZE(tables);
    return tables;
}

const struct ha_catalog_table *
ha_catalog_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < HA_ARRAY_SIZE(tables); i++)
        if (ha_str_ieq(name, tables[i].name))
            return &tables[i];
    return NULL;
}

bool
ha_catalog_is_stats_name(const char *name)
{
    static const char prefix[] = "stats_";

    if (name == NULL)
        return false;
    for (size_t k = 0; k < sizeof(prefix) - 1; k++) {
        char c = name[k];

        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        if (c != prefix[k])
            return false;
    }
    return true;
}

void
ha_catalog_append_sql(struct ha_buf *out)
{
    bool first = true;

    for (size_t i = 0; i < HA_ARRAY_SIZE(tables); i++) {
        if (tables[i].schema == NULL)
            continue;
        /* Names are the constants above: no quoting needed. */
        ha_buf_printf(out, "%sSELECT '%s'%s, '%s'%s, 'BASE TABLE'%s ",
                      first ? "" : "UNION ALL ", tables[i].schema,
                      first ? " AS db" : "", tables[i].name,
                      first ? " AS name" : "", first ? " AS type" : "");
        first = false;
    }
    ha_buf_append_str(out,
                      "UNION ALL SELECT 'main', name, CASE type WHEN 'view' "
                      "THEN 'VIEW' ELSE 'BASE TABLE' END FROM "
                      "main.sqlite_schema WHERE type IN ('table', 'view') "
                      "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'");
}
