/* SPDX-License-Identifier: MIT
 *
 * Where a process's resident pages are, by kind of mapping, from
 * /proc/<pid>/smaps (proc(5)): one header line per mapping
 * ("start-end perms offset dev inode [path]") followed by "Name: N kB"
 * fields, of which Rss, Pss, Swap, Anonymous and LazyFree are read.
 *
 * Mappings are sorted into:
 *   files   a path ("/usr/lib/...", "/memfd:x (deleted)", "/dev/zero
 *           (deleted)" for shared anonymous memory): binaries, libraries,
 *           mapped files and shared memory, with their written private
 *           pages;
 *   stacks  [stack] (the main thread's) and every anonymous read-write
 *           mapping that starts right where a PROT_NONE ("---p")
 *           anonymous mapping ends: glibc lays out each thread stack
 *           with its guard page below it, and heapadmin's fibers do the
 *           same; jemalloc never maps PROT_NONE on Linux (it does not
 *           decommit where the kernel overcommits);
 *   heap    [heap]: the brk heap (glibc's malloc before jemalloc was
 *           loaded, or jemalloc's dss when set to "primary");
 *   anon    every other mapping: anonymous memory, where jemalloc's
 *           extents live, with [anon:name] mappings and the kernel's
 *           [vdso]/[vvar] pages.
 * Totals are over all mappings, so files + stacks + heap + anon = rss.
 *
 * /proc/<pid>/status gives the same split coarsely and for nothing (see
 * ha_smaps_parse_status): files and anonymous, stacks and [heap] inside
 * the latter, no PSS or LazyFree.
 *
 * Trust: /proc is the kernel's, but the parser is still safe on any
 * input (fuzzed): nothing is read past len, numbers are range-checked,
 * nothing asserts.
 */
#ifndef HA_SMAPS_H
#define HA_SMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Resident memory by kind of mapping, bytes. */
struct ha_smaps {
    uint64_t rss;        /* sum of every mapping's Rss */
    uint64_t pss;        /* ... Pss: shared pages divided among sharers */
    uint64_t swap;       /* ... Swap: swapped out, not resident */
    uint64_t lazyfree;   /* ... LazyFree: MADV_FREE'd, still resident
                            until the kernel needs the memory */
    uint64_t anonymous;  /* ... Anonymous */

    uint64_t files;      /* Rss by kind (see above) */
    uint64_t stacks;
    uint64_t heap;
    uint64_t anon;

    size_t n_mappings;
    size_t n_stacks;     /* mappings counted as stacks */
    bool detailed;       /* from smaps: pss, lazyfree, stacks and heap
                            are known; from status (the kernel's
                            counters) they are 0 and stacks and heap are
                            inside anon */
};

/* Parses the text of an smaps file, buf[0..len), into *out (zeroed
 * first). Returns 0, or -1 with "line N: expected ..." in err when a line
 * is neither a mapping header nor a "Name: value" field. */
int ha_smaps_parse(const char *buf, size_t len, struct ha_smaps *out,
                   char *err, size_t errlen);

/* Reads path (normally "/proc/self/smaps") and parses it. I/O. Returns
 * 0, or -1 with err naming the file and the reason. The kernel walks the
 * page tables of every mapping to write smaps: milliseconds per hundred
 * MB of a process, with its mmap lock held for reading meanwhile. */
int ha_smaps_read(const char *path, struct ha_smaps *out, char *err,
                  size_t errlen);

/* The cheap reading: /proc/<pid>/status's RssAnon, RssFile, RssShmem and
 * VmSwap, counters the kernel keeps (no page-table walk), parsed from
 * buf[0..len) into *out (zeroed first, detailed = false): files =
 * RssFile + RssShmem, anon = RssAnon, rss their sum. Returns 0, or -1
 * with err when a field is missing. Pure. */
int ha_smaps_parse_status(const char *buf, size_t len, struct ha_smaps *out,
                          char *err, size_t errlen);

/* Reads path (normally "/proc/self/status") and parses it as above. */
int ha_smaps_read_status(const char *path, struct ha_smaps *out, char *err,
                         size_t errlen);

#endif /* HA_SMAPS_H */
