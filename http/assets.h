/* SPDX-License-Identifier: MIT
 *
 * The /heap page's vendored files (d3 7.9.2, ISC; d3-flame-graph 5.0.0,
 * Apache-2.0; their licences are served beside them), embedded at build
 * time by http/gen-assets.sh from deps/web (npm), served at
 * /assets/<name>.
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

extern const struct ha_http_asset ha_http_assets[];
extern const size_t ha_http_n_assets;

#endif /* HA_HTTP_ASSETS_H */
