/* SPDX-License-Identifier: MIT
 *
 * The /heap flame graph page and its data (see flame.h).
 */
#include "http/flame.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "http/assets.h"
#include "http/reply.h"
#include "prof/aggregate.h"
#include "prof/syms.h"
#include "vtab/heap_load.h"

#define TOP_ROWS 40        /* rows of the top functions table */
#define MIN_SHARE 1e-4     /* frames below this share of the total are left
                              out of the JSON (invisible at any zoom a
                              screen shows without clicking into them) */

/* ------------------------------------------------------------------
 * The call tree
 * ------------------------------------------------------------------ */

struct node {
    uint32_t name;          /* in tree.names */
    uint32_t child, next;   /* first child, next sibling (index + 1) */
    double v;               /* bytes under this frame */
    double d;               /* own delta: stacks ending here, cur - base */
};

struct tree {
    struct node *nodes;     /* [0] is the root */
    size_t n, cap;
    uint64_t *keys;         /* open-addressed (parent + 1) << 32 | name */
    uint32_t *vals;         /* node index + 1 */
    size_t hcap;
    struct ha_strtab names;
    bool oom;
};

static size_t
slot(uint64_t k, size_t cap)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static int
tree_rehash(struct tree *t)
{
    size_t ncap = t->hcap ? t->hcap * 2 : 4096;
    uint64_t *k = malloc(ncap * sizeof(*k));
    uint32_t *v = calloc(ncap, sizeof(*v));

    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        return -1;
    }
    for (size_t i = 0; i < t->hcap; i++) {
        size_t j;

        if (t->vals[i] == 0)
            continue;
        for (j = slot(t->keys[i], ncap); v[j] != 0; j = (j + 1) & (ncap - 1))
            ;
        k[j] = t->keys[i];
        v[j] = t->vals[i];
    }
    free(t->keys);
    free(t->vals);
    t->keys = k;
    t->vals = v;
    t->hcap = ncap;
    return 0;
}

/* The child of parent named name, created if new; SIZE_MAX on OOM. */
static size_t
tree_child(struct tree *t, size_t parent, const char *name)
{
    uint32_t off = ha_strtab_intern(&t->names, name, strlen(name));
    uint64_t key;
    size_t j;

    if (off == UINT32_MAX ||
        ((t->n + 1) * 2 > t->hcap && tree_rehash(t) != 0))
        return SIZE_MAX;
    key = (uint64_t)(parent + 1) << 32 | off;
    for (j = slot(key, t->hcap); t->vals[j] != 0; j = (j + 1) & (t->hcap - 1))
        if (t->keys[j] == key)
            return t->vals[j] - 1;
    if (t->n == t->cap) {
        size_t ncap = t->cap * 2;
        struct node *v = realloc(t->nodes, ncap * sizeof(*v));

        if (v == NULL)
            return SIZE_MAX;
        t->nodes = v;
        t->cap = ncap;
    }
    t->nodes[t->n] = (struct node){.name = off,
                                   .child = 0,
                                   .next = t->nodes[parent].child,
                                   .v = 0,
                                   .d = 0};
    t->nodes[parent].child = (uint32_t)t->n + 1;
    t->keys[j] = key;
    t->vals[j] = (uint32_t)++t->n;
    return t->n - 1;
}

static int
tree_init(struct tree *t)
{
    memset(t, 0, sizeof(*t));
    t->cap = 1024;
    t->nodes = calloc(t->cap, sizeof(*t->nodes));
    if (t->nodes == NULL)
        return -1;
    t->nodes[0].name = ha_strtab_intern(&t->names, "all", 3);
    t->n = 1;
    return t->nodes[0].name == UINT32_MAX ? -1 : 0;
}

static void
tree_free(struct tree *t)
{
    free(t->nodes);
    free(t->keys);
    free(t->vals);
    ha_strtab_free(&t->names);
}

/* Adds every stack of pr, root first, with weight +1 (current) or -1
 * (base): v grows by the bytes either way, d by weight * bytes. */
static int
tree_add(struct tree *t, const struct ha_heap_profile *pr, int weight)
{
    struct ha_agg_walker *w = ha_agg_walker_new(&pr->syms);
    const struct ha_syms *syms = &pr->syms;
    char addr[24];

    if (w == NULL)
        return -1;
    for (size_t i = 0; i < pr->p.n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(&pr->p, i);
        size_t n = pr->p.stacks[i].n_frames, at = 0;
        size_t start = ha_agg_walker_stack(w, &pr->p, i);
        double bytes = pr->p.stacks[i].bytes;

        if (start == SIZE_MAX)
            goto oom;
        t->nodes[0].v += bytes;
        for (size_t j = n; j-- > start;) {
            const struct ha_syms_addr *sa = ha_agg_walker_frame(w, j);
            uint32_t frames = sa != NULL && sa->n > 0 ? sa->n : 1;

            if (f[j] >= HA_AGG_HIGH_ADDR)
                continue;
            for (uint32_t q = frames; q-- > 0;) {
                const char *name =
                    sa != NULL && sa->n > 0
                        ? ha_syms_str(syms, syms->frames[sa->first + q].func)
                        : "";

                if (*name == '\0') {
                    snprintf(addr, sizeof(addr), "0x%016" PRIx64,
                             ha_agg_lookup_pc(f, j));
                    name = addr;
                }
                if ((at = tree_child(t, at, name)) == SIZE_MAX)
                    goto oom;
                t->nodes[at].v += bytes;
            }
        }
        t->nodes[at].d += weight * bytes;
    }
    ha_agg_walker_free(w);
    return 0;
oom:
    ha_agg_walker_free(w);
    return -1;
}

/* JSON string body (no quotes): RFC 8259 escapes. */
static void
json_str(struct ha_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            ha_buf_append_u8(b, '\\');
            ha_buf_append_u8(b, c);
        } else if (c < 0x20) {
            ha_buf_printf(b, "\\u%04x", c);
        } else {
            ha_buf_append_u8(b, c);
        }
    }
}

/* Writes the tree (iteratively: stacks can be deep). Returns 0 or -1 on
 * allocation failure. */
static int
tree_json(const struct tree *t, struct ha_buf *b, bool diff, double min)
{
    struct frame {
        uint32_t node, next_child; /* index + 1 */
    } *stack = malloc(t->n * sizeof(*stack));
    size_t depth = 0;

    if (stack == NULL)
        return -1;
    stack[depth++] = (struct frame){1, t->nodes[0].child};
    ha_buf_append_str(b, "{\"n\":\"all\",\"v\":");
    ha_buf_printf(b, "%.0f", t->nodes[0].v);
    if (diff)
        ha_buf_printf(b, ",\"d\":%.0f", t->nodes[0].d);
    ha_buf_append_str(b, ",\"c\":[");
    while (depth > 0) {
        struct frame *fr = &stack[depth - 1];
        const struct node *c;

        while (fr->next_child != 0 &&
               t->nodes[fr->next_child - 1].v < min)
            fr->next_child = t->nodes[fr->next_child - 1].next;
        if (fr->next_child == 0) {
            ha_buf_append_str(b, "]}");
            depth--;
            continue;
        }
        c = &t->nodes[fr->next_child - 1];
        /* A comma unless this is the parent's first written child. */
        if (b->len > 0 && b->data[b->len - 1] != '[')
            ha_buf_append_u8(b, ',');
        ha_buf_append_str(b, "{\"n\":\"");
        json_str(b, ha_strtab_str(&t->names, c->name));
        ha_buf_printf(b, "\",\"v\":%.0f", c->v);
        if (diff)
            ha_buf_printf(b, ",\"d\":%.0f", c->d);
        ha_buf_append_str(b, ",\"c\":[");
        stack[depth++] = (struct frame){fr->next_child, c->child};
        fr->next_child = c->next;
    }
    free(stack);
    return 0;
}

/* ------------------------------------------------------------------
 * Routes
 * ------------------------------------------------------------------ */

static void
serve_data(struct evhttp_request *req, struct ha_vtab_ctx *ctx, bool admin)
{
    char *dump = ha_http_query(req, "dump"), *base = ha_http_query(req, "base");
    struct ha_heap_profile *pr = NULL, *pb = NULL;
    struct ha_agg diff_agg = {0};
    const struct ha_agg *top = NULL;
    struct tree t;
    struct ha_buf b = HA_BUF_INIT;
    char err[1024], why[256];
    bool tree_ok = false;

    if (dump != NULL && dump[0] == '\0') {
        free(dump);
        dump = NULL;
    }
    if (base != NULL && base[0] == '\0') {
        free(base);
        base = NULL;
    }
    if (dump == NULL && !admin) {
        ha_http_reply_text(req, 403, "Forbidden",
                           "a live profile needs an admin user; stats users "
                           "may pick a dump\n");
        goto done;
    }
    if (ha_heap_profile_get(ctx, dump != NULL ? dump : HA_HEAP_LIVE, admin,
                            &pr, err, sizeof(err)) != 0 ||
        (base != NULL &&
         ha_heap_profile_get(ctx, base, admin, &pb, err, sizeof(err)) != 0)) {
        size_t at = strlen(err);

        snprintf(err + at, sizeof(err) - at, "\n");
        ha_http_reply_text(req, 404, "Not Found", err);
        goto done;
    }
    if (tree_init(&t) != 0)
        goto oom_notree;
    tree_ok = true;
    if (tree_add(&t, pr, 1) != 0 || (pb != NULL && tree_add(&t, pb, -1) != 0))
        goto oom;
    if (pb != NULL) {
        if (ha_agg_add(&diff_agg, &pr->p, &pr->syms, 1, false, why,
                       sizeof(why)) != 0 ||
            ha_agg_add(&diff_agg, &pb->p, &pb->syms, -1, false, why,
                       sizeof(why)) != 0)
            goto oom;
        ha_agg_sort(&diff_agg, HA_AGG_BY_FLAT_BYTES);
        top = &diff_agg;
    } else if ((top = ha_heap_profile_top(pr, err, sizeof(err))) == NULL) {
        goto oom;
    }

    ha_buf_append_str(&b, "{\"title\":\"");
    json_str(&b, dump != NULL ? dump : "live");
    if (base != NULL) {
        ha_buf_append_str(&b, " minus ");
        json_str(&b, base);
    }
    ha_buf_printf(&b, "\",\"diff\":%s,\"total\":%.0f,\"top\":[",
                  pb != NULL ? "true" : "false", top->total_bytes);
    for (size_t i = 0; i < top->n_rows && i < TOP_ROWS; i++) {
        const struct ha_agg_row *r = &top->rows[i];

        ha_buf_append_str(&b, i ? ",{\"f\":\"" : "{\"f\":\"");
        json_str(&b, ha_agg_name(top, r));
        ha_buf_printf(&b, "\",\"flat\":%.0f,\"cum\":%.0f}", r->flat_bytes,
                      r->cum_bytes);
    }
    ha_buf_append_str(&b, "],\"tree\":");
    if (tree_json(&t, &b, pb != NULL, t.nodes[0].v * MIN_SHARE) != 0)
        goto oom;
    ha_buf_append_str(&b, "}\n");
    if (ha_buf_failed(&b))
        goto oom;
    ha_http_reply_body(req, "application/json", b.data, b.len);
    goto done;
oom:
oom_notree:
    ha_http_reply_text(req, 500, "Internal Server Error", "out of memory\n");
done:
    if (tree_ok)
        tree_free(&t);
    ha_agg_free(&diff_agg);
    ha_buf_free(&b);
    ha_heap_profile_put(pb);
    ha_heap_profile_put(pr);
    free(dump);
    free(base);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
serve_dumps(struct evhttp_request *req, struct ha_vtab_ctx *ctx)
{
    struct ha_buf b = HA_BUF_INIT;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d = ctx->datadir != NULL ? opendir(ctx->datadir) : NULL;

    while (d != NULL && (de = readdir(d)) != NULL) {
        struct ha_dump_name dn;

        if (!ha_dumpname_parse(de->d_name, &dn))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 32;
            char **v = realloc(names, ncap * sizeof(*v));

            if (v == NULL)
                break;
            names = v;
            cap = ncap;
        }
        if ((names[n] = strdup(de->d_name)) == NULL)
            break;
        n++;
    }
    if (d != NULL)
        closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_str);
    ha_buf_append_u8(&b, '[');
    for (size_t i = 0; i < n; i++) {
        ha_buf_append_str(&b, i ? ",\"" : "\"");
        json_str(&b, names[i]);
        ha_buf_append_u8(&b, '"');
        free(names[i]);
    }
    free(names);
    ha_buf_append_str(&b, "]\n");
    if (ha_buf_failed(&b))
        ha_http_reply_text(req, 500, "Internal Server Error",
                           "out of memory\n");
    else
        ha_http_reply_body(req, "application/json", b.data, b.len);
    ha_buf_free(&b);
}

static const char page[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<title>heapadmin: heap profile</title>\n"
    "<link rel=\"stylesheet\" href=\"/assets/d3-flamegraph.css\">\n"
    "<style>body{font-family:sans-serif;margin:1em 2em}"
    "table{border-collapse:collapse;margin-top:.5em}"
    "td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #ddd}"
    "td.f,th.f{text-align:left;font-family:monospace}"
    ".grow{color:#b00}.shrink{color:#05b}#details{min-height:1.5em;"
    "font-family:monospace}#err{color:#b00}</style>\n"
    "</head><body>\n"
    "<h1>heapadmin heap profile</h1>\n"
    "<form id=\"pick\">profile <select id=\"dump\" name=\"dump\">"
    "<option value=\"\">live (admin)</option></select>\n"
    " minus base <select id=\"base\" name=\"base\"><option value=\"\">"
    "(none)</option></select> <button type=\"submit\">show</button></form>\n"
    "<p id=\"summary\"></p><p id=\"err\"></p>\n"
    "<p><input id=\"term\" placeholder=\"search (regular expression)\"> "
    "<button id=\"search\">search</button> <button id=\"clear\">clear"
    "</button> <button id=\"reset\">reset zoom</button></p>\n"
    "<div id=\"chart\"></div><p id=\"details\"></p>\n"
    "<h2>Top functions</h2>\n"
    "<table id=\"top\"><thead><tr><th class=\"f\">function</th>"
    "<th>flat</th><th>flat %</th><th>cum</th><th>cum %</th></tr></thead>"
    "<tbody></tbody></table>\n"
    "<p><small>Flame graph by d3-flame-graph (Apache-2.0, <a href=\""
    "/assets/LICENSE.d3-flame-graph.txt\">licence</a>) on d3 (ISC, "
    "<a href=\"/assets/LICENSE.d3.txt\">licence</a>), served by heapadmin."
    "</small></p>\n"
    "<script src=\"/assets/d3.min.js\"></script>\n"
    "<script src=\"/assets/d3-flamegraph.min.js\"></script>\n"
    "<script>\n"
    "'use strict';\n"
    "const q = new URLSearchParams(location.search);\n"
    "function fmt(b) { const a = Math.abs(b), u = ['B','KiB','MiB','GiB'];"
    " let i = 0, v = a; while (v >= 1024 && i < 3) { v /= 1024; i++; }"
    " return (b < 0 ? '-' : '') + (i ? v.toFixed(1) : v) + ' ' + u[i]; }\n"
    "function opt(sel, name) { const o = document.createElement('option');"
    " o.value = o.textContent = name; if (q.get(sel.name) === name)"
    " o.selected = true; sel.appendChild(o); }\n"
    "// Absolute URLs without the page's user:password, which fetch() refuses;\n"
    "// the browser sends the credentials it authenticated the page with.\n"
    "const base = location.origin;\n"
    "fetch(base + '/heap/dumps.json').then(r => r.json()).then(list => {"
    " for (const n of list) { opt(document.getElementById('dump'), n);"
    " opt(document.getElementById('base'), n); } });\n"
    "const url = base + '/heap/data.json?' + new URLSearchParams("
    "{dump: q.get('dump') || '', base: q.get('base') || ''});\n"
    "fetch(url).then(r => r.ok ? r.json() : r.text().then(t => {"
    " throw new Error(t); })).then(data => {\n"
    "  const total = data.tree.v || 1;\n"
    "  document.getElementById('summary').textContent = data.title + ': ' +"
    " fmt(data.total) + (data.diff ? ' (red: grew, blue: shrank, orange: "
    "new)' : ' in use');\n"
    "  const width = Math.max(600, document.body.clientWidth - 40);\n"
    "  const chart = flamegraph.default().width(width).cellHeight(18)"
    ".minFrameSize(2).transitionDuration(300).sort(true)"
    ".setDetailsElement(document.getElementById('details'))"
    ".label(d => d.data.n + ': ' + fmt(d.data.v) + ' (' +"
    " (100 * d.data.v / total).toFixed(2) + '%)' + (data.diff ? ', ' +"
    " (d.delta >= 0 ? '+' : '') + fmt(d.delta || 0) : ''));\n"
    "  if (data.diff) chart.computeDelta(true)"
    ".setColorMapper(flamegraph.colorMapper.differentialColorMapper);\n"
    "  d3.select('#chart').datum(data.tree).call(chart);\n"
    "  document.getElementById('search').onclick = () =>"
    " chart.search(document.getElementById('term').value);\n"
    "  document.getElementById('term').onkeydown = e => { if (e.key ==="
    " 'Enter') chart.search(e.target.value); };\n"
    "  document.getElementById('clear').onclick = () => chart.clear();\n"
    "  document.getElementById('reset').onclick = () => chart.resetZoom();\n"
    "  const body = document.querySelector('#top tbody');\n"
    "  for (const r of data.top) { const tr = document.createElement('tr');"
    " const cells = [r.f, fmt(r.flat), (100 * r.flat / (data.total || 1))"
    ".toFixed(1), fmt(r.cum), (100 * r.cum / (data.total || 1)).toFixed(1)];"
    " cells.forEach((c, i) => { const td = document.createElement('td');"
    " td.textContent = c; if (i === 0) td.className = 'f';"
    " else if (data.diff) td.className = r.flat >= 0 ? 'grow' : 'shrink';"
    " tr.appendChild(td); }); body.appendChild(tr); }\n"
    "  document.body.setAttribute('data-rendered', 'yes');\n"
    "}).catch(e => { document.getElementById('err').textContent ="
    " String(e.message || e); document.body.setAttribute('data-rendered',"
    " 'error'); });\n"
    "</script>\n</body></html>\n";

static void
serve_asset(struct evhttp_request *req, const char *name)
{
    for (size_t i = 0; i < ha_http_n_assets; i++)
        if (strcmp(ha_http_assets[i].name, name) == 0) {
            evhttp_add_header(evhttp_request_get_output_headers(req),
                              "Cache-Control", "max-age=86400");
            ha_http_reply_body(req, ha_http_assets[i].content_type,
                               ha_http_assets[i].data, ha_http_assets[i].len);
            return;
        }
    ha_http_reply_text(req, 404, "Not Found", "no such asset\n");
}

bool
ha_http_flame(struct evhttp_request *req, struct ha_vtab_ctx *ctx,
              bool admin)
{
    const char *path = ha_http_path(req);

    if (path == NULL)
        return false;
    if (strcmp(path, "/heap") == 0 || strcmp(path, "/heap/") == 0)
        ha_http_reply_body(req, "text/html; charset=utf-8", page,
                           sizeof(page) - 1);
    else if (strcmp(path, "/heap/data.json") == 0)
        serve_data(req, ctx, admin);
    else if (strcmp(path, "/heap/dumps.json") == 0)
        serve_dumps(req, ctx);
    else if (strncmp(path, "/assets/", 8) == 0)
        serve_asset(req, path + 8);
    else
        return false;
    return true;
}
