/* SPDX-License-Identifier: MIT
 *
 * Files embedded at build time by http/gen-assets.sh (the rules are in
 * http/Makemodule.am): the /heap page's vendored files (d3 7.9.2, ISC;
 * d3-flame-graph 5.0.0, Apache-2.0; their licences are served beside
 * them) from deps/web (npm), served at /assets/<name>; and the pages
 * written here (http/heap.html), each served at its own route.
 */
#ifndef HA_HTTP_ASSETS_H
#define HA_HTTP_ASSETS_H

#include <stddef.h>

struct ha_http_asset {
    const char *name;          /* under /assets/ */
    const char *content_type;
    const unsigned char *data;
    size_t len;
};

extern const struct ha_http_asset ha_http_assets[]; /* http/assets.c */
extern const size_t ha_http_n_assets;
extern const struct ha_http_asset ha_http_pages[];  /* http/pages.c */
extern const size_t ha_http_n_pages;

#endif /* HA_HTTP_ASSETS_H */
