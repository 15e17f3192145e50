/* SPDX-License-Identifier: MIT
 *
 * The heap profiles the heap tables read (heap_dumps.c, heap_top.c,
 * heap_stacks.c, heap_diff.c): dump names in the datadir, a profile
 * loaded (read, parsed, symbolized with the heap's cached symbolizer,
 * checked against the binaries on disk), a bounded cache of loaded
 * profiles, and the live profile of this process.
 *
 * A dump file never changes once written, so a loaded profile is kept,
 * keyed by name and the file's identity (device, inode, size, mtime), and
 * a repeated query (a dashboard's refresh, a diff against the same base)
 * costs no parse and no symbolization. The cache keeps at most
 * HA_HEAP_CACHE_MAX profiles and HA_HEAP_CACHE_BYTES of them, least
 * recently used first out; a profile in use by a cursor stays alive
 * (reference counted) until its cursor closes.
 *
 * Build-ids: dumps carry none, so dump_now records them beside the dump
 * (`<dump>.buildid`, prof/buildid.h). When a module's recorded build-id
 * differs from the file on disk (the binary was upgraded since), its
 * addresses are not named from the wrong file: they read as addresses,
 * flagged HA_SYMS_STALE, and the profile lists the module in `stale`.
 *
 * Live: the argument 'live' takes a fresh profile of this process with
 * prof.dump into a private directory (mode 0700) in the datadir, reads it
 * and removes both at once; only admin sessions may (HA_VTAB_CONN admin).
 * Live profiles are never cached.
 *
 * Files: only dumps, by the datadir's file rule (prof/dumpfile.h), and
 * only once they parse.
 *
 * Off the loop: reading, parsing and symbolizing a dump (0.2 s and more
 * for a 15 MB one), and building heap_top's aggregate, run on the
 * engine's worker thread (core/task.h ha_task_offload) while the asking
 * task waits; the loop serves everyone else. Several tasks asking for
 * the same dump wait for one load. A task stopped while it waits (KILL,
 * max_execution_time) gets HA_HEAP_STOPPED at once; the load goes on and
 * its profile still lands in the cache. The symbolizer is the worker's
 * alone: loop code never touches heap->symbolizer.
 *
 * The cache and the profiles' reference counts belong to the loop's
 * thread.
 *
 * Allocation wrappers: each profile's set (syms.wrappers, prof/
 * wrappers.h) is made on the worker when it loads, from the built-in
 * list, the operator's edits (heap->alloc_wrappers, copied on the loop
 * when the load starts) and detection in its own stacks. A cached
 * profile whose edits are not the current ones is loaded again, so no
 * table is served from a cut the operator has since changed.
 *
 * Debug info that debuginfod was still fetching when a profile was
 * symbolized: the profile is kept, and read again at the first request
 * after the symbolizer has news (ha_symbolizer_generation), so a
 * dashboard's next refresh gets the names.
 */
#ifndef HA_HEAP_LOAD_H
#define HA_HEAP_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "core/buf.h"
#include "prof/aggregate.h"
#include "prof/dumpmem.h"
#include "prof/dumpname.h"
#include "prof/heapv2.h"
#include "prof/livesizes.h"
#include "prof/maps.h"
#include "prof/syms.h"
#include "prof/threads.h"
#include "heap/heap.h"
#include "heap/logfile.h"
#include "heap/products.h"

#define HA_HEAP_CACHE_MAX 4                    /* profiles kept */
#define HA_HEAP_CACHE_BYTES ((size_t)256 << 20) /* their memory */

/* The argument naming this process's own heap, now. */
#define HA_HEAP_LIVE "live"


/* One loaded profile. Read-only once loaded; share with refs. */
struct ha_heap_profile {
    int refs;
    char *name;            /* file name in the datadir, or "live" */
    bool live;
    dev_t dev;             /* the file read: a change is a new dump */
    ino_t ino;
    off_t size;
    struct timespec mtime;
    int64_t taken_ns;      /* when it was taken (unix ns): "# dumped_at"
                              of its .buildid, else mtime; live: now */

    struct ha_heapv2 p;    /* stacks, scaled */
    struct ha_maps maps;   /* MAPPED_LIBRARIES */
    struct ha_syms syms;   /* every lookup pc of p, symbolized */
    char *stale;           /* "path (dump build-id X, on disk Y)" per
                              changed module, "; "-joined; NULL: none */
    uint64_t generation;   /* ha_symbolizer_generation() before it was
                              symbolized: with syms.pending, a change
                              means names are worth making again */
    bool has_buildids;     /* a <dump>.buildid was found and read */
    char *wrap_conf;       /* heap->alloc_wrappers when it was loaded:
                              syms.wrappers was made with it (a change
                              makes the cached profile stale) */
    struct ha_dumpmem *mem; /* memory when it was taken (<dump>.mem; for a
                              live profile read just before its dump):
                              the bins heap_fragmentation shares out;
                              NULL: none recorded */
    struct ha_livesizes *sizes; /* the live samples' usable sizes per
                              stack, recorded in <dump>.mem (state NONE: a
                              .mem from before they were recorded); NULL
                              with mem, and for a live profile (read when
                              needed: ha_heap_fragmentation_compute) */
    const struct ha_mallctl_ops *ops; /* live: the jemalloc it was taken
                              from; NULL for a dump */

    struct ha_threads_row *threads; /* memory by thread (prof/threads.h:
                              heap_threads' rows), made as it loads;
                              NULL for a log, or out of memory */
    size_t n_threads;
    int64_t window_ns;     /* a delta (ha_heap_profile_delta): the ns
                              between its two profiles, whose alloc_*
                              figures it holds the difference of; 0: a
                              profile as taken */

    struct ha_agg *top;    /* heap_top's rows (flat order), built on
                              first use by ha_heap_profile_top() */
    struct ha_agg_module *modules; /* heap_modules' figures, per
                              syms.modules, built on first use by
                              ha_heap_profile_modules() */
    struct ha_products products; /* what faces made of it, kept
                              (ha_heap_profile_product) */

    /* A lifetime log (heap/logfile.h): p holds its stack traces, one
     * "stack" each, with maps from its .maps side file. */
    bool is_log;
    struct ha_logfile *log;        /* NULL for a dump */
    size_t bytes;          /* accounted against HA_HEAP_CACHE_BYTES */
    uint64_t last_use;
    struct ha_heap_profile *next;
};

/* The symbol indexes' directory in the datadir (prof/symcache.h). */
#define HA_HEAP_SYMBOL_CACHE "cache"

/* The heap's symbolizer, created on first use with the config's debug
 * root and debuginfod settings (heap->je), its symbol indexes in the
 * datadir's HA_HEAP_SYMBOL_CACHE. NULL on allocation failure. */
struct ha_symbolizer *ha_heap_symbolizer(struct ha_heap *heap);

/* Gets the profile named name (a dump file name, or HA_HEAP_LIVE for a
 * fresh one, which needs admin), from the cache or loaded now (off the
 * loop). On success *out holds a reference: release it with
 * ha_heap_profile_put(). Returns 0, HA_HEAP_ERROR with err naming the
 * file and what was wrong (what is expected, the line of a bad dump),
 * HA_HEAP_BUSY (HA_HEAP_LIVE while a heap dump is being written), or
 * HA_HEAP_STOPPED. */
int ha_heap_profile_get(struct ha_heap *heap, const char *name,
                        bool admin, struct ha_heap_profile **out, char *err,
                        size_t errlen);

/* The longest window of a delta (ha_heap_profile_delta), in seconds. */
#define HA_HEAP_DELTA_MAX_S 60

/* A delta of this process's live profile, Go's way (prof/delta.h): a
 * live profile now, another one seconds later (1..HA_HEAP_DELTA_MAX_S),
 * both written and read off the loop while the calling task waits (the
 * window does not count toward its deadline, and *waited, when not
 * NULL, gets its ns for a caller whose deadline is its own); the result
 * is the second with its alloc_* figures less the first's (window_ns the
 * time between the two dumps, taken_ns the second's time), its in-use
 * figures as taken, never cached. Needs an
 * admin, opt.prof_accum and sampling on. Returns 0 (*out holds a
 * reference), HA_HEAP_ERROR (seconds out of range, not admin: err),
 * HA_HEAP_CONFLICT (profiling off, no prof_accum, sampling off, or the
 * profile was reset or sampling switched within the window: err says
 * which and what to do), HA_HEAP_BUSY or HA_HEAP_STOPPED. */
int ha_heap_profile_delta(struct ha_heap *heap, int seconds, bool admin,
                          struct ha_heap_profile **out, int64_t *waited,
                          char *err, size_t errlen);

/* Gets the lifetime log named name (a <prefix>.<pid>.<seq>.json file in
 * the datadir, as jemalloc-log_now publishes them) as a profile whose
 * stacks are the log's traces, from the cache or loaded now (off the
 * loop), with pr->log and its side files. Returns as
 * ha_heap_profile_get. */
int ha_heap_log_get(struct ha_heap *heap, const char *name,
                    struct ha_heap_profile **out, char *err, size_t errlen);

/* The raw text of a fresh profile of this process (the private dump is
 * removed at once): *buf malloc'd, NUL-terminated, checked to parse. The
 * caller checks that its user may (admin). Returns 0, HA_HEAP_ERROR with
 * err set, HA_HEAP_BUSY (a heap dump is being written), or
 * HA_HEAP_STOPPED. */
int ha_heap_live_text(struct ha_heap *heap, char **buf, size_t *len,
                      char *err, size_t errlen);

/* A face's product of pr (heap/products.h: made off the loop, landed on
 * the loop), kept with pr when keep is set and pr is a dump's (a live
 * profile is made anew each time), and then counted in the cache's
 * memory, so HA_HEAP_CACHE_BYTES bounds it too. Returns as
 * ha_products_get. */
int ha_heap_profile_product(struct ha_heap_profile *pr, const char *kind,
                            bool keep, ha_product_make_fn make, void *arg,
                            void (*arg_free)(void *arg),
                            struct ha_product *made, char *err,
                            size_t errlen);

/* Takes one more reference to pr and returns it. Loop thread. */
struct ha_heap_profile *ha_heap_profile_ref(struct ha_heap_profile *pr);

/* Drops a reference; the last one frees a profile the cache let go. */
void ha_heap_profile_put(struct ha_heap_profile *pr);

/* The per-function aggregate of pr, sorted by flat bytes, built once
 * (off the loop) and kept with it. Returns 0 with *out set, HA_HEAP_ERROR
 * (err set) or HA_HEAP_STOPPED. */
int ha_heap_profile_top(struct ha_heap_profile *pr, const struct ha_agg **out,
                        char *err, size_t errlen);

/* heap_top's aggregate of the part of pr that the threads m keeps hold
 * (prof/threads.h ha_threads_filter), sorted by flat bytes, made now off
 * the loop for one query and not kept: *out is the caller's (ha_agg_free,
 * then free). Returns 0, HA_HEAP_ERROR (err set) or HA_HEAP_STOPPED. */
int ha_heap_profile_top_threads(struct ha_heap_profile *pr,
                                const struct ha_threads_match *m,
                                struct ha_agg **out, char *err,
                                size_t errlen);

/* The allocation wrappers of profile p symbolized by syms, made under the
 * operator's edits conf_text (heap->alloc_wrappers as a job copied it)
 * into syms->wrappers (replacing any). what names the profile in
 * messages. Worker thread. Returns 0 or -1 with err set (out of
 * memory). */
int ha_heap_wrappers_make(const char *conf_text, const char *what,
                          const struct ha_heapv2 *p, struct ha_syms *syms,
                          char *err, size_t errlen);

/* A dump's raw text, for serving as it is: heap/dumptext.h (in pieces,
 * never whole). */

/* The per-module figures of pr (ha_agg_modules), built once (off the
 * loop) and kept with it. Returns 0 with *out set, HA_HEAP_ERROR (err
 * set) or HA_HEAP_STOPPED. */
int ha_heap_profile_modules(struct ha_heap_profile *pr,
                            const struct ha_agg_module **out, char *err,
                            size_t errlen);

/* The per-module state of a dump's build-ids, for stats_heap_dumps:
 * "" when every recorded module matches the disk, else what `stale`
 * would hold; NULL when no build-ids were recorded. Reads nothing but
 * the side file and the modules' ELF notes; safe on the worker thread.
 * Returns a malloc'd string or NULL. */
char *ha_heap_buildid_report(const char *datadir, const char *name);

/* Frees the cache (ha_heap_caches_free). Profiles still referenced are
 * freed by their last ha_heap_profile_put(). */
void ha_heap_cache_free(struct ha_heap *heap);

/* Drops the cached profiles no query holds and, unless debuginfod may
 * have fetches running, the symbolizer with its caches, once no profile
 * was asked for idle_s seconds: for an owner that gives memory back
 * while idle. Loop thread, no job running on the worker. Returns 0, or
 * -1 when they were used more recently or a load is in flight (nothing
 * done: ask again later). */
int ha_heap_cache_release(struct ha_heap *heap, unsigned idle_s);

#endif /* HA_HEAP_LOAD_H */
