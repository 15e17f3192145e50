/* SPDX-License-Identifier: MIT
 *
 * What each page runs, the index and /metrics (see routes.h); which
 * paths exist and the methods they take are paths.c's.
 */
#include "http/routes.h"

#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "core/expo.h"
#include "core/util.h"
#include "engine/metrics.h"
#include "http/flame.h"
#include "http/gateway.h"
#include "http/growth.h"
#include "http/lifetimes.h"
#include "http/paths.h"
#include "http/pprof.h"
#include "http/sd.h"

static void
serve_index(struct ha_http_req *hr)
{
    ha_http_req_text(
        hr, 200, "OK",
        "heapadmin\n"
        "  /metrics               Prometheus metrics (OpenMetrics on "
        "request)\n"
        "  /debug/pprof/heap      heap profile, gzipped profile.proto "
        "(live: admin;\n"
        "                         ?dump=<file>, ?base=<file>, ?debug=1 for "
        "jemalloc's text)\n"
        "  /debug/pprof/allocs    the same, alloc_space first (Go's "
        "default there;\n"
        "                         needs prof_accum)\n"
        "  /pprof/heap            jemalloc's text for jeprof "
        "(jeprof http://host:port;\n"
        "                         /pprof/profile, jeprof's default, is the "
        "same)\n"
        "  /pprof/symbol, /pprof/cmdline   jeprof's remote protocol "
        "(cmdline: admin)\n"
        "  /heap                  flame graph, top functions, diffs;\n"
        "                         ?view=growth: what grows over a series "
        "of dumps;\n"
        "                         ?view=lifetimes: how long objects live "
        "(jemalloc-log_now)\n"
        "  /agent                 this process, as a host gateway lists "
        "it\n"
        "  /sd                    a host gateway's targets for "
        "Prometheus' http_sd_configs\n"
        "A host gateway (heapadmind --gateway) also answers ?pid=N on "
        "/debug/pprof/,\n/pprof/ and /heap/ from process N (or under "
        "/pid/N/: jeprof http://host:port/pid/N/pprof/heap),\nand its "
        "/metrics covers every process.\n");
}

static void
serve_metrics(struct ha_http_req *hr)
{
    enum ha_expo_format fmt =
        ha_expo_negotiate(ha_http_req_header(hr, "Accept"));
    struct ha_admin_counters c;
    struct ha_buf out = HA_BUF_INIT;

    if (ha_engine_is_gateway(hr->engine)) {
        ha_gateway_metrics(hr);
        return;
    }
    ha_admin_counters_of(ha_engine_clients(hr->engine), true, &c);
    if (ha_admin_metrics(ha_engine_heap(hr->engine), &c, fmt, &out) != 0 ||
        ha_buf_failed(&out)) {
        ha_buf_free(&out);
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    ha_http_req_body(hr, ha_expo_content_type(fmt), out.data, out.len);
    ha_buf_free(&out);
}

/* What each page runs (paths.h names them). */
static void (*const pages[HA_HTTP_PAGE_MAX])(struct ha_http_req *hr) = {
    [HA_HTTP_PAGE_INDEX] = serve_index,
    [HA_HTTP_PAGE_METRICS] = serve_metrics,
    [HA_HTTP_PAGE_AGENT] = ha_gateway_agent_info,
    [HA_HTTP_PAGE_SD] = ha_http_sd,
    [HA_HTTP_PAGE_PPROF_HEAP] = ha_http_pprof_heap,
    [HA_HTTP_PAGE_PPROF_ALLOCS] = ha_http_pprof_allocs,
    [HA_HTTP_PAGE_PPROF_SYMBOL] = ha_http_pprof_symbol,
    [HA_HTTP_PAGE_PPROF_CMDLINE] = ha_http_pprof_cmdline,
    [HA_HTTP_PAGE_JEPROF_HEAP] = ha_http_jeprof_heap,
    [HA_HTTP_PAGE_FLAME] = ha_http_flame_page,
    [HA_HTTP_PAGE_FLAME_DATA] = ha_http_flame_data,
    [HA_HTTP_PAGE_FLAME_DUMPS] = ha_http_flame_dumps,
    [HA_HTTP_PAGE_GROWTH_DATA] = ha_http_growth_data,
    [HA_HTTP_PAGE_FLAME_LOGS] = ha_http_flame_logs,
    [HA_HTTP_PAGE_LIFETIMES_DATA] = ha_http_lifetimes_data,
    [HA_HTTP_PAGE_ASSET] = ha_http_flame_asset,
};

static unsigned
method_bit(enum evhttp_cmd_type m)
{
    return m == EVHTTP_REQ_GET || m == EVHTTP_REQ_HEAD ? HA_HTTP_GET_HEAD
           : m == EVHTTP_REQ_POST                      ? HA_HTTP_POST
                                                       : 0;
}

bool
ha_http_route_allows(const char *path, enum evhttp_cmd_type method,
                     char *allow, size_t allow_len)
{
    long pid;
    const char *inner = ha_http_path_strip_pid(path, &pid);

    return ha_http_path_allows(inner != NULL ? inner : path,
                               method_bit(method), allow, allow_len);
}

void
ha_http_route(struct ha_http_req *hr)
{
    long pid;
    const char *inner = ha_http_path_strip_pid(hr->path, &pid);
    int page = ha_http_path_page(inner != NULL ? inner : hr->path);

    if (page < 0 || pages[page] == NULL ||
        (inner != NULL && !ha_engine_is_gateway(hr->engine))) {
        ha_http_req_text(hr, 404, "Not Found",
                         "no such page; see / for what is served here\n");
        return;
    }
    if (hr->user->role == HA_ROLE_PROFILE &&
        !ha_http_path_profile_ok(inner != NULL ? inner : hr->path)) {
        ha_http_req_text(hr, 403, "Forbidden",
                         "a profile_credentials account reads heap "
                         "profiles only: /debug/pprof/heap, "
                         "/debug/pprof/allocs, /pprof/heap, /pprof/symbol "
                         "and the /heap page\n");
        return;
    }
    if (hr->user->role != HA_ROLE_ADMIN &&
        ha_http_path_admin_only(inner != NULL ? inner : hr->path)) {
        ha_http_req_text(hr, 403, "Forbidden",
                         "the command line is served to admin users only "
                         "(it may carry secrets); with a stats user, give "
                         "jeprof the program: jeprof <program> <dump "
                         "fetched from /pprof/heap?dump=>\n");
        return;
    }
    /* A host gateway answers ?pid=N, and /pid/N/..., from process N. */
    if (ha_gateway_proxy(hr))
        return;
    pages[page](hr);
}
