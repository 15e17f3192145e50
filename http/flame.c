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
#include "core/task.h"
#include "http/request.h"
#include "prof/dumpfile.h"
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

/* data.json of a profile (and a base), built off the loop. */
struct data_job {
    struct ha_heap_profile *pr, *pb; /* references held */
    char *title;
    struct ha_buf out;
    int rc;
};

static void
data_run(void *arg)
{
    struct data_job *j = arg;
    struct ha_heap_profile *pr = j->pr, *pb = j->pb;
    struct ha_agg agg = {0};
    struct tree t;
    struct ha_buf *b = &j->out;
    char why[256];
    bool tree_ok = false;

    j->rc = -1;
    if (tree_init(&t) != 0)
        goto out;
    tree_ok = true;
    if (tree_add(&t, pr, 1) != 0 || (pb != NULL && tree_add(&t, pb, -1) != 0))
        goto out;
    /* The top table: heap_top's rows, or the diff's (built here, never
     * kept: the profile's own aggregate is the loop's to set). */
    if (ha_agg_add(&agg, &pr->p, &pr->syms, 1, false, why, sizeof(why)) !=
            0 ||
        (pb != NULL && ha_agg_add(&agg, &pb->p, &pb->syms, -1, false, why,
                                  sizeof(why)) != 0))
        goto out;
    ha_agg_sort(&agg, HA_AGG_BY_FLAT_BYTES);
    ha_buf_append_str(b, "{\"title\":\"");
    json_str(b, j->title);
    ha_buf_printf(b, "\",\"diff\":%s,\"total\":%.0f,\"top\":[",
                  pb != NULL ? "true" : "false", agg.total_bytes);
    for (size_t i = 0; i < agg.n_rows && i < TOP_ROWS; i++) {
        const struct ha_agg_row *r = &agg.rows[i];

        ha_buf_append_str(b, i ? ",{\"f\":\"" : "{\"f\":\"");
        json_str(b, ha_agg_name(&agg, r));
        ha_buf_printf(b, "\",\"flat\":%.0f,\"cum\":%.0f}", r->flat_bytes,
                      r->cum_bytes);
    }
    ha_buf_append_str(b, "],\"tree\":");
    if (tree_json(&t, b, pb != NULL, t.nodes[0].v * MIN_SHARE) != 0)
        goto out;
    ha_buf_append_str(b, "}\n");
    if (!ha_buf_failed(b))
        j->rc = 0;
out:
    if (tree_ok)
        tree_free(&t);
    ha_agg_free(&agg);
}

static void
data_free(void *arg)
{
    struct data_job *j = arg;

    ha_buf_free(&j->out);
    ha_heap_profile_put(j->pb);
    ha_heap_profile_put(j->pr);
    free(j->title);
    free(j);
}

/* A name the file rule refuses: 400 saying what is allowed. */
static bool
name_refused(struct ha_http_req *hr, const char *name)
{
    char why[512], msg[600];

    if (name == NULL || ha_dumpfile_name_ok(name, HA_DUMPFILE_DUMP, why,
                                            sizeof(why)))
        return false;
    snprintf(msg, sizeof(msg), "%s\n", why);
    ha_http_req_text(hr, 400, "Bad Request", msg);
    return true;
}

void
ha_http_flame_data(struct ha_http_req *hr)
{
    struct ha_vtab_ctx *ctx = ha_engine_vtab(hr->engine);
    char *dump = NULL, *base = NULL, err[1024], msg[1100];
    struct data_job *j = NULL;
    int rc;

    if (ha_http_req_param(hr, "dump", &dump, err, sizeof(err)) < 0 ||
        ha_http_req_param(hr, "base", &base, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "%s\n", err);
        ha_http_req_text(hr, 400, "Bad Request", msg);
        goto done;
    }
    if (dump != NULL &&
        (dump[0] == '\0' || strcmp(dump, HA_HEAP_LIVE) == 0)) {
        free(dump);
        dump = NULL;
    }
    if (base != NULL && base[0] == '\0') {
        free(base);
        base = NULL;
    }
    if (name_refused(hr, dump) || name_refused(hr, base))
        goto done;
    if (dump == NULL && !hr->admin) {
        ha_http_req_text(hr, 403, "Forbidden",
                         "a live profile needs an admin user; stats users "
                         "may pick a dump\n");
        goto done;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL)
        goto oom;
    if ((rc = ha_heap_profile_get(ctx, dump != NULL ? dump : HA_HEAP_LIVE,
                                  hr->admin, &j->pr, err, sizeof(err))) !=
            0 ||
        (base != NULL && (rc = ha_heap_profile_get(ctx, base, hr->admin,
                                                   &j->pb, err,
                                                   sizeof(err))) != 0)) {
        if (rc == HA_HEAP_STOPPED) {
            ha_http_req_stopped(hr);
        } else {
            snprintf(msg, sizeof(msg), "%s\n", err);
            ha_http_req_text(hr, 404, "Not Found", msg);
        }
        goto done;
    }
    /* A dump's page data never changes: kept with its profile. */
    if (j->pb == NULL && !j->pr->live && j->pr->flame.len > 0) {
        ha_http_req_body(hr, "application/json", j->pr->flame.data,
                         j->pr->flame.len);
        goto done;
    }
    {
        size_t tl = strlen(dump != NULL ? dump : "live") +
                    (base != NULL ? strlen(base) + 8 : 0) + 1;

        if ((j->title = malloc(tl)) == NULL)
            goto oom;
        snprintf(j->title, tl, "%s%s%s", dump != NULL ? dump : "live",
                 base != NULL ? " minus " : "", base != NULL ? base : "");
    }
    if (ha_task_offload(data_run, data_free, j) != 0) {
        j = NULL;
        ha_http_req_stopped(hr);
        goto done;
    }
    if (j->rc != 0)
        goto oom;
    ha_http_req_body(hr, "application/json", j->out.data, j->out.len);
    if (j->pb == NULL && !j->pr->live && j->pr->flame.len == 0) {
        j->pr->flame = j->out;
        ha_buf_init(&j->out);
        ha_heap_profile_account(j->pr);
    }
    goto done;
oom:
    ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
done:
    if (j != NULL)
        data_free(j);
    free(dump);
    free(base);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The datadir's dump names as a JSON array, off the loop. */
struct dumps_job {
    const char *datadir;
    struct ha_buf out;
};

static void
dumps_run(void *arg)
{
    struct dumps_job *j = arg;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d = j->datadir != NULL ? opendir(j->datadir) : NULL;

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
    ha_buf_append_u8(&j->out, '[');
    for (size_t i = 0; i < n; i++) {
        ha_buf_append_str(&j->out, i ? ",\"" : "\"");
        json_str(&j->out, names[i]);
        ha_buf_append_u8(&j->out, '"');
        free(names[i]);
    }
    free(names);
    ha_buf_append_str(&j->out, "]\n");
}

static void
dumps_free(void *arg)
{
    struct dumps_job *j = arg;

    ha_buf_free(&j->out);
    free(j);
}

void
ha_http_flame_dumps(struct ha_http_req *hr)
{
    struct dumps_job *j = calloc(1, sizeof(*j));

    if (j == NULL) {
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    j->datadir = ha_engine_datadir(hr->engine);
    if (ha_task_offload(dumps_run, dumps_free, j) != 0) {
        ha_http_req_stopped(hr);
        return;
    }
    if (ha_buf_failed(&j->out))
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
    else
        ha_http_req_body(hr, "application/json", j->out.data, j->out.len);
    dumps_free(j);
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

void
ha_http_flame_asset(struct ha_http_req *hr)
{
    const char *name = hr->path + strlen("/assets/");

    for (size_t i = 0; i < ha_http_n_assets; i++)
        if (strcmp(ha_http_assets[i].name, name) == 0) {
            ha_http_req_add_header(hr, "Cache-Control", "max-age=86400");
            ha_http_req_body(hr, ha_http_assets[i].content_type,
                             ha_http_assets[i].data, ha_http_assets[i].len);
            return;
        }
    ha_http_req_text(hr, 404, "Not Found", "no such asset\n");
}

void
ha_http_flame_page(struct ha_http_req *hr)
{
    ha_http_req_body(hr, "text/html; charset=utf-8", page, sizeof(page) - 1);
}
