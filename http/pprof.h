/* SPDX-License-Identifier: MIT
 *
 * The /debug/pprof/ routes: heap profiles for pprof-speaking tools and
 * jeprof's remote protocol (gperftools'), so that `jeprof --text
 * http://user:pass@host:port/debug/pprof/heap` works from a machine
 * without the binary:
 *
 *   /debug/pprof/heap, /debug/pprof/allocs
 *        the live profile (admin users), or ?dump=<file in the datadir>
 *        (any user); ?base=<file> subtracts a base (pprof format only).
 *        Format: ?format=pprof (gzipped profile.proto, the default) or
 *        ?format=jemalloc (the heap_v2 text jeprof reads); without
 *        ?format, jeprof's fetchers (User-Agent curl/ or Wget/) get the
 *        jemalloc text and everyone else pprof.
 *   /debug/pprof/symbol
 *        GET: "num_symbols: 1" (symbols are served). POST: a body of
 *        0x-prefixed addresses joined by '+', answered with one
 *        "0x<addr> <name>" line per address this process can name
 *        (inline chains outermost first, joined by "--"), looked up in
 *        the binaries this process has mapped now.
 *   /debug/pprof/cmdline
 *        this process's command line (jeprof takes the program name).
 */
#ifndef HA_HTTP_PPROF_H
#define HA_HTTP_PPROF_H

#include <event2/http.h>
#include <stdbool.h>

#include "vtab/vtab_util.h"

/* Answers req when its path is one of the routes above and returns
 * true; false otherwise (nothing sent). admin: the user may take live
 * profiles. */
bool ha_http_pprof(struct evhttp_request *req, struct ha_vtab_ctx *ctx,
                   bool admin);

#endif /* HA_HTTP_PPROF_H */
