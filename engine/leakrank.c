/* SPDX-License-Identifier: MIT
 *
 * A finished series ranked unattended (see leakrank.h).
 */
#include "engine/leakrank.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "heap/growth.h"
#include "heap/profmetrics.h"
#include "prof/breakdown.h"
#include "prof/dumpname.h"
#include "prof/dumpseries.h"

struct ha_leakrank {
    struct ha_heap *heap;
    struct ha_task task; /* the ranking under way */
    bool running;
    char first[PATH_MAX], last[PATH_MAX]; /* its series */
    bool pending;                         /* a series waits for it: */
    char next_first[PATH_MAX], next_last[PATH_MAX];
};

static void rank_start(struct ha_leakrank *rk);

/* The task's body: heap_growth('first', 'last'), its top sites to the
 * metrics. */
static void
rank_body(void *arg)
{
    struct ha_leakrank *rk = arg;
    struct ha_dumpseries_arg args[3];
    struct ha_heap_growth *g = NULL;
    struct ha_dump_name d;
    char err[1024], rate[32];
    int rc;

    memset(args, 0, sizeof(args));
    args[0].present = args[1].present = true;
    args[0].text = rk->first;
    args[1].text = rk->last;
    rc = ha_heap_growth_get(rk->heap, true, args, &g, err, sizeof(err));
    if (rc != 0) {
        ha_log_warn("leak watch: the series from %s to %s was not ranked: "
                    "%s; its sites are not in the metrics",
                    rk->first, rk->last,
                    rc == HA_HEAP_STOPPED ? "interrupted" : err);
        return;
    }
    if (!ha_dumpname_parse(rk->first, &d))
        d.pid = 0;
    ha_profmetrics_set_sites(rk->heap, d.pid, &g->funcs);
    if (g->funcs.n_rows > 0 && g->funcs.rows[0].score > 0 &&
        isfinite(g->funcs.rows[0].bytes_per_hour)) {
        ha_breakdown_format_bytes(
            (long long)(g->funcs.rows[0].bytes_per_hour / 3600.0), rate,
            sizeof(rate));
        ha_log_notice("leak watch: series ranked: %s grows %s/s (%s, r2 "
                      "%.2f) first of its sites, in the metrics as "
                      "heapadmin_leak_site_growth_bytes_per_second",
                      ha_growth_key(&g->funcs, &g->funcs.rows[0]), rate,
                      ha_growth_pattern_name(g->funcs.rows[0].pattern),
                      g->funcs.rows[0].r2);
    } else {
        ha_log_notice("leak watch: series ranked: no site grew; no leak "
                      "sites in the metrics");
    }
    ha_heap_growth_put(g);
}

/* The body ended (after a pause, or at once): the next series, if one
 * waits. */
static void
rank_done(void *arg)
{
    struct ha_leakrank *rk = arg;

    rk->running = false;
    if (rk->pending) {
        rk->pending = false;
        ha_strlcpy(rk->first, rk->next_first, sizeof(rk->first));
        ha_strlcpy(rk->last, rk->next_last, sizeof(rk->last));
        rank_start(rk);
    }
}

static void
rank_start(struct ha_leakrank *rk)
{
    rk->running = true;
    if (ha_task_run(&rk->task, rank_body, rank_done, rk) == 0)
        rank_done(rk);
}

struct ha_leakrank *
ha_leakrank_new(struct ha_heap *heap, const struct ha_task_env *env)
{
    struct ha_leakrank *rk = calloc(1, sizeof(*rk));

    if (rk == NULL)
        return NULL;
    rk->heap = heap;
    ha_task_init(&rk->task, env);
    return rk;
}

void
ha_leakrank_series(struct ha_leakrank *rk, const char *first, const char *last)
{
    if (rk == NULL)
        return;
    if (rk->running) {
        rk->pending = true;
        ha_strlcpy(rk->next_first, first, sizeof(rk->next_first));
        ha_strlcpy(rk->next_last, last, sizeof(rk->next_last));
        return;
    }
    ha_strlcpy(rk->first, first, sizeof(rk->first));
    ha_strlcpy(rk->last, last, sizeof(rk->last));
    rank_start(rk);
}

void
ha_leakrank_free(struct ha_leakrank *rk)
{
    if (rk == NULL)
        return;
    rk->pending = false;
    if (rk->running)
        ha_task_abort(&rk->task);
    ha_task_release(&rk->task);
    free(rk);
}
