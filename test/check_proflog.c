/* SPDX-License-Identifier: MIT
 *
 * Unit tests of jemalloc's JSON documents in prof/: the JSON reader
 * (table-driven, valid and malformed, every prefix of a document), the
 * prof_log parser and the recent-allocations parser on fixtures made by
 * Debian's libjemalloc2 (test/data/proflog/, from test/data/proflog/
 * gen.c), lifetimes per site and per stack on a hand-made log with known
 * figures, and live: test/proflog_gen run anew, its log symbolized with
 * libdwfl, its sites found with the lifetimes they had.
 */
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"

#include "core/buf.h"
#include "core/util.h"
#include "prof/aggregate.h"
#include "prof/json.h"
#include "prof/lifetimes.h"
#include "prof/maps.h"
#include "prof/proflog.h"
#include "prof/recent.h"
#include "prof/symbolize.h"
#include "prof/syms.h"
#include "prof/traces.h"

static const char *
srcdir(void)
{
    const char *d = getenv("HA_TOP_SRCDIR");

    return d != NULL ? d : ".";
}

static const char *
builddir(void)
{
    const char *d = getenv("HA_TOP_BUILDDIR");

    return d != NULL ? d : ".";
}

static char *
read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    char *buf;

    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fstat(fileno(f), &st), 0);
    buf = malloc((size_t)st.st_size + 1);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (size_t)st.st_size, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* A copy of exactly len bytes, so a read past the end is ASan's to see. */
static char *
dup_exact(const char *p, size_t len)
{
    char *q = malloc(len ? len : 1);

    ck_assert_ptr_nonnull(q);
    if (len > 0)
        memcpy(q, p, len);
    return q;
}

/* ------------------------------------------------------------------ */
/* The JSON reader                                                     */
/* ------------------------------------------------------------------ */

/* Reads a whole document, skipping every value; 0 when it is valid. */
static int
walk(const char *doc, char *err, size_t errlen)
{
    size_t len = strlen(doc);
    char *copy = dup_exact(doc, len);
    struct ha_json j;
    enum ha_json_tok t;
    int rc = -1;

    ha_json_init(&j, copy, len, err, errlen);
    while ((t = ha_json_next(&j)) != HA_JSON_END) {
        if (t == HA_JSON_ERROR)
            goto out;
    }
    rc = 0;
out:
    free(copy);
    return rc;
}

static const struct {
    const char *doc;
    const char *err; /* NULL: valid */
} json_cases[] = {
    {"{}", NULL},
    {" [ ] ", NULL},
    {"{\"a\": [1, -2.5e+3, true, false, null, \"x\\u00e9\\n\"]}", NULL},
    {"{\"a\":{\"b\":{\"c\":[[[]]]}}}", NULL},
    {"0", NULL},
    {"\"\\ud83d\\ude00\"", NULL},
    {"", "byte 0: expected a value, not the end of the document"},
    {"{", "byte 1: expected a member name in quotes"},
    {"{\"a\"}", "byte 4: expected ':' after a member name"},
    {"{\"a\":1,}", "byte 7: expected a member name in quotes"},
    {"[1,]", "byte 3: expected a value"},
    {"[1 2]", "byte 3: expected ',' or ']' after an element"},
    {"{\"a\":1]", "byte 6: expected ',' or '}' after a member"},
    {"[01]", "byte 2: expected ',' or ']' after an element"},
    {"[1.]", "byte 3: expected a digit after '.'"},
    {"[-]", "byte 2: expected a digit"},
    {"[tru]", "byte 1: expected a value (true, false or null)"},
    {"[\"a\x01\"]", "byte 3: expected a control character escaped"},
    {"[\"\\x\"]", "byte 3: expected an escape"},
    {"[\"\\u12g4\"]", "byte 3: expected four hex digits after \\u"},
    {"[\"abc", "byte 1: expected a closing '\"' of a string"},
    {"{} {}", "byte 3: expected the end of the document after its value"},
    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
     "expected at most 32 nested objects and arrays"},
};

START_TEST(test_json_table)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(json_cases); i++) {
        char err[256] = "";
        int rc = walk(json_cases[i].doc, err, sizeof(err));

        if (json_cases[i].err == NULL)
            ck_assert_msg(rc == 0, "case %zu: %s", i, err);
        else
            ck_assert_msg(rc == -1 && strstr(err, json_cases[i].err) != NULL,
                          "case %zu: expected '%s', got rc %d '%s'", i,
                          json_cases[i].err, rc, err);
    }
}
END_TEST

START_TEST(test_json_values)
{
    static const char doc[] =
        "{\"n\": 18446744073709551615, \"big\": 18446744073709551616, "
        "\"neg\": -9223372036854775808, \"a\": \"0x7f00a1\", "
        "\"s\": \"h\\u00e9\\ud83d\\ude00\\\"\", \"esc\\u0041\": 1}";
    char err[256] = "", buf[16];
    struct ha_json j;
    uint64_t u;
    int64_t v;

    ha_json_init(&j, doc, strlen(doc), err, sizeof(err));
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_OBJECT);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_KEY);
    ck_assert(ha_json_is(&j, "n"));
    ck_assert_int_eq(ha_json_next_u64(&j, "n", &u), 0);
    ck_assert_uint_eq(u, UINT64_MAX);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_KEY);
    ck_assert_int_eq(ha_json_next_u64(&j, "a count below 2^64", &u), -1);
    ck_assert_str_eq(err, "byte 35: expected a count below 2^64");
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_KEY);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_NUMBER);
    ck_assert_int_eq(ha_json_i64(&j, "n", &v), 0);
    ck_assert(v == INT64_MIN);
    ck_assert_int_eq(ha_json_u64(&j, "unsigned", &u), -1);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_KEY);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_STRING);
    ck_assert_int_eq(ha_json_hex(&j, "an address", &u), 0);
    ck_assert_uint_eq(u, 0x7f00a1);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_KEY);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_STRING);
    /* h, e acute (2 bytes), U+1F600 (4 bytes), a quote: 8 bytes; a
     * buffer of 5 takes whole characters only. */
    ck_assert_int_eq(ha_json_string(&j, buf, sizeof(buf)), 8);
    ck_assert_str_eq(buf, "h\xc3\xa9\xf0\x9f\x98\x80\"");
    ck_assert_int_eq(ha_json_string(&j, buf, 5), 8);
    ck_assert_str_eq(buf, "h\xc3\xa9");
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_KEY);
    ck_assert(ha_json_is(&j, "escA"));
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_NUMBER);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_OBJECT_END);
    ck_assert_int_eq(ha_json_next(&j), HA_JSON_END);
}
END_TEST

/* ------------------------------------------------------------------ */
/* prof_log                                                            */
/* ------------------------------------------------------------------ */

static char *
fixture(const char *name, size_t *len)
{
    char path[4096];

    snprintf(path, sizeof(path), "%s/test/data/proflog/%s", srcdir(), name);
    return read_file(path, len);
}

/* The committed log: test/data/proflog/gen.c's shapes, as Debian's
 * libjemalloc2 wrote them. */
START_TEST(test_proflog_fixture)
{
    size_t len, per_trace[64] = {0}, handoff = 0;
    char *text = fixture("proflog.json", &len), err[256] = "";
    struct ha_proflog p;

    ck_assert_msg(ha_proflog_parse(text, len, &p, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert(p.has_info);
    ck_assert_int_eq(p.lg_sample, 0);
    ck_assert(!p.time_high);
    ck_assert_ptr_nonnull(strstr(p.version, "5.3.0"));
    ck_assert_uint_eq(ha_proflog_period(&p), 1);
    ck_assert_uint_gt(p.duration_ns, 60 * 1000 * 1000);
    ck_assert_uint_eq(p.n_threads, 3);
    ck_assert_str_eq(ha_proflog_thread_name(&p, 0), "main");
    ck_assert_str_eq(ha_proflog_thread_name(&p, 1), "producer");
    ck_assert_str_eq(ha_proflog_thread_name(&p, 2), "consumer");
    /* 500 temp + 100 held + 64 handed off + the consumer's own block;
     * the 32 live blocks are not in the log. */
    ck_assert_uint_eq(p.n_allocs, 665);
    ck_assert_uint_le(p.traces.n, 64);
    for (size_t i = 0; i < p.n_allocs; i++) {
        const struct ha_proflog_alloc *a = &p.allocs[i];

        per_trace[a->alloc_trace]++;
        ck_assert_uint_ge(a->free_ns, a->alloc_ns);
        if (a->alloc_thread == 1) {
            ck_assert_uint_eq(a->free_thread, 2);
            ck_assert_uint_eq(a->usize, 1024);
            handoff++;
        }
    }
    ck_assert_uint_eq(handoff, 64);
    /* Traces in the document's order: alloc trace 0 is the first
     * allocation's, site_temp's 500 of 4096 bytes. */
    ck_assert_uint_eq(per_trace[0], 500);
    ck_assert_uint_eq(p.allocs[0].usize, 4096);
    ck_assert_uint_ge(p.traces.len[0], 4);
    ha_proflog_free(&p);
    ha_proflog_free(NULL);
    free(text);
}
END_TEST

/* Every prefix of the fixture, and every byte flipped in its first 2 KiB,
 * is either refused with a message or read: never a crash, never a read
 * past the end. */
START_TEST(test_proflog_prefixes)
{
    size_t len;
    char *text = fixture("proflog.json", &len), err[256];
    struct ha_proflog p;

    for (size_t cut = 0; cut < len; cut += cut < 4096 ? 1 : 97) {
        char *copy = dup_exact(text, cut);

        err[0] = '\0';
        ck_assert_int_eq(ha_proflog_parse(copy, cut, &p, err, sizeof(err)),
                         -1);
        ck_assert_msg(err[0] != '\0', "cut %zu: no message", cut);
        ck_assert_ptr_null(p.allocs);
        free(copy);
    }
    for (size_t at = 0; at < 2048 && at < len; at++) {
        char *copy = dup_exact(text, len);

        copy[at] ^= 0x20;
        if (ha_proflog_parse(copy, len, &p, err, sizeof(err)) == 0)
            ha_proflog_free(&p);
        free(copy);
    }
    free(text);
}
END_TEST

static const struct {
    const char *doc;
    const char *err;
} log_errors[] = {
    {"[]", "byte 0: expected '{': a prof_log file is a JSON object"},
    {"{}", "no \"info\": not a prof_log file"},
    {"{\"info\":{},\"threads\":[],\"stack_traces\":[],\"allocations\":"
     "[{\"alloc_thread\":0,\"free_thread\":0,\"alloc_trace\":0,"
     "\"free_trace\":0,\"alloc_timestamp\":1,\"free_timestamp\":2,"
     "\"usize\":8}]}",
     "allocation 0: a thread index past the 0 threads"},
    {"{\"info\":{},\"threads\":[{\"thr_uid\":0}],\"stack_traces\":[[]],"
     "\"allocations\":[{\"alloc_thread\":0,\"free_thread\":0,"
     "\"alloc_trace\":0,\"free_trace\":1,\"alloc_timestamp\":1,"
     "\"free_timestamp\":2,\"usize\":8}]}",
     "allocation 0: a trace index past the 1 stack traces"},
    {"{\"info\":{},\"allocations\":[{\"alloc_thread\":0}]}",
     "expected an allocation with alloc_thread"},
    {"{\"info\":{\"lg_sample_rate\":99}}", "lg_sample_rate from 0 to 63"},
    {"{\"info\":{},\"stack_traces\":[[\"0x\"]]}",
     "expected an address \"0x<hex>\""},
    {"{\"info\":{},\"stack_traces\":[[\"0x12345678901234567\"]]}",
     "expected an address \"0x<hex>\""},
    {"{\"info\":{},\"allocations\":[{\"usize\":-1}]}",
     "expected a usable size"},
};

START_TEST(test_proflog_errors)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(log_errors); i++) {
        struct ha_proflog p;
        char err[256] = "";
        size_t len = strlen(log_errors[i].doc);
        char *copy = dup_exact(log_errors[i].doc, len);

        ck_assert_int_eq(ha_proflog_parse(copy, len, &p, err, sizeof(err)),
                         -1);
        ck_assert_msg(strstr(err, log_errors[i].err) != NULL,
                      "case %zu: expected '%s', got '%s'", i,
                      log_errors[i].err, err);
        free(copy);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Recent allocations                                                  */
/* ------------------------------------------------------------------ */

START_TEST(test_recent_fixture)
{
    size_t len, released = 0;
    char *text = fixture("recent.json", &len), err[256] = "";
    struct ha_recent r;

    ck_assert_msg(ha_recent_parse(text, len, &r, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_uint_eq(r.sample_interval, 1);
    ck_assert_int_eq(r.alloc_max, 8);
    ck_assert_uint_eq(r.n, 8);
    /* One site, one free site: kept once each. */
    ck_assert_uint_eq(r.traces.n, 2);
    for (size_t i = 0; i < r.n; i++) {
        const struct ha_recent_rec *x = &r.recs[i];

        ck_assert_uint_eq(x->size, 700);
        ck_assert_uint_eq(x->usize, 768);
        ck_assert_str_eq(ha_strtab_str(&r.names, x->alloc_name), "main");
        ck_assert(x->released == x->has_dalloc);
        if (x->released) {
            released++;
            ck_assert_uint_ge(x->dalloc_ns, x->alloc_ns);
            ck_assert_uint_ne(x->dalloc_trace, HA_RECENT_NO_TRACE);
            ck_assert_uint_ne(x->dalloc_trace, x->alloc_trace);
        } else {
            ck_assert_uint_eq(x->dalloc_trace, HA_RECENT_NO_TRACE);
        }
    }
    /* The first four were freed: oldest first. */
    ck_assert_uint_eq(released, 4);
    ck_assert(r.recs[0].released && !r.recs[7].released);
    ha_recent_free(&r);
    for (size_t cut = 0; cut < len; cut++) {
        char *copy = dup_exact(text, cut);

        ck_assert_int_eq(ha_recent_parse(copy, cut, &r, err, sizeof(err)),
                         -1);
        free(copy);
    }
    free(text);
}
END_TEST

START_TEST(test_recent_errors)
{
    static const char *const bad[] = {
        "{\"sample_interval\":1}",
        "{\"recent_alloc\":[{\"size\":1}]}",
        "{\"recent_alloc\":[{\"size\":1,\"usize\":1,\"released\":1,"
        "\"alloc_thread_uid\":0,\"alloc_time\":1,\"alloc_trace\":[]}]}",
    };
    static const char *const why[] = {
        "no \"recent_alloc\"",
        "expected a record with size, usize, released",
        "expected true or false for released",
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(bad); i++) {
        struct ha_recent r;
        char err[256] = "";

        ck_assert_int_eq(ha_recent_parse(bad[i], strlen(bad[i]), &r, err,
                                         sizeof(err)),
                         -1);
        ck_assert_msg(strstr(err, why[i]) != NULL, "case %zu: '%s'", i, err);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lifetimes                                                           */
/* ------------------------------------------------------------------ */

struct fake_sym {
    uint64_t pc;
    uint32_t flags;
    const char *names[3];
};

static void
fake_syms(struct ha_syms *s, const struct fake_sym *t, size_t n)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < n; i++) {
        struct ha_syms_frame fr[3];
        size_t k = 0;

        for (; k < 3 && t[i].names[k] != NULL; k++) {
            fr[k].func = ha_strtab_intern(&s->strs, t[i].names[k],
                                          strlen(t[i].names[k]));
            fr[k].file = 0;
            fr[k].line = 0;
        }
        ck_assert_int_eq(ha_syms_add(s, t[i].pc, 0, t[i].flags, fr, k), 0);
    }
    ha_syms_finish(s);
}

/* 0x100 and 0x180: jemalloc (two of its paths); 0x200 site a, 0x300
 * site b (inlined into c), 0x400 main, 0x500 the freeing caller, 0x600
 * another, 0x700 a function that reallocs (grow), 0x800 site c;
 * callers looked up at pc - 1. */
static const struct fake_sym life_syms[] = {
    {0x100, HA_SYMS_ALLOCATOR, {NULL}},
    {0x180, HA_SYMS_ALLOCATOR, {NULL}},
    {0x1ff, 0, {"site_a"}},
    {0x2ff, 0, {"site_b", "c"}},
    {0x3ff, 0, {"main"}},
    {0x4ff, 0, {"release"}},
    {0x5ff, 0, {"drain"}},
    {0x6ff, 0, {"grow"}},
    {0x7ff, 0, {"site_c"}},
};

/* Traces: 0 a, 1 b, 2 free in release, 3 free in drain. Period 0
 * (lg_sample_rate 0: every allocation sampled, weight 1). a: four
 * objects of 100 bytes living 10, 20, 30 and 1000 ms, one freed by
 * another thread (drain); b: two of 1000 bytes living 0 ms. */
static const char life_log[] =
    "{\"info\":{\"duration\":2000000000,\"lg_sample_rate\":0,"
    "\"prof_time_resolution\":\"high\"},"
    "\"threads\":[{\"thr_uid\":0,\"thr_name\":\"main\"},"
    "{\"thr_uid\":7,\"thr_name\":\"worker\"}],"
    "\"stack_traces\":[[\"0x100\",\"0x200\",\"0x400\"],"
    "[\"0x100\",\"0x300\",\"0x400\"],[\"0x100\",\"0x500\",\"0x400\"],"
    "[\"0x100\",\"0x600\",\"0x400\"]],"
    "\"allocations\":["
    "{\"alloc_thread\":0,\"free_thread\":0,\"alloc_trace\":0,"
    "\"free_trace\":2,\"alloc_timestamp\":0,\"free_timestamp\":10000000,"
    "\"usize\":100},"
    "{\"alloc_thread\":0,\"free_thread\":0,\"alloc_trace\":0,"
    "\"free_trace\":2,\"alloc_timestamp\":0,\"free_timestamp\":20000000,"
    "\"usize\":100},"
    "{\"alloc_thread\":0,\"free_thread\":0,\"alloc_trace\":0,"
    "\"free_trace\":2,\"alloc_timestamp\":0,\"free_timestamp\":30000000,"
    "\"usize\":100},"
    "{\"alloc_thread\":0,\"free_thread\":1,\"alloc_trace\":0,"
    "\"free_trace\":3,\"alloc_timestamp\":0,\"free_timestamp\":1000000000,"
    "\"usize\":100},"
    "{\"alloc_thread\":0,\"free_thread\":0,\"alloc_trace\":1,"
    "\"free_trace\":2,\"alloc_timestamp\":5,\"free_timestamp\":5,"
    "\"usize\":1000},"
    "{\"alloc_thread\":0,\"free_thread\":0,\"alloc_trace\":1,"
    "\"free_trace\":2,\"alloc_timestamp\":9,\"free_timestamp\":9,"
    "\"usize\":1000}]}";

static void
life_setup(struct ha_proflog *log, struct ha_heapv2 *p, struct ha_syms *s)
{
    char err[256] = "";

    ck_assert_msg(ha_proflog_parse(life_log, strlen(life_log), log, err,
                                   sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(ha_traces_as_heapv2(&log->traces, NULL, NULL, 0, "", 0,
                                         p),
                     0);
    fake_syms(s, life_syms, HA_ARRAY_SIZE(life_syms));
}

static const struct ha_life_row *
life_row(const struct ha_lifetimes *l, const char *key)
{
    for (size_t i = 0; i < l->n_rows; i++)
        if (strcmp(ha_life_str(l, l->rows[i].key), key) == 0)
            return &l->rows[i];
    ck_abort_msg("no row %s", key);
    return NULL;
}

START_TEST(test_lifetimes_per_site)
{
    struct ha_proflog log;
    struct ha_heapv2 p;
    struct ha_syms s;
    struct ha_lifetimes l;
    struct ha_life_opts o = {false, 0};
    const struct ha_life_row *r;
    char err[256] = "", note[512];

    life_setup(&log, &p, &s);
    ck_assert_msg(ha_lifetimes_build(&log, &p, &s, &o, &l, err,
                                     sizeof(err)) == 0,
                  "%s", err);
    ck_assert_uint_eq(l.n_rows, 2);
    ck_assert(l.time_high);
    ck_assert_uint_eq(l.tick_ns, 1);
    ck_assert_double_eq(l.p_event, 1); /* lg_sample_rate 0 */
    ck_assert_double_eq(l.seconds, 2.0);
    /* Most bytes freed first: b's 2000 over a's 400. */
    ck_assert_str_eq(ha_life_str(&l, l.rows[0].key), "site_b (inline)");
    r = life_row(&l, "site_a");
    ck_assert_uint_eq(r->samples, 4);
    ck_assert_double_eq(r->objects, 4);
    ck_assert_double_eq(r->bytes, 400);
    ck_assert_double_eq(r->lifetime_ns[0], 20e6);  /* p50 */
    ck_assert_double_eq(r->lifetime_ns[1], 1000e6); /* p90 */
    ck_assert_double_eq(r->lifetime_ns[3], 1000e6); /* max */
    ck_assert_str_eq(ha_life_str(&l, r->free_site), "release");
    ck_assert_double_eq(r->free_site_share, 0.75);
    ck_assert_double_eq(r->other_thread_share, 0.25);
    /* b's allocations and frees at 5 and 9 ns lie inside each of a's
     * lives: none of them is temporary, and that is known. */
    ck_assert_double_eq(r->temporary_share, 0);
    ck_assert_int_eq(r->why, HA_LIFE_KNOWN);
    ha_lifetimes_note(&l, r, note, sizeof(note));
    ck_assert_str_eq(note, "");
    /* b: two objects freed in the nanosecond they were made, nothing
     * between; had each held one event, two samples (every event logged)
     * would have shown two: too few to say. */
    r = life_row(&l, "site_b (inline)");
    ck_assert_double_eq(r->lifetime_ns[3], 0);
    ck_assert(isnan(r->temporary_share));
    ck_assert_int_eq(r->why, HA_LIFE_FEW);
    ck_assert_double_eq(r->temporary_min, 0);
    ck_assert_double_eq(r->temporary_max, 1);
    ha_lifetimes_note(&l, r, note, sizeof(note));
    ck_assert_str_eq(note, "too few samples (2): had each object outlived "
                           "one other allocation or free, about 2.0 would "
                           "have shown it; lower lg_prof_sample or widen "
                           "the window");
    ha_lifetimes_free(&l);
    ha_syms_free(&s);
    ha_heapv2_free(&p);
    ha_proflog_free(&log);
}
END_TEST

START_TEST(test_lifetimes_per_stack)
{
    struct ha_proflog log;
    struct ha_heapv2 p;
    struct ha_syms s;
    struct ha_lifetimes l;
    struct ha_life_opts o = {true, 0};
    const struct ha_life_row *r;
    char err[256] = "";

    life_setup(&log, &p, &s);
    ck_assert_int_eq(ha_lifetimes_build(&log, &p, &s, &o, &l, err,
                                        sizeof(err)),
                     0);
    ck_assert_uint_eq(l.n_rows, 2);
    r = life_row(&l, "main;site_a");
    ck_assert_str_eq(ha_life_str(&l, r->site), "site_a");
    ck_assert_str_eq(ha_life_str(&l, r->free_stack), "main;release");
    ck_assert_str_eq(ha_life_str(&l, r->free_site), "release");
    r = life_row(&l, "main;c;site_b[inline]");
    ck_assert_str_eq(ha_life_str(&l, r->site), "site_b (inline)");
    ha_lifetimes_free(&l);
    ha_syms_free(&s);
    ha_heapv2_free(&p);
    ha_proflog_free(&log);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The temporary share, on synthetic logs                              */
/* ------------------------------------------------------------------ */

/* One object of a synthetic log, on thread 0 unless said. */
struct synth {
    uint32_t alloc_trace, free_trace;
    uint64_t alloc_ns, free_ns, usize;
    uint32_t free_thread;
};

static int
by_free(const void *x, const void *y)
{
    const struct synth *a = x, *b = y;

    return a->free_ns < b->free_ns ? -1 : a->free_ns > b->free_ns;
}

/* Traces of synth logs: 0 site_a, 1 site_b, 2 freed in release, 3 in
 * drain, 4 grow's realloc making a block, 5 the same realloc freeing
 * one (another jemalloc path, the same call), 6 site_c. */
static const char *const synth_traces[] = {
    "[\"0x100\",\"0x200\",\"0x400\"]", "[\"0x100\",\"0x300\",\"0x400\"]",
    "[\"0x100\",\"0x500\",\"0x400\"]", "[\"0x100\",\"0x600\",\"0x400\"]",
    "[\"0x100\",\"0x700\",\"0x400\"]", "[\"0x180\",\"0x700\",\"0x400\"]",
    "[\"0x100\",\"0x800\",\"0x400\"]",
};

/* Builds the lifetimes of objects o[0 .. n) (put in the order of their
 * frees, as jemalloc writes them; stably, so equal times keep the
 * order given) in a log of clock high or default, lg_sample_rate lg. */
static void
synth_build(struct synth *o, size_t n, bool high, int lg, uint64_t tick,
            struct ha_proflog *log, struct ha_heapv2 *p, struct ha_syms *s,
            struct ha_lifetimes *l)
{
    struct ha_buf b = HA_BUF_INIT;
    struct ha_life_opts opts = {false, tick};
    char err[256] = "";

    /* qsort is not stable: sort a copy keyed by position too. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && by_free(&o[j - 1], &o[j]) > 0; j--) {
            struct synth t = o[j];

            o[j] = o[j - 1];
            o[j - 1] = t;
        }
    ha_buf_printf(&b, "{\"info\":{\"duration\":1000000000,"
                      "\"lg_sample_rate\":%d,\"prof_time_resolution\":"
                      "\"%s\"},\"threads\":[{\"thr_uid\":0,"
                      "\"thr_name\":\"main\"},{\"thr_uid\":1,"
                      "\"thr_name\":\"other\"}],\"stack_traces\":[",
                  lg, high ? "high" : "default");
    for (size_t i = 0; i < HA_ARRAY_SIZE(synth_traces); i++)
        ha_buf_printf(&b, "%s%s", i ? "," : "", synth_traces[i]);
    ha_buf_append_str(&b, "],\"allocations\":[");
    for (size_t i = 0; i < n; i++)
        ha_buf_printf(&b,
                      "%s{\"alloc_thread\":0,\"free_thread\":%u,"
                      "\"alloc_trace\":%u,\"free_trace\":%u,"
                      "\"alloc_timestamp\":%llu,\"free_timestamp\":%llu,"
                      "\"usize\":%llu}",
                      i ? "," : "", o[i].free_thread, o[i].alloc_trace,
                      o[i].free_trace, (unsigned long long)o[i].alloc_ns,
                      (unsigned long long)o[i].free_ns,
                      (unsigned long long)(o[i].usize ? o[i].usize : 64));
    ha_buf_append_str(&b, "]}");
    ck_assert(!ha_buf_failed(&b));
    ck_assert_msg(ha_proflog_parse((const char *)b.data, b.len, log, err,
                                   sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(ha_traces_as_heapv2(&log->traces, NULL, NULL, 0, "", 0,
                                         p),
                     0);
    fake_syms(s, life_syms, HA_ARRAY_SIZE(life_syms));
    ck_assert_msg(ha_lifetimes_build(log, p, s, &opts, l, err,
                                     sizeof(err)) == 0,
                  "%s", err);
    ha_buf_free(&b);
}

static void
synth_free(struct ha_proflog *log, struct ha_heapv2 *p, struct ha_syms *s,
           struct ha_lifetimes *l)
{
    ha_lifetimes_free(l);
    ha_syms_free(s);
    ha_heapv2_free(p);
    ha_proflog_free(log);
}

/* The fine clock, every event logged: what lies inside a life decides,
 * as precisely as the samples allow. */
START_TEST(test_lifetimes_evidence)
{
    struct synth *o = calloc(400, sizeof(*o));
    size_t n = 0;
    struct ha_proflog log;
    struct ha_heapv2 p;
    struct ha_syms s;
    struct ha_lifetimes l;
    const struct ha_life_row *r;
    char note[512];

    ck_assert_ptr_nonnull(o);
    for (uint64_t i = 0; i < 100; i++) {
        uint64_t v = 3000000 + 1000 * i;

        /* site_a: freed at once, nothing between. */
        o[n++] = (struct synth){0, 2, 1000 * i, 1000 * i + 10, 0, 0};
        /* grow: X made, then realloc'ed (the new block Y made, X freed
         * 60 ns later, the same call), Y freed: heaptrack sees +X -X +Y
         * -Y, both temporary. */
        o[n++] = (struct synth){4, 5, v, v + 160, 0, 0};
        o[n++] = (struct synth){4, 2, v + 100, v + 400, 0, 0};
    }
    for (uint64_t i = 0; i < 10; i++) {
        uint64_t t = 1000000 + 1000 * i, u = 2000000 + 1000 * i;

        /* site_c then site_b, interleaved: each life holds one event of
         * the other's. */
        o[n++] = (struct synth){6, 2, t, t + 200, 0, 0};
        o[n++] = (struct synth){1, 2, t + 100, t + 300, 0, 0};
        /* site_c freed in drain: half hold one event (a site_b made
         * inside it, freed after), half none. */
        o[n++] = (struct synth){6, 3, u, u + 500, 0, 0};
        if (i % 2 == 0)
            o[n++] = (struct synth){1, 3, u + 100, u + 600, 0, 0};
    }
    synth_build(o, n, true, 0, 0, &log, &p, &s, &l);
    /* 100 samples, none with an event inside: had they held one each,
     * 100 would have shown; at most 3.67 of 100 may hold one. */
    r = life_row(&l, "site_a");
    ck_assert_double_eq(r->temporary_share, 1);
    ck_assert_double_eq_tol(r->temporary_min, 1 - 3.669 / 100, 1e-3);
    ck_assert_double_eq(r->temporary_max, 1);
    ck_assert_int_eq(r->why, HA_LIFE_KNOWN);
    ck_assert_double_eq(r->lifetime_ns[0], 10);
    r = life_row(&l, "grow");
    ck_assert_double_eq(r->temporary_share, 1);
    ck_assert_int_eq(r->why, HA_LIFE_KNOWN);
    r = life_row(&l, "site_b (inline)");
    ck_assert_double_eq(r->temporary_share, 0);
    ck_assert_double_eq(r->temporary_max, 0);
    /* 10 at 0 (each shown to hold one event), and 10 at 1 - 0.5 (half
     * shown to): max(0, 1 - mean events) per path. Five sightings leave
     * the second path anywhere from 0 to its unproven half. */
    r = life_row(&l, "site_c");
    ck_assert_double_eq_tol(r->temporary_share, 0.25, 1e-12);
    ck_assert_double_eq(r->temporary_min, 0);
    ck_assert_double_eq_tol(r->temporary_max, 0.25, 1e-12);
    ck_assert_int_eq(r->why, HA_LIFE_FEW);
    ha_lifetimes_note(&l, r, note, sizeof(note));
    ck_assert_str_eq(note, "between 0.00 and 0.25: too few samples (20): "
                           "had each object outlived one other allocation "
                           "or free, about 10.0 would have shown it; lower "
                           "lg_prof_sample or widen the window");
    /* (100 + 200 + 10 * 0.5) / 335 objects. */
    ck_assert_double_eq_tol(l.temporary_share, 305.0 / 335, 1e-12);
    synth_free(&log, &p, &s, &l);
    free(o);
}
END_TEST

/* jemalloc's default clock: ticks of 4 ms, lives under two are unknown
 * unless the order of the frees places an event in them. */
START_TEST(test_lifetimes_ticks)
{
    struct synth o[120];
    size_t n = 0;
    const uint64_t T = 4000000, t0 = 1234567;
    struct ha_proflog log;
    struct ha_heapv2 p;
    struct ha_syms s;
    struct ha_lifetimes l;
    const struct ha_life_row *r;
    char note[512];

    /* site_a: 20 freed in the tick they were made in. */
    for (uint64_t i = 0; i < 20; i++)
        o[n++] = (struct synth){0, 2, t0 + i * T, t0 + i * T, 0, 0};
    /* site_b: 10 living 5 ticks, a site_c made and freed in a tick
     * between. */
    for (uint64_t i = 0; i < 10; i++) {
        uint64_t t = t0 + (1000 + 10 * i) * T;

        o[n++] = (struct synth){1, 2, t, t + 5 * T, 0, 0};
        o[n++] = (struct synth){6, 2, t + 2 * T, t + 2 * T, 0, 0};
    }
    /* grow: 41 made in one tick, freed in the next one after another:
     * each but the first outlives the frees logged before its own. */
    for (uint64_t i = 0; i < 41; i++)
        o[n++] = (struct synth){4, 2, t0 + 2000 * T, t0 + 2001 * T, 0, 0};
    synth_build(o, n, false, 0, 0, &log, &p, &s, &l);
    ck_assert_uint_eq(ha_proflog_tick_ns(&log), T);
    ck_assert_uint_eq(l.tick_ns, T);
    ck_assert(!l.time_high);
    r = life_row(&l, "site_a");
    ck_assert(isnan(r->lifetime_ns[0]));
    ck_assert(isnan(r->lifetime_ns[3]));
    ck_assert(isnan(r->temporary_share));
    ck_assert_int_eq(r->why, HA_LIFE_SUBTICK);
    ck_assert_uint_eq(r->subtick, 20);
    ha_lifetimes_note(&l, r, note, sizeof(note));
    ck_assert_str_eq(note, "20 of its 20 samples lived under two ticks of "
                           "jemalloc's default profiling clock (4 ms "
                           "each), too short to place another allocation "
                           "or free in; start the process with "
                           "prof_time_resolution:high");
    r = life_row(&l, "site_b (inline)");
    ck_assert_double_eq(r->lifetime_ns[0], 5.0 * T);
    ck_assert_double_eq(r->temporary_share, 0);
    r = life_row(&l, "grow");
    ck_assert_double_eq(r->lifetime_ns[0], T);
    ck_assert_int_eq(r->why, HA_LIFE_KNOWN);
    ck_assert_double_eq(r->temporary_min, 0);
    ck_assert_double_eq_tol(r->temporary_max, 1.0 / 41, 1e-12);
    ck_assert_double_eq_tol(r->temporary_share, 0.5 / 41, 1e-12);
    /* 31 of the 81 objects may be temporary or not. */
    ck_assert_double_eq_tol(l.temporary_share, 15.5 / 81, 1e-12);
    ck_assert_double_eq(l.temporary_min, 0);
    ck_assert_double_eq_tol(l.temporary_max, 31.0 / 81, 1e-12);
    synth_free(&log, &p, &s, &l);

    /* A tick given wins over the log's steps. */
    n = 0;
    for (uint64_t i = 0; i < 5; i++)
        o[n++] = (struct synth){0, 2, t0 + 2 * i * T, t0 + (2 * i + 1) * T,
                                0, 0};
    synth_build(o, n, false, 0, 1000000, &log, &p, &s, &l);
    ck_assert_uint_eq(ha_proflog_tick_ns(&log), T);
    ck_assert_uint_eq(l.tick_ns, 1000000);
    synth_free(&log, &p, &s, &l);
}
END_TEST

/* Sampled logs: a path needs enough samples to have shown an event. */
START_TEST(test_lifetimes_power)
{
    struct synth *o = calloc(9100, sizeof(*o));
    size_t n = 0;
    struct ha_proflog log;
    struct ha_heapv2 p;
    struct ha_syms s;
    struct ha_lifetimes l;
    const struct ha_life_row *r;
    double w = 1 / (1 - exp(-16.0 / 1024));
    char note[512];

    ck_assert_ptr_nonnull(o);
    /* All temporary, 16 bytes at a period of 1 KiB: one in 64.5 logged,
     * 100, 3000 and 6000 samples. */
    for (uint64_t i = 0; i < 100; i++)
        o[n++] = (struct synth){0, 2, 1000 * i, 1000 * i + 50, 16, 0};
    for (uint64_t i = 0; i < 3000; i++)
        o[n++] = (struct synth){6, 2, 1000000 + 1000 * i,
                                1000000 + 1000 * i + 50, 16, 0};
    for (uint64_t i = 0; i < 6000; i++)
        o[n++] = (struct synth){4, 2, 10000000 + 1000 * i,
                                10000000 + 1000 * i + 50, 16, 0};
    synth_build(o, n, true, 10, 0, &log, &p, &s, &l);
    ck_assert_double_eq_tol(l.p_event, 1 / w, 1e-12);
    r = life_row(&l, "site_a");
    ck_assert_double_eq_tol(r->objects, 100 * w, 1e-6);
    ck_assert(isnan(r->temporary_share));
    ck_assert_int_eq(r->why, HA_LIFE_FEW);
    ck_assert_double_eq_tol(r->sightings, 100 / w, 1e-9);
    ha_lifetimes_note(&l, r, note, sizeof(note));
    ck_assert_str_eq(note, "too few samples (100): had each object "
                           "outlived one other allocation or free, about "
                           "1.6 would have shown it; lower lg_prof_sample "
                           "or widen the window");
    r = life_row(&l, "site_c");
    ck_assert_double_eq(r->temporary_share, 1);
    ck_assert_int_eq(r->why, HA_LIFE_FEW);
    ha_lifetimes_note(&l, r, note, sizeof(note));
    ck_assert_str_eq(note, "between 0.92 and 1.00: too few samples (3000): "
                           "had each object outlived one other allocation "
                           "or free, about 46.5 would have shown it; lower "
                           "lg_prof_sample or widen the window");
    r = life_row(&l, "grow");
    ck_assert_double_eq(r->temporary_share, 1);
    ck_assert_int_eq(r->why, HA_LIFE_KNOWN);
    synth_free(&log, &p, &s, &l);
    free(o);
}
END_TEST

/* jeprof's scaling, one object at a time: a 100-byte sample at period
 * 1000 stands for 1/(1-exp(-0.1)) objects. */
START_TEST(test_lifetimes_scaling)
{
    ck_assert_double_eq_tol(ha_proflog_weight(1000, 100),
                            1.0 / (1.0 - exp(-0.1)), 1e-9);
    ck_assert_double_eq(ha_proflog_weight(0, 100), 1);
    ck_assert_double_eq(ha_proflog_weight(1, 100), 1.0 / (1.0 - exp(-100)));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Live: the generator run anew, symbolized for real                   */
/* ------------------------------------------------------------------ */

START_TEST(test_proflog_live)
{
    char dir[] = "/tmp/check_proflog.XXXXXX", gen[4096], cmd[8400];
    char path[4200], err[256] = "";
    char *text, *maps;
    size_t len, maps_len;
    struct ha_proflog log;
    struct ha_heapv2 p;
    struct ha_maps m;
    struct ha_syms s = {0};
    struct ha_symbolizer *sym;
    struct ha_symbolize_ops ops;
    struct ha_lifetimes l;
    struct ha_life_opts o = {false, 0};
    uint64_t *pcs;
    uint32_t *index;
    size_t n_pcs;
    const struct ha_life_row *r;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(gen, sizeof(gen), "%s/test/proflog_gen", builddir());
    ck_assert_msg(access(gen, X_OK) == 0, "%s not built", gen);
    /* _i 0: jemalloc's default clock; 1: the fine one. */
    snprintf(cmd, sizeof(cmd),
             "MALLOC_CONF=prof:true,lg_prof_sample:0%s '%s' '%s'",
             _i ? ",prof_time_resolution:high" : "", gen, dir);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    snprintf(path, sizeof(path), "%s/proflog.json", dir);
    text = read_file(path, &len);
    snprintf(path, sizeof(path), "%s/proflog.maps", dir);
    maps = read_file(path, &maps_len);
    ck_assert_msg(ha_proflog_parse(text, len, &log, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(ha_traces_as_heapv2(&log.traces, NULL, NULL, 1, maps,
                                         maps_len, &p),
                     0);
    ck_assert_msg(ha_maps_parse(p.maps, p.maps_len, &m, err, sizeof(err)) ==
                      0,
                  "%s", err);
    sym = ha_symbolizer_new(NULL);
    ck_assert_ptr_nonnull(sym);
    ops = ha_symbolizer_ops(sym);
    ck_assert_int_eq(ha_agg_lookup_index(&p, &pcs, &n_pcs, &index), 0);
    ck_assert_msg(ops.symbolize(ops.ctx, &m, pcs, n_pcs, &s, err,
                                sizeof(err)) == 0,
                  "%s", err);
    ha_syms_set_frame_index(&s, pcs, n_pcs, index, p.n_frames);
    ck_assert_int_eq(ha_lifetimes_build(&log, &p, &s, &o, &l, err,
                                        sizeof(err)),
                     0);
    /* By bytes freed: held (1.6 MB), temp (2 MB at 4096), handoff. */
    r = life_row(&l, "site_temp");
    ck_assert_uint_eq(r->samples, 500);
    ck_assert_double_eq(r->bytes, 500.0 * 4096);
    ck_assert_double_eq(r->other_thread_share, 0);
    ck_assert_str_eq(ha_life_str(&l, l.rows[0].key), "site_temp");
    ck_assert_int_eq(l.time_high, _i);
    if (_i) {
        /* Each block freed before anything else was allocated, every
         * event logged: all temporary, known; lives of a microsecond or
         * so (a backtrace on each side is outside them). */
        ck_assert_uint_eq(l.tick_ns, 1);
        ck_assert_double_le(r->lifetime_ns[0], 1e6);
        ck_assert_double_eq(r->temporary_share, 1);
    } else {
        /* Under a tick of CLOCK_MONOTONIC_COARSE: no lifetime, no
         * share, and the reason. */
        /* Without a window's side file the tick is the log's smallest
         * step between distinct times: a whole number of the clock's
         * ticks (one on a quiet machine; 5 were seen under ASan at load
         * 12, where the generator's events came further apart). */
        struct timespec res;
        double ticks;

        ck_assert_int_eq(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
        ticks = (double)l.tick_ns /
                ((double)res.tv_sec * 1e9 + (double)res.tv_nsec);
        ck_assert_double_ge(l.tick_ns, 1000000);
        ck_assert_msg(ticks >= 0.98 && fabs(ticks - round(ticks)) < 0.02,
                      "tick %llu ns is %.3f of the clock's resolution",
                      (unsigned long long)l.tick_ns, ticks);
        ck_assert(isnan(r->lifetime_ns[0]));
        ck_assert(isnan(r->temporary_share));
        ck_assert_int_eq(r->why, HA_LIFE_SUBTICK);
    }
    r = life_row(&l, "site_held");
    ck_assert_uint_eq(r->samples, 100);
    /* Held 60 ms; jemalloc's default clock ticks every few ms. */
    ck_assert_double_ge(r->lifetime_ns[0], 50e6);
    ck_assert_double_le(r->lifetime_ns[0], 200e6);
    ck_assert_str_eq(ha_life_str(&l, r->free_site), "main");
    /* Each outlived the frees of the held blocks logged before its own
     * (the same tick or not): known, none temporary. */
    ck_assert_double_le(r->temporary_share, 0.05);
    r = life_row(&l, "site_handoff");
    ck_assert_uint_eq(r->samples, 64);
    ck_assert_double_eq(r->other_thread_share, 1);
    ck_assert_str_eq(ha_life_str(&l, r->free_site), "consumer");
    for (size_t i = 0; i < l.n_rows; i++)
        ck_assert_str_ne(ha_life_str(&l, l.rows[i].key), "site_live");
    ha_lifetimes_free(&l);
    free(pcs);
    ha_syms_free(&s);
    ha_maps_free(&m);
    ha_heapv2_free(&p);
    ha_proflog_free(&log);
    ha_symbolizer_free(sym);
    free(text);
    free(maps);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *
proflog_suite(void)
{
    Suite *s = suite_create("proflog");
    TCase *core = tcase_create("core");
    TCase *errors = tcase_create("errors");
    TCase *limits = tcase_create("limits");
    TCase *live = tcase_create("live");

    tcase_add_test(core, test_json_values);
    tcase_add_test(core, test_proflog_fixture);
    tcase_add_test(core, test_recent_fixture);
    tcase_add_test(core, test_lifetimes_per_site);
    tcase_add_test(core, test_lifetimes_per_stack);
    tcase_add_test(core, test_lifetimes_scaling);
    tcase_add_test(core, test_lifetimes_evidence);
    tcase_add_test(core, test_lifetimes_ticks);
    tcase_add_test(core, test_lifetimes_power);
    suite_add_tcase(s, core);
    tcase_add_test(errors, test_json_table);
    tcase_add_test(errors, test_proflog_errors);
    tcase_add_test(errors, test_recent_errors);
    suite_add_tcase(s, errors);
    tcase_add_test(limits, test_proflog_prefixes);
    tcase_set_timeout(limits, 60);
    suite_add_tcase(s, limits);
    /* Needs jemalloc's profiler in the child (proflog_gen is built
     * without sanitizers) and libdwfl. */
    tcase_add_loop_test(live, test_proflog_live, 0, 2);
    tcase_set_timeout(live, 60);
    suite_add_tcase(s, live);
    return s;
}

HA_CHECK_MAIN(proflog_suite)
