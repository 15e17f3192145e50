/* SPDX-License-Identifier: MIT
 *
 * Heap profiles where profiling tools look for them, as handlers of the
 * route table (routes.h), each run on its request's task:
 *
 * Go's net/http/pprof convention (go tool pprof, Pyroscope, Parca):
 *   /debug/pprof/heap, /debug/pprof/allocs
 *        always gzipped profile.proto with Go's four sample types
 *        (alloc_objects, alloc_space, inuse_objects, inuse_space; the
 *        alloc pair only from a process started with prof_accum): as
 *        Go, inuse_space is the default on /heap and alloc_space on
 *        /allocs, where Pyroscope's and Parca's memory scrapes look for
 *        the cumulative counters; ?debug=1 (or 2): jemalloc's
 *        heap_v2 text instead. The live profile (admin users), or
 *        ?dump=<file in the datadir> (any user, by the datadir's file
 *        rule: prof/dumpfile.h); ?base=<file> subtracts a base (pprof
 *        only); ?seconds=N (1..60, admin): Go's delta profile, two live
 *        profiles N seconds apart (heap/profiles.h
 *        ha_heap_profile_delta), alloc_* what was allocated between
 *        them, inuse_* the second's, time_nanos and duration_nanos
 *        set; 409 when the process cannot give one (no prof_accum, a
 *        reset within the window). No User-Agent sniffing: what a URL
 *        returns never depends on the client.
 *   /debug/pprof/symbol, /debug/pprof/cmdline  as below.
 *
 * jeprof's remote protocol (gperftools'), at jeprof's own default paths,
 * so `jeprof --text http://user:pw@host:port` works with no path and no
 * binary:
 *   /pprof/heap     jemalloc's heap_v2 text (live: admin; ?dump= as
 *                   above)
 *   /pprof/profile  the same: it is what jeprof fetches when given no
 *                   path (gperftools' CPU page; there is no CPU profiler
 *                   here), and jeprof reads the profile's type from its
 *                   header; ?seconds= is ignored
 *   /pprof/symbol   GET: "num_symbols: 1". POST: a body of 0x-prefixed
 *                   addresses joined by '+', answered with one
 *                   "0x<addr> <name>" line per address this process can
 *                   name (inline chains outermost first, joined by "--")
 *   /pprof/cmdline  this process's command line (jeprof takes the
 *                   program name)
 *
 * Reading, encoding and symbolizing run on the worker thread; a dump's
 * profile.proto is encoded once and kept with the cached profile.
 */
#ifndef HA_HTTP_PPROF_H
#define HA_HTTP_PPROF_H

#include "http/request.h"

void ha_http_pprof_heap(struct ha_http_req *hr);
void ha_http_pprof_allocs(struct ha_http_req *hr);
void ha_http_jeprof_heap(struct ha_http_req *hr);
void ha_http_pprof_symbol(struct ha_http_req *hr);
void ha_http_pprof_cmdline(struct ha_http_req *hr);

/* For a push (engine/push.h ha_push_encode_fn; arg is the engine): dump
 * (NULL: the live profile) as /debug/pprof/allocs?dump= serves it, the
 * gzipped profile.proto appended to out. From a task. Returns 0,
 * HA_HEAP_ERROR with err, HA_HEAP_STOPPED or HA_HEAP_BUSY. */
int ha_http_pprof_push_encode(void *arg, const char *dump,
                              struct ha_buf *out, char *err, size_t errlen);

#endif /* HA_HTTP_PPROF_H */
