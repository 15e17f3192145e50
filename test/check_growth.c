/* SPDX-License-Identifier: MIT
 *
 * Unit tests for the arithmetic behind "RSS keeps growing: is it a
 * leak?": prof/growth.c (least squares over a series of dumps, the score
 * that ranks a steady leak above a spike and a one-off step, the edge
 * cases of one dump, two dumps and equal times, and agreement with a
 * naive two-pass computation on random series with gaps), prof/smaps.c
 * (the /proc/<pid>/smaps reader, thread stacks found by their guard
 * pages) and prof/breakdown.c (RSS split into parts that add up). Pure
 * code: no jemalloc, no files, so every case runs in the sanitizer
 * build too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

#include "core/util.h"
#include "prof/growth.h"

/* ------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------ */

/* One named series: values per dump (NAN: absent from that dump). */
struct series {
    const char *key;
    double bytes[16];
};

/* Feeds n_dumps dumps at times t[] (seconds) with the given series. */
static void
feed(struct ha_growth *g, const double *t, size_t n_dumps,
     const struct series *s, size_t n_series)
{
    char err[128];

    for (size_t k = 0; k < n_dumps; k++) {
        ck_assert_int_eq(ha_growth_begin(g, t[k], err, sizeof(err)), 0);
        for (size_t i = 0; i < n_series; i++) {
            if (isnan(s[i].bytes[k]))
                continue;
            ck_assert_int_eq(ha_growth_add(g, s[i].key, strlen(s[i].key),
                                           s[i].bytes[k],
                                           s[i].bytes[k] / 1000, err,
                                           sizeof(err)),
                             0);
        }
        ck_assert_int_eq(ha_growth_end(g, err, sizeof(err)), 0);
    }
    ha_growth_finish(g);
}

static const struct ha_growth_row *
find_row(const struct ha_growth *g, const char *key, size_t *rank)
{
    for (size_t i = 0; i < g->n_rows; i++)
        if (strcmp(ha_growth_key(g, &g->rows[i]), key) == 0) {
            if (rank != NULL)
                *rank = i;
            return &g->rows[i];
        }
    ck_abort_msg("no row for key '%s'", key);
    return NULL;
}

static void
assert_close(double actual, double expected, double rel, const char *what)
{
    double tol = fabs(expected) * rel + 1e-9;

    ck_assert_msg(fabs(actual - expected) <= tol,
                  "%s: expected %.9g, got %.9g", what, expected, actual);
}

/* ------------------------------------------------------------------
 * Growth: ranking and figures
 * ------------------------------------------------------------------ */

/* 13 dumps 5 minutes apart: a leak that grows 1 MB at every step, a site
 * that spikes and frees (one spike caught by the very last dump, the
 * hardest case for a first-to-last comparison), a one-off 8 MB step
 * halfway, a flat site and a shrinking one. */
START_TEST(test_growth_steady_tops_step_tops_burst)
{
    struct ha_growth g;
    double t[13];
    struct series s[5] = {
        {"leak_site", {0}},
        {"burst_site", {0}},
        {"oneoff_site", {0}},
        {"flat_site", {0}},
        {"shrink_site", {0}},
    };
    const struct ha_growth_row *leak, *burst, *one, *flat, *shrink;
    size_t r_leak, r_burst, r_one;

    memset(&g, 0, sizeof(g));
    for (int k = 0; k < 13; k++) {
        t[k] = 1700000000.0 + 300.0 * k;
        s[0].bytes[k] = 1e6 * k;
        s[1].bytes[k] = (k == 2 || k == 5 || k == 9 || k == 12) ? 5e6 : 0;
        s[2].bytes[k] = k < 6 ? 0 : 8e6;
        s[3].bytes[k] = 3e6;
        s[4].bytes[k] = 10e6 - 0.5e6 * k;
    }
    feed(&g, t, 13, s, 5);
    ck_assert_uint_eq(g.n_rows, 5);
    leak = find_row(&g, "leak_site", &r_leak);
    burst = find_row(&g, "burst_site", &r_burst);
    one = find_row(&g, "oneoff_site", &r_one);
    flat = find_row(&g, "flat_site", NULL);
    shrink = find_row(&g, "shrink_site", NULL);

    ck_assert_uint_eq(r_leak, 0);
    ck_assert_msg(r_one < r_burst,
                  "the one-off step (rank %zu, score %g) must rank above "
                  "the burst site (rank %zu, score %g)",
                  r_one, one->score, r_burst, burst->score);

    /* The leak: 1 MB per 5 min = 12 MB/h, a perfect line, grew at every
     * one of the 12 steps. */
    assert_close(leak->bytes_per_hour, 12e6, 1e-9, "leak slope");
    assert_close(leak->objs_per_hour, 12e3, 1e-9, "leak objects slope");
    assert_close(leak->r2, 1.0, 1e-12, "leak r2");
    ck_assert_uint_eq(leak->steps, 12);
    ck_assert_uint_eq(leak->grew, 12);
    ck_assert_uint_eq(leak->shrank, 0);
    assert_close(leak->score, 12e6, 1e-9, "leak score");
    assert_close(leak->first_bytes, 0, 0, "leak first");
    assert_close(leak->last_bytes, 12e6, 0, "leak last");
    ck_assert_int_eq(leak->pattern, HA_GROWTH_STEADY);

    /* A step exactly halfway fits a line with r2 = 3/4 and grew once. */
    assert_close(one->r2, 0.75, 1e-9, "step r2");
    ck_assert_uint_eq(one->grew, 1);
    ck_assert_int_eq(one->pattern, HA_GROWTH_STEP);
    assert_close(one->score, one->bytes_per_hour * 0.75 / 12, 1e-9,
                 "step score");

    ck_assert_uint_eq(burst->grew, 4);
    ck_assert_uint_eq(burst->shrank, 3);
    ck_assert_int_eq(burst->pattern, HA_GROWTH_BURSTY);
    ck_assert_msg(burst->r2 < 0.1, "burst r2 %g", burst->r2);
    assert_close(burst->max_bytes, 5e6, 0, "burst peak");

    ck_assert_int_eq(flat->pattern, HA_GROWTH_FLAT);
    ck_assert(isnan(flat->r2));
    assert_close(flat->score, 0, 0, "flat score");
    ck_assert_int_eq(shrink->pattern, HA_GROWTH_SHRINKING);
    assert_close(shrink->bytes_per_hour, -6e6, 1e-9, "shrink slope");
    assert_close(shrink->score, 0, 0, "shrink score");
    assert_close(ha_growth_span_hours(&g), 1.0, 1e-12, "span");
    ha_growth_free(&g);
}
END_TEST

START_TEST(test_growth_one_dump)
{
    struct ha_growth g;
    double t[1] = {1000};
    struct series s[1] = {{"only", {4096}}};
    const struct ha_growth_row *r;

    memset(&g, 0, sizeof(g));
    feed(&g, t, 1, s, 1);
    r = find_row(&g, "only", NULL);
    ck_assert(isnan(r->bytes_per_hour));
    ck_assert(isnan(r->objs_per_hour));
    ck_assert(isnan(r->r2));
    ck_assert_uint_eq(r->steps, 0);
    assert_close(r->score, 0, 0, "score");
    assert_close(r->first_bytes, 4096, 0, "first");
    assert_close(r->last_bytes, 4096, 0, "last");
    ck_assert_int_eq(r->pattern, HA_GROWTH_UNKNOWN);
    assert_close(ha_growth_span_hours(&g), 0, 0, "span");
    ha_growth_free(&g);
}
END_TEST

START_TEST(test_growth_two_dumps)
{
    struct ha_growth g;
    double t[2] = {0, 1800}; /* half an hour */
    struct series s[2] = {{"up", {1e6, 3e6}}, {"down", {2e6, 1e6}}};
    const struct ha_growth_row *up, *down;

    memset(&g, 0, sizeof(g));
    feed(&g, t, 2, s, 2);
    up = find_row(&g, "up", NULL);
    down = find_row(&g, "down", NULL);
    /* Two points always fit: slope is the difference over the time. */
    assert_close(up->bytes_per_hour, 4e6, 1e-12, "up slope");
    assert_close(up->r2, 1, 1e-12, "up r2");
    assert_close(up->score, 4e6, 1e-12, "up score");
    ck_assert_uint_eq(up->grew, 1);
    ck_assert_int_eq(up->pattern, HA_GROWTH_STEADY);
    assert_close(down->bytes_per_hour, -2e6, 1e-12, "down slope");
    assert_close(down->score, 0, 0, "down score");
    ck_assert_int_eq(down->pattern, HA_GROWTH_SHRINKING);
    ck_assert_str_eq(ha_growth_key(&g, &g.rows[0]), "up");
    ha_growth_free(&g);
}
END_TEST

/* Dumps copied without their times all carry the same one: no slope can
 * be had, and the rows say so instead of dividing by zero. */
START_TEST(test_growth_equal_times)
{
    struct ha_growth g;
    double t[3] = {5000, 5000, 5000};
    struct series s[1] = {{"x", {1, 2, 3}}};
    const struct ha_growth_row *r;

    memset(&g, 0, sizeof(g));
    feed(&g, t, 3, s, 1);
    r = find_row(&g, "x", NULL);
    ck_assert(isnan(r->bytes_per_hour));
    ck_assert(isnan(r->r2));
    assert_close(r->score, 0, 0, "score");
    ck_assert_uint_eq(r->grew, 2);
    assert_close(r->last_bytes - r->first_bytes, 2, 0, "growth");
    ck_assert_int_eq(r->pattern, HA_GROWTH_UNKNOWN);
    ha_growth_free(&g);
}
END_TEST

/* Naive two-pass least squares on a full series (zeros filled in). */
static void
naive(const double *t, const double *y, size_t n, double *slope, double *r2)
{
    double mt = 0, my = 0, st = 0, sy = 0, c = 0;

    for (size_t k = 0; k < n; k++) {
        mt += t[k] / 3600.0;
        my += y[k];
    }
    mt /= (double)n;
    my /= (double)n;
    for (size_t k = 0; k < n; k++) {
        double dt = t[k] / 3600.0 - mt, dy = y[k] - my;

        st += dt * dt;
        sy += dy * dy;
        c += dt * dy;
    }
    *slope = c / st;
    *r2 = sy > 0 ? c * c / (st * sy) : NAN;
}

/* Keys that appear late, vanish and come back, with uneven times: the
 * running sums (zeros supplied for the dumps a key missed) agree with
 * the two-pass formula on the filled-in series. */
START_TEST(test_growth_matches_two_pass_with_gaps)
{
    unsigned seed = 12345;

    for (int round = 0; round < 50; round++) {
        struct ha_growth g;
        struct series s[6];
        char names[6][16];
        double t[16];
        size_t n = 3 + (size_t)(rand_r(&seed) % 14);

        memset(&g, 0, sizeof(g));
        t[0] = 1e9;
        for (size_t k = 1; k < n; k++)
            t[k] = t[k - 1] + 1 + rand_r(&seed) % 7200;
        for (int i = 0; i < 6; i++) {
            snprintf(names[i], sizeof(names[i]), "key%d", i);
            s[i].key = names[i];
            for (size_t k = 0; k < n; k++)
                s[i].bytes[k] = rand_r(&seed) % 3 == 0
                                    ? NAN
                                    : (double)(rand_r(&seed) % 100000) * 64;
        }
        feed(&g, t, n, s, 6);
        for (int i = 0; i < 6; i++) {
            double y[16], slope, r2;
            bool any = false;
            const struct ha_growth_row *r = NULL;

            for (size_t k = 0; k < n; k++) {
                y[k] = isnan(s[i].bytes[k]) ? 0 : s[i].bytes[k];
                any = any || !isnan(s[i].bytes[k]);
            }
            if (!any)
                continue;
            r = find_row(&g, names[i], NULL);
            naive(t, y, n, &slope, &r2);
            assert_close(r->bytes_per_hour, slope, 1e-6, "slope");
            if (isnan(r2))
                ck_assert(isnan(r->r2));
            else
                assert_close(r->r2, r2, 1e-6, "r2");
            assert_close(r->first_bytes, y[0], 0, "first");
            assert_close(r->last_bytes, y[n - 1], 0, "last");
        }
        ha_growth_free(&g);
    }
}
END_TEST

/* A heap of a terabyte growing by a kilobyte per dump: the running sums
 * keep the line exact where sums of squares would cancel. */
START_TEST(test_growth_precision_large_values)
{
    struct ha_growth g;
    double t[12];
    struct series s[1] = {{"big", {0}}};
    const struct ha_growth_row *r;

    memset(&g, 0, sizeof(g));
    for (int k = 0; k < 12; k++) {
        t[k] = 60.0 * k;
        s[0].bytes[k] = 1e12 + 1024.0 * k;
    }
    feed(&g, t, 12, s, 1);
    r = find_row(&g, "big", NULL);
    assert_close(r->bytes_per_hour, 1024.0 * 60, 1e-6, "slope");
    assert_close(r->r2, 1.0, 1e-6, "r2");
    ck_assert_int_eq(r->pattern, HA_GROWTH_STEADY);
    ha_growth_free(&g);
}
END_TEST

/* Two stacks that collapse to the same key in one dump add up. */
START_TEST(test_growth_same_key_twice_adds)
{
    struct ha_growth g;
    char err[128];

    memset(&g, 0, sizeof(g));
    ck_assert_int_eq(ha_growth_begin(&g, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_add(&g, "f", 1, 100, 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_add(&g, "f", 1, 50, 2, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_add(&g, "", 0, 50, 2, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_end(&g, err, sizeof(err)), 0);
    ha_growth_finish(&g);
    ck_assert_uint_eq(g.n_rows, 1);
    assert_close(g.rows[0].last_bytes, 150, 0, "bytes");
    assert_close(g.rows[0].last_objs, 3, 0, "objects");
    ha_growth_free(&g);
}
END_TEST

START_TEST(test_growth_misuse)
{
    struct ha_growth g;
    char err[128];

    memset(&g, 0, sizeof(g));
    ck_assert_int_eq(ha_growth_add(&g, "f", 1, 1, 1, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "growth: no dump is open");
    ck_assert_int_eq(ha_growth_end(&g, err, sizeof(err)), -1);
    ck_assert_int_eq(ha_growth_begin(&g, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_begin(&g, 0, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "growth: a dump is already open");
    ck_assert_int_eq(ha_growth_end(&g, err, sizeof(err)), 0);
    ha_growth_finish(&g);
    ck_assert_int_eq(ha_growth_begin(&g, 1, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "growth: the series is finished");
    ck_assert_uint_eq(g.n_rows, 0);
    ha_growth_free(&g);
    ha_growth_free(NULL);
    ck_assert_str_eq(ha_growth_pattern_name(HA_GROWTH_STEP), "step");
    ck_assert_str_eq(ha_growth_pattern_name(HA_GROWTH_PATTERN_MAX),
                     "unknown");
}
END_TEST

/* ------------------------------------------------------------------
 * Suite
 * ------------------------------------------------------------------ */

static Suite *
growth_suite(void)
{
    Suite *s = suite_create("growth");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");
    TCase *errors = tcase_create("errors");

    tcase_add_test(core, test_growth_steady_tops_step_tops_burst);
    tcase_add_test(core, test_growth_two_dumps);
    tcase_add_test(core, test_growth_matches_two_pass_with_gaps);
    tcase_add_test(core, test_growth_same_key_twice_adds);
    suite_add_tcase(s, core);

    tcase_add_test(limits, test_growth_one_dump);
    tcase_add_test(limits, test_growth_equal_times);
    tcase_add_test(limits, test_growth_precision_large_values);
    suite_add_tcase(s, limits);

    tcase_add_test(errors, test_growth_misuse);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(growth_suite)
