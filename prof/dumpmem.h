/* SPDX-License-Identifier: MIT
 *
 * What memory looked like when a dump was taken, kept beside it as
 * "<dump>.mem": the process's resident memory (VmRSS), why the dump was
 * taken, the memory cgroup's limit, usage and working set, and the small
 * size classes' slabs (merged over arenas), read in the same pass as
 * the dump. Retention keeps each run's dump of highest resident memory
 * by it (heap/dumpfiles.h), stats_heap_dumps shows it, a limit dump is
 * one whose trigger is "limit", and heap_fragmentation shares a dump's
 * free regions among its call sites with its bins.
 *
 *   heapadmin-dump-memory 1
 *   taken_ns <unix ns>
 *   trigger <word>            manual, automatic, leak-watch, limit,
 *                             jemalloc (its own interval, high-water and
 *                             final dumps)
 *   reason <text>             to the end of the line
 *   resident <bytes>          VmRSS
 *   cgroup <1|2> <path>       the memory cgroup, when there is one
 *   cgroup_limit <bytes|max>
 *   cgroup_usage <bytes>
 *   cgroup_working_set <bytes>
 *   cgroup_looked_ns <unix ns>  when the three above were read, where
 *                             that was before the dump: a limit dump
 *                             records the look its watch decided on
 *                             (absent: read as the dump was taken)
 *   allocated <bytes>         jemalloc's stats.allocated then (the
 *                             host's, heapadmin's own arena apart): what
 *                             the profile's total estimates
 *   bin <size> <nregs> <slab_size> <curregs> <curslabs>   per class
 *   sampling_since <unix ns|start>
 *                             when sampling last started (prof.active
 *                             switched on, or prof.reset) as heapadmin
 *                             saw it; "start": on since the process
 *                             began (ha_mallctl_sampling_since); absent:
 *                             unknown
 *   sizes ..., sizes_stack ...
 *                             the live samples' usable sizes per stack
 *                             (prof/livesizes.h, read by its parser)
 *
 * Unknown keys are skipped, so a line added later leaves older readers
 * working, and the version stays 1 while no key changes its meaning:
 * sampling_since and the sizes lines came after the rest, and a .mem
 * without them is read as one that predates them. Pure.
 */
#ifndef HA_DUMPMEM_H
#define HA_DUMPMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_DUMPMEM_SUFFIX ".mem"
#define HA_DUMPMEM_BINS_MAX 64  /* jemalloc 5.3 has 36 small classes at
                                   4 KiB pages, 45 at 64 KiB */

/* One small size class's slabs (stats.arenas.<all>.bins.<j>.*). */
struct ha_dumpmem_bin {
    uint64_t size;        /* region size */
    uint64_t nregs;       /* regions per slab */
    uint64_t slab_size;   /* bytes per slab */
    uint64_t curregs;     /* regions in use */
    uint64_t curslabs;    /* slabs */
};

struct ha_dumpmem {
    int64_t taken_ns;             /* 0: unknown */
    char trigger[32];             /* "" unknown */
    char reason[256];
    int64_t resident;             /* -1 unknown */
    int cgroup_version;           /* 0: none recorded */
    char cgroup_path[256];
    int64_t cgroup_limit;         /* -1: none ("max"); -2: unknown */
    int64_t cgroup_usage;         /* -1 unknown */
    int64_t cgroup_working_set;   /* -1 unknown */
    int64_t cgroup_looked_ns;     /* 0: read as the dump was taken */
    int64_t allocated;            /* -1 unknown */
    struct ha_dumpmem_bin bins[HA_DUMPMEM_BINS_MAX];
    size_t n_bins;
    int64_t sampling_since;       /* unix ns; -1: since the process
                                     started; 0: unknown */
};

#define HA_DUMPMEM_LIMIT_UNKNOWN (-2)

/* Empty: every figure unknown. */
void ha_dumpmem_init(struct ha_dumpmem *m);

/* Writes m in the format above into buf. Returns the length (without
 * the NUL), or -1 when buf is too small. Never allocates: jemalloc's
 * dump hook writes it under the dump lock (heap/dumpfiles.h). */
int ha_dumpmem_format(const struct ha_dumpmem *m, char *buf, size_t len);

/* Parses a .mem file. Returns 0, or -1 with err naming the line when the
 * first line is not the header or a known key's value does not parse. */
int ha_dumpmem_parse(const char *buf, size_t len, struct ha_dumpmem *m,
                     char *err, size_t errlen);

/* The retention rule's order of dumps by memory: true when dump a
 * (resident a, taken at a_ns) ranks above b as a run's peak: more
 * resident memory, or as much and taken later. Unknown (-1) ranks
 * last. */
bool ha_dumpmem_higher(int64_t a, int64_t a_ns, int64_t b, int64_t b_ns);

#endif /* HA_DUMPMEM_H */
