/* SPDX-License-Identifier: MIT
 *
 * Addresses of a heap dump to function, file, line and inline chain, in
 * process, with elfutils' libdwfl (no addr2line, no nm, no Perl).
 *
 * Addresses are grouped per mapped file and each file is opened once
 * (dwfl_report_offline). Within a file they are grouped per compilation
 * unit and each unit's DIE tree is walked once, pruned by address
 * ranges, collecting for every address its chain of DW_TAG_subprogram /
 * DW_TAG_inlined_subroutine DIEs: one pass instead of a dwarf_getscopes()
 * per address, which measured ~50x slower on big units. The innermost
 * frame's file:line is the line table's entry for the address; an
 * inlined callee's caller line is the callee's DW_AT_call_*.
 *
 * Names are given only where they are certain: a DWARF subprogram, or
 * else an ELF symbol (.symtab of the file or of its debug file, else
 * .dynsym) whose [st_value, st_value + st_size) holds the address.
 * Never the nearest symbol below it: in a stripped object that is some
 * exported function the address has nothing to do with (what jeprof
 * does: it takes the nearest preceding .dynsym entry without checking
 * its size, and so misnames static functions). Other addresses are "<module
 * basename>+0x<ELF address>" (syms.h, HA_SYMS_UNNAMED).
 *
 * Debug info of a stripped file is looked for by GNU build-id:
 * <root>/.build-id/xx/yyyy.debug under limits.debug_root, then
 * /usr/lib/debug (what Debian's -dbgsym packages install); then, with
 * limits.debuginfod, from a debuginfod server (debuginfod.h), every
 * module of one run asked at once and waited for at most
 * limits.debuginfod_timeout_ms in all. A module whose answer is still
 * pending is reported so (ha_syms.pending) and reopened with its debug
 * file once the answer is there. Each module's source of names lands in
 * ha_syms.modules.
 *
 * A cache keeps each opened file (and every address already resolved in
 * it) across calls, keyed by path plus the file's device, inode, size and
 * mtime, so a replaced binary is reopened; its GNU build-id is read at
 * open and kept for comparison with a dump's side file. The cache is
 * bounded in files and in bytes (file sizes plus resolved entries) and
 * evicts least recently used files (never one in use by the running
 * call).
 *
 * Symbol indexes (limits.index_dir): once a module with a GNU build-id
 * has been named from its files, a thread of the symbolizer's own, at
 * low priority, names every address the module has (the same walk, over
 * all of its DWARF, line table and symbols) and writes the result as the
 * module's symbol index (prof/symindex.h) into index_dir, bounded by
 * index_max_bytes. A later symbolizer, in this process or another (a
 * restart, an agent, the gateway), names the module from the index
 * without opening its DWARF, provided it is the same file (build-id,
 * size, mtime) and the debug files it would read are those the index was
 * made from (the first one under its debug roots, debuginfod's): a debug
 * package installed or removed since, or debuginfod switched on, means
 * the files are read again and a new index written. A damaged, truncated
 * or planted index is refused with a log line, never read.
 *
 * Callers use struct ha_symbolize_ops, so tests can replace the whole
 * thing with a table. One thread at a time may use a symbolizer (any
 * thread: it keeps no state outside itself); only its debuginfod fetches
 * run on threads of their own.
 */
#ifndef HA_SYMBOLIZE_H
#define HA_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/maps.h"
#include "prof/syms.h"

/* Resolves n sorted unique lookup addresses (see ha_agg_lookup_pcs()) of
 * a process whose mappings are maps into out (which it finishes).
 * Addresses it cannot name still get an entry (n = 0). Returns 0, or -1
 * on allocation failure with err set. */
struct ha_symbolize_ops {
    int (*symbolize)(void *ctx, const struct ha_maps *maps,
                     const uint64_t *pcs, size_t n, struct ha_syms *out,
                     char *err, size_t errlen);
    void *ctx;
};

struct ha_symbolizer_limits {
    size_t max_files;  /* files kept open [32] */
    size_t max_bytes;  /* file sizes + resolved entries [512 MiB] */
    const char *debug_root; /* a directory holding .build-id/xx/yyyy.debug
                               files, searched before /usr/lib/debug;
                               NULL or "": none (copied) */
    bool debuginfod;   /* ask debuginfod for what no root has [false] */
    unsigned debuginfod_timeout_ms; /* the longest one call waits for
                                       debuginfod's answers [5000] */
    void (*thread_init)(void *arg); /* run first on fetch threads and
                                       the index builder's */
    void *thread_init_arg;
    const char *index_dir; /* symbol indexes are read and written here
                              (made 0700; prof/symcache.h); NULL or "":
                              none (copied) */
    uint64_t index_max_bytes; /* the indexes' bound, oldest out first
                                 [HA_SYMBOLIZE_INDEX_MAX_BYTES] */
};

#define HA_SYMBOLIZE_DEBUG_DIR "/usr/lib/debug"
#define HA_SYMBOLIZE_DEBUGINFOD_TIMEOUT_MS 5000
#define HA_SYMBOLIZE_INDEX_MAX_BYTES ((uint64_t)256 << 20)

struct ha_symbolizer_stats {
    size_t files;      /* files in the cache now */
    size_t bytes;      /* their accounted bytes */
    uint64_t opened;   /* files opened since creation */
    uint64_t evicted;  /* files dropped for the limits or a change */
    uint64_t hits;     /* addresses answered from the cache */
    uint64_t misses;   /* addresses resolved from DWARF/symbols */
    uint64_t index_modules; /* files named from a symbol index */
    uint64_t index_addrs;   /* addresses named from one */
    uint64_t index_refused; /* indexes found but not used (damaged, out
                               of date, not ours) */
    uint64_t index_written; /* indexes this symbolizer wrote */
    uint64_t index_failed;  /* builds given up (logged) */
};

struct ha_symbolizer;

/* Creates a symbolizer; limits may be NULL for the defaults. Returns NULL
 * on allocation failure. */
struct ha_symbolizer *
ha_symbolizer_new(const struct ha_symbolizer_limits *limits);

void ha_symbolizer_free(struct ha_symbolizer *s);

/* The ops calling s. */
struct ha_symbolize_ops ha_symbolizer_ops(struct ha_symbolizer *s);

/* See struct ha_symbolize_ops. */
int ha_symbolizer_run(struct ha_symbolizer *s, const struct ha_maps *maps,
                      const uint64_t *pcs, size_t n, struct ha_syms *out,
                      char *err, size_t errlen);

/* The hex GNU build-id of the cached file at path, opening it if needed;
 * NULL when it has none or cannot be read. Valid until the next call. */
const char *ha_symbolizer_build_id(struct ha_symbolizer *s,
                                   const char *path);

void ha_symbolizer_get_stats(const struct ha_symbolizer *s,
                             struct ha_symbolizer_stats *st);

/* A number that changes whenever a debuginfod answer arrives: symbols
 * made while answers were pending (ha_syms.pending) are worth making
 * again once it differs from what it was then. */
uint64_t ha_symbolizer_generation(const struct ha_symbolizer *s);

/* Waits until the symbolizer's index builds are written (or given up),
 * at most until deadline_ns (CLOCK_MONOTONIC): for a short-lived
 * process (a bench, a test) that wants its indexes. Returns 0, or -1 at
 * the deadline. */
int ha_symbolizer_index_wait(struct ha_symbolizer *s, int64_t deadline_ns);

/* Stops the index builds under way and waits for the builder to end, at
 * most until deadline_ns: at shutdown, so that no build is left running
 * while the process exits (ha_symbolizer_free never waits). Returns 0
 * when none runs, -1 at the deadline. */
int ha_symbolizer_index_stop(struct ha_symbolizer *s, int64_t deadline_ns);

/* True when path names the allocator (libjemalloc*): its frames are
 * flagged HA_SYMS_ALLOCATOR. */
bool ha_symbolize_is_allocator_path(const char *path);

#endif /* HA_SYMBOLIZE_H */
