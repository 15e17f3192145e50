/* SPDX-License-Identifier: MIT
 *
 * Unit tests for core/: the Prometheus / OpenMetrics writer (expo.h),
 * fibers (fiber.h) and the radix sort (radix.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

#include "core/buf.h"
#include "core/expo.h"
#include "core/fiber.h"
#include "core/radix.h"

static char *
text_of(struct ha_buf *b)
{
    ha_buf_append_u8(b, 0);
    return (char *)b->data;
}

START_TEST(test_expo_prometheus_text)
{
    struct ha_buf b = HA_BUF_INIT;
    struct ha_expo e;
    static const char *const labels[] = {"type", "a\"b\\c\nd", NULL};
    char *t;

    ha_expo_init(&e, &b, HA_EXPO_PROMETHEUS);
    ha_expo_one(&e, "x_bytes", HA_EXPO_GAUGE, "Help with \\ and\nnewline.",
                1234567890123.0);
    ha_expo_one(&e, "y", HA_EXPO_COUNTER, "Counted.", 7);
    ha_expo_family(&e, "z", HA_EXPO_GAUGE, "Labelled.");
    ha_expo_sample(&e, labels, 0.5);
    ha_expo_sample(&e, NULL, NAN);
    ha_expo_sample(&e, NULL, -INFINITY);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    t = text_of(&b);
    ck_assert_str_eq(t, "# HELP x_bytes Help with \\\\ and\\nnewline.\n"
                        "# TYPE x_bytes gauge\n"
                        "x_bytes 1234567890123\n"
                        "# HELP y_total Counted.\n"
                        "# TYPE y_total counter\n"
                        "y_total 7\n"
                        "# HELP z Labelled.\n"
                        "# TYPE z gauge\n"
                        "z{type=\"a\\\"b\\\\c\\nd\"} 0.5\n"
                        "z NaN\n"
                        "z -Inf\n");
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_expo_openmetrics)
{
    struct ha_buf b = HA_BUF_INIT;
    struct ha_expo e;

    ha_expo_init(&e, &b, HA_EXPO_OPENMETRICS);
    ha_expo_one(&e, "y", HA_EXPO_COUNTER, "Counted.", 7);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    ck_assert_str_eq(text_of(&b), "# HELP y Counted.\n"
                                  "# TYPE y counter\n"
                                  "y_total 7\n"
                                  "# EOF\n");
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_expo_bad_names_fail)
{
    struct ha_buf b = HA_BUF_INIT;
    struct ha_expo e;
    static const char *const bad_label[] = {"1x", "v", NULL};

    ha_expo_init(&e, &b, HA_EXPO_PROMETHEUS);
    ha_expo_one(&e, "bad-name", HA_EXPO_GAUGE, "x", 1);
    ck_assert_int_eq(ha_expo_finish(&e), -1);
    ha_buf_free(&b);

    ha_expo_init(&e, &b, HA_EXPO_PROMETHEUS);
    ha_expo_sample(&e, NULL, 1); /* no family yet */
    ck_assert_int_eq(ha_expo_finish(&e), -1);
    ha_buf_free(&b);

    ha_expo_init(&e, &b, HA_EXPO_PROMETHEUS);
    ha_expo_family(&e, "ok", HA_EXPO_GAUGE, "x");
    ha_expo_sample(&e, bad_label, 1);
    ck_assert_int_eq(ha_expo_finish(&e), -1);
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_expo_negotiate)
{
    ck_assert_int_eq(ha_expo_negotiate(NULL), HA_EXPO_PROMETHEUS);
    ck_assert_int_eq(ha_expo_negotiate("*/*"), HA_EXPO_PROMETHEUS);
    ck_assert_int_eq(ha_expo_negotiate("text/plain;version=0.0.4"),
                     HA_EXPO_PROMETHEUS);
    /* What Prometheus 2.x sends. */
    ck_assert_int_eq(
        ha_expo_negotiate("application/openmetrics-text;version=1.0.0,"
                          "application/openmetrics-text;version=0.0.1;"
                          "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
        HA_EXPO_OPENMETRICS);
    ck_assert_int_eq(ha_expo_negotiate("text/plain, application/"
                                       "openmetrics-text; q=0"),
                     HA_EXPO_PROMETHEUS);
    ck_assert_int_eq(ha_expo_negotiate("application/openmetrics-textx"),
                     HA_EXPO_PROMETHEUS);
    ck_assert_str_eq(ha_expo_content_type(HA_EXPO_OPENMETRICS),
                     "application/openmetrics-text; version=1.0.0; "
                     "charset=utf-8");
}
END_TEST

/* Counts to n, yielding after each step, the way a statement yields from
 * SQLite's progress handler. */
struct counter {
    struct ha_fiber *f;
    int n, at;
    char deep[64]; /* written from a deep frame: the stack is usable */
};

static int
recurse(int depth, char *out)
{
    volatile char pad[4096];

    pad[0] = (char)depth;
    if (depth == 0) {
        out[0] = 'x';
        return pad[0];
    }
    return recurse(depth - 1, out) + pad[0];
}

static void
count_fn(void *arg)
{
    struct counter *c = arg;

    for (c->at = 0; c->at < c->n; c->at++)
        ha_fiber_yield(c->f);
    (void)recurse(256, c->deep); /* 1 MiB of frames */
}

START_TEST(test_fiber_yield_resume)
{
    struct counter c = {.n = 3};
    int resumes = 0;

    c.f = ha_fiber_new(HA_FIBER_STACK);
    ck_assert_ptr_nonnull(c.f);
    ck_assert(!ha_fiber_busy(c.f));
    ck_assert_int_eq(ha_fiber_start(c.f, count_fn, &c), HA_FIBER_PAUSED);
    ck_assert(ha_fiber_busy(c.f));
    ck_assert(ha_fiber_paused(c.f));
    ck_assert_int_eq(c.at, 0);
    while (ha_fiber_resume(c.f) == HA_FIBER_PAUSED) {
        resumes++;
        ck_assert_int_eq(c.at, resumes); /* one step per resume */
    }
    ck_assert_int_eq(resumes, 2);
    ck_assert_int_eq(c.at, 3);
    ck_assert_int_eq(c.deep[0], 'x');
    ck_assert(!ha_fiber_busy(c.f));
    ck_assert(!ha_fiber_paused(c.f));
    /* Done: resuming again is a no-op, and the fiber can start anew. */
    ck_assert_int_eq(ha_fiber_resume(c.f), HA_FIBER_DONE);
    c.n = 0;
    c.deep[0] = 0;
    ck_assert_int_eq(ha_fiber_start(c.f, count_fn, &c), HA_FIBER_DONE);
    ck_assert_int_eq(c.deep[0], 'x');
    ha_fiber_free(c.f);
}
END_TEST

/* Two fibers paused at once, resumed in turn: each keeps its own frames. */
START_TEST(test_fiber_interleaved)
{
    struct counter a = {.n = 5}, b = {.n = 2};
    struct ha_fiber_pool pool = {0};
    int turns = 0;

    a.f = ha_fiber_pool_get(&pool);
    b.f = ha_fiber_pool_get(&pool);
    ck_assert_ptr_nonnull(a.f);
    ck_assert_ptr_nonnull(b.f);
    ck_assert_ptr_ne(a.f, b.f);
    ck_assert_int_eq(ha_fiber_start(a.f, count_fn, &a), HA_FIBER_PAUSED);
    ck_assert_int_eq(ha_fiber_start(b.f, count_fn, &b), HA_FIBER_PAUSED);
    while (ha_fiber_busy(a.f) || ha_fiber_busy(b.f)) {
        (void)ha_fiber_resume(a.f);
        (void)ha_fiber_resume(b.f);
        turns++;
    }
    ck_assert_int_eq(turns, 5);
    ck_assert_int_eq(a.at, 5);
    ck_assert_int_eq(b.at, 2);
    /* Idle fibers go back to the pool and come out again. */
    ha_fiber_pool_put(&pool, a.f);
    ha_fiber_pool_put(&pool, b.f);
    ck_assert_uint_eq(pool.n, 2);
    ck_assert_ptr_eq(ha_fiber_pool_get(&pool), b.f);
    ha_fiber_pool_put(&pool, b.f);
    ha_fiber_pool_clear(&pool);
    ck_assert_uint_eq(pool.n, 0);
}
END_TEST

/* A busy fiber is never pooled: its frames are live. */
START_TEST(test_fiber_pool_refuses_busy)
{
    struct counter c = {.n = 1};
    struct ha_fiber_pool pool = {0};

    c.f = ha_fiber_pool_get(&pool);
    ck_assert_int_eq(ha_fiber_start(c.f, count_fn, &c), HA_FIBER_PAUSED);
    ha_fiber_pool_put(&pool, c.f);
    ck_assert_uint_eq(pool.n, 0);
    ck_assert_int_eq(ha_fiber_resume(c.f), HA_FIBER_DONE);
    ha_fiber_pool_put(&pool, c.f);
    ck_assert_uint_eq(pool.n, 1);
    ha_fiber_pool_clear(&pool);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Radix sort                                                          */
/* ------------------------------------------------------------------ */

/* Sorted by key, equal keys in their first order (val is the original
 * place), on keys like a dump's addresses (a few high bits, many equal)
 * and on arbitrary ones. */
START_TEST(test_radix_sorts_stably)
{
    const size_t n = 50000;
    struct ha_radix_item *v = malloc(n * sizeof(*v));
    uint64_t x = 42;

    ck_assert_ptr_nonnull(v);
    for (int shape = 0; shape < 2; shape++) {
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            v[i].key = shape == 0 ? 0x7f0000000000ull + (x >> 50) * 16
                                  : x;
            v[i].val = i;
        }
        ck_assert_int_eq(ha_radix_sort(v, n), 0);
        for (size_t i = 1; i < n; i++) {
            ck_assert_msg(v[i - 1].key <= v[i].key, "shape %d: %zu out of "
                          "order", shape, i);
            if (v[i - 1].key == v[i].key)
                ck_assert_msg(v[i - 1].val < v[i].val,
                              "shape %d: equal keys reordered at %zu",
                              shape, i);
        }
    }
    v[0].key = 7;
    ck_assert_int_eq(ha_radix_sort(v, 1), 0);
    ck_assert_int_eq(ha_radix_sort(v, 0), 0);
    ck_assert_uint_eq(v[0].key, 7);
    free(v);
}
END_TEST

static Suite *
core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("expo");

    tcase_add_test(tc, test_expo_prometheus_text);
    tcase_add_test(tc, test_expo_openmetrics);
    tcase_add_test(tc, test_expo_bad_names_fail);
    tcase_add_test(tc, test_expo_negotiate);
    suite_add_tcase(s, tc);
    tc = tcase_create("fiber");
    tcase_add_test(tc, test_fiber_yield_resume);
    tcase_add_test(tc, test_fiber_interleaved);
    tcase_add_test(tc, test_fiber_pool_refuses_busy);
    suite_add_tcase(s, tc);
    tc = tcase_create("radix");
    tcase_add_test(tc, test_radix_sorts_stably);
    suite_add_tcase(s, tc);
    return s;
}

HA_CHECK_MAIN(core_suite)
