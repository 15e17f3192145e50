/* SPDX-License-Identifier: MIT
 *
 * The /heap page's growth view (see growth.h).
 */
#include "http/growth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/task.h"
#include "core/util.h"
#include "engine/engine.h"
#include "http/calltree.h"
#include "prof/aggregate.h"
#include "prof/dumpseries.h"
#include "prof/growth.h"
#include "heap/growth.h"
#include "heap/profiles.h"

/* The figures of one dump for the series: its total and the bytes of
 * the ranking's first rows, picked from its top table on the worker. */
struct pick_job {
    struct ha_heap_growth *g;       /* references held for the job: */
    struct ha_heap_profile *pr;     /* names are g's, agg is pr's */
    const struct ha_agg *agg;       /* pr's, kept with it */
    const char *names[HA_HTTP_GROWTH_SERIES];
    size_t n_names;
    double total;
    double bytes[HA_HTTP_GROWTH_SERIES];
};

static void
pick_run(void *arg)
{
    struct pick_job *j = arg;

    j->total = j->agg->total_bytes;
    for (size_t i = 0; i < j->agg->n_rows; i++) {
        const struct ha_agg_row *r = &j->agg->rows[i];
        const char *name = ha_agg_name(j->agg, r);

        for (size_t k = 0; k < j->n_names; k++)
            if (strcmp(name, j->names[k]) == 0)
                j->bytes[k] += r->flat_bytes;
    }
}

static void
pick_free(void *arg)
{
    struct pick_job *j = arg;

    ha_heap_profile_put(j->pr);
    ha_heap_growth_put(j->g);
    free(j);
}

/* The JSON, built on the worker from the result and the series. */
struct page_job {
    struct ha_heap_growth *g;       /* a reference held for the job */
    double *total;                  /* [g->n_dumps] */
    double *series;                 /* [n_series][g->n_dumps] */
    size_t n_series;
};

/* The page's JSON of a series, kept with it (heap/products.h). */
#define GROWTH_PRODUCT "growth.json"

static void
json_num(struct ha_buf *b, double v)
{
    if (isnan(v) || isinf(v))
        ha_buf_append_str(b, "null");
    else
        ha_buf_printf(b, "%.6g", v);
}

static void
json_bytes(struct ha_buf *b, double v)
{
    ha_buf_printf(b, "%.0f", v);
}

/* The tree of growing stacks: each stack (root first, ';'-joined, as
 * heap_growth_stacks gives it) weighs its bytes per hour. */
static int
growth_tree(const struct ha_growth *stacks, struct ha_buf *b)
{
    struct ha_calltree t;
    char *frame = NULL;
    size_t cap = 0;
    int rc = -1;

    if (ha_calltree_init(&t) != 0)
        goto out;
    for (size_t i = 0; i < stacks->n_rows; i++) {
        const struct ha_growth_row *r = &stacks->rows[i];
        const char *s = ha_growth_key(stacks, r);
        double v = r->bytes_per_hour;
        size_t at = 0;

        if (isnan(v) || v <= 0)
            continue;
        t.nodes[0].v += v;
        while (*s != '\0') {
            const char *e = strchr(s, ';');
            size_t len = e != NULL ? (size_t)(e - s) : strlen(s);

            if (len + 1 > cap) {
                char *nf = realloc(frame, len + 64);

                if (nf == NULL)
                    goto out;
                frame = nf;
                cap = len + 64;
            }
            memcpy(frame, s, len);
            frame[len] = '\0';
            if ((at = ha_calltree_child(&t, at, frame)) == SIZE_MAX)
                goto out;
            t.nodes[at].v += v;
            s += len + (e != NULL ? 1 : 0);
        }
    }
    rc = ha_calltree_json(&t, b, false, t.nodes[0].v * HA_CALLTREE_MIN_SHARE);
out:
    ha_calltree_free(&t);
    free(frame);
    return rc;
}

static int
page_make(void *arg, struct ha_buf *b, char *err, size_t errlen)
{
    struct page_job *j = arg;
    const struct ha_heap_growth *g = j->g;
    const struct ha_growth *f = &g->funcs;

    ha_buf_append_str(b, "{\"title\":\"");
    ha_json_str(b, g->first_dump);
    ha_buf_append_str(b, " to ");
    ha_json_str(b, g->last_dump);
    ha_buf_append_str(b, "\",\"hours\":");
    json_num(b, g->hours);
    if (g->skipped != NULL) {
        /* The dumps left out of the series, each with why. */
        ha_buf_append_str(b, ",\"skipped\":\"");
        ha_json_str(b, g->skipped);
        ha_buf_append_u8(b, '"');
    }
    ha_buf_append_str(b, ",\"dumps\":[");
    for (size_t k = 0; k < g->n_dumps; k++) {
        ha_buf_append_str(b, k ? ",{\"n\":\"" : "{\"n\":\"");
        ha_json_str(b, g->dumps[k]);
        ha_buf_printf(b, "\",\"t\":%.3f}", g->t_s[k]);
    }
    ha_buf_append_str(b, "],\"total\":[");
    for (size_t k = 0; k < g->n_dumps; k++) {
        if (k)
            ha_buf_append_u8(b, ',');
        json_bytes(b, j->total[k]);
    }
    ha_buf_append_str(b, "],\"top\":[");
    for (size_t i = 0; i < f->n_rows && i < HA_HTTP_GROWTH_TOP; i++) {
        const struct ha_growth_row *r = &f->rows[i];

        ha_buf_printf(b, "%s{\"rank\":%zu,\"f\":\"", i ? "," : "", i + 1);
        ha_json_str(b, ha_growth_key(f, r));
        ha_buf_append_str(b, "\",\"bph\":");
        json_num(b, r->bytes_per_hour);
        ha_buf_append_str(b, ",\"r2\":");
        json_num(b, r->r2);
        ha_buf_append_str(b, ",\"grew\":");
        json_num(b, r->steps > 0 ? (double)r->grew / r->steps : NAN);
        ha_buf_printf(b, ",\"pattern\":\"%s\",\"first\":",
                      ha_growth_pattern_name(r->pattern));
        json_bytes(b, r->first_bytes);
        ha_buf_append_str(b, ",\"last\":");
        json_bytes(b, r->last_bytes);
        if (i < j->n_series) {
            ha_buf_append_str(b, ",\"series\":[");
            for (size_t k = 0; k < g->n_dumps; k++) {
                if (k)
                    ha_buf_append_u8(b, ',');
                json_bytes(b, j->series[i * g->n_dumps + k]);
            }
            ha_buf_append_u8(b, ']');
        }
        ha_buf_append_u8(b, '}');
    }
    ha_buf_append_str(b, "],\"tree\":");
    if (growth_tree(&g->stacks, b) != 0)
        goto oom;
    ha_buf_append_str(b, "}\n");
    if (ha_buf_failed(b))
        goto oom;
    return 0;
oom:
    ha_err_set(err, errlen, "out of memory");
    return -1;
}

static void
page_free(void *arg)
{
    struct page_job *j = arg;

    ha_heap_growth_put(j->g);
    free(j->total);
    free(j->series);
    free(j);
}

/* A series argument from the query: digits are unix seconds (or, for
 * last, a count), anything else a dump name or a date. */
static void
to_arg(const char *v, struct ha_dumpseries_arg *a)
{
    char *end;

    memset(a, 0, sizeof(*a));
    if (v == NULL)
        return;
    a->present = true;
    a->text = v;
    if (*v >= '0' && *v <= '9') {
        long long n = strtoll(v, &end, 10);

        if (*end == '\0') {
            a->is_int = true;
            a->i = n;
        }
    }
}

/* Fills j's per-dump figures: each dump's profile and top table (cached,
 * or loaded off the loop), then a pick on the worker. Returns 0,
 * HA_HEAP_ERROR (err set) or HA_HEAP_STOPPED. */
static int
fill_series(struct ha_http_req *hr, struct ha_heap_growth *g,
            struct page_job *j, char *err, size_t errlen)
{
    struct ha_heap *heap = ha_engine_heap(hr->engine);
    const struct ha_growth *f = &g->funcs;
    int rc;

    j->n_series = f->n_rows < HA_HTTP_GROWTH_SERIES ? f->n_rows
                                                    : HA_HTTP_GROWTH_SERIES;
    j->total = calloc(g->n_dumps ? g->n_dumps : 1, sizeof(*j->total));
    j->series = calloc((j->n_series ? j->n_series : 1) *
                           (g->n_dumps ? g->n_dumps : 1),
                       sizeof(*j->series));
    if (j->total == NULL || j->series == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    for (size_t k = 0; k < g->n_dumps; k++) {
        struct pick_job *p = calloc(1, sizeof(*p));

        if (p == NULL) {
            ha_err_set(err, errlen, "out of memory");
            return HA_HEAP_ERROR;
        }
        p->g = g;
        g->refs++;
        if ((rc = ha_heap_profile_get(heap, g->dumps[k], hr->admin, &p->pr,
                                      err, errlen)) != 0 ||
            (rc = ha_heap_profile_top(p->pr, &p->agg, err, errlen)) != 0) {
            pick_free(p);
            return rc;
        }
        p->n_names = j->n_series;
        for (size_t i = 0; i < j->n_series; i++)
            p->names[i] = ha_growth_key(f, &f->rows[i]);
        /* On -1 the job is pick_free's: never touch it again. */
        if (ha_task_offload(pick_run, pick_free, p) != 0)
            return HA_HEAP_STOPPED;
        j->total[k] = p->total;
        for (size_t i = 0; i < j->n_series; i++)
            j->series[i * g->n_dumps + k] = p->bytes[i];
        pick_free(p);
    }
    return 0;
}

void
ha_http_growth_data(struct ha_http_req *hr)
{
    static const char *const names[] = {"since", "until", "kind", "last"};
    char *v[4] = {NULL, NULL, NULL, NULL}, err[1024], msg[1100], dflt[24];
    struct ha_dumpseries_arg args[3];
    struct ha_heap_growth *g = NULL;
    struct page_job *j = NULL;
    const struct ha_buf *kept;
    struct ha_product made;
    int rc;

    for (int i = 0; i < 4; i++) {
        if (ha_http_req_param(hr, names[i], &v[i], err, sizeof(err)) < 0) {
            snprintf(msg, sizeof(msg), "%s\n", err);
            ha_http_req_text(hr, 400, "Bad Request", msg);
            goto done;
        }
        if (v[i] != NULL && v[i][0] == '\0') {
            free(v[i]);
            v[i] = NULL;
        }
    }
    if (v[3] != NULL && (v[0] != NULL || v[1] != NULL)) {
        ha_http_req_text(hr, 400, "Bad Request",
                         "last=N (the newest process's last N dumps) or "
                         "since=/until= (dump names or times), not both\n");
        goto done;
    }
    if (v[3] != NULL) {
        to_arg(v[3], &args[0]);
        if (!args[0].is_int) {
            ha_http_req_text(hr, 400, "Bad Request",
                             "last: a number of dumps, such as last=12\n");
            goto done;
        }
    } else if (v[0] == NULL && v[1] == NULL) {
        snprintf(dflt, sizeof(dflt), "%d", HA_HTTP_GROWTH_DEFAULT_LAST);
        to_arg(dflt, &args[0]);
    } else {
        to_arg(v[0], &args[0]);
    }
    to_arg(v[1], &args[1]);
    to_arg(v[2], &args[2]);
    if ((rc = ha_heap_growth_get(ha_engine_heap(hr->engine), hr->admin,
                                 args, &g, err, sizeof(err))) != 0)
        goto failed;
    /* A series' page never changes: kept with its result. */
    if ((kept = ha_products_find(&g->products, GROWTH_PRODUCT)) != NULL) {
        ha_http_req_body(hr, "application/json", kept->data, kept->len);
        goto done;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL)
        goto oom;
    j->g = g;
    g->refs++;
    if ((rc = fill_series(hr, g, j, err, sizeof(err))) != 0)
        goto failed;
    rc = ha_products_get(&g->products, GROWTH_PRODUCT, true, page_make, j,
                         page_free, &made, err, sizeof(err));
    j = NULL; /* page_free's now */
    if (rc == HA_HEAP_STOPPED)
        goto failed;
    if (rc != 0)
        goto oom;
    ha_http_req_body(hr, "application/json", made.bytes->data,
                     made.bytes->len);
    ha_product_done(&made);
    goto done;
failed:
    ha_http_req_heap_failed(hr, rc, err);
    goto done;
oom:
    ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
done:
    if (j != NULL)
        page_free(j);
    ha_heap_growth_put(g);
    for (int i = 0; i < 4; i++)
        free(v[i]);
}
