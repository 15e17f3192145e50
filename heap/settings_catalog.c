/* SPDX-License-Identifier: MIT
 *
 * The settings engine's catalogue (settings.h): every variable, what it
 * is for people (docs/reference/variables.md is made from these doc
 * strings), and what may be done with it.
 */
#include "heap/settings.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "heap/mallctl.h"
#include "heap/settings_impl.h"

const struct ha_settings_row ha_settings_rows[] = {
    {"admin-admin_credentials", NULL, GV_ADMIN, 0, GV_ADMIN_CREDENTIALS,
     HINT_ADMIN, NULL},
    {"admin-stats_credentials", NULL, GV_ADMIN, 0,
     GV_ADMIN_STATS_CREDENTIALS, HINT_ADMIN, NULL},
    {"admin-mysql_ifaces", NULL, GV_ADMIN, 0, GV_ADMIN_IFACES, HINT_ADMIN,
     NULL},
    {"admin-version", NULL, GV_ADMIN, 0, GV_ADMIN_VERSION,
     "it is heapadmind's version",
     "heapadmind's version (the library's, in a host)."},
    {"admin-max_connections", NULL, GV_ADMIN, 0, GV_ADMIN_MAX_CONNECTIONS,
     HINT_ADMIN, NULL},
    {"admin-max_pending_logins", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_PENDING_LOGINS, HINT_ADMIN, NULL},
    {"admin-max_pending_logins_per_host", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_PENDING_LOGINS_PER_HOST, HINT_ADMIN, NULL},
    {"admin-connect_timeout", NULL, GV_ADMIN, 0, GV_ADMIN_CONNECT_TIMEOUT,
     HINT_ADMIN, NULL},
    {"admin-wait_timeout", NULL, GV_ADMIN, 0, GV_ADMIN_WAIT_TIMEOUT,
     HINT_ADMIN, NULL},
    {"admin-net_write_timeout", NULL, GV_ADMIN, 0,
     GV_ADMIN_NET_WRITE_TIMEOUT, HINT_ADMIN, NULL},
    {"admin-max_allowed_packet", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_ALLOWED_PACKET, HINT_ADMIN, NULL},
    {"admin-max_output_buffer", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_OUTPUT_BUFFER, HINT_ADMIN, NULL},
    {"admin-max_execution_time", NULL, GV_ADMIN, 0,
     GV_ADMIN_MAX_EXECUTION_TIME, HINT_ADMIN, NULL},
    {"admin-disk_timeout_ms", NULL, GV_ADMIN, 0, GV_ADMIN_DISK_TIMEOUT,
     HINT_ADMIN, NULL},
    {"admin-stats_system_memory", NULL, GV_ADMIN, 0,
     GV_ADMIN_STATS_SYSTEM_MEMORY, HINT_ADMIN, NULL},
    {"admin-sql_memory_limit", NULL, GV_ADMIN, 0, GV_ADMIN_SQL_MEMORY_LIMIT,
     HINT_ADMIN, NULL},
    {"admin-max_output_total", NULL, GV_ADMIN, 0, GV_ADMIN_MAX_OUTPUT_TOTAL,
     HINT_ADMIN, NULL},
    {"admin-unix_socket_mode", NULL, GV_ADMIN, 0, GV_ADMIN_UNIX_SOCKET_MODE,
     HINT_ADMIN, NULL},
    {"admin-have_ssl", NULL, GV_ADMIN, 0, GV_ADMIN_HAVE_SSL, HINT_ADMIN, NULL},
    {"admin-require_tls", NULL, GV_ADMIN, 0, GV_ADMIN_REQUIRE_TLS,
     HINT_ADMIN, NULL},
    {"admin-default_authentication_plugin", NULL, GV_ADMIN, 0,
     GV_ADMIN_DEFAULT_AUTH_PLUGIN, HINT_ADMIN, NULL},
    {"admin-profile_credentials", NULL, GV_ADMIN, 0,
     GV_ADMIN_PROFILE_CREDENTIALS, HINT_ADMIN, NULL},
    {"admin-service_names", NULL, GV_ADMIN, 0, GV_ADMIN_SERVICE_NAMES,
     HINT_ADMIN, NULL},
    {"admin-push_targets", NULL, GV_ADMIN, 0, GV_ADMIN_PUSH_TARGETS,
     HINT_ADMIN, NULL},
    {"admin-push_outbox_max_bytes", NULL, GV_ADMIN, 0,
     GV_ADMIN_PUSH_OUTBOX_MAX_BYTES, HINT_ADMIN, NULL},
    {"admin-push_timeout_s", NULL, GV_ADMIN, 0, GV_ADMIN_PUSH_TIMEOUT_S,
     HINT_ADMIN, NULL},
    {"admin-push_retry_max_s", NULL, GV_ADMIN, 0, GV_ADMIN_PUSH_RETRY_MAX_S,
     HINT_ADMIN, NULL},
    {"admin-push_live_interval_s", NULL, GV_ADMIN, 0,
     GV_ADMIN_PUSH_LIVE_INTERVAL_S, HINT_ADMIN, NULL},

    {"jemalloc-prof_active", "prof.active", GV_BOOL, GV_PROF, 0, NULL,
     "Sampling on or off now (`prof.active`). Booleans accept "
     "`true/false/1/0/on/off` in any case."},
    {"jemalloc-lg_prof_sample", "prof.lg_sample", GV_LG_SAMPLE, GV_PROF, 0,
     NULL,
     "Sample every 2^N bytes allocated on average, 0..62, not below "
     "`jemalloc-lg_prof_sample_min`; NULL while profiling is off. Changing "
     "it resets the samples collected so far (`prof.reset`), and the OK "
     "message says so."},
    {"jemalloc-prof_gdump", "prof.gdump", GV_BOOL, GV_PROF, 0, NULL,
     "Dump at every new memory high-water mark (`.u<useq>.heap`)."},
    {"jemalloc-prof_thread_active_init", "prof.thread_active_init", GV_BOOL,
     GV_PROF, 0, NULL,
     "Whether new threads sample (jemalloc's switch of the same name)."},
    {"jemalloc-background_thread", "background_thread", GV_BOOL, 0, 0, NULL,
     "jemalloc's background purging threads (its switch of the same name)."},
    {"jemalloc-dirty_decay_ms", "arenas.dirty_decay_ms", GV_DECAY, 0, 0,
     NULL,
     "How long freed pages stay resident before jemalloc returns them to the "
     "system: -1 never, 0 at once, up to 31536000000 (a year) in ms. Written "
     "to `arenas.dirty_decay_ms` (what new arenas get) and to every arena in "
     "use, so it acts now, but heapadmin's own arena (in a host that embeds "
     "the library or runs the agent), which keeps 0: its freed pages are "
     "never the host's to hold; kept by SAVE."},
    {"jemalloc-muzzy_decay_ms", "arenas.muzzy_decay_ms", GV_DECAY, 0, 0,
     NULL,
     "The same for pages given back lazily (MADV_FREE) before they are "
     "returned for good: -1 never, 0 at once, up to a year in ms; acts now "
     "on every arena but heapadmin's own; kept by SAVE."},
    {"jemalloc-arena_dirty_decay_ms", "arena.<i>.dirty_decay_ms",
     GV_ARENA_DECAY, 0, 0, NULL,
     "The arenas whose dirty decay differs from `jemalloc-dirty_decay_ms`, "
     "as `arena:ms,...` ('' when none); an UPDATE with such a list sets "
     "those arenas only. Not saved: arena numbers are handed out anew in "
     "each run."},
    {"jemalloc-arena_muzzy_decay_ms", "arena.<i>.muzzy_decay_ms",
     GV_ARENA_DECAY, 0, 0, NULL,
     "The same for muzzy decay."},

    {"jemalloc-lg_prof_sample_min", NULL, GV_LG_MIN, 0, 0,
     "it guards the host's memory and comes from the config file "
     "(jemalloc_variables.lg_prof_sample_min); lower it there on purpose",
     NULL},
    {"jemalloc-stats_max_age_ms", NULL, GV_STATS_AGE, 0, 0, NULL,
     "Scans of the statistics tables within this many ms of jemalloc's last "
     "refresh share it (the refresh locks every arena); 0 refreshes at every "
     "scan. `stats_memory_jemalloc.stats_age_ms` shows the age. Kept by "
     "SAVE."},
    {"jemalloc-dump_symbolized", NULL, GV_DUMP_SYM, 0, 0, NULL,
     "`dump_now` also writes `<dump>.sym`, jeprof's symbolized profile, "
     "which `jeprof --text <dump>.sym` reads on a machine without the "
     "binaries. Kept by SAVE."},
    {"jemalloc-dump_retention_count", NULL, GV_KEEP, 0, 0, HINT_KEEP, NULL},
    {"jemalloc-dump_retention_bytes", NULL, GV_KEEP, 0, 0, HINT_KEEP, NULL},
    {"jemalloc-dump_min_free_bytes", NULL, GV_KEEP, 0, 0, HINT_KEEP, NULL},
    {"jemalloc-dump_interval_s", NULL, GV_KEEP, 0, 0, HINT_KEEP, NULL},
    {"jemalloc-dump_resident_bytes", NULL, GV_KEEP, 0, 0, HINT_KEEP, NULL},
    {"jemalloc-leak_watch_growth_bytes", NULL, GV_KEEP, 0, 0, HINT_WATCH, NULL},
    {"jemalloc-leak_watch_window_s", NULL, GV_KEEP, 0, 0, HINT_WATCH, NULL},
    {"jemalloc-leak_watch_dump_interval_s", NULL, GV_KEEP, 0, 0,
     HINT_WATCH, NULL},
    {"jemalloc-leak_watch_dumps", NULL, GV_KEEP, 0, 0, HINT_WATCH, NULL},
    {"jemalloc-leak_watch_lg_prof_sample", NULL, GV_KEEP, 0, 0, HINT_WATCH,
     NULL},
    {"jemalloc-leak_watch_sites", NULL, GV_KEEP, 0, 0, HINT_WATCH, NULL},
    {"jemalloc-leak_watch_state", NULL, GV_ENGINE, 0, 0,
     "it is what the leak watch is doing; configure the watch in the "
     "config file (jemalloc_variables.leak_watch_*)",
     "What the leak watch is doing: watching (resident growth within the "
     "window), collecting a series (dumps so far), and the last series with "
     "the `heap_growth` query that reads it."},
    {"jemalloc-limit_dump_fractions", NULL, GV_KEEP, 0, 0, HINT_LIMIT, NULL},
    {"jemalloc-limit_dump_psi_pct", NULL, GV_KEEP, 0, 0, HINT_LIMIT, NULL},
    {"jemalloc-limit_dump_events", NULL, GV_KEEP, 0, 0, HINT_LIMIT, NULL},
    {"jemalloc-limit_dump_min_interval_s", NULL, GV_KEEP, 0, 0, HINT_LIMIT,
     NULL},
    {"jemalloc-limit_watch_sampling", NULL, GV_KEEP, 0, 0, HINT_LIMIT, NULL},
    {"jemalloc-limit_watch_lg_prof_sample", NULL, GV_KEEP, 0, 0, HINT_LIMIT,
     NULL},
    {"jemalloc-limit_watch_state", NULL, GV_ENGINE, 0, 0,
     "it is what the limit watch sees and has done; configure it in the "
     "config file (jemalloc_variables.limit_dump_* and limit_watch_*)",
     "What the limit watch sees: the working set against the memory limit, "
     "the levels passed, its limit dumps and the last one's reason."},

    {"jemalloc-log_max_bytes", NULL, GV_LOG_MAX, 0, 0, NULL,
     "A lifetime window closes early once jemalloc holds this much memory "
     "for its log (checked every second): 1 MiB..4 GiB, default 64 MiB; kept "
     "by SAVE."},
    {"jemalloc-log_state", NULL, GV_LOG_STATE, 0, 0,
     "it is the lifetime window's state; open one with jemalloc-log_now",
     "The lifetime window: open (its file, seconds left, the memory jemalloc "
     "holds for it) or closed, and the last one (how long, why it closed)."},
    {"jemalloc-recent_alloc_max", "experimental.prof_recent.alloc_max",
     GV_RECENT_MAX, GV_PROF, 0, NULL,
     "How many of the last sampled allocations jemalloc keeps for "
     "`stats_jemalloc_recent` and `heap_fragmentation` "
     "(`experimental.prof_recent.alloc_max`): 4096 from heapadmin's start "
     "when nothing else set it; 0 off; at most 100000 (each record keeps its "
     "stack's profiling data alive); kept by SAVE."},
    {"jemalloc-alloc_wrappers", NULL, GV_WRAPPERS, 0, 0, NULL,
     "The operator's edits of the allocation wrappers every table looks "
     "past: `+name` (or `name`) adds one, `-name` removes one, `-*` drops "
     "the built-in list and detection; comma-separated, '' for none (the "
     "default). Dumps already loaded are cut anew at their next query. Kept "
     "by SAVE; config `jemalloc_variables.alloc_wrappers`."},

    {"jemalloc-dump_now", "prof.dump", GV_DUMP, GV_PROF, 0, NULL,
     "Action: reads `false`; `true` writes a heap dump into the datadir "
     "under jemalloc's name (`<prefix>.<pid>.<seq>.m<mseq>.heap`), with its "
     "build-ids and memory beside it, then applies retention; the OK message "
     "names the file and how to read it."},
    {"jemalloc-log_now", "prof.log_start", GV_LOG_NOW, GV_PROF, 0, NULL,
     "Action: N seconds (1..600) opens a lifetime window: every sampled "
     "allocation freed meanwhile is logged, then published as "
     "`<prefix>.<pid>.<seq>.json` for `heap_lifetimes`; 0 closes an open one "
     "now. Reads the seconds left."},
    {"jemalloc-reset_now", "prof.reset", GV_RESET, GV_PROF, 0, NULL,
     "Action: reads `false`; `true` discards the samples collected so far "
     "(`prof.reset` at the current rate)."},
    {"jemalloc-purge_now", HA_MALLCTL_PURGE_ALL, GV_PURGE, 0, 0, NULL,
     "Action: reads `false`; `true` purges all arenas, and the OK message "
     "says how much went back to the system."},
    {"jemalloc-purge_arena_now", "arena.<i>.purge", GV_PURGE_ARENA, 0, 0,
     NULL,
     "Action: an arena index, or `all` (or `true`), purges that arena; "
     "`false` does nothing."},

    {"jemalloc-prof", "opt.prof", GV_RO_BOOL, GV_ENOENT_FALSE, 0,
     "profiling is chosen when the process starts: MALLOC_CONF=prof:true "
     "(heapadmind's default) or prof:false",
     "Whether jemalloc profiles at all (`opt.prof`; `false` also when "
     "jemalloc lacks --enable-prof). Without it statistics still work and "
     "every profiler write says how to enable it."},
    {"jemalloc-lg_prof_interval", "opt.lg_prof_interval", GV_RO_SSIZE, 0, 0,
     HINT_STARTUP,
     "Interval dumps every 2^N bytes allocated (`opt.lg_prof_interval`; -1 "
     "off)."},
    {"jemalloc-prof_prefix", "prof.prefix", GV_PREFIX, 0, 0,
     "it is <datadir>/<dump_prefix> from the config file",
     "The prefix dumps are written under now: `<datadir>/<dump_prefix>`."},
    {"jemalloc-version", "version", GV_RO_STR, 0, 0,
     "it is the linked jemalloc's version",
     "The version of the jemalloc in use."},

    {"jemalloc-prof_accum", "opt.prof_accum", GV_RO_BOOL, 0, 0,
     HINT_STARTUP,
     "Whether dumps carry cumulative counters (`opt.prof_accum`): the "
     "`alloc_*` columns."},
    {"jemalloc-prof_final", "opt.prof_final", GV_RO_BOOL, 0, 0,
     HINT_STARTUP,
     "Whether jemalloc dumps at exit (`opt.prof_final`)."},
    {"jemalloc-prof_leak", "opt.prof_leak", GV_RO_BOOL, 0, 0, HINT_STARTUP,
     "Whether jemalloc reports leaks at exit (`opt.prof_leak`)."},
    {"jemalloc-prof_leak_error", "opt.prof_leak_error", GV_RO_BOOL, 0, 0,
     HINT_STARTUP,
     "Whether a leak at exit is an error (`opt.prof_leak_error`)."},
    {"jemalloc-prof_stats", "opt.prof_stats", GV_RO_BOOL, 0, 0,
     HINT_STARTUP,
     "Whether jemalloc counts sampled objects per size class "
     "(`opt.prof_stats`): `stats_jemalloc_bins`' `prof_*` and rounding "
     "columns."},
    {"jemalloc-prof_sys_thread_name", "opt.prof_sys_thread_name", GV_RO_BOOL,
     0, 0, HINT_STARTUP,
     "Whether jemalloc reads thread names from the system "
     "(`opt.prof_sys_thread_name`)."},
    {"jemalloc-prof_time_resolution", "opt.prof_time_resolution", GV_RO_STR,
     0, 0, HINT_STARTUP,
     "The profiling clock (`opt.prof_time_resolution`): `high` stamps "
     "sampled events in ns, `default` with the coarse clock's ticks."},

    {"jemalloc-opt_prof_active", "opt.prof_active", GV_RO_BOOL, 0, 0,
     HINT_OPT,
     "`jemalloc-prof_active` as the process started (`opt.prof_active`)."},
    {"jemalloc-opt_lg_prof_sample", "opt.lg_prof_sample", GV_RO_SIZE, 0, 0,
     HINT_OPT,
     "`jemalloc-lg_prof_sample` as the process started "
     "(`opt.lg_prof_sample`)."},
    {"jemalloc-opt_prof_gdump", "opt.prof_gdump", GV_RO_BOOL, 0, 0,
     HINT_OPT,
     "`jemalloc-prof_gdump` as the process started (`opt.prof_gdump`)."},
    {"jemalloc-opt_prof_thread_active_init", "opt.prof_thread_active_init",
     GV_RO_BOOL, 0, 0, HINT_OPT,
     "`jemalloc-prof_thread_active_init` as the process started."},
    {"jemalloc-opt_prof_recent_alloc_max", "opt.prof_recent_alloc_max",
     GV_RO_SSIZE, 0, 0, HINT_OPT,
     "`jemalloc-recent_alloc_max` as the process started "
     "(`opt.prof_recent_alloc_max`)."},
};

const int ha_settings_n_rows = (int)HA_ARRAY_SIZE(ha_settings_rows);

/* ------------------------------------------------------------------
 * What a variable allows
 * ------------------------------------------------------------------ */

bool
ha_settings_writable(const struct ha_settings_row *r)
{
    return r->kind == GV_BOOL || r->kind == GV_LG_SAMPLE ||
           r->kind == GV_DUMP || r->kind == GV_RESET || r->kind == GV_PURGE ||
           r->kind == GV_STATS_AGE || r->kind == GV_DUMP_SYM ||
           r->kind == GV_DECAY || r->kind == GV_ARENA_DECAY ||
           r->kind == GV_PURGE_ARENA || r->kind == GV_LOG_NOW ||
           r->kind == GV_LOG_MAX || r->kind == GV_RECENT_MAX ||
           r->kind == GV_WRAPPERS;
}

bool
ha_settings_is_action(const struct ha_settings_row *r)
{
    return r->kind == GV_DUMP || r->kind == GV_RESET ||
           r->kind == GV_PURGE || r->kind == GV_PURGE_ARENA ||
           r->kind == GV_LOG_NOW;
}

/* Whether SAVE keeps r: the writable settings, not the actions, and not
 * the per-arena lists (arena numbers are handed out anew in each run). */
static bool
saved(const struct ha_settings_row *r)
{
    return r->kind == GV_BOOL || r->kind == GV_LG_SAMPLE ||
           r->kind == GV_STATS_AGE || r->kind == GV_DUMP_SYM ||
           r->kind == GV_DECAY || r->kind == GV_LOG_MAX ||
           r->kind == GV_RECENT_MAX || r->kind == GV_WRAPPERS;
}

const char *
ha_settings_decay_kind(const struct ha_settings_row *r)
{
    return strstr(r->name, "muzzy") != NULL ? "muzzy" : "dirty";
}

void
ha_settings_writable_list(char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < GV_N_ROWS; i++) {
        int n;

        if (!ha_settings_writable(&ha_settings_rows[i]))
            continue;
        n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                     ha_settings_rows[i].name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

/* ------------------------------------------------------------------
 * The public view
 * ------------------------------------------------------------------ */

int
ha_settings_count(void)
{
    return GV_N_ROWS;
}

int
ha_settings_describe(int i, struct ha_settings_var *out)
{
    const struct ha_settings_row *r;

    if (i < 0 || i >= GV_N_ROWS)
        return -1;
    r = &ha_settings_rows[i];
    out->name = r->name;
    out->mallctl = r->mallctl;
    out->hint = r->hint;
    out->doc = r->doc;
    out->flags = (ha_settings_writable(r) ? HA_SETTINGS_WRITABLE : 0) |
                 (ha_settings_is_action(r) ? HA_SETTINGS_ACTION : 0) |
                 (saved(r) ? HA_SETTINGS_SAVED : 0) |
                 ((r->flags & GV_PROF) != 0 ? HA_SETTINGS_PROF : 0);
    return 0;
}

int
ha_settings_find(const char *name)
{
    for (int i = 0; name != NULL && i < GV_N_ROWS; i++)
        if (strcmp(ha_settings_rows[i].name, name) == 0)
            return i;
    return -1;
}

bool
ha_settings_persistable(const char *name)
{
    int i = ha_settings_find(name);

    return i >= 0 && saved(&ha_settings_rows[i]);
}
