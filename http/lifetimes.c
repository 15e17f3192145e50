/* SPDX-License-Identifier: MIT
 *
 * The /heap page's lifetime view's data (see lifetimes.h).
 */
#include "http/lifetimes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "engine/engine.h"
#include "heap/lifelogs.h"
#include "heap/profiles.h"
#include "http/calltree.h"
#include "http/flame.h"

#define LIFETIMES_PRODUCT "lifetimes.json"

struct life_job {
    struct ha_heap_profile *pr;      /* a reference held */
    const struct ha_lifetimes *l;    /* kept with pr */
};

static void
num_or_null(struct ha_buf *b, const char *key, double v)
{
    if (isnan(v))
        ha_buf_printf(b, ",\"%s\":null", key);
    else
        ha_buf_printf(b, ",\"%s\":%.4g", key, v);
}

static int
life_make(void *arg, struct ha_buf *b, char *err, size_t errlen)
{
    struct life_job *j = arg;
    const struct ha_lifetimes *l = j->l;
    double secs = l->seconds > 0 ? l->seconds : NAN;
    struct ha_calltree t;
    int rc = -1;

    if (ha_calltree_init(&t) != 0)
        goto oom;
    /* The log's stacks weigh what was freed from them (heap/logfile.h). */
    if (ha_http_flame_tree_add(&t, j->pr, 1, HA_AGG_INUSE_BYTES,
                               NULL) != 0)
        goto out;
    ha_buf_append_str(b, "{\"title\":\"");
    ha_json_str(b, j->pr->name);
    ha_buf_printf(b, "\",\"seconds\":%.3f,\"samples\":%llu,\"tick_ms\":%.9g",
                  l->seconds, (unsigned long long)l->samples,
                  (double)l->tick_ns / 1e6);
    num_or_null(b, "temp", l->temporary_share);
    ha_buf_append_str(b, ",\"top\":[");
    for (size_t i = 0; i < l->n_rows && i < HA_HTTP_LIFETIMES_ROWS; i++) {
        const struct ha_life_row *r = &l->rows[i];

        ha_buf_append_str(b, i ? ",{\"f\":\"" : "{\"f\":\"");
        ha_json_str(b, ha_life_str(l, r->key));
        ha_buf_printf(b, "\",\"bytes\":%.0f", r->bytes);
        num_or_null(b, "bps", r->bytes / secs);
        num_or_null(b, "ops", r->objects / secs);
        /* Milliseconds; null: under one tick of the clock. */
        num_or_null(b, "p50", r->lifetime_ns[0] / 1e6);
        num_or_null(b, "p90", r->lifetime_ns[1] / 1e6);
        num_or_null(b, "p99", r->lifetime_ns[2] / 1e6);
        num_or_null(b, "max", r->lifetime_ns[3] / 1e6);
        ha_buf_append_str(b, ",\"free\":\"");
        ha_json_str(b, r->free_site != 0 ? ha_life_str(l, r->free_site) : "");
        ha_buf_printf(b, "\",\"other\":%.4f", r->other_thread_share);
        num_or_null(b, "temp", r->temporary_share);
        ha_buf_printf(b, ",\"temp_min\":%.4f,\"temp_max\":%.4f",
                      r->temporary_min, r->temporary_max);
        if (r->why != HA_LIFE_KNOWN) {
            char note[512];

            ha_lifetimes_note(l, r, note, sizeof(note));
            ha_buf_append_str(b, ",\"temp_note\":\"");
            ha_json_str(b, note);
            ha_buf_append_u8(b, '"');
        }
        ha_buf_append_u8(b, '}');
    }
    ha_buf_append_str(b, "],\"tree\":");
    if (ha_calltree_json(&t, b, false,
                         t.nodes[0].v * HA_CALLTREE_MIN_SHARE) != 0)
        goto out;
    ha_buf_append_str(b, "}\n");
    rc = ha_buf_failed(b) ? -1 : 0;
out:
    ha_calltree_free(&t);
    if (rc == 0)
        return 0;
oom:
    ha_err_set(err, errlen, "out of memory");
    return -1;
}

static void
life_free(void *arg)
{
    struct life_job *j = arg;

    ha_heap_profile_put(j->pr);
    free(j);
}

void
ha_http_lifetimes_data(struct ha_http_req *hr)
{
    struct ha_heap *heap = ha_engine_heap(hr->engine);
    struct ha_heap_profile *pr = NULL;
    const struct ha_lifetimes *l;
    struct life_job *j;
    struct ha_product made;
    char *log = NULL, err[1024], msg[1100];
    int rc;

    if (ha_http_req_param(hr, "log", &log, err, sizeof(err)) < 0) {
        snprintf(msg, sizeof(msg), "%s\n", err);
        ha_http_req_text(hr, 400, "Bad Request", msg);
        goto done;
    }
    if (log == NULL || log[0] == '\0') {
        ha_http_req_text(hr, 400, "Bad Request",
                         "log: the name of a lifetime log in the datadir "
                         "(/heap/logs.json lists them; jemalloc-log_now "
                         "writes one)\n");
        goto done;
    }
    if ((rc = ha_heap_log_get(heap, log, &pr, err, sizeof(err))) != 0 ||
        (rc = ha_heap_profile_lifetimes(pr, false, &l, err, sizeof(err))) !=
            0) {
        ha_http_req_heap_failed(hr, rc, err);
        goto done;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        goto done;
    }
    j->pr = ha_heap_profile_ref(pr);
    j->l = l;
    rc = ha_heap_profile_product(pr, LIFETIMES_PRODUCT, true, life_make, j,
                                 life_free, &made, err, sizeof(err));
    if (rc == HA_HEAP_STOPPED) {
        ha_http_req_stopped(hr);
    } else if (rc != 0) {
        snprintf(msg, sizeof(msg), "%s\n", err);
        ha_http_req_text(hr, 500, "Internal Server Error", msg);
    } else {
        ha_http_req_body(hr, "application/json", made.bytes->data,
                         made.bytes->len);
        ha_product_done(&made);
    }
done:
    ha_heap_profile_put(pr);
    free(log);
}
