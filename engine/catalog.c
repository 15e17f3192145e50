/* SPDX-License-Identifier: MIT
 *
 * The one list of admin tables (see catalog.h).
 */
#include "engine/catalog.h"

#include "core/util.h"

static const struct ha_catalog_table tables[] = {
    /* name                  schema   eponymous stats_readable module */
    {"stats_admin_sessions", "stats", true, true, true},
    {"stats_memory_jemalloc", "stats", true, true, true},
    {"stats_memory_metrics", "stats", true, true, true},
    {"stats_memory_breakdown", "stats", true, true, true},
    {"stats_jemalloc_arenas", "stats", true, true, true},
    {"stats_jemalloc_bins", "stats", true, true, true},
    {"stats_jemalloc_lextents", "stats", true, true, true},
    {"stats_heap_dumps", "stats", true, true, true},
    /* The datadir's earlier runs and how each ended (heap/runs.h). */
    {"stats_previous_runs", "stats", true, true, true},
    /* jemalloc's last sampled allocations (vtab/recent.c). */
    {"stats_jemalloc_recent", "stats", true, true, true},
    /* The processes the agent serves in the datadir (a host gateway's
     * view, vtab/agents.c). */
    {"stats_agents", "stats", true, true, true},
    /* Where this process pushes its dumps (engine/push.h). */
    {"stats_push", "stats", true, true, true},
    /* A table-valued function: it needs its argument, so no warm-up. */
    {"heap_top", NULL, false, true, true},
    {"heap_stacks", NULL, false, true, true},
    {"heap_profile", NULL, false, true, true},
    {"heap_profile_diff", NULL, false, true, true},
    {"heap_modules", NULL, false, true, true},
    {"heap_wrappers", NULL, false, true, true},
    {"heap_growth", NULL, false, true, true},
    {"heap_growth_stacks", NULL, false, true, true},
    {"heap_fragmentation", NULL, false, true, true},
    {"heap_fragmentation_stacks", NULL, false, true, true},
    {"heap_lifetimes", NULL, false, true, true},
    {"heap_lifetimes_stacks", NULL, false, true, true},
    {"global_variables", "main", true, true, true},
    {"runtime_global_variables", "main", true, true, true},
    /* Memory history (engine/history.h): real tables in the attached
     * schema stats_history, which stats users read too. */
    {"system_memory", "stats_history", false, true, false},
    {"system_memory_hour", "stats_history", false, true, false},
    {"system_memory_day", "stats_history", false, true, false},
    {"session_variables", NULL, true, true, true},
    {"mysql_variables", NULL, true, true, true},
    /* SQLite's own catalogue, which admin clients read to list tables;
     * it holds what admins created, so stats users may not. */
    {"sqlite_master", NULL, false, false, false},
    {"sqlite_temp_master", NULL, false, false, false},
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
