/* SPDX-License-Identifier: MIT
 *
 * The tokens of a heap_v2 dump's lines (see heapv2.h): a `t` line's four
 * counts, with an error that names the part of the shape missing, and
 * what kind of `t` line a line is. Blanks and numbers are read by the
 * inline readers of heapv2_int.h: hand-written, no strtoull, each number
 * range-checked without a division per digit.
 */
#include "prof/heapv2_int.h"

/* Parses "<n>: <n> [<n>: <n>]" at p; *rest gets what follows. Returns 0,
 * or -1 with err set. */
int
ha_heapv2_read_counts(struct parser *ps, const char *p,
                      struct ha_heapv2_counts *c, const char **rest)
{
    const char *e = ps->e;
    uint64_t v[4];
    bool ovf;

    for (int i = 0; i < 4; i++) {
        p = ha_heapv2_skip_ws(p, e);
        if (i == 2) {
            if (p >= e || *p != '[')
                return ha_heapv2_fail(ps, "'[' before the cumulative "
                                      "counts in " COUNTS_SHAPE, false);
            p = ha_heapv2_skip_ws(p + 1, e);
        }
        if (ha_heapv2_read_u64(&p, e, &v[i], &ovf) != 0)
            return ha_heapv2_fail(ps,
                                  ovf ? "a count below 2^64 in " COUNTS_SHAPE
                                      : "a decimal count in " COUNTS_SHAPE,
                                  false);
        p = ha_heapv2_skip_ws(p, e);
        if (i == 0 || i == 2) {
            if (p >= e || *p != ':')
                return ha_heapv2_fail(ps, "':' between the counts in "
                                      COUNTS_SHAPE, false);
            p++;
        }
    }
    if (p >= e || *p != ']')
        return ha_heapv2_fail(ps, "']' after the counts in " COUNTS_SHAPE,
                              false);
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
int
ha_heapv2_thread_line(const struct parser *ps, const char **after,
                      uint64_t *uid)
{
    const char *p = ha_heapv2_skip_ws(ps->s, ps->e), *e = ps->e;
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
    if (ha_heapv2_read_u64(&p, e, uid, &ovf) != 0) {
        *uid = UINT64_MAX;
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p >= e || *p != ':')
        return 0;
    *after = p + 1;
    return 2;
}
