/* SPDX-License-Identifier: MIT
 *
 * Unit tests for core/: the Prometheus / OpenMetrics writer (expo.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

#include "core/buf.h"
#include "core/expo.h"

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
    return s;
}

HA_CHECK_MAIN(core_suite)
