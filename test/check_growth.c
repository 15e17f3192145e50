/* SPDX-License-Identifier: MIT
 *
 * Unit tests for the arithmetic behind "RSS keeps growing: is it a
 * leak?": prof/growth.c (least squares over a series of dumps, the score
 * that ranks a steady leak above a spike and a one-off step, the edge
 * cases of one dump, two dumps and equal times, and agreement with a
 * naive two-pass computation on random series with gaps), prof/smaps.c
 * (the /proc/<pid>/smaps reader, thread stacks found by their guard
 * pages), prof/breakdown.c (RSS split into parts that add up) and the
 * dump time recorded in <dump>.buildid (prof/maps.c). Pure
 * code: no jemalloc, no files, so every case runs in the sanitizer
 * build too.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

#include "core/util.h"
#include "engine/leakwatch.h"
#include "prof/breakdown.h"
#include "prof/dumpseries.h"
#include "prof/growth.h"
#include "prof/maps.h"
#include "prof/smaps.h"

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
    struct series s[7] = {
        {"leak_site", {0}},
        {"burst_site", {0}},
        {"oneoff_site", {0}},
        {"flat_site", {0}},
        {"shrink_site", {0}},
        {"burst_zero_ends", {0}},
        {"burst_high_first", {0}},
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
        s[5].bytes[k] = (k == 1 || k == 4 || k == 5) ? 2e6 : 0;
        s[6].bytes[k] = (k == 0 || k == 3 || k == 7) ? 6e6 : 0;
    }
    feed(&g, t, 13, s, 7);
    ck_assert_uint_eq(g.n_rows, 7);
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
    /* Spikes that start and end at nothing are bursty too, not
     * shrinking, whatever the sign of their slope. */
    ck_assert_int_eq(find_row(&g, "burst_zero_ends", NULL)->pattern,
                     HA_GROWTH_BURSTY);
    /* Caught high at the first dump, low at the last: it falls overall
     * but rises as often as it falls. */
    ck_assert_int_eq(find_row(&g, "burst_high_first", NULL)->pattern,
                     HA_GROWTH_BURSTY);
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

/* Cumulative counters: the first and last dumps' figures per key; a key
 * absent from a dump with them had allocated nothing yet; one dump
 * without them voids them for the series. */
START_TEST(test_growth_alloc_counters)
{
    struct ha_growth g;
    char err[128];
    const struct ha_growth_row *r;

    memset(&g, 0, sizeof(g));
    ck_assert_int_eq(ha_growth_begin(&g, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_add(&g, "burst", 5, 0, 0, err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_growth_add_alloc(&g, "burst", 5, 1000, 10, err,
                                         sizeof(err)),
                     0);
    ck_assert_int_eq(ha_growth_end(&g, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_begin(&g, 10, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_add_alloc(&g, "burst", 5, 21000, 210, err,
                                         sizeof(err)),
                     0);
    ck_assert_int_eq(ha_growth_add_alloc(&g, "late", 4, 500, 5, err,
                                         sizeof(err)),
                     0);
    ck_assert_int_eq(ha_growth_end(&g, err, sizeof(err)), 0);
    ha_growth_finish(&g);
    ck_assert(ha_growth_has_alloc(&g));
    r = find_row(&g, "burst", NULL);
    assert_close(r->last_alloc_bytes - r->first_alloc_bytes, 20000, 0,
                 "burst allocated");
    assert_close(r->last_alloc_objs - r->first_alloc_objs, 200, 0,
                 "burst objects");
    r = find_row(&g, "late", NULL);
    assert_close(r->first_alloc_bytes, 0, 0, "late first");
    assert_close(r->last_alloc_bytes, 500, 0, "late last");
    ha_growth_free(&g);

    memset(&g, 0, sizeof(g));
    ck_assert_int_eq(ha_growth_begin(&g, 0, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_add_alloc(&g, "f", 1, 1, 1, err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_growth_end(&g, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_begin(&g, 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_add(&g, "f", 1, 1, 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ha_growth_end(&g, err, sizeof(err)), 0);
    ha_growth_finish(&g);
    ck_assert(!ha_growth_has_alloc(&g));
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
 * smaps
 * ------------------------------------------------------------------ */

/* Field lines every mapping has, around its Rss (kB). */
#define FIELDS(rss, pss, anon, lazy)                                     \
    "Size:                132 kB\n"                                       \
    "KernelPageSize:        4 kB\n"                                       \
    "Rss:                 " #rss " kB\n"                                  \
    "Pss:                 " #pss " kB\n"                                  \
    "Anonymous:           " #anon " kB\n"                                 \
    "LazyFree:            " #lazy " kB\n"                                 \
    "Swap:                  1 kB\n"                                       \
    "THPeligible:    0\n"                                                 \
    "VmFlags: rd wr mr mw me ac sd\n"

static const char smaps_text[] =
    "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 247134   "
    "/usr/bin/host\n" FIELDS(8, 8, 0, 0)
    "55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0   [heap]\n"
    FIELDS(132, 132, 132, 0)
    /* jemalloc's extents: anonymous, one with pages MADV_FREE'd */
    "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n"
    FIELDS(4096, 4096, 4096, 512)
    "7f0000400000-7f0000800000 rw-p 00000000 00:00 0\n"
    FIELDS(1024, 1024, 1024, 0)
    /* a thread stack: guard page, then the stack right above it */
    "7f1000000000-7f1000001000 ---p 00000000 00:00 0 \n"
    FIELDS(0, 0, 0, 0)
    "7f1000001000-7f1000801000 rw-p 00000000 00:00 0 \n"
    FIELDS(40, 40, 40, 0)
    /* not a stack: a guard that does not touch the next mapping */
    "7f2000000000-7f2000001000 ---p 00000000 00:00 0 \n"
    FIELDS(0, 0, 0, 0)
    "7f2000002000-7f2000003000 rw-p 00000000 00:00 0 \n"
    FIELDS(4, 4, 4, 0)
    /* a library's written data (anonymous pages inside a file mapping),
     * shared memory with a space in its name */
    "7f3000000000-7f3000004000 rw-p 00010000 fe:00 99   "
    "/usr/lib/x86_64-linux-gnu/libfoo.so.1\n" FIELDS(16, 16, 12, 0)
    "7f4000000000-7f4000010000 rw-s 00000000 00:01 1234   "
    "/memfd:my buffer (deleted)\n" FIELDS(64, 32, 0, 0)
    "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0   [stack]\n"
    FIELDS(132, 132, 132, 0)
    "7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0   [vdso]\n"
    FIELDS(4, 0, 0, 0);

START_TEST(test_smaps_kinds)
{
    struct ha_smaps sm;
    char err[256];

    ck_assert_int_eq(ha_smaps_parse(smaps_text, strlen(smaps_text), &sm,
                                    err, sizeof(err)),
                     0);
    ck_assert_uint_eq(sm.n_mappings, 12);
    ck_assert_uint_eq(sm.n_stacks, 2);
    ck_assert_uint_eq(sm.files, (8 + 16 + 64) * 1024);
    ck_assert_uint_eq(sm.heap, 132 * 1024);
    ck_assert_uint_eq(sm.stacks, (40 + 132) * 1024);
    ck_assert_uint_eq(sm.anon, (4096 + 1024 + 4 + 4) * 1024);
    ck_assert_uint_eq(sm.rss, sm.files + sm.heap + sm.stacks + sm.anon);
    ck_assert_uint_eq(sm.lazyfree, 512 * 1024);
    ck_assert_uint_eq(sm.swap, 12 * 1024);
    ck_assert_uint_eq(sm.pss, sm.rss - 36 * 1024);
}
END_TEST

START_TEST(test_smaps_errors)
{
    static const struct {
        const char *text;
        const char *err;
    } cases[] = {
        {"Rss: 4 kB\n", "line 1: expected a mapping before its fields"},
        {"00400000-00401000 r--p 00000000 fe:00 1 /x\nRss: four kB\n",
         "line 2: expected 'Rss: <number> kB'"},
        {"00400000-00401000 r--p 00000000 fe:00 1 /x\nRss: 4 MB\n",
         "line 2: expected 'Rss: <number> kB'"},
        {"00400000-00401000 r--p 00000000 fe:00 1 /x\n\nhello world\n",
         "line 3: expected 'start-end perms offset dev inode [path]' or "
         "'Name: value'"},
        {"00401000-00400000 r--p 00000000 fe:00 1 /x\n",
         "line 1: expected 'start-end perms offset dev inode [path]' or "
         "'Name: value'"},
        {"00400000-00401000 rw 00000000 fe:00 1\n",
         "line 1: expected 'start-end perms offset dev inode [path]' or "
         "'Name: value'"},
        {"00400000-00401000 rw-p 00000000 fe00 1\n",
         "line 1: expected 'start-end perms offset dev inode [path]' or "
         "'Name: value'"},
        {"00400000-00401000 rw-p 0 fe:00 1\nRss: 1999999999999999 kB\n",
         "line 2: expected 'Rss: <number> kB'"},
    };
    struct ha_smaps sm;
    char err[256];

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        int rc = ha_smaps_parse(cases[i].text, strlen(cases[i].text), &sm,
                                err, sizeof(err));

        ck_assert_msg(rc == -1, "case %zu: accepted", i);
        ck_assert_msg(strcmp(err, cases[i].err) == 0,
                      "case %zu: expected '%s', got '%s'", i, cases[i].err,
                      err);
    }
    ck_assert_int_eq(ha_smaps_parse("", 0, &sm, err, sizeof(err)), 0);
    ck_assert_uint_eq(sm.rss, 0);
    ck_assert_int_eq(ha_smaps_read("/nonexistent/smaps", &sm, err,
                                   sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "/nonexistent/smaps: No such file or directory");
}
END_TEST

/* This process's own smaps parses and adds up. */
START_TEST(test_smaps_self)
{
    struct ha_smaps sm;
    char err[256];

    ck_assert_msg(ha_smaps_read("/proc/self/smaps", &sm, err,
                                sizeof(err)) == 0,
                  "%s", err);
    ck_assert_uint_gt(sm.rss, 0);
    ck_assert_uint_gt(sm.files, 0);
    ck_assert_uint_ge(sm.n_stacks, 1);
    ck_assert_uint_eq(sm.rss, sm.files + sm.heap + sm.stacks + sm.anon);
}
END_TEST

/* ------------------------------------------------------------------
 * Breakdown
 * ------------------------------------------------------------------ */

static const struct ha_breakdown_row *
brow(const struct ha_breakdown_row *rows, const char *name)
{
    for (int i = 0; i < HA_BREAKDOWN_ROWS; i++)
        if (strcmp(rows[i].component, name) == 0)
            return &rows[i];
    ck_abort_msg("no breakdown row '%s'", name);
    return NULL;
}

static int64_t
parts_sum(const struct ha_breakdown_row *rows)
{
    int64_t sum = 0;

    for (int i = 0; i < HA_BREAKDOWN_ROWS; i++)
        if (rows[i].kind == HA_BREAKDOWN_PART && rows[i].known)
            sum += rows[i].bytes;
    return sum;
}

#define MIB (1024 * 1024)

static void
sample_in(struct ha_breakdown_in *in)
{
    memset(in, 0, sizeof(*in));
    in->have_jemalloc = true;
    in->allocated = 100 * MIB;
    in->active = 140 * MIB;
    in->tcache = 2 * MIB;
    in->internal = 1 * MIB;
    in->dirty = 20 * MIB;
    in->muzzy = 4 * MIB;
    in->resident = in->active + in->dirty + 3 * MIB;
    in->metadata = 5 * MIB;
    in->retained = 900 * MIB;
    in->mapped = 200 * MIB;
    in->dirty_decay_ms = 10000;
    in->narenas = 8;
    in->have_bins = true;
    in->slab_free = 30 * MIB;
    in->worst_size = 4096;
    in->worst_free = 25 * MIB;
    in->worst_slabs = 7000;
    in->worst_util = 0.12;
    in->have_smaps = true;
    in->smaps.detailed = true;
    in->smaps.files = 10 * MIB;
    in->smaps.stacks = 1 * MIB;
    in->smaps.heap = 0;
    in->smaps.lazyfree = 1 * MIB;
    in->smaps.n_mappings = 100;
}

START_TEST(test_breakdown_parts_add_up)
{
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    struct ha_breakdown_in in;

    sample_in(&in);
    /* jemalloc's resident 163 MiB + 1 MiB of muzzy still resident, and
     * 6 MiB of anonymous memory that is someone else's. */
    in.smaps.anon = 170 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.stacks + in.smaps.anon;
    ha_breakdown_compute(&in, rows);

    ck_assert_int_eq(brow(rows, "rss")->bytes, 181 * MIB);
    ck_assert_int_eq(parts_sum(rows), 181 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.allocated")->bytes, 97 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.tcache")->bytes, 2 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.internal")->bytes, 1 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.fragmentation")->bytes, 40 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.fragmentation.slabs")->bytes,
                     30 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.fragmentation.large")->bytes,
                     10 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.dirty")->bytes, 20 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.muzzy")->bytes, 1 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.metadata")->bytes, 3 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.untouched")->bytes, 0);
    ck_assert_int_eq(brow(rows, "jemalloc")->bytes, 164 * MIB);
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 6 * MIB);
    ck_assert_int_eq(brow(rows, "other")->bytes, 17 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc.retained")->kind,
                     HA_BREAKDOWN_INFO);
    ck_assert_ptr_nonnull(strstr(brow(rows, "jemalloc.fragmentation.slabs")
                                     ->detail,
                                 "most in the 4096-byte class: 25.0 MiB "
                                 "free in 7000 slabs, 12% used"));
    ck_assert_ptr_nonnull(strstr(brow(rows, "jemalloc.dirty")->detail,
                                 "dirty_decay_ms = 10000 ms"));
}
END_TEST

/* jemalloc counts more than the kernel backs (pages handed out and never
 * written): the difference is a negative part, and the sum still holds. */
START_TEST(test_breakdown_untouched)
{
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    struct ha_breakdown_in in;

    sample_in(&in);
    in.smaps.anon = 150 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.stacks + in.smaps.anon;
    ha_breakdown_compute(&in, rows);
    ck_assert_int_eq(brow(rows, "jemalloc.untouched")->bytes, -14 * MIB);
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 0);
    ck_assert_int_eq(brow(rows, "jemalloc")->bytes, 150 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);
}
END_TEST

/* Inside a host, heapadmin's own arena is a part of its own: its pages
 * leave other.anonymous for the heapadmin row, jemalloc's rows (the
 * host's) do not change, and the parts still add up. */
START_TEST(test_breakdown_heapadmin_part)
{
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS], before[HA_BREAKDOWN_ROWS];
    struct ha_breakdown_in in;

    sample_in(&in);
    in.smaps.anon = 174 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.stacks + in.smaps.anon;
    ha_breakdown_compute(&in, before);
    in.have_own = true;
    in.own_resident = 4 * MIB;
    ha_breakdown_compute(&in, rows);
    ck_assert_int_eq(brow(rows, "heapadmin")->kind, HA_BREAKDOWN_PART);
    ck_assert(brow(rows, "heapadmin")->known);
    ck_assert_int_eq(brow(rows, "heapadmin")->bytes, 4 * MIB);
    ck_assert_ptr_nonnull(strstr(brow(rows, "heapadmin")->detail,
                                 "heapadmin.resident"));
    ck_assert_int_eq(parts_sum(rows), 185 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);
    /* Without the row the 4 MiB were the host's other.anonymous. */
    ck_assert_int_eq(brow(before, "other.anonymous")->bytes, 10 * MIB);
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 6 * MIB);
    ck_assert_int_eq(brow(rows, "other")->bytes, 17 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc")->bytes, 164 * MIB);
    ck_assert_int_eq(brow(rows, "jemalloc")->bytes,
                     brow(before, "jemalloc")->bytes);
    ck_assert_int_eq(brow(rows, "jemalloc.untouched")->bytes, 0);
    /* The row sits between jemalloc's parts and the rest, in no
     * subtotal. */
    ck_assert_str_eq(rows[13].component, "jemalloc.untouched");
    ck_assert_str_eq(rows[14].component, "heapadmin");
    ck_assert_str_eq(rows[15].component, "other");

    /* Fewer anonymous pages than jemalloc and heapadmin count: the
     * difference is untouched, and the sum still holds. */
    in.smaps.anon = 150 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.stacks + in.smaps.anon;
    ha_breakdown_compute(&in, rows);
    ck_assert_int_eq(brow(rows, "jemalloc.untouched")->bytes, -18 * MIB);
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 0);
    ck_assert_int_eq(brow(rows, "heapadmin")->bytes, 4 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);

    /* From the kernel's counters too. */
    in.smaps.detailed = false;
    in.smaps.stacks = 0;
    in.smaps.anon = 180 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.anon;
    ha_breakdown_compute(&in, rows);
    ck_assert_int_eq(brow(rows, "heapadmin")->bytes, 4 * MIB);
    /* muzzy counts 0 here: 180 - 163 - 4 */
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 13 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);

    /* Not apart (heapadmind): NULL, saying where the memory is. */
    sample_in(&in);
    in.smaps.anon = 174 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.stacks + in.smaps.anon;
    ha_breakdown_compute(&in, rows);
    ck_assert(!brow(rows, "heapadmin")->known);
    ck_assert_ptr_nonnull(strstr(brow(rows, "heapadmin")->detail,
                                 "inside the jemalloc rows"));
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 10 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);

    /* No jemalloc: unknown, in other.anonymous. */
    in.have_jemalloc = false;
    in.have_own = true;
    in.own_resident = 4 * MIB;
    ha_breakdown_compute(&in, rows);
    ck_assert(!brow(rows, "heapadmin")->known);
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 174 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);
}
END_TEST

START_TEST(test_breakdown_missing_sources)
{
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    struct ha_breakdown_in in;

    /* No smaps: jemalloc's rows only, and muzzy taken as gone. */
    sample_in(&in);
    in.have_smaps = false;
    ha_breakdown_compute(&in, rows);
    ck_assert(!brow(rows, "rss")->known);
    ck_assert(!brow(rows, "other.anonymous")->known);
    ck_assert(!brow(rows, "jemalloc.untouched")->known);
    ck_assert_int_eq(brow(rows, "jemalloc.muzzy")->bytes, 0);
    ck_assert_int_eq(brow(rows, "jemalloc")->bytes, 163 * MIB);

    /* No jemalloc: all anonymous memory is "other". */
    sample_in(&in);
    in.have_jemalloc = false;
    in.smaps.anon = 50 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.stacks + in.smaps.anon;
    ha_breakdown_compute(&in, rows);
    ck_assert(!brow(rows, "jemalloc.allocated")->known);
    ck_assert(!brow(rows, "jemalloc")->known);
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 50 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);

    /* No bins: the slabs' part is folded into the large one. */
    sample_in(&in);
    in.have_bins = false;
    in.smaps.anon = 170 * MIB;
    in.smaps.rss = in.smaps.files + in.smaps.stacks + in.smaps.anon;
    ha_breakdown_compute(&in, rows);
    ck_assert_int_eq(brow(rows, "jemalloc.fragmentation.slabs")->bytes, 0);
    ck_assert_int_eq(brow(rows, "jemalloc.fragmentation.large")->bytes,
                     40 * MIB);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);
}
END_TEST

/* The kernel's counters instead of smaps: no page-table walk, a coarser
 * split that still adds up. */
START_TEST(test_breakdown_from_status)
{
    static const char status[] =
        "Name:\thost\n"
        "VmRSS:\t  186368 kB\n"
        "RssAnon:\t  174080 kB\n"
        "RssFile:\t   10240 kB\n"
        "RssShmem:\t    2048 kB\n"
        "VmSwap:\t       4 kB\n"
        "Threads:\t3\n";
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    struct ha_breakdown_in in;
    char err[256];

    sample_in(&in);
    ck_assert_int_eq(ha_smaps_parse_status(status, strlen(status), &in.smaps,
                                           err, sizeof(err)),
                     0);
    ck_assert(!in.smaps.detailed);
    ck_assert_uint_eq(in.smaps.rss, 186368 * 1024ULL);
    ck_assert_uint_eq(in.smaps.files, 12 * MIB);
    ck_assert_uint_eq(in.smaps.anon, 170 * MIB);
    ck_assert_uint_eq(in.smaps.swap, 4096);
    ha_breakdown_compute(&in, rows);
    ck_assert_int_eq(parts_sum(rows), brow(rows, "rss")->bytes);
    ck_assert(!brow(rows, "pss")->known);
    ck_assert(!brow(rows, "other.stacks")->known);
    ck_assert_int_eq(brow(rows, "jemalloc.muzzy")->bytes, 0);
    /* 170 MiB anonymous, jemalloc's 163 MiB: 7 MiB someone else's. */
    ck_assert_int_eq(brow(rows, "other.anonymous")->bytes, 7 * MIB);
    ck_assert_ptr_nonnull(strstr(brow(rows, "other.anonymous")->detail,
                                 "stacks and [heap] too"));
    ck_assert_int_eq(ha_smaps_parse_status("VmRSS: 1 kB\n", 12, &in.smaps,
                                           err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "no 'RssAnon: <number> kB' line");
    ck_assert_int_eq(ha_smaps_read_status("/proc/self/status", &in.smaps,
                                          err, sizeof(err)),
                     0);
    ck_assert_uint_gt(in.smaps.rss, 0);
}
END_TEST

START_TEST(test_breakdown_format_bytes)
{
    char buf[32];

    ha_breakdown_format_bytes(0, buf, sizeof(buf));
    ck_assert_str_eq(buf, "0 B");
    ha_breakdown_format_bytes(1023, buf, sizeof(buf));
    ck_assert_str_eq(buf, "1023 B");
    ha_breakdown_format_bytes(1536, buf, sizeof(buf));
    ck_assert_str_eq(buf, "1.5 KiB");
    ha_breakdown_format_bytes(-14 * MIB, buf, sizeof(buf));
    ck_assert_str_eq(buf, "-14.0 MiB");
    ha_breakdown_format_bytes(INT64_MAX, buf, sizeof(buf));
    ck_assert_str_eq(buf, "8192.0 PiB");
    ck_assert_str_eq(ha_breakdown_kind_name(HA_BREAKDOWN_SUBTOTAL),
                     "subtotal");
}
END_TEST

/* ------------------------------------------------------------------
 * Dump times recorded beside a dump
 * ------------------------------------------------------------------ */

START_TEST(test_buildids_dumped_at)
{
    static const char good[] =
        "# dumped_at 1714557600.123456789\n"
        "0123abcd /usr/bin/host\n"
        "# another comment\n";
    static const char *const bad[] = {
        "# dumped_at 1714557600\n",            /* no fraction */
        "# dumped_at 1714557600.12345\n",      /* short fraction */
        "# dumped_at x.123456789\n",
        "# dumped_at 1714557600.123456789 x\n",
        "# dumped_at 9999999999999.000000000\n", /* not a time */
    };
    struct ha_buildids b;
    char err[256];

    ck_assert_int_eq(ha_buildids_parse(good, strlen(good), &b, err,
                                       sizeof(err)),
                     0);
    ck_assert_int_eq(b.dumped_at_ns, 1714557600123456789LL);
    ck_assert_uint_eq(b.n_ids, 1);
    ck_assert_str_eq(ha_buildids_find(&b, "/usr/bin/host"), "0123abcd");
    ha_buildids_free(&b);
    for (size_t i = 0; i < HA_ARRAY_SIZE(bad); i++) {
        ck_assert_int_eq(ha_buildids_parse(bad[i], strlen(bad[i]), &b, err,
                                           sizeof(err)),
                         0);
        ck_assert_msg(b.dumped_at_ns == 0, "case %zu: %lld", i,
                      (long long)b.dumped_at_ns);
        ha_buildids_free(&b);
    }
}
END_TEST

/* ------------------------------------------------------------------
 * Dump series: argument forms and selection
 * ------------------------------------------------------------------ */

START_TEST(test_dumpseries_parse_time)
{
    int64_t ns;

    ck_assert_int_eq(ha_dumpseries_parse_time("1970-01-01 00:00:00", &ns), 0);
    ck_assert_int_eq(ns, 0);
    ck_assert_int_eq(ha_dumpseries_parse_time("2024-05-01 10:00:00", &ns), 0);
    ck_assert_int_eq(ns, 1714557600LL * 1000000000);
    ck_assert_int_eq(ha_dumpseries_parse_time("2024-05-01T10:00Z", &ns), 0);
    ck_assert_int_eq(ns, 1714557600LL * 1000000000);
    ck_assert_int_eq(ha_dumpseries_parse_time("2024-02-29 23:59:59", &ns), 0);
    ck_assert_int_eq(ns, 1709251199LL * 1000000000);
    ck_assert_int_eq(ha_dumpseries_parse_time("1714557600", &ns), 0);
    ck_assert_int_eq(ns, 1714557600LL * 1000000000);
    ck_assert_int_eq(ha_dumpseries_parse_time("2024-02-30 00:00", &ns), -1);
    ck_assert_int_eq(ha_dumpseries_parse_time("2024-13-01 00:00", &ns), -1);
    ck_assert_int_eq(ha_dumpseries_parse_time("2024-05-01", &ns), -1);
    ck_assert_int_eq(ha_dumpseries_parse_time("2024-05-01 10:00:00 x", &ns),
                     -1);
    ck_assert_int_eq(ha_dumpseries_parse_time("", &ns), -1);
    ck_assert_int_eq(ha_dumpseries_parse_time(NULL, &ns), -1);
    ck_assert_int_eq(ha_dumpseries_parse_time("9999999999999", &ns), -1);
    ck_assert_int_eq(ha_dumpseries_parse_time("9000000001", &ns), -1);
    ck_assert_int_eq(ha_dumpseries_parse_time("9999-12-31 23:59", &ns), -1);
}
END_TEST

static struct ha_dumpseries_arg
int_arg(long long v)
{
    struct ha_dumpseries_arg a = {true, true, v, ""};

    return a;
}

static struct ha_dumpseries_arg
text_arg(const char *t)
{
    struct ha_dumpseries_arg a = {true, false, 0, t};

    return a;
}

START_TEST(test_dumpseries_spec_forms)
{
    struct ha_dumpseries_arg none = {false, false, 0, NULL};
    struct ha_dumpseries_arg n12 = int_arg(12), t1 = int_arg(1000),
                             t2 = int_arg(500);
    struct ha_dumpseries_arg a = text_arg("p.42.0.m0.heap");
    struct ha_dumpseries_arg b = text_arg("p.42.9.i3.heap");
    struct ha_dumpseries_arg d = text_arg("2024-05-01 10:00:00");
    struct ha_dumpseries_arg kind = text_arg("I");
    struct ha_dumpseries_spec sp;
    char err[1024];

    ck_assert_int_eq(ha_dumpseries_spec(&none, &none, &none, &sp, err,
                                        sizeof(err)),
                     0);
    ck_assert_int_eq(sp.form, HA_DUMPSERIES_ALL);
    ck_assert_ptr_null(sp.kind);
    ck_assert_int_eq(ha_dumpseries_spec(&n12, NULL, &kind, &sp, err,
                                        sizeof(err)),
                     0);
    ck_assert_int_eq(sp.form, HA_DUMPSERIES_LAST);
    ck_assert_int_eq(sp.n, 12);
    ck_assert_str_eq(sp.kind, "interval");
    ck_assert_int_eq(ha_dumpseries_spec(&a, NULL, NULL, &sp, err,
                                        sizeof(err)),
                     0);
    ck_assert_int_eq(sp.form, HA_DUMPSERIES_FROM);
    ck_assert_int_eq(ha_dumpseries_spec(&a, &b, NULL, &sp, err, sizeof(err)),
                     0);
    ck_assert_int_eq(sp.form, HA_DUMPSERIES_NAMES);
    /* Times in either order, numbers or text. */
    ck_assert_int_eq(ha_dumpseries_spec(&t1, &t2, NULL, &sp, err,
                                        sizeof(err)),
                     0);
    ck_assert_int_eq(sp.form, HA_DUMPSERIES_TIMES);
    ck_assert_int_eq(sp.t1_ns, 500LL * 1000000000);
    ck_assert_int_eq(sp.t2_ns, 1000LL * 1000000000);
    ck_assert_int_eq(ha_dumpseries_spec(&d, &t1, NULL, &sp, err,
                                        sizeof(err)),
                     0);
    ck_assert_int_eq(sp.form, HA_DUMPSERIES_TIMES);

    /* Refused, each with the forms that are allowed. */
    ck_assert_int_eq(ha_dumpseries_spec(&none, &a, NULL, &sp, err,
                                        sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "an end without a start"));
    ck_assert_int_eq(ha_dumpseries_spec(&a, &t1, NULL, &sp, err,
                                        sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "two dump names or two times"));
    n12 = int_arg(0);
    ck_assert_int_eq(ha_dumpseries_spec(&n12, NULL, NULL, &sp, err,
                                        sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "must be 1 to 256"));
    kind = text_arg("weekly");
    ck_assert_int_eq(ha_dumpseries_spec(&none, NULL, &kind, &sp, err,
                                        sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "dump_kind 'weekly'"));
    d = text_arg("yesterday");
    ck_assert_int_eq(ha_dumpseries_spec(&d, NULL, NULL, &sp, err,
                                        sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "heap_growth(N)"));
}
END_TEST

/* Two processes' dumps, listed out of order: 42's five (manual and
 * interval) and 7's two, 7's written last. */
static void
series_fixture(struct ha_dumpseries_dump *d, size_t *n)
{
    static const struct {
        const char *name;
        long long t;
    } files[] = {
        {"p.42.3.m1.heap", 300}, {"p.42.0.m0.heap", 0},
        {"p.42.4.i2.heap", 400}, {"p.7.0.m0.heap", 900},
        {"p.42.1.i0.heap", 100}, {"p.42.2.i1.heap", 200},
        {"p.7.1.m1.heap", 1000},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(files); i++) {
        d[i].name = files[i].name;
        ck_assert(ha_dumpname_parse(files[i].name, &d[i].d));
        d[i].t_ns = files[i].t * 1000000000;
    }
    *n = HA_ARRAY_SIZE(files);
}

/* The names of a selection, space-separated. */
static const char *
picked(const struct ha_dumpseries_dump *d, const size_t *idx, size_t n)
{
    static char buf[512];
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
                                 i ? " " : "", d[idx[i]].name);
    return buf;
}

START_TEST(test_dumpseries_select)
{
    struct ha_dumpseries_dump d[8];
    struct ha_dumpseries_spec sp;
    size_t n, idx[8], k;
    char err[512];

    series_fixture(d, &n);
    /* () and (N): the newest process, by seq. */
    memset(&sp, 0, sizeof(sp));
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     0);
    ck_assert_str_eq(picked(d, idx, k), "p.7.0.m0.heap p.7.1.m1.heap");
    sp.kind = "interval";
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     0);
    ck_assert_str_eq(picked(d, idx, k),
                     "p.42.1.i0.heap p.42.2.i1.heap p.42.4.i2.heap");
    sp.kind = NULL;
    /* ('a'): from a dump to its process's newest. */
    sp.form = HA_DUMPSERIES_FROM;
    sp.a = "p.42.2.i1.heap";
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     0);
    ck_assert_str_eq(picked(d, idx, k),
                     "p.42.2.i1.heap p.42.3.m1.heap p.42.4.i2.heap");
    /* ('b', 'a'): either order. */
    sp.form = HA_DUMPSERIES_NAMES;
    sp.a = "p.42.3.m1.heap";
    sp.b = "p.42.1.i0.heap";
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     0);
    ck_assert_str_eq(picked(d, idx, k),
                     "p.42.1.i0.heap p.42.2.i1.heap p.42.3.m1.heap");
    /* (t1, t2): the newest process within the times. */
    sp.form = HA_DUMPSERIES_TIMES;
    sp.t1_ns = 150LL * 1000000000;
    sp.t2_ns = 450LL * 1000000000;
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     0);
    ck_assert_str_eq(picked(d, idx, k),
                     "p.42.2.i1.heap p.42.3.m1.heap p.42.4.i2.heap");
    /* (N) keeps the newest N. */
    sp.form = HA_DUMPSERIES_LAST;
    sp.n = 1;
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     0);
    ck_assert_str_eq(picked(d, idx, k), "p.7.1.m1.heap");

    /* Refused. */
    sp.form = HA_DUMPSERIES_NAMES;
    sp.a = "p.42.0.m0.heap";
    sp.b = "p.7.1.m1.heap";
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "dumps of two processes (42 and 7)"));
    sp.b = "p.42.77.m9.heap";
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "no dump 'p.42.77.m9.heap'"));
    sp.form = HA_DUMPSERIES_TIMES;
    sp.t1_ns = 2000LL * 1000000000;
    sp.t2_ns = 3000LL * 1000000000;
    ck_assert_int_eq(ha_dumpseries_select(d, n, &sp, idx, &k, err,
                                          sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "between those times"));
    ck_assert_int_eq(ha_dumpseries_select(d, 0, &sp, idx, &k, err,
                                          sizeof(err)),
                     -1);
}
END_TEST

/* ------------------------------------------------------------------
 * The leak watch's trigger
 * ------------------------------------------------------------------ */

START_TEST(test_leakwatch_grown)
{
    char why[128];

    ck_assert(ha_leakwatch_grown(64 * MIB, 1000, 100 * MIB, 4600, 300 * MIB,
                                 why, sizeof(why)));
    ck_assert_str_eq(why, "+200.0 MiB over 3600 s");
    /* Not more than the threshold; shrinking; one sample; off. */
    ck_assert(!ha_leakwatch_grown(64 * MIB, 0, 100 * MIB, 60, 164 * MIB, why,
                                  sizeof(why)));
    ck_assert(!ha_leakwatch_grown(64 * MIB, 0, 300 * MIB, 60, 100 * MIB, why,
                                  sizeof(why)));
    ck_assert_str_eq(why, "-200.0 MiB over 60 s");
    ck_assert(!ha_leakwatch_grown(64 * MIB, 60, 0, 60, 300 * MIB, why,
                                  sizeof(why)));
    ck_assert(!ha_leakwatch_grown(0, 0, 0, 60, 300 * MIB, why, sizeof(why)));
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
    tcase_add_test(core, test_growth_alloc_counters);
    tcase_add_test(core, test_smaps_kinds);
    tcase_add_test(core, test_smaps_self);
    tcase_add_test(core, test_breakdown_parts_add_up);
    tcase_add_test(core, test_breakdown_untouched);
    tcase_add_test(core, test_breakdown_heapadmin_part);
    tcase_add_test(core, test_breakdown_missing_sources);
    tcase_add_test(core, test_breakdown_format_bytes);
    tcase_add_test(core, test_breakdown_from_status);
    tcase_add_test(core, test_buildids_dumped_at);
    tcase_add_test(core, test_dumpseries_parse_time);
    tcase_add_test(core, test_dumpseries_spec_forms);
    tcase_add_test(core, test_dumpseries_select);
    tcase_add_test(core, test_leakwatch_grown);
    suite_add_tcase(s, core);

    tcase_add_test(limits, test_growth_one_dump);
    tcase_add_test(limits, test_growth_equal_times);
    tcase_add_test(limits, test_growth_precision_large_values);
    suite_add_tcase(s, limits);

    tcase_add_test(errors, test_growth_misuse);
    tcase_add_test(errors, test_smaps_errors);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(growth_suite)
