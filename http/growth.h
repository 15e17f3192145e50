/* SPDX-License-Identifier: MIT
 *
 * The /heap page's growth view: over a series of dumps, which stacks
 * grow and how fast (a flame graph whose widths are bytes per hour), the
 * likeliest leaks (heap_growth's ranking) and their bytes at each dump,
 * to draw over time. The same result as the SQL tables heap_growth and
 * heap_growth_stacks (vtab/heap_growth.h), never a second computation.
 *
 *   GET /heap/growth.json?last=N             the newest process's last
 *                                            N dumps (default 32)
 *   GET /heap/growth.json?since=A&until=B    dump names, or times (unix
 *                                            seconds or 'YYYY-MM-DD
 *                                            HH:MM:SS' UTC)
 *   ... &kind=interval                       one kind of dump only
 *
 * {"title", "hours", "dumps": [{"n": name, "t": unix s}],
 *  "total": [bytes at each dump],
 *  "top": [{"rank", "f", "bph" (bytes/hour), "r2", "grew" (share of
 *           steps), "pattern", "first", "last", "series": [bytes at each
 *           dump] (the first HA_HTTP_GROWTH_SERIES rows only)}],
 *  "tree": {"n", "v": bytes per hour under the frame, "c": [...]}}
 * with only growing stacks (bytes_per_hour > 0) in the tree; r2 and
 * grew are null where heap_growth says NULL.
 */
#ifndef HA_HTTP_GROWTH_H
#define HA_HTTP_GROWTH_H

#include "http/request.h"

#define HA_HTTP_GROWTH_DEFAULT_LAST 32 /* dumps when the query names none */
#define HA_HTTP_GROWTH_TOP 30          /* rows of the ranking */
#define HA_HTTP_GROWTH_SERIES 8        /* of them drawn over time */

/* The route handler (routes.h), on the request's task: the ranking comes
 * from the shared result (computed on the worker thread when new); the
 * per-dump figures come from each dump's cached top table, and the JSON
 * is built on the worker thread and kept with the result. */
void ha_http_growth_data(struct ha_http_req *hr);

#endif /* HA_HTTP_GROWTH_H */
