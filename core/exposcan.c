/* SPDX-License-Identifier: MIT
 *
 * Prometheus text exposition reader (see exposcan.h).
 */
#include "core/exposcan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

static char *
dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);

    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static bool
name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == ':' || (!first && c >= '0' && c <= '9');
}

/* Length of the metric or label name at p (0: none). */
static size_t
name_len(const char *p, const char *end)
{
    size_t n = 0;

    while (p + n < end && name_char(p[n], n == 0))
        n++;
    return n;
}

static bool
ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);

    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The family named name (n bytes), created when missing. */
static struct ha_exposcan_family *
family(struct ha_exposcan *s, const char *name, size_t n)
{
    struct ha_exposcan_family *f;

    for (size_t i = 0; i < s->n; i++)
        if (strlen(s->families[i].name) == n &&
            memcmp(s->families[i].name, name, n) == 0)
            return &s->families[i];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        struct ha_exposcan_family *g =
            realloc(s->families, cap * sizeof(*g));

        if (g == NULL)
            return NULL;
        s->families = g;
        s->cap = cap;
    }
    f = &s->families[s->n];
    memset(f, 0, sizeof(*f));
    f->type = HA_EXPO_GAUGE;
    if ((f->name = dup_n(name, n)) == NULL)
        return NULL;
    s->n++;
    return f;
}

/* The family a sample named name (n bytes) belongs to: a counter's
 * samples end in _total. */
static struct ha_exposcan_family *
family_of_sample(struct ha_exposcan *s, const char *name, size_t n)
{
    if (ends_with(name, n, "_total"))
        for (size_t i = 0; i < s->n; i++)
            if (s->families[i].type == HA_EXPO_COUNTER &&
                strlen(s->families[i].name) == n - 6 &&
                memcmp(s->families[i].name, name, n - 6) == 0)
                return &s->families[i];
    return family(s, name, n);
}

/* "# HELP name text" or "# TYPE name type". */
static int
comment(struct ha_exposcan *s, const char *p, const char *end)
{
    bool help;
    size_t n;
    struct ha_exposcan_family *f;

    if (end - p > 7 && memcmp(p, "# HELP ", 7) == 0)
        help = true;
    else if (end - p > 7 && memcmp(p, "# TYPE ", 7) == 0)
        help = false;
    else
        return 0;
    p += 7;
    n = name_len(p, end);
    if (n == 0)
        return 1;
    if (help) {
        struct ha_buf b = HA_BUF_INIT;
        const char *t = p + n;

        if (t < end && *t == ' ')
            t++;
        /* A counter's HELP comes before its TYPE: its _total is dropped
         * then. */
        f = family(s, p, ends_with(p, n, "_total") ? n - 6 : n);
        if (f == NULL)
            return -1;
        for (; t < end; t++) {
            if (*t == '\\' && t + 1 < end) {
                t++;
                ha_buf_append_u8(&b, *t == 'n' ? '\n' : (uint8_t)*t);
            } else {
                ha_buf_append_u8(&b, (uint8_t)*t);
            }
        }
        ha_buf_append_u8(&b, 0);
        if (ha_buf_failed(&b)) {
            ha_buf_free(&b);
            return -1;
        }
        if (f->help == NULL)
            f->help = (char *)b.data;
        else
            ha_buf_free(&b);
        return 0;
    }
    {
        const char *t = p + n + 1;
        bool counter = end - t >= 7 && memcmp(t, "counter", 7) == 0;

        f = family(s, p, counter && ends_with(p, n, "_total") ? n - 6 : n);
        if (f == NULL)
            return -1;
        f->type = counter ? HA_EXPO_COUNTER : HA_EXPO_GAUGE;
    }
    return 0;
}

static void
free_labels(char **l)
{
    if (l == NULL)
        return;
    for (char **p = l; *p != NULL; p++)
        free(*p);
    free(l);
}

/* One sample line. Returns 0, 1 (malformed: skipped), -1 (memory). */
static int
sample(struct ha_exposcan *s, const char *p, const char *end,
       const char *const *extra)
{
    size_t n = name_len(p, end), n_extra = 0, k = 0, cap;
    const char *name = p;
    char **labels, num[64];
    struct ha_exposcan_family *f;
    struct ha_exposcan_sample *x;
    char *stop;
    double v;

    if (n == 0)
        return 1;
    while (extra != NULL && extra[n_extra] != NULL)
        n_extra++;
    cap = n_extra + 17;
    if ((labels = calloc(cap, sizeof(*labels))) == NULL)
        return -1;
    for (; k < n_extra; k++)
        if ((labels[k] = strdup(extra[k])) == NULL)
            goto oom;
    p += n;
    if (p < end && *p == '{') {
        p++;
        while (p < end && *p != '}') {
            size_t ln = name_len(p, end);
            struct ha_buf b = HA_BUF_INIT;

            if (ln == 0 || p + ln + 1 >= end || p[ln] != '=' ||
                p[ln + 1] != '"' || k + 3 > cap)
                goto bad;
            if ((labels[k++] = dup_n(p, ln)) == NULL)
                goto oom;
            p += ln + 2;
            while (p < end && *p != '"') {
                if (*p == '\\' && p + 1 < end) {
                    p++;
                    ha_buf_append_u8(&b, *p == 'n' ? '\n' : (uint8_t)*p);
                } else {
                    ha_buf_append_u8(&b, (uint8_t)*p);
                }
                p++;
            }
            ha_buf_append_u8(&b, 0);
            if (p >= end || ha_buf_failed(&b)) {
                bool oom = ha_buf_failed(&b);

                ha_buf_free(&b);
                if (oom)
                    goto oom;
                goto bad;
            }
            labels[k++] = (char *)b.data;
            p++;
            if (p < end && *p == ',')
                p++;
        }
        if (p >= end)
            goto bad;
        p++;
    }
    while (p < end && *p == ' ')
        p++;
    n = 0;
    while (p + n < end && p[n] != ' ' && n < sizeof(num) - 1)
        n++;
    if (n == 0)
        goto bad;
    memcpy(num, p, n);
    num[n] = '\0';
    v = strtod(num, &stop);
    if (*stop != '\0')
        goto bad;
    f = family_of_sample(s, name, name_len(name, end));
    if (f == NULL)
        goto oom;
    if (f->n == f->cap) {
        size_t c = f->cap ? f->cap * 2 : 8;
        struct ha_exposcan_sample *g = realloc(f->samples, c * sizeof(*g));

        if (g == NULL)
            goto oom;
        f->samples = g;
        f->cap = c;
    }
    x = &f->samples[f->n++];
    x->labels = labels;
    x->v = v;
    return 0;
bad:
    free_labels(labels);
    return 1;
oom:
    free_labels(labels);
    return -1;
}

int
ha_exposcan_add(struct ha_exposcan *s, const char *text, size_t len,
                const char *const *extra)
{
    const char *p = text, *end = text + len;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol != NULL ? eol : end;
        int rc = 0;

        if (le > p && le[-1] == '\r')
            le--;
        if (le > p)
            rc = *p == '#' ? comment(s, p, le) : sample(s, p, le, extra);
        if (rc < 0) {
            s->failed = 1;
            return -1;
        }
        if (rc > 0)
            s->skipped++;
        p = eol != NULL ? eol + 1 : end;
    }
    return 0;
}

void
ha_exposcan_write(const struct ha_exposcan *s, struct ha_expo *e)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct ha_exposcan_family *f = &s->families[i];

        if (f->n == 0)
            continue;
        ha_expo_family(e, f->name, f->type, f->help != NULL ? f->help : "");
        for (size_t j = 0; j < f->n; j++)
            ha_expo_sample(e, (const char *const *)f->samples[j].labels,
                           f->samples[j].v);
    }
}

void
ha_exposcan_free(struct ha_exposcan *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct ha_exposcan_family *f = &s->families[i];

        for (size_t j = 0; j < f->n; j++)
            free_labels(f->samples[j].labels);
        free(f->samples);
        free(f->name);
        free(f->help);
    }
    free(s->families);
    memset(s, 0, sizeof(*s));
}
