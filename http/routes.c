/* SPDX-License-Identifier: MIT
 *
 * The route table, the index and /metrics (see routes.h).
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
#include "http/pprof.h"

#define GET_HEAD (1u << 0)
#define POST (1u << 1)

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
        "  /debug/pprof/allocs    the same\n"
        "  /pprof/heap            jemalloc's text for jeprof "
        "(jeprof http://host:port;\n"
        "                         /pprof/profile, jeprof's default, is the "
        "same)\n"
        "  /pprof/symbol, /pprof/cmdline   jeprof's remote protocol\n"
        "  /heap                  flame graph, top functions, diffs\n"
        "  /agent                 this process, as a host gateway lists "
        "it\n"
        "A host gateway (heapadmind --gateway) also answers ?pid=N on "
        "/debug/pprof/,\n/pprof/ and /heap/ from process N, and its "
        "/metrics covers every process.\n");
}

static void
serve_metrics(struct ha_http_req *hr)
{
    enum ha_expo_format fmt =
        ha_expo_negotiate(ha_http_req_header(hr, "Accept"));
    struct ha_clients_stats st;
    struct ha_admin_counters c = {0};
    struct ha_buf out = HA_BUF_INIT;

    if (ha_engine_is_gateway(hr->engine)) {
        ha_gateway_metrics(hr);
        return;
    }
    ha_clients_stats(ha_engine_clients(hr->engine), &st);
    c.uptime_s = st.uptime;
    c.sessions = st.threads;
    c.sessions_max = st.max_used;
    c.connections = st.connections;
    c.questions = st.questions;
    c.http = true;
    c.http_requests = st.http_requests;
    if (ha_admin_metrics(ha_engine_vtab(hr->engine), &c, fmt, &out) != 0 ||
        ha_buf_failed(&out)) {
        ha_buf_free(&out);
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    ha_http_req_body(hr, ha_expo_content_type(fmt), out.data, out.len);
    ha_buf_free(&out);
}

static const struct route {
    const char *path;
    bool prefix;                     /* path is a prefix ("/assets/") */
    unsigned methods;
    void (*fn)(struct ha_http_req *hr);
} routes[] = {
    {"/", false, GET_HEAD, serve_index},
    {"/metrics", false, GET_HEAD, serve_metrics},
    {"/agent", false, GET_HEAD, ha_gateway_agent_info},
    {"/debug/pprof/heap", false, GET_HEAD, ha_http_pprof_heap},
    {"/debug/pprof/allocs", false, GET_HEAD, ha_http_pprof_heap},
    {"/debug/pprof/symbol", false, GET_HEAD | POST, ha_http_pprof_symbol},
    {"/debug/pprof/cmdline", false, GET_HEAD, ha_http_pprof_cmdline},
    {"/pprof/heap", false, GET_HEAD, ha_http_jeprof_heap},
    /* What jeprof fetches when given no path (its CPU page): there is
     * no CPU profiler here, so the heap, which jeprof tells by its
     * header; ?seconds= is ignored. */
    {"/pprof/profile", false, GET_HEAD, ha_http_jeprof_heap},
    {"/pprof/symbol", false, GET_HEAD | POST, ha_http_pprof_symbol},
    {"/pprof/cmdline", false, GET_HEAD, ha_http_pprof_cmdline},
    {"/heap", false, GET_HEAD, ha_http_flame_page},
    {"/heap/", false, GET_HEAD, ha_http_flame_page},
    {"/heap/data.json", false, GET_HEAD, ha_http_flame_data},
    {"/heap/dumps.json", false, GET_HEAD, ha_http_flame_dumps},
    {"/assets/", true, GET_HEAD, ha_http_flame_asset},
};

static const struct route *
find(const char *path)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(routes); i++) {
        const struct route *r = &routes[i];

        if (r->prefix ? strncmp(path, r->path, strlen(r->path)) == 0
                      : strcmp(path, r->path) == 0)
            return r;
    }
    return NULL;
}

static unsigned
method_bit(enum evhttp_cmd_type m)
{
    return m == EVHTTP_REQ_GET || m == EVHTTP_REQ_HEAD ? GET_HEAD
           : m == EVHTTP_REQ_POST                      ? POST
                                                       : 0;
}

bool
ha_http_route_allows(const char *path, enum evhttp_cmd_type method,
                     char *allow, size_t allow_len)
{
    const struct route *r = find(path != NULL ? path : "");

    if (r == NULL || (r->methods & method_bit(method)) != 0)
        return true;
    snprintf(allow, allow_len, "%s", r->methods & POST ? "GET, HEAD, POST"
                                                       : "GET, HEAD");
    return false;
}

void
ha_http_route(struct ha_http_req *hr)
{
    const struct route *r = find(hr->path);

    if (r == NULL) {
        ha_http_req_text(hr, 404, "Not Found",
                         "no such page; see / for what is served here\n");
        return;
    }
    /* A host gateway answers ?pid=N from process N. */
    if (ha_gateway_proxy(hr))
        return;
    r->fn(hr);
}
