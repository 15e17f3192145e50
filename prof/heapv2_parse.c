/* SPDX-License-Identifier: MIT
 *
 * jemalloc heap_v2 dump parser (format and trust statement in heapv2.h).
 * One pass over the text with memchr for line ends and hand-written
 * number readers, writing into arrays that grow by doubling: a 15 MB
 * dump is read in tens of milliseconds and nothing points into the input.
 * This file is the parse: the records in order (the header, each
 * backtrace with its counts, MAPPED_LIBRARIES), jeprof's scaling, the
 * entry points for memory and for a descriptor. The text and its lines
 * are heapv2_text.c's, a line's counts heapv2_tokens.c's, the per-thread
 * lines heapv2_threads.c's (what they share: heapv2_int.h).
 */
#include "prof/heapv2.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "prof/heapv2_int.h"

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

/* Reads the addresses of an '@' line into a new stack record. */
static int
read_backtrace(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    struct ha_heapv2_stack *st;
    const char *p = ha_heapv2_skip_ws(ps->s, ps->e) + 1, *e = ps->e;
    size_t first = out->n_frames;

    if (ha_heapv2_grow((void **)&out->stacks, &ps->stacks_cap,
                       out->n_stacks + 1, sizeof(*out->stacks), ps) != 0)
        return -1;
    for (;;) {
        uint64_t pc;

        p = ha_heapv2_skip_ws(p, e);
        if (p >= e)
            break;
        if (ha_heapv2_read_hex(&p, e, &pc) != 0)
            return ha_heapv2_fail(ps, "hexadecimal frame addresses "
                                  "(0x<1-16 hex digits>) after '@'", false);
        if (out->n_frames - first >= UINT32_MAX ||
            ha_heapv2_grow((void **)&out->frames, &ps->frames_cap,
                           out->n_frames + 1, sizeof(*out->frames), ps) != 0)
            return -1;
        out->frames[out->n_frames++] = pc;
    }
    st = &out->stacks[out->n_stacks];
    memset(st, 0, sizeof(*st));
    st->frame_off = (uint32_t)first;
    st->n_frames = (uint32_t)(out->n_frames - first);
    st->line = (uint32_t)ha_heapv2_text_orig_line(&ps->text, ps->line_no,
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
    uint64_t uid0;

    if (!ha_heapv2_next_line(ps))
        return ha_heapv2_fail(ps, "'t*: " COUNTS "' after the backtrace",
                              true);
    if (ha_heapv2_thread_line(ps, &after, &uid0) != 1)
        return ha_heapv2_fail(ps, "'t*: " COUNTS "' after the backtrace",
                              false);
    if (ha_heapv2_read_counts(ps, after, &st->raw, &rest) != 0)
        return -1;
    if (ha_heapv2_skip_ws(rest, ps->e) != ps->e)
        return ha_heapv2_fail(ps, "end of line after the t* counts", false);

    if (ha_heapv2_read_stack_threads(ps, st) != 0)
        return -1;

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

static int
read_header(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    const char *p, *after, *rest;
    uint64_t uid;
    bool ovf;

    if (!ha_heapv2_next_line(ps))
        return ha_heapv2_fail(ps, "'heap_v2/<sample period>' (the file is "
                              "empty)", true);
    p = ps->s;
    if (ps->e - p < 8 || memcmp(p, "heap_v2/", 8) != 0)
        return ha_heapv2_fail(ps, "'heap_v2/<sample period>'", false);
    p += 8;
    if (ha_heapv2_read_u64(&p, ps->e, &out->period, &ovf) != 0 ||
        ha_heapv2_skip_ws(p, ps->e) != ps->e)
        return ha_heapv2_fail(ps,
                              ovf ? "a sample period below 2^64 in "
                                    "'heap_v2/<n>'"
                                  : "a decimal sample period in "
                                    "'heap_v2/<n>'",
                              false);

    if (!ha_heapv2_next_line(ps))
        return ha_heapv2_fail(ps, "'t*: " COUNTS "' (the process total)",
                              true);
    if (ha_heapv2_thread_line(ps, &after, &uid) != 1)
        return ha_heapv2_fail(ps, "'t*: " COUNTS "' (the process total)",
                              false);
    if (ha_heapv2_read_counts(ps, after, &out->total, &rest) != 0)
        return -1;

    return ha_heapv2_read_header_threads(ps);
}

static int
read_maps(struct parser *ps)
{
    struct ha_heapv2 *out = ps->out;
    size_t n;

    if (ps->st.fd >= 0 && ha_heapv2_stream_rest(ps) != 0)
        return -1;
    n = ps->text.len - ps->pos;

    out->has_maps = true;
    free(out->maps);
    out->maps = malloc(n + 1);
    if (out->maps == NULL) {
        ha_err_set(ps->err, ps->errlen, "line %zu: out of memory copying "
                   "MAPPED_LIBRARIES",
                   ha_heapv2_text_orig_line(&ps->text, ps->line_no,
                                            ps->line_off));
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

/* Bytes read at a time (ha_heapv2_set_stream_chunk). */
static size_t stream_chunk = (size_t)1 << 20;

void
ha_heapv2_set_stream_chunk(size_t n)
{
    stream_chunk = n > 0 ? n : (size_t)1 << 20;
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
    while (ha_heapv2_next_line(ps)) {
        const char *p = ha_heapv2_skip_ws(ps->s, ps->e);

        if (p == ps->e)
            continue;
        if (*p == '@') {
            if (read_backtrace(ps) != 0 || read_stack_counts(ps) != 0)
                return -1;
            continue;
        }
        if (ps->e - p >= 17 && memcmp(p, "MAPPED_LIBRARIES:", 17) == 0 &&
            ha_heapv2_skip_ws(p + 17, ps->e) == ps->e) {
            if (read_maps(ps) != 0)
                return -1;
            break;
        }
        if (ha_heapv2_thread_line(ps, &p, &uid) != 0)
            return ha_heapv2_fail(ps, "'@ <addresses>' before a t line",
                                  false);
        return ha_heapv2_fail(ps, "'@ <addresses>', a blank line or "
                                  "'MAPPED_LIBRARIES:'",
                              false);
    }
    if (ps->st.leak || ps->st.failed)
        return -1;
    ha_heapv2_sort_threads(out);
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
    if (ha_heapv2_text_init(&ps.text, buf != NULL ? buf : "", len, err,
                            errlen) == 0) {
        out->n_leak_lines = ha_heapv2_text_leak_lines(&ps.text);
        rc = parse_text(&ps);
    }
    ha_heapv2_text_free(&ps.text);
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
