/* SPDX-License-Identifier: MIT
 *
 * jemalloc's prof_log file read (see proflog.h): one pass of the JSON
 * reader, members in any order, unknown members skipped, then every
 * index checked against what it points into.
 */
#include "prof/proflog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "prof/heapv2.h"
#include "prof/json.h"

struct reader {
    struct ha_json j;
    struct ha_proflog *out;
    size_t threads_cap, allocs_cap;
    char *err;
    size_t errlen;
};

static int
oom(struct reader *r)
{
    ha_err_set(r->err, r->errlen, "byte %zu: out of memory", r->j.pos);
    return -1;
}

static int
expect(struct reader *r, enum ha_json_tok want, const char *what)
{
    return ha_json_expect(&r->j, want, what);
}

static int
number(struct reader *r, const char *what, uint64_t *v)
{
    return ha_json_next_u64(&r->j, what, v);
}

static int
index32(struct reader *r, const char *what, uint32_t *v)
{
    uint64_t x;

    if (number(r, what, &x) != 0)
        return -1;
    if (x >= UINT32_MAX)
        return ha_json_fail(&r->j, what);
    *v = (uint32_t)x;
    return 0;
}

/* "info": {...} */
static int
read_info(struct reader *r)
{
    struct ha_proflog *p = r->out;
    enum ha_json_tok t;

    if (expect(r, HA_JSON_OBJECT, "an object for \"info\"") != 0)
        return -1;
    p->has_info = true;
    while ((t = ha_json_next(&r->j)) == HA_JSON_KEY) {
        if (ha_json_is(&r->j, "duration")) {
            if (number(r, "a duration in ns", &p->duration_ns) != 0)
                return -1;
        } else if (ha_json_is(&r->j, "lg_sample_rate")) {
            int64_t v;

            if (expect(r, HA_JSON_NUMBER, "lg_sample_rate, a number") != 0 ||
                ha_json_i64(&r->j, "lg_sample_rate from 0 to 63", &v) != 0)
                return -1;
            if (v < 0 || v > 63)
                return ha_json_fail(&r->j, "lg_sample_rate from 0 to 63");
            p->lg_sample = (int)v;
        } else if (ha_json_is(&r->j, "pid")) {
            if (expect(r, HA_JSON_NUMBER, "a pid") != 0 ||
                ha_json_i64(&r->j, "a pid", &p->pid) != 0)
                return -1;
        } else if (ha_json_is(&r->j, "version")) {
            if (expect(r, HA_JSON_STRING, "a version string") != 0)
                return -1;
            ha_json_string(&r->j, p->version, sizeof(p->version));
        } else if (ha_json_is(&r->j, "prof_time_resolution")) {
            if (expect(r, HA_JSON_STRING, "a time resolution string") != 0)
                return -1;
            p->time_high = ha_json_is(&r->j, "high");
        } else if (ha_json_skip(&r->j, ha_json_next(&r->j)) != 0) {
            return -1;
        }
    }
    return t == HA_JSON_OBJECT_END ? 0
           : t == HA_JSON_ERROR    ? -1
                                   : ha_json_fail(&r->j, "'}' after info");
}

/* "threads": [{"thr_uid": n, "thr_name": "..."}, ...] */
static int
read_threads(struct reader *r)
{
    struct ha_proflog *p = r->out;
    enum ha_json_tok t;
    char name[256];

    if (expect(r, HA_JSON_ARRAY, "an array for \"threads\"") != 0)
        return -1;
    while ((t = ha_json_next(&r->j)) == HA_JSON_OBJECT) {
        struct ha_proflog_thread th = {0, 0};

        while ((t = ha_json_next(&r->j)) == HA_JSON_KEY) {
            if (ha_json_is(&r->j, "thr_uid")) {
                if (number(r, "a thread uid", &th.uid) != 0)
                    return -1;
            } else if (ha_json_is(&r->j, "thr_name")) {
                long n;

                if (expect(r, HA_JSON_STRING, "a thread name") != 0)
                    return -1;
                n = ha_json_string(&r->j, name, sizeof(name));
                th.name = ha_strtab_intern(&p->names, name,
                                           n < (long)sizeof(name)
                                               ? (size_t)n
                                               : strlen(name));
                if (th.name == UINT32_MAX)
                    return oom(r);
            } else if (ha_json_skip(&r->j, ha_json_next(&r->j)) != 0) {
                return -1;
            }
        }
        if (t != HA_JSON_OBJECT_END)
            return t == HA_JSON_ERROR ? -1
                                      : ha_json_fail(&r->j, "'}' after a "
                                                            "thread");
        if (p->n_threads == r->threads_cap) {
            size_t cap = r->threads_cap ? r->threads_cap * 2 : 16;
            struct ha_proflog_thread *v =
                realloc(p->threads, cap * sizeof(*v));

            if (v == NULL)
                return oom(r);
            p->threads = v;
            r->threads_cap = cap;
        }
        p->threads[p->n_threads++] = th;
    }
    return t == HA_JSON_ARRAY_END ? 0
           : t == HA_JSON_ERROR   ? -1
                                  : ha_json_fail(&r->j, "a thread object "
                                                        "or ']'");
}

/* "stack_traces": [["0x...", ...], ...], kept in the document's order
 * (allocations refer to them by index). */
static int
read_traces(struct reader *r)
{
    uint64_t frames[HA_TRACES_MAX_FRAMES];
    enum ha_json_tok t;

    if (expect(r, HA_JSON_ARRAY, "an array for \"stack_traces\"") != 0)
        return -1;
    while ((t = ha_json_next(&r->j)) == HA_JSON_ARRAY) {
        size_t n = 0;
        uint32_t id;

        while ((t = ha_json_next(&r->j)) == HA_JSON_STRING) {
            if (n == HA_TRACES_MAX_FRAMES)
                return ha_json_fail(&r->j, "at most 256 frames in a trace");
            if (ha_json_hex(&r->j, "an address \"0x<hex>\"", &frames[n]) !=
                0)
                return -1;
            n++;
        }
        if (t != HA_JSON_ARRAY_END)
            return t == HA_JSON_ERROR ? -1
                                      : ha_json_fail(&r->j, "an address "
                                                            "string or ']'");
        if (ha_traces_add(&r->out->traces, frames, n, false, &id) != 0)
            return oom(r);
    }
    return t == HA_JSON_ARRAY_END ? 0
           : t == HA_JSON_ERROR   ? -1
                                  : ha_json_fail(&r->j, "a trace array or "
                                                        "']'");
}

/* One allocation object (its '{' read). */
static int
read_alloc(struct reader *r, struct ha_proflog_alloc *a)
{
    enum ha_json_tok t;
    unsigned seen = 0;

    memset(a, 0, sizeof(*a));
    while ((t = ha_json_next(&r->j)) == HA_JSON_KEY) {
        int rc;

        if (ha_json_is(&r->j, "alloc_thread"))
            rc = index32(r, "a thread index", &a->alloc_thread), seen |= 1;
        else if (ha_json_is(&r->j, "free_thread"))
            rc = index32(r, "a thread index", &a->free_thread), seen |= 2;
        else if (ha_json_is(&r->j, "alloc_trace"))
            rc = index32(r, "a trace index", &a->alloc_trace), seen |= 4;
        else if (ha_json_is(&r->j, "free_trace"))
            rc = index32(r, "a trace index", &a->free_trace), seen |= 8;
        else if (ha_json_is(&r->j, "alloc_timestamp"))
            rc = number(r, "a timestamp in ns", &a->alloc_ns), seen |= 16;
        else if (ha_json_is(&r->j, "free_timestamp"))
            rc = number(r, "a timestamp in ns", &a->free_ns), seen |= 32;
        else if (ha_json_is(&r->j, "usize"))
            rc = number(r, "a usable size", &a->usize), seen |= 64;
        else
            rc = ha_json_skip(&r->j, ha_json_next(&r->j));
        if (rc != 0)
            return -1;
    }
    if (t != HA_JSON_OBJECT_END)
        return t == HA_JSON_ERROR ? -1
                                  : ha_json_fail(&r->j, "'}' after an "
                                                        "allocation");
    if (seen != 127)
        return ha_json_fail(&r->j, "an allocation with alloc_thread, "
                                   "free_thread, alloc_trace, free_trace, "
                                   "alloc_timestamp, free_timestamp and "
                                   "usize");
    return 0;
}

/* "allocations": [{...}, ...] */
static int
read_allocs(struct reader *r)
{
    struct ha_proflog *p = r->out;
    enum ha_json_tok t;

    if (expect(r, HA_JSON_ARRAY, "an array for \"allocations\"") != 0)
        return -1;
    while ((t = ha_json_next(&r->j)) == HA_JSON_OBJECT) {
        if (p->n_allocs == r->allocs_cap) {
            size_t cap = r->allocs_cap ? r->allocs_cap * 2 : 256;
            struct ha_proflog_alloc *v = realloc(p->allocs, cap * sizeof(*v));

            if (v == NULL)
                return oom(r);
            p->allocs = v;
            r->allocs_cap = cap;
        }
        if (read_alloc(r, &p->allocs[p->n_allocs]) != 0)
            return -1;
        p->n_allocs++;
    }
    return t == HA_JSON_ARRAY_END ? 0
           : t == HA_JSON_ERROR   ? -1
                                  : ha_json_fail(&r->j, "an allocation "
                                                        "object or ']'");
}

/* Every index points into its array. */
static int
check_indices(struct reader *r)
{
    const struct ha_proflog *p = r->out;

    for (size_t i = 0; i < p->n_allocs; i++) {
        const struct ha_proflog_alloc *a = &p->allocs[i];

        if (a->alloc_thread >= p->n_threads ||
            a->free_thread >= p->n_threads) {
            ha_err_set(r->err, r->errlen,
                       "allocation %zu: a thread index past the %zu "
                       "threads",
                       i, p->n_threads);
            return -1;
        }
        if (a->alloc_trace >= p->traces.n || a->free_trace >= p->traces.n) {
            ha_err_set(r->err, r->errlen,
                       "allocation %zu: a trace index past the %zu stack "
                       "traces",
                       i, p->traces.n);
            return -1;
        }
    }
    return 0;
}

int
ha_proflog_parse(const char *buf, size_t len, struct ha_proflog *out,
                 char *err, size_t errlen)
{
    struct reader r;
    enum ha_json_tok t;

    memset(out, 0, sizeof(*out));
    memset(&r, 0, sizeof(r));
    r.out = out;
    r.err = err;
    r.errlen = errlen;
    if (len > HA_PROFLOG_MAX_LEN) {
        ha_err_set(err, errlen, "log of %zu bytes is larger than the %u "
                                "accepted",
                   len, HA_PROFLOG_MAX_LEN);
        return -1;
    }
    ha_json_init(&r.j, buf, len, err, errlen);
    if (expect(&r, HA_JSON_OBJECT, "'{': a prof_log file is a JSON object") !=
        0)
        goto fail;
    while ((t = ha_json_next(&r.j)) == HA_JSON_KEY) {
        int rc;

        if (ha_json_is(&r.j, "info"))
            rc = read_info(&r);
        else if (ha_json_is(&r.j, "threads"))
            rc = read_threads(&r);
        else if (ha_json_is(&r.j, "stack_traces"))
            rc = read_traces(&r);
        else if (ha_json_is(&r.j, "allocations"))
            rc = read_allocs(&r);
        else
            rc = ha_json_skip(&r.j, ha_json_next(&r.j));
        if (rc != 0)
            goto fail;
    }
    if (t != HA_JSON_OBJECT_END) {
        if (t != HA_JSON_ERROR)
            ha_json_fail(&r.j, "a member or '}'");
        goto fail;
    }
    if (ha_json_next(&r.j) != HA_JSON_END)
        goto fail;
    if (!out->has_info) {
        ha_err_set(err, errlen, "no \"info\": not a prof_log file");
        goto fail;
    }
    if (check_indices(&r) != 0)
        goto fail;
    return 0;
fail:
    ha_proflog_free(out);
    return -1;
}

void
ha_proflog_free(struct ha_proflog *p)
{
    if (p == NULL)
        return;
    free(p->threads);
    free(p->allocs);
    ha_strtab_free(&p->names);
    ha_traces_free(&p->traces);
    memset(p, 0, sizeof(*p));
}

uint64_t
ha_proflog_period(const struct ha_proflog *p)
{
    if (!p->has_info || p->lg_sample < 0 || p->lg_sample > 62)
        return 0;
    return (uint64_t)1 << p->lg_sample;
}

static int
by_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

uint64_t
ha_proflog_tick_ns(const struct ha_proflog *p)
{
    size_t n = 2 * p->n_allocs;
    uint64_t *t, best = 0;

    if (p->time_high)
        return 1;
    if (n < 2 || (t = malloc(n * sizeof(*t))) == NULL)
        return 0;
    for (size_t i = 0; i < p->n_allocs; i++) {
        t[2 * i] = p->allocs[i].alloc_ns;
        t[2 * i + 1] = p->allocs[i].free_ns;
    }
    qsort(t, n, sizeof(*t), by_u64);
    for (size_t i = 1; i < n; i++)
        if (t[i] != t[i - 1] && (best == 0 || t[i] - t[i - 1] < best))
            best = t[i] - t[i - 1];
    free(t);
    return best;
}

double
ha_proflog_weight(uint64_t period, uint64_t usize)
{
    double objs, bytes;

    ha_heapv2_scale(period, 1, usize, &objs, &bytes);
    return objs;
}

/* ------------------------------------------------------------------ */
/* The window's side file                                              */
/* ------------------------------------------------------------------ */

int
ha_proflog_window_parse(const char *buf, size_t len,
                        struct ha_proflog_window *w, char *err,
                        size_t errlen)
{
    size_t pos = 0, line = 0;

    memset(w, 0, sizeof(*w));
    w->alloc_requests = -1;
    w->internal_bytes = -1;
    while (pos < len) {
        const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - s) : len - pos;
        const char *eq = memchr(s, '=', n);
        char key[32], val[32];
        size_t kl, vl;

        line++;
        pos += n + (nl != NULL);
        if (n == 0 || s[0] == '#')
            continue;
        if (eq == NULL || (kl = (size_t)(eq - s)) == 0 ||
            kl >= sizeof(key) || (vl = n - kl - 1) >= sizeof(val)) {
            ha_err_set(err, errlen, "window line %zu: expected key=value",
                       line);
            return -1;
        }
        memcpy(key, s, kl);
        key[kl] = '\0';
        memcpy(val, eq + 1, vl);
        val[vl] = '\0';
        if (strcmp(key, "closed_by") == 0) {
            ha_strlcpy(w->closed_by, val, sizeof(w->closed_by));
            continue;
        }
        {
            char *end;
            long long v = strtoll(val, &end, 10);

            if (end == val || *end != '\0' || v < 0) {
                ha_err_set(err, errlen,
                           "window line %zu: expected a whole number "
                           "after %s=",
                           line, key);
                return -1;
            }
            if (strcmp(key, "opened_ns") == 0)
                w->opened_ns = v;
            else if (strcmp(key, "closed_ns") == 0)
                w->closed_ns = v;
            else if (strcmp(key, "seconds") == 0)
                w->seconds = v;
            else if (strcmp(key, "alloc_requests") == 0)
                w->alloc_requests = v;
            else if (strcmp(key, "internal_bytes") == 0)
                w->internal_bytes = v;
            else if (strcmp(key, "clock_tick_ns") == 0)
                w->clock_tick_ns = v;
        }
    }
    return 0;
}
