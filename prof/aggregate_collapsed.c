/* SPDX-License-Identifier: MIT
 *
 * Collapsed stacks (see aggregate.h): each stack cut at its allocation
 * site (aggregate_site.c) and written root first, one line per distinct
 * stack with its value, as flame graph tools read them; and the wrapper
 * part the cut skipped, for the walker.
 */

#include "prof/aggregate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "prof/aggregate_int.h"

/* ------------------------------------------------------------------ */
/* Collapsed stacks                                                    */
/* ------------------------------------------------------------------ */

/* Merged lines: the string table interns each distinct line once; an
 * open-addressed map from its offset to a slot in values. */
struct collapsed {
    struct ha_strtab lines;
    uint32_t *offs; /* per line, in first-seen order */
    double *values;
    size_t n, cap;
    uint32_t *map; /* offset -> line + 1 */
    size_t map_cap;
};

static int
collapsed_map_grow(struct collapsed *c)
{
    size_t cap = c->map_cap ? c->map_cap * 2 : 1024;
    uint32_t *m = calloc(cap, sizeof(*m));

    if (m == NULL)
        return -1;
    for (size_t k = 0; k < c->n; k++) {
        size_t j = ((size_t)c->offs[k] * 2654435761u) & (cap - 1);

        while (m[j] != 0)
            j = (j + 1) & (cap - 1);
        m[j] = (uint32_t)k + 1;
    }
    free(c->map);
    c->map = m;
    c->map_cap = cap;
    return 0;
}

static int
collapsed_add(struct collapsed *c, const char *text, size_t len, double v)
{
    uint32_t off = ha_strtab_intern(&c->lines, text, len);
    size_t j;

    if (off == UINT32_MAX)
        return -1;
    if ((c->n + 1) * 2 > c->map_cap && collapsed_map_grow(c) != 0)
        return -1;
    j = ((size_t)off * 2654435761u) & (c->map_cap - 1);
    while (c->map[j] != 0) {
        if (c->offs[c->map[j] - 1] == off) {
            c->values[c->map[j] - 1] += v;
            return 0;
        }
        j = (j + 1) & (c->map_cap - 1);
    }
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 256;
        uint32_t *o = realloc(c->offs, ncap * sizeof(*o));
        double *vv;

        if (o == NULL)
            return -1;
        c->offs = o;
        if ((vv = realloc(c->values, ncap * sizeof(*vv))) == NULL)
            return -1;
        c->values = vv;
        c->cap = ncap;
    }
    c->offs[c->n] = off;
    c->values[c->n] = v;
    c->map[j] = (uint32_t)++c->n;
    return 0;
}

/* Writes frames [from, to) of stack i (resolved into r->sa), inline
 * entries below skip of frame `from` left out, into line in collapsed
 * form, replacing what line held. */
static void
collapse_span(const struct resolver *r, const struct ha_heapv2 *p, size_t i,
              size_t from, uint32_t skip, size_t to, const struct ha_syms *syms,
              struct ha_buf *line)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);

    ha_buf_reset(line);
    /* Root first: outermost frame, and within a frame the real
     * function before what was inlined into it. */
    for (size_t j = to; j-- > from;) {
        uint64_t pc = ha_aggregate_lookup_pc(f, j);
        const struct ha_syms_addr *sa;
        uint32_t low = j == from ? skip : 0;

        if (f[j] >= HA_AGGREGATE_HIGH_ADDR)
            continue;
        sa = r->sa[j];
        if (sa == NULL || sa->n == 0) {
            ha_buf_printf(line, "%s0x%016" PRIx64, line->len ? ";" : "", pc);
            continue;
        }
        if (low >= sa->n)
            low = sa->n - 1;
        for (uint32_t q = sa->n; q-- > low;) {
            const char *name =
                ha_syms_str(syms, syms->frames[sa->first + q].func);

            if (line->len)
                ha_buf_append_u8(line, ';');
            if (*name == '\0')
                ha_buf_printf(line, "0x%016" PRIx64, pc);
            else
                ha_buf_append_str(line, name);
            if (q + 1 < sa->n) /* inlined into the next outer one */
                ha_buf_append_str(line, "[inline]");
        }
    }
}

/* The stack (resolved into r, cut) from its site on, collapsed. */
void
ha_aggregate_collapse_one(const struct resolver *r, const struct ha_heapv2 *p,
                          size_t i, const struct ha_syms *syms,
                          struct ha_buf *line)
{
    collapse_span(r, p, i, r->start, r->skip, p->stacks[i].n_frames, syms,
                  line);
}

/* The wrapper part the cut skipped (between the allocator's frames and
 * the site), collapsed; empty when none. */
void
ha_aggregate_collapse_wrappers(const struct resolver *r,
                               const struct ha_heapv2 *p, size_t i,
                               const struct ha_syms *syms, struct ha_buf *line)
{
    const uint64_t *f = ha_heapv2_stack_frames(p, i);
    const struct ha_syms_addr *sa;

    ha_buf_reset(line);
    if (r->start <= r->alloc_end && r->skip == 0)
        return;
    /* Frames [alloc_end, start) whole, then the site frame's inline
     * entries below the site, its innermost last. */
    collapse_span(r, p, i, r->alloc_end, 0, r->start, syms, line);
    if (r->skip == 0 || f[r->start] >= HA_AGGREGATE_HIGH_ADDR ||
        (sa = r->sa[r->start]) == NULL)
        return;
    {
        struct ha_buf tail = HA_BUF_INIT;
        size_t keep = line->len;

        for (uint32_t q = r->skip; q-- > 0;) {
            const char *name =
                ha_syms_str(syms, syms->frames[sa->first + q].func);

            if (tail.len)
                ha_buf_append_u8(&tail, ';');
            if (*name == '\0')
                ha_buf_printf(&tail, "0x%016" PRIx64,
                              ha_aggregate_lookup_pc(f, r->start));
            else
                ha_buf_append_str(&tail, name);
            ha_buf_append_str(&tail, "[inline]");
        }
        /* Root first: the site frame's entries come before the frames
         * it called. */
        if (keep > 0) {
            ha_buf_append_u8(&tail, ';');
            ha_buf_append(&tail, line->data, keep);
        }
        ha_buf_reset(line);
        ha_buf_append(line, tail.data, tail.len);
        if (ha_buf_failed(&tail))
            line->failed = true;
        ha_buf_free(&tail);
    }
}

double
ha_agg_stack_value(const struct ha_heapv2_stack *s, enum ha_agg_value value)
{
    switch (value) {
    case HA_AGG_INUSE_OBJS:
        return s->objs;
    case HA_AGG_ALLOC_BYTES:
        return s->accum_bytes;
    case HA_AGG_ALLOC_OBJS:
        return s->accum_objs;
    default:
        return s->bytes;
    }
}

int
ha_agg_collapsed(const struct ha_heapv2 *p, const struct ha_syms *syms,
                 bool objects, struct ha_buf *out)
{
    return ha_agg_collapsed_value(
        p, syms, objects ? HA_AGG_INUSE_OBJS : HA_AGG_INUSE_BYTES, out);
}

int
ha_agg_collapsed_value(const struct ha_heapv2 *p, const struct ha_syms *syms,
                       enum ha_agg_value value, struct ha_buf *out)
{
    struct collapsed c = {0};
    struct ha_buf line = HA_BUF_INIT;
    struct resolver rs;
    int ret = -1;

    if (ha_aggregate_resolver_init(&rs, syms, NULL) != 0)
        goto done;
    for (size_t i = 0; i < p->n_stacks; i++) {
        size_t start = ha_aggregate_resolve_stack(&rs, p, i);
        double v = ha_agg_stack_value(&p->stacks[i], value);

        if (start == SIZE_MAX)
            goto done;
        if (v == 0)
            continue; /* a stack with no weight draws nothing */
        ha_aggregate_collapse_one(&rs, p, i, syms, &line);
        if (ha_buf_failed(&line))
            goto done;
        if (line.len > 0 &&
            collapsed_add(&c, (const char *)line.data, line.len, v) != 0)
            goto done;
    }
    for (size_t k = 0; k < c.n; k++)
        ha_buf_printf(out, "%s %.0f\n", ha_strtab_str(&c.lines, c.offs[k]),
                      c.values[k]);
    ret = ha_buf_failed(out) ? -1 : 0;
done:
    ha_aggregate_resolver_free(&rs);
    free(c.offs);
    free(c.values);
    free(c.map);
    ha_strtab_free(&c.lines);
    ha_buf_free(&line);
    return ret;
}
