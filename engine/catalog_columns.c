/* SPDX-License-Identifier: MIT
 *
 * What each column of the admin tables means, for people (see
 * catalog.h): docs/reference/tables.md is generated from this list and
 * from the columns SQLite reports for each table (docs/gen/gendocs.c,
 * `make docs`), and test/docs.sh fails when a column has no doc here or
 * a doc here names no column. The tables' own files (vtab/, the
 * history's engine/history.c) say how each figure is computed; this
 * says what it is. Plain text, `code` in backquotes.
 */
#include "engine/catalog.h"

#include <string.h>

#include "core/util.h"

/* Tables that take the docs of another's columns of the same name; their
 * own columns (the stack forms' stack_id, stack, free_stack) are below
 * under their own name. */
static const struct {
    const char *table;
    const char *like;
} likes[] = {
    {"heap_growth_stacks", "heap_growth"},
    {"heap_fragmentation_stacks", "heap_fragmentation"},
    {"heap_lifetimes_stacks", "heap_lifetimes"},
    {"runtime_global_variables", "global_variables"},
    {"system_memory_hour", "system_memory"},
    {"system_memory_day", "system_memory"},
    {"mysql_variables", "session_variables"},
    {"sqlite_temp_master", "sqlite_master"},
};

#define DUMP_ARG                                                               \
    "the argument: a dump's file name from `stats_heap_dumps`, or "            \
    "'live' (admin users: the process now, through a private dump "            \
    "removed at once)"
#define SECONDS_ARG                                                            \
    "second argument, with 'live' only: a delta over that many seconds "       \
    "(1 to 60): two live profiles that far apart, the `alloc_*` columns "      \
    "what was allocated between them, the others as held at the end; the "    \
    "wait does not count toward `max_execution_time`"
#define THREAD_ARG                                                             \
    "`thread = '<name>'` (every thread of that name, a pool; '' for threads "  \
    "with none) or `thread = <thread_id>` (`heap_threads`'): the part of "     \
    "each stack those threads hold, as `heap_threads` shares it"
#define ALLOC_NULL                                                             \
    "; NULL when the dump has no cumulative counters (a process started "      \
    "without `prof_accum`)"

static const struct ha_catalog_column columns[] = {
    /* stats_admin_sessions (vtab/sessions.c) */
    {"stats_admin_sessions", "id",
     "connection id: `CONNECTION_ID()`, and what `KILL` takes"},
    {"stats_admin_sessions", "user", "the authenticated user"},
    {"stats_admin_sessions", "host",
     "the client's `address:port` (or address, `localhost`)"},
    {"stats_admin_sessions", "db", "the current schema; NULL when none"},
    {"stats_admin_sessions", "command",
     "`Sleep`, `Query`, `Execute`, ...; `HTTP` for an HTTP request"},
    {"stats_admin_sessions", "time", "seconds in this command"},
    {"stats_admin_sessions", "state",
     "`executing` while a statement runs (also between its slices), "
     "`Sending to client` while it waits for its client to take rows, "
     "else ''"},
    {"stats_admin_sessions", "info",
     "the statement running (for HTTP, the request line); NULL when idle"},

    /* stats_memory_jemalloc, stats_memory_metrics (vtab/stats.c) */
    {"stats_memory_jemalloc", "variable_name",
     "the figure: `allocated`, `active`, `metadata`, `metadata_thp`, "
     "`resident`, `mapped`, `retained` (jemalloc's `stats.*`), "
     "`zero_reallocs`, `background_thread.num_threads`, `.num_runs`, "
     "`.run_interval`, `narenas`, `prof.lg_sample` (the sampling rate "
     "now), `prof.interval` (bytes between interval dumps, 0: none), "
     "`stats_age_ms` (ms since jemalloc's statistics were refreshed), "
     "and `heapadmin.*` in a host"},
    {"stats_memory_jemalloc", "variable_value",
     "bytes or a count; NULL when jemalloc cannot report it (built "
     "without statistics, an older jemalloc, `prof.*` with profiling "
     "off)"},
    {"stats_memory_metrics", "Variable_Name",
     "ProxySQL's row name: `SQLite3_memory_bytes` (all SQLite memory of "
     "the process), `jemalloc_resident`, `jemalloc_active`, "
     "`jemalloc_allocated`, `jemalloc_mapped`, `jemalloc_metadata`, "
     "`jemalloc_retained`"},
    {"stats_memory_metrics", "Variable_Value", "the value, as text"},

    /* stats_memory_breakdown (vtab/memory_breakdown.c) */
    {"stats_memory_breakdown", "component",
     "`rss`, `jemalloc.allocated`, `jemalloc.dirty`, `heapadmin` "
     "(heapadmin's own arena inside a host: `heapadmin.resident`, which "
     "the jemalloc rows leave out), `other.stacks`, `cgroup.limit`, ... "
     "(the list is in rss-and-leaks.md)"},
    {"stats_memory_breakdown", "kind",
     "`total`; `part` (the parts add up to the total); `subtotal` (the "
     "sum of the parts named under it); `info` (context, not in RSS: "
     "`pss`, `swap`, `jemalloc.retained`, `jemalloc.mapped`, the memory "
     "cgroup's rows, and `jemalloc.internal.prof_log` while a lifetime "
     "window is open)"},
    {"stats_memory_breakdown", "bytes",
     "NULL when its source could not be read (jemalloc without "
     "statistics, no /proc), and on `heapadmin` where heapadmin keeps no "
     "arena apart (heapadmind: its memory is in the jemalloc rows)"},
    {"stats_memory_breakdown", "pct_of_rss",
     "`bytes * 100 / rss`; NULL on info rows"},
    {"stats_memory_breakdown", "detail",
     "what it is, the figures behind it, and what to do about it; where "
     "`bytes` is NULL, why (no limit, heapadmin's memory not kept apart)"},

    /* stats_jemalloc_arenas (vtab/arenas.c) */
    {"stats_jemalloc_arenas", "arena", "the arena's index; NULL: all merged"},
    {"stats_jemalloc_arenas", "threads", "threads assigned to it"},
    {"stats_jemalloc_arenas", "pactive", "pages in active extents"},
    {"stats_jemalloc_arenas", "pdirty", "pages freed, waiting for dirty decay"},
    {"stats_jemalloc_arenas", "pmuzzy",
     "pages purged lazily (MADV_FREE), waiting for muzzy decay"},
    {"stats_jemalloc_arenas", "active_bytes", "`pactive` in bytes"},
    {"stats_jemalloc_arenas", "dirty_bytes", "`pdirty` in bytes"},
    {"stats_jemalloc_arenas", "muzzy_bytes", "`pmuzzy` in bytes"},
    {"stats_jemalloc_arenas", "mapped", "bytes mapped (virtual)"},
    {"stats_jemalloc_arenas", "retained",
     "bytes retained for reuse (virtual, not resident)"},
    {"stats_jemalloc_arenas", "resident",
     "resident bytes, a maximum: pages handed out but never written count "
     "too"},
    {"stats_jemalloc_arenas", "allocated_small", "bytes in small allocations"},
    {"stats_jemalloc_arenas", "allocated_large", "bytes in large allocations"},
    {"stats_jemalloc_arenas", "metadata", "base and internal bytes"},
    {"stats_jemalloc_arenas", "tcache_bytes",
     "freed objects cached by its threads (stashed ones included)"},
    {"stats_jemalloc_arenas", "dirty_decay_ms",
     "its dirty decay (-1: never); on the merged row "
     "`arenas.dirty_decay_ms`, what new arenas get"},
    {"stats_jemalloc_arenas", "muzzy_decay_ms", "the same for muzzy decay"},
    {"stats_jemalloc_arenas", "dirty_npurge", "dirty purge sweeps so far"},
    {"stats_jemalloc_arenas", "dirty_purged", "dirty pages purged so far"},
    {"stats_jemalloc_arenas", "muzzy_npurge", "muzzy purge sweeps so far"},
    {"stats_jemalloc_arenas", "muzzy_purged", "muzzy pages purged so far"},

    /* stats_jemalloc_bins, stats_jemalloc_lextents (vtab/bins.c) */
    {"stats_jemalloc_bins", "arena", "the arena's index; NULL: all merged"},
    {"stats_jemalloc_bins", "bin", "the size class's index"},
    {"stats_jemalloc_bins", "size", "region size, bytes"},
    {"stats_jemalloc_bins", "nregs", "regions per slab"},
    {"stats_jemalloc_bins", "slab_size", "bytes per slab"},
    {"stats_jemalloc_bins", "curregs",
     "regions in use, thread caches' included"},
    {"stats_jemalloc_bins", "curslabs", "slabs"},
    {"stats_jemalloc_bins", "nonfull_slabs", "slabs with a free region"},
    {"stats_jemalloc_bins", "utilization",
     "`curregs / (curslabs * nregs)`; NULL without slabs"},
    {"stats_jemalloc_bins", "allocated_bytes", "`curregs * size`"},
    {"stats_jemalloc_bins", "free_bytes",
     "`curslabs * slab_size - allocated_bytes`: this class's part of "
     "fragmentation"},
    {"stats_jemalloc_bins", "nmalloc", "allocations served (cumulative)"},
    {"stats_jemalloc_bins", "ndalloc", "deallocations (cumulative)"},
    {"stats_jemalloc_bins", "nrequests",
     "requests, thread caches' hits included"},
    {"stats_jemalloc_bins", "nfills", "thread-cache fills"},
    {"stats_jemalloc_bins", "nflushes", "thread-cache flushes"},
    {"stats_jemalloc_bins", "nslabs", "slabs created (cumulative)"},
    {"stats_jemalloc_bins", "nreslabs", "times a slab was swapped for another"},
    {"stats_jemalloc_bins", "prof_live",
     "sampled objects of the class live now (`prof.stats.bins.<j>.live`); "
     "needs `opt.prof_stats` (merged rows only, NULL otherwise)"},
    {"stats_jemalloc_bins", "prof_live_requested",
     "the sizes those objects were asked with, in all; `opt.prof_stats`"},
    {"stats_jemalloc_bins", "requested_bytes",
     "`allocated_bytes` at the sampled objects' requested-to-usable "
     "ratio: what the program asked for, estimated; `opt.prof_stats`"},
    {"stats_jemalloc_bins", "rounding_waste_bytes",
     "`allocated_bytes - requested_bytes`: lost to rounding up to the "
     "class's size (33-byte objects in the 48-byte class lose 15 bytes "
     "each); `opt.prof_stats`"},
    {"stats_jemalloc_lextents", "arena", "the arena's index; NULL: all merged"},
    {"stats_jemalloc_lextents", "lextent", "the size class's index"},
    {"stats_jemalloc_lextents", "size", "bytes"},
    {"stats_jemalloc_lextents", "curlextents", "extents in use"},
    {"stats_jemalloc_lextents", "allocated_bytes", "`curlextents * size`"},
    {"stats_jemalloc_lextents", "nmalloc", "allocations (cumulative)"},
    {"stats_jemalloc_lextents", "ndalloc", "deallocations (cumulative)"},
    {"stats_jemalloc_lextents", "nrequests", "requests (cumulative)"},

    /* stats_heap_dumps (vtab/heap_dumps.c) */
    {"stats_heap_dumps", "file_name",
     "the name in the datadir: what `heap_top()` and the other functions "
     "take"},
    {"stats_heap_dumps", "kind",
     "`manual` (m), `interval` (i), `high-water` (u), `final` (f), `limit` "
     "(taken by the limit watch as memory neared the cgroup's limit; "
     "named as a manual dump), or `log` (a lifetime log)"},
    {"stats_heap_dumps", "pid", "the process that wrote it"},
    {"stats_heap_dumps", "seq",
     "jemalloc's dump sequence number (a log's: the logs' own)"},
    {"stats_heap_dumps", "kind_seq",
     "the sequence within the kind; NULL for a final dump"},
    {"stats_heap_dumps", "size_bytes", "the file's size"},
    {"stats_heap_dumps", "mtime", "its modification time, unix seconds"},
    {"stats_heap_dumps", "sample_period",
     "mean bytes between samples (`heap_v2/<period>`)"},
    {"stats_heap_dumps", "bytes",
     "in-use bytes, scaled as jeprof scales samples: jeprof's Total to "
     "the byte; a log's: the bytes freed in its window"},
    {"stats_heap_dumps", "objects", "in-use objects, scaled the same way"},
    {"stats_heap_dumps", "build_id_mismatch",
     "binaries replaced on disk since the dump (`path (dump build-id X, "
     "on disk Y)`, `; `-joined); '' when all match, NULL when no "
     "build-ids were recorded"},
    {"stats_heap_dumps", "alloc_bytes",
     "bytes allocated since profiling began, freed or not, scaled" ALLOC_NULL
     ": then every `alloc_*` column of the other tables is NULL for it too"},
    {"stats_heap_dumps", "alloc_objects", "the same in objects" ALLOC_NULL},
    {"stats_heap_dumps", "resident_bytes",
     "the process's resident memory (VmRSS) when the dump was taken, "
     "recorded beside it (`<dump>.mem`); NULL when not recorded"},
    {"stats_heap_dumps", "cgroup_usage_bytes",
     "the memory cgroup's usage then (the limiting group's); NULL: no "
     "cgroup"},
    {"stats_heap_dumps", "cgroup_limit_bytes",
     "its memory limit then; NULL: none"},
    {"stats_heap_dumps", "peak",
     "1 for the dump of highest resident memory of its process: "
     "retention keeps it out of rotation; else 0"},
    {"stats_heap_dumps", "reason",
     "why it was taken (`working set 57.6 MiB reached 0.90 of the memory "
     "limit 64.0 MiB`, `dump_interval_s = 60`, `jemalloc-dump_now`); "
     "NULL: not recorded"},

    {"stats_heap_dumps", "cgroup_working_set_bytes",
     "the cgroup's working set then (usage less inactive file cache); a "
     "limit dump's, with its usage: the look the watch decided on; NULL: "
     "no cgroup"},
    {"stats_heap_dumps", "allocated_bytes",
     "jemalloc's `stats.allocated` when it was taken (the host's, "
     "heapadmin's own arena apart): what `bytes` estimates from the "
     "samples; NULL: not recorded"},
    /* stats_previous_runs (vtab/previous_runs.c) */
    {"stats_previous_runs", "pid", "the run's process"},
    {"stats_previous_runs", "program", "its program"},
    {"stats_previous_runs", "started", "when it started, unix seconds"},
    {"stats_previous_runs", "ended",
     "when it ended, where known (a clean stop or exit), unix seconds; "
     "NULL otherwise"},
    {"stats_previous_runs", "last_seen",
     "its last sign of life (a history sample or a dump), unix seconds"},
    {"stats_previous_runs", "how",
     "`oom-killed` (the OOM kill count of its memory cgroup rose after "
     "its last look), `stopped`, `exited`, `killed` (no clean stop, and "
     "the kernel's count did not move), `ended` (its cgroup is gone, so "
     "the kernel cannot say), or `running` (another process of the "
     "datadir)"},
    {"stats_previous_runs", "detail", "the evidence"},
    {"stats_previous_runs", "peak_resident_bytes",
     "the most resident memory seen (its samples and its dumps)"},
    {"stats_previous_runs", "cgroup",
     "its memory cgroup, `v1 /svc` or `v2 /...`; NULL: none"},
    {"stats_previous_runs", "memory_limit_bytes",
     "the memory limit that bound it; NULL: none"},
    {"stats_previous_runs", "last_usage_bytes",
     "its cgroup's usage at its last look written down: near a limit, "
     "within 1% of the limit of its watch's last look"},
    {"stats_previous_runs", "dumps", "its dumps"},
    {"stats_previous_runs", "peak_dump",
     "its dump of highest resident memory, as `heap_top` takes it "
     "(`earlier-runs/<dir>/<dump>` when the pid-1 rule moved it)"},
    {"stats_previous_runs", "limit_dumps", "its limit dumps, `, `-joined"},
    {"stats_previous_runs", "last_dump", "its newest dump"},
    {"stats_previous_runs", "last_working_set_bytes",
     "the working set at that look (usage less inactive file cache)"},
    {"stats_previous_runs", "limit_dump_usage_bytes",
     "the usage at the look its last limit dump was decided on; NULL: none "
     "recorded"},

    /* stats_jemalloc_recent (vtab/recent.c) */
    {"stats_jemalloc_recent", "seq", "1 = the oldest kept"},
    {"stats_jemalloc_recent", "size", "bytes asked for"},
    {"stats_jemalloc_recent", "usize", "bytes jemalloc gave (its size class)"},
    {"stats_jemalloc_recent", "alloc_time",
     "when it was allocated, unix seconds (jemalloc's profiling clock, "
     "moved to wall-clock time)"},
    {"stats_jemalloc_recent", "alloc_thread", "jemalloc's thread uid"},
    {"stats_jemalloc_recent", "alloc_thread_name",
     "the thread's name, when it has one"},
    {"stats_jemalloc_recent", "age_ms", "ms since it was allocated"},
    {"stats_jemalloc_recent", "released", "1 when freed since"},
    {"stats_jemalloc_recent", "free_time",
     "when it was freed, unix seconds; NULL: live"},
    {"stats_jemalloc_recent", "free_thread", "the freeing thread's uid"},
    {"stats_jemalloc_recent", "free_thread_name", "its name"},
    {"stats_jemalloc_recent", "lifetime_ms",
     "`free_time - alloc_time` in ms; NULL: live"},
    {"stats_jemalloc_recent", "function",
     "its allocation site (`heap_top`'s flat function)"},
    {"stats_jemalloc_recent", "stack", "its stack, collapsed root first"},
    {"stats_jemalloc_recent", "free_function", "where it was freed"},
    {"stats_jemalloc_recent", "free_stack", "the stack that freed it"},
    {"stats_jemalloc_recent", "objects",
     "the objects it stands for, scaled as jeprof scales samples"},

    /* stats_agents (vtab/agents.c) */
    {"stats_agents", "pid", "the process"},
    {"stats_agents", "program",
     "its program, as the kernel proves it (`/proc/<pid>/exe`)"},
    {"stats_agents", "user", "the user it runs as (its directory's owner)"},
    {"stats_agents", "socket",
     "its MySQL endpoint (`mariadb -S`), or the registry socket of a gone "
     "one"},
    {"stats_agents", "started", "when the process started, unix seconds"},
    {"stats_agents", "allocated",
     "jemalloc's allocated bytes, the host's alone (the agent's own "
     "arena left out); NULL unless it answered"},
    {"stats_agents", "resident", "the same for resident bytes"},
    {"stats_agents", "state",
     "`serving`; `no answer` (it lives but did not answer within 2 s); "
     "`socket missing` (it lives and runs its program, but its `.http` "
     "file was deleted: the agent binds it again within a second); "
     "`gone` (kill -9, a crash, a pid reused: removed at the next start "
     "in the datadir); `mismatch` (a live process listens there, but the "
     "kernel says it runs another program or user than the name claims: "
     "never asked, never merged)"},
    {"stats_agents", "detail",
     "why, for every state but `serving`; for a process heapadmin-attach "
     "attached after its start, \"attached at <UTC time>\" and the "
     "children it forked before, which are not served"},

    /* stats_push (vtab/stats_push.c) */
    {"stats_push", "target",
     "the target's name in the outbox (`t` and 8 hex digits, from its "
     "type and URL)"},
    {"stats_push", "type", "`pyroscope` or `parca`"},
    {"stats_push", "url",
     "the receiver's base URL (it holds no credentials: a URL with "
     "`user:password@` is refused)"},
    {"stats_push", "kinds", "the kinds of dump it takes"},
    {"stats_push", "queued", "profiles in the outbox for it now"},
    {"stats_push", "queued_bytes", "their bytes"},
    {"stats_push", "sent", "profiles its receiver took, since the start"},
    {"stats_push", "sent_bytes",
     "their bytes (the gzipped profile, not the request)"},
    {"stats_push", "failed", "attempts that failed, since the start"},
    {"stats_push", "dropped",
     "profiles given up: past `push_outbox_max_bytes` (oldest first), or "
     "refused for good (a 4xx other than 408 and 429)"},
    {"stats_push", "last_error", "the last failure's reason; NULL: none"},
    {"stats_push", "last_attempt",
     "when it was last tried, unix seconds; NULL: never"},
    {"stats_push", "last_sent",
     "when a receiver last took one, unix seconds; NULL: never"},
    {"stats_push", "next_attempt",
     "when the next retry is due, unix seconds; NULL: none due"},

    /* heap_top (vtab/heap_top.c) */
    {"heap_top", "function",
     "the function; `f (inline)` for an inlined one; "
     "`<module>+0x<offset>` when no name is certain (the ELF address, "
     "which `eu-addr2line -e <module>` takes), `0x<address>` outside "
     "every module"},
    {"heap_top", "flat_bytes",
     "in-use bytes allocated by the function itself (at the allocation "
     "site), truncated as jeprof prints them"},
    {"heap_top", "flat_pct", "share of the total, percent"},
    {"heap_top", "cum_bytes", "in-use bytes allocated by it or its callees"},
    {"heap_top", "cum_pct", "share of the total, percent"},
    {"heap_top", "flat_objects", "in-use objects, flat"},
    {"heap_top", "cum_objects", "in-use objects, cumulative"},
    {"heap_top", "module",
     "the mapped file of its code (of the first frame seen when a name "
     "is defined in several, as static functions may be)"},
    {"heap_top", "alloc_bytes",
     "bytes the function itself allocated since profiling began, freed "
     "or not (jeprof --alloc_space)" ALLOC_NULL},
    {"heap_top", "alloc_objects",
     "the same in objects (--alloc_objects)" ALLOC_NULL},
    {"heap_top", "alloc_cum_bytes",
     "allocated by it or its callees" ALLOC_NULL},
    {"heap_top", "alloc_cum_objects", "the same in objects" ALLOC_NULL},
    {"heap_top", "wrapper",
     "the allocation wrappers the site called and the cut skipped (in "
     "each of its stacks the outermost one), most bytes first, "
     "`, `-joined (at most 8, then `, ...`); NULL when it called the "
     "allocator itself, or is not a site"},
    {"heap_top", "dump", DUMP_ARG},
    {"heap_top", "seconds", SECONDS_ARG},
    {"heap_top", "thread", THREAD_ARG "; percentages stay of the whole dump"},

    /* heap_stacks, heap_profile (vtab/heap_stacks.c) */
    {"heap_stacks", "stack_id",
     "the stack's place in the dump (1 = first); the same in "
     "`heap_profile`"},
    {"heap_stacks", "bytes", "in-use bytes, scaled as jeprof scales them"},
    {"heap_stacks", "objects", "in-use objects, scaled the same way"},
    {"heap_stacks", "frames", "frames in the stack, inlined ones included"},
    {"heap_stacks", "stack",
     "flame-graph collapsed form: root first, frames joined by `;`, "
     "inlined frames marked `[inline]`, cut past the allocator and the "
     "allocation wrappers: its last frame is the allocation site"},
    {"heap_stacks", "alloc_bytes",
     "allocated since profiling began, freed or not, scaled" ALLOC_NULL},
    {"heap_stacks", "alloc_objects", "the same in objects" ALLOC_NULL},
    {"heap_stacks", "wrapper",
     "the wrapper frames the cut left out, collapsed the same way: "
     "`stack || ';' || wrapper` is the whole stack past the allocator; "
     "NULL when the site called the allocator itself"},
    {"heap_stacks", "dump", DUMP_ARG},
    {"heap_stacks", "seconds", SECONDS_ARG},
    {"heap_stacks", "thread", THREAD_ARG "; stacks they have no part in are "
                              "left out"},
    {"heap_profile", "stack_id",
     "the stack's place in the dump, as in `heap_stacks`"},
    {"heap_profile", "depth",
     "0 = the allocation site (the first frame after the allocator's and "
     "the allocation wrappers'), counting inlined frames, innermost "
     "first"},
    {"heap_profile", "address",
     "the address looked up, hex: the return address minus one for "
     "callers"},
    {"heap_profile", "function",
     "the name; `<module>+0x<offset>` when none is certain, the address "
     "outside every module"},
    {"heap_profile", "file", "source file; NULL: unknown"},
    {"heap_profile", "line", "source line; NULL: unknown"},
    {"heap_profile", "module", "the mapped file holding the address"},
    {"heap_profile", "inlined", "1 when inlined into the next row's function"},
    {"heap_profile", "bytes", "the stack's in-use bytes (as heap_stacks)"},
    {"heap_profile", "objects", "the stack's in-use objects"},
    {"heap_profile", "module_changed",
     "1 when the module on disk is not the one the dump mapped "
     "(build-id): the frame is left unnamed, `<module>+0x<file offset>`"},
    {"heap_profile", "dump", DUMP_ARG},

    /* heap_profile_diff (vtab/heap_diff.c) */
    {"heap_profile_diff", "stack_id", "row number, in stack order"},
    {"heap_profile_diff", "stack",
     "the stack collapsed for flame graphs: root first, frames joined by "
     "`;`, `[inline]` marks"},
    {"heap_profile_diff", "bytes",
     "current minus base (negative: memory released)"},
    {"heap_profile_diff", "objects", "the same for objects"},
    {"heap_profile_diff", "site",
     "the stack's last frame: its allocation site (past the allocation "
     "wrappers of the current dump, which cut both)"},
    {"heap_profile_diff", "alloc_bytes",
     "allocated between the two dumps, freed or not: current minus base "
     "of the cumulative counters; NULL when either dump has none, or "
     "when they went down (`prof.reset` between the dumps)"},
    {"heap_profile_diff", "alloc_objects", "the same in objects"},
    {"heap_profile_diff", "alloc_bytes_per_s",
     "`alloc_bytes` over the seconds between the dumps: the allocation "
     "rate"},
    {"heap_profile_diff", "seconds",
     "between the two dumps (each dated when its `.buildid` says, else "
     "by its mtime; 'live' now)"},
    {"heap_profile_diff", "base",
     "first argument: the older dump, a file name or 'live'"},
    {"heap_profile_diff", "current",
     "second argument: the newer dump, a file name or 'live'"},

    /* heap_modules (vtab/heap_modules.c) */
    {"heap_modules", "path", "the file as the dump mapped it"},
    {"heap_modules", "build_id",
     "its GNU build-id (the file on disk's, or the one recorded at the "
     "dump when it was replaced since); NULL: none"},
    {"heap_modules", "names_from",
     "`dwarf`, `debuginfod`, `symtab`, `dynsym` or `none`"},
    {"heap_modules", "frames", "distinct addresses of the dump in it"},
    {"heap_modules", "bytes",
     "in-use bytes of the stacks through it (allocator frames included)"},
    {"heap_modules", "detail",
     "where the names came from, or why there are none: the debug file "
     "that would name them, debuginfod's answer (once per module, never "
     "per frame), a file that cannot be read or was replaced since the "
     "dump"},
    {"heap_modules", "named_frames",
     "of its frames, those with a certain "
     "name"},
    {"heap_modules", "from_index",
     "1: named from its symbol index in the datadir's `cache/` (none of "
     "its files read); 0: from its files"},
    {"heap_modules", "dump", DUMP_ARG},

    /* heap_threads (vtab/heap_threads.c) */
    {"heap_threads", "thread_id",
     "jemalloc's number of the thread (from 0 in the order threads first "
     "sampled; not the kernel's tid); NULL for the part of stacks no "
     "thread line shares (jemalloc writes none)"},
    {"heap_threads", "thread_name",
     "what `thread.prof.name` set (`heapadmin_set_thread_name`), or the "
     "kernel's name at its last sample with `prof_sys_thread_name`; NULL "
     "when it has none"},
    {"heap_threads", "bytes",
     "in-use bytes it allocated and still held, scaled as jeprof scales "
     "them: its share of each stack, the rows adding up to the dump's "
     "total (`stats_heap_dumps.bytes`) exactly"},
    {"heap_threads", "objects", "the same in objects"},
    {"heap_threads", "bytes_pct", "its share of the total, percent"},
    {"heap_threads", "alloc_bytes",
     "bytes it allocated since profiling began, freed or not, or in a "
     "delta's window" ALLOC_NULL},
    {"heap_threads", "alloc_objects", "the same in objects" ALLOC_NULL},
    {"heap_threads", "stacks", "stacks with a line of this thread"},
    {"heap_threads", "dump", DUMP_ARG},
    {"heap_threads", "seconds", SECONDS_ARG},

    /* heap_wrappers (vtab/heap_wrappers.c) */
    {"heap_wrappers", "function", "the name, as `heap_profile` shows it"},
    {"heap_wrappers", "wrapper", "1: the cut skips it; 0: it does not"},
    {"heap_wrappers", "why",
     "`built-in list`, `operator`, `detected`, `removed by operator` or "
     "`not detected`"},
    {"heap_wrappers", "detail",
     "detection's evidence, or why it refused (its callers, object "
     "sizes, code size, or the stacks where it is not directly above the "
     "allocator); NULL for a listed name"},
    {"heap_wrappers", "stacks",
     "a wrapper: the stacks whose cut skipped it; not one: the stacks "
     "whose allocation site it is"},
    {"heap_wrappers", "bytes", "those stacks' in-use bytes"},
    {"heap_wrappers", "alloc_bytes", "their cumulative bytes" ALLOC_NULL},
    {"heap_wrappers", "module",
     "the mapped file of its code (first frame seen)"},
    {"heap_wrappers", "callers",
     "distinct callers detection saw it reached from (detected and "
     "refused names); NULL otherwise"},
    {"heap_wrappers", "code_bytes",
     "its symbol's size, where known and looked at"},
    {"heap_wrappers", "dump", DUMP_ARG},

    /* heap_growth, heap_growth_stacks (vtab/heap_growth.c) */
    {"heap_growth", "rank", "1 = the likeliest leak"},
    {"heap_growth", "function",
     "the allocation site: `heap_top`'s flat function, `f (inline)` for "
     "an inlined one"},
    {"heap_growth", "first_bytes",
     "in-use bytes at the series' first dump (0: absent)"},
    {"heap_growth", "last_bytes", "at its last dump"},
    {"heap_growth", "growth_bytes", "`last_bytes - first_bytes`"},
    {"heap_growth", "bytes_per_hour",
     "the least-squares slope over the dumps' times; NULL with one dump "
     "or when all have the same time"},
    {"heap_growth", "r2",
     "how well a line fits, 0..1; NULL when it never changed"},
    {"heap_growth", "grew_share",
     "the share of steps between dumps that grew; NULL with one dump"},
    {"heap_growth", "pattern",
     "`steady`, `step` (grew once), `growing`, `bursty`, `shrinking`, "
     "`flat`, `unknown`"},
    {"heap_growth", "score",
     "`max(bytes_per_hour, 0) * r2 * grew_share`: the rank's key"},
    {"heap_growth", "first_objects", "in-use objects at the first dump"},
    {"heap_growth", "last_objects", "at the last dump"},
    {"heap_growth", "objects_per_hour", "the slope in objects"},
    {"heap_growth", "max_bytes", "the most it held in one dump"},
    {"heap_growth", "steps", "`dumps - 1`"},
    {"heap_growth", "grew", "steps that grew"},
    {"heap_growth", "shrank", "steps that shrank"},
    {"heap_growth", "dumps", "dumps in the series (those read)"},
    {"heap_growth", "hours", "from the first dump to the last"},
    {"heap_growth", "first_dump", "the series' first file name"},
    {"heap_growth", "last_dump", "the series' last file name"},
    {"heap_growth", "alloc_bytes",
     "allocated from the first dump to the last, freed or not (last minus "
     "first of the cumulative counters); NULL when a dump has none, or "
     "when they fell (`prof.reset` between)"},
    {"heap_growth", "alloc_objects", "the same in objects"},
    {"heap_growth", "alloc_bytes_per_s",
     "`alloc_bytes` over the series' seconds: the allocation rate"},
    {"heap_growth", "skipped",
     "the series' dumps that could not be read, each with why "
     "(`a.heap: ...; ...`), left out; NULL when none"},
    {"heap_growth", "since",
     "first argument: an integer N (the newest N dumps of the newest "
     "process), a dump's name (from it to the newest of its process, or "
     "to `until`), or with `until` a time (unix seconds, or "
     "'YYYY-MM-DD HH:MM[:SS]' UTC); none: every dump of the process that "
     "wrote the newest"},
    {"heap_growth", "until",
     "second argument: a dump of the same process as `since`, or the end "
     "time: then the dumps taken between the two times, of the process "
     "that took the newest of them"},
    {"heap_growth", "dump_kind",
     "third argument: only dumps of that kind (`manual`, `interval`, "
     "`high-water`, `final`); default: every dump, whoever took it (each "
     "is a snapshot of the same heap)"},
    {"heap_growth_stacks", "stack",
     "the stack, collapsed root first as `heap_stacks` collapses it"},
    {"heap_growth_stacks", "site", "its last frame: the allocation site"},

    /* heap_fragmentation, heap_fragmentation_stacks
     * (vtab/heap_fragmentation.c) */
    {"heap_fragmentation", "function",
     "the allocation site, as `heap_top` names it; NULL: the class's free "
     "regions no sampled object stands in"},
    {"heap_fragmentation", "size_class", "the region size, bytes"},
    {"heap_fragmentation", "live_regions",
     "the site's estimated regions in the class's slabs (each sampled "
     "object stands for `1/(1 - exp(-size/period))` objects, less "
     "itself, which jemalloc keeps on a page of its own); a class's rows "
     "add up to at most its `curregs`"},
    {"heap_fragmentation", "free_bytes", "its share of the class's free bytes"},
    {"heap_fragmentation", "class_share",
     "that share, percent of the class's free bytes"},
    {"heap_fragmentation", "utilization",
     "the class's `curregs / (curslabs * nregs)`"},
    {"heap_fragmentation", "note",
     "what of the row is estimated and how; for a row without a "
     "function, why no sample stands for those regions; NULL: exact"},
    {"heap_fragmentation", "module", "the site's module"},
    {"heap_fragmentation", "exact_share",
     "the share of `live_regions` placed by recorded sizes (or a stack's "
     "single sample): 1 exact, 0 estimated; NULL without a function"},
    {"heap_fragmentation", "dump", DUMP_ARG},
    {"heap_fragmentation_stacks", "stack", "the stack, collapsed root first"},

    /* heap_lifetimes, heap_lifetimes_stacks (vtab/heap_lifetimes.c) */
    {"heap_lifetimes", "function",
     "the allocation site: `heap_top`'s flat function, `f (inline)` for "
     "an inlined one"},
    {"heap_lifetimes", "objects",
     "objects freed in the window, scaled as jeprof scales samples"},
    {"heap_lifetimes", "bytes", "the same in bytes"},
    {"heap_lifetimes", "objects_per_s",
     "objects over the window's duration: the rate at which the site "
     "churns"},
    {"heap_lifetimes", "bytes_per_s", "the same in bytes"},
    {"heap_lifetimes", "lifetime_p50_ms",
     "how long its objects lived (free time minus allocation time), "
     "median of objects, ms; NULL: under one tick of the coarse clock, "
     "too short for it"},
    {"heap_lifetimes", "lifetime_p90_ms", "the 90th percentile"},
    {"heap_lifetimes", "lifetime_p99_ms", "the 99th percentile"},
    {"heap_lifetimes", "lifetime_max_ms", "the longest"},
    {"heap_lifetimes", "free_function",
     "where most of them were freed: the first frame after the "
     "deallocator's and the free-side wrappers' (`zfree`, `g_free`, ...)"},
    {"heap_lifetimes", "free_share", "the share of objects freed there"},
    {"heap_lifetimes", "other_thread_share",
     "the share freed by another thread than the one that allocated "
     "them"},
    {"heap_lifetimes", "temporary_share",
     "the share that was temporary as heaptrack defines it (freed before "
     "the process made any other allocation or free), estimated from the "
     "log; NULL when the window cannot tell (its range is wider than "
     "0.5)"},
    {"heap_lifetimes", "temporary_min",
     "the low end of the range the log leaves for it (95%)"},
    {"heap_lifetimes", "temporary_max", "the high end"},
    {"heap_lifetimes", "temporary_note",
     "why the range is wider than 0.05 and what narrows it: lives too "
     "short for the coarse clock (start with "
     "`prof_time_resolution:high`), or too few samples; NULL otherwise"},
    {"heap_lifetimes", "samples", "sampled allocations behind the row"},
    {"heap_lifetimes", "clock_tick_ms",
     "the resolution of the log's clock: 1e-6 with "
     "`prof_time_resolution:high` (ns), else the tick of "
     "CLOCK_MONOTONIC_COARSE (4 on a HZ=250 kernel)"},
    {"heap_lifetimes", "log",
     "the argument: a lifetime log's file name (`stats_heap_dumps` kind "
     "`log`)"},
    {"heap_lifetimes_stacks", "stack_id", "row number, by bytes freed"},
    {"heap_lifetimes_stacks", "stack",
     "the allocation stack, collapsed root first"},
    {"heap_lifetimes_stacks", "function", "its allocation site"},
    {"heap_lifetimes_stacks", "free_stack",
     "the collapsed stack that freed most of them"},

    /* global_variables, runtime_global_variables (vtab/globals.c) */
    {"global_variables", "variable_name",
     "`admin-<name>` or `jemalloc-<name>`, a fixed set"},
    {"global_variables", "variable_value",
     "the current value as text; booleans read `true`/`false`; NULL when "
     "jemalloc cannot tell, and for stats users"},

    /* stats_history.system_memory and its rollups (engine/history.c) */
    {"system_memory", "timestamp",
     "unix seconds: the sample's time (the hour's or day's start in the "
     "rollups)"},
    {"system_memory", "allocated", "jemalloc's `stats.allocated`, bytes"},
    {"system_memory", "resident", "`stats.resident`, bytes"},
    {"system_memory", "active", "`stats.active`, bytes"},
    {"system_memory", "mapped", "`stats.mapped`, bytes"},
    {"system_memory", "metadata", "`stats.metadata`, bytes"},
    {"system_memory", "retained", "`stats.retained`, bytes"},
    {"system_memory", "pid",
     "the process that sampled it (several may share a datadir); 0 in "
     "rows from before the column"},
    {"system_memory", "cgroup_usage",
     "the memory cgroup's usage (the limiting group's), bytes; NULL "
     "without a cgroup or a limit"},
    {"system_memory", "cgroup_limit",
     "its memory limit, bytes; NULL without one"},

    /* session_variables, mysql_variables (vtab/sessions.c) */
    {"session_variables", "variable_name", "lower case"},
    {"session_variables", "variable_value",
     "an integer, text or NULL, as the variable holds"},

    /* SQLite's own */
    {"sqlite_master", "type", "`table`, `index`, `view` or `trigger`"},
    {"sqlite_master", "name", "the object's name"},
    {"sqlite_master", "tbl_name", "the table it belongs to"},
    {"sqlite_master", "rootpage", "its first page in the database file"},
    {"sqlite_master", "sql", "the statement that created it"},
};

const struct ha_catalog_column *
ha_catalog_columns(size_t *n_out)
{
    *n_out = HA_ARRAY_SIZE(columns);
    return columns;
}

const char *
ha_catalog_columns_like(const char *table)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(likes); i++)
        if (strcmp(likes[i].table, table) == 0)
            return likes[i].like;
    return NULL;
}
