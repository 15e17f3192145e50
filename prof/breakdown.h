/* SPDX-License-Identifier: MIT
 *
 * Where resident memory goes: the process's RSS (prof/smaps.h) split
 * into parts that add up to it, jemalloc's read from one refresh of its
 * statistics. The rows, in order (kind: total, part, subtotal, info):
 *
 *   rss                          total     sum of every mapping's Rss
 *   pss, swap                    info      not parts of RSS
 *   jemalloc                     subtotal  jemalloc's resident pages:
 *                                          stats.resident plus muzzy
 *                                          pages still resident
 *   jemalloc.allocated           part      the program's live bytes:
 *                                          stats.allocated less the two
 *                                          below, which it includes
 *   jemalloc.internal            part      jemalloc's own allocations
 *                                          (profiler backtraces)
 *   jemalloc.tcache              part      freed objects in thread caches
 *   jemalloc.fragmentation       subtotal  active - allocated
 *   jemalloc.fragmentation.slabs part      free regions of slabs
 *   jemalloc.fragmentation.large part      the rest: large size-class
 *                                          rounding and page padding
 *   jemalloc.dirty               part      freed pages waiting for decay
 *   jemalloc.muzzy               part      MADV_FREE'd pages the kernel
 *                                          has not taken back (LazyFree)
 *   jemalloc.metadata            part      resident metadata:
 *                                          resident - active - dirty
 *   jemalloc.untouched           part      <= 0: what jemalloc counts
 *                                          that the kernel never backed
 *   heapadmin                    part      heapadmin's own arena inside
 *                                          a host (heapadmin.resident,
 *                                          api/arena.h); NULL where its
 *                                          memory is not kept apart
 *   other                        subtotal  RSS jemalloc does not own
 *   other.stacks                 part      thread and fiber stacks
 *   other.brk_heap               part      [heap]
 *   other.files                  part      file-backed and shared
 *   other.anonymous              part      anonymous pages left once
 *                                          jemalloc's are counted
 *   jemalloc.retained            info      virtual, not resident
 *   jemalloc.mapped              info      virtual
 *   cgroup.limit                 info      the memory limit that binds
 *                                          the process (its cgroup's or
 *                                          an ancestor's); NULL: none
 *   cgroup.usage                 info      that group's usage: every page
 *                                          charged, page cache too
 *   cgroup.headroom              info      limit - working set (usage
 *                                          less inactive file cache,
 *                                          which the kernel reclaims
 *                                          first): how far the OOM
 *                                          killer is
 *
 * jemalloc's extents are anonymous mappings that smaps cannot tell from
 * others, so the anonymous pages are split by subtraction: jemalloc's
 * parts and heapadmin's first, other.anonymous what is left; when they
 * count more than there is (pages handed out and never written are in
 * stats.active but not in RSS), jemalloc.untouched takes the difference,
 * negative. The parts therefore add up to rss exactly; how well
 * jemalloc's figures explain the anonymous pages shows in how small
 * those two rows are.
 *
 * Inside a host (the library, the agent) heapadmin allocates from an
 * arena of its own. Every jemalloc figure in struct ha_breakdown_in is
 * then the host's alone (the reader, heap/rss.c, takes that arena's
 * share off each), so the jemalloc rows are the host's and the heapadmin
 * row holds that arena's resident pages (its active pages, its metadata
 * and its dirty pages, which its decay of 0 returns at once): the host
 * is not billed for heapadmin's memory. Where heapadmin keeps no arena
 * apart (heapadmind, whose whole process is heapadmin's, or a host that
 * handed heapadmin_new its own mallctl) the row is NULL and heapadmin's
 * memory is inside the jemalloc rows.
 *
 * From /proc/<pid>/status instead of smaps (smaps.detailed false: the
 * cheap reading the metrics use), pss, other.stacks and other.brk_heap
 * are unknown and their pages are in other.anonymous, and muzzy pages
 * count as 0 (their resident part is not known) so they are there too.
 *
 * Pure: the figures are read elsewhere (vtab/breakdown.c).
 */
#ifndef HA_BREAKDOWN_H
#define HA_BREAKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "prof/smaps.h"

/* What the rows are computed from. */
struct ha_breakdown_in {
    bool have_jemalloc;       /* the stats.* below were read */
    uint64_t allocated;       /* stats.allocated */
    uint64_t active;          /* stats.active */
    uint64_t metadata;        /* stats.metadata */
    uint64_t resident;        /* stats.resident */
    uint64_t mapped;          /* stats.mapped */
    uint64_t retained;        /* stats.retained */
    uint64_t internal;        /* stats.arenas.<all>.internal */
    uint64_t tcache;          /* stats.arenas.<all>.tcache_bytes (and
                                 tcache_stashed_bytes) */
    uint64_t dirty;           /* stats.arenas.<all>.pdirty * page */
    uint64_t muzzy;           /* stats.arenas.<all>.pmuzzy * page; these
                                 four, and the bins, less heapadmin's
                                 arena's share when have_own */
    ssize_t dirty_decay_ms;   /* arenas.dirty_decay_ms (-1: never) */
    ssize_t muzzy_decay_ms;
    unsigned narenas;         /* arenas.narenas */
    bool have_own;            /* heapadmin's arena is apart (api/arena.h):
                                 the figures above leave it out */
    uint64_t own_resident;    /* heapadmin.resident: that arena's
                                 resident bytes */

    bool have_bins;           /* slab_free and worst_* were read */
    uint64_t slab_free;       /* over the bins: curslabs * slab_size -
                                 curregs * size */
    uint64_t worst_size;      /* the size class with the most of it */
    uint64_t worst_free;      /* its free bytes */
    uint64_t worst_slabs;     /* its slabs */
    double worst_util;        /* its curregs / (curslabs * nregs) */

    bool have_smaps;          /* smaps was read */
    struct ha_smaps smaps;

    /* The memory cgroup (heap/cgroup.h): version 0 when none. */
    int cgroup_version;
    const char *cgroup_path;  /* the process's group */
    const char *limit_path;   /* the group whose limit binds; "" none */
    int64_t cgroup_limit;     /* -1: no limit */
    int64_t cgroup_usage;     /* -1: unknown */
    int64_t cgroup_working_set; /* -1: unknown */
};

enum ha_breakdown_kind {
    HA_BREAKDOWN_TOTAL,     /* rss */
    HA_BREAKDOWN_PART,      /* the parts: they add up to the total */
    HA_BREAKDOWN_SUBTOTAL,  /* a sum of the parts below it */
    HA_BREAKDOWN_INFO,      /* context, not in the sum */
    HA_BREAKDOWN_KIND_MAX
};

#define HA_BREAKDOWN_DETAIL_MAX 320

struct ha_breakdown_row {
    const char *component;            /* "jemalloc.dirty" */
    enum ha_breakdown_kind kind;
    bool known;                       /* false: bytes unknown (NULL) */
    int64_t bytes;                    /* may be negative (untouched) */
    char detail[HA_BREAKDOWN_DETAIL_MAX]; /* what it is, the figures
                                             behind it, what to do */
};

#define HA_BREAKDOWN_ROWS 25

/* Fills rows[HA_BREAKDOWN_ROWS] from in, in the order above. Rows whose
 * source was not read have known = false. */
void ha_breakdown_compute(const struct ha_breakdown_in *in,
                          struct ha_breakdown_row *rows);

/* "kind" as tables show it: "total", "part", "subtotal", "info". */
const char *ha_breakdown_kind_name(enum ha_breakdown_kind k);

/* bytes as "38.2 MiB" (binary units, one decimal; "512 B" below 1 KiB;
 * a minus sign for negative values) into buf. */
void ha_breakdown_format_bytes(int64_t bytes, char *buf, size_t len);

#endif /* HA_BREAKDOWN_H */
