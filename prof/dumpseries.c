/* SPDX-License-Identifier: MIT
 *
 * Which dumps heap_growth's arguments mean (see dumpseries.h). Pure.
 */
#include "prof/dumpseries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define FORMS                                                              \
    "heap_growth() (the newest process's dumps), heap_growth(N) (its "     \
    "newest N), heap_growth('<dump>') (from that dump on), "               \
    "heap_growth('<first dump>', '<last dump>'), or heap_growth(<from>, "  \
    "<to>) with unix seconds or 'YYYY-MM-DD HH:MM:SS' (UTC)"

/* ------------------------------------------------------------------
 * Times
 * ------------------------------------------------------------------ */

/* Unix seconds past which a time is a mistake (and its ns would not fit
 * an int64): the year 2255. */
#define TIME_MAX_S 9000000000LL

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), Hinnant's
 * days_from_civil. */
static long long
days_from_civil(long long y, unsigned m, unsigned d)
{
    long long era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

/* n digits at *p into *out; advances *p. */
static bool
digits(const char **p, int n, unsigned *out)
{
    unsigned v = 0;

    for (int i = 0; i < n; i++) {
        char c = (*p)[i];

        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (unsigned)(c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

int
ha_dumpseries_parse_time(const char *text, int64_t *ns)
{
    static const unsigned mdays[] = {31, 29, 31, 30, 31, 30,
                                     31, 31, 30, 31, 30, 31};
    const char *p = text;
    unsigned y, mo, d, h, mi, s = 0;
    long long days;

    if (text == NULL || *text == '\0')
        return -1;
    if (strspn(text, "0123456789") == strlen(text)) {
        long long v = 0;

        if (strlen(text) > 10)
            return -1;
        for (p = text; *p; p++)
            v = v * 10 + (*p - '0');
        if (v > TIME_MAX_S)
            return -1;
        *ns = (int64_t)v * 1000000000;
        return 0;
    }
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) ||
        *p++ != '-' || !digits(&p, 2, &d) || (*p != ' ' && *p != 'T'))
        return -1;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
        return -1;
    if (*p == ':') {
        p++;
        if (!digits(&p, 2, &s))
            return -1;
    }
    if (*p == 'Z')
        p++;
    if (*p != '\0' || y < 1970 || y > 2200 || mo < 1 || mo > 12 || d < 1 ||
        d > mdays[mo - 1] || h > 23 || mi > 59 || s > 60)
        return -1;
    days = days_from_civil(y, mo, d);
    *ns = ((int64_t)days * 86400 + h * 3600 + mi * 60 + s) * 1000000000;
    return 0;
}

/* ------------------------------------------------------------------
 * Arguments
 * ------------------------------------------------------------------ */

/* The canonical kind for "m" / "manual" etc., or NULL. */
static const char *
kind_name(const char *text)
{
    static const struct {
        const char *letter, *name;
    } kinds[] = {
        {"m", "manual"},
        {"i", "interval"},
        {"u", "high-water"},
        {"f", "final"},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(kinds); i++)
        if (ha_str_ieq(text, kinds[i].letter) ||
            ha_str_ieq(text, kinds[i].name))
            return kinds[i].name;
    return NULL;
}

static bool
is_dump_name(const char *text)
{
    struct ha_dump_name d;

    return text != NULL && ha_dumpname_parse(text, &d);
}

/* An argument as a time; false when it is not one. */
static bool
arg_time(const struct ha_dumpseries_arg *a, int64_t *ns)
{
    if (a->is_int) {
        if (a->i < 0 || a->i > TIME_MAX_S)
            return false;
        *ns = (int64_t)a->i * 1000000000;
        return true;
    }
    return ha_dumpseries_parse_time(a->text, ns) == 0;
}

int
ha_dumpseries_spec(const struct ha_dumpseries_arg *since,
                   const struct ha_dumpseries_arg *until,
                   const struct ha_dumpseries_arg *kind,
                   struct ha_dumpseries_spec *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (kind != NULL && kind->present) {
        out->kind = kind->is_int ? NULL : kind_name(kind->text);
        if (out->kind == NULL) {
            ha_err_set(err, errlen,
                       "dump_kind '%s' is not a kind of dump; allowed: "
                       "'manual' (m), 'interval' (i), 'high-water' (u), "
                       "'final' (f)",
                       kind->is_int ? "(a number)" : kind->text);
            return -1;
        }
    }
    if (since == NULL || !since->present) {
        if (until != NULL && until->present) {
            ha_err_set(err, errlen,
                       "an end without a start; use " FORMS);
            return -1;
        }
        out->form = HA_DUMPSERIES_ALL;
        return 0;
    }
    if (until == NULL || !until->present) {
        if (since->is_int) {
            if (since->i < 1 || since->i > HA_DUMPSERIES_MAX) {
                ha_err_set(err, errlen,
                           "heap_growth(%lld): the number of dumps must be "
                           "1 to %d",
                           since->i, HA_DUMPSERIES_MAX);
                return -1;
            }
            out->form = HA_DUMPSERIES_LAST;
            out->n = since->i;
            return 0;
        }
        if (is_dump_name(since->text)) {
            out->form = HA_DUMPSERIES_FROM;
            out->a = since->text;
            return 0;
        }
        ha_err_set(err, errlen,
                   "'%s' is neither a dump's name nor a number of dumps; "
                   "use " FORMS,
                   since->text);
        return -1;
    }
    if (!since->is_int && !until->is_int && is_dump_name(since->text) &&
        is_dump_name(until->text)) {
        out->form = HA_DUMPSERIES_NAMES;
        out->a = since->text;
        out->b = until->text;
        return 0;
    }
    if (arg_time(since, &out->t1_ns) && arg_time(until, &out->t2_ns)) {
        out->form = HA_DUMPSERIES_TIMES;
        if (out->t1_ns > out->t2_ns) {
            int64_t t = out->t1_ns;

            out->t1_ns = out->t2_ns;
            out->t2_ns = t;
        }
        return 0;
    }
    ha_err_set(err, errlen,
               "two arguments are two dump names or two times; got '%s' "
               "and '%s'; use " FORMS,
               since->is_int ? "(a number)" : since->text,
               until->is_int ? "(a number)" : until->text);
    return -1;
}

/* ------------------------------------------------------------------
 * Selection
 * ------------------------------------------------------------------ */

struct pick {
    long long seq, kind_seq;
    size_t i;
};

static int
cmp_pick(const void *x, const void *y)
{
    const struct pick *a = x, *b = y;

    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    if (a->kind_seq != b->kind_seq)
        return a->kind_seq < b->kind_seq ? -1 : 1;
    return a->i < b->i ? -1 : (a->i > b->i);
}

static long
find_name(const struct ha_dumpseries_dump *dumps, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(dumps[i].name, name) == 0)
            return (long)i;
    return -1;
}

/* The newer of two dumps: by time, then by seq. */
static bool
newer(const struct ha_dumpseries_dump *a, const struct ha_dumpseries_dump *b)
{
    if (a->t_ns != b->t_ns)
        return a->t_ns > b->t_ns;
    return a->d.seq > b->d.seq;
}

int
ha_dumpseries_select(const struct ha_dumpseries_dump *dumps, size_t n,
                     const struct ha_dumpseries_spec *spec, size_t *idx,
                     size_t *n_out, char *err, size_t errlen)
{
    struct pick *picks;
    long long pid = -1, lo = 0, hi = -1;
    long newest = -1, a = -1, b = -1;
    size_t k = 0, first = 0;

    *n_out = 0;
    /* The process, and the seq range within it. */
    switch (spec->form) {
    case HA_DUMPSERIES_FROM:
    case HA_DUMPSERIES_NAMES:
        a = find_name(dumps, n, spec->a);
        b = spec->form == HA_DUMPSERIES_NAMES ? find_name(dumps, n, spec->b)
                                              : a;
        if (a < 0 || b < 0) {
            ha_err_set(err, errlen,
                       "no dump '%s' in the datadir (stats_heap_dumps "
                       "lists them)",
                       a < 0 ? spec->a : spec->b);
            return -1;
        }
        if (dumps[a].d.pid != dumps[b].d.pid) {
            ha_err_set(err, errlen,
                       "'%s' and '%s' are dumps of two processes (%lld and "
                       "%lld): a series is one process's",
                       spec->a, spec->b, dumps[a].d.pid, dumps[b].d.pid);
            return -1;
        }
        pid = dumps[a].d.pid;
        lo = dumps[a].d.seq < dumps[b].d.seq ? dumps[a].d.seq
                                             : dumps[b].d.seq;
        hi = spec->form == HA_DUMPSERIES_FROM
                 ? -1
                 : (dumps[a].d.seq > dumps[b].d.seq ? dumps[a].d.seq
                                                    : dumps[b].d.seq);
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            if (spec->kind != NULL && strcmp(dumps[i].d.kind, spec->kind))
                continue;
            if (spec->form == HA_DUMPSERIES_TIMES &&
                (dumps[i].t_ns < spec->t1_ns || dumps[i].t_ns > spec->t2_ns))
                continue;
            if (newest < 0 || newer(&dumps[i], &dumps[newest]))
                newest = (long)i;
        }
        if (newest < 0) {
            ha_err_set(err, errlen, "no %s%sdumps in the datadir%s",
                       spec->kind != NULL ? spec->kind : "",
                       spec->kind != NULL ? " " : "",
                       spec->form == HA_DUMPSERIES_TIMES
                           ? " between those times"
                           : "");
            return -1;
        }
        pid = dumps[newest].d.pid;
        break;
    }

    if ((picks = malloc((n ? n : 1) * sizeof(*picks))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ha_dumpseries_dump *d = &dumps[i];

        if (d->d.pid != pid ||
            (spec->kind != NULL && strcmp(d->d.kind, spec->kind) != 0) ||
            d->d.seq < lo || (hi >= 0 && d->d.seq > hi) ||
            (spec->form == HA_DUMPSERIES_TIMES &&
             (d->t_ns < spec->t1_ns || d->t_ns > spec->t2_ns)))
            continue;
        picks[k].seq = d->d.seq;
        picks[k].kind_seq = d->d.kind_seq;
        picks[k].i = i;
        k++;
    }
    qsort(picks, k, sizeof(*picks), cmp_pick);
    if (spec->form == HA_DUMPSERIES_LAST && (size_t)spec->n < k)
        first = k - (size_t)spec->n;
    if (k == first) {
        ha_err_set(err, errlen, "no %s%sdumps of process %lld in that range",
                   spec->kind != NULL ? spec->kind : "",
                   spec->kind != NULL ? " " : "", pid);
        free(picks);
        return -1;
    }
    if (k - first > HA_DUMPSERIES_MAX) {
        ha_err_set(err, errlen,
                   "%zu dumps of process %lld in the series; at most %d: "
                   "narrow it with heap_growth(N) or heap_growth('<first "
                   "dump>', '<last dump>')",
                   k - first, pid, HA_DUMPSERIES_MAX);
        free(picks);
        return -1;
    }
    for (size_t i = first; i < k; i++)
        idx[(*n_out)++] = picks[i].i;
    free(picks);
    return 0;
}
