/* SPDX-License-Identifier: MIT
 *
 * Per-function flat/cumulative figures of heap profiles with jeprof
 * --text semantics (see aggregate.h): rows of interned names, a profile
 * added with a weight (-1 for a --base diff), the wrappers each site
 * called, the order and the text, and the per-module figures. Names
 * are interned; each stack is walked once (the cut is
 * aggregate_site.c's); the name list of a symbolized address is worked
 * out once per ha_agg_add() and reused by every stack that holds the
 * address.
 */

#include "prof/aggregate.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/idmap.h"
#include "core/util.h"
#include "prof/aggregate_int.h"

/* ------------------------------------------------------------------ */
/* Rows                                                                */
/* ------------------------------------------------------------------ */

static int
index_rehash(struct ha_agg *a, size_t cap)
{
    uint32_t *idx = calloc(cap, sizeof(*idx));

    if (idx == NULL)
        return -1;
    for (size_t r = 0; r < a->n_rows; r++) {
        size_t j = ((size_t)a->rows[r].name * 2654435761u) & (cap - 1);

        while (idx[j] != 0)
            j = (j + 1) & (cap - 1);
        idx[j] = (uint32_t)r + 1;
    }
    free(a->index);
    a->index = idx;
    a->index_cap = cap;
    return 0;
}

/* Row for an interned name, created on first use. -1 on OOM. */
static long
row_for(struct ha_agg *a, uint32_t name)
{
    size_t j;

    if ((a->n_rows + 1) * 2 > a->index_cap &&
        index_rehash(a, a->index_cap ? a->index_cap * 2 : 1024) != 0)
        return -1;
    j = ((size_t)name * 2654435761u) & (a->index_cap - 1);
    while (a->index[j] != 0) {
        if (a->rows[a->index[j] - 1].name == name)
            return (long)a->index[j] - 1;
        j = (j + 1) & (a->index_cap - 1);
    }
    if (a->n_rows == a->rows_cap) {
        size_t ncap = a->rows_cap ? a->rows_cap * 2 : 256;
        struct ha_agg_row *r = realloc(a->rows, ncap * sizeof(*r));

        if (r == NULL)
            return -1;
        a->rows = r;
        a->rows_cap = ncap;
    }
    if (a->n_rows >= UINT32_MAX - 1)
        return -1;
    memset(&a->rows[a->n_rows], 0, sizeof(a->rows[0]));
    a->rows[a->n_rows].name = name;
    a->index[j] = (uint32_t)a->n_rows + 1;
    return (long)a->n_rows++;
}

static long
row_for_str(struct ha_agg *a, const char *s, const char *suffix)
{
    char buf[512];
    uint32_t off;
    size_t n = strlen(s), m = strlen(suffix);

    if (m == 0) {
        off = ha_strtab_intern(&a->names, s, n);
    } else if (n + m < sizeof(buf)) {
        memcpy(buf, s, n);
        memcpy(buf + n, suffix, m + 1);
        off = ha_strtab_intern(&a->names, buf, n + m);
    } else {
        /* A name this long is cut; the suffix still marks it. */
        memcpy(buf, s, sizeof(buf) - m - 1);
        memcpy(buf + sizeof(buf) - m - 1, suffix, m + 1);
        off = ha_strtab_intern(&a->names, buf, sizeof(buf) - 1);
    }
    return off == UINT32_MAX ? -1 : row_for(a, off);
}

static long
row_for_addr(struct ha_agg *a, uint64_t pc)
{
    char buf[24];
    long r;

    snprintf(buf, sizeof(buf), "0x%016" PRIx64, pc);
    if ((r = row_for_str(a, buf, "")) >= 0)
        a->rows[r].unnamed = true;
    return r;
}

/* Notes on a row what its first address says: whether it has a name,
 * and its module. Returns 0 or -1 on allocation failure. */
static int
row_note(struct ha_agg *a, long r, const struct ha_syms *syms,
         const struct ha_syms_addr *sa, bool outermost)
{
    struct ha_agg_row *row = &a->rows[r];

    /* Only the outermost frame of an unnamed address carries its
     * "<module>+0x..." name; inlined callees are named. */
    if (outermost && (sa->flags & HA_SYMS_UNNAMED))
        row->unnamed = true;
    if (row->module == 0 && sa->module != 0) {
        const char *m = ha_syms_str(syms, sa->module);
        uint32_t off = ha_strtab_intern(&a->names, m, strlen(m));

        if (off == UINT32_MAX)
            return -1;
        row->module = off;
    }
    return 0;
}

static int
push_scratch(struct ha_agg *a, size_t *n, uint32_t v)
{
    if (*n == a->scratch_cap) {
        size_t ncap = a->scratch_cap ? a->scratch_cap * 2 : 256;
        uint32_t *s = realloc(a->scratch, ncap * sizeof(*s));

        if (s == NULL)
            return -1;
        a->scratch = s;
        a->scratch_cap = ncap;
    }
    a->scratch[(*n)++] = v;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Adding a profile                                                    */
/* ------------------------------------------------------------------ */

/* Rows of one symbolized address, innermost first, worked out once per
 * ha_agg_add(): slot[k] is (offset into list) + 1, 0 = not yet. */
struct addr_rows {
    uint32_t *slot; /* per syms->addrs index */
    uint32_t *list; /* [count, row, row, ...] runs */
    size_t n, cap;
};

static int
addr_rows_get(struct ha_agg *a, struct addr_rows *ar,
              const struct ha_syms *syms, const struct ha_syms_addr *sa,
              const uint32_t **rows, size_t *n_rows)
{
    size_t k = (size_t)(sa - syms->addrs), need = sa->n + 1;
    /* jeprof without addr2line -i: the innermost name alone. */
    bool one = a->jeprof_inline && (sa->flags & HA_SYMS_NO_FINI);

    if (ar->slot[k] == 0) {
        size_t at = ar->n;
        uint32_t nf = one ? 1 : sa->n;

        if (ar->n + need > ar->cap) {
            size_t ncap = ar->cap ? ar->cap : 1024;
            uint32_t *l;

            while (ncap < ar->n + need)
                ncap *= 2;
            if ((l = realloc(ar->list, ncap * sizeof(*l))) == NULL)
                return -1;
            ar->list = l;
            ar->cap = ncap;
        }
        ar->list[at] = nf;
        for (uint32_t f = 0; f < nf; f++) {
            const struct ha_syms_frame *fr = &syms->frames[sa->first + f];
            const char *name = ha_syms_str(syms, fr->func);
            long r;

            if (*name == '\0')
                r = row_for_addr(a, sa->pc);
            else
                r = row_for_str(a, name,
                                f + 1 < sa->n && !one ? " (inline)" : "");
            if (r < 0 || row_note(a, r, syms, sa, f + 1 == sa->n) != 0)
                return -1;
            ar->list[at + 1 + f] = (uint32_t)r;
        }
        ar->n += nf + 1;
        ar->slot[k] = (uint32_t)at + 1;
    }
    *rows = ar->list + ar->slot[k] - 1 + 1;
    *n_rows = ar->list[ar->slot[k] - 1];
    return 0;
}

/* ------------------------------------------------------------------ */
/* The wrappers a site called                                          */
/* ------------------------------------------------------------------ */

/* The inline rows of the site's frame to leave out: the cut's skip, but
 * never all of them (jeprof_inline keeps one name per address). */
static size_t
skip_of(const struct resolver *r, size_t n_rows)
{
    return r->skip < n_rows ? r->skip : n_rows > 0 ? n_rows - 1 : 0;
}

/* The name of entry q of the address of raw frame j (resolved into r),
 * or its address when it has none, into out (reset first). */
static void
entry_name(const struct resolver *r, const struct ha_heapv2 *p, size_t i,
           size_t j, uint32_t q, struct ha_buf *out)
{
    const struct ha_syms_addr *sa = r->sa[j];
    const char *fn =
        sa != NULL && q < sa->n
            ? ha_syms_str(r->syms, r->syms->frames[sa->first + q].func)
            : "";

    ha_buf_reset(out);
    if (*fn == '\0')
        ha_buf_printf(out, "0x%016" PRIx64,
                      ha_aggregate_lookup_pc(ha_heapv2_stack_frames(p, i), j));
    else
        ha_buf_append_str(out, fn);
}

/* The outermost entry the cut skipped past the allocator's frames (the
 * wrapper the site called) into out; false when it skipped none. */
static bool
outer_skipped(const struct resolver *r, const struct ha_heapv2 *p, size_t i,
              struct ha_buf *out)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);

    if (r->skip > 0) {
        entry_name(r, p, i, r->start, r->skip - 1, out);
        return true;
    }
    for (size_t j = r->start; j-- > r->alloc_end;) {
        const struct ha_syms_addr *sa = r->sa[j];

        if (f[j] >= HA_AGGREGATE_HIGH_ADDR)
            continue;
        entry_name(r, p, i, j, sa != NULL && sa->n > 0 ? sa->n - 1 : 0, out);
        return true;
    }
    return false;
}

/* Notes that the stack last resolved, whose site row is named site,
 * called the wrapper it skipped, with weight w. 0 or -1 on OOM. */
static int
wrapper_note(struct ha_agg *a, const struct resolver *r,
             const struct ha_heapv2 *p, size_t i, uint32_t site, double w,
             struct ha_buf *name)
{
    uint32_t wrap, k;
    uint64_t key;

    if (!outer_skipped(r, p, i, name) || ha_buf_failed(name))
        return ha_buf_failed(name) ? -1 : 0;
    wrap = ha_strtab_intern(&a->names, (const char *)name->data, name->len);
    if (wrap == UINT32_MAX)
        return -1;
    key = (uint64_t)site << 32 | wrap;
    if (ha_idmap_get(&a->wuse_index, key, &k)) {
        a->wuse[k].w += w;
        return 0;
    }
    if (a->n_wuse == a->wuse_cap) {
        size_t cap = a->wuse_cap ? a->wuse_cap * 2 : 64;
        struct ha_agg_wrapuse *v = realloc(a->wuse, cap * sizeof(*v));

        if (v == NULL)
            return -1;
        a->wuse = v;
        a->wuse_cap = cap;
    }
    if (ha_idmap_put(&a->wuse_index, key, (uint32_t)a->n_wuse) != 0)
        return -1;
    a->wuse[a->n_wuse].site = site;
    a->wuse[a->n_wuse].wrap = wrap;
    a->wuse[a->n_wuse].w = w;
    a->n_wuse++;
    return 0;
}

static int
cmp_wuse(const void *x, const void *y, void *arg)
{
    const struct ha_agg_wrapuse *a = x, *b = y;
    const struct ha_agg *agg = arg;

    if (a->site != b->site)
        return a->site < b->site ? -1 : 1;
    if (a->w != b->w)
        return a->w > b->w ? -1 : 1;
    return strcmp(ha_strtab_str(&agg->names, a->wrap),
                  ha_strtab_str(&agg->names, b->wrap));
}

/* The row named name, or NULL. */
static struct ha_agg_row *
row_find(struct ha_agg *a, uint32_t name)
{
    if (a->index_cap == 0)
        return NULL;
    for (size_t j = ((size_t)name * 2654435761u) & (a->index_cap - 1);
         a->index[j] != 0; j = (j + 1) & (a->index_cap - 1))
        if (a->rows[a->index[j] - 1].name == name)
            return &a->rows[a->index[j] - 1];
    return NULL;
}

#define WRAPPERS_SHOWN 8 /* names in a row's wrapper text at most */

/* Each row's wrapper text from the notes: its wrappers, most weight
 * first, ", "-joined. 0 or -1 on OOM. */
static int
wrappers_finish(struct ha_agg *a)
{
    struct ha_agg_wrapuse *v;
    struct ha_buf b = HA_BUF_INIT;
    int ret = -1;

    if (a->n_wuse == 0)
        return 0;
    if ((v = malloc(a->n_wuse * sizeof(*v))) == NULL)
        return -1;
    memcpy(v, a->wuse, a->n_wuse * sizeof(*v));
    qsort_r(v, a->n_wuse, sizeof(*v), cmp_wuse, a);
    for (size_t i = 0; i < a->n_wuse;) {
        struct ha_agg_row *row = row_find(a, v[i].site);
        size_t k = i, shown = 0;
        uint32_t off;

        ha_buf_reset(&b);
        for (; k < a->n_wuse && v[k].site == v[i].site; k++) {
            if (shown++ == WRAPPERS_SHOWN) {
                ha_buf_append_str(&b, ", ...");
                continue;
            }
            if (shown > WRAPPERS_SHOWN)
                continue;
            ha_buf_printf(&b, "%s%s", b.len ? ", " : "",
                          ha_strtab_str(&a->names, v[k].wrap));
        }
        i = k;
        if (ha_buf_failed(&b))
            goto out;
        if (row == NULL)
            continue;
        off = ha_strtab_intern(&a->names, (const char *)b.data, b.len);
        if (off == UINT32_MAX)
            goto out;
        row->wrapper = off;
    }
    ret = 0;
out:
    ha_buf_free(&b);
    free(v);
    return ret;
}

int
ha_agg_add(struct ha_agg *a, const struct ha_heapv2 *p,
           const struct ha_syms *syms, double weight, bool accum, char *err,
           size_t errlen)
{
    struct addr_rows ar = {0};
    struct resolver rs;
    struct ha_buf wname = HA_BUF_INIT;
    int ret = -1;

    if (ha_aggregate_resolver_init(&rs, syms, a->wrappers) != 0)
        goto oom;
    if (syms->n_addrs > 0 &&
        (ar.slot = calloc(syms->n_addrs, sizeof(*ar.slot))) == NULL)
        goto oom;
    a->has_alloc = a->has_alloc || ha_heapv2_has_accum(p);

    for (size_t i = 0; i < p->n_stacks; i++) {
        const struct ha_heapv2_stack *st = &p->stacks[i];
        const uint64_t *f = ha_heapv2_stack_frames(p, i);
        double bytes = weight * (accum ? st->accum_bytes : st->bytes);
        double objs = weight * (accum ? st->accum_objs : st->objs);
        double abytes = weight * st->accum_bytes;
        double aobjs = weight * st->accum_objs;
        size_t n = 0, start;
        uint32_t serial;

        a->total_bytes += bytes;
        a->total_objs += objs;
        a->alloc_total_bytes += abytes;
        a->alloc_total_objs += aobjs;
        a->n_stacks++;
        if (++a->serial == 0) {
            /* 2^32 stacks: restart the dedup stamps. */
            for (size_t r = 0; r < a->n_rows; r++)
                a->rows[r].last = 0;
            a->serial = 1;
        }
        serial = a->serial;

        if ((start = ha_aggregate_resolve_stack(&rs, p, i)) == SIZE_MAX)
            goto oom;
        for (size_t j = start; j < st->n_frames; j++) {
            uint64_t pc = ha_aggregate_lookup_pc(f, j);
            const struct ha_syms_addr *sa;
            const uint32_t *rows;
            size_t nr;
            long r;

            if (f[j] >= HA_AGGREGATE_HIGH_ADDR)
                continue;
            sa = rs.sa[j];
            if (sa != NULL && sa->n > 0) {
                if (addr_rows_get(a, &ar, syms, sa, &rows, &nr) != 0)
                    goto oom;
            } else {
                if ((r = row_for_addr(a, pc)) < 0)
                    goto oom;
                if (push_scratch(a, &n, (uint32_t)r) != 0)
                    goto oom;
                continue;
            }
            for (size_t k = j == start ? skip_of(&rs, nr) : 0; k < nr; k++)
                if (push_scratch(a, &n, rows[k]) != 0)
                    goto oom;
        }
        if (n > 0 && wrapper_note(a, &rs, p, i, a->rows[a->scratch[0]].name,
                                  fabs(bytes) + fabs(abytes), &wname) != 0)
            goto oom;
        for (size_t k = 0; k < n; k++) {
            struct ha_agg_row *row = &a->rows[a->scratch[k]];

            if (row->last == serial)
                continue; /* recursion: once per stack */
            row->last = serial;
            if (k == 0) {
                row->flat_bytes += bytes;
                row->flat_objs += objs;
                row->alloc_flat_bytes += abytes;
                row->alloc_flat_objs += aobjs;
            }
            row->cum_bytes += bytes;
            row->cum_objs += objs;
            row->alloc_cum_bytes += abytes;
            row->alloc_cum_objs += aobjs;
        }
    }
    if (wrappers_finish(a) != 0)
        goto oom;
    ret = 0;
    goto done;

oom:
    ha_err_set(err, errlen, "out of memory aggregating %zu stacks",
               p->n_stacks);
done:
    ha_aggregate_resolver_free(&rs);
    ha_buf_free(&wname);
    free(ar.slot);
    free(ar.list);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Ordering and text                                                   */
/* ------------------------------------------------------------------ */

/* qsort_r's context: two instances on two threads sort at once, so the
 * order and the names live here, not in statics. */
struct sort_ctx {
    const struct ha_agg *agg;
    enum ha_agg_order order;
};

static double
key_of(const struct ha_agg_row *r, enum ha_agg_order order)
{
    switch (order) {
    case HA_AGG_BY_CUM_BYTES:
        return r->cum_bytes;
    case HA_AGG_BY_FLAT_OBJS:
        return r->flat_objs;
    case HA_AGG_BY_CUM_OBJS:
        return r->cum_objs;
    case HA_AGG_BY_ALLOC_FLAT_BYTES:
        return r->alloc_flat_bytes;
    case HA_AGG_BY_ALLOC_FLAT_OBJS:
        return r->alloc_flat_objs;
    default:
        return r->flat_bytes;
    }
}

static int
cmp_row(const void *x, const void *y, void *arg)
{
    const struct sort_ctx *c = arg;
    const struct ha_agg_row *a = x, *b = y;
    double ka = key_of(a, c->order), kb = key_of(b, c->order);

    if (ka != kb)
        return ka > kb ? -1 : 1;
    /* "0x..." and "libfoo.so+0x..." sort before letters: a name that
     * says nothing would push named functions of equal weight down. */
    if (a->unnamed != b->unnamed)
        return a->unnamed ? 1 : -1;
    return strcmp(ha_agg_name(c->agg, a), ha_agg_name(c->agg, b));
}

void
ha_agg_sort(struct ha_agg *a, enum ha_agg_order order)
{
    /* The index maps names to row positions: rebuilt after sorting. */
    struct sort_ctx c = {a, order};

    if (a->n_rows > 1)
        qsort_r(a->rows, a->n_rows, sizeof(*a->rows), cmp_row, &c);
    if (a->index_cap > 0 && index_rehash(a, a->index_cap) != 0) {
        /* Without an index ha_agg_add() would duplicate rows: drop it so
         * the next add rebuilds it from scratch. */
        free(a->index);
        a->index = NULL;
        a->index_cap = 0;
    }
}

static void
pct(char *buf, size_t n, double v, double total)
{
    if (total != 0)
        snprintf(buf, n, "%.1f%%", v * 100.0 / total);
    else
        snprintf(buf, n, "%s", v == 0 ? "nan" : v > 0 ? "+inf" : "-inf");
}

void
ha_agg_format_text(struct ha_agg *a, bool objects, size_t limit,
                   struct ha_buf *out)
{
    double total = objects ? a->total_objs : a->total_bytes;
    double flat_total = 0, running = 0;
    size_t shown = 0;

    ha_agg_sort(a, objects ? HA_AGG_BY_FLAT_OBJS : HA_AGG_BY_FLAT_BYTES);
    /* Percentages are of the flat total (stacks left after the cut), as
     * jeprof's PrintText computes them. */
    for (size_t i = 0; i < a->n_rows; i++)
        flat_total += objects ? a->rows[i].flat_objs : a->rows[i].flat_bytes;
    if (total != 0)
        ha_buf_printf(out, "Total: %.0f %s\n", trunc(total),
                      objects ? "objects" : "B");
    for (size_t i = 0; i < a->n_rows && (limit == 0 || shown < limit); i++) {
        const struct ha_agg_row *r = &a->rows[i];
        double f = objects ? r->flat_objs : r->flat_bytes;
        double c = objects ? r->cum_objs : r->cum_bytes;
        char p1[16], p2[16], p3[16];

        running += f;
        shown++;
        if (f == 0 && c == 0)
            continue;
        pct(p1, sizeof(p1), f, flat_total);
        pct(p2, sizeof(p2), running, flat_total);
        pct(p3, sizeof(p3), c, flat_total);
        /* %d of a double in Perl truncates toward zero. */
        ha_buf_printf(out, "%8.0f %6s %6s %8.0f %6s %s\n", trunc(f), p1, p2,
                      trunc(c), p3, ha_agg_name(a, r));
    }
}

void
ha_agg_free(struct ha_agg *a)
{
    if (a == NULL)
        return;
    free(a->rows);
    free(a->index);
    free(a->scratch);
    free(a->wuse);
    ha_idmap_free(&a->wuse_index);
    ha_strtab_free(&a->names);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------ */
/* Per module                                                          */
/* ------------------------------------------------------------------ */

int
ha_agg_modules(const struct ha_heapv2 *p, const struct ha_syms *syms,
               struct ha_agg_module *out)
{
    struct resolver rs;
    uint32_t *mod_of = NULL; /* per syms->addrs: module index + 1 */
    uint32_t *seen = NULL;   /* per module: last stack + 1 counted */
    int ret = -1;

    memset(out, 0, syms->n_modules * sizeof(*out));
    if (ha_aggregate_resolver_init(&rs, syms, NULL) != 0)
        goto done;
    mod_of = calloc(syms->n_addrs ? syms->n_addrs : 1, sizeof(*mod_of));
    seen = calloc(syms->n_modules ? syms->n_modules : 1, sizeof(*seen));
    if (mod_of == NULL || seen == NULL)
        goto done;
    /* A dump maps tens of modules: a scan per address is cheap. */
    for (size_t i = 0; i < syms->n_addrs; i++) {
        const struct ha_syms_addr *a = &syms->addrs[i];

        for (size_t k = 0; a->module != 0 && k < syms->n_modules; k++)
            if (syms->modules[k].path == a->module) {
                mod_of[i] = (uint32_t)k + 1;
                out[k].frames++;
                out[k].named += a->n > 0 && !(a->flags & HA_SYMS_UNNAMED);
                break;
            }
    }
    for (size_t i = 0; i < p->n_stacks; i++) {
        const uint64_t *f = ha_heapv2_stack_frames(p, i);

        for (size_t j = 0; j < p->stacks[i].n_frames; j++) {
            const struct ha_syms_addr *a =
                ha_aggregate_frame_entry(&rs, p, i, j, f);
            uint32_t k;

            if (a == NULL || (k = mod_of[a - syms->addrs]) == 0 ||
                seen[k - 1] == i + 1)
                continue;
            seen[k - 1] = (uint32_t)i + 1;
            out[k - 1].bytes += p->stacks[i].bytes;
            out[k - 1].objs += p->stacks[i].objs;
        }
    }
    ret = 0;
done:
    ha_aggregate_resolver_free(&rs);
    free(mod_of);
    free(seen);
    return ret;
}
