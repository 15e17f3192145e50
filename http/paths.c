/* SPDX-License-Identifier: MIT
 *
 * The HTTP front-end's path table (see paths.h). Pure.
 */
#include "http/paths.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"

/* admin: admins only; profile: the profile role may ask it (paths.h).
 * A path added here is denied to the profile role unless it serves heap
 * profiles (or what the flame page needs to show them). */
static const struct ha_http_path paths[] = {
    {"/", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_INDEX, false, true,
     "What is served here, as text."},
    {"/metrics", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_METRICS, false, false,
     "Prometheus metrics in the text format, or OpenMetrics 1.0 when the "
     "scraper asks for it: jemalloc's figures, the profiler's state, where "
     "resident memory goes, the memory cgroup, the admin port's counters, "
     "`heapadmin_build_info` (the label contract) and ProxySQL's names. On "
     "a gateway: its own and every agent's, each sample labelled `pid` and "
     "`program`; `?pid=N` process N's alone, without `pid`, `program` or "
     "service labels (its `/sd` target carries them)."},
    {"/agent", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_AGENT, false, false,
     "This process as a host gateway lists it: pid, program, uid, start "
     "time, endpoint and memory, as `name: value` lines."},
    /* A gateway's targets for Prometheus' HTTP service discovery (its
     * scrapers of profiles may hold a profile account). */
    {"/sd", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_SD, false, true,
     "A host gateway's targets for Prometheus' HTTP service discovery "
     "(`http_sd_configs`, Alloy's `discovery.http`), as JSON: the host's "
     "merged `/metrics`, then one target per process served now, reached "
     "through the gateway (`__param_pid`), with the label contract "
     "(`service_name`, `program`, `user`, `host`, `instance`). 404 but on "
     "a gateway."},
    {"/debug/pprof/heap", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_PPROF_HEAP,
     false, true,
     "Go's `net/http/pprof` convention: always gzipped profile.proto, "
     "whoever asks (functions, lines, inlined frames, mappings with "
     "build-ids; sample types alloc_objects/count and alloc_space/bytes "
     "from a process with `prof_accum`, inuse_objects/count, "
     "inuse_space/bytes), `inuse_space` the default here. The live "
     "profile (admin and profile users), or `?dump=<file>` (any user; "
     "`?dump=live` is the live one), `?base=<file>` for a diff, `?debug=1` (or "
     "`?format=jemalloc`) for jemalloc's own text, `?seconds=N` (1 to 60, "
     "admin and profile users) Go's delta: two live profiles N seconds apart, "
     "`alloc_*` what was allocated between them, `inuse_*` as held at the "
     "end (409 without `prof_accum`, or when the profile was reset "
     "meanwhile). Samples carry the label `thread_name` where threads "
     "have names."},
    {"/debug/pprof/allocs", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_PPROF_ALLOCS,
     false, true,
     "The same profile with `alloc_space` the default sample type, as Go "
     "does; what Pyroscope and Parca scrape for memory. A dump without "
     "cumulative counters has the in-use pair alone, and a comment saying "
     "why."},
    {"/debug/pprof/symbol", false, HA_HTTP_GET_HEAD | HA_HTTP_POST,
     HA_HTTP_PAGE_PPROF_SYMBOL, false, true,
     "gperftools' remote symbol protocol: POST addresses, get names."},
    /* The command line may carry secrets (a password, a token given
     * as an argument): admins only. */
    {"/debug/pprof/cmdline", false, HA_HTTP_GET_HEAD,
     HA_HTTP_PAGE_PPROF_CMDLINE, true, false,
     "The process's command line (jeprof takes the program name from it); "
     "admin users only, as it may carry secrets."},
    {"/pprof/heap", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_JEPROF_HEAP, false,
     true,
     "jeprof's remote protocol at jeprof's own path: jemalloc's heap_v2 "
     "text, live (admin and profile users) or `?dump=<file>`."},
    /* What jeprof fetches when given no path (its CPU page): there is
     * no CPU profiler here, so the heap, which jeprof tells by its
     * header; ?seconds= is ignored. */
    {"/pprof/profile", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_JEPROF_HEAP,
     false, true,
     "What jeprof fetches when given no path: the same as `/pprof/heap` "
     "(there is no CPU profiler here; jeprof reads the type from the "
     "profile)."},
    {"/pprof/symbol", false, HA_HTTP_GET_HEAD | HA_HTTP_POST,
     HA_HTTP_PAGE_PPROF_SYMBOL, false, true,
     "gperftools' remote symbol protocol, where jeprof asks."},
    {"/pprof/cmdline", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_PPROF_CMDLINE,
     true, false,
     "The command line, where jeprof asks; admin users only (a stats user "
     "gets 403 and gives jeprof the program itself)."},
    {"/heap", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME, false, true,
     "The flame graph page: the live profile (admin and profile users) or "
     "any dump, its top functions and the diff of two dumps; "
     "`?view=growth` what grows over a series of dumps, `?view=lifetimes` "
     "how long objects live in a lifetime window."},
    {"/heap/", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME, false, true,
     "The same page."},
    {"/heap/data.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME_DATA,
     false, true,
     "The flame graph's data (JSON): `?dump=`, `?base=`, `?weight=inuse` "
     "(the default) or `alloc` (bytes allocated since profiling began)."},
    {"/heap/dumps.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME_DUMPS,
     false, true, "The dumps the page offers (JSON)."},
    {"/heap/growth.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_GROWTH_DATA,
     false, true,
     "The growth view's data (JSON): the series `last=N` dumps of the "
     "newest process (default 32), or `since=`/`until=` dump names or "
     "times, optionally of one `kind=`; the same series and ranking as "
     "`heap_growth`."},
    /* The lifetime window's files are not heap profiles: not for the
     * profile role. */
    {"/heap/logs.json", false, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_FLAME_LOGS,
     false, false, "The lifetime logs the page offers (JSON)."},
    {"/heap/lifetimes.json", false, HA_HTTP_GET_HEAD,
     HA_HTTP_PAGE_LIFETIMES_DATA, false, false,
     "The lifetime view's data (JSON): `?log=<file>`, as "
     "`heap_lifetimes`."},
    {"/assets/", true, HA_HTTP_GET_HEAD, HA_HTTP_PAGE_ASSET, false, true,
     "The page's scripts (d3 and d3-flame-graph), embedded in the binary "
     "at build time: the page needs no internet access."},
};

const struct ha_http_path *
ha_http_paths(size_t *n)
{
    *n = HA_ARRAY_SIZE(paths);
    return paths;
}

static const struct ha_http_path *
find(const char *path)
{
    if (path == NULL)
        return NULL;
    for (size_t i = 0; i < HA_ARRAY_SIZE(paths); i++) {
        const struct ha_http_path *p = &paths[i];

        if (p->prefix ? strncmp(path, p->path, strlen(p->path)) == 0
                      : strcmp(path, p->path) == 0)
            return p;
    }
    return NULL;
}

int
ha_http_path_page(const char *path)
{
    const struct ha_http_path *p = find(path);

    return p != NULL ? (int)p->page : -1;
}

bool
ha_http_path_admin_only(const char *path)
{
    const struct ha_http_path *p = find(path);

    return p != NULL && p->admin;
}

bool
ha_http_path_profile_ok(const char *path)
{
    const struct ha_http_path *p = find(path);

    return p == NULL || p->profile;
}

bool
ha_http_path_allows(const char *path, unsigned methods, char *allow,
                    size_t allow_len)
{
    const struct ha_http_path *p = find(path != NULL ? path : "");

    if (p == NULL || (p->methods & methods) != 0)
        return true;
    snprintf(allow, allow_len, "%s",
             p->methods & HA_HTTP_POST ? "GET, HEAD, POST" : "GET, HEAD");
    return false;
}

long
ha_http_parse_pid(const char *s, size_t n)
{
    long v = 0;

    if (n == 0 || n > 10 || s[0] == '0')
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    return v <= 2147483647L ? v : 0;
}

const char *
ha_http_path_strip_pid(const char *path, long *pid)
{
    const char *p, *slash;

    *pid = 0;
    if (path == NULL || strncmp(path, "/pid/", 5) != 0)
        return NULL;
    p = path + 5;
    slash = strchr(p, '/');
    if (slash == NULL)
        return NULL;
    *pid = ha_http_parse_pid(p, (size_t)(slash - p));
    return slash;
}
