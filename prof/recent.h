/* SPDX-License-Identifier: MIT
 *
 * jemalloc 5.3's last sampled allocations, as
 * experimental.prof_recent.alloc_dump writes them through its write
 * callback (prof_recent_alloc_dump_node in src/prof_recent.c), read into
 * arrays:
 *
 *   {"sample_interval": <bytes>, "recent_alloc_max": <n>,
 *    "recent_alloc": [{"size": n, "usize": n, "released": bool,
 *                      "alloc_thread_uid": n, "alloc_thread_name": "..",
 *                      "alloc_time": <ns>, "alloc_trace": ["0x..", ..],
 *                      "dalloc_thread_uid": n, "dalloc_thread_name": "..",
 *                      "dalloc_time": <ns>, "dalloc_trace": [..]}, ...]}
 *
 * oldest first; the names are there when the thread has one, the dalloc_
 * members when the object was freed. Times are jemalloc's profiling
 * clock (see prof/proflog.h). Traces are kept once each (prof/traces.h).
 *
 * Trust: safe on hostile input (prof/json.h); errors name the byte
 * offset, never the content. Pure: no I/O.
 */
#ifndef HA_RECENT_H
#define HA_RECENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/syms.h"
#include "prof/traces.h"

#define HA_RECENT_NO_TRACE UINT32_MAX

struct ha_recent_rec {
    uint64_t size;          /* requested bytes */
    uint64_t usize;         /* usable size */
    bool released;          /* freed since */
    uint64_t alloc_tid;     /* jemalloc's thread uid */
    uint32_t alloc_name;    /* in names; 0 = none */
    uint64_t alloc_ns;
    uint32_t alloc_trace;   /* in traces */
    bool has_dalloc;        /* the dalloc_ members are there */
    uint64_t dalloc_tid;
    uint32_t dalloc_name;
    uint64_t dalloc_ns;
    uint32_t dalloc_trace;  /* HA_RECENT_NO_TRACE: none */
};

struct ha_recent {
    uint64_t sample_interval;  /* bytes between samples */
    int64_t alloc_max;         /* recent_alloc_max when it was read */
    struct ha_recent_rec *recs;
    size_t n;
    struct ha_strtab names;
    struct ha_traces traces;   /* deduplicated */
};

/* Parses buf[0 .. len) into *out (zeroed first). Returns 0, or -1 with
 * "byte N: expected ..." in err and *out empty. */
int ha_recent_parse(const char *buf, size_t len, struct ha_recent *out,
                    char *err, size_t errlen);

void ha_recent_free(struct ha_recent *r);

#endif /* HA_RECENT_H */
