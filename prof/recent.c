/* SPDX-License-Identifier: MIT
 *
 * jemalloc's recent allocations read (see recent.h): one pass of the
 * JSON reader, unknown members skipped, traces kept once each.
 */
#include "prof/recent.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "prof/json.h"

static int
oom(struct ha_json *j, char *err, size_t errlen)
{
    ha_err_set(err, errlen, "byte %zu: out of memory", j->pos);
    return -1;
}

/* A trace array (its '[' next), kept in traces; *id its index. */
static int
read_trace(struct ha_json *j, struct ha_traces *traces, uint32_t *id,
           char *err, size_t errlen)
{
    uint64_t frames[HA_TRACES_MAX_FRAMES];
    enum ha_json_tok t;
    size_t n = 0;

    if (ha_json_expect(j, HA_JSON_ARRAY, "an array of addresses") != 0)
        return -1;
    while ((t = ha_json_next(j)) == HA_JSON_STRING) {
        if (n == HA_TRACES_MAX_FRAMES)
            return ha_json_fail(j, "at most 256 frames in a trace");
        if (ha_json_hex(j, "an address \"0x<hex>\"", &frames[n]) != 0)
            return -1;
        n++;
    }
    if (t != HA_JSON_ARRAY_END)
        return t == HA_JSON_ERROR ? -1
                                  : ha_json_fail(j, "an address string or "
                                                    "']'");
    if (ha_traces_add(traces, frames, n, true, id) != 0)
        return oom(j, err, errlen);
    return 0;
}

/* A thread name string next, interned into names. */
static int
read_name(struct ha_json *j, struct ha_strtab *names, uint32_t *off,
          char *err, size_t errlen)
{
    char name[256];
    long n;

    if (ha_json_expect(j, HA_JSON_STRING, "a thread name") != 0)
        return -1;
    n = ha_json_string(j, name, sizeof(name));
    *off = ha_strtab_intern(names, name,
                            n < (long)sizeof(name) ? (size_t)n
                                                   : strlen(name));
    return *off == UINT32_MAX ? oom(j, err, errlen) : 0;
}

/* One record (its '{' read). */
static int
read_rec(struct ha_json *j, struct ha_recent *out, struct ha_recent_rec *r,
         char *err, size_t errlen)
{
    enum ha_json_tok t;
    unsigned seen = 0;

    memset(r, 0, sizeof(*r));
    r->dalloc_trace = HA_RECENT_NO_TRACE;
    while ((t = ha_json_next(j)) == HA_JSON_KEY) {
        int rc = 0;

        if (ha_json_is(j, "size")) {
            rc = ha_json_next_u64(j, "a size", &r->size);
            seen |= 1;
        } else if (ha_json_is(j, "usize")) {
            rc = ha_json_next_u64(j, "a usable size", &r->usize);
            seen |= 2;
        } else if (ha_json_is(j, "released")) {
            t = ha_json_next(j);
            if (t != HA_JSON_TRUE && t != HA_JSON_FALSE)
                return t == HA_JSON_ERROR ? -1
                                          : ha_json_fail(j, "true or false "
                                                            "for released");
            r->released = t == HA_JSON_TRUE;
            seen |= 4;
        } else if (ha_json_is(j, "alloc_thread_uid")) {
            rc = ha_json_next_u64(j, "a thread uid", &r->alloc_tid);
            seen |= 8;
        } else if (ha_json_is(j, "alloc_thread_name")) {
            rc = read_name(j, &out->names, &r->alloc_name, err, errlen);
        } else if (ha_json_is(j, "alloc_time")) {
            rc = ha_json_next_u64(j, "a time in ns", &r->alloc_ns);
            seen |= 16;
        } else if (ha_json_is(j, "alloc_trace")) {
            rc = read_trace(j, &out->traces, &r->alloc_trace, err, errlen);
            seen |= 32;
        } else if (ha_json_is(j, "dalloc_thread_uid")) {
            rc = ha_json_next_u64(j, "a thread uid", &r->dalloc_tid);
            r->has_dalloc = true;
        } else if (ha_json_is(j, "dalloc_thread_name")) {
            rc = read_name(j, &out->names, &r->dalloc_name, err, errlen);
        } else if (ha_json_is(j, "dalloc_time")) {
            rc = ha_json_next_u64(j, "a time in ns", &r->dalloc_ns);
            r->has_dalloc = true;
        } else if (ha_json_is(j, "dalloc_trace")) {
            rc = read_trace(j, &out->traces, &r->dalloc_trace, err, errlen);
            r->has_dalloc = true;
        } else {
            rc = ha_json_skip(j, ha_json_next(j));
        }
        if (rc != 0)
            return -1;
    }
    if (t != HA_JSON_OBJECT_END)
        return t == HA_JSON_ERROR ? -1
                                  : ha_json_fail(j, "'}' after a record");
    if (seen != 63)
        return ha_json_fail(j, "a record with size, usize, released, "
                               "alloc_thread_uid, alloc_time and "
                               "alloc_trace");
    return 0;
}

static int
read_recs(struct ha_json *j, struct ha_recent *out, char *err, size_t errlen)
{
    enum ha_json_tok t;
    size_t cap = 0;

    if (ha_json_expect(j, HA_JSON_ARRAY, "an array for \"recent_alloc\"") !=
        0)
        return -1;
    while ((t = ha_json_next(j)) == HA_JSON_OBJECT) {
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct ha_recent_rec *v = realloc(out->recs, ncap * sizeof(*v));

            if (v == NULL)
                return oom(j, err, errlen);
            out->recs = v;
            cap = ncap;
        }
        if (read_rec(j, out, &out->recs[out->n], err, errlen) != 0)
            return -1;
        out->n++;
    }
    return t == HA_JSON_ARRAY_END ? 0
           : t == HA_JSON_ERROR   ? -1
                                  : ha_json_fail(j, "a record or ']'");
}

int
ha_recent_parse(const char *buf, size_t len, struct ha_recent *out,
                char *err, size_t errlen)
{
    struct ha_json j;
    enum ha_json_tok t;
    bool have_list = false;

    memset(out, 0, sizeof(*out));
    ha_json_init(&j, buf, len, err, errlen);
    if (ha_json_expect(&j, HA_JSON_OBJECT,
                       "'{': the recent allocations are a JSON object") != 0)
        goto fail;
    while ((t = ha_json_next(&j)) == HA_JSON_KEY) {
        int rc;

        if (ha_json_is(&j, "sample_interval")) {
            rc = ha_json_next_u64(&j, "a sample interval",
                                  &out->sample_interval);
        } else if (ha_json_is(&j, "recent_alloc_max")) {
            rc = ha_json_expect(&j, HA_JSON_NUMBER, "recent_alloc_max") ||
                 ha_json_i64(&j, "recent_alloc_max", &out->alloc_max);
        } else if (ha_json_is(&j, "recent_alloc")) {
            rc = read_recs(&j, out, err, errlen);
            have_list = true;
        } else {
            rc = ha_json_skip(&j, ha_json_next(&j));
        }
        if (rc != 0)
            goto fail;
    }
    if (t != HA_JSON_OBJECT_END) {
        if (t != HA_JSON_ERROR)
            ha_json_fail(&j, "a member or '}'");
        goto fail;
    }
    if (ha_json_next(&j) != HA_JSON_END)
        goto fail;
    if (!have_list) {
        ha_err_set(err, errlen, "no \"recent_alloc\": not jemalloc's recent "
                                "allocations");
        goto fail;
    }
    return 0;
fail:
    ha_recent_free(out);
    return -1;
}

void
ha_recent_free(struct ha_recent *r)
{
    if (r == NULL)
        return;
    free(r->recs);
    ha_strtab_free(&r->names);
    ha_traces_free(&r->traces);
    memset(r, 0, sizeof(*r));
}
