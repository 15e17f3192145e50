/* SPDX-License-Identifier: MIT
 *
 * The /heap page's lifetime view: a lifetime log (jemalloc-log_now) as a
 * flame graph whose widths are the bytes freed in the window per
 * allocation stack, and heap_lifetimes' rows: what churns, how fast, how
 * long its objects live, where they are freed. The same result as the SQL
 * tables (heap/lifelogs.h), never a second computation.
 *
 *   GET /heap/lifetimes.json?log=<name>   a log of the datadir
 *
 * {"title", "seconds" (the window's), "samples",
 *  "top": [{"f", "bps" (bytes freed per second), "ops" (objects per
 *           second), "bytes", "p50", "p90", "p99", "max" (lifetimes, ms),
 *           "free" (where most were freed), "other" (share freed by
 *           another thread), "temp" (temporary share, null when
 *           unknown)}],
 *  "tree": {"n", "v": bytes freed under the frame, "c": [...]}}
 */
#ifndef HA_HTTP_LIFETIMES_H
#define HA_HTTP_LIFETIMES_H

#include "http/request.h"

#define HA_HTTP_LIFETIMES_ROWS 40 /* rows of the table */

/* The route's handler (routes.h), on the request's task; the tree and
 * JSON are made on the worker thread and kept with the cached log. */
void ha_http_lifetimes_data(struct ha_http_req *hr);

#endif /* HA_HTTP_LIFETIMES_H */
