/* SPDX-License-Identifier: MIT
 *
 * Memory by thread (see threads.h).
 */
#include "prof/threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/idmap.h"

/* ------------------------------------------------------------------
 * Integers that add up
 * ------------------------------------------------------------------ */

struct rem {
    double frac;
    size_t i;
};

static int
cmp_rem_desc(const void *a, const void *b)
{
    const struct rem *x = a, *y = b;

    if (x->frac != y->frac)
        return x->frac < y->frac ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i); /* the first one first */
}

int
ha_threads_apportion(long long total, const double *w, size_t n, long long *out)
{
    struct rem *r;
    double sum = 0;
    long long given = 0, left;

    for (size_t i = 0; i < n; i++) {
        out[i] = 0;
        if (w[i] > 0 && isfinite(w[i]))
            sum += w[i];
    }
    if (n == 0 || total <= 0 || !(sum > 0))
        return 0;
    if ((r = malloc(n * sizeof(*r))) == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        double q =
            w[i] > 0 && isfinite(w[i]) ? (double)total * (w[i] / sum) : 0;
        double f = floor(q);

        out[i] = (long long)f;
        given += out[i];
        r[i].frac = q - f;
        r[i].i = i;
    }
    qsort(r, n, sizeof(*r), cmp_rem_desc);
    left = total - given;
    /* Rounding in doubles may leave a unit over or under: the largest
     * remainders get the units missing, the smallest give back those in
     * excess (never below 0). */
    for (size_t k = 0; left > 0; k = (k + 1) % n) {
        if (w[r[k].i] > 0) {
            out[r[k].i]++;
            left--;
        }
    }
    for (size_t k = n; left < 0;) {
        k = k == 0 ? n - 1 : k - 1;
        if (out[r[k].i] > 0) {
            out[r[k].i]--;
            left++;
        }
    }
    free(r);
    return 0;
}

/* A total as jeprof prints it (ha_heapv2_jeprof_int), held in range: a
 * hostile dump's counts near 2^64 scale past what a long long holds. */
static long long
whole(double v)
{
    if (!(v >= 0))
        return 0;
    if (v >= 9.2e18)
        return 9200000000000000000LL;
    return ha_heapv2_jeprof_int(v);
}

/* ------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------ */

static const char *
name_of_uid(const struct ha_heapv2 *p, uint64_t uid)
{
    const struct ha_heapv2_thread *t = ha_heapv2_thread_of(p, uid);

    return t != NULL ? ha_heapv2_thread_name(p, t) : NULL;
}

/* The row of uid, made when new. Returns its index, or SIZE_MAX when out
 * of memory. */
static size_t
row_of(struct ha_idmap *map, struct ha_threads_row **rows, size_t *n,
       size_t *cap, const struct ha_heapv2 *p, uint64_t uid)
{
    uint32_t v;

    if (ha_idmap_get(map, uid, &v))
        return v;
    if (*n >= UINT32_MAX - 1)
        return SIZE_MAX;
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        struct ha_threads_row *g = realloc(*rows, c * sizeof(*g));

        if (g == NULL)
            return SIZE_MAX;
        *rows = g;
        *cap = c;
    }
    if (ha_idmap_put(map, uid, (uint32_t)*n) != 0)
        return SIZE_MAX;
    memset(&(*rows)[*n], 0, sizeof((*rows)[0]));
    (*rows)[*n].has_uid = true;
    (*rows)[*n].uid = uid;
    (*rows)[*n].name = name_of_uid(p, uid);
    return (*n)++;
}

int
ha_threads_rows(const struct ha_heapv2 *p, struct ha_threads_row **rows,
                size_t *n)
{
    struct ha_idmap map = {0};
    struct ha_threads_row *r = NULL;
    size_t nr = 0, cap = 0;
    double rest[4] = {0, 0, 0, 0};
    double *w = NULL;
    long long *iv = NULL;
    int ret = -1;

    *rows = NULL;
    *n = 0;
    for (uint32_t i = 0; i < p->n_threads; i++)
        if (row_of(&map, &r, &nr, &cap, p, p->threads[i].uid) == SIZE_MAX)
            goto out;
    for (size_t s = 0; s < p->n_stacks; s++) {
        const struct ha_heapv2_stack *st = &p->stacks[s];
        const double fig[4] = {st->objs, st->bytes, st->accum_objs,
                               st->accum_bytes};
        double sum[4];
        bool shared[4] = {false, false, false, false};

        ha_heapv2_stack_thread_sums(p, s, sum);
        for (uint32_t k = 0; k < st->n_threads; k++) {
            const struct ha_heapv2_tline *tl = &p->tlines[st->tline_off + k];
            size_t i = row_of(&map, &r, &nr, &cap, p, tl->uid);
            const uint64_t raw[4] = {tl->raw.objs, tl->raw.bytes,
                                     tl->raw.accum_objs, tl->raw.accum_bytes};
            double *dst[4];

            if (i == SIZE_MAX)
                goto out;
            dst[0] = &r[i].objs;
            dst[1] = &r[i].bytes;
            dst[2] = &r[i].accum_objs;
            dst[3] = &r[i].accum_bytes;
            r[i].stacks++;
            for (int c = 0; c < 4; c++)
                if (sum[c] > 0) {
                    *dst[c] += fig[c] * ((double)raw[c] / sum[c]);
                    shared[c] = true;
                }
        }
        for (int c = 0; c < 4; c++)
            if (!shared[c])
                rest[c] += fig[c];
    }
    if (rest[0] > 0 || rest[1] > 0 || rest[2] > 0 || rest[3] > 0) {
        if (nr == cap) {
            struct ha_threads_row *g = realloc(r, (cap + 1) * sizeof(*g));

            if (g == NULL)
                goto out;
            r = g;
            cap++;
        }
        memset(&r[nr], 0, sizeof(r[0]));
        r[nr].objs = rest[0];
        r[nr].bytes = rest[1];
        r[nr].accum_objs = rest[2];
        r[nr].accum_bytes = rest[3];
        nr++;
    }
    /* The integers: each total as jeprof prints it, shared out. */
    if (nr > 0) {
        const double totals[4] = {p->scaled_objs, p->scaled_bytes,
                                  p->scaled_accum_objs, p->scaled_accum_bytes};

        if ((w = malloc(nr * sizeof(*w))) == NULL ||
            (iv = malloc(nr * sizeof(*iv))) == NULL)
            goto out;
        for (int c = 0; c < 4; c++) {
            for (size_t i = 0; i < nr; i++)
                w[i] = c == 0   ? r[i].objs
                       : c == 1 ? r[i].bytes
                       : c == 2 ? r[i].accum_objs
                                : r[i].accum_bytes;
            if (ha_threads_apportion(whole(totals[c]), w, nr, iv) != 0)
                goto out;
            for (size_t i = 0; i < nr; i++)
                *(c == 0   ? &r[i].i_objs
                  : c == 1 ? &r[i].i_bytes
                  : c == 2 ? &r[i].i_accum_objs
                           : &r[i].i_accum_bytes) = iv[i];
        }
    }
    *rows = r;
    *n = nr;
    r = NULL;
    ret = 0;
out:
    free(w);
    free(iv);
    free(r);
    ha_idmap_free(&map);
    return ret;
}

/* ------------------------------------------------------------------
 * Filters
 * ------------------------------------------------------------------ */

bool
ha_threads_matches(const struct ha_heapv2 *p, const struct ha_heapv2_tline *tl,
                   const struct ha_threads_match *m)
{
    const char *name;

    if (m->by_uid)
        return tl->uid == m->uid;
    name = name_of_uid(p, tl->uid);
    if (m->name == NULL || m->name[0] == '\0')
        return name == NULL;
    return name != NULL && strcmp(name, m->name) == 0;
}

void
ha_threads_stack_share(const struct ha_heapv2 *p, size_t s,
                       const struct ha_threads_match *m, double share[4])
{
    const struct ha_heapv2_stack *st = &p->stacks[s];
    double sum[4], kept[4] = {0, 0, 0, 0};

    ha_heapv2_stack_thread_sums(p, s, sum);
    for (uint32_t k = 0; k < st->n_threads; k++) {
        const struct ha_heapv2_tline *tl = &p->tlines[st->tline_off + k];

        if (!ha_threads_matches(p, tl, m))
            continue;
        kept[0] += (double)tl->raw.objs;
        kept[1] += (double)tl->raw.bytes;
        kept[2] += (double)tl->raw.accum_objs;
        kept[3] += (double)tl->raw.accum_bytes;
    }
    for (int c = 0; c < 4; c++)
        share[c] = sum[c] > 0 ? kept[c] / sum[c] : 0;
}

static uint64_t
cut_u64(uint64_t v, double share)
{
    double x = (double)v * share;

    return x >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)(x + 0.5);
}

int
ha_threads_filter(const struct ha_heapv2 *p, const struct ha_threads_match *m,
                  struct ha_heapv2 *out)
{
    memset(out, 0, sizeof(*out));
    out->period = p->period;
    out->total = p->total;
    out->n_threads = p->n_threads;
    out->has_maps = p->has_maps;
    out->n_leak_lines = p->n_leak_lines;
    out->stacks =
        malloc((p->n_stacks ? p->n_stacks : 1) * sizeof(*out->stacks));
    out->frames =
        malloc((p->n_frames ? p->n_frames : 1) * sizeof(*out->frames));
    out->threads =
        malloc((p->n_threads ? p->n_threads : 1) * sizeof(*out->threads));
    out->names = malloc(p->names_len ? p->names_len : 1);
    out->tlines =
        malloc((p->n_tlines ? p->n_tlines : 1) * sizeof(*out->tlines));
    out->maps = strdup("");
    if (out->stacks == NULL || out->frames == NULL || out->threads == NULL ||
        out->names == NULL || out->tlines == NULL || out->maps == NULL) {
        ha_heapv2_free(out);
        return -1;
    }
    if (p->n_frames > 0)
        memcpy(out->frames, p->frames, p->n_frames * sizeof(*p->frames));
    out->n_frames = p->n_frames;
    if (p->n_threads > 0)
        memcpy(out->threads, p->threads, p->n_threads * sizeof(*p->threads));
    if (p->names_len > 0)
        memcpy(out->names, p->names, p->names_len);
    out->names_len = p->names_len;
    for (size_t s = 0; s < p->n_stacks; s++) {
        const struct ha_heapv2_stack *st = &p->stacks[s];
        struct ha_heapv2_stack *o = &out->stacks[out->n_stacks];
        double sh[4];

        ha_threads_stack_share(p, s, m, sh);
        if (sh[0] == 0 && sh[1] == 0 && sh[2] == 0 && sh[3] == 0)
            continue;
        *o = *st;
        o->objs = st->objs * sh[0];
        o->bytes = st->bytes * sh[1];
        o->accum_objs = st->accum_objs * sh[2];
        o->accum_bytes = st->accum_bytes * sh[3];
        o->raw.objs = cut_u64(st->raw.objs, sh[0]);
        o->raw.bytes = cut_u64(st->raw.bytes, sh[1]);
        o->raw.accum_objs = cut_u64(st->raw.accum_objs, sh[2]);
        o->raw.accum_bytes = cut_u64(st->raw.accum_bytes, sh[3]);
        o->tline_off = (uint32_t)out->n_tlines;
        o->n_threads = 0;
        for (uint32_t k = 0; k < st->n_threads; k++) {
            const struct ha_heapv2_tline *tl = &p->tlines[st->tline_off + k];

            if (ha_threads_matches(p, tl, m)) {
                out->tlines[out->n_tlines++] = *tl;
                o->n_threads++;
            }
        }
        out->scaled_objs += o->objs;
        out->scaled_bytes += o->bytes;
        out->scaled_accum_objs += o->accum_objs;
        out->scaled_accum_bytes += o->accum_bytes;
        out->n_stacks++;
    }
    return 0;
}

/* ------------------------------------------------------------------
 * A backtrace split by name (pprof's thread_name label)
 * ------------------------------------------------------------------ */

int
ha_threads_split(const struct ha_heapv2 *p, size_t s, const int64_t totals[4],
                 struct ha_threads_part *parts, size_t *n)
{
    const struct ha_heapv2_stack *st = &p->stacks[s];
    size_t np = 0;
    double *w = NULL;
    long long *iv = NULL;
    double sum[4];
    int ret = -1;

    ha_heapv2_stack_thread_sums(p, s, sum);
    /* The parts: one per distinct name, in the order first seen (a
     * backtrace has a few thread lines: a linear search is enough). */
    for (uint32_t k = 0; k < st->n_threads; k++) {
        const char *name = name_of_uid(p, p->tlines[st->tline_off + k].uid);
        size_t j;

        for (j = 0; j < np; j++)
            if ((name == NULL && parts[j].name == NULL) ||
                (name != NULL && parts[j].name != NULL &&
                 strcmp(name, parts[j].name) == 0))
                break;
        if (j == np) {
            memset(&parts[np], 0, sizeof(parts[0]));
            parts[np++].name = name;
        }
    }
    if (np <= 1 || !(sum[0] > 0 || sum[1] > 0 || sum[2] > 0 || sum[3] > 0)) {
        /* One part takes it all (no thread lines: unnamed). */
        if (np == 0)
            parts[0].name = NULL;
        memcpy(parts[0].v, totals, sizeof(parts[0].v));
        *n = 1;
        return 0;
    }
    if ((w = calloc(np, sizeof(*w))) == NULL ||
        (iv = malloc(np * sizeof(*iv))) == NULL)
        goto out;
    for (int c = 0; c < 4; c++) {
        bool neg = totals[c] < 0;

        for (size_t j = 0; j < np; j++)
            w[j] = 0;
        for (uint32_t k = 0; k < st->n_threads; k++) {
            const struct ha_heapv2_tline *tl = &p->tlines[st->tline_off + k];
            const char *name = name_of_uid(p, tl->uid);
            const uint64_t raw[4] = {tl->raw.objs, tl->raw.bytes,
                                     tl->raw.accum_objs, tl->raw.accum_bytes};

            for (size_t j = 0; j < np; j++)
                if ((name == NULL && parts[j].name == NULL) ||
                    (name != NULL && parts[j].name != NULL &&
                     strcmp(name, parts[j].name) == 0)) {
                    w[j] += (double)raw[c];
                    break;
                }
        }
        if (!(sum[c] > 0)) {
            /* No line carries this counter: the first part takes it. */
            for (size_t j = 0; j < np; j++)
                parts[j].v[c] = j == 0 ? totals[c] : 0;
            continue;
        }
        if (ha_threads_apportion(neg ? -(long long)totals[c]
                                     : (long long)totals[c],
                                 w, np, iv) != 0)
            goto out;
        for (size_t j = 0; j < np; j++)
            parts[j].v[c] = neg ? -iv[j] : iv[j];
    }
    *n = np;
    ret = 0;
out:
    free(w);
    free(iv);
    return ret;
}
