/* SPDX-License-Identifier: MIT
 *
 * The /heap flame graph page and its data (see flame.h).
 */
#include "http/flame.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "engine/engine.h"
#include "heap/dumps.h"
#include "heap/fragmentation.h"
#include "heap/profiles.h"
#include "http/assets.h"
#include "http/calltree.h"
#include "http/request.h"
#include "prof/aggregate.h"
#include "prof/fragment.h"
#include "prof/syms.h"

#define TOP_ROWS 40        /* rows of the top functions table */

int
ha_http_flame_tree_add(struct ha_calltree *t,
                       const struct ha_heap_profile *pr, int weight,
                       enum ha_agg_value value,
                       const struct ha_wrap_set *wrappers)
{
    struct ha_agg_walker *w = ha_agg_walker_new_with(&pr->syms, wrappers);
    const struct ha_syms *syms = &pr->syms;
    char addr[24];

    if (w == NULL)
        return -1;
    for (size_t i = 0; i < pr->p.n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(&pr->p, i);
        size_t n = pr->p.stacks[i].n_frames, at = 0;
        size_t start = ha_agg_walker_stack(w, &pr->p, i);
        double bytes = ha_agg_stack_value(&pr->p.stacks[i], value);
        struct ha_agg_cut cut;

        if (start == SIZE_MAX)
            goto oom;
        if (bytes == 0)
            continue;
        ha_agg_walker_cut(w, &cut);
        t->nodes[0].v += bytes;
        for (size_t j = n; j-- > start;) {
            const struct ha_syms_addr *sa = ha_agg_walker_frame(w, j);
            uint32_t frames = sa != NULL && sa->n > 0 ? sa->n : 1;
            /* The site's frame: the wrapper code inlined below the site
             * is not drawn (the leaves are sites, as in heap_top). */
            uint32_t low = j == start && cut.skip < frames ? cut.skip : 0;

            if (f[j] >= HA_AGG_HIGH_ADDR)
                continue;
            for (uint32_t q = frames; q-- > low;) {
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

/* "frag": the call site pinning the most free regions of a small size
 * class, from the bins recorded with pr (heap_fragmentation's first
 * attributed row), so the page points at it; nothing without bins. */
static void
frag_json(const struct ha_heap_profile *pr, const char *dump,
          struct ha_buf *b)
{
    struct ha_frag f;
    const struct ha_frag_row *top = NULL;
    char err[128];

    if (pr->mem == NULL || pr->mem->n_bins == 0 ||
        ha_heap_fragmentation_compute(pr, false, &f, err, sizeof(err)) != 0)
        return;
    for (size_t i = 0; i < f.n_rows && top == NULL; i++)
        if (f.rows[i].name != 0)
            top = &f.rows[i];
    if (top != NULL && top->free_bytes > 0) {
        const struct ha_dumpmem_bin *bin = &f.bins[top->bin];
        double util = ha_frag_utilization(bin);

        ha_buf_append_str(b, ",\"frag\":{\"f\":\"");
        ha_json_str(b, ha_strtab_str(&f.names, top->name));
        ha_buf_printf(b,
                      "\",\"size\":%llu,\"free\":%.0f,\"class_free\":"
                      "%.0f,\"util\":%.4f,\"total\":%.0f,\"query\":\"",
                      (unsigned long long)bin->size, top->free_bytes,
                      f.class_free[top->bin], util < 0 ? 0 : util,
                      f.total_free);
        ha_buf_append_str(b, "SELECT * FROM heap_fragmentation('");
        ha_json_str(b, dump);
        ha_buf_append_str(b, "')\"}");
    }
    ha_frag_free(&f);
}

/* ------------------------------------------------------------------
 * Routes
 * ------------------------------------------------------------------ */

/* data.json of a profile (and a base), made off the loop and kept with
 * a dump's profile (heap/products.h). */
#define FLAME_PRODUCT "flame.json"
#define FLAME_ALLOC_PRODUCT "flame.alloc.json"

struct data_job {
    struct ha_heap_profile *pr, *pb; /* references held */
    char *title;
    char dump[NAME_MAX + 1];         /* as heap_fragmentation takes it */
    bool alloc;                      /* weighted by bytes allocated */
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
    enum ha_agg_value value = j->alloc ? HA_AGG_ALLOC_BYTES
                                       : HA_AGG_INUSE_BYTES;

    if (ha_calltree_init(&t) != 0)
        goto out;
    tree_ok = true;
    /* A diff cuts both dumps with the current one's wrappers (one rule
     * for both sides). */
    if (ha_http_flame_tree_add(&t, pr, 1, value, NULL) != 0 ||
        (pb != NULL && ha_http_flame_tree_add(&t, pb, -1, value,
                                              pr->syms.wrappers) != 0))
        goto out;
    /* The top table: heap_top's rows, or the diff's (built here, never
     * kept: the profile's own aggregate is the loop's to set). */
    agg.wrappers = pr->syms.wrappers;
    if (ha_agg_add(&agg, &pr->p, &pr->syms, 1, false, why, sizeof(why)) !=
            0 ||
        (pb != NULL && ha_agg_add(&agg, &pb->p, &pb->syms, -1, false, why,
                                  sizeof(why)) != 0))
        goto out;
    ha_agg_sort(&agg, j->alloc ? HA_AGG_BY_ALLOC_FLAT_BYTES
                               : HA_AGG_BY_FLAT_BYTES);
    ha_buf_append_str(b, "{\"title\":\"");
    ha_json_str(b, j->title);
    /* "alloc": whether the dumps carry the cumulative counters, so the
     * page can say why an allocation view is empty. */
    ha_buf_printf(b, "\",\"diff\":%s,\"weight\":\"%s\",\"alloc\":%s,"
                     "\"total\":%.0f,\"top\":[",
                  pb != NULL ? "true" : "false",
                  j->alloc ? "alloc" : "inuse", agg.has_alloc ? "true" : "false",
                  j->alloc ? agg.alloc_total_bytes : agg.total_bytes);
    for (size_t i = 0, shown = 0; i < agg.n_rows && shown < TOP_ROWS; i++) {
        const struct ha_agg_row *r = &agg.rows[i];
        double flat = j->alloc ? r->alloc_flat_bytes : r->flat_bytes;
        double cum = j->alloc ? r->alloc_cum_bytes : r->cum_bytes;

        /* A stack with no weight of this kind says nothing here. */
        if (flat == 0 && cum == 0)
            continue;
        ha_buf_append_str(b, shown++ ? ",{\"f\":\"" : "{\"f\":\"");
        ha_json_str(b, ha_agg_name(&agg, r));
        ha_buf_printf(b, "\",\"flat\":%.0f,\"cum\":%.0f", flat, cum);
        if (ha_agg_wrapper(&agg, r) != NULL) {
            ha_buf_append_str(b, ",\"w\":\"");
            ha_json_str(b, ha_agg_wrapper(&agg, r));
            ha_buf_append_str(b, "\"");
        }
        ha_buf_append_str(b, "}");
    }
    ha_buf_append_str(b, "]");
    if (pb == NULL)
        frag_json(pr, j->dump, b);
    ha_buf_append_str(b, ",\"tree\":");
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

void
ha_http_flame_data(struct ha_http_req *hr)
{
    struct ha_heap *heap = ha_engine_heap(hr->engine);
    char *dump = NULL, *base = NULL, *weight = NULL, err[1024], msg[1100];
    struct ha_heap_profile *pr = NULL, *pb = NULL;
    struct data_job *j = NULL;
    struct ha_product made;
    size_t tl;
    int rc;

    if (ha_http_req_param(hr, "dump", &dump, err, sizeof(err)) < 0 ||
        ha_http_req_param(hr, "base", &base, err, sizeof(err)) < 0 ||
        ha_http_req_param(hr, "weight", &weight, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "%s\n", err);
        ha_http_req_text(hr, 400, "Bad Request", msg);
        goto done;
    }
    if (weight != NULL && weight[0] != '\0' && strcmp(weight, "inuse") != 0 &&
        strcmp(weight, "alloc") != 0) {
        ha_http_req_text(hr, 400, "Bad Request",
                         "weight: 'inuse' (bytes in use, the default) or "
                         "'alloc' (bytes allocated since profiling began: "
                         "prof_accum)\n");
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
    if (ha_http_req_dump_refused(hr, dump) ||
        ha_http_req_dump_refused(hr, base))
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
        ha_http_req_heap_failed(hr, rc, err);
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
    ha_strlcpy(j->dump, dump != NULL ? dump : HA_HEAP_LIVE, sizeof(j->dump));
    j->pr = ha_heap_profile_ref(pr);
    j->pb = ha_heap_profile_ref(pb);
    j->alloc = weight != NULL && strcmp(weight, "alloc") == 0;
    /* A dump's page data never changes: kept with its profile. */
    rc = ha_heap_profile_product(pr,
                                 j->alloc ? FLAME_ALLOC_PRODUCT
                                          : FLAME_PRODUCT,
                                 pb == NULL, data_make, j, data_free, &made,
                                 err, sizeof(err));
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
    free(weight);
}

static int
cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct ha_dump_entry *)a)->name,
                  ((const struct ha_dump_entry *)b)->name);
}

/* The datadir's dump names (logs: the lifetime logs' alone) as a JSON
 * array (heap/dumps.h lists them off the loop). */
static void
list_names(struct ha_http_req *hr, bool logs)
{
    struct ha_dump_list l;
    struct ha_buf out = HA_BUF_INIT;
    char err[256];
    size_t shown = 0;
    int rc;

    if ((rc = ha_dumps_list(ha_engine_heap(hr->engine),
                            logs ? HA_DUMPS_LOGS : 0, &l, err,
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
        if (l.e[i].d.log != logs)
            continue;
        ha_buf_append_str(&out, shown++ ? ",\"" : "\"");
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

void
ha_http_flame_dumps(struct ha_http_req *hr)
{
    list_names(hr, false);
}

void
ha_http_flame_logs(struct ha_http_req *hr)
{
    list_names(hr, true);
}

/* The entry of set (n entries) called name, or NULL. */
static const struct ha_http_asset *
asset_find(const struct ha_http_asset *set, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(set[i].name, name) == 0)
            return &set[i];
    return NULL;
}

void
ha_http_flame_asset(struct ha_http_req *hr)
{
    const struct ha_http_asset *a =
        asset_find(ha_http_assets, ha_http_n_assets,
                   hr->path + strlen("/assets/"));

    if (a == NULL) {
        ha_http_req_text(hr, 404, "Not Found", "no such asset\n");
        return;
    }
    ha_http_req_add_header(hr, "Cache-Control", "max-age=86400");
    ha_http_req_body(hr, a->content_type, a->data, a->len);
}

/* The page is http/heap.html, embedded at build time (http/pages.c). */
void
ha_http_flame_page(struct ha_http_req *hr)
{
    const struct ha_http_asset *a =
        asset_find(ha_http_pages, ha_http_n_pages, "heap.html");

    if (a == NULL) { /* a build without the page: cannot happen */
        ha_http_req_text(hr, 500, "Internal Server Error", "no page\n");
        return;
    }
    ha_http_req_body(hr, a->content_type, a->data, a->len);
}
