/* SPDX-License-Identifier: MIT
 *
 * The datadir's dumps, listed: every regular file named as jemalloc names
 * dumps (prof/dumpname.h), with what a reader asked for of each: when it
 * was taken, its totals, the state of its recorded build-ids. The one
 * listing behind stats_heap_dumps, the growth series (growth.h) and the
 * pages that offer dumps.
 *
 * A listing is a stat() per file, and totals read each dump whole the
 * first time they are asked for (then kept per file identity, on the
 * worker thread, like the symbolizer): so it runs on the worker thread
 * while the asking task waits, never on the loop.
 */
#ifndef HA_DUMPS_H
#define HA_DUMPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap/heap.h"
#include "prof/dumpname.h"

/* What a listing reads beyond the name, size and mtime (flags). */
#define HA_DUMPS_TOTALS (1u << 0) /* period, bytes, objects: the file */
#define HA_DUMPS_REPORT (1u << 1) /* build-id report: the side file and
                                     the modules' ELF notes */
#define HA_DUMPS_TIME (1u << 2)   /* taken_ns: the side file */
#define HA_DUMPS_LOGS (1u << 3)   /* list prof_log files too (kind log);
                                     without it, heap dumps only */

struct ha_dump_entry {
    char *name;               /* file name in the datadir */
    struct ha_dump_name d;    /* parsed from it */
    long long size;           /* bytes */
    int64_t mtime_ns;         /* unix ns */
    int64_t taken_ns;         /* HA_DUMPS_TIME: when it was taken, the
                                 "# dumped_at" recorded beside it, else
                                 mtime_ns */
    bool has_totals;          /* HA_DUMPS_TOTALS and the file parsed */
    long long period;         /* bytes between samples */
    long long bytes, objects; /* in use, scaled as jeprof does; for a
                                 log, what was freed in its window */
    bool has_alloc;           /* it carries cumulative counters
                                 (prof_accum) */
    long long alloc_bytes, alloc_objects; /* those, scaled */
    /* <name>.mem (prof/dumpmem.h), read with every listing: */
    bool has_mem;             /* it was there and parsed */
    const char *kind;         /* d.kind, or "limit" for the limit
                                 watch's dumps */
    int64_t resident;         /* VmRSS at dump time; -1 unknown */
    int64_t cgroup_usage;     /* the cgroup's usage then; -1 unknown */
    int64_t cgroup_limit;     /* its limit then; -1 none or unknown */
    int64_t cgroup_working_set; /* its working set then; -1 unknown */
    int64_t allocated;        /* jemalloc's stats.allocated then; -1
                                 unknown */
    char *reason;             /* why it was taken; NULL: not recorded */
    bool peak;                /* the dump of highest resident memory of
                                 its process (pid) in the listing: the
                                 one retention keeps out of rotation */
    bool has_report;          /* HA_DUMPS_REPORT was asked */
    char *report;             /* ha_heap_buildid_report(); NULL: no
                                 build-ids recorded */
};

struct ha_dump_list {
    struct ha_dump_entry *e;  /* in directory order */
    size_t n;
};

/* Lists heap's datadir with what (HA_DUMPS_*), on the worker thread
 * while the calling task waits. No datadir, or one that cannot be read,
 * lists nothing. Returns 0 with *out filled (free it with
 * ha_dump_list_free), HA_HEAP_ERROR (out of memory, err set) or
 * HA_HEAP_STOPPED. */
int ha_dumps_list(struct ha_heap *heap, unsigned what,
                  struct ha_dump_list *out, char *err, size_t errlen);

void ha_dump_list_free(struct ha_dump_list *l);

/* Whether dump name, open on fd (fstat in *st), parses as a heap
 * profile: the verdict kept for that file identity (by a listing's
 * totals, or an earlier call), or the file parsed now from its start and
 * the verdict kept. Worker thread (the totals are its own). */
struct stat;
bool ha_dump_totals_parses(struct ha_heap *heap, const char *name, int fd,
                           const struct stat *st);

/* Frees the totals kept by listings (ha_heap_caches_free). NULL-tolerant. */
void ha_dump_totals_free(struct ha_dump_totals *t);

#endif /* HA_DUMPS_H */
