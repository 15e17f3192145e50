/* SPDX-License-Identifier: MIT
 *
 * What the files of the heap_v2 parser (heapv2.h) share: the text with
 * its leak lines removed, the descriptor's window it may be read
 * through, its lines, errors with the file's line numbers and the
 * arrays grown as records come (heapv2_text.c); the readers of blanks,
 * numbers and addresses (here, inline); a line's counts and kind
 * (heapv2_tokens.c); the per-thread lines of the header and of each
 * backtrace (heapv2_threads.c). heapv2_parse.c reads the records with
 * them. Private to prof/heapv2*.c.
 */
#ifndef HA_HEAPV2_INT_H
#define HA_HEAPV2_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"
#include "prof/heapv2.h"

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

#define COUNTS "<objs>: <bytes> [<objs>: <bytes>]"
#define COUNTS_SHAPE "'" COUNTS "'"

/* ------------------------------------------------------------------ */
/* The text (heapv2_text.c)                                            */
/* ------------------------------------------------------------------ */

/* t gets buf[0 .. len) with every leak run removed (a copy only when
 * there is one). Returns 0, or -1 with err set. */
int ha_heapv2_text_init(struct text *t, const char *buf, size_t len,
                        char *err, size_t errlen);
void ha_heapv2_text_free(struct text *t);
size_t ha_heapv2_text_orig_line(const struct text *t, size_t clean_line,
                                size_t line_off);
size_t ha_heapv2_text_leak_lines(const struct text *t);

bool ha_heapv2_next_line(struct parser *ps);
int ha_heapv2_fail(struct parser *ps, const char *what, bool at_eof);
int ha_heapv2_grow(void **arr, size_t *cap, size_t need, size_t size,
                   struct parser *ps);
int ha_heapv2_stream_rest(struct parser *ps);

/* ------------------------------------------------------------------ */
/* Tokens                                                              */
/* ------------------------------------------------------------------ */

/* Blanks and numbers are read here, inline: a call per frame address and
 * count, from another file, made a parse 7% longer. A line's counts and
 * what kind of `t` line it is are heapv2_tokens.c's. */

/* The first byte at or after p that is not a blank, or e. */
static inline const char *
ha_heapv2_skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Reads a decimal uint64 at *pp. Returns 0, or -1 (no digit, overflow);
 * *overflow tells which. */
static inline int
ha_heapv2_read_u64(const char **pp, const char *e, uint64_t *v,
                   bool *overflow)
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
static inline int
ha_heapv2_read_hex(const char **pp, const char *e, uint64_t *v)
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

int ha_heapv2_read_counts(struct parser *ps, const char *p,
                          struct ha_heapv2_counts *c, const char **rest);
int ha_heapv2_thread_line(const struct parser *ps, const char **after,
                          uint64_t *uid);

/* ------------------------------------------------------------------ */
/* Per-thread lines (heapv2_threads.c)                                 */
/* ------------------------------------------------------------------ */

int ha_heapv2_read_header_threads(struct parser *ps);
int ha_heapv2_read_stack_threads(struct parser *ps,
                                 struct ha_heapv2_stack *st);
void ha_heapv2_sort_threads(struct ha_heapv2 *out);

#endif
