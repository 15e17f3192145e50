/* SPDX-License-Identifier: MIT
 *
 * jemalloc heap_v2 dump parser (format and trust statement in heapv2.h).
 * One pass over the text with memchr for line ends and hand-written
 * number readers, writing into arrays that grow by doubling: a 15 MB
 * dump is read in tens of milliseconds and nothing points into the input.
 */
#include "prof/heapv2.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Leak lines                                                          */
/* ------------------------------------------------------------------ */

/* Where a removed `<jemalloc>:` run was: its offset in the cleaned text
 * and how many newlines it took with it, to give line numbers of the
 * file as written. */
struct leak_seg {
    size_t clean_off;
    size_t newlines;
};

#define LEAK_MARK "<jemalloc>:"
#define LEAK_MARK_LEN (sizeof(LEAK_MARK) - 1)

/* The input with every `<jemalloc>:` through its newline removed, or
 * the input itself when it holds none (the common case: no copy). */
struct text {
    const char *p;
    size_t len;
    char *owned;           /* the cleaned copy, or NULL */
    struct leak_seg *segs; /* removed runs, by clean_off */
    size_t n_segs;
};

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

static int
text_init(struct text *t, const char *buf, size_t len, char *err,
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

static void
text_free(struct text *t)
{
    free(t->owned);
    free(t->segs);
}

/* Line number in the file as written of the cleaned line that starts at
 * line_off and is the clean_line'th of the cleaned text: leak lines that
 * were removed before it count; a run spliced into it does not. */
static size_t
text_orig_line(const struct text *t, size_t clean_line, size_t line_off)
{
    size_t n = clean_line;

    for (size_t i = 0; i < t->n_segs && t->segs[i].clean_off <= line_off;
         i++)
        n += t->segs[i].newlines;
    return n;
}

/* Total newlines removed (what n_leak_lines reports). */
static size_t
text_leak_lines(const struct text *t)
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

    if (text_init(&t, buf, len, err, sizeof(err)) != 0)
        return -1;
    ha_buf_append(out, t.p, t.len);
    text_free(&t);
    return ha_buf_failed(out) ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Lines and tokens                                                    */
/* ------------------------------------------------------------------ */

/* Reading from a descriptor (ha_heapv2_parse_fd): the text is a window
 * of the file in a buffer that is refilled as lines are taken, so no
 * copy of the whole file is ever made. */
struct stream {
    int fd;           /* -1: the whole text is in memory */
    char *buf;        /* text.p points here */
    size_t cap;
    bool eof;
    bool leak;        /* a `<jemalloc>:` run was seen: start over with
                         the whole file (its runs may span lines) */
    bool failed;      /* a read or an allocation failed (err set) */
    uint64_t total;   /* bytes read so far */
    size_t chunk;     /* bytes read at a time: stream_chunk, or less for
                         a smaller file */
};

struct parser {
    struct text text;
    struct stream st;
    size_t pos;       /* start of the next line */
    size_t line_no;   /* 1-based number of the current cleaned line */
    size_t line_off;  /* offset of the current line */
    const char *s;    /* current line, without "\n" or a trailing "\r" */
    const char *e;
    char *err;
    size_t errlen;
    struct ha_heapv2 *out;
    size_t stacks_cap;
    size_t frames_cap;
    size_t threads_cap;
    size_t names_cap;
    size_t tlines_cap;
};

/* Bytes read at a time (ha_heapv2_set_stream_chunk). */
static size_t stream_chunk = (size_t)1 << 20;

void
ha_heapv2_set_stream_chunk(size_t n)
{
    stream_chunk = n > 0 ? n : (size_t)1 << 20;
}

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

/* Advances to the next line. Returns false at end of input. */
static bool
next_line(struct parser *ps)
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
static int
fail(struct parser *ps, const char *what, bool at_eof)
{
    if (at_eof) {
        ha_err_set(ps->err, ps->errlen, "line %zu: expected %s, got end of "
                   "file", text_orig_line(&ps->text, ps->line_no + 1,
                                          ps->text.len), what);
        return -1;
    }
    ha_err_set(ps->err, ps->errlen,
               "line %zu: expected %s (the line, %zu bytes, is not one)",
               text_orig_line(&ps->text, ps->line_no, ps->line_off), what,
               (size_t)(ps->e - ps->s));
    return -1;
}

static const char *
skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Reads a decimal uint64 at *pp. Returns 0, or -1 (no digit, overflow);
 * *overflow tells which. */
static int
read_u64(const char **pp, const char *e, uint64_t *v, bool *overflow)
{
    const char *p = *pp;
    uint64_t x = 0;

    *overflow = false;
    if (p >= e || *p < '0' || *p > '9')
        return -1;
    /* 19 digits cannot overflow: no check for them (a dump has millions
     * of short counts). */
    for (int n = 0; n < 19 && p < e && *p >= '0' && *p <= '9'; n++, p++)
        x = x * 10 + (unsigned)(*p - '0');
    while (p < e && *p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');

        /* x * 10 + d <= UINT64_MAX, without a division per digit: a
         * dump has millions of digits. */
        if (x > UINT64_MAX / 10 || (x == UINT64_MAX / 10 &&
                                    d > (unsigned)(UINT64_MAX % 10))) {
            *overflow = true;
            return -1;
        }
        x = x * 10 + d;
        p++;
    }
    *pp = p;
    *v = x;
    return 0;
}

/* Reads "0x<1..16 hex digits>" (jemalloc's %#x; a bare 0 is also what
 * %#x prints for zero). Returns 0 or -1. */
static int
read_hex(const char **pp, const char *e, uint64_t *v)
{
    const char *p = *pp, *digits;
    uint64_t x = 0;
    int d;

    if (e - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    digits = p;
    /* The count is checked once at the end: the bits shifted out of x
     * by a 17th digit do not matter, it is refused. */
    while (p < e && (d = ha_hex_digit(*p)) >= 0) {
        x = (x << 4) | (uint64_t)d;
        p++;
    }
    if (p == digits || p - digits > 16 ||
        (p < e && *p != ' ' && *p != '\t'))
        return -1;
    *pp = p;
    *v = x;
    return 0;
}

#define COUNTS "<objs>: <bytes> [<objs>: <bytes>]"
#define COUNTS_SHAPE "'" COUNTS "'"

/* Parses "<n>: <n> [<n>: <n>]" at p; *rest gets what follows. Returns 0,
 * or -1 with err set. */
static int
read_counts(struct parser *ps, const char *p, struct ha_heapv2_counts *c,
            const char **rest)
{
    const char *e = ps->e;
    uint64_t v[4];
    bool ovf;

    for (int i = 0; i < 4; i++) {
        p = skip_ws(p, e);
        if (i == 2) {
            if (p >= e || *p != '[')
                return fail(ps, "'[' before the cumulative counts in "
                            COUNTS_SHAPE, false);
            p = skip_ws(p + 1, e);
        }
        if (read_u64(&p, e, &v[i], &ovf) != 0)
            return fail(ps, ovf ? "a count below 2^64 in " COUNTS_SHAPE
                                : "a decimal count in " COUNTS_SHAPE,
                        false);
        p = skip_ws(p, e);
        if (i == 0 || i == 2) {
            if (p >= e || *p != ':')
                return fail(ps, "':' between the counts in " COUNTS_SHAPE,
                            false);
            p++;
        }
    }
    if (p >= e || *p != ']')
        return fail(ps, "']' after the counts in " COUNTS_SHAPE, false);
    c->objs = v[0];
    c->bytes = v[1];
    c->accum_objs = v[2];
    c->accum_bytes = v[3];
    *rest = p + 1;
    return 0;
}

/* Classifies the current line: a thread line is "t*:" or "t<digits>:"
 * after optional blanks. Returns 1 for t*, 2 for t<uid> (*uid set; a uid
 * of 2^64 or more reads as UINT64_MAX: the line is still a thread's),
 * 0 otherwise; *after points past the colon. */
static int
thread_line(const struct parser *ps, const char **after, uint64_t *uid)
{
    const char *p = skip_ws(ps->s, ps->e), *e = ps->e;
    bool ovf;

    if (p >= e || *p != 't' || ++p >= e)
        return 0;
    if (*p == '*') {
        if (++p >= e || *p != ':')
            return 0;
        *after = p + 1;
        return 1;
    }
    if (*p < '0' || *p > '9')
        return 0;
    if (read_u64(&p, e, uid, &ovf) != 0) {
        *uid = UINT64_MAX;
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p >= e || *p != ':')
        return 0;
    *after = p + 1;
    return 2;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

static int
grow(void **arr, size_t *cap, size_t need, size_t size, struct parser *ps)
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
                   text_orig_line(&ps->text, ps->line_no, ps->line_off));
        return -1;
    }
    *arr = a;
    *cap = ncap;
    return 0;
}

/* Reads the addresses of an '@' line into a new stack record. */
static int
read_backtrace(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    struct ha_heapv2_stack *st;
    const char *p = skip_ws(ps->s, ps->e) + 1, *e = ps->e;
    size_t first = out->n_frames;

    if (grow((void **)&out->stacks, &ps->stacks_cap, out->n_stacks + 1,
             sizeof(*out->stacks), ps) != 0)
        return -1;
    for (;;) {
        uint64_t pc;

        p = skip_ws(p, e);
        if (p >= e)
            break;
        if (read_hex(&p, e, &pc) != 0)
            return fail(ps, "hexadecimal frame addresses (0x<1-16 hex "
                        "digits>) after '@'", false);
        if (out->n_frames - first >= UINT32_MAX ||
            grow((void **)&out->frames, &ps->frames_cap, out->n_frames + 1,
                 sizeof(*out->frames), ps) != 0)
            return -1;
        out->frames[out->n_frames++] = pc;
    }
    st = &out->stacks[out->n_stacks];
    memset(st, 0, sizeof(*st));
    st->frame_off = (uint32_t)first;
    st->n_frames = (uint32_t)(out->n_frames - first);
    st->line = (uint32_t)text_orig_line(&ps->text, ps->line_no,
                                        ps->line_off);
    return 0;
}

/* After an '@' line: its t* line, then any per-thread lines. */
static int
read_stack_counts(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    struct ha_heapv2_stack *st = &out->stacks[out->n_stacks];
    const char *after, *rest;
    size_t save_no, save_off;
    uint64_t uid0;

    if (!next_line(ps))
        return fail(ps, "'t*: " COUNTS "' after the backtrace", true);
    if (thread_line(ps, &after, &uid0) != 1)
        return fail(ps, "'t*: " COUNTS "' after the backtrace",
                    false);
    if (read_counts(ps, after, &st->raw, &rest) != 0)
        return -1;
    if (skip_ws(rest, ps->e) != ps->e)
        return fail(ps, "end of line after the t* counts", false);

    st->tline_off = (uint32_t)out->n_tlines;
    for (;;) {
        struct ha_heapv2_counts c;
        uint64_t uid;

        save_no = ps->line_no;
        save_off = ps->line_off;
        if (!next_line(ps))
            break;
        if (thread_line(ps, &after, &uid) != 2) {
            /* Not ours: let the caller read it. */
            ps->pos = ps->line_off; /* the line just read, wherever a
                                       * refill moved it */
            ps->line_no = save_no;
            ps->line_off = save_off;
            break;
        }
        if (read_counts(ps, after, &c, &rest) != 0)
            return -1;
        if (skip_ws(rest, ps->e) != ps->e)
            return fail(ps, "end of line after the thread's counts", false);
        if (st->n_threads == UINT32_MAX || out->n_tlines >= UINT32_MAX)
            return fail(ps, "fewer thread lines", false);
        if (out->n_tlines >= ps->tlines_cap &&
            grow((void **)&out->tlines, &ps->tlines_cap, out->n_tlines + 1,
                 sizeof(*out->tlines), ps) != 0)
            return -1;
        out->tlines[out->n_tlines].uid = uid;
        out->tlines[out->n_tlines].raw = c;
        out->n_tlines++;
        st->n_threads++;
    }

    ha_heapv2_scale(out->period, st->raw.objs, st->raw.bytes, &st->objs,
                    &st->bytes);
    ha_heapv2_scale(out->period, st->raw.accum_objs, st->raw.accum_bytes,
                    &st->accum_objs, &st->accum_bytes);
    out->scaled_objs += st->objs;
    out->scaled_bytes += st->bytes;
    out->scaled_accum_objs += st->accum_objs;
    out->scaled_accum_bytes += st->accum_bytes;
    out->n_stacks++;
    return 0;
}

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
        return fail(ps, "shorter thread names", false);
    if (grow((void **)&out->names, &ps->names_cap, out->names_len + n + 1, 1,
             ps) != 0)
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

static int
read_header(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    const char *p, *after, *rest;
    uint64_t uid;
    bool ovf;
    int kind;

    if (!next_line(ps))
        return fail(ps, "'heap_v2/<sample period>' (the file is empty)",
                    true);
    p = ps->s;
    if (ps->e - p < 8 || memcmp(p, "heap_v2/", 8) != 0)
        return fail(ps, "'heap_v2/<sample period>'", false);
    p += 8;
    if (read_u64(&p, ps->e, &out->period, &ovf) != 0 ||
        skip_ws(p, ps->e) != ps->e)
        return fail(ps, ovf ? "a sample period below 2^64 in 'heap_v2/<n>'"
                            : "a decimal sample period in 'heap_v2/<n>'",
                    false);

    if (!next_line(ps))
        return fail(ps, "'t*: " COUNTS "' (the process total)", true);
    if (thread_line(ps, &after, &uid) != 1)
        return fail(ps, "'t*: " COUNTS "' (the process total)",
                    false);
    if (read_counts(ps, after, &out->total, &rest) != 0)
        return -1;

    /* Per-thread lines; a thread name may follow the counts. */
    for (;;) {
        struct ha_heapv2_thread *t;
        size_t save_no = ps->line_no, save_off = ps->line_off;

        if (!next_line(ps))
            return 0;
        kind = thread_line(ps, &after, &uid);
        if (kind != 2) {
            ps->pos = ps->line_off; /* the line just read, wherever a
                                       * refill moved it */
            ps->line_no = save_no;
            ps->line_off = save_off;
            return 0;
        }
        if (out->n_threads == UINT32_MAX)
            return fail(ps, "fewer thread lines", false);
        if (grow((void **)&out->threads, &ps->threads_cap,
                 (size_t)out->n_threads + 1, sizeof(*out->threads),
                 ps) != 0)
            return -1;
        t = &out->threads[out->n_threads];
        t->uid = uid;
        t->name_off = HA_HEAPV2_NO_NAME;
        if (read_counts(ps, after, &t->raw, &rest) != 0)
            return -1;
        /* jemalloc writes " <name>" when the thread has one. */
        if (rest < ps->e && (*rest == ' ' || *rest == '\t') &&
            read_name(ps, rest + 1, t) != 0)
            return -1;
        out->n_threads++;
    }
}

/* Stream mode: reads the rest of the file into the buffer after pos. */
static int
stream_rest(struct parser *ps)
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

static int
read_maps(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    size_t n;

    if (ps->st.fd >= 0 && stream_rest(ps) != 0)
        return -1;
    n = ps->text.len - ps->pos;

    out->has_maps = true;
    free(out->maps);
    out->maps = malloc(n + 1);
    if (out->maps == NULL) {
        ha_err_set(ps->err, ps->errlen, "line %zu: out of memory copying "
                   "MAPPED_LIBRARIES",
                   text_orig_line(&ps->text, ps->line_no, ps->line_off));
        return -1;
    }
    memcpy(out->maps, ps->text.p + ps->pos, n);
    out->maps[n] = '\0';
    out->maps_len = n;
    ps->pos = ps->text.len;
    return 0;
}

/* ------------------------------------------------------------------ */
/* API                                                                 */
/* ------------------------------------------------------------------ */

void
ha_heapv2_scale(uint64_t period, uint64_t objs, uint64_t bytes,
                double *sobjs, double *sbytes)
{
    double n = (double)objs, s = (double)bytes, factor;

    *sobjs = n;
    *sbytes = s;
    if (period == 0 || objs == 0 || bytes == 0)
        return;
    factor = 1.0 / (1.0 - exp(-((s / n) / (double)period)));
    if (!isfinite(factor))
        return;
    *sobjs = n * factor;
    *sbytes = s * factor;
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
static void
sort_threads(struct ha_heapv2 *out)
{
    for (uint32_t i = 1; i < out->n_threads; i++)
        if (out->threads[i - 1].uid > out->threads[i].uid) {
            qsort(out->threads, out->n_threads, sizeof(*out->threads),
                  cmp_thread);
            return;
        }
}

/* The dump's records, after the text is set up (either mode). Returns 0
 * or -1 (err set). */
static int
parse_text(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    uint64_t uid;

    if (read_header(ps) != 0)
        return -1;
    while (next_line(ps)) {
        const char *p = skip_ws(ps->s, ps->e);

        if (p == ps->e)
            continue;
        if (*p == '@') {
            if (read_backtrace(ps) != 0 || read_stack_counts(ps) != 0)
                return -1;
            continue;
        }
        if (ps->e - p >= 17 && memcmp(p, "MAPPED_LIBRARIES:", 17) == 0 &&
            skip_ws(p + 17, ps->e) == ps->e) {
            if (read_maps(ps) != 0)
                return -1;
            break;
        }
        if (thread_line(ps, &p, &uid) != 0)
            return fail(ps, "'@ <addresses>' before a t line", false);
        return fail(ps, "'@ <addresses>', a blank line or "
                        "'MAPPED_LIBRARIES:'",
                    false);
    }
    if (ps->st.leak || ps->st.failed)
        return -1;
    sort_threads(out);
    /* Never NULL after success, so frames + frame_off is defined even for
     * a dump whose backtraces are all empty ("@" alone). */
    if (out->frames == NULL && (out->frames = calloc(1, 8)) == NULL) {
        ha_err_set(ps->err, ps->errlen, "out of memory");
        return -1;
    }
    if (out->maps == NULL && (out->maps = calloc(1, 1)) == NULL) {
        ha_err_set(ps->err, ps->errlen, "out of memory");
        return -1;
    }
    return 0;
}

int
ha_heapv2_parse(const char *buf, size_t len, struct ha_heapv2 *out,
                char *err, size_t errlen)
{
    struct parser ps;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    memset(&ps, 0, sizeof(ps));
    ps.st.fd = -1;
    ps.err = err;
    ps.errlen = errlen;
    ps.out = out;
    if (len > HA_HEAPV2_MAX_LEN) {
        ha_err_set(err, errlen, "dump of %zu bytes is larger than the "
                   "%u accepted", len, HA_HEAPV2_MAX_LEN);
        return -1;
    }
    if (buf == NULL)
        len = 0;
    if (text_init(&ps.text, buf != NULL ? buf : "", len, err, errlen) == 0) {
        out->n_leak_lines = text_leak_lines(&ps.text);
        rc = parse_text(&ps);
    }
    text_free(&ps.text);
    if (rc != 0)
        ha_heapv2_free(out);
    return rc;
}

/* Reads fd (a regular file, from offset 0) whole: the fallback when a
 * leak run turned up. */
static int
parse_whole(int fd, struct ha_heapv2 *out, char *err, size_t errlen)
{
    struct ha_buf b = HA_BUF_INIT;
    char chunk[65536];
    off_t off = 0;
    ssize_t n;
    int rc;

    for (;;) {
        n = pread(fd, chunk, sizeof(chunk), off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        ha_buf_append(&b, chunk, (size_t)n);
        off += n;
        if ((uint64_t)off > HA_HEAPV2_MAX_LEN)
            break;
    }
    if (n < 0 || ha_buf_failed(&b)) {
        ha_err_set(err, errlen, n < 0 ? "read failed" : "out of memory");
        ha_buf_free(&b);
        return -1;
    }
    rc = ha_heapv2_parse((const char *)b.data, b.len, out, err, errlen);
    ha_buf_free(&b);
    return rc;
}

int
ha_heapv2_parse_fd(int fd, uint64_t size_hint, struct ha_heapv2 *out,
                   char *err, size_t errlen)
{
    struct parser ps;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&ps, 0, sizeof(ps));
    ps.st.fd = fd;
    /* A small dump gets a buffer its size, not a whole chunk: allocated
     * bytes count toward the host's lg_prof_interval, and a listing of
     * hundreds of small dumps at 2 MiB each set off jemalloc's interval
     * dumps, which the next listing read again (growth.sh: 334 interval
     * dumps in 3 s). */
    ps.st.chunk = stream_chunk;
    if (size_hint > 0 && size_hint < stream_chunk)
        ps.st.chunk = size_hint + 1 < 4096 ? 4096 : (size_t)size_hint + 1;
    ps.err = err;
    ps.errlen = errlen;
    ps.out = out;
    if (size_hint > HA_HEAPV2_MAX_LEN) {
        ha_err_set(err, errlen, "dump of %llu bytes is larger than the "
                   "%u accepted", (unsigned long long)size_hint,
                   HA_HEAPV2_MAX_LEN);
        return -1;
    }
    /* Room for the frames and records a dump of this size holds, made
     * once: no copy as they grow (a frame is at least 4 bytes of text,
     * typically 15; a record with its t* line, 40 or more). Pages of it
     * never written are never touched. */
    ps.frames_cap = size_hint / 12 + 256;
    ps.stacks_cap = size_hint / 48 + 64;
    /* A thread line ("  t0: 1: 16 [0: 0]") is 19 bytes or more. */
    ps.tlines_cap = size_hint / 19 + 64;
    out->frames = malloc(ps.frames_cap * sizeof(*out->frames));
    out->stacks = malloc(ps.stacks_cap * sizeof(*out->stacks));
    out->tlines = malloc(ps.tlines_cap * sizeof(*out->tlines));
    if (out->frames == NULL || out->stacks == NULL || out->tlines == NULL) {
        ha_heapv2_free(out);
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    ps.text.p = "";
    rc = parse_text(&ps);
    free(ps.st.buf);
    if (rc == 0 && ps.st.total > HA_HEAPV2_MAX_LEN) {
        ha_err_set(err, errlen, "dump larger than the %u bytes accepted",
                   HA_HEAPV2_MAX_LEN);
        rc = -1;
    }
    if (rc != 0)
        ha_heapv2_free(out);
    if (ps.st.leak)
        return parse_whole(fd, out, err, errlen);
    return rc;
}

void
ha_heapv2_free(struct ha_heapv2 *p)
{
    if (p == NULL)
        return;
    free(p->stacks);
    free(p->frames);
    free(p->maps);
    free(p->threads);
    free(p->names);
    free(p->tlines);
    memset(p, 0, sizeof(*p));
}

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
