/* SPDX-License-Identifier: MIT
 *
 * Resident memory split into parts that add up (see breakdown.h). Pure.
 */
#include "prof/breakdown.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

void
ha_breakdown_format_bytes(int64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = bytes < 0 ? -(double)bytes : (double)bytes;
    const char *sign = bytes < 0 ? "-" : "";
    size_t u = 0;

    if (v < 1024) {
        snprintf(buf, len, "%s%.0f B", sign, v);
        return;
    }
    v /= 1024;
    while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%s%.1f %s", sign, v, units[u]);
}

const char *
ha_breakdown_kind_name(enum ha_breakdown_kind k)
{
    switch (k) {
    case HA_BREAKDOWN_TOTAL:
        return "total";
    case HA_BREAKDOWN_PART:
        return "part";
    case HA_BREAKDOWN_SUBTOTAL:
        return "subtotal";
    case HA_BREAKDOWN_INFO:
        return "info";
    default:
        return "?";
    }
}

/* Indexes into the row array, in the order of breakdown.h. */
enum {
    R_RSS, R_PSS, R_SWAP,
    R_JE, R_ALLOCATED, R_INTERNAL, R_TCACHE, R_FRAG, R_FRAG_SLABS,
    R_FRAG_LARGE, R_DIRTY, R_MUZZY, R_METADATA, R_UNTOUCHED,
    R_HEAPADMIN,
    R_OTHER, R_STACKS, R_BRK, R_FILES, R_ANON,
    R_RETAINED, R_MAPPED,
    R_LIMIT, R_USAGE, R_HEADROOM,
    R_MAX
};
_Static_assert(R_MAX == HA_BREAKDOWN_ROWS, "a row per name");

static const struct {
    const char *name;
    enum ha_breakdown_kind kind;
} layout[R_MAX] = {
    [R_RSS] = {"rss", HA_BREAKDOWN_TOTAL},
    [R_PSS] = {"pss", HA_BREAKDOWN_INFO},
    [R_SWAP] = {"swap", HA_BREAKDOWN_INFO},
    [R_JE] = {"jemalloc", HA_BREAKDOWN_SUBTOTAL},
    [R_ALLOCATED] = {"jemalloc.allocated", HA_BREAKDOWN_PART},
    [R_INTERNAL] = {"jemalloc.internal", HA_BREAKDOWN_PART},
    [R_TCACHE] = {"jemalloc.tcache", HA_BREAKDOWN_PART},
    [R_FRAG] = {"jemalloc.fragmentation", HA_BREAKDOWN_SUBTOTAL},
    [R_FRAG_SLABS] = {"jemalloc.fragmentation.slabs", HA_BREAKDOWN_PART},
    [R_FRAG_LARGE] = {"jemalloc.fragmentation.large", HA_BREAKDOWN_PART},
    [R_DIRTY] = {"jemalloc.dirty", HA_BREAKDOWN_PART},
    [R_MUZZY] = {"jemalloc.muzzy", HA_BREAKDOWN_PART},
    [R_METADATA] = {"jemalloc.metadata", HA_BREAKDOWN_PART},
    [R_UNTOUCHED] = {"jemalloc.untouched", HA_BREAKDOWN_PART},
    [R_HEAPADMIN] = {"heapadmin", HA_BREAKDOWN_PART},
    [R_OTHER] = {"other", HA_BREAKDOWN_SUBTOTAL},
    [R_STACKS] = {"other.stacks", HA_BREAKDOWN_PART},
    [R_BRK] = {"other.brk_heap", HA_BREAKDOWN_PART},
    [R_FILES] = {"other.files", HA_BREAKDOWN_PART},
    [R_ANON] = {"other.anonymous", HA_BREAKDOWN_PART},
    [R_RETAINED] = {"jemalloc.retained", HA_BREAKDOWN_INFO},
    [R_MAPPED] = {"jemalloc.mapped", HA_BREAKDOWN_INFO},
    [R_LIMIT] = {"cgroup.limit", HA_BREAKDOWN_INFO},
    [R_USAGE] = {"cgroup.usage", HA_BREAKDOWN_INFO},
    [R_HEADROOM] = {"cgroup.headroom", HA_BREAKDOWN_INFO},
};

static void
set(struct ha_breakdown_row *r, int64_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set(struct ha_breakdown_row *r, int64_t bytes, const char *fmt, ...)
{
    va_list ap;

    r->known = true;
    r->bytes = bytes;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
    va_end(ap);
}

/* "10000 ms" or "never (-1)". */
static void
decay_text(ssize_t ms, char *buf, size_t len)
{
    if (ms < 0)
        snprintf(buf, len, "-1: never");
    else
        snprintf(buf, len, "%zd ms", ms);
}

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* jemalloc's rows; returns the sum of its parts (its resident pages). */
static int64_t
jemalloc_rows(const struct ha_breakdown_in *in, struct ha_breakdown_row *rows)
{
    char a[32], b[32], c[32], d[32];
    uint64_t tcache = min_u64(in->tcache, in->allocated);
    uint64_t internal = min_u64(in->internal, in->allocated - tcache);
    uint64_t live = in->allocated - tcache - internal;
    uint64_t frag = in->active > in->allocated ? in->active - in->allocated
                                               : 0;
    uint64_t slabs = in->have_bins ? min_u64(in->slab_free, frag) : 0;
    uint64_t dirty = in->dirty;
    uint64_t metadata = in->resident > in->active + dirty
                            ? in->resident - in->active - dirty
                            : 0;
    /* Muzzy pages were given back with MADV_FREE: resident until the
     * kernel reclaims them, which smaps counts as LazyFree. Without
     * smaps they are taken as gone. */
    uint64_t muzzy = in->have_smaps && in->smaps.detailed
                         ? min_u64(in->muzzy, in->smaps.lazyfree)
                         : 0;

    ha_breakdown_format_bytes((int64_t)in->allocated, a, sizeof(a));
    set(&rows[R_ALLOCATED], (int64_t)live,
        "the program's live allocations (stats.allocated %s less thread "
        "caches and jemalloc's own): what heap profiles see; if it grows "
        "steadily, heap_growth names the call site",
        a);
    set(&rows[R_INTERNAL], (int64_t)internal,
        "jemalloc's own allocations, inside stats.allocated: mostly the "
        "heap profiler's backtraces and counters (more with prof_active "
        "and a low lg_prof_sample)");
    set(&rows[R_TCACHE], (int64_t)tcache,
        "freed small objects kept in thread caches for reuse, inside "
        "stats.allocated; bounded per thread (opt.tcache_max)");
    ha_breakdown_format_bytes((int64_t)in->active, a, sizeof(a));
    set(&rows[R_FRAG], (int64_t)frag,
        "stats.active %s - stats.allocated: pages handed out beyond the "
        "bytes in use",
        a);
    if (in->have_bins && in->worst_free > 0) {
        ha_breakdown_format_bytes((int64_t)in->worst_free, b, sizeof(b));
        set(&rows[R_FRAG_SLABS], (int64_t)slabs,
            "free regions in partly used slabs; most in the %llu-byte "
            "class: %s free in %llu slabs, %.0f%% used "
            "(stats_jemalloc_bins). Long-lived objects pin slabs; whose: "
            "SELECT * FROM heap_fragmentation('live') WHERE size_class = "
            "%llu; fewer arenas or freeing in allocation order helps",
            (unsigned long long)in->worst_size, b,
            (unsigned long long)in->worst_slabs, in->worst_util * 100.0,
            (unsigned long long)in->worst_size);
    } else if (in->have_bins) {
        set(&rows[R_FRAG_SLABS], (int64_t)slabs,
            "free regions in partly used slabs (stats_jemalloc_bins)");
    } else {
        set(&rows[R_FRAG_SLABS], 0,
            "free regions in partly used slabs: the bins could not be "
            "read, so all of fragmentation is under "
            "jemalloc.fragmentation.large");
    }
    set(&rows[R_FRAG_LARGE], (int64_t)(frag - slabs),
        "the rest of fragmentation: large allocations rounded up to their "
        "size class, plus a page of padding each (opt.cache_oblivious) "
        "(stats_jemalloc_lextents)");
    decay_text(in->dirty_decay_ms, b, sizeof(b));
    set(&rows[R_DIRTY], (int64_t)dirty,
        "freed pages waiting for decay (dirty_decay_ms = %s), returned "
        "to the system over that time; jemalloc-purge_now returns them "
        "now, a lower jemalloc-dirty_decay_ms sooner",
        b);
    decay_text(in->muzzy_decay_ms, c, sizeof(c));
    ha_breakdown_format_bytes((int64_t)in->muzzy, d, sizeof(d));
    set(&rows[R_MUZZY], (int64_t)muzzy,
        "muzzy pages (%s, muzzy_decay_ms = %s) given back with MADV_FREE "
        "that the kernel has not reclaimed: in RSS until memory runs "
        "short (smaps LazyFree%s)",
        d, c,
        in->have_smaps && !in->smaps.detailed
            ? "; not read here, so inside other.anonymous"
            : "");
    ha_breakdown_format_bytes((int64_t)in->metadata, a, sizeof(a));
    set(&rows[R_METADATA], (int64_t)metadata,
        "jemalloc's resident metadata (stats.resident - active - dirty; "
        "stats.metadata %s in all): grows with the number of arenas "
        "(%u) and extents",
        a, in->narenas);
    ha_breakdown_format_bytes((int64_t)in->retained, a, sizeof(a));
    set(&rows[R_RETAINED], (int64_t)in->retained,
        "address space jemalloc keeps for reuse (opt.retain): virtual, "
        "not in RSS, costs no memory");
    set(&rows[R_MAPPED], (int64_t)in->mapped,
        "address space of jemalloc's active, dirty and muzzy extents and "
        "metadata: virtual");
    return (int64_t)(live + internal + tcache + frag + dirty + muzzy +
                     metadata);
}

/* heapadmin's own arena (see the header); returns its resident bytes,
 * 0 when it is not apart (the row is then unknown: NULL). */
static int64_t
heapadmin_row(const struct ha_breakdown_in *in, struct ha_breakdown_row *rows)
{
    struct ha_breakdown_row *r = &rows[R_HEAPADMIN];

    if (!in->have_jemalloc) {
        ha_strlcpy(r->detail,
                   "heapadmin's own memory: unknown without jemalloc's "
                   "figures, so inside other.anonymous",
                   sizeof(r->detail));
        return 0;
    }
    if (!in->have_own) {
        ha_strlcpy(r->detail,
                   "heapadmin's own memory, not kept apart here: it "
                   "allocates from the same arenas as the rest of the "
                   "process, so it is inside the jemalloc rows (in "
                   "heapadmind the whole process is heapadmin's; a host "
                   "that hands heapadmin_new its own mallctl gets no "
                   "arena apart)",
                   sizeof(r->detail));
        return 0;
    }
    set(r, (int64_t)in->own_resident,
        "heapadmin's own memory inside this host: the resident pages of "
        "its own jemalloc arena (heapadmin.resident in "
        "stats_memory_jemalloc), which every jemalloc row leaves out so "
        "that the host is not billed for it; freed pages go back at once "
        "(decay 0)");
    return (int64_t)in->own_resident;
}

/* The memory limit, its group's usage and the headroom left. */
static void
cgroup_rows(const struct ha_breakdown_in *in, struct ha_breakdown_row *rows)
{
    char a[32], b[32], c[32];
    const char *path = in->cgroup_path ? in->cgroup_path : "/";
    const char *whose = in->limit_path ? in->limit_path : "";
    int64_t ws = in->cgroup_working_set;

    if (in->cgroup_version == 0) {
        ha_strlcpy(rows[R_LIMIT].detail,
                   "no memory cgroup holds this process: no limit but the "
                   "machine's",
                   sizeof(rows[R_LIMIT].detail));
        return;
    }
    if (in->cgroup_limit < 0) {
        snprintf(rows[R_LIMIT].detail, sizeof(rows[R_LIMIT].detail),
                 "no memory limit on cgroup v%d %s or above it",
                 in->cgroup_version, path);
    } else {
        set(&rows[R_LIMIT], in->cgroup_limit,
            "memory limit of cgroup v%d %s%s%s: past it the kernel's OOM "
            "killer ends a process of the group (the limit watch dumps "
            "before: jemalloc-limit_watch_state)",
            in->cgroup_version, whose[0] ? whose : path,
            whose[0] && strcmp(whose, path) != 0 ? ", an ancestor of "
                                                 : "",
            whose[0] && strcmp(whose, path) != 0 ? path : "");
    }
    if (in->cgroup_usage >= 0) {
        ha_breakdown_format_bytes(ws, a, sizeof(a));
        ha_breakdown_format_bytes(in->cgroup_usage - ws, b, sizeof(b));
        set(&rows[R_USAGE], in->cgroup_usage,
            "what cgroup v%d %s is charged for, every process of it and "
            "page cache included: working set %s, inactive file cache %s",
            in->cgroup_version, whose[0] ? whose : path, a, b);
    }
    if (in->cgroup_limit >= 0 && ws >= 0) {
        ha_breakdown_format_bytes(in->cgroup_limit - ws, a, sizeof(a));
        ha_breakdown_format_bytes(in->cgroup_limit, c, sizeof(c));
        set(&rows[R_HEADROOM], in->cgroup_limit - ws,
            "%s left before the limit (%s less the working set, %.0f%% of "
            "it in use): the kernel reclaims inactive file cache first, "
            "then kills",
            a, c, 100.0 * (double)ws / (double)in->cgroup_limit);
    }
}

void
ha_breakdown_compute(const struct ha_breakdown_in *in,
                     struct ha_breakdown_row *rows)
{
    const struct ha_smaps *sm = &in->smaps;
    char a[32], b[32];
    int64_t je = 0, own, untouched = 0, anon = 0;

    memset(rows, 0, sizeof(*rows) * HA_BREAKDOWN_ROWS);
    for (int i = 0; i < R_MAX; i++) {
        rows[i].component = layout[i].name;
        rows[i].kind = layout[i].kind;
    }
    if (in->have_jemalloc)
        je = jemalloc_rows(in, rows);
    own = heapadmin_row(in, rows);
    cgroup_rows(in, rows);
    if (in->have_smaps && sm->detailed) {
        set(&rows[R_RSS], (int64_t)sm->rss,
            "resident pages of this process (sum of Rss over %zu "
            "mappings in /proc/self/smaps)",
            sm->n_mappings);
        set(&rows[R_PSS], (int64_t)sm->pss,
            "RSS with each shared page divided among the processes that "
            "map it");
        set(&rows[R_STACKS], (int64_t)sm->stacks,
            "%zu stacks: the main thread's, and thread and fiber stacks "
            "(anonymous mappings above a guard page)",
            sm->n_stacks);
        set(&rows[R_BRK], (int64_t)sm->heap,
            "the brk heap ([heap]): glibc's malloc, used before jemalloc "
            "was loaded or by code that calls it directly");
    } else if (in->have_smaps) {
        set(&rows[R_RSS], (int64_t)sm->rss,
            "resident pages of this process (RssAnon + RssFile + RssShmem "
            "in /proc/self/status)");
    }
    if (in->have_smaps) {
        set(&rows[R_SWAP], (int64_t)sm->swap, "swapped out: not in RSS");
        set(&rows[R_FILES], (int64_t)sm->files,
            "file-backed and shared mappings: the binaries and libraries "
            "(code and written data), mapped files, shared memory");
        anon = (int64_t)sm->anon;
        if (in->have_jemalloc) {
            /* The anonymous pages, split by subtraction (see the
             * header). */
            if (anon >= je + own) {
                anon -= je + own;
            } else {
                untouched = anon - je - own;
                anon = 0;
            }
            ha_breakdown_format_bytes(untouched, a, sizeof(a));
            set(&rows[R_UNTOUCHED], untouched,
                untouched < 0
                    ? "jemalloc counts %s more than the anonymous pages in "
                      "RSS%s: memory handed out but never written, which "
                      "the kernel has not backed yet"
                    : "none: every page jemalloc counts is in RSS%s%s",
                untouched < 0 ? a : "",
                in->have_own ? " (heapadmin's arena included)" : "");
        }
        ha_breakdown_format_bytes(anon, b, sizeof(b));
        set(&rows[R_ANON], anon, "%s%s",
            in->have_jemalloc
                ? "anonymous memory jemalloc does not own: mmap by the "
                  "program or its libraries, another allocator, libraries' "
                  ".bss"
                : "anonymous memory (jemalloc's figures unavailable, so "
                  "its pages are in here too)",
            sm->detailed ? ""
                         : "; stacks and [heap] too (the kernel's counters "
                           "do not split them)");
        set(&rows[R_OTHER],
            (int64_t)(sm->stacks + sm->heap + sm->files) + anon,
            "resident memory jemalloc does not own");
    }
    if (in->have_jemalloc) {
        ha_breakdown_format_bytes((int64_t)in->resident, a, sizeof(a));
        set(&rows[R_JE], je + untouched,
            "jemalloc's resident pages: stats.resident %s plus muzzy pages "
            "still resident%s",
            a, untouched < 0 ? ", less what was never touched" : "");
    }
}
