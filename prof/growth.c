/* SPDX-License-Identifier: MIT
 *
 * Growth over a series of heap dumps (see growth.h): running least
 * squares per key, then a score and a pattern. Pure.
 */
#include "prof/growth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* ------------------------------------------------------------------
 * Keys
 * ------------------------------------------------------------------ */

static size_t
slot_of(uint32_t off, size_t cap)
{
    /* Offsets are distinct and spread; a multiplicative hash mixes the
     * low bits the table uses. */
    return (size_t)((off * 2654435761u) & (uint32_t)(cap - 1));
}

static int
index_grow(struct ha_growth *g)
{
    size_t cap = g->index_cap ? g->index_cap * 2 : 1024;
    uint32_t *idx = calloc(cap, sizeof(*idx));

    if (idx == NULL)
        return -1;
    for (size_t i = 0; i < g->n_rows; i++) {
        size_t j = slot_of(g->rows[i].key, cap);

        while (idx[j] != 0)
            j = (j + 1) & (cap - 1);
        idx[j] = (uint32_t)i + 1;
    }
    free(g->index);
    g->index = idx;
    g->index_cap = cap;
    return 0;
}

/* The row of key off, created (with the zeros of the dumps before this
 * one) when new; NULL on allocation failure. */
static struct ha_growth_row *
row_for(struct ha_growth *g, uint32_t off)
{
    struct ha_growth_row *r;
    size_t j;

    if ((g->n_rows + 1) * 2 > g->index_cap && index_grow(g) != 0)
        return NULL;
    j = slot_of(off, g->index_cap);
    while (g->index[j] != 0) {
        r = &g->rows[g->index[j] - 1];
        if (r->key == off)
            return r;
        j = (j + 1) & (g->index_cap - 1);
    }
    if (g->n_rows == g->cap_rows) {
        size_t cap = g->cap_rows ? g->cap_rows * 2 : 256;
        struct ha_growth_row *v = realloc(g->rows, cap * sizeof(*v));

        if (v == NULL)
            return NULL;
        g->rows = v;
        g->cap_rows = cap;
    }
    r = &g->rows[g->n_rows];
    memset(r, 0, sizeof(*r));
    r->key = off;
    r->first_dump = (uint32_t)g->n_dumps;
    /* It held nothing in the dumps closed so far: those points are
     * (t_k, 0), whose running state is the times' own with every y term
     * zero. */
    r->n = g->tn;
    r->mean_t = g->tmean;
    r->m2_t = g->tm2;
    g->index[j] = (uint32_t)g->n_rows + 1;
    g->n_rows++;
    return r;
}

/* ------------------------------------------------------------------
 * Feeding
 * ------------------------------------------------------------------ */

int
ha_growth_begin(struct ha_growth *g, double t_s, char *err, size_t errlen)
{
    if (g->open || g->finished) {
        ha_err_set(err, errlen, "growth: %s",
                   g->open ? "a dump is already open"
                           : "the series is finished");
        return -1;
    }
    if (g->n_dumps == 0)
        g->t0_s = t_s;
    g->t_hours = (t_s - g->t0_s) / 3600.0;
    g->open = true;
    g->open_alloc = false;
    return 0;
}

/* The row of key in the open dump, created when new; NULL with err set,
 * or with *skip for an empty key. */
static struct ha_growth_row *
open_row(struct ha_growth *g, const char *key, size_t len, bool *skip,
         char *err, size_t errlen)
{
    struct ha_growth_row *r;
    uint32_t off;

    *skip = false;
    if (!g->open) {
        ha_err_set(err, errlen, "growth: no dump is open");
        return NULL;
    }
    if (len == 0 || key[0] == '\0') {
        *skip = true;
        return NULL;
    }
    off = ha_strtab_intern(&g->keys, key, len);
    if (off == UINT32_MAX || off == 0 || (r = row_for(g, off)) == NULL) {
        ha_err_set(err, errlen, "growth: out of memory");
        return NULL;
    }
    r->in_dump = true;
    return r;
}

int
ha_growth_add(struct ha_growth *g, const char *key, size_t len,
              double bytes, double objs, char *err, size_t errlen)
{
    bool skip;
    struct ha_growth_row *r = open_row(g, key, len, &skip, err, errlen);

    if (r == NULL)
        return skip ? 0 : -1;
    r->cur_bytes += bytes;
    r->cur_objs += objs;
    return 0;
}

int
ha_growth_add_alloc(struct ha_growth *g, const char *key, size_t len,
                    double bytes, double objs, char *err, size_t errlen)
{
    bool skip;
    struct ha_growth_row *r = open_row(g, key, len, &skip, err, errlen);

    if (g->open)
        g->open_alloc = true;
    if (r == NULL)
        return skip ? 0 : -1;
    r->cur_abytes += bytes;
    r->cur_aobjs += objs;
    return 0;
}

/* One point (t, b, o) into r's running sums (Welford, with the
 * co-moment for the covariances). */
static void
point(struct ha_growth_row *r, double t, double b, double o)
{
    double dt, db, dob;

    r->n += 1;
    dt = t - r->mean_t;
    r->mean_t += dt / r->n;
    db = b - r->mean_b;
    r->mean_b += db / r->n;
    dob = o - r->mean_o;
    r->mean_o += dob / r->n;
    r->m2_t += dt * (t - r->mean_t);
    r->m2_b += db * (b - r->mean_b);
    r->c_tb += dt * (b - r->mean_b);
    r->c_to += dt * (o - r->mean_o);
}

int
ha_growth_end(struct ha_growth *g, char *err, size_t errlen)
{
    double t = g->t_hours, dt;

    if (!g->open) {
        ha_err_set(err, errlen, "growth: no dump is open");
        return -1;
    }
    for (size_t i = 0; i < g->n_rows; i++) {
        struct ha_growth_row *r = &g->rows[i];
        double b = r->in_dump ? r->cur_bytes : 0;
        double o = r->in_dump ? r->cur_objs : 0;
        double ab = r->in_dump ? r->cur_abytes : 0;
        double ao = r->in_dump ? r->cur_aobjs : 0;
        /* The previous dump's value: last_bytes, or 0 for a key new in
         * this one. */
        double prev = r->first_dump == g->n_dumps ? 0 : r->last_bytes;

        point(r, t, b, o);
        if (g->n_dumps > 0) {
            r->steps++;
            if (b > prev)
                r->grew++;
            else if (b < prev)
                r->shrank++;
        } else {
            r->first_bytes = b;
            r->first_objs = o;
            r->first_alloc_bytes = ab;
            r->first_alloc_objs = ao;
        }
        r->last_bytes = b;
        r->last_objs = o;
        r->last_alloc_bytes = ab;
        r->last_alloc_objs = ao;
        if (b > r->max_bytes)
            r->max_bytes = b;
        r->cur_bytes = r->cur_objs = 0;
        r->cur_abytes = r->cur_aobjs = 0;
        r->in_dump = false;
    }
    /* The times' running state, for keys that appear later. */
    g->tn += 1;
    dt = t - g->tmean;
    g->tmean += dt / g->tn;
    g->tm2 += dt * (t - g->tmean);
    if (g->n_dumps == 0)
        g->first_t_hours = t;
    g->last_t_hours = t;
    g->n_dumps++;
    g->alloc_dumps += g->open_alloc;
    g->open = false;
    return 0;
}

/* ------------------------------------------------------------------
 * Figures and rank
 * ------------------------------------------------------------------ */

/* Below this share of var(t) the times are taken as equal: rounding in
 * the running sums must not pass for a spread. */
#define TIME_EPS 1e-12

static enum ha_growth_pattern
pattern_of(const struct ha_growth_row *r)
{
    double share = r->steps > 0 ? (double)r->grew / r->steps : 0;

    if (r->steps == 0 || isnan(r->bytes_per_hour))
        return HA_GROWTH_UNKNOWN;
    if (r->grew == 0 && r->shrank == 0)
        return HA_GROWTH_FLAT;
    if (r->bytes_per_hour > 0 && share >= HA_GROWTH_STEADY_GREW &&
        r->r2 >= HA_GROWTH_STEADY_R2)
        return HA_GROWTH_STEADY;
    if (r->grew == 1 && r->shrank == 0)
        return HA_GROWTH_STEP;
    /* Down overall, and falling far more often than rising: freed, not
     * cycling (a burst caught high at the first dump and low at the last
     * falls as often as it rises). */
    if (r->bytes_per_hour < 0 && r->last_bytes < r->first_bytes &&
        r->shrank >= 2 * r->grew)
        return HA_GROWTH_SHRINKING;
    /* Up and down with no clear line up: spikes that are freed. */
    if (r->grew > 0 && r->shrank > 0 &&
        (r->bytes_per_hour <= 0 || isnan(r->r2) ||
         r->r2 < HA_GROWTH_STEADY_R2 / 2))
        return HA_GROWTH_BURSTY;
    return r->bytes_per_hour > 0 ? HA_GROWTH_GROWING : HA_GROWTH_BURSTY;
}

static void
figures(struct ha_growth_row *r)
{
    double share;

    r->bytes_per_hour = r->objs_per_hour = r->r2 = NAN;
    r->score = 0;
    if (r->n >= 2 && r->m2_t > TIME_EPS * (r->n > 0 ? r->n : 1)) {
        r->bytes_per_hour = r->c_tb / r->m2_t;
        r->objs_per_hour = r->c_to / r->m2_t;
        if (r->m2_b > 0) {
            r->r2 = r->c_tb * r->c_tb / (r->m2_t * r->m2_b);
            if (r->r2 > 1) /* rounding */
                r->r2 = 1;
        }
    }
    share = r->steps > 0 ? (double)r->grew / r->steps : 0;
    if (!isnan(r->bytes_per_hour) && !isnan(r->r2) && r->bytes_per_hour > 0)
        r->score = r->bytes_per_hour * r->r2 * share;
    r->pattern = pattern_of(r);
}

static int
cmp_rank(const void *x, const void *y)
{
    const struct ha_growth_row *a = x, *b = y;
    double ga = a->last_bytes - a->first_bytes;
    double gb = b->last_bytes - b->first_bytes;

    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (ga != gb)
        return ga > gb ? -1 : 1;
    return strcmp(a->sort_key, b->sort_key);
}

void
ha_growth_finish(struct ha_growth *g)
{
    if (g->finished)
        return;
    /* No key is added from here on, so the table's text stays put and
     * the comparison can hold pointers into it (qsort has no context
     * argument, and a global would race between instances' workers). */
    for (size_t i = 0; i < g->n_rows; i++) {
        figures(&g->rows[i]);
        g->rows[i].sort_key = ha_growth_key(g, &g->rows[i]);
    }
    if (g->n_rows > 1)
        qsort(g->rows, g->n_rows, sizeof(*g->rows), cmp_rank);
    /* The index points at pre-sort positions: drop it. */
    free(g->index);
    g->index = NULL;
    g->index_cap = 0;
    g->open = false;
    g->finished = true;
}

const char *
ha_growth_pattern_name(enum ha_growth_pattern p)
{
    static const char *const names[] = {
        [HA_GROWTH_UNKNOWN] = "unknown",   [HA_GROWTH_FLAT] = "flat",
        [HA_GROWTH_STEADY] = "steady",     [HA_GROWTH_STEP] = "step",
        [HA_GROWTH_GROWING] = "growing",   [HA_GROWTH_BURSTY] = "bursty",
        [HA_GROWTH_SHRINKING] = "shrinking",
    };

    return p < HA_GROWTH_PATTERN_MAX ? names[p] : "unknown";
}

double
ha_growth_span_hours(const struct ha_growth *g)
{
    return g->n_dumps >= 2 ? g->last_t_hours - g->first_t_hours : 0;
}

void
ha_growth_free(struct ha_growth *g)
{
    if (g == NULL)
        return;
    free(g->rows);
    free(g->index);
    ha_strtab_free(&g->keys);
    memset(g, 0, sizeof(*g));
}
