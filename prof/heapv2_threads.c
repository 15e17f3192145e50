/* SPDX-License-Identifier: MIT
 *
 * A heap_v2 dump's per-thread lines (see heapv2.h, "Threads"): the
 * header's `t<uid>:` lines with their names, kept in uid order so a
 * thread is found by its uid, and each backtrace's, kept with the
 * backtrace; the sums of a backtrace's thread lines that its threads'
 * shares are parts of.
 */
#include "prof/heapv2_int.h"

#include <stdlib.h>

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

/* A thread's name: rest of the line from p (jemalloc writes it after
 * one blank), kept in out->names. */
static int
read_name(struct parser *ps, const char *p, struct ha_heapv2_thread *t)
{
    struct ha_heapv2 *out = ps->out;
    size_t n = (size_t)(ps->e - p);

    if (n == 0)
        return 0;
    if (n > HA_HEAPV2_NAME_MAX)
        n = HA_HEAPV2_NAME_MAX;
    if (out->names_len + n + 1 > UINT32_MAX - 1)
        return ha_heapv2_fail(ps, "shorter thread names", false);
    if (ha_heapv2_grow((void **)&out->names, &ps->names_cap,
                       out->names_len + n + 1, 1, ps) != 0)
        return -1;
    t->name_off = (uint32_t)out->names_len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        /* isgraph or isblank in the C locale: what jemalloc accepts. */
        out->names[out->names_len++] =
            (c > 0x20 && c < 0x7f) || c == ' ' || c == '\t' ? (char)c : '?';
    }
    out->names[out->names_len++] = '\0';
    return 0;
}

/* After a backtrace's t* line: its per-thread lines, kept in out->tlines
 * from st->tline_off on. Stops before the first line that is not one,
 * which the caller reads. Returns 0, or -1 with err set. */
int
ha_heapv2_read_stack_threads(struct parser *ps, struct ha_heapv2_stack *st)
{
    struct ha_heapv2 *out = ps->out;
    const char *after, *rest;
    size_t save_no, save_off;

    st->tline_off = (uint32_t)out->n_tlines;
    for (;;) {
        struct ha_heapv2_counts c;
        uint64_t uid;

        save_no = ps->line_no;
        save_off = ps->line_off;
        if (!ha_heapv2_next_line(ps))
            break;
        if (ha_heapv2_thread_line(ps, &after, &uid) != 2) {
            /* Not ours: let the caller read it. */
            ps->pos = ps->line_off; /* the line just read, wherever a
                                       * refill moved it */
            ps->line_no = save_no;
            ps->line_off = save_off;
            break;
        }
        if (ha_heapv2_read_counts(ps, after, &c, &rest) != 0)
            return -1;
        if (ha_heapv2_skip_ws(rest, ps->e) != ps->e)
            return ha_heapv2_fail(ps, "end of line after the thread's "
                                  "counts", false);
        if (st->n_threads == UINT32_MAX || out->n_tlines >= UINT32_MAX)
            return ha_heapv2_fail(ps, "fewer thread lines", false);
        if (out->n_tlines >= ps->tlines_cap &&
            ha_heapv2_grow((void **)&out->tlines, &ps->tlines_cap,
                           out->n_tlines + 1, sizeof(*out->tlines),
                           ps) != 0)
            return -1;
        out->tlines[out->n_tlines].uid = uid;
        out->tlines[out->n_tlines].raw = c;
        out->n_tlines++;
        st->n_threads++;
    }
    return 0;
}

/* After the header's t* line: the per-thread lines; a thread name may
 * follow the counts. Stops before the first line that is not one, which
 * the caller reads. Returns 0, or -1 with err set. */
int
ha_heapv2_read_header_threads(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    const char *after, *rest;
    uint64_t uid;
    int kind;

    for (;;) {
        struct ha_heapv2_thread *t;
        size_t save_no = ps->line_no, save_off = ps->line_off;

        if (!ha_heapv2_next_line(ps))
            return 0;
        kind = ha_heapv2_thread_line(ps, &after, &uid);
        if (kind != 2) {
            ps->pos = ps->line_off; /* the line just read, wherever a
                                       * refill moved it */
            ps->line_no = save_no;
            ps->line_off = save_off;
            return 0;
        }
        if (out->n_threads == UINT32_MAX)
            return ha_heapv2_fail(ps, "fewer thread lines", false);
        if (ha_heapv2_grow((void **)&out->threads, &ps->threads_cap,
                           (size_t)out->n_threads + 1, sizeof(*out->threads),
                           ps) != 0)
            return -1;
        t = &out->threads[out->n_threads];
        t->uid = uid;
        t->name_off = HA_HEAPV2_NO_NAME;
        if (ha_heapv2_read_counts(ps, after, &t->raw, &rest) != 0)
            return -1;
        /* jemalloc writes " <name>" when the thread has one. */
        if (rest < ps->e && (*rest == ' ' || *rest == '\t') &&
            read_name(ps, rest + 1, t) != 0)
            return -1;
        out->n_threads++;
    }
}

static int
cmp_thread(const void *a, const void *b)
{
    uint64_t x = ((const struct ha_heapv2_thread *)a)->uid;
    uint64_t y = ((const struct ha_heapv2_thread *)b)->uid;

    return (x > y) - (x < y);
}

/* The header's threads in uid order, as jemalloc writes them, so that
 * ha_heapv2_thread_of can search them (a text in another order is
 * sorted; its duplicates keep one found first). */
void
ha_heapv2_sort_threads(struct ha_heapv2 *out)
{
    for (uint32_t i = 1; i < out->n_threads; i++)
        if (out->threads[i - 1].uid > out->threads[i].uid) {
            qsort(out->threads, out->n_threads, sizeof(*out->threads),
                  cmp_thread);
            return;
        }
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */
/* ------------------------------------------------------------------ */

bool
ha_heapv2_has_names(const struct ha_heapv2 *p)
{
    for (uint32_t i = 0; i < p->n_threads; i++)
        if (p->threads[i].name_off != HA_HEAPV2_NO_NAME)
            return true;
    return false;
}

const struct ha_heapv2_thread *
ha_heapv2_thread_of(const struct ha_heapv2 *p, uint64_t uid)
{
    size_t lo = 0, hi = p->n_threads;

    /* In uid order: jemalloc writes them so (its tdata tree's), and
     * the parser sorts any other order. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (p->threads[mid].uid < uid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < p->n_threads && p->threads[lo].uid == uid)
        return &p->threads[lo];
    return NULL;
}

void
ha_heapv2_stack_thread_sums(const struct ha_heapv2 *p, size_t s,
                            double sum[4])
{
    const struct ha_heapv2_stack *st = &p->stacks[s];

    sum[0] = sum[1] = sum[2] = sum[3] = 0;
    for (uint32_t k = 0; k < st->n_threads; k++) {
        const struct ha_heapv2_counts *c = &p->tlines[st->tline_off + k].raw;

        sum[0] += (double)c->objs;
        sum[1] += (double)c->bytes;
        sum[2] += (double)c->accum_objs;
        sum[3] += (double)c->accum_bytes;
    }
}
