/* SPDX-License-Identifier: MIT
 *
 * Live sampled objects' sizes per backtrace (see livesizes.h). Pure.
 */
#include "prof/livesizes.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

uint64_t
ha_livesizes_hash(const uint64_t *frames, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (frames[i] >> (8 * b)) & 0xff;
            h *= UINT64_C(0x100000001b3);
        }
    return h;
}

static int
by_stack_usize(const void *a, const void *b)
{
    const struct ha_livesizes_ent *x = a, *y = b;

    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return x->usize < y->usize ? -1 : x->usize > y->usize;
}

/* Sorts s's entries and merges equal (stack, usize) pairs. */
static void
normalize(struct ha_livesizes *s)
{
    size_t w = 0;

    if (s->n > 1)
        qsort(s->ents, s->n, sizeof(s->ents[0]), by_stack_usize);
    for (size_t i = 0; i < s->n; i++) {
        if (w > 0 && s->ents[w - 1].stack == s->ents[i].stack &&
            s->ents[w - 1].usize == s->ents[i].usize)
            s->ents[w - 1].count =
                s->ents[i].count > UINT64_MAX - s->ents[w - 1].count
                    ? UINT64_MAX
                    : s->ents[w - 1].count + s->ents[i].count;
        else
            s->ents[w++] = s->ents[i];
    }
    s->n = w;
}

int
ha_livesizes_from_recent(const struct ha_recent *r, struct ha_livesizes *out)
{
    uint64_t *hash = NULL;

    memset(out, 0, sizeof(*out));
    out->state = HA_LIVESIZES_RECENT;
    out->alloc_max = r->alloc_max;
    out->records = r->n;
    if (r->n == 0)
        return 0;
    /* each trace hashed once: a document repeats few traces */
    hash = malloc((r->traces.n ? r->traces.n : 1) * sizeof(*hash));
    out->ents = malloc(r->n * sizeof(*out->ents));
    if (hash == NULL || out->ents == NULL) {
        free(hash);
        ha_livesizes_free(out);
        return -1;
    }
    for (size_t t = 0; t < r->traces.n; t++)
        hash[t] = ha_livesizes_hash(ha_traces_frames(&r->traces, t),
                                    r->traces.len[t]);
    for (size_t i = 0; i < r->n; i++) {
        const struct ha_recent_rec *x = &r->recs[i];

        if (x->released || x->alloc_trace >= r->traces.n)
            continue;
        out->ents[out->n++] =
            (struct ha_livesizes_ent){hash[x->alloc_trace], x->usize, 1};
        out->live++;
    }
    free(hash);
    normalize(out);
    return 0;
}

void
ha_livesizes_set_off(struct ha_livesizes *out, const char *why)
{
    ha_livesizes_free(out);
    out->state = HA_LIVESIZES_OFF;
    ha_one_line(why, out->why, sizeof(out->why));
}

int
ha_livesizes_format(const struct ha_livesizes *s, struct ha_buf *out)
{
    if (s->state == HA_LIVESIZES_NONE)
        return 0;
    if (s->state == HA_LIVESIZES_OFF) {
        ha_buf_printf(out, "sizes off %s\n",
                      s->why[0] ? s->why : "not recorded");
        return ha_buf_failed(out) ? -1 : 0;
    }
    ha_buf_printf(out, "sizes recent %lld %llu %llu\n",
                  (long long)s->alloc_max, (unsigned long long)s->records,
                  (unsigned long long)s->live);
    for (size_t i = 0; i < s->n; i++) {
        if (i == 0 || s->ents[i].stack != s->ents[i - 1].stack)
            ha_buf_printf(out, "%ssizes_stack %016llx", i ? "\n" : "",
                          (unsigned long long)s->ents[i].stack);
        ha_buf_printf(out, " %llu:%llu", (unsigned long long)s->ents[i].usize,
                      (unsigned long long)s->ents[i].count);
    }
    if (s->n > 0)
        ha_buf_append_str(out, "\n");
    return ha_buf_failed(out) ? -1 : 0;
}

/* The next space-separated word of [*s, e) into [*ws, *we). */
static bool
word(const char **s, const char *e, const char **ws, const char **we)
{
    const char *p = *s;

    while (p < e && *p == ' ')
        p++;
    if (p == e)
        return false;
    *ws = p;
    while (p < e && *p != ' ')
        p++;
    *we = p;
    *s = p;
    return true;
}

static bool
is(const char *ws, const char *we, const char *k)
{
    return (size_t)(we - ws) == strlen(k) && memcmp(ws, k, strlen(k)) == 0;
}

static bool
hex64(const char *s, const char *e, uint64_t *out)
{
    uint64_t v = 0;

    if (e - s < 1 || e - s > 16)
        return false;
    for (; s < e; s++) {
        int d = ha_hex_digit(*s);

        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* A signed decimal (recent_alloc_max may be -1). */
static bool
sdecimal(const char *s, const char *e, int64_t *out)
{
    uint64_t v;
    bool neg = s < e && *s == '-';

    if (!ha_decimal(s + neg, e, &v) || v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

/* "<usize>:<count>" */
static bool
pair(const char *s, const char *e, uint64_t *usize, uint64_t *count)
{
    const char *c = memchr(s, ':', (size_t)(e - s));

    return c != NULL && ha_decimal(s, c, usize) &&
           ha_decimal(c + 1, e, count) && *count > 0;
}

static int
push(struct ha_livesizes *out, size_t *cap, uint64_t stack, uint64_t usize,
     uint64_t count)
{
    if (out->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct ha_livesizes_ent *e = realloc(out->ents, ncap * sizeof(*e));

        if (e == NULL)
            return -1;
        out->ents = e;
        *cap = ncap;
    }
    out->ents[out->n++] = (struct ha_livesizes_ent){stack, usize, count};
    return 0;
}

int
ha_livesizes_parse(const char *buf, size_t len, struct ha_livesizes *out,
                   char *err, size_t errlen)
{
    const char *p = buf, *end = len > 0 ? buf + len : buf;
    unsigned line = 0;
    size_t cap = 0;

    memset(out, 0, sizeof(*out));
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl != NULL ? nl : end, *s = p, *ks, *ke, *ws, *we;

        p = nl != NULL ? nl + 1 : end;
        line++;
        if (!word(&s, e, &ks, &ke))
            continue;
        if (is(ks, ke, "sizes")) {
            if (!word(&s, e, &ws, &we))
                goto bad;
            if (is(ws, we, "off")) {
                while (s < e && *s == ' ')
                    s++;
                out->state = HA_LIVESIZES_OFF;
                memcpy(out->why, s,
                       (size_t)(e - s) < sizeof(out->why) - 1
                           ? (size_t)(e - s)
                           : sizeof(out->why) - 1);
                continue;
            }
            if (!is(ws, we, "recent"))
                goto bad;
            {
                const char *as, *ae, *rs, *re, *ls, *le;

                if (!word(&s, e, &as, &ae) || !word(&s, e, &rs, &re) ||
                    !word(&s, e, &ls, &le) ||
                    !sdecimal(as, ae, &out->alloc_max) ||
                    !ha_decimal(rs, re, &out->records) ||
                    !ha_decimal(ls, le, &out->live))
                    goto bad;
            }
            out->state = HA_LIVESIZES_RECENT;
            continue;
        }
        if (is(ks, ke, "sizes_stack")) {
            uint64_t stack, usize, count;

            if (!word(&s, e, &ws, &we) || !hex64(ws, we, &stack))
                goto bad;
            while (word(&s, e, &ws, &we)) {
                if (!pair(ws, we, &usize, &count))
                    goto bad;
                if (push(out, &cap, stack, usize, count) != 0) {
                    ha_err_set(err, errlen, "line %u: out of memory", line);
                    ha_livesizes_free(out);
                    return -1;
                }
            }
            continue;
        }
        continue; /* the rest of the .mem */
bad:
        ha_err_set(err, errlen,
                   "line %u: expected \"sizes recent <max> <records> "
                   "<live>\", \"sizes off <why>\" or \"sizes_stack <hex> "
                   "<usize>:<count> ...\"",
                   line);
        ha_livesizes_free(out);
        return -1;
    }
    /* entries mean something only under "sizes recent" */
    if (out->state != HA_LIVESIZES_RECENT) {
        free(out->ents);
        out->ents = NULL;
        out->n = 0;
    }
    normalize(out);
    return 0;
}

size_t
ha_livesizes_find(const struct ha_livesizes *s, uint64_t stack,
                  size_t *first)
{
    size_t lo = 0, hi = s->n, n = 0;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->ents[mid].stack < stack)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    while (lo + n < s->n && s->ents[lo + n].stack == stack)
        n++;
    return n;
}

void
ha_livesizes_free(struct ha_livesizes *s)
{
    free(s->ents);
    memset(s, 0, sizeof(*s));
}
