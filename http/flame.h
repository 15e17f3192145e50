/* SPDX-License-Identifier: MIT
 *
 * The /heap page: an interactive flame graph (d3-flame-graph: click to
 * zoom, search, hover for bytes and share) of the live profile (admin
 * users) or a chosen dump, the top functions table (heap_top's), and the
 * diff of two dumps (growth red, shrinkage blue, new stacks orange).
 * Everything it loads is served here (http/assets.h): no CDN.
 *
 *   GET /heap                       the page (dump, base in the query)
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

#include <event2/http.h>
#include <stdbool.h>

#include "vtab/vtab_util.h"

/* Answers req when its path is one of the routes above and returns
 * true; false otherwise (nothing sent). admin: may take live profiles. */
bool ha_http_flame(struct evhttp_request *req, struct ha_vtab_ctx *ctx,
                   bool admin);

#endif /* HA_HTTP_FLAME_H */
