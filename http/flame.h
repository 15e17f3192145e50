/* SPDX-License-Identifier: MIT
 *
 * The /heap page: an interactive flame graph (d3-flame-graph: click to
 * zoom, search, hover for bytes and share) of the live profile (admin
 * users) or a chosen dump, the top functions table (heap_top's), and the
 * diff of two dumps (growth red, shrinkage blue, new stacks orange).
 * Everything it loads is served here (http/assets.h): no CDN.
 *
 *   GET /heap                       the page (dump, base in the query;
 *                                   view=growth: growth.h's view;
 *                                   view=lifetimes: lifetimes.h's)
 *   GET /heap/data.json?dump=&base=&weight=
 *                                   the flame graph tree and top table;
 *                                   weight=alloc: bytes allocated since
 *                                   profiling began (prof_accum's
 *                                   cumulative counters) instead of bytes
 *                                   in use
 *   GET /heap/dumps.json            the dumps in the datadir
 *   GET /heap/logs.json             its lifetime logs
 *   GET /assets/<name>              the vendored scripts and licences
 *
 * data.json: {"title", "diff", "weight": "inuse" | "alloc", "alloc":
 * whether the dumps carry cumulative counters, "total", "top": [{"f",
 * "flat", "cum", "w": the allocation wrappers the site called (heap_top's
 * wrapper column; absent when none)}],
 * "tree": {"n": name, "v": bytes, "d": own delta (diff only), "c": [...]}}
 * with v the subtree's bytes (current plus base in a diff, so shrinkage
 * keeps its width) and frames under 1/10000 of the total left out.
 */
#ifndef HA_HTTP_FLAME_H
#define HA_HTTP_FLAME_H

#include "heap/profiles.h"
#include "http/calltree.h"
#include "http/request.h"
#include "prof/aggregate.h"

/* The route handlers (routes.h), on the request's task. Building the
 * data (a tree of 65k stacks, its JSON) runs on the worker thread and a
 * dump's data is kept with its cached profile. */
void ha_http_flame_page(struct ha_http_req *hr);
void ha_http_flame_data(struct ha_http_req *hr);
void ha_http_flame_dumps(struct ha_http_req *hr);
void ha_http_flame_logs(struct ha_http_req *hr);
void ha_http_flame_asset(struct ha_http_req *hr);

/* Adds every stack of pr, root first, cut past the allocator and the
 * allocation wrappers (wrappers; NULL: pr's own) so the leaves are
 * sites, with weight +1 (current) or -1 (base): v grows by the stack's
 * value (value: bytes in use, or allocated) either way, d by weight
 * times it; stacks worth nothing are left out. Worker thread. Returns 0
 * or -1 on allocation failure. */
int ha_http_flame_tree_add(struct ha_calltree *t,
                           const struct ha_heap_profile *pr, int weight,
                           enum ha_agg_value value,
                           const struct ha_wrap_set *wrappers);

#endif /* HA_HTTP_FLAME_H */
