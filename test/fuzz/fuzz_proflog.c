/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the readers of jemalloc's JSON documents (prof/json.h,
 * prof/proflog.h, prof/recent.h), then the lifetimes of what a log
 * parsed into, with an empty symbol table (every frame an unknown
 * address). Byte 0 picks per-site or per-stack rows and whether the
 * coarse clock's tick is given (else taken from the log); the rest is
 * the document, read as a
 * prof_log file, as recent allocations, and token by token.
 * Seeds: corpus/proflog/ (the fixtures of test/data/proflog/ and
 * fragments).
 *
 * Invariants: 0 or -1; on -1 the message names a byte offset (or the
 * allocation whose index is out of range), on 0 every index is in range;
 * every row's samples add up to the log's allocations, its shares lie in
 * [0, 1], its temporary share within its range, NAN exactly when the
 * range is wider than HA_LIFE_UNKNOWN and with a reason exactly when it
 * is wider than HA_LIFE_TOLERANCE, and its percentiles are ordered; a token's text lies inside the
 * input and a decoded string is NUL-terminated within its buffer.
 */
#include "fuzz.h"

#include <math.h>

#include "prof/json.h"
#include "prof/lifetimes.h"
#include "prof/proflog.h"
#include "prof/recent.h"
#include "prof/traces.h"

static void
tokens(const char *text, size_t size)
{
    struct ha_json j;
    enum ha_json_tok t;
    char err[128], buf[16];
    size_t n = 0;

    ha_json_init(&j, text, size, err, sizeof(err));
    while ((t = ha_json_next(&j)) != HA_JSON_END && t != HA_JSON_ERROR &&
           n++ < 100000) {
        if (t == HA_JSON_KEY || t == HA_JSON_STRING || t == HA_JSON_NUMBER)
            FUZZ_CHECK(j.tok >= text && j.tok + j.tok_len <= text + size,
                       "token outside the input");
        if (t == HA_JSON_KEY || t == HA_JSON_STRING) {
            (void)ha_json_string(&j, buf, sizeof(buf));
            FUZZ_CHECK(memchr(buf, '\0', sizeof(buf)) != NULL,
                       "string not terminated");
        }
    }
    if (t == HA_JSON_ERROR)
        FUZZ_CHECK(strncmp(err, "byte ", 5) == 0, "json: '%s'", err);
}

/* a <= b, where NAN (under one tick) comes before every number. */
static bool
ordered(double a, double b)
{
    return isnan(a) || (!isnan(b) && a <= b);
}

static void
lifetimes(const struct ha_proflog *log, bool per_stack, uint64_t tick)
{
    struct ha_heapv2 p;
    struct ha_syms syms = {0};
    struct ha_lifetimes l;
    struct ha_life_opts o = {per_stack, tick};
    char err[128];
    uint64_t samples = 0;

    if (ha_traces_as_heapv2(&log->traces, NULL, NULL, 0, "", 0, &p) != 0)
        return;
    ha_syms_finish(&syms);
    if (ha_lifetimes_build(log, &p, &syms, &o, &l, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < l.n_rows; i++) {
            const struct ha_life_row *r = &l.rows[i];

            samples += r->samples;
            FUZZ_CHECK(r->other_thread_share >= 0 &&
                           r->other_thread_share <= 1 + 1e-9,
                       "row %zu: other-thread share %g", i,
                       r->other_thread_share);
            FUZZ_CHECK(r->free_site_share >= 0 &&
                           r->free_site_share <= 1 + 1e-9,
                       "row %zu: free-site share %g", i, r->free_site_share);
            FUZZ_CHECK(isnan(r->temporary_share) ||
                           (r->temporary_share >= 0 &&
                            r->temporary_share <= 1 + 1e-9),
                       "row %zu: temporary share %g", i, r->temporary_share);
            FUZZ_CHECK(r->temporary_min >= 0 &&
                           r->temporary_min <= r->temporary_max + 1e-9 &&
                           r->temporary_max <= 1 + 1e-9 &&
                           (isnan(r->temporary_share) ||
                            (r->temporary_share >= r->temporary_min - 1e-9 &&
                             r->temporary_share <=
                                 r->temporary_max + 1e-9)),
                       "row %zu: temporary %g outside [%g, %g]", i,
                       r->temporary_share, r->temporary_min,
                       r->temporary_max);
            FUZZ_CHECK(isnan(r->temporary_share) ==
                               (r->temporary_max - r->temporary_min >
                                HA_LIFE_UNKNOWN) &&
                           (r->why == HA_LIFE_KNOWN) ==
                               (r->temporary_max - r->temporary_min <=
                                HA_LIFE_TOLERANCE),
                       "row %zu: share %g in [%g, %g] with reason %d", i,
                       r->temporary_share, r->temporary_min,
                       r->temporary_max, (int)r->why);
            FUZZ_CHECK(ordered(r->lifetime_ns[0], r->lifetime_ns[1]) &&
                           ordered(r->lifetime_ns[1], r->lifetime_ns[2]) &&
                           ordered(r->lifetime_ns[2], r->lifetime_ns[3]),
                       "row %zu: percentiles out of order", i);
        }
        FUZZ_CHECK(samples == log->n_allocs, "%llu of %zu samples in rows",
                   (unsigned long long)samples, log->n_allocs);
        ha_lifetimes_free(&l);
    }
    ha_syms_free(&syms);
    ha_heapv2_free(&p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text;
    struct ha_proflog log;
    struct ha_recent rec;
    char err[256];
    uint8_t mode;

    if (size < 1)
        return 0;
    mode = data[0];
    text = (const char *)data + 1;
    size--;
    tokens(text, size);
    if (ha_proflog_parse(text, size, &log, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < log.n_allocs; i++)
            FUZZ_CHECK(log.allocs[i].alloc_thread < log.n_threads &&
                           log.allocs[i].free_thread < log.n_threads &&
                           log.allocs[i].alloc_trace < log.traces.n &&
                           log.allocs[i].free_trace < log.traces.n,
                       "allocation %zu: index out of range", i);
        lifetimes(&log, mode & 1, (mode & 2) ? 4000000 : 0);
        ha_proflog_free(&log);
    } else {
        FUZZ_CHECK(strncmp(err, "byte ", 5) == 0 ||
                       strncmp(err, "allocation ", 11) == 0 ||
                       strncmp(err, "no \"info\"", 9) == 0,
                   "proflog: '%s'", err);
    }
    if (ha_recent_parse(text, size, &rec, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < rec.n; i++)
            FUZZ_CHECK(rec.recs[i].alloc_trace < rec.traces.n &&
                           (rec.recs[i].dalloc_trace == HA_RECENT_NO_TRACE ||
                            rec.recs[i].dalloc_trace < rec.traces.n),
                       "record %zu: trace out of range", i);
        ha_recent_free(&rec);
    }
    return 0;
}
