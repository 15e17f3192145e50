/* SPDX-License-Identifier: MIT
 *
 * Prometheus text exposition reader, under a policy (see exposcan.h).
 */
#include "core/exposcan.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

#define LABELS_MAX 16  /* a sample's own labels; heapadmin's have one */

static const char *const refusal_names[HA_EXPOSCAN_REFUSAL_MAX] = {
    "malformed", "family", "label", "duplicate_label", "duplicate_series",
    "value", "series_limit", "bytes_limit",
};

const char *
ha_exposcan_refusal_name(enum ha_exposcan_refusal r)
{
    return (unsigned)r < HA_EXPOSCAN_REFUSAL_MAX ? refusal_names[r] : "?";
}

void
ha_exposcan_init(struct ha_exposcan *s, const struct ha_exposcan_policy *policy)
{
    memset(s, 0, sizeof(*s));
    s->policy = policy;
}

/* ------------------------------------------------------------------
 * Lexing
 * ------------------------------------------------------------------ */

static bool
name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

/* Length of the metric or label name at p (0: none). Colons, legal in
 * metric names, are in none of heapadmin's and are refused. */
static size_t
name_len(const char *p, const char *end)
{
    size_t n = 0;

    while (p + n < end && name_char(p[n], n == 0))
        n++;
    return n;
}

static const char *
skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Whether s (n bytes) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static bool
utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], need, min;
        uint32_t cp;

        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0) {
            need = 1, min = 0x80, cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            need = 2, min = 0x800, cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            need = 3, min = 0x10000, cp = c & 0x07;
        } else {
            return false;
        }
        if (i + need >= n)
            return false;
        for (unsigned k = 1; k <= need; k++) {
            if (i + k >= n || (s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += need + 1;
    }
    return true;
}

/* ------------------------------------------------------------------
 * Families
 * ------------------------------------------------------------------ */

/* The rule a sample named name (n bytes) belongs to: a gauge's samples
 * carry the family's name, a counter's the name with _total. */
static const struct ha_exposcan_rule *
rule_of_sample(const struct ha_exposcan_policy *pol, const char *name,
               size_t n)
{
    for (size_t i = 0; i < pol->n_rules; i++) {
        const struct ha_exposcan_rule *r = &pol->rules[i];
        size_t k = strlen(r->name);

        if (r->type == HA_EXPO_COUNTER) {
            if (n == k + 6 && memcmp(name, r->name, k) == 0 &&
                memcmp(name + k, "_total", 6) == 0)
                return r;
        } else if (n == k && memcmp(name, r->name, k) == 0) {
            return r;
        }
    }
    return NULL;
}

/* Whether name is in list (space-separated names; NULL: none). */
static bool
in_list(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = list != NULL ? list : ""; *p != '\0';) {
        size_t k = strcspn(p, " ");

        if (k == n && memcmp(p, name, n) == 0)
            return true;
        p += k;
        p += strspn(p, " ");
    }
    return false;
}

static struct ha_exposcan_family *
family_of(struct ha_exposcan *s, const struct ha_exposcan_rule *r)
{
    struct ha_exposcan_family *f;

    for (size_t i = 0; i < s->n; i++)
        if (s->families[i].rule == r)
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
    f = &s->families[s->n++];
    memset(f, 0, sizeof(*f));
    f->rule = r;
    return f;
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

static bool
same_labels(char *const *a, char *const *b)
{
    for (; *a != NULL && *b != NULL; a++, b++)
        if (strcmp(*a, *b) != 0)
            return false;
    return *a == NULL && *b == NULL;
}

/* ------------------------------------------------------------------
 * One sample line
 * ------------------------------------------------------------------ */

struct parsed {
    char names[LABELS_MAX][128];
    struct ha_buf values[LABELS_MAX];
    size_t n;
};

static void
parsed_free(struct parsed *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        ha_buf_free(&ps->values[i]);
}

/* Reads the label set at p ('{' already passed). Returns the position
 * after '}', or NULL (malformed; *oom on memory). */
static const char *
read_labels(const char *p, const char *end, struct parsed *ps, bool *oom)
{
    for (;;) {
        size_t ln;
        struct ha_buf *v;

        p = skip_blanks(p, end);
        if (p < end && *p == '}')
            return p + 1;
        ln = name_len(p, end);
        if (ln == 0 || ln >= sizeof(ps->names[0]) || ps->n == LABELS_MAX)
            return NULL;
        memcpy(ps->names[ps->n], p, ln);
        ps->names[ps->n][ln] = '\0';
        v = &ps->values[ps->n];
        ha_buf_init(v);
        ps->n++;
        p = skip_blanks(p + ln, end);
        if (p >= end || *p != '=')
            return NULL;
        p = skip_blanks(p + 1, end);
        if (p >= end || *p != '"')
            return NULL;
        for (p++; p < end && *p != '"'; p++) {
            if (*p == '\\') {
                if (++p >= end)
                    return NULL;
                if (*p == 'n')
                    ha_buf_append_u8(v, '\n');
                else if (*p == '\\' || *p == '"')
                    ha_buf_append_u8(v, (uint8_t)*p);
                else
                    return NULL;
            } else {
                ha_buf_append_u8(v, (uint8_t)*p);
            }
        }
        if (p >= end)
            return NULL;
        p++;
        ha_buf_append_u8(v, 0);
        if (ha_buf_failed(v)) {
            *oom = true;
            return NULL;
        }
        if (!utf8_ok(v->data, v->len - 1))
            return NULL;
        p = skip_blanks(p, end);
        if (p < end && *p == ',')
            p++;
        else if (p < end && *p != '}')
            return NULL;
    }
}

/* A value as Prometheus writes one: decimal digits, sign, point,
 * exponent, or Go's NaN/+Inf/-Inf. Returns false when it is none. */
static bool
read_value(const char *p, size_t n, double *v)
{
    char num[64], *stop;

    if (n == 0 || n >= sizeof(num))
        return false;
    memcpy(num, p, n);
    num[n] = '\0';
    if (strcmp(num, "NaN") == 0 || strcmp(num, "+Inf") == 0 ||
        strcmp(num, "-Inf") == 0 || strcmp(num, "Inf") == 0) {
        *v = strcmp(num, "NaN") == 0 ? NAN
                                      : (num[0] == '-' ? -INFINITY : INFINITY);
        return true;
    }
    for (size_t i = 0; i < n; i++)
        if (!((num[i] >= '0' && num[i] <= '9') || num[i] == '.' ||
              num[i] == 'e' || num[i] == 'E' || num[i] == '+' ||
              num[i] == '-'))
            return false;
    *v = strtod(num, &stop);
    return *stop == '\0';
}

/* One sample line. Returns 0 (kept), a refusal + 1, or -1 (memory). */
static int
sample(struct ha_exposcan *s, const char *p, const char *end,
       const char *const *extra, const char *const *expect, size_t *series)
{
    const struct ha_exposcan_policy *pol = s->policy;
    size_t n = name_len(p, end), n_extra = 0, k = 0;
    const struct ha_exposcan_rule *r;
    struct parsed ps;
    struct ha_exposcan_family *f;
    struct ha_exposcan_sample *x;
    char **labels = NULL;
    bool oom = false, renamed = false;
    const char *tok;
    double v;
    int rc = 0;

    ps.n = 0;
    if (n == 0)
        return 1 + HA_EXPOSCAN_MALFORMED;
    r = rule_of_sample(pol, p, n);
    p += n;
    if (p < end && *p == '{') {
        p = read_labels(p + 1, end, &ps, &oom);
        if (p == NULL) {
            rc = oom ? -1 : 1 + HA_EXPOSCAN_MALFORMED;
            goto out;
        }
    }
    if (p >= end || (*p != ' ' && *p != '\t')) {
        rc = 1 + HA_EXPOSCAN_MALFORMED;
        goto out;
    }
    p = skip_blanks(p, end);
    tok = p;
    while (p < end && *p != ' ' && *p != '\t')
        p++;
    if (!read_value(tok, (size_t)(p - tok), &v)) {
        rc = 1 + HA_EXPOSCAN_MALFORMED;
        goto out;
    }
    /* An optional timestamp (dropped: the scrape's time is the gateway's),
     * then nothing. */
    p = skip_blanks(p, end);
    if (p < end) {
        tok = p;
        while (p < end && ((*p >= '0' && *p <= '9') || *p == '-'))
            p++;
        if (p == tok || skip_blanks(p, end) != end) {
            rc = 1 + HA_EXPOSCAN_MALFORMED;
            goto out;
        }
    }
    if (r == NULL) {
        rc = 1 + HA_EXPOSCAN_FAMILY;
        goto out;
    }
    while (extra != NULL && extra[n_extra] != NULL)
        n_extra += 2;
    /* Labels: the caller's, then the sample's own, renamed where they
     * take one of the caller's names. */
    for (size_t i = 0; i < ps.n; i++) {
        bool reserved = in_list(pol->reserved, ps.names[i]), allowed;
        bool agrees = false;

        for (size_t e = 0; e < n_extra; e += 2)
            if (strcmp(ps.names[i], extra[e]) == 0)
                reserved = true;
        /* A label the caller knows the value of, given with that very
         * value, says nothing new: dropped, not renamed. */
        for (size_t e = 0; expect != NULL && expect[e] != NULL; e += 2)
            if (strcmp(ps.names[i], expect[e]) == 0) {
                reserved = true;
                agrees = strcmp((const char *)ps.values[i].data,
                                expect[e + 1]) == 0;
            }
        if (agrees) {
            ps.names[i][0] = '\0';
            continue;
        }
        if (reserved) {
            char tmp[sizeof(ps.names[0])];

            if (strlen(ps.names[i]) + 9 >= sizeof(tmp)) {
                rc = 1 + HA_EXPOSCAN_LABEL;
                goto out;
            }
            memcpy(tmp, "exported_", 9);
            memcpy(tmp + 9, ps.names[i], strlen(ps.names[i]) + 1);
            memcpy(ps.names[i], tmp, strlen(tmp) + 1);
            renamed = true;
            continue;
        }
        allowed = in_list(r->labels, ps.names[i]) ||
                  (strncmp(ps.names[i], "exported_", 9) == 0 &&
                   in_list(pol->reserved, ps.names[i] + 9));
        for (size_t e = 0; e < n_extra && !allowed; e += 2)
            allowed = strncmp(ps.names[i], "exported_", 9) == 0 &&
                      strcmp(ps.names[i] + 9, extra[e]) == 0;
        for (size_t e = 0; expect != NULL && expect[e] != NULL && !allowed;
             e += 2)
            allowed = strncmp(ps.names[i], "exported_", 9) == 0 &&
                      strcmp(ps.names[i] + 9, expect[e]) == 0;
        if (!allowed) {
            rc = 1 + HA_EXPOSCAN_LABEL;
            goto out;
        }
    }
    for (size_t i = 0; i < ps.n; i++)
        for (size_t j = i + 1; j < ps.n; j++)
            if (ps.names[i][0] != '\0' &&
                strcmp(ps.names[i], ps.names[j]) == 0) {
                rc = 1 + HA_EXPOSCAN_DUP_LABEL;
                goto out;
            }
    if (!isfinite(v) || (r->type == HA_EXPO_COUNTER && v < 0)) {
        rc = 1 + HA_EXPOSCAN_VALUE;
        goto out;
    }
    if (pol->max_series > 0 && *series >= pol->max_series) {
        rc = 1 + HA_EXPOSCAN_SERIES_CAP;
        goto out;
    }
    labels = calloc(n_extra + 2 * ps.n + 1, sizeof(*labels));
    if (labels == NULL) {
        rc = -1;
        goto out;
    }
    for (size_t e = 0; e < n_extra; e++)
        if ((labels[k++] = strdup(extra[e])) == NULL) {
            rc = -1;
            goto out;
        }
    for (size_t i = 0; i < ps.n; i++) {
        if (ps.names[i][0] == '\0')
            continue; /* agreed with the caller's */
        if ((labels[k++] = strdup(ps.names[i])) == NULL ||
            (labels[k++] = strdup((const char *)ps.values[i].data)) ==
                NULL) {
            rc = -1;
            goto out;
        }
    }
    if ((f = family_of(s, r)) == NULL) {
        rc = -1;
        goto out;
    }
    for (size_t i = f->n; i > 0 && f->samples[i - 1].text == s->texts; i--)
        if (same_labels(f->samples[i - 1].labels, labels)) {
            rc = 1 + HA_EXPOSCAN_DUP_SERIES;
            goto out;
        }
    if (f->n == f->cap) {
        size_t c = f->cap ? f->cap * 2 : 8;
        struct ha_exposcan_sample *g = realloc(f->samples, c * sizeof(*g));

        if (g == NULL) {
            rc = -1;
            goto out;
        }
        f->samples = g;
        f->cap = c;
    }
    x = &f->samples[f->n++];
    x->labels = labels;
    x->v = v;
    x->text = s->texts;
    labels = NULL;
    (*series)++;
    rc = renamed ? -2 : 0;
out:
    free_labels(labels);
    parsed_free(&ps);
    return rc;
}

int
ha_exposcan_add(struct ha_exposcan *s, const char *text, size_t len,
                const char *const *extra, struct ha_exposcan_report *report)
{
    return ha_exposcan_add_expect(s, text, len, extra, extra, report);
}

int
ha_exposcan_add_expect(struct ha_exposcan *s, const char *text, size_t len,
                       const char *const *extra, const char *const *expect,
                       struct ha_exposcan_report *report)
{
    struct ha_exposcan_report local;
    const char *p = text, *end = text + len;
    size_t series = 0;

    if (report == NULL)
        report = &local;
    memset(report, 0, sizeof(*report));
    s->texts++;
    if (s->policy->max_bytes > 0 && len > s->policy->max_bytes) {
        report->refused[HA_EXPOSCAN_BYTES_CAP] = 1;
        return 0;
    }
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol != NULL ? eol : end;
        int rc;

        if (le > p && le[-1] == '\r')
            le--;
        /* Comments, HELP and TYPE included, are the policy's to say. */
        if (le > p && *p != '#') {
            rc = sample(s, p, le, extra, expect, &series);
            if (rc == -1) {
                s->failed = 1;
                return -1;
            }
            if (rc > 0) {
                report->refused[rc - 1]++;
            } else {
                report->accepted++;
                if (rc == -2)
                    report->renamed++;
            }
        }
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
        ha_expo_family(e, f->rule->name, f->rule->type, f->rule->help);
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
    }
    free(s->families);
    memset(s, 0, sizeof(*s));
}
