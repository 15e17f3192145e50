/* SPDX-License-Identifier: MIT
 *
 * The /heap page: an interactive flame graph (d3-flame-graph: click to
 * zoom, search, hover for bytes and share) of the live profile (admin
 * users) or a chosen dump, the top functions table (heap_top's), and the
 * diff of two dumps (growth red, shrinkage blue, new stacks orange).
 * Everything it loads is served here (http/assets.h): no CDN.
 *
 *   GET /heap                       the page (dump, base in the query;
 *                                   view=growth: growth.h's view)
 *   GET /heap/data.json?dump=&base= the flame graph tree and top table
 *   GET /heap/dumps.json            the dumps in the datadir
 *   GET /assets/<name>              the vendored scripts and licences
 *
 * data.json: {"title", "diff", "total", "top": [{"f", "flat", "cum"}],
 * "tree": {"n": name, "v": bytes, "d": own delta (diff only), "c": [...]}}
 * with v the subtree's bytes (current plus base in a diff, so shrinkage
 * keeps its width) and frames under 1/10000 of the total left out.
 */
#ifndef HA_HTTP_FLAME_H
#define HA_HTTP_FLAME_H

#include "http/request.h"

/* The route handlers (routes.h), on the request's task. Building the
 * data (a tree of 65k stacks, its JSON) runs on the worker thread and a
 * dump's data is kept with its cached profile. */
void ha_http_flame_page(struct ha_http_req *hr);
void ha_http_flame_data(struct ha_http_req *hr);
void ha_http_flame_dumps(struct ha_http_req *hr);
void ha_http_flame_asset(struct ha_http_req *hr);

#endif /* HA_HTTP_FLAME_H */
