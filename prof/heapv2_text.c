/* SPDX-License-Identifier: MIT
 *
 * The text a heap_v2 dump is read from (see heapv2.h): the input with
 * jemalloc's leak report lines removed and how to give line numbers of
 * the file as written; a descriptor's window refilled as lines are taken
 * (ha_heapv2_parse_fd); the parser's lines, its errors, and its arrays
 * grown by doubling.
 */
#include "prof/heapv2_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Leak lines                                                          */
/* ------------------------------------------------------------------ */

/* The first LEAK_MARK in buf[0 .. len), or NULL: memchr for its '<',
 * which a dump otherwise never has, is many times faster than memmem
 * over a whole dump. */
static const char *
find_leak(const char *buf, size_t len)
{
    const char *p = buf, *e = buf + len;

    while ((p = memchr(p, '<', (size_t)(e - p))) != NULL) {
        if ((size_t)(e - p) >= LEAK_MARK_LEN &&
            memcmp(p, LEAK_MARK, LEAK_MARK_LEN) == 0)
            return p;
        p++;
    }
    return NULL;
}

int
ha_heapv2_text_init(struct text *t, const char *buf, size_t len, char *err,
                    size_t errlen)
{
    const char *hit;
    size_t pos = 0, out = 0, cap = 0;

    memset(t, 0, sizeof(*t));
    t->p = buf;
    t->len = len;
    hit = find_leak(buf, len);
    if (hit == NULL)
        return 0;

    t->owned = malloc(len);
    if (t->owned == NULL)
        goto oom;
    while (hit != NULL) {
        size_t at = (size_t)(hit - buf), nl = 0, end;
        const char *eol;

        memcpy(t->owned + out, buf + pos, at - pos);
        out += at - pos;
        /* The run ends after its newline. A run that ends at a newline
         * glued to more leak text ends after that one too. */
        end = at;
        for (;;) {
            eol = memchr(buf + end, '\n', len - end);
            end = eol != NULL ? (size_t)(eol - buf) + 1 : len;
            nl += eol != NULL;
            if (end + LEAK_MARK_LEN > len ||
                memcmp(buf + end, LEAK_MARK, LEAK_MARK_LEN) != 0)
                break;
        }
        if (t->n_segs == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct leak_seg *s = realloc(t->segs, ncap * sizeof(*s));

            if (s == NULL)
                goto oom;
            t->segs = s;
            cap = ncap;
        }
        t->segs[t->n_segs].clean_off = out;
        t->segs[t->n_segs].newlines = nl;
        t->n_segs++;
        pos = end;
        hit = len - pos >= LEAK_MARK_LEN
                  ? find_leak(buf + pos, len - pos)
                  : NULL;
    }
    memcpy(t->owned + out, buf + pos, len - pos);
    out += len - pos;
    t->p = t->owned;
    t->len = out;
    return 0;

oom:
    ha_err_set(err, errlen, "out of memory removing leak report lines");
    return -1;
}

void
ha_heapv2_text_free(struct text *t)
{
    free(t->owned);
    free(t->segs);
}

/* Line number in the file as written of the cleaned line that starts at
 * line_off and is the clean_line'th of the cleaned text: leak lines that
 * were removed before it count; a run spliced into it does not. */
size_t
ha_heapv2_text_orig_line(const struct text *t, size_t clean_line,
                         size_t line_off)
{
    size_t n = clean_line;

    for (size_t i = 0; i < t->n_segs && t->segs[i].clean_off <= line_off;
         i++)
        n += t->segs[i].newlines;
    return n;
}

/* Total newlines removed (what n_leak_lines reports). */
size_t
ha_heapv2_text_leak_lines(const struct text *t)
{
    size_t n = 0;

    for (size_t i = 0; i < t->n_segs; i++)
        n += t->segs[i].newlines ? t->segs[i].newlines : 1;
    return n;
}

int
ha_heapv2_clean(const char *buf, size_t len, struct ha_buf *out)
{
    struct text t;
    char err[64];

    if (ha_heapv2_text_init(&t, buf, len, err, sizeof(err)) != 0)
        return -1;
    ha_buf_append(out, t.p, t.len);
    ha_heapv2_text_free(&t);
    return ha_buf_failed(out) ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* A descriptor's window                                               */
/* ------------------------------------------------------------------ */

/* Stream mode: makes the text hold a whole line from pos on (or the
 * file's end), moving what is left to the front and reading more.
 * Returns false on a read error or allocation failure (st.eof set, err
 * set) or when a leak run turns up (st.leak set). */
static bool
stream_fill(struct parser *ps)
{
    struct stream *st = &ps->st;

    while (!st->eof && memchr(ps->text.p + ps->pos, '\n',
                              ps->text.len - ps->pos) == NULL) {
        size_t keep = ps->text.len - ps->pos, from;
        ssize_t n;

        if (keep > 0)
            memmove(st->buf, st->buf + ps->pos, keep);
        ps->pos = 0;
        ps->line_off = 0;
        if (keep + st->chunk > st->cap) {
            size_t cap = st->cap ? st->cap * 2 : 2 * st->chunk;
            char *b;

            while (cap < keep + st->chunk)
                cap *= 2;
            b = realloc(st->buf, cap);

            if (b == NULL) {
                ha_err_set(ps->err, ps->errlen, "out of memory");
                st->eof = st->failed = true;
                return false;
            }
            st->buf = b;
            st->cap = cap;
        }
        do
            n = read(st->fd, st->buf + keep, st->chunk);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            ha_err_set(ps->err, ps->errlen, "read failed: %s",
                       strerror(errno));
            st->eof = st->failed = true;
            return false;
        }
        st->total += (uint64_t)n;
        if (n == 0 || st->total > HA_HEAPV2_MAX_LEN)
            st->eof = true;
        /* A mark split by the refill is found too: look from a mark's
         * length before the new bytes. */
        from = keep > LEAK_MARK_LEN ? keep - LEAK_MARK_LEN : 0;
        if (n > 0 && find_leak(st->buf + from, keep + (size_t)n - from) !=
                         NULL) {
            st->leak = true;
            return false;
        }
        ps->text.p = st->buf;
        ps->text.len = keep + (size_t)n;
    }
    return true;
}

/* Stream mode: reads the rest of the file into the buffer after pos. */
int
ha_heapv2_stream_rest(struct parser *ps)
{
    struct stream *st = &ps->st;

    while (!st->eof) {
        size_t used = ps->text.len;
        ssize_t n;

        if (used == st->cap) {
            char *b = realloc(st->buf, st->cap * 2);

            if (b == NULL) {
                ha_err_set(ps->err, ps->errlen, "out of memory");
                return -1;
            }
            st->buf = b;
            st->cap *= 2;
            ps->text.p = b;
        }
        do
            n = read(st->fd, st->buf + used, st->cap - used);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            ha_err_set(ps->err, ps->errlen, "read failed: %s",
                       strerror(errno));
            return -1;
        }
        st->total += (uint64_t)n;
        if (n == 0 || st->total > HA_HEAPV2_MAX_LEN)
            st->eof = true;
        ps->text.len = used + (size_t)n;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Lines, errors, arrays                                               */
/* ------------------------------------------------------------------ */

/* Advances to the next line. Returns false at end of input. */
bool
ha_heapv2_next_line(struct parser *ps)
{
    const char *base, *nl;
    size_t len;

    if (ps->st.fd >= 0 && !stream_fill(ps))
        return false;
    base = ps->text.p;
    len = ps->text.len;
    if (ps->pos >= len)
        return false;
    ps->line_off = ps->pos;
    ps->line_no++;
    ps->s = base + ps->pos;
    nl = memchr(ps->s, '\n', len - ps->pos);
    ps->e = nl != NULL ? nl : base + len;
    ps->pos = nl != NULL ? (size_t)(nl - base) + 1 : len;
    if (ps->e > ps->s && ps->e[-1] == '\r')
        ps->e--;
    return true;
}

/* Sets err to "line N: expected <what>" for the current line (or "at
 * end of file"). The line itself is never quoted: a file that is not a
 * heap dump may hold secrets (a key, a config with passwords), and the
 * error reaches whoever asked. Returns -1. */
int
ha_heapv2_fail(struct parser *ps, const char *what, bool at_eof)
{
    if (at_eof) {
        ha_err_set(ps->err, ps->errlen, "line %zu: expected %s, got end of "
                   "file", ha_heapv2_text_orig_line(&ps->text,
                                                    ps->line_no + 1,
                                                    ps->text.len), what);
        return -1;
    }
    ha_err_set(ps->err, ps->errlen,
               "line %zu: expected %s (the line, %zu bytes, is not one)",
               ha_heapv2_text_orig_line(&ps->text, ps->line_no,
                                        ps->line_off), what,
               (size_t)(ps->e - ps->s));
    return -1;
}

/* Makes *arr (*cap elements of size bytes) hold need, doubling from 256
 * so that a dump's records are copied O(log n) times. Returns 0, or -1
 * with err set. */
int
ha_heapv2_grow(void **arr, size_t *cap, size_t need, size_t size,
               struct parser *ps)
{
    size_t ncap;
    void *a;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 256;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / size || (a = realloc(*arr, ncap * size)) == NULL) {
        ha_err_set(ps->err, ps->errlen, "line %zu: out of memory",
                   ha_heapv2_text_orig_line(&ps->text, ps->line_no,
                                            ps->line_off));
        return -1;
    }
    *arr = a;
    *cap = ncap;
    return 0;
}
