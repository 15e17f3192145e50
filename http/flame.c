/* SPDX-License-Identifier: MIT
 *
 * The /heap flame graph page and its data (see flame.h).
 */
#include "http/flame.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "engine/engine.h"
#include "heap/dumps.h"
#include "heap/profiles.h"
#include "http/assets.h"
#include "http/calltree.h"
#include "http/request.h"
#include "prof/aggregate.h"
#include "prof/dumpfile.h"
#include "prof/syms.h"

#define TOP_ROWS 40        /* rows of the top functions table */

/* Adds every stack of pr, root first, with weight +1 (current) or -1
 * (base): v grows by the bytes either way, d by weight * bytes. */
static int
tree_add(struct ha_calltree *t, const struct ha_heap_profile *pr, int weight)
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
                if ((at = ha_calltree_child(t, at, name)) == SIZE_MAX)
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

/* ------------------------------------------------------------------
 * Routes
 * ------------------------------------------------------------------ */

/* data.json of a profile (and a base), made off the loop and kept with
 * a dump's profile (heap/products.h). */
#define FLAME_PRODUCT "flame.json"

struct data_job {
    struct ha_heap_profile *pr, *pb; /* references held */
    char *title;
};

static int
data_make(void *arg, struct ha_buf *b, char *err, size_t errlen)
{
    struct data_job *j = arg;
    struct ha_heap_profile *pr = j->pr, *pb = j->pb;
    struct ha_agg agg = {0};
    struct ha_calltree t;
    char why[256];
    bool tree_ok = false;
    int rc = -1;
    if (ha_calltree_init(&t) != 0)
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
    ha_json_str(b, j->title);
    ha_buf_printf(b, "\",\"diff\":%s,\"total\":%.0f,\"top\":[",
                  pb != NULL ? "true" : "false", agg.total_bytes);
    for (size_t i = 0; i < agg.n_rows && i < TOP_ROWS; i++) {
        const struct ha_agg_row *r = &agg.rows[i];

        ha_buf_append_str(b, i ? ",{\"f\":\"" : "{\"f\":\"");
        ha_json_str(b, ha_agg_name(&agg, r));
        ha_buf_printf(b, "\",\"flat\":%.0f,\"cum\":%.0f}", r->flat_bytes,
                      r->cum_bytes);
    }
    ha_buf_append_str(b, "],\"tree\":");
    if (ha_calltree_json(&t, b, pb != NULL, t.nodes[0].v * HA_CALLTREE_MIN_SHARE) != 0)
        goto out;
    ha_buf_append_str(b, "}\n");
    if (!ha_buf_failed(b))
        rc = 0;
out:
    if (rc != 0)
        ha_err_set(err, errlen, "out of memory");
    if (tree_ok)
        ha_calltree_free(&t);
    ha_agg_free(&agg);
    return rc;
}

static void
data_free(void *arg)
{
    struct data_job *j = arg;

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
    struct ha_heap *heap = ha_engine_heap(hr->engine);
    char *dump = NULL, *base = NULL, err[1024], msg[1100];
    struct ha_heap_profile *pr = NULL, *pb = NULL;
    struct data_job *j = NULL;
    struct ha_product made;
    size_t tl;
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
    if ((rc = ha_heap_profile_get(heap, dump != NULL ? dump : HA_HEAP_LIVE,
                                  hr->admin, &pr, err, sizeof(err))) != 0 ||
        (base != NULL && (rc = ha_heap_profile_get(heap, base, hr->admin,
                                                   &pb, err,
                                                   sizeof(err))) != 0)) {
        if (rc == HA_HEAP_STOPPED) {
            ha_http_req_stopped(hr);
        } else {
            snprintf(msg, sizeof(msg), "%s\n", err);
            ha_http_req_text(hr, 404, "Not Found", msg);
        }
        goto done;
    }
    tl = strlen(dump != NULL ? dump : "live") +
         (base != NULL ? strlen(base) + 8 : 0) + 1;
    if ((j = calloc(1, sizeof(*j))) == NULL || (j->title = malloc(tl)) == NULL) {
        free(j);
        goto oom;
    }
    snprintf(j->title, tl, "%s%s%s", dump != NULL ? dump : "live",
             base != NULL ? " minus " : "", base != NULL ? base : "");
    j->pr = ha_heap_profile_ref(pr);
    j->pb = ha_heap_profile_ref(pb);
    /* A dump's page data never changes: kept with its profile. */
    rc = ha_heap_profile_product(pr, FLAME_PRODUCT, pb == NULL, data_make, j,
                                 data_free, &made, err, sizeof(err));
    if (rc == HA_HEAP_STOPPED) {
        ha_http_req_stopped(hr);
        goto done;
    }
    if (rc != 0)
        goto oom;
    ha_http_req_body(hr, "application/json", made.bytes->data,
                     made.bytes->len);
    ha_product_done(&made);
    goto done;
oom:
    ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
done:
    ha_heap_profile_put(pb);
    ha_heap_profile_put(pr);
    free(dump);
    free(base);
}

static int
cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct ha_dump_entry *)a)->name,
                  ((const struct ha_dump_entry *)b)->name);
}

/* The datadir's dump names as a JSON array (heap/dumps.h lists them off
 * the loop). */
void
ha_http_flame_dumps(struct ha_http_req *hr)
{
    struct ha_dump_list l;
    struct ha_buf out = HA_BUF_INIT;
    char err[256];
    int rc;

    if ((rc = ha_dumps_list(ha_engine_heap(hr->engine), 0, &l, err,
                            sizeof(err))) != 0) {
        if (rc == HA_HEAP_STOPPED)
            ha_http_req_stopped(hr);
        else
            ha_http_req_text(hr, 500, "Internal Server Error",
                             "out of memory\n");
        return;
    }
    if (l.n > 1)
        qsort(l.e, l.n, sizeof(*l.e), cmp_entry);
    ha_buf_append_u8(&out, '[');
    for (size_t i = 0; i < l.n; i++) {
        ha_buf_append_str(&out, i ? ",\"" : "\"");
        ha_json_str(&out, l.e[i].name);
        ha_buf_append_u8(&out, '"');
    }
    ha_buf_append_str(&out, "]\n");
    ha_dump_list_free(&l);
    if (ha_buf_failed(&out))
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
    else
        ha_http_req_body(hr, "application/json", out.data, out.len);
    ha_buf_free(&out);
}

static const char page[] =
    "<!doctype html>\n"
    "<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<title>heapadmin: heap profile</title>\n"
    "<link rel=\"stylesheet\" href=\"/assets/d3-flamegraph.css\">\n"
    "<style>body{font-family:sans-serif;margin:1em 2em}table{border-colla"
    "pse:collapse;margin-top:.5em}td,th{padding:2px 10px;text-align:right"
    ";border-bottom:1px solid #ddd}td.f,th.f{text-align:left;font-family:"
    "monospace}.grow{color:#b00}.shrink{color:#05b}#details{min-height:1."
    "5em;font-family:monospace}#err{color:#b00}.hide{display:none}#over t"
    "ext{font-size:11px}</style>\n"
    "</head><body>\n"
    "<h1>heapadmin heap profile</h1>\n"
    "<form id=\"pick\">view <select id=\"view\" name=\"view\"><option val"
    "ue=\"profile\">one profile</option><option value=\"growth\">growth o"
    "ver dumps</option></select>\n"
    "<span id=\"pick-profile\">profile <select id=\"dump\" name=\"dump\">"
    "<option value=\"\">live (admin)</option></select>\n"
    " minus base <select id=\"base\" name=\"base\"><option value=\"\">(no"
    "ne)</option></select></span>\n"
    "<span id=\"pick-growth\">the last <input id=\"last\" name=\"last\" s"
    "ize=\"4\" placeholder=\"32\"> dumps of <select id=\"kind\" name=\"ki"
    "nd\"><option value=\"\">any kind</option><option>manual</option><opt"
    "ion>interval</option><option>high-water</option><option>final</optio"
    "n></select></span>\n"
    " <button type=\"submit\">show</button></form>\n"
    "<p id=\"summary\"></p><p id=\"err\"></p>\n"
    "<p><input id=\"term\" placeholder=\"search (regular expression)\"> <"
    "button id=\"search\">search</button> <button id=\"clear\">clear</but"
    "ton> <button id=\"reset\">reset zoom</button></p>\n"
    "<div id=\"chart\"></div><p id=\"details\"></p>\n"
    "<div id=\"over-box\" class=\"hide\"><h2>Bytes at each dump</h2><svg "
    "id=\"over\"></svg></div>\n"
    "<h2 id=\"top-title\">Top functions</h2>\n"
    "<table id=\"top\"><thead><tr></tr></thead><tbody></tbody></table>\n"
    "<p><small>Flame graph by d3-flame-graph (Apache-2.0, <a href=\"/asse"
    "ts/LICENSE.d3-flame-graph.txt\">licence</a>) on d3 (ISC, <a href=\"/"
    "assets/LICENSE.d3.txt\">licence</a>), served by heapadmin.</small></"
    "p>\n"
    "<script src=\"/assets/d3.min.js\"></script>\n"
    "<script src=\"/assets/d3-flamegraph.min.js\"></script>\n"
    "<script>\n"
    "'use strict';\n"
    "const q = new URLSearchParams(location.search);\n"
    "const view = q.get('view') === 'growth' ? 'growth' : 'profile';\n"
    "const $ = id => document.getElementById(id);\n"
    "function fmt(b) { const a = Math.abs(b), u = ['B','KiB','MiB','GiB']"
    "; let i = 0, v = a; while (v >= 1024 && i < 3) { v /= 1024; i++; } r"
    "eturn (b < 0 ? '-' : '') + (i ? v.toFixed(1) : v) + ' ' + u[i]; }\n"
    "function opt(sel, name) { const o = document.createElement('option')"
    "; o.value = o.textContent = name; if (q.get(sel.name) === name) o.se"
    "lected = true; sel.appendChild(o); }\n"
    "function head(cols) { const tr = document.querySelector('#top thead "
    "tr'); cols.forEach((c, i) => { const th = document.createElement('th"
    "'); th.textContent = c; if (i === 0) th.className = 'f'; tr.appendCh"
    "ild(th); }); }\n"
    "function row(cells, cls) { const tr = document.createElement('tr'); "
    "cells.forEach((c, i) => { const td = document.createElement('td'); t"
    "d.textContent = c; td.className = i === 0 ? 'f' : (cls || ''); tr.ap"
    "pendChild(td); }); document.querySelector('#top tbody').appendChild("
    "tr); }\n"
    "$('view').value = view;\n"
    "$('last').value = q.get('last') || '';\n"
    "$('kind').value = q.get('kind') || '';\n"
    "$(view === 'growth' ? 'pick-profile' : 'pick-growth').className = 'h"
    "ide';\n"
    "$('view').onchange = () => { $('pick-profile').className = $('view')"
    ".value === 'growth' ? 'hide' : ''; $('pick-growth').className = $('v"
    "iew').value === 'growth' ? '' : 'hide'; };\n"
    "// Absolute URLs without the page's user:password, which fetch() ref"
    "uses;\n"
    "// the browser sends the credentials it authenticated the page with."
    "\n"
    "const base = location.origin;\n"
    "fetch(base + '/heap/dumps.json').then(r => r.json()).then(list => { "
    "for (const n of list) { opt($('dump'), n); opt($('base'), n); } });"
    "\n"
    "function flame(tree, label, diff) {\n"
    "  const width = Math.max(600, document.body.clientWidth - 40);\n"
    "  const chart = flamegraph.default().width(width).cellHeight(18).min"
    "FrameSize(2).transitionDuration(300).sort(true).setDetailsElement($("
    "'details')).label(label);\n"
    "  if (diff) chart.computeDelta(true).setColorMapper(flamegraph.color"
    "Mapper.differentialColorMapper);\n"
    "  d3.select('#chart').datum(tree).call(chart);\n"
    "  $('search').onclick = () => chart.search($('term').value);\n"
    "  $('term').onkeydown = e => { if (e.key === 'Enter') chart.search(e"
    ".target.value); };\n"
    "  $('clear').onclick = () => chart.clear();\n"
    "  $('reset').onclick = () => chart.resetZoom();\n"
    "}\n"
    "function profile(data) {\n"
    "  const total = data.tree.v || 1;\n"
    "  $('summary').textContent = data.title + ': ' + fmt(data.total) + ("
    "data.diff ? ' (red: grew, blue: shrank, orange: new)' : ' in use');"
    "\n"
    "  flame(data.tree, d => d.data.n + ': ' + fmt(d.data.v) + ' (' + (10"
    "0 * d.data.v / total).toFixed(2) + '%)' + (data.diff ? ', ' + (d.del"
    "ta >= 0 ? '+' : '') + fmt(d.delta || 0) : ''), data.diff);\n"
    "  head(['function', 'flat', 'flat %', 'cum', 'cum %']);\n"
    "  for (const r of data.top) row([r.f, fmt(r.flat), (100 * r.flat / ("
    "data.total || 1)).toFixed(1), fmt(r.cum), (100 * r.cum / (data.total"
    " || 1)).toFixed(1)], data.diff ? (r.flat >= 0 ? 'grow' : 'shrink') :"
    " '');\n"
    "}\n"
    "// The ranking's first rows, bytes at each dump against its time.\n"
    "function over(data) {\n"
    "  const lines = data.top.filter(r => r.series);\n"
    "  if (!lines.length || data.dumps.length < 2) return;\n"
    "  $('over-box').className = '';\n"
    "  const w = Math.max(600, document.body.clientWidth - 40), h = 260, "
    "m = {l: 70, r: 260, t: 10, b: 30};\n"
    "  const svg = d3.select('#over').attr('width', w).attr('height', h);"
    "\n"
    "  const x = d3.scaleTime().domain(d3.extent(data.dumps, d => new Dat"
    "e(d.t * 1000))).range([m.l, w - m.r]);\n"
    "  const y = d3.scaleLinear().domain([0, d3.max(lines, r => d3.max(r."
    "series)) || 1]).nice().range([h - m.b, m.t]);\n"
    "  const color = d3.scaleOrdinal(d3.schemeCategory10);\n"
    "  svg.append('g').attr('transform', 'translate(0,' + (h - m.b) + ')'"
    ").call(d3.axisBottom(x).ticks(6));\n"
    "  svg.append('g').attr('transform', 'translate(' + m.l + ',0)').call"
    "(d3.axisLeft(y).ticks(5).tickFormat(fmt));\n"
    "  const line = d3.line().x((v, k) => x(new Date(data.dumps[k].t * 10"
    "00))).y(v => y(v));\n"
    "  lines.forEach((r, i) => {\n"
    "    svg.append('path').attr('class', 'series').attr('fill', 'none')."
    "attr('stroke', color(i)).attr('stroke-width', 2).attr('d', line(r.se"
    "ries)).append('title').text(r.f);\n"
    "    svg.append('text').attr('x', w - m.r + 8).attr('y', m.t + 14 * i"
    " + 10).attr('fill', color(i)).text(r.rank + '. ' + (r.f.length > 36 "
    "? r.f.slice(0, 35) + '\\u2026' : r.f));\n"
    "  });\n"
    "}\n"
    "function growth(data) {\n"
    "  const total = data.tree.v || 1, n = data.dumps.length;\n"
    "  $('summary').textContent = 'growth over ' + n + ' dumps, ' + (data"
    ".hours || 0).toFixed(2) + ' h (' + data.title + '): ' + fmt(data.tot"
    "al[0] || 0) + ' to ' + fmt(data.total[n - 1] || 0) + ' in use; width"
    "s are bytes per hour of growing stacks';\n"
    "  flame(data.tree, d => d.data.n + ': ' + fmt(d.data.v) + '/h (' + ("
    "100 * d.data.v / total).toFixed(2) + '%)', false);\n"
    "  over(data);\n"
    "  $('top-title').textContent = 'Likeliest leaks (heap_growth)';\n"
    "  head(['function', 'rank', 'per hour', 'R\\u00b2', 'grew at', 'patt"
    "ern', 'first', 'last']);\n"
    "  for (const r of data.top) row([r.f, r.rank, r.bph === null ? '' : "
    "fmt(r.bph) + '/h', r.r2 === null ? '' : r.r2.toFixed(2), r.grew === "
    "null ? '' : (100 * r.grew).toFixed(0) + '%', r.pattern, fmt(r.first)"
    ", fmt(r.last)], r.pattern === 'steady' ? 'grow' : '');\n"
    "}\n"
    "const url = view === 'growth'\n"
    "  ? base + '/heap/growth.json?' + new URLSearchParams({last: q.get('"
    "last') || '', since: q.get('since') || '', until: q.get('until') || "
    "'', kind: q.get('kind') || ''})\n"
    "  : base + '/heap/data.json?' + new URLSearchParams({dump: q.get('du"
    "mp') || '', base: q.get('base') || ''});\n"
    "fetch(url).then(r => r.ok ? r.json() : r.text().then(t => { throw ne"
    "w Error(t); })).then(data => {\n"
    "  (view === 'growth' ? growth : profile)(data);\n"
    "  document.body.setAttribute('data-rendered', 'yes');\n"
    "}).catch(e => { $('err').textContent = String(e.message || e); docum"
    "ent.body.setAttribute('data-rendered', 'error'); });\n"
    "</script>\n"
    "</body></html>\n";

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
