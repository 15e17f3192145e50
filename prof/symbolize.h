/* SPDX-License-Identifier: MIT
 *
 * Addresses of a heap dump to function, file, line and inline chain, in
 * process, with elfutils' libdwfl (no addr2line, no nm, no Perl).
 *
 * Addresses are grouped per mapped file and each file is opened once
 * (dwfl_report_offline; separate debug info is found by build-id under
 * <debuginfo_path>/.build-id/, i.e. Debian's -dbg/-dbgsym packages; with
 * limits.debuginfod, libdwfl's standard lookup also follows
 * .gnu_debuglink and asks debuginfod). Within a file they are
 * grouped per compilation unit and each unit's DIE tree is walked once,
 * pruned by address ranges, collecting for every address its chain of
 * DW_TAG_subprogram / DW_TAG_inlined_subroutine DIEs: one pass instead of
 * a dwarf_getscopes() per address, ~50x slower on big units (reference
 * §14). The innermost frame's file:line is the line table's entry for the
 * address; an inlined callee's caller line is the callee's DW_AT_call_*.
 * Without DWARF the name is the ELF symbol (.symtab when present, from
 * the file or its debug file, else .dynsym).
 *
 * A cache keeps each opened file (and every address already resolved in
 * it) across calls, keyed by path plus the file's device, inode, size and
 * mtime, so a replaced binary is reopened; its GNU build-id is read at
 * open and kept for comparison with a dump's side file. The cache is
 * bounded in files and in bytes (file sizes plus resolved entries) and
 * evicts least recently used files.
 *
 * debuginfod: never called unless limits.debuginfod is set (then libdwfl's
 * standard lookup runs, which may use DEBUGINFOD_URLS). We do not link
 * libdebuginfod.
 *
 * Callers use struct ha_symbolize_ops, so tests can replace the whole
 * thing with a table. Not thread-safe: one symbolizer per thread.
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
    bool debuginfod;   /* let libdwfl ask debuginfod [false] */
    const char *debuginfo_path; /* libdwfl syntax [":.debug:/usr/lib/debug"] */
};

struct ha_symbolizer_stats {
    size_t files;      /* files in the cache now */
    size_t bytes;      /* their accounted bytes */
    uint64_t opened;   /* files opened since creation */
    uint64_t evicted;  /* files dropped for the limits or a change */
    uint64_t hits;     /* addresses answered from the cache */
    uint64_t misses;   /* addresses resolved from DWARF/symbols */
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

/* True when path names the allocator (libjemalloc*): its frames are
 * flagged HA_SYMS_ALLOCATOR. */
bool ha_symbolize_is_allocator_path(const char *path);

#endif /* HA_SYMBOLIZE_H */
