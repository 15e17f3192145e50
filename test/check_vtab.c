/* SPDX-License-Identifier: MIT
 *
 * Virtual-table mechanics on SQLite :memory: with the fake mallctl
 * backend (fake_mallctl.h): rows, epoch per scan, xBestIndex on the name,
 * global_variables UPDATE validation, all-or-nothing staging, actions and
 * the OK-packet info message. No live jemalloc is needed, so every case
 * also runs in the sanitizer build.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check_main.h"
#include "fake_mallctl.h"
#include "engine/config.h"
#include "core/util.h"
#include "heap/settings.h"
#include "vtab/cursor.h"
#include "vtab/vtab.h"

/* ------------------------------------------------------------------
 * Fixture
 * ------------------------------------------------------------------ */

static sqlite3 *db;
static struct ha_vtab_conn *vconn; /* db's handle */
static struct ha_config cfg;
static struct ha_heap heap;
static struct ha_vtab_ctx ctx = {.heap = &heap};
static char tmpdir[PATH_MAX];
static char errbuf[4096];   /* sqlite3_errmsg of the last exec() */
static char valbuf[4096];   /* last query1() value */

static void
open_db(void)
{
    char *zerr = NULL;

    memset(&cfg, 0, sizeof(cfg));
    cfg.admin_credentials = "admin:secret;radmin:other";
    cfg.stats_credentials = "stats:stats";
    cfg.mysql_ifaces = "127.0.0.1:6032";
    cfg.max_connections = 7;
    cfg.max_allowed_packet = 1048576;
    ctx.heap->ops = &fake_ops;
    ctx.heap->admin_value = ha_config_admin_value;
    ctx.heap->admin_arg = &cfg;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_vtab.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ctx.heap->datadir = tmpdir;
    ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
    ck_assert_int_eq(ha_vtab_register_all(db, &ctx, &vconn, &zerr),
                     SQLITE_OK);
    ck_assert_ptr_null(zerr);
}

static void
setup_prof(void)
{
    fake_reset(true);
    open_db();
}

static void
setup_noprof(void)
{
    fake_reset(false);
    open_db();
}

static void
rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[PATH_MAX + 256];

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (unlink(path) != 0)
            rm_tree(path);
    }
    closedir(d);
    chmod(dir, 0700);
    rmdir(dir);
}

static void
teardown(void)
{
    ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
    db = NULL;
    ha_vtab_release(vconn);
    vconn = NULL;
    rm_tree(tmpdir);
}

/* ------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------ */

/* Runs sql; returns the SQLite code, message in errbuf. */
static int
exec(const char *sql)
{
    char *zerr = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &zerr);

    snprintf(errbuf, sizeof(errbuf), "%s", zerr != NULL ? zerr : "");
    sqlite3_free(zerr);
    return rc;
}

/* First column of the first row of sql into valbuf; NULL for no row or a
 * NULL value. */
static const char *
query1(const char *sql)
{
    sqlite3_stmt *st;
    const char *ret = NULL;
    int rc;

    rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    ck_assert_msg(rc == SQLITE_OK, "prepare %s: %s", sql, sqlite3_errmsg(db));
    rc = sqlite3_step(st);
    ck_assert_msg(rc == SQLITE_ROW || rc == SQLITE_DONE, "step %s: %s", sql,
                  sqlite3_errmsg(db));
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        snprintf(valbuf, sizeof(valbuf), "%s",
                 (const char *)sqlite3_column_text(st, 0));
        ret = valbuf;
    }
    sqlite3_finalize(st);
    return ret;
}

static int
count_rows(const char *sql)
{
    sqlite3_stmt *st;
    int n = 0;

    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        n++;
    sqlite3_finalize(st);
    return n;
}

/* global_variables value of name (NULL for SQL NULL). */
static const char *
gv(const char *name)
{
    char sql[256];

    snprintf(sql, sizeof(sql),
             "SELECT variable_value FROM global_variables "
             "WHERE variable_name = '%s'",
             name);
    return query1(sql);
}

static int
gv_set(const char *name, const char *value)
{
    char sql[512];

    snprintf(sql, sizeof(sql),
             "UPDATE global_variables SET variable_value = '%s' "
             "WHERE variable_name = '%s'",
             value, name);
    return exec(sql);
}

#define ck_assert_err_has(needle)                                        \
    ck_assert_msg(strstr(errbuf, (needle)) != NULL,                      \
                  "error message lacks \"%s\": \"%s\"", (needle), errbuf)

static void
take_info(char *buf, size_t len)
{
    ha_vtab_take_info(vconn, buf, len);
}

/* ------------------------------------------------------------------
 * stats_memory_jemalloc / stats_memory_metrics
 * ------------------------------------------------------------------ */

static const struct {
    const char *name;
    const char *value; /* NULL: any fresh age, 0..999 ms */
} stats_expected[] = {
    {"allocated", "1000"},
    {"active", "2000"},
    {"metadata", "3000"},
    {"metadata_thp", "0"},
    {"resident", "5000"},
    {"mapped", "6000"},
    {"retained", "7000"},
    {"zero_reallocs", "8"},
    {"background_thread.num_threads", "0"},
    {"background_thread.num_runs", "9"},
    {"background_thread.run_interval", "10"},
    {"narenas", "4"},
    {"prof.lg_sample", "19"},
    {"prof.interval", "0"},
    {"stats_age_ms", NULL}, /* ms since this scan's refresh: small */
    /* heapadmin.*: absent here (no arena of heapadmin's own). */
};

START_TEST(test_vtab_stats_every_row)
{
    sqlite3_stmt *st;
    size_t i = 0;

    ck_assert_int_eq(
        sqlite3_prepare_v2(db,
                           "SELECT variable_name, variable_value, "
                           "typeof(variable_value) FROM stats_memory_jemalloc",
                           -1, &st, NULL),
        SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        ck_assert_uint_lt(i, HA_ARRAY_SIZE(stats_expected));
        ck_assert_str_eq((const char *)sqlite3_column_text(st, 0),
                         stats_expected[i].name);
        if (stats_expected[i].value != NULL)
            ck_assert_str_eq((const char *)sqlite3_column_text(st, 1),
                             stats_expected[i].value);
        else /* this scan refreshed just now: well under a second old */
            ck_assert_int_lt(sqlite3_column_int64(st, 1), 1000);
        ck_assert_int_ge(sqlite3_column_int64(st, 1), 0);
        ck_assert_str_eq((const char *)sqlite3_column_text(st, 2), "integer");
        i++;
    }
    sqlite3_finalize(st);
    ck_assert_uint_eq(i, HA_ARRAY_SIZE(stats_expected));
}
END_TEST

START_TEST(test_vtab_stats_epoch_once_per_scan)
{
    fake_clear_counts();
    ck_assert_int_eq(count_rows("SELECT * FROM stats_memory_jemalloc"), 15);
    ck_assert_uint_eq(fake_get("epoch")->n_writes, 1);
    ck_assert_int_eq(count_rows("SELECT * FROM stats_memory_jemalloc"), 15);
    ck_assert_uint_eq(fake_get("epoch")->n_writes, 2);
    ck_assert_int_eq(count_rows("SELECT * FROM stats_memory_metrics"), 7);
    ck_assert_uint_eq(fake_get("epoch")->n_writes, 3);
    /* Values are live: a change shows on the next scan. */
    fake_get("stats.resident")->v.z = 123456;
    ck_assert_str_eq(query1("SELECT variable_value FROM stats_memory_jemalloc"
                            " WHERE variable_name = 'resident'"),
                     "123456");
}
END_TEST

START_TEST(test_vtab_stats_where_name_reads_one_row)
{
    fake_clear_counts();
    ck_assert_str_eq(query1("SELECT variable_value FROM stats_memory_jemalloc"
                            " WHERE variable_name = 'resident'"),
                     "5000");
    ck_assert_uint_eq(fake_get("epoch")->n_calls, 1);
    ck_assert_uint_eq(fake_get("stats.resident")->n_calls, 1);
    ck_assert_uint_eq(fake.n_calls, 2);

    /* An unknown name: no row, only the epoch. */
    fake_clear_counts();
    ck_assert_ptr_null(query1("SELECT variable_value FROM "
                              "stats_memory_jemalloc WHERE variable_name = "
                              "'nope'"));
    ck_assert_uint_eq(fake.n_calls, 1);

    /* Only the name column: no value read, but for the epoch and one
     * probe of whether heapadmin's own share is apart (it is not here:
     * its six rows are absent). */
    fake_clear_counts();
    ck_assert_int_eq(count_rows("SELECT variable_name FROM "
                                "stats_memory_jemalloc"),
                     15);
    ck_assert_uint_eq(fake.n_calls, 2);

    /* ProxySQL table, same plan. */
    fake_clear_counts();
    ck_assert_str_eq(query1("SELECT Variable_Value FROM stats_memory_metrics"
                            " WHERE Variable_Name = 'jemalloc_mapped'"),
                     "6000");
    ck_assert_uint_eq(fake.n_calls, 2);
}
END_TEST

START_TEST(test_vtab_stats_failing_mallctl_is_null)
{
    fake_get("stats.mapped")->fail_errno = ENOENT;
    fake_remove("stats.zero_reallocs");
    ck_assert_ptr_null(query1("SELECT variable_value FROM "
                              "stats_memory_jemalloc WHERE variable_name = "
                              "'mapped'"));
    ck_assert_ptr_null(query1("SELECT variable_value FROM "
                              "stats_memory_jemalloc WHERE variable_name = "
                              "'zero_reallocs'"));
    ck_assert_str_eq(query1("SELECT variable_value FROM stats_memory_jemalloc"
                            " WHERE variable_name = 'active'"),
                     "2000");
    ck_assert_int_eq(count_rows("SELECT * FROM stats_memory_jemalloc"), 15);
    /* Epoch itself failing (no stats) is not an error either. */
    fake_get("epoch")->fail_errno = EFAULT;
    ck_assert_int_eq(count_rows("SELECT * FROM stats_memory_jemalloc"), 15);
}
END_TEST

START_TEST(test_vtab_stats_prof_rows_null_without_profiling)
{
    ck_assert_ptr_null(query1("SELECT variable_value FROM "
                              "stats_memory_jemalloc WHERE variable_name = "
                              "'prof.lg_sample'"));
    ck_assert_ptr_null(query1("SELECT variable_value FROM "
                              "stats_memory_jemalloc WHERE variable_name = "
                              "'prof.interval'"));
    ck_assert_str_eq(query1("SELECT variable_value FROM stats_memory_jemalloc"
                            " WHERE variable_name = 'allocated'"),
                     "1000");
}
END_TEST

START_TEST(test_vtab_metrics_proxysql_rows)
{
    static const char *const names[] = {
        "SQLite3_memory_bytes", "jemalloc_resident", "jemalloc_active",
        "jemalloc_allocated",   "jemalloc_mapped",   "jemalloc_metadata",
        "jemalloc_retained",
    };
    static const char *const values[] = {
        NULL, "5000", "2000", "1000", "6000", "3000", "7000",
    };
    sqlite3_stmt *st;
    size_t i = 0;

    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT Variable_Name, Variable_Value"
                                        " FROM stats_memory_metrics",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        ck_assert_uint_lt(i, HA_ARRAY_SIZE(names));
        ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), names[i]);
        ck_assert_int_eq(sqlite3_column_type(st, 1), SQLITE_TEXT);
        if (values[i] != NULL)
            ck_assert_str_eq((const char *)sqlite3_column_text(st, 1),
                             values[i]);
        else
            ck_assert_int_gt(atoll((const char *)sqlite3_column_text(st, 1)),
                             0);
        i++;
    }
    sqlite3_finalize(st);
    ck_assert_uint_eq(i, HA_ARRAY_SIZE(names));
}
END_TEST

START_TEST(test_vtab_stats_read_only)
{
    ck_assert_int_ne(exec("UPDATE stats_memory_jemalloc SET variable_value=1"),
                     SQLITE_OK);
    ck_assert_int_ne(exec("DELETE FROM stats_memory_metrics"), SQLITE_OK);
    ck_assert_int_ne(exec("INSERT INTO stats_memory_jemalloc VALUES('x',1)"),
                     SQLITE_OK);
}
END_TEST

/* ------------------------------------------------------------------
 * global_variables: rows and reads
 * ------------------------------------------------------------------ */

static const char *const gv_names[] = {
    "admin-admin_credentials",
    "admin-stats_credentials",
    "admin-mysql_ifaces",
    "admin-version",
    "admin-max_connections",
    "admin-max_pending_logins",
    "admin-max_pending_logins_per_host",
    "admin-connect_timeout",
    "admin-wait_timeout",
    "admin-net_write_timeout",
    "admin-max_allowed_packet",
    "admin-max_output_buffer",
    "admin-max_execution_time",
    "admin-disk_timeout_ms",
    "admin-stats_system_memory",
    "admin-sql_memory_limit",
    "admin-max_output_total",
    "admin-unix_socket_mode",
    "admin-have_ssl",
    "admin-require_tls",
    "admin-default_authentication_plugin",
    "admin-profile_credentials",
    "admin-service_names",
    "admin-push_targets",
    "admin-push_outbox_max_bytes",
    "admin-push_timeout_s",
    "admin-push_retry_max_s",
    "admin-push_live_interval_s",
    "jemalloc-prof_active",
    "jemalloc-lg_prof_sample",
    "jemalloc-prof_gdump",
    "jemalloc-prof_thread_active_init",
    "jemalloc-background_thread",
    "jemalloc-dirty_decay_ms",
    "jemalloc-muzzy_decay_ms",
    "jemalloc-arena_dirty_decay_ms",
    "jemalloc-arena_muzzy_decay_ms",
    "jemalloc-lg_prof_sample_min",
    "jemalloc-stats_max_age_ms",
    "jemalloc-dump_symbolized",
    "jemalloc-dump_retention_count",
    "jemalloc-dump_retention_bytes",
    "jemalloc-dump_min_free_bytes",
    "jemalloc-dump_interval_s",
    "jemalloc-dump_resident_bytes",
    "jemalloc-leak_watch_growth_bytes",
    "jemalloc-leak_watch_window_s",
    "jemalloc-leak_watch_dump_interval_s",
    "jemalloc-leak_watch_dumps",
    "jemalloc-leak_watch_lg_prof_sample",
    "jemalloc-leak_watch_sites",
    "jemalloc-leak_watch_state",
    "jemalloc-limit_dump_fractions",
    "jemalloc-limit_dump_psi_pct",
    "jemalloc-limit_dump_events",
    "jemalloc-limit_dump_min_interval_s",
    "jemalloc-limit_watch_sampling",
    "jemalloc-limit_watch_lg_prof_sample",
    "jemalloc-limit_watch_state",
    "jemalloc-log_max_bytes",
    "jemalloc-log_state",
    "jemalloc-recent_alloc_max",
    "jemalloc-alloc_wrappers",
    "jemalloc-dump_now",
    "jemalloc-log_now",
    "jemalloc-reset_now",
    "jemalloc-purge_now",
    "jemalloc-purge_arena_now",
    "jemalloc-prof",
    "jemalloc-lg_prof_interval",
    "jemalloc-prof_prefix",
    "jemalloc-version",
    "jemalloc-prof_accum",
    "jemalloc-prof_final",
    "jemalloc-prof_leak",
    "jemalloc-prof_leak_error",
    "jemalloc-prof_stats",
    "jemalloc-prof_sys_thread_name",
    "jemalloc-prof_time_resolution",
    "jemalloc-opt_prof_active",
    "jemalloc-opt_lg_prof_sample",
    "jemalloc-opt_prof_gdump",
    "jemalloc-opt_prof_thread_active_init",
    "jemalloc-opt_prof_recent_alloc_max",
};

START_TEST(test_vtab_globals_every_row)
{
    sqlite3_stmt *st;
    size_t i = 0;

    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT variable_name FROM "
                                        "global_variables",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        ck_assert_uint_lt(i, HA_ARRAY_SIZE(gv_names));
        ck_assert_str_eq((const char *)sqlite3_column_text(st, 0),
                         gv_names[i]);
        i++;
    }
    sqlite3_finalize(st);
    ck_assert_uint_eq(i, HA_ARRAY_SIZE(gv_names));
}
END_TEST

START_TEST(test_vtab_globals_values)
{
    ck_assert_str_eq(gv("admin-admin_credentials"), "admin:****;radmin:****");
    ck_assert_str_eq(gv("admin-stats_credentials"), "stats:****");
    ck_assert_str_eq(gv("admin-mysql_ifaces"), "127.0.0.1:6032");
    ck_assert_ptr_nonnull(gv("admin-version"));
    ck_assert_str_eq(gv("admin-max_connections"), "7");
    ck_assert_str_eq(gv("admin-max_allowed_packet"), "1048576");
    ck_assert_str_eq(gv("jemalloc-prof_active"), "false");
    ck_assert_str_eq(gv("jemalloc-lg_prof_sample"), "19");
    ck_assert_str_eq(gv("jemalloc-prof_thread_active_init"), "true");
    ck_assert_str_eq(gv("jemalloc-dump_now"), "false");
    ck_assert_str_eq(gv("jemalloc-reset_now"), "false");
    ck_assert_str_eq(gv("jemalloc-purge_now"), "false");
    ck_assert_str_eq(gv("jemalloc-prof"), "true");
    ck_assert_str_eq(gv("jemalloc-lg_prof_interval"), "-1");
    ck_assert_str_eq(gv("jemalloc-prof_prefix"), "jeprof");
    ck_assert_str_eq(gv("jemalloc-version"), "5.3.0-fake");
    ck_assert_str_eq(gv("jemalloc-prof_time_resolution"), "default");
    ck_assert_str_eq(gv("jemalloc-opt_lg_prof_sample"), "19");
    ck_assert_str_eq(gv("jemalloc-opt_prof_thread_active_init"), "true");

    /* Live: a change inside jemalloc shows at once. */
    fake_get("prof.active")->v.b = true;
    ck_assert_str_eq(gv("jemalloc-prof_active"), "true");
    /* The prefix set through prof.prefix (write-only) is remembered. */
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, "/d/proxysql"), 0);
    ck_assert_str_eq(gv("jemalloc-prof_prefix"), "/d/proxysql");
    /* A missing mallctl reads NULL. */
    fake_remove("opt.prof_stats");
    ck_assert_ptr_null(gv("jemalloc-prof_stats"));
}
END_TEST

START_TEST(test_vtab_globals_where_name_reads_one_row)
{
    fake_clear_counts();
    ck_assert_str_eq(gv("jemalloc-background_thread"), "false");
    ck_assert_uint_eq(fake.n_calls, 1);
    ck_assert_uint_eq(fake_get("background_thread")->n_reads, 1);
}
END_TEST

START_TEST(test_vtab_globals_without_profiling)
{
    ck_assert_str_eq(gv("jemalloc-prof"), "false");
    ck_assert_ptr_null(gv("jemalloc-lg_prof_sample"));
    ck_assert_str_eq(gv("jemalloc-prof_active"), "false");
    /* jemalloc without --enable-prof: opt.prof does not exist. */
    fake_remove("opt.prof");
    ck_assert_str_eq(gv("jemalloc-prof"), "false");
}
END_TEST

/* ------------------------------------------------------------------
 * global_variables: UPDATE that works
 * ------------------------------------------------------------------ */

START_TEST(test_vtab_globals_bool_parsing_and_readback)
{
    static const struct {
        const char *in;
        bool want;
    } cases[] = {
        {"true", true},  {"false", false}, {"TRUE", true},  {"False", false},
        {"1", true},     {"0", false},     {"on", true},    {"OFF", false},
        {"On", true},    {"oFf", false},   {" true ", true}, {"0", false},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        ck_assert_msg(gv_set("jemalloc-prof_active", cases[i].in) ==
                          SQLITE_OK,
                      "case %zu '%s': %s", i, cases[i].in, errbuf);
        ck_assert_msg(fake_get("prof.active")->v.b == cases[i].want,
                      "case %zu '%s': prof.active %d", i, cases[i].in,
                      fake_get("prof.active")->v.b);
        ck_assert_str_eq(gv("jemalloc-prof_active"),
                         cases[i].want ? "true" : "false");
    }
    ck_assert_int_eq(gv_set("jemalloc-prof_gdump", "on"), SQLITE_OK);
    ck_assert_str_eq(gv("jemalloc-prof_gdump"), "true");
    ck_assert_int_eq(gv_set("jemalloc-prof_thread_active_init", "0"),
                     SQLITE_OK);
    ck_assert_int_eq(fake_get("prof.thread_active_init")->v.b, false);
    ck_assert_int_eq(gv_set("jemalloc-background_thread", "TRUE"), SQLITE_OK);
    ck_assert_int_eq(fake_get("background_thread")->v.b, true);
    /* An integer (not text) value works through column affinity too. */
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_value = 0 "
                          "WHERE variable_name = 'jemalloc-prof_active'"),
                     SQLITE_OK);
    ck_assert_int_eq(fake_get("prof.active")->v.b, false);
}
END_TEST

START_TEST(test_vtab_globals_lg_prof_sample_info)
{
    char info[HA_VTAB_INFO_MAX];

    ck_assert_int_eq(gv_set("jemalloc-lg_prof_sample", "20"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("prof.reset")->n_writes, 1);
    ck_assert_uint_eq(fake_get("prof.lg_sample")->v.z, 20);
    ck_assert_str_eq(gv("jemalloc-lg_prof_sample"), "20");
    ck_assert_uint_gt(ha_vtab_take_info(vconn, info, sizeof(info)), 0);
    ck_assert_msg(strstr(info, "jemalloc-lg_prof_sample set to 20") != NULL,
                  "%s", info);
    ck_assert_msg(strstr(info, "1 MiB") != NULL, "%s", info);
    ck_assert_msg(strstr(info, "discarded") != NULL, "%s", info);
    /* Taken: the slot is empty now. */
    ck_assert_uint_eq(ha_vtab_take_info(vconn, info, sizeof(info)), 0);
    ck_assert_str_eq(info, "");

    /* Same rate again: no reset, samples kept, and the message says so. */
    ck_assert_int_eq(gv_set("jemalloc-lg_prof_sample", " 20 "), SQLITE_OK);
    ck_assert_uint_eq(fake_get("prof.reset")->n_writes, 1);
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, "already 20") != NULL, "%s", info);

    /* Bounds are allowed. */
    ck_assert_int_eq(gv_set("jemalloc-lg_prof_sample", "0"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-lg_prof_sample", "62"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("prof.lg_sample")->v.z, 62);
}
END_TEST

START_TEST(test_vtab_globals_actions)
{
    char info[HA_VTAB_INFO_MAX];

    /* 'false' on an action is a no-op that succeeds. */
    fake_clear_counts();
    ck_assert_int_eq(gv_set("jemalloc-reset_now", "false"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-purge_now", "0"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "off"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("prof.reset")->n_calls, 0);
    ck_assert_uint_eq(fake_get("arena.4096.purge")->n_calls, 0);
    ck_assert_uint_eq(fake_get("prof.dump")->n_calls, 0);

    ck_assert_int_eq(gv_set("jemalloc-reset_now", "true"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("prof.reset")->n_writes, 1);
    ck_assert_uint_eq(fake_get("prof.lg_sample")->v.z, 19);
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, "discarded") != NULL, "%s", info);
    ck_assert_msg(strstr(info, "stays 19") != NULL, "%s", info);

    ck_assert_int_eq(gv_set("jemalloc-purge_now", "ON"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("arena.4096.purge")->n_writes, 1);
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, "arena.4096.purge") != NULL, "%s", info);
    /* Actions read back 'false' afterwards. */
    ck_assert_str_eq(gv("jemalloc-purge_now"), "false");
}
END_TEST

/* Decay reaches every arena in use, not only the ones to come. */
START_TEST(test_vtab_globals_decay)
{
    char info[HA_VTAB_INFO_MAX];

    ck_assert_str_eq(gv("jemalloc-dirty_decay_ms"), "10000");
    ck_assert_int_eq(gv_set("jemalloc-dirty_decay_ms", "500"), SQLITE_OK);
    ck_assert_int_eq(fake_get("arenas.dirty_decay_ms")->v.s, 500);
    ck_assert_int_eq(fake_get("arena.0.dirty_decay_ms")->v.s, 500);
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, "set to 500 (was 10000)") != NULL, "%s",
                  info);
    ck_assert_int_eq(gv_set("jemalloc-muzzy_decay_ms", "-1"), SQLITE_OK);
    ck_assert_int_eq(fake_get("arena.0.muzzy_decay_ms")->v.s, -1);
    ck_assert_str_eq(gv("jemalloc-muzzy_decay_ms"), "-1");

    /* One arena of its own: it then reads as an exception. */
    ck_assert_str_eq(gv("jemalloc-arena_dirty_decay_ms"), "");
    ck_assert_int_eq(gv_set("jemalloc-arena_dirty_decay_ms", " 0 : 0 "),
                     SQLITE_OK);
    ck_assert_int_eq(fake_get("arena.0.dirty_decay_ms")->v.s, 0);
    ck_assert_int_eq(fake_get("arenas.dirty_decay_ms")->v.s, 500);
    ck_assert_str_eq(gv("jemalloc-arena_dirty_decay_ms"), "0:0");
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, "arena 0 500 -> 0") != NULL, "%s", info);

    /* Saved by SAVE: the arenas.* rows; arena numbers are per run. */
    ck_assert(ha_settings_persistable("jemalloc-dirty_decay_ms"));
    ck_assert(ha_settings_persistable("jemalloc-muzzy_decay_ms"));
    ck_assert(!ha_settings_persistable("jemalloc-arena_dirty_decay_ms"));
    ck_assert(!ha_settings_persistable("jemalloc-purge_arena_now"));
    ck_assert(!ha_settings_persistable("jemalloc-leak_watch_state"));
}
END_TEST

START_TEST(test_vtab_globals_decay_refused)
{
    ck_assert_int_eq(gv_set("jemalloc-dirty_decay_ms", "-2"), SQLITE_ERROR);
    ck_assert_err_has("jemalloc-dirty_decay_ms = '-2': invalid value; "
                      "allowed: -1 (never return freed pages)");
    ck_assert_int_eq(gv_set("jemalloc-dirty_decay_ms", "31536000001"),
                     SQLITE_ERROR);
    ck_assert_int_eq(gv_set("jemalloc-arena_dirty_decay_ms", "1:5"),
                     SQLITE_ERROR);
    ck_assert_err_has("arena 1 is not in use");
    ck_assert_int_eq(gv_set("jemalloc-arena_dirty_decay_ms", "4:5"),
                     SQLITE_ERROR);
    ck_assert_err_has("'4' is not an arena: allowed 0 to 3");
    ck_assert_int_eq(gv_set("jemalloc-arena_dirty_decay_ms", "0:5,0:6"),
                     SQLITE_ERROR);
    ck_assert_err_has("arena 0 is listed twice");
    ck_assert_int_eq(gv_set("jemalloc-arena_dirty_decay_ms", "0=5"),
                     SQLITE_ERROR);
    ck_assert_err_has("'0=5' is not '<arena>:<value>'");
    ck_assert_int_eq(gv_set("jemalloc-arena_dirty_decay_ms", "0:5,"),
                     SQLITE_ERROR);
    ck_assert_err_has("a ',' ends the list");
    ck_assert_int_eq(fake_get("arena.0.dirty_decay_ms")->v.s, 10000);
    ck_assert_int_eq(fake_get("arenas.dirty_decay_ms")->v.s, 10000);
    ck_assert_int_eq(gv_set("jemalloc-leak_watch_state", "x"),
                     SQLITE_ERROR);
    ck_assert_err_has("jemalloc-leak_watch_state is read-only");
}
END_TEST

/* A decay applied before a row that fails inside jemalloc is put back,
 * in every arena. */
START_TEST(test_vtab_globals_decay_put_back)
{
    fake_get("arena.4096.purge")->fail_errno = EAGAIN;
    ck_assert_int_eq(
        exec("UPDATE global_variables SET variable_value = CASE "
             "variable_name WHEN 'jemalloc-dirty_decay_ms' THEN '5' ELSE "
             "'true' END WHERE variable_name IN ('jemalloc-dirty_decay_ms', "
             "'jemalloc-purge_now')"),
        SQLITE_ERROR);
    ck_assert_err_has("put back: jemalloc-dirty_decay_ms");
    ck_assert_int_eq(fake_get("arenas.dirty_decay_ms")->v.s, 10000);
    ck_assert_int_eq(fake_get("arena.0.dirty_decay_ms")->v.s, 10000);

    /* A per-arena list puts back its arenas and leaves the default. */
    ck_assert_int_eq(
        exec("UPDATE global_variables SET variable_value = CASE "
             "variable_name WHEN 'jemalloc-arena_dirty_decay_ms' THEN '0:7' "
             "ELSE 'true' END WHERE variable_name IN "
             "('jemalloc-arena_dirty_decay_ms', 'jemalloc-purge_now')"),
        SQLITE_ERROR);
    ck_assert_err_has("put back: jemalloc-arena_dirty_decay_ms");
    ck_assert_int_eq(fake_get("arena.0.dirty_decay_ms")->v.s, 10000);
    ck_assert_int_eq(fake_get("arenas.dirty_decay_ms")->v.s, 10000);
}
END_TEST

/* The churn rows: bounds refused with what is allowed; the recent list's
 * size reaches jemalloc and is put back by a failing statement;
 * log_max_bytes is the heap's. */
START_TEST(test_vtab_globals_churn_rows)
{
    ck_assert_int_eq(gv_set("jemalloc-log_now", "601"), SQLITE_ERROR);
    ck_assert_err_has("jemalloc-log_now = '601': invalid value; allowed: "
                      "seconds from 1 to 600");
    ck_assert_int_eq(gv_set("jemalloc-log_now", "true"), SQLITE_ERROR);
    ck_assert_int_eq(gv_set("jemalloc-log_max_bytes", "1024"),
                     SQLITE_ERROR);
    ck_assert_err_has("allowed: bytes from 1048576 (1 MiB)");
    ck_assert_int_eq(gv_set("jemalloc-recent_alloc_max", "-1"),
                     SQLITE_ERROR);
    ck_assert_err_has("jemalloc's -1, no bound, is refused");
    ck_assert_int_eq(gv_set("jemalloc-recent_alloc_max", "100001"),
                     SQLITE_ERROR);
    ck_assert_int_eq(gv_set("jemalloc-recent_alloc_max", "1000"),
                     SQLITE_OK);
    ck_assert_int_eq(fake_get("experimental.prof_recent.alloc_max")->v.s,
                     1000);
    ck_assert_int_eq(gv_set("jemalloc-log_max_bytes", "8388608"),
                     SQLITE_OK);
    ck_assert_int_eq(ctx.heap->log_max_bytes, 8388608);
    ck_assert_int_eq(gv_set("jemalloc-log_state", "open"), SQLITE_ERROR);
    ck_assert_err_has("jemalloc-log_state is read-only");
    /* All or nothing: a refused row puts back the recent list's size. */
    ck_assert_int_eq(
        exec("UPDATE global_variables SET variable_value = CASE "
             "variable_name WHEN 'jemalloc-recent_alloc_max' THEN '50' "
             "ELSE 'x' END WHERE variable_name IN "
             "('jemalloc-recent_alloc_max', 'jemalloc-prof_active')"),
        SQLITE_ERROR);
    ck_assert_int_eq(fake_get("experimental.prof_recent.alloc_max")->v.s,
                     1000);
}
END_TEST

START_TEST(test_vtab_globals_purge_arena)
{
    char info[HA_VTAB_INFO_MAX];

    fake_clear_counts();
    ck_assert_int_eq(gv_set("jemalloc-purge_arena_now", "false"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("arena.0.purge")->n_calls, 0);
    ck_assert_int_eq(gv_set("jemalloc-purge_arena_now", "0"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("arena.0.purge")->n_writes, 1);
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, "arena 0") != NULL &&
                      strstr(info, "arena.0.purge") != NULL,
                  "%s", info);
    ck_assert_int_eq(gv_set("jemalloc-purge_arena_now", "all"), SQLITE_OK);
    ck_assert_uint_eq(fake_get("arena.4096.purge")->n_writes, 1);
    ck_assert_int_eq(gv_set("jemalloc-purge_arena_now", "1"), SQLITE_ERROR);
    ck_assert_err_has("jemalloc-purge_arena_now = '1': arena 1 is not in "
                      "use");
    ck_assert_int_eq(gv_set("jemalloc-purge_arena_now", "most"),
                     SQLITE_ERROR);
    ck_assert_err_has("allowed: an arena index");
    ck_assert_str_eq(gv("jemalloc-purge_arena_now"), "false");
}
END_TEST

START_TEST(test_vtab_globals_dump_now_names_the_file)
{
    char prefix[PATH_MAX + 16], want[PATH_MAX + 64], info[HA_VTAB_INFO_MAX];
    struct stat sb;

    snprintf(prefix, sizeof(prefix), "%s/proxysql", tmpdir);
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, prefix), 0);
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "true"), SQLITE_OK);
    snprintf(want, sizeof(want), "%s.%ld.0.m0.heap", prefix, (long)getpid());
    ck_assert_int_eq(stat(want, &sb), 0);
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, "heap profile written to ") != NULL, "%s",
                  info);
    ck_assert_msg(strstr(info, want) != NULL, "want %s in: %s", want, info);
    ck_assert_msg(strstr(info, "jeprof --text") != NULL, "%s", info);

    /* jemalloc's own counters: the next manual dump is .1.m1. */
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "1"), SQLITE_OK);
    snprintf(want, sizeof(want), "%s.%ld.1.m1.heap", prefix, (long)getpid());
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, want) != NULL, "want %s in: %s", want, info);
}
END_TEST

START_TEST(test_vtab_globals_dump_now_without_hook)
{
    /* jemalloc 5.2 has no experimental.hooks.prof_dump: the file is found
     * by listing the directory. */
    char prefix[PATH_MAX + 16], want[PATH_MAX + 64], info[HA_VTAB_INFO_MAX];

    fake_remove("experimental.hooks.prof_dump");
    snprintf(prefix, sizeof(prefix), "%s/proxysql", tmpdir);
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, prefix), 0);
    fake.seq = 7;
    fake.mseq = 2;
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "true"), SQLITE_OK);
    snprintf(want, sizeof(want), "%s.%ld.7.m2.heap", prefix, (long)getpid());
    take_info(info, sizeof(info));
    ck_assert_msg(strstr(info, want) != NULL, "want %s in: %s", want, info);
}
END_TEST

START_TEST(test_vtab_globals_transaction)
{
    /* Inside BEGIN ... COMMIT the change lands at COMMIT. */
    ck_assert_int_eq(exec("BEGIN"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-prof_active", "true"), SQLITE_OK);
    ck_assert_int_eq(fake_get("prof.active")->v.b, false);
    ck_assert_int_eq(exec("COMMIT"), SQLITE_OK);
    ck_assert_int_eq(fake_get("prof.active")->v.b, true);

    /* ROLLBACK drops it. */
    ck_assert_int_eq(exec("BEGIN"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-prof_active", "false"), SQLITE_OK);
    ck_assert_int_eq(exec("ROLLBACK"), SQLITE_OK);
    ck_assert_int_eq(fake_get("prof.active")->v.b, true);

    /* A failed statement drops only its own rows. */
    ck_assert_int_eq(exec("BEGIN"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-prof_gdump", "true"), SQLITE_OK);
    ck_assert_int_ne(exec("UPDATE global_variables SET variable_value = "
                          "CASE variable_name WHEN 'jemalloc-prof_active' "
                          "THEN 'false' ELSE 'bogus' END WHERE variable_name "
                          "IN ('jemalloc-prof_active', "
                          "'jemalloc-background_thread')"),
                     SQLITE_OK);
    ck_assert_int_eq(exec("COMMIT"), SQLITE_OK);
    ck_assert_int_eq(fake_get("prof.gdump")->v.b, true);
    ck_assert_int_eq(fake_get("prof.active")->v.b, true);
    ck_assert_uint_eq(fake_get("background_thread")->n_writes, 0);

    /* ROLLBACK TO a savepoint taken before the change drops it. */
    ck_assert_int_eq(exec("SAVEPOINT a"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-prof_gdump", "false"), SQLITE_OK);
    ck_assert_int_eq(exec("ROLLBACK TO a"), SQLITE_OK);
    ck_assert_int_eq(exec("RELEASE a"), SQLITE_OK);
    ck_assert_int_eq(fake_get("prof.gdump")->v.b, true);
}
END_TEST

/* ------------------------------------------------------------------
 * global_variables: UPDATE that is refused
 * ------------------------------------------------------------------ */

/* Number of writes the fake has seen, to prove nothing changed. */
static unsigned
n_writes(void)
{
    unsigned n = 0;

    for (int i = 0; i < fake.n_ctls; i++)
        if (strcmp(fake.ctls[i].name, "epoch") != 0)
            n += fake.ctls[i].n_writes;
    return n;
}

START_TEST(test_vtab_globals_invalid_values)
{
    static const struct {
        const char *name;
        const char *value;
        const char *needle;
    } cases[] = {
        {"jemalloc-prof_active", "maybe",
         "jemalloc-prof_active = 'maybe': invalid value; allowed: "
         "true/false, 1/0 or on/off (any case)"},
        {"jemalloc-prof_active", "", "jemalloc-prof_active = ''"},
        {"jemalloc-prof_active", "2", "allowed: true/false"},
        {"jemalloc-background_thread", "yes",
         "jemalloc-background_thread = 'yes': invalid value"},
        {"jemalloc-lg_prof_sample", "63",
         "jemalloc-lg_prof_sample = '63': invalid value; allowed: an integer "
         "from 0 to 62"},
        {"jemalloc-lg_prof_sample", "-1", "from 0 to 62"},
        {"jemalloc-lg_prof_sample", "abc",
         "jemalloc-lg_prof_sample = 'abc'"},
        {"jemalloc-lg_prof_sample", "19x", "from 0 to 62"},
        {"jemalloc-lg_prof_sample", "0x10", "from 0 to 62"},
        {"jemalloc-lg_prof_sample", "", "from 0 to 62"},
        {"jemalloc-dump_now", "please",
         "jemalloc-dump_now = 'please': invalid value; allowed: 'true' to "
         "run it now, 'false' to do nothing"},
        {"jemalloc-purge_now", "x", "jemalloc-purge_now = 'x'"},
    };

    fake_clear_counts();
    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        ck_assert_msg(gv_set(cases[i].name, cases[i].value) == SQLITE_ERROR,
                      "case %zu accepted", i);
        ck_assert_msg(strstr(errbuf, cases[i].needle) != NULL,
                      "case %zu: \"%s\" lacks \"%s\"", i, errbuf,
                      cases[i].needle);
    }
    ck_assert_uint_eq(n_writes(), 0);
    ck_assert_str_eq(gv("jemalloc-prof_active"), "false");
    ck_assert_str_eq(gv("jemalloc-lg_prof_sample"), "19");

    /* NULL is a value too, and refused. */
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_value = NULL "
                          "WHERE variable_name = 'jemalloc-prof_active'"),
                     SQLITE_ERROR);
    ck_assert_err_has("jemalloc-prof_active = 'NULL': invalid value");
}
END_TEST

START_TEST(test_vtab_globals_read_only_rows)
{
    static const char *const ro[] = {
        "admin-admin_credentials", "admin-stats_credentials",
        "admin-mysql_ifaces",      "admin-version",
        "admin-max_connections",   "admin-max_output_buffer",
        "admin-unix_socket_mode",  "admin-require_tls",
        "jemalloc-prof",           "jemalloc-lg_prof_interval",
        "jemalloc-prof_prefix",    "jemalloc-version",
        "jemalloc-prof_final",     "jemalloc-opt_lg_prof_sample",
    };
    char needle[256];

    fake_clear_counts();
    for (size_t i = 0; i < HA_ARRAY_SIZE(ro); i++) {
        ck_assert_int_eq(gv_set(ro[i], "1"), SQLITE_ERROR);
        snprintf(needle, sizeof(needle), "%s is read-only (refused value '1')",
                 ro[i]);
        ck_assert_err_has(needle);
        ck_assert_err_has("writable variables: jemalloc-prof_active, "
                          "jemalloc-lg_prof_sample");
    }
    ck_assert_int_eq(gv_set("admin-admin_credentials", "x:y"), SQLITE_ERROR);
    ck_assert_err_has("config file (admin_variables)");
    ck_assert_int_eq(gv_set("jemalloc-prof_final", "true"), SQLITE_ERROR);
    ck_assert_err_has("only when the process starts");
    ck_assert_int_eq(gv_set("jemalloc-prof", "false"), SQLITE_ERROR);
    ck_assert_err_has("MALLOC_CONF=prof:true");
    ck_assert_uint_eq(n_writes(), 0);
}
END_TEST

START_TEST(test_vtab_globals_multi_row_all_or_nothing)
{
    /* The invalid row comes last in scan order: the valid one before it
     * must not have been applied. */
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_value = "
                          "CASE variable_name "
                          "WHEN 'jemalloc-prof_active' THEN 'true' "
                          "WHEN 'jemalloc-background_thread' THEN 'true' "
                          "WHEN 'jemalloc-prof_gdump' THEN 'bogus' END "
                          "WHERE variable_name IN ('jemalloc-prof_active', "
                          "'jemalloc-prof_gdump', "
                          "'jemalloc-background_thread')"),
                     SQLITE_ERROR);
    ck_assert_err_has("jemalloc-prof_gdump = 'bogus'");
    ck_assert_uint_eq(n_writes(), 0);
    ck_assert_str_eq(gv("jemalloc-prof_active"), "false");
    ck_assert_str_eq(gv("jemalloc-background_thread"), "false");

    /* A read-only row in the set refuses the whole statement too. */
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_value = 'true'"
                          " WHERE variable_name IN ('jemalloc-prof_active', "
                          "'jemalloc-dump_now', 'jemalloc-prof_leak')"),
                     SQLITE_ERROR);
    ck_assert_err_has("jemalloc-prof_leak is read-only");
    ck_assert_uint_eq(n_writes(), 0);
    ck_assert_uint_eq(fake_get("prof.dump")->n_calls, 0);

    /* The whole table at once. */
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_value = "
                          "'true'"),
                     SQLITE_ERROR);
    ck_assert_uint_eq(n_writes(), 0);

    /* And when all rows are valid, all apply, in row order. */
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_value = 'on'"
                          " WHERE variable_name IN ('jemalloc-prof_active', "
                          "'jemalloc-prof_gdump')"),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_changes(db), 2);
    ck_assert_int_eq(fake_get("prof.active")->v.b, true);
    ck_assert_int_eq(fake_get("prof.gdump")->v.b, true);
}
END_TEST

START_TEST(test_vtab_globals_apply_failure_puts_back)
{
    char info[HA_VTAB_INFO_MAX];

    /* Valid at validation time, failing inside jemalloc. */
    fake_get("prof.gdump")->fail_errno = EAGAIN;
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_value = 'true'"
                          " WHERE variable_name IN ('jemalloc-prof_active', "
                          "'jemalloc-prof_gdump')"),
                     SQLITE_ERROR);
    ck_assert_err_has("jemalloc-prof_gdump = 'true': jemalloc ran out of "
                      "memory");
    ck_assert_err_has("put back: jemalloc-prof_active");
    ck_assert_int_eq(fake_get("prof.active")->v.b, false);
    ck_assert_uint_eq(ha_vtab_take_info(vconn, info, sizeof(info)), 0);

    /* A single failing row: nothing else to undo. */
    ck_assert_int_eq(gv_set("jemalloc-prof_gdump", "true"), SQLITE_ERROR);
    ck_assert_err_has("nothing was changed");
}
END_TEST

START_TEST(test_vtab_globals_insert_delete_rename_refused)
{
    ck_assert_int_eq(exec("INSERT INTO global_variables VALUES "
                          "('jemalloc-foo', '1')"),
                     SQLITE_ERROR);
    ck_assert_err_has("INSERT into global_variables is not allowed "
                      "('jemalloc-foo')");
    ck_assert_err_has("UPDATE global_variables SET variable_value");
    ck_assert_int_eq(exec("REPLACE INTO global_variables VALUES "
                          "('jemalloc-prof_active', 'true')"),
                     SQLITE_ERROR);
    ck_assert_err_has("INSERT into global_variables is not allowed");
    ck_assert_int_eq(exec("DELETE FROM global_variables WHERE variable_name "
                          "= 'jemalloc-prof_active'"),
                     SQLITE_ERROR);
    ck_assert_err_has("DELETE from global_variables is not allowed "
                      "(jemalloc-prof_active)");
    ck_assert_int_eq(exec("UPDATE global_variables SET variable_name = "
                          "'jemalloc-x' WHERE variable_name = "
                          "'jemalloc-prof_active'"),
                     SQLITE_ERROR);
    ck_assert_err_has("variable_name cannot be changed "
                      "('jemalloc-prof_active' to 'jemalloc-x')");
    ck_assert_int_eq(count_rows("SELECT * FROM global_variables"),
                     (int)HA_ARRAY_SIZE(gv_names));
    /* An UPDATE of a name that does not exist matches no row: OK, no
     * change. */
    ck_assert_int_eq(gv_set("jemalloc-no_such_thing", "true"), SQLITE_OK);
    ck_assert_int_eq(sqlite3_changes(db), 0);
    ck_assert_uint_eq(n_writes(), 0);
}
END_TEST

START_TEST(test_vtab_globals_profiling_off)
{
    static const char *const prof_rows[] = {
        "jemalloc-prof_active",     "jemalloc-prof_gdump",
        "jemalloc-lg_prof_sample",  "jemalloc-prof_thread_active_init",
        "jemalloc-dump_now",        "jemalloc-reset_now",
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(prof_rows); i++) {
        const char *v = strcmp(prof_rows[i], "jemalloc-lg_prof_sample") == 0
                            ? "20"
                            : "true";
        char needle[256];

        ck_assert_int_eq(gv_set(prof_rows[i], v), SQLITE_ERROR);
        snprintf(needle, sizeof(needle), "%s = '%s': heap profiling is not "
                 "available in this process (opt.prof=false): start "
                 "the process with prof:true in MALLOC_CONF, e.g. "
                 "MALLOC_CONF=prof:true,prof_active:false,"
                 "prof_time_resolution:high (for an agent, in the "
                 "service's environment)",
                 prof_rows[i], v);
        ck_assert_err_has(needle);
    }
    /* Writing 'false' is refused as well: every write needs profiling. */
    ck_assert_int_eq(gv_set("jemalloc-prof_active", "false"), SQLITE_ERROR);
    ck_assert_err_has("opt.prof=false");
    /* Non-profiling rows keep working. */
    ck_assert_int_eq(gv_set("jemalloc-background_thread", "true"), SQLITE_OK);
    ck_assert_int_eq(gv_set("jemalloc-purge_now", "true"), SQLITE_OK);

    /* A jemalloc built without profiling says so. */
    fake_get("config.prof")->v.b = false;
    ck_assert_int_eq(gv_set("jemalloc-prof_active", "true"), SQLITE_ERROR);
    ck_assert_err_has("built without --enable-prof");
}
END_TEST

START_TEST(test_vtab_globals_dump_now_failures)
{
    char prefix[PATH_MAX + 32], file[PATH_MAX + 64];
    struct stat sb;

    /* Directory missing: refused before prof.dump is called. */
    snprintf(prefix, sizeof(prefix), "%s/missing/proxysql", tmpdir);
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, prefix), 0);
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "true"), SQLITE_ERROR);
    ck_assert_err_has("jemalloc-dump_now: cannot write the heap profile '");
    snprintf(file, sizeof(file), "directory '%s/missing' does not exist",
             tmpdir);
    ck_assert_err_has(file);
    ck_assert_uint_eq(fake_get("prof.dump")->n_calls, 0);

    /* Not a directory. */
    snprintf(file, sizeof(file), "%s/plain", tmpdir);
    fclose(fopen(file, "w"));
    snprintf(prefix, sizeof(prefix), "%s/plain/proxysql", tmpdir);
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, prefix), 0);
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "true"), SQLITE_ERROR);
    ck_assert_err_has("is not a directory");

    /* jemalloc fails mid-write (disk full): the error names the file and
     * the partial file is gone. */
    snprintf(prefix, sizeof(prefix), "%s/proxysql", tmpdir);
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, prefix), 0);
    fake_get("prof.dump")->fail_errno = EFAULT;
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "true"), SQLITE_ERROR);
    snprintf(file, sizeof(file), "%s.%ld.0.m0.heap", prefix, (long)getpid());
    ck_assert_err_has(file);
    ck_assert_err_has("jemalloc could not write the heap profile");
    ck_assert_err_has("the partial file was removed");
    ck_assert_int_ne(stat(file, &sb), 0);

    /* jemalloc could not even create it: nothing to remove, no claim. */
    fake.dump_partial = false;
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "true"), SQLITE_ERROR);
    ck_assert_msg(strstr(errbuf, "partial") == NULL, "%s", errbuf);

    /* An empty prefix cannot name a file. */
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, ""), 0);
    ck_assert_int_eq(gv_set("jemalloc-dump_now", "true"), SQLITE_ERROR);
    ck_assert_err_has("prof_prefix is empty");
}
END_TEST

START_TEST(test_vtab_take_info_unknown_db)
{
    char buf[16] = "junk";

    /* No handle (tables not registered): nothing, and buf emptied. */
    ck_assert_uint_eq(ha_vtab_take_info(NULL, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "");
    ha_vtab_release(NULL);
}
END_TEST

/* Two connections' handles are separate: a message left on one is not
 * taken from the other (there is no process-wide list to search). */
START_TEST(test_vtab_take_info_per_connection)
{
    struct ha_heap heap2 = {.ops = &fake_ops};
    struct ha_vtab_ctx ctx2 = {.heap = &heap2};
    struct ha_vtab_conn *other_conn = NULL;
    sqlite3 *other;
    char *zerr = NULL;
    char info[HA_VTAB_INFO_MAX];

    ck_assert_int_eq(sqlite3_open(":memory:", &other), SQLITE_OK);
    ck_assert_int_eq(ha_vtab_register_all(other, &ctx2, &other_conn, &zerr),
                     SQLITE_OK);
    ck_assert_ptr_nonnull(other_conn);
    ck_assert_ptr_ne(other_conn, vconn);
    /* reset_now leaves an info message and writes no file. */
    ck_assert_int_eq(gv_set("jemalloc-reset_now", "true"), SQLITE_OK);
    ck_assert_uint_eq(ha_vtab_take_info(other_conn, info, sizeof(info)), 0);
    ck_assert_uint_gt(ha_vtab_take_info(vconn, info, sizeof(info)), 0);
    /* The handle outlives the connection until released, and back. */
    sqlite3_close(other);
    ck_assert_uint_eq(ha_vtab_take_info(other_conn, info, sizeof(info)), 0);
    ha_vtab_release(other_conn);
}
END_TEST

START_TEST(test_vtab_directonly_and_innocuous)
{
    /* global_variables may not be used from a view or trigger ... */
    ck_assert_int_eq(exec("CREATE VIEW v AS SELECT * FROM global_variables"),
                     SQLITE_OK);
    ck_assert_int_ne(exec("SELECT * FROM v"), SQLITE_OK);
    /* ... the stats tables may. */
    ck_assert_int_eq(exec("CREATE VIEW s AS SELECT * FROM "
                          "stats_memory_jemalloc"),
                     SQLITE_OK);
    ck_assert_int_eq(exec("SELECT * FROM s"), SQLITE_OK);
}
END_TEST

/* ------------------------------------------------------------------
 * stats_jemalloc_bins / _lextents / _arenas: the arena column's plans
 * ------------------------------------------------------------------ */

/* One size class of 48-byte regions, 256 per 12 KiB slab; arena 0 in
 * use (nthreads reads), arenas 1-3 not (their names are missing: the
 * ENOENT jemalloc gives). */
static void
fake_bins(void)
{
    fake_add_size("arenas.page", FAKE_RO, 4096);
    fake_add("arenas.nbins", FAKE_UNSIGNED, FAKE_RO)->v.n = 1;
    fake_add("arenas.nlextents", FAKE_UNSIGNED, FAKE_RO)->v.n = 1;
    fake_add_size("arenas.bin.0.size", FAKE_RO, 48);
    fake_add("arenas.bin.0.nregs", FAKE_UNSIGNED, FAKE_RO)->v.n = 256;
    fake_add_size("arenas.bin.0.slab_size", FAKE_RO, 12288);
    fake_add_size("arenas.lextent.0.size", FAKE_RO, 16384);
    fake_add("stats.arenas.0.nthreads", FAKE_UNSIGNED, FAKE_RO)->v.n = 3;
    fake_add("stats.arenas.4096.nthreads", FAKE_UNSIGNED, FAKE_RO)->v.n = 3;
    fake_add_size("stats.arenas.4096.bins.0.curregs", FAKE_RO, 64);
    fake_add_size("stats.arenas.4096.bins.0.curslabs", FAKE_RO, 2);
    fake_add_size("stats.arenas.0.bins.0.curregs", FAKE_RO, 64);
    fake_add_size("stats.arenas.0.bins.0.curslabs", FAKE_RO, 2);
    fake_add_size("stats.arenas.4096.lextents.0.curlextents", FAKE_RO, 5);
    fake_add_size("stats.arenas.4096.pdirty", FAKE_RO, 7);
}

START_TEST(test_vtab_bins_arena_plans)
{
    fake_bins();
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_bins"), 2);
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_bins WHERE "
                                "arena IS NULL"),
                     1);
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_bins WHERE "
                                "arena = 0"),
                     1);
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_bins WHERE "
                                "arena = 1"),
                     0);
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_bins WHERE "
                                "arena = 'x'"),
                     0);
    /* 64 of 512 regions in use; 24 KiB of slabs hold 3 KiB. */
    ck_assert_str_eq(query1("SELECT utilization FROM stats_jemalloc_bins "
                            "WHERE arena IS NULL"),
                     "0.125");
    ck_assert_str_eq(query1("SELECT free_bytes FROM stats_jemalloc_bins "
                            "WHERE arena IS NULL"),
                     "21504");
    ck_assert_str_eq(query1("SELECT allocated_bytes FROM "
                            "stats_jemalloc_lextents WHERE arena IS NULL"),
                     "81920");
    /* A figure the backend lacks is NULL, not 0. */
    ck_assert_ptr_null(query1("SELECT nmalloc FROM stats_jemalloc_bins "
                              "WHERE arena IS NULL"));
    /* One epoch per scan. */
    fake_clear_counts();
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_bins"), 2);
    ck_assert_uint_eq(fake_get("epoch")->n_writes, 1);
    /* The arenas table: merged first, then arena 0; bytes from pages. */
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_arenas"), 2);
    ck_assert_str_eq(query1("SELECT dirty_bytes FROM stats_jemalloc_arenas "
                            "WHERE arena IS NULL"),
                     "28672");
    ck_assert_str_eq(query1("SELECT dirty_decay_ms FROM "
                            "stats_jemalloc_arenas WHERE arena IS NULL"),
                     "10000");
    ck_assert_str_eq(query1("SELECT threads FROM stats_jemalloc_arenas "
                            "WHERE arena = 0"),
                     "3");
}
END_TEST

/* Without jemalloc's statistics: no rows, no error. */
START_TEST(test_vtab_bins_without_stats)
{
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_bins"), 0);
    ck_assert_int_eq(count_rows("SELECT * FROM stats_jemalloc_lextents"), 0);
    ck_assert_int_eq(exec("SELECT * FROM stats_memory_breakdown"), SQLITE_OK);
    /* rss comes from this process's smaps even so; jemalloc's parts are
     * NULL (the fake has no stats.arenas.4096.pdirty). */
    ck_assert_ptr_nonnull(query1("SELECT bytes FROM stats_memory_breakdown "
                                 "WHERE component = 'rss'"));
    ck_assert_ptr_null(query1("SELECT bytes FROM stats_memory_breakdown "
                              "WHERE component = 'jemalloc.dirty'"));
    ck_assert_ptr_null(query1("SELECT bytes FROM stats_memory_breakdown "
                              "WHERE component = 'heapadmin'"));
    /* ... and says why */
    ck_assert_str_eq(query1("SELECT detail LIKE '%unknown without "
                            "jemalloc''s figures%' FROM "
                            "stats_memory_breakdown WHERE component = "
                            "'heapadmin'"),
                     "1");
    ck_assert_str_eq(query1("SELECT count(*) FROM stats_memory_breakdown"),
                     "25");
}
END_TEST

/* ------------------------------------------------------------------
 * The row-array cursor (vtab/cursor.h)
 * ------------------------------------------------------------------ */

struct odd_cursor {
    struct ha_cursor rc;
    const int *rows;
};

/* Rows holding an odd number are not shown. */
static bool
odd_skip(const struct ha_cursor *rc)
{
    return ((const struct odd_cursor *)rc)->rows[rc->row] % 2 != 0;
}

START_TEST(test_vtab_cursor_walks_and_skips)
{
    static const int rows[] = {1, 2, 3, 3, 4, 5};
    sqlite3_vtab_cursor *base = NULL;
    struct odd_cursor *c;
    sqlite3_int64 rowid = -1;
    int seen[8], n = 0;

    ck_assert_int_eq(ha_cursor_open(sizeof(*c), &base), SQLITE_OK);
    c = (struct odd_cursor *)base;
    ck_assert_ptr_null(c->rc.skip);
    ck_assert(ha_cursor_eof(base)); /* zeroed: no rows before xFilter */
    c->rows = rows;
    c->rc.skip = odd_skip;
    ha_cursor_rewind(&c->rc, 0, HA_ARRAY_SIZE(rows));
    while (!ha_cursor_eof(base)) {
        ck_assert_int_eq(ha_cursor_rowid(base, &rowid), SQLITE_OK);
        seen[n++] = (int)rowid;
        ck_assert_int_eq(ha_cursor_next(base), SQLITE_OK);
    }
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(seen[0], 1); /* rows[1] = 2 */
    ck_assert_int_eq(seen[1], 4); /* rows[4] = 4 */
    /* A window of one row the skip refuses is empty. */
    ha_cursor_rewind(&c->rc, 2, 3);
    ck_assert(ha_cursor_eof(base));
    /* Without a skip, every row of the window. */
    c->rc.skip = NULL;
    ha_cursor_rewind(&c->rc, 2, 4);
    ck_assert(!ha_cursor_eof(base));
    ha_cursor_next(base);
    ck_assert_int_eq(ha_cursor_rowid(base, &rowid), SQLITE_OK);
    ck_assert_int_eq(rowid, 3);
    ha_cursor_next(base);
    ck_assert(ha_cursor_eof(base));
    ck_assert_int_eq(ha_cursor_close(base), SQLITE_OK);
}
END_TEST

/* ------------------------------------------------------------------
 * Suite
 * ------------------------------------------------------------------ */

static Suite *
vtab_suite(void)
{
    Suite *s = suite_create("vtab");
    TCase *core = tcase_create("core");
    TCase *noprof = tcase_create("noprof");
    TCase *errors = tcase_create("errors");

    tcase_add_checked_fixture(core, setup_prof, teardown);
    tcase_add_test(core, test_vtab_stats_every_row);
    tcase_add_test(core, test_vtab_cursor_walks_and_skips);
    tcase_add_test(core, test_vtab_stats_epoch_once_per_scan);
    tcase_add_test(core, test_vtab_stats_where_name_reads_one_row);
    tcase_add_test(core, test_vtab_stats_failing_mallctl_is_null);
    tcase_add_test(core, test_vtab_metrics_proxysql_rows);
    tcase_add_test(core, test_vtab_globals_every_row);
    tcase_add_test(core, test_vtab_globals_values);
    tcase_add_test(core, test_vtab_globals_where_name_reads_one_row);
    tcase_add_test(core, test_vtab_globals_bool_parsing_and_readback);
    tcase_add_test(core, test_vtab_globals_lg_prof_sample_info);
    tcase_add_test(core, test_vtab_globals_actions);
    tcase_add_test(core, test_vtab_globals_decay);
    tcase_add_test(core, test_vtab_bins_arena_plans);
    tcase_add_test(core, test_vtab_bins_without_stats);
    tcase_add_test(core, test_vtab_globals_purge_arena);
    tcase_add_test(core, test_vtab_globals_churn_rows);
    tcase_add_test(core, test_vtab_globals_dump_now_names_the_file);
    tcase_add_test(core, test_vtab_globals_dump_now_without_hook);
    tcase_add_test(core, test_vtab_globals_transaction);
    tcase_add_test(core, test_vtab_take_info_unknown_db);
    tcase_add_test(core, test_vtab_take_info_per_connection);
    tcase_add_test(core, test_vtab_directonly_and_innocuous);
    suite_add_tcase(s, core);

    tcase_add_checked_fixture(noprof, setup_noprof, teardown);
    tcase_add_test(noprof, test_vtab_stats_prof_rows_null_without_profiling);
    tcase_add_test(noprof, test_vtab_globals_without_profiling);
    tcase_add_test(noprof, test_vtab_globals_profiling_off);
    suite_add_tcase(s, noprof);

    tcase_add_checked_fixture(errors, setup_prof, teardown);
    tcase_add_test(errors, test_vtab_stats_read_only);
    tcase_add_test(errors, test_vtab_globals_invalid_values);
    tcase_add_test(errors, test_vtab_globals_read_only_rows);
    tcase_add_test(errors, test_vtab_globals_multi_row_all_or_nothing);
    tcase_add_test(errors, test_vtab_globals_apply_failure_puts_back);
    tcase_add_test(errors, test_vtab_globals_decay_refused);
    tcase_add_test(errors, test_vtab_globals_decay_put_back);
    tcase_add_test(errors, test_vtab_globals_insert_delete_rename_refused);
    tcase_add_test(errors, test_vtab_globals_dump_now_failures);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(vtab_suite)
