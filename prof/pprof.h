/* SPDX-License-Identifier: MIT
 *
 * Heap profiles as pprof's profile.proto (github.com/google/pprof,
 * proto/profile.proto: message Profile and its field numbers), gzipped:
 * what `go tool pprof`, Grafana Pyroscope/Alloy and Parca read. No
 * reader takes jemalloc's own dump format, so this is the bridge.
 *
 *   sample_type  Go's heap profile: [alloc_objects/count,
 *                alloc_space/bytes, inuse_objects/count,
 *                inuse_space/bytes] when every input carries cumulative
 *                counters (opt.prof_accum), else the in-use pair alone
 *                and a comment saying why
 *   period_type  space/bytes, period = the dump's sample period
 *   default_sample_type  inuse_space (Go's /debug/pprof/heap), or
 *                alloc_space when asked (Go's /debug/pprof/allocs) and
 *                present
 *   sample       one per stack (one per stack and thread name where
 *                the profile's threads have names: the label
 *                thread_name, the stack's values shared out among its
 *                threads as prof/threads.h shares them, so they add
 *                up): location ids leaf first, allocator
 *                frames cut as jeprof cuts them and allocation wrappers
 *                past them (prof/aggregate.h, prof/wrappers.h), so
 *                pprof's flat is heap_top's; values scaled as jeprof
 *                scales them, rounded; a base profile's stacks come with
 *                negated values (pprof -base); a sample whose cut left
 *                out a wrapper carries the label wrapper = the one its
 *                site called (heap_top's wrapper column: `pprof -tags`
 *                lists them, -tagfocus=wrapper=zmalloc keeps them)
 *   location     one per address looked up (the call instruction for
 *                callers): mapping, address, and its lines innermost
 *                first (pprof: line[0] is the innermost inlined function,
 *                the last the function it was inlined into; a site
 *                inlined where a wrapper was gets one more location for
 *                its address, its lines from the site on); an address
 *                with no certain name has one line, its function named
 *                "<module>+0x<offset>" as in every table (syms.h)
 *   function     one per (name, source file)
 *   mapping      one per mapped file holding an address: start, limit,
 *                file offset, path, GNU build-id, and has_functions /
 *                has_filenames / has_line_numbers / has_inline_frames as
 *                they are
 * Pure: no I/O (zlib only).
 */
#ifndef HA_PPROF_H
#define HA_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "prof/heapv2.h"
#include "prof/maps.h"
#include "prof/syms.h"

/* One profile to encode. */
struct ha_pprof_input {
    const struct ha_heapv2 *p;
    const struct ha_maps *maps;
    const struct ha_syms *syms;      /* every lookup pc of p */
    /* The hex GNU build-id of the mapped file at path, or NULL: the
     * recorded one for a dump (<dump>.buildid), the file's for a live
     * profile. build_id may be NULL (no build-ids written). */
    const char *(*build_id)(void *arg, const char *path);
    void *build_id_arg;
    int weight;                      /* 1, or -1 for a base */
    const struct ha_wrap_set *wrappers; /* the allocation wrappers the
                                        cut skips (a base takes its
                                        profile's); NULL: syms' own */
};

/* How to encode. */
struct ha_pprof_opts {
    int64_t time_nanos;   /* when the profile was taken (0: unset) */
    bool alloc_default;   /* default_sample_type alloc_space (when the
                             cumulative pair is there) */
    int64_t duration_nanos; /* a delta's window (Go's ?seconds=N: the
                             alloc_* values are what it allocated then);
                             0: not written */
};

/* Encodes inputs[0 .. n) (the profile, then an optional base) into one
 * Profile, gzips it and appends it to out. time_nanos: when the profile
 * was taken (0: unset). Returns 0, or -1 with err set (allocation or
 * zlib failure). */
int ha_pprof_encode(const struct ha_pprof_input *inputs, size_t n,
                    int64_t time_nanos, struct ha_buf *out, char *err,
                    size_t errlen);

/* The serialized Profile before compression (for tests and fuzzing):
 * appended to out. Returns 0 or -1 as above. */
int ha_pprof_serialize(const struct ha_pprof_input *inputs, size_t n,
                       int64_t time_nanos, struct ha_buf *out, char *err,
                       size_t errlen);

/* The two above with every option (ha_pprof_encode: inuse_space the
 * default). */
int ha_pprof_encode_opts(const struct ha_pprof_input *inputs, size_t n,
                         const struct ha_pprof_opts *opts,
                         struct ha_buf *out, char *err, size_t errlen);
int ha_pprof_serialize_opts(const struct ha_pprof_input *inputs, size_t n,
                            const struct ha_pprof_opts *opts,
                            struct ha_buf *out, char *err, size_t errlen);

#endif /* HA_PPROF_H */
