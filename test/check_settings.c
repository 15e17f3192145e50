/* SPDX-License-Identifier: MIT
 *
 * The settings engine (heap/settings.h) on its own, without SQLite: a
 * change set staged, refused, committed, rolled back and undone, over
 * the fake mallctl backend (fake_mallctl.h). global_variables' mapping
 * of rows and statements to it is check_vtab's. No live jemalloc is
 * needed, so every case also runs in the sanitizer build.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "fake_mallctl.h"
#include "core/util.h"
#include "heap/heap.h"
#include "heap/settings.h"

/* ------------------------------------------------------------------
 * Fixture
 * ------------------------------------------------------------------ */

static struct ha_heap heap;
static struct ha_settings set;
static char tmpdir[PATH_MAX];
static char err[PATH_MAX + 2048];
static char info[HA_SETTINGS_INFO_MAX];

static void
setup(void)
{
    fake_reset(true);
    memset(&heap, 0, sizeof(heap));
    heap.ops = &fake_ops;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_settings.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    heap.datadir = tmpdir;
    ha_settings_begin(&set, &heap, "check_settings");
    err[0] = info[0] = '\0';
}

static void
teardown(void)
{
    ha_settings_end(&set);
    rmdir(tmpdir);
}

/* The current value of name, "NULL" when it reads NULL. */
static const char *
value_of(const char *name)
{
    static char buf[PATH_MAX];

    if (!ha_settings_get(&heap, name, buf, sizeof(buf)))
        ha_strlcpy(buf, "NULL", sizeof(buf));
    return buf;
}

#define ck_assert_has(text, part)                                     \
    ck_assert_msg(strstr((text), (part)) != NULL,                     \
                  "expected '%s' in '%s'", (part), (text))

/* ------------------------------------------------------------------
 * core
 * ------------------------------------------------------------------ */

START_TEST(test_settings_stage_two_commit_read_back)
{
    ck_assert_str_eq(value_of("jemalloc-prof_active"), "false");
    ck_assert_str_eq(value_of("jemalloc-stats_max_age_ms"), "0");
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-prof_active", "ON",
                                       err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-stats_max_age_ms",
                                       "250", err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_settings_staged(&set), 2);
    /* Staged is not applied. */
    ck_assert_int_eq(fake_get("prof.active")->v.b, false);
    ck_assert_uint_eq(heap.stats_max_age_ms, 0);

    ck_assert_int_eq(ha_settings_commit(&set, info, sizeof(info), err,
                                        sizeof(err)),
                     0);
    ck_assert_int_eq(ha_settings_staged(&set), 0);
    ck_assert_str_eq(value_of("jemalloc-prof_active"), "true");
    ck_assert_str_eq(value_of("jemalloc-stats_max_age_ms"), "250");
    ck_assert_int_eq(fake_get("prof.active")->v.b, true);
    ck_assert_uint_eq(heap.stats_max_age_ms, 250);
    ck_assert_has(info, "jemalloc-stats_max_age_ms set to 250");
}
END_TEST

START_TEST(test_settings_rollback_changes_nothing)
{
    int mark;

    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-prof_gdump", "true",
                                       err, sizeof(err)),
                     0);
    mark = ha_settings_staged(&set);
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-dirty_decay_ms",
                                       "5000", err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-alloc_wrappers",
                                       "+my_alloc", err, sizeof(err)),
                     0);
    /* A savepoint's worth dropped: the first change stays staged. */
    ha_settings_rollback_to(&set, mark);
    ck_assert_int_eq(ha_settings_staged(&set), 1);
    ha_settings_rollback(&set);
    ck_assert_int_eq(ha_settings_staged(&set), 0);

    fake_clear_counts();
    ck_assert_int_eq(ha_settings_commit(&set, info, sizeof(info), err,
                                        sizeof(err)),
                     0);
    ck_assert_str_eq(info, "");
    ck_assert_uint_eq(fake_get("prof.gdump")->n_writes, 0);
    ck_assert_uint_eq(fake_get("arenas.dirty_decay_ms")->n_writes, 0);
    ck_assert_str_eq(value_of("jemalloc-prof_gdump"), "false");
    ck_assert_str_eq(value_of("jemalloc-dirty_decay_ms"), "10000");
    ck_assert_str_eq(value_of("jemalloc-alloc_wrappers"), "");
}
END_TEST

START_TEST(test_settings_catalogue)
{
    struct ha_settings_var v;
    int n = ha_settings_count(), i;

    ck_assert_int_gt(n, 50);
    ck_assert_int_eq(ha_settings_describe(n, &v), -1);
    ck_assert_int_eq(ha_settings_describe(-1, &v), -1);
    ck_assert_int_eq(ha_settings_find("jemalloc-nonesuch"), -1);

    i = ha_settings_find("jemalloc-dump_now");
    ck_assert_int_ge(i, 0);
    ck_assert_int_eq(ha_settings_describe(i, &v), 0);
    ck_assert_str_eq(v.name, "jemalloc-dump_now");
    ck_assert_str_eq(v.mallctl, "prof.dump");
    ck_assert_ptr_nonnull(v.doc);
    ck_assert_uint_eq(v.flags, HA_SETTINGS_WRITABLE | HA_SETTINGS_ACTION |
                                   HA_SETTINGS_PROF);

    i = ha_settings_find("jemalloc-dirty_decay_ms");
    ck_assert_int_eq(ha_settings_describe(i, &v), 0);
    ck_assert_uint_eq(v.flags, HA_SETTINGS_WRITABLE | HA_SETTINGS_SAVED);
    ck_assert(ha_settings_persistable("jemalloc-dirty_decay_ms"));
    ck_assert(!ha_settings_persistable("jemalloc-arena_dirty_decay_ms"));
    ck_assert(!ha_settings_persistable("jemalloc-nonesuch"));

    i = ha_settings_find("jemalloc-version");
    ck_assert_int_eq(ha_settings_describe(i, &v), 0);
    ck_assert_uint_eq(v.flags, 0);
    ck_assert_ptr_nonnull(v.hint);
    ck_assert_str_eq(value_of("jemalloc-version"), "5.3.0-fake");
}
END_TEST

/* Counts the rows ha_settings_each gives, and keeps admin-version's. */
struct each_count {
    int rows;
    int nulls;
    char version[64];
};

static int
count_row(void *arg, const char *name, const char *value)
{
    struct each_count *c = arg;

    c->rows++;
    if (value == NULL)
        c->nulls++;
    else if (strcmp(name, "admin-version") == 0)
        ha_strlcpy(c->version, value, sizeof(c->version));
    return 0;
}

static bool
admin_value(const void *arg, const char *name, char *buf, size_t len)
{
    (void)arg;
    if (strcmp(name, "admin-max_connections") != 0)
        return false;
    ha_strlcpy(buf, "7", len);
    return true;
}

START_TEST(test_settings_each_and_hooks)
{
    struct each_count c = {0};

    ck_assert_int_eq(ha_settings_each(&heap, count_row, &c), 0);
    ck_assert_int_eq(c.rows, ha_settings_count());
    ck_assert_str_eq(c.version, PACKAGE_VERSION);
    /* The rows heap does not own read NULL without their hooks. */
    ck_assert_int_gt(c.nulls, 0);
    ck_assert_str_eq(value_of("admin-max_connections"), "NULL");
    ck_assert_str_eq(value_of("jemalloc-leak_watch_state"), "NULL");
    heap.admin_value = admin_value;
    ck_assert_str_eq(value_of("admin-max_connections"), "7");
}
END_TEST

/* ------------------------------------------------------------------
 * errors
 * ------------------------------------------------------------------ */

START_TEST(test_settings_bad_values_name_what_is_allowed)
{
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-lg_prof_sample",
                                       "abc", err, sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc-lg_prof_sample = 'abc': invalid value");
    ck_assert_has(err, "allowed: an integer from 0 to 62");

    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-prof_active",
                                       "maybe", err, sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc-prof_active = 'maybe'");
    ck_assert_has(err, "allowed:");

    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-dirty_decay_ms",
                                       "-2", err, sizeof(err)),
                     -1);
    ck_assert_has(err, "31536000000");

    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-version", "6",
                                       err, sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc-version is read-only (refused value '6')");
    ck_assert_has(err, "writable variables: jemalloc-prof_active");

    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-nonesuch", "1", err,
                                       sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc-nonesuch: no such variable");

    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-prof_active", NULL,
                                       err, sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc-prof_active = 'NULL'");

    /* The floor the config sets. */
    heap.lg_prof_sample_min = 12;
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-lg_prof_sample",
                                       "10", err, sizeof(err)),
                     -1);
    ck_assert_has(err, "below the floor jemalloc-lg_prof_sample_min = 12");
    ck_assert_has(err, "Allowed: 12..62");

    /* Nothing refused was staged. */
    ck_assert_int_eq(ha_settings_staged(&set), 0);
}
END_TEST

START_TEST(test_settings_commit_failure_puts_back)
{
    /* Valid when staged, failing inside jemalloc. */
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-prof_active", "true",
                                       err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-stats_max_age_ms",
                                       "99", err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-prof_gdump", "true",
                                       err, sizeof(err)),
                     0);
    fake_get("prof.gdump")->fail_errno = EAGAIN;
    ck_assert_int_eq(ha_settings_commit(&set, info, sizeof(info), err,
                                        sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc-prof_gdump = 'true': jemalloc ran out of "
                       "memory");
    ck_assert_has(err, "put back: jemalloc-stats_max_age_ms, "
                       "jemalloc-prof_active");
    ck_assert_str_eq(info, "");
    ck_assert_int_eq(fake_get("prof.active")->v.b, false);
    ck_assert_uint_eq(heap.stats_max_age_ms, 0);
    ck_assert_int_eq(ha_settings_staged(&set), 0);

    /* A single failing change: nothing else to undo. */
    ck_assert_int_eq(ha_settings_stage(&set, "jemalloc-prof_gdump", "true",
                                       err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_settings_commit(&set, info, sizeof(info), err,
                                        sizeof(err)),
                     -1);
    ck_assert_has(err, "nothing was changed");
}
END_TEST

static Suite *
settings_suite(void)
{
    Suite *s = suite_create("settings");
    TCase *core = tcase_create("core");
    TCase *errors = tcase_create("errors");

    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, test_settings_stage_two_commit_read_back);
    tcase_add_test(core, test_settings_rollback_changes_nothing);
    tcase_add_test(core, test_settings_catalogue);
    tcase_add_test(core, test_settings_each_and_hooks);
    suite_add_tcase(s, core);

    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, test_settings_bad_values_name_what_is_allowed);
    tcase_add_test(errors, test_settings_commit_failure_puts_back);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(settings_suite)
