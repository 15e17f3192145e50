/* SPDX-License-Identifier: MIT
 *
 * Unit tests for engine/config*.c and engine/credentials.c: the shipped
 * sample configs, ProxySQL's own proxysql.cnf, defaults, limits, and one
 * case per class of bad file, each checking that the message names the
 * file, the line and the key, and that a failed load leaves the defaults.
 *
 * Needs HA_TOP_SRCDIR (etc/heapadmin.cnf and test/data/proxysql/proxysql.cnf);
 * make check sets it. Run one case in-process with
 *   CK_FORK=no CK_RUN_CASE=errors ./test/check_config
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/auth.h"
#include "engine/accounts.h"
/* Spelled with its directory: plain "config.h" is autoconf's, found first
 * through -I$(top_builddir). */
#include "engine/config.h"
#include "engine/config_write.h"
#include "engine/credentials.h"
#include "core/util.h"

#include "check_main.h"

#define NAME "t.cnf"

/* ------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------- */

static struct ha_config cfg;
static char err[1024];

/* Loads text named NAME into cfg; the message lands in err. */
static int
load(const char *text)
{
    return ha_config_load_string(&cfg, text, NAME, err, sizeof(err));
}

static void
setup(void)
{
    ha_config_init(&cfg);
    err[0] = '\0';
}

static void
teardown(void)
{
    ha_config_free(&cfg);
}

/* Reads a file the test needs; fails the test when it is missing. */
static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text;
    long len;

    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    len = ftell(f);
    ck_assert_int_ge(len, 0);
    rewind(f);
    text = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    text[len] = '\0';
    fclose(f);
    return text;
}

/* <$env>/<rel>; fails with a clear message when env is unset, because a
 * skipped test would hide that the file was never checked. */
static void
env_path(char *buf, size_t len, const char *env, const char *rel)
{
    const char *dir = getenv(env);

    ck_assert_msg(dir != NULL && dir[0] != '\0',
                  "%s is not set; run through make check or set %s to "
                  "the directory holding %s",
                  env, env, rel);
    snprintf(buf, len, "%s/%s", dir, rel);
}

/* The 1-based line of the first line of text starting with prefix. */
static unsigned
line_of(const char *text, const char *prefix)
{
    unsigned line = 1;
    size_t n = strlen(prefix);

    for (const char *p = text; *p != '\0'; p++) {
        if ((p == text || p[-1] == '\n') && strncmp(p, prefix, n) == 0)
            return line;
        if (*p == '\n')
            line++;
    }
    ck_abort_msg("no line starts with '%s'", prefix);
    return 0;
}

/* The message that contains needle, or NULL. */
static const char *
find_message(const struct ha_config *c, const char *needle)
{
    for (size_t i = 0; i < c->n_messages; i++) {
        if (strstr(c->messages[i].text, needle) != NULL)
            return c->messages[i].text;
    }
    return NULL;
}

static void
assert_defaults(const struct ha_config *c)
{
    ck_assert_ptr_null(c->path);
    ck_assert_str_eq(c->datadir, ".");
    ck_assert_ptr_null(c->errorlog);
    ck_assert_str_eq(c->admin_credentials, HA_DEFAULT_ADMIN_CREDENTIALS);
    ck_assert_str_eq(c->stats_credentials, HA_DEFAULT_STATS_CREDENTIALS);
    ck_assert_uint_eq(c->n_users, 2);
    ck_assert_str_eq(c->users[0].name, "admin");
    ck_assert_int_eq(c->users[0].role, HA_ROLE_ADMIN);
    ck_assert(c->users[0].is_default);
    ck_assert_str_eq(c->users[1].name, "stats");
    ck_assert_int_eq(c->users[1].role, HA_ROLE_STATS);
    ck_assert(c->users[1].is_default);
    ck_assert_str_eq(c->mysql_ifaces, HA_DEFAULT_MYSQL_IFACES);
    ck_assert_uint_eq(c->n_ifaces, 1);
    ck_assert_int_eq(c->ifaces[0].kind, HA_IFACE_TCP);
    ck_assert_str_eq(c->ifaces[0].host, "127.0.0.1");
    ck_assert_int_eq(c->ifaces[0].port, 6032);
    ck_assert_int_eq(c->jemalloc.prof_active, HA_UNSET);
    ck_assert_int_eq(c->jemalloc.lg_prof_sample, HA_UNSET);
    ck_assert_int_eq(c->jemalloc.lg_prof_interval, HA_LG_INTERVAL_UNSET);
    ck_assert_int_eq(c->jemalloc.prof_gdump, HA_UNSET);
    ck_assert_int_eq(c->jemalloc.prof_final, HA_UNSET);
    ck_assert_int_eq(c->jemalloc.prof_leak, HA_UNSET);
    ck_assert_int_eq(c->jemalloc.prof_accum, HA_UNSET);
    ck_assert_str_eq(c->jemalloc.dump_prefix, HA_DEFAULT_DUMP_PREFIX);
    ck_assert_str_eq(c->jemalloc.debug_root, "");
    ck_assert_int_eq(c->jemalloc.debuginfod, 0);
    ck_assert_str_eq(c->jemalloc.debuginfod_urls, "");
    ck_assert_int_eq(c->jemalloc.debuginfod_timeout_ms,
                     HA_DEFAULT_DEBUGINFOD_TIMEOUT_MS);
    ck_assert_int_eq(c->max_connections, HA_DEFAULT_MAX_CONNECTIONS);
    ck_assert_int_eq(c->connect_timeout, 10);
    ck_assert_int_eq(c->wait_timeout, 28800);
    ck_assert_int_eq(c->net_write_timeout, 60);
    ck_assert_int_eq(c->max_allowed_packet, 64 << 20);
    ck_assert_int_eq(c->max_output_buffer, 64 << 20);
    ck_assert_int_eq(c->disk_timeout_ms, HA_DEFAULT_DISK_TIMEOUT_MS);
    ck_assert_uint_eq(c->n_messages, 0);
}

/* A config that differs from the defaults in every field, loaded before
 * each error case so "left at defaults" is a real reset. */
static const char nondefault_cnf[] =
    "datadir = \"/srv/ha\"\n"
    "errorlog = \"/srv/ha/log\"\n"
    "pidfile = \"/x\"\n"
    "admin_variables = { admin_credentials = \"root:pw\";\n"
    "  stats_credentials = \"mon:pw\"; mysql_ifaces = \"0.0.0.0:7000\";\n"
    "  max_connections = 5; connect_timeout = 1; wait_timeout = 2;\n"
    "  net_write_timeout = 3; max_allowed_packet = 2097152;\n"
    "  max_output_buffer = 65536 }\n"
    "jemalloc_variables = { prof_active = true; lg_prof_sample = 1;\n"
    "  lg_prof_sample_min = 0; stats_max_age_ms = 250;\n"
    "  lg_prof_interval = 2; prof_gdump = 1; prof_final = \"on\";\n"
    "  prof_leak = true; prof_accum = true; dump_prefix = \"x\";\n"
    "  debug_root = \"/srv/debug\"; debuginfod = true;\n"
    "  debuginfod_urls = \"http://127.0.0.1:8002 https://d.example\";\n"
    "  debuginfod_timeout_ms = 1500 }\n";

/* ------------------------------------------------------------------------
 * core: shipped files
 * --------------------------------------------------------------------- */

/* SAVE CONFIG TO FILE's writer: what it writes loads back to the same
 * settings (writing that again gives the same text), escapes included. */
START_TEST(test_config_write_round_trip)
{
    struct ha_buf a = HA_BUF_INIT, b = HA_BUF_INIT;
    struct ha_config back;

    ck_assert_int_eq(load(nondefault_cnf), 0);
    free(cfg.admin_credentials);
    cfg.admin_credentials = strdup("root:p\\;w\"q");
    cfg.jemalloc.dump_retention_bytes = 10737418240LL;
    ha_config_write(&cfg, NULL, "# test", &a);
    ha_buf_append_u8(&a, '\0');
    ha_config_init(&back);
    ck_assert_msg(ha_config_load_string(&back, (const char *)a.data, "w.cnf",
                                        err, sizeof(err)) == 0,
                  "%s\n%s", err, (const char *)a.data);
    ck_assert_str_eq(back.admin_credentials, "root:p\\;w\"q");
    ck_assert_int_eq(back.max_connections, 5);
    ck_assert_int_eq(back.jemalloc.lg_prof_interval, 2);
    ck_assert_int_eq(back.jemalloc.prof_final, 1);
    ck_assert(back.jemalloc.dump_retention_bytes == 10737418240LL);
    ck_assert_str_eq(back.jemalloc.dump_prefix, "x");
    ck_assert_str_eq(back.jemalloc.debug_root, "/srv/debug");
    ck_assert_int_eq(back.jemalloc.debuginfod, 1);
    ck_assert_str_eq(back.jemalloc.debuginfod_urls,
                     "http://127.0.0.1:8002 https://d.example");
    ck_assert_int_eq(back.jemalloc.debuginfod_timeout_ms, 1500);
    ha_config_write(&back, NULL, "# test", &b);
    ha_buf_append_u8(&b, '\0');
    ck_assert_str_eq((const char *)b.data, (const char *)a.data);
    ha_config_free(&back);
    ha_buf_free(&a);
    ha_buf_free(&b);
}
END_TEST


/* The limit watch's settings: on by default, each checked. */
START_TEST(test_config_limit_watch)
{
    static const struct {
        const char *text;
        const char *what;
    } refused[] = {
        {"jemalloc_variables = { limit_dump_fractions = \"0.8,2\" };\n",
         "limit_dump_fractions: '2' is not a share of the limit: give "
         "numbers above 0 and at most 1"},
        {"jemalloc_variables = { limit_dump_fractions = \"0.9,0.90\" };\n",
         "0.90 is given twice"},
        {"jemalloc_variables = { limit_dump_psi_pct = 101 };\n",
         "limit_dump_psi_pct"},
        {"jemalloc_variables = { limit_watch_lg_prof_sample = 10 };\n",
         "limit_watch_lg_prof_sample = 10 is below"},
    };
    struct ha_buf out = HA_BUF_INIT;

    ck_assert_int_eq(load(""), 0);
    ck_assert_str_eq(cfg.jemalloc.limit_dump_fractions, "0.80,0.90,0.95");
    ck_assert_int_eq(cfg.jemalloc.limit_dump_psi_pct, 20);
    ck_assert_int_eq(cfg.jemalloc.limit_dump_events, 1);
    ck_assert(cfg.jemalloc.limit_dump_min_interval_s == 30);
    ck_assert_int_eq(cfg.jemalloc.limit_watch_sampling, 1);
    ck_assert_int_eq(cfg.jemalloc.limit_watch_lg_prof_sample, HA_UNSET);
    ck_assert_int_eq(load("jemalloc_variables = { limit_dump_fractions = "
                          "\"\"; limit_dump_events = false; };\n"),
                     0);
    ck_assert_str_eq(cfg.jemalloc.limit_dump_fractions, "");
    ck_assert_int_eq(cfg.jemalloc.limit_dump_events, 0);
    /* limit_watch_sample_pct is gone: an old config still loads, told
     * why; its 0 (never) is kept as limit_watch_sampling = false */
    ck_assert_int_eq(load("jemalloc_variables = { limit_watch_sample_pct = "
                          "50; };\n"),
                     0);
    ck_assert_int_eq(cfg.jemalloc.limit_watch_sampling, 1);
    ck_assert_uint_eq(cfg.n_messages, 1);
    ck_assert_int_eq(cfg.messages[0].severity, HA_CONFIG_NOTICE);
    ck_assert_pstr_eq(
        find_message(&cfg, "limit_watch_sample_pct"),
        "t.cnf:1: jemalloc_variables.limit_watch_sample_pct is no longer "
        "read: the limit watch no longer waits for a share of the limit to "
        "switch sampling on: it samples from the start wherever a memory "
        "limit binds the process, so that its dumps hold the whole heap "
        "(limit_watch_sampling = true, the default; false leaves sampling "
        "as it is); ignored");
    ck_assert_int_eq(load("jemalloc_variables = { limit_watch_sample_pct = "
                          "0; };\n"),
                     0);
    ck_assert_int_eq(cfg.jemalloc.limit_watch_sampling, 0);
    ck_assert_ptr_nonnull(find_message(
        &cfg, "its 0 (never) is taken as limit_watch_sampling = false"));
    ck_assert_int_eq(load("jemalloc_variables = { limit_watch_sampling = "
                          "false; };\n"),
                     0);
    ck_assert_int_eq(cfg.jemalloc.limit_watch_sampling, 0);
    ck_assert_uint_eq(cfg.n_messages, 0);
    ck_assert_int_eq(load("jemalloc_variables = { limit_dump_fractions = "
                          "\"\"; limit_dump_events = false; };\n"),
                     0);
    /* written back as set */
    ha_config_write(&cfg, NULL, NULL, &out);
    ha_buf_append_u8(&out, '\0');
    ck_assert_ptr_nonnull(strstr((const char *)out.data,
                                 "limit_dump_fractions = \"\""));
    ha_buf_free(&out);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        ck_assert_msg(load(refused[i].text) == -1, "accepted: %s",
                      refused[i].text);
        ck_assert_msg(strstr(err, refused[i].what) != NULL,
                      "'%s' lacks '%s'", err, refused[i].what);
    }
}
END_TEST

/* The leak watch's settings, and what they must agree with. */
START_TEST(test_config_leak_watch)
{
    static const struct {
        const char *text;
        const char *what;
    } refused[] = {
        {"admin_variables = { stats_system_memory = 0 };\n"
         "jemalloc_variables = { leak_watch_growth_bytes = 1000 };\n",
         "leak_watch_growth_bytes is set but admin_variables."
         "stats_system_memory = 0"},
        {"admin_variables = { stats_system_memory = 60 };\n"
         "jemalloc_variables = { leak_watch_growth_bytes = 1000; "
         "leak_watch_window_s = 30L };\n",
         "leak_watch_window_s = 30 is shorter than"},
        {"jemalloc_variables = { leak_watch_growth_bytes = 1000; "
         "dump_retention_count = 5L };\n",
         "dump_retention_count = 5 would remove the leak watch's own "
         "series (leak_watch_dumps = 12)"},
        {"jemalloc_variables = { leak_watch_growth_bytes = 1000; "
         "leak_watch_lg_prof_sample = 10 };\n",
         "leak_watch_lg_prof_sample = 10 is below"},
    };
    struct ha_buf out = HA_BUF_INIT;

    /* Defaults: off, an hour's window, 12 dumps 5 minutes apart. */
    ck_assert_int_eq(load(""), 0);
    ck_assert(cfg.jemalloc.leak_watch_growth_bytes == 0);
    ck_assert(cfg.jemalloc.leak_watch_window_s == 3600);
    ck_assert(cfg.jemalloc.leak_watch_dump_interval_s == 300);
    ck_assert(cfg.jemalloc.leak_watch_dumps == 12);
    ck_assert_int_eq(cfg.jemalloc.leak_watch_lg_prof_sample, HA_UNSET);
    ck_assert(cfg.jemalloc.dirty_decay_ms == HA_DECAY_UNSET);
    ck_assert(cfg.jemalloc.muzzy_decay_ms == HA_DECAY_UNSET);
    /* Unset decay is not written back; a set one is, -1 included. */
    ha_config_write(&cfg, NULL, NULL, &out);
    ha_buf_append_u8(&out, '\0');
    ck_assert_ptr_null(strstr((const char *)out.data, "decay_ms"));
    ck_assert_int_eq(load("jemalloc_variables = { dirty_decay_ms = -1; "
                          "leak_watch_growth_bytes = 268435456L; "
                          "leak_watch_lg_prof_sample = 16 };\n"),
                     0);
    ck_assert(cfg.jemalloc.dirty_decay_ms == -1);
    ck_assert(cfg.jemalloc.leak_watch_growth_bytes == 268435456LL);
    ha_buf_reset(&out);
    ha_config_write(&cfg, NULL, NULL, &out);
    ha_buf_append_u8(&out, '\0');
    ck_assert_ptr_nonnull(strstr((const char *)out.data,
                                 "dirty_decay_ms = -1L;"));
    ck_assert_ptr_nonnull(strstr((const char *)out.data,
                                 "leak_watch_lg_prof_sample = 16;"));
    ha_buf_free(&out);
    for (size_t i = 0; i < HA_ARRAY_SIZE(refused); i++) {
        ck_assert_msg(load(refused[i].text) == -1, "case %zu loaded", i);
        ck_assert_msg(strstr(err, refused[i].what) != NULL,
                      "case %zu: '%s' lacks '%s'", i, err, refused[i].what);
    }
}
END_TEST

START_TEST(test_config_unix_socket_mode)
{
    ck_assert_str_eq(cfg.unix_socket_mode, "0660");
    ck_assert_int_eq(ha_config_load_string(
                         &cfg, "admin_variables = { unix_socket_mode = \"600\" }",
                         NAME, err, sizeof(err)),
                     0);
    ck_assert_str_eq(cfg.unix_socket_mode, "600");
}
END_TEST

START_TEST(test_config_init_defaults)
{
    assert_defaults(&cfg);
}
END_TEST

START_TEST(test_config_empty_text_gives_defaults)
{
    ck_assert_int_eq(ha_config_load_string(&cfg, "", NAME, err, sizeof(err)),
                     0);
    ck_assert_str_eq(cfg.path, NAME);
    free(cfg.path);
    cfg.path = NULL;
    assert_defaults(&cfg);
}
END_TEST

START_TEST(test_config_sample_quickstart)
{
    char path[4096];

    env_path(path, sizeof(path), "HA_TOP_SRCDIR", "etc/heapadmin.cnf");
    ck_assert_msg(ha_config_load_file(&cfg, path, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_str_eq(cfg.path, path);
    ck_assert_str_eq(cfg.datadir, "./data");
    ck_assert_ptr_null(cfg.errorlog);
    ck_assert_uint_eq(cfg.n_ifaces, 1);
    ck_assert_int_eq(cfg.ifaces[0].kind, HA_IFACE_TCP);
    ck_assert_str_eq(cfg.ifaces[0].host, "127.0.0.1");
    ck_assert_int_eq(cfg.ifaces[0].port, 6032);
    ck_assert_uint_eq(cfg.n_users, 2);
    ck_assert_ptr_nonnull(ha_credentials_find(cfg.users, cfg.n_users, "admin"));
    /* The jemalloc example is commented out: jemalloc keeps its own. */
    ck_assert_int_eq(cfg.jemalloc.prof_active, HA_UNSET);
    ck_assert_int_eq(cfg.jemalloc.lg_prof_interval, HA_LG_INTERVAL_UNSET);
    ck_assert_str_eq(cfg.jemalloc.dump_prefix, "proxysql");
    ck_assert_msg(cfg.n_messages == 0, "unexpected message: %s",
                  cfg.n_messages > 0 ? cfg.messages[0].text : "");
}
END_TEST

START_TEST(test_config_sample_production)
{
    char path[4096];

    env_path(path, sizeof(path), "HA_TOP_SRCDIR", "etc/heapadmin.cnf.in");
    ck_assert_msg(ha_config_load_file(&cfg, path, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_str_eq(cfg.datadir, "@localstatedir@/lib/heapadmin");
    ck_assert_uint_eq(cfg.n_ifaces, 1);
    ck_assert_int_eq(cfg.ifaces[0].port, 6032);
    ck_assert_uint_eq(cfg.n_messages, 0);
}
END_TEST

/* Uncomments every "#   key = value" line of the quick start's
 * jemalloc_variables example: the documented example must load. */
START_TEST(test_config_sample_jemalloc_example)
{
    char path[4096];
    char *text, *p;
    int rc;

    env_path(path, sizeof(path), "HA_TOP_SRCDIR", "etc/heapadmin.cnf");
    text = slurp(path);
    p = strstr(text, "jemalloc_variables");
    ck_assert_ptr_nonnull(p);
    while ((p = strstr(p, "\n#   ")) != NULL) {
        p[1] = ' ';
        p++;
    }
    rc = ha_config_load_string(&cfg, text, path, err, sizeof(err));
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(cfg.jemalloc.prof_active, 1);
    ck_assert_int_eq(cfg.jemalloc.lg_prof_sample, 19);
    ck_assert_int_eq(cfg.jemalloc.lg_prof_interval, 30);
    ck_assert_int_eq(cfg.jemalloc.prof_gdump, 0);
    ck_assert_int_eq(cfg.jemalloc.prof_final, 0);
    ck_assert_int_eq(cfg.jemalloc.prof_leak, 0);
    ck_assert_int_eq(cfg.jemalloc.prof_accum, 0);
    ck_assert_str_eq(cfg.jemalloc.dump_prefix, "proxysql");
    free(text);
}
END_TEST

START_TEST(test_config_proxysql_cnf)
{
    static const char *const ignored[] = {
        "mysql_variables",   "mysql_servers", "mysql_users",
        "mysql_query_rules", "scheduler",     "mysql_replication_hostgroups",
    };
    char path[4096], want[4200];
    char *text;

    env_path(path, sizeof(path), "HA_TOP_SRCDIR", "test/data/proxysql/proxysql.cnf");
    text = slurp(path);
    ck_assert_msg(ha_config_load_file(&cfg, path, err, sizeof(err)) == 0, "%s",
                  err);
    ck_assert_str_eq(cfg.datadir, "/var/lib/proxysql");
    ck_assert_str_eq(cfg.errorlog, "/var/lib/proxysql/proxysql.log");
    ck_assert_uint_eq(cfg.n_ifaces, 1);
    ck_assert_int_eq(cfg.ifaces[0].kind, HA_IFACE_TCP);
    ck_assert_str_eq(cfg.ifaces[0].host, "0.0.0.0");
    ck_assert_int_eq(cfg.ifaces[0].port, 6032);
    ck_assert_uint_eq(cfg.n_users, 2);
    ck_assert(cfg.users[0].is_default);
    ck_assert_str_eq(cfg.users[1].name, "stats");

    for (size_t i = 0; i < HA_ARRAY_SIZE(ignored); i++) {
        snprintf(want, sizeof(want),
                 "%s:%u: section '%s' is not used by heapadmin; ignored", path,
                 line_of(text, ignored[i]), ignored[i]);
        ck_assert_msg(find_message(&cfg, want) != NULL, "no notice '%s'", want);
    }
    /* One notice per section and nothing else: no warnings. */
    ck_assert_uint_eq(cfg.n_messages, HA_ARRAY_SIZE(ignored));
    free(text);
}
END_TEST

/* ------------------------------------------------------------------------
 * core: values
 * --------------------------------------------------------------------- */

START_TEST(test_config_all_keys)
{
    static const char text[] =
        "datadir = \"/var/lib/heapadmin\"\n"
        "errorlog = \"/var/log/heapadmind.log\"\n"
        "admin_variables =\n"
        "{\n"
        "    admin_credentials = \" root:s3:cr ; ops@host:x ;\"\n"
        "    stats_credentials = \"mon:;stats:stats\"\n"
        "    mysql_ifaces = \"0.0.0.0:6032; [::1]:6033 ;/run/h.sock;\"\n"
        "}\n"
        "jemalloc_variables =\n"
        "{\n"
        "    prof_active = true\n"
        "    lg_prof_sample_min = 0\n"
        "    lg_prof_sample = 0\n"
        "    lg_prof_interval = -1\n"
        "    prof_gdump = \"ON\"\n"
        "    prof_final = 0\n"
        "    prof_leak = \"False\"\n"
        "    prof_accum = 1\n"
        "    dump_prefix = \"heap-1.x_y\"\n"
        "}\n";
    uint8_t want[HA_SHA1_LEN];
    const struct ha_user *u;

    ck_assert_msg(load(text) == 0, "%s", err);
    ck_assert_str_eq(cfg.datadir, "/var/lib/heapadmin");
    ck_assert_str_eq(cfg.errorlog, "/var/log/heapadmind.log");

    ck_assert_uint_eq(cfg.n_users, 4);
    u = ha_credentials_find(cfg.users, cfg.n_users, "root");
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(u->role, HA_ROLE_ADMIN);
    ck_assert(!u->is_default);
    ck_assert(!u->empty_password);
    ha_digest_native_stage2("s3:cr", 5, want);
    ck_assert_mem_eq(u->stage2, want, HA_SHA1_LEN);
    u = ha_credentials_find(cfg.users, cfg.n_users, "ops@host");
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(u->role, HA_ROLE_ADMIN);
    u = ha_credentials_find(cfg.users, cfg.n_users, "mon");
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(u->role, HA_ROLE_STATS);
    ck_assert(u->empty_password);
    u = ha_credentials_find(cfg.users, cfg.n_users, "stats");
    ck_assert_ptr_nonnull(u);
    ck_assert(u->is_default);
    ck_assert_int_eq(u->role, HA_ROLE_STATS);

    ck_assert_uint_eq(cfg.n_ifaces, 3);
    ck_assert_int_eq(cfg.ifaces[0].kind, HA_IFACE_TCP);
    ck_assert_str_eq(cfg.ifaces[0].host, "0.0.0.0");
    ck_assert_int_eq(cfg.ifaces[0].port, 6032);
    ck_assert_int_eq(cfg.ifaces[1].kind, HA_IFACE_TCP);
    ck_assert_str_eq(cfg.ifaces[1].host, "::1");
    ck_assert_int_eq(cfg.ifaces[1].port, 6033);
    ck_assert_int_eq(cfg.ifaces[2].kind, HA_IFACE_UNIX);
    ck_assert_str_eq(cfg.ifaces[2].path, "/run/h.sock");

    ck_assert_int_eq(cfg.jemalloc.prof_active, 1);
    ck_assert_int_eq(cfg.jemalloc.lg_prof_sample, 0);
    ck_assert_int_eq(cfg.jemalloc.lg_prof_interval, -1);
    ck_assert_int_eq(cfg.jemalloc.prof_gdump, 1);
    ck_assert_int_eq(cfg.jemalloc.prof_final, 0);
    ck_assert_int_eq(cfg.jemalloc.prof_leak, 0);
    ck_assert_int_eq(cfg.jemalloc.prof_accum, 1);
    ck_assert_str_eq(cfg.jemalloc.dump_prefix, "heap-1.x_y");
    ck_assert_uint_eq(cfg.n_messages, 0);
}
END_TEST

static const struct {
    const char *value;
    int want;
} bool_forms[] = {
    {"true", 1},      {"false", 0},  {"TRUE", 1},    {"False", 0},
    {"1", 1},         {"0", 0},      {"1L", 1},      {"\"true\"", 1},
    {"\"FALSE\"", 0}, {"\"on\"", 1}, {"\"Off\"", 0}, {"\"1\"", 1},
    {"\"0\"", 0},
};

START_TEST(test_config_bool_forms)
{
    char text[256];

    snprintf(text, sizeof(text), "jemalloc_variables = { prof_leak = %s }",
             bool_forms[_i].value);
    ck_assert_msg(load(text) == 0, "form %d (%s): %s", _i, bool_forms[_i].value,
                  err);
    ck_assert_msg(cfg.jemalloc.prof_leak == bool_forms[_i].want,
                  "form %d (%s): expected %d, got %d", _i, bool_forms[_i].value,
                  bool_forms[_i].want, cfg.jemalloc.prof_leak);
}
END_TEST

START_TEST(test_config_reload_replaces)
{
    ck_assert_int_eq(
        ha_config_load_string(&cfg, nondefault_cnf, NAME, err, sizeof(err)), 0);
    ck_assert_str_eq(cfg.datadir, "/srv/ha");
    ck_assert_uint_eq(cfg.n_messages, 1); /* pidfile */
    /* A second load starts from the defaults, not from the first file. */
    ck_assert_int_eq(ha_config_load_string(&cfg, "errorlog = \"/l\"", "u.cnf",
                                           err, sizeof(err)),
                     0);
    ck_assert_str_eq(cfg.path, "u.cnf");
    ck_assert_str_eq(cfg.datadir, ".");
    ck_assert_str_eq(cfg.errorlog, "/l");
    ck_assert_uint_eq(cfg.n_users, 2);
    ck_assert_int_eq(cfg.jemalloc.prof_active, HA_UNSET);
    ck_assert_uint_eq(cfg.n_messages, 0);
}
END_TEST

START_TEST(test_config_null_name)
{
    ck_assert_int_eq(
        ha_config_load_string(&cfg, "x = 1", NULL, err, sizeof(err)), 0);
    ck_assert_str_eq(cfg.path, "<string>");
    ck_assert_uint_eq(cfg.n_messages, 1);
    ck_assert_ptr_nonnull(strstr(cfg.messages[0].text, "<string>:1: "));
}
END_TEST

START_TEST(test_config_log_runs)
{
    /* Only that it does not crash on either a loaded or a zeroed config;
     * the log sink is stderr. */
    ck_assert_int_eq(
        ha_config_load_string(&cfg, nondefault_cnf, NAME, err, sizeof(err)), 0);
    ha_config_log(&cfg, NULL);
}
END_TEST

/* ------------------------------------------------------------------------
 * core: warnings and notices
 * --------------------------------------------------------------------- */

START_TEST(test_config_typo_key_suggests)
{
    static const char text[] = "admin_variables =\n"
                               "{\n"
                               "    mysql_iface = \"0.0.0.0:7000\"\n"
                               "}\n"
                               "jemalloc_variables = { lg_prof_samples = 3 }\n"
                               "datadr = \"/x\"\n"
                               "jemaloc_variables = { }\n"
                               "completely_unrelated = 1\n";
    const char *m;

    ck_assert_msg(load(text) == 0, "%s", err);
    ck_assert_uint_eq(cfg.n_messages, 5);
    for (size_t i = 0; i < cfg.n_messages; i++)
        ck_assert_msg(cfg.messages[i].severity == HA_CONFIG_WARNING,
                      "not a warning: %s", cfg.messages[i].text);
    m = find_message(&cfg, "'mysql_iface'");
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m, NAME ":3: unknown key 'mysql_iface' in "
                             "admin_variables, ignored; did you mean "
                             "'mysql_ifaces'?");
    m = find_message(&cfg, "'lg_prof_samples'");
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, NAME ":5: "));
    ck_assert_ptr_nonnull(strstr(m, "did you mean 'lg_prof_sample'?"));
    m = find_message(&cfg, "'datadr'");
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, NAME ":6: "));
    ck_assert_ptr_nonnull(strstr(m, "did you mean 'datadir'?"));
    m = find_message(&cfg, "'jemaloc_variables'");
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, "did you mean 'jemalloc_variables'?"));
    m = find_message(&cfg, "'completely_unrelated'");
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_null(strstr(m, "did you mean"));
    /* Unknown keys are ignored, not applied. */
    ck_assert_str_eq(cfg.ifaces[0].host, "127.0.0.1");
    ck_assert_str_eq(cfg.datadir, ".");
}
END_TEST

START_TEST(test_config_proxysql_keys_notice)
{
    static const char text[] =
        "pidfile = \"/var/lib/proxysql/proxysql.pid\"\n"
        "restart_on_missing_heartbeats = 10\n"
        "admin_variables =\n"
        "{\n"
        "    refresh_interval = 2000\n"
        "    debug = true\n"
        "    web_enabled = false\n"
        "    cluster_username = \"c\"\n"
        "}\n"
        "proxysql_servers = ( { hostname = \"a\", port = 6032 } )\n"
        "ldap_variables = { }\n";

    ck_assert_msg(load(text) == 0, "%s", err);
    ck_assert_uint_eq(cfg.n_messages, 8);
    for (size_t i = 0; i < cfg.n_messages; i++)
        ck_assert_msg(cfg.messages[i].severity == HA_CONFIG_NOTICE,
                      "not a notice: %s", cfg.messages[i].text);
    ck_assert_ptr_nonnull(find_message(&cfg,
                                       NAME ":1: 'pidfile' is a "
                                            "ProxySQL setting not used by "
                                            "heapadmin; ignored"));
    ck_assert_ptr_nonnull(find_message(&cfg,
                                       NAME ":2: "
                                            "'restart_on_missing_heartbeats'"));
    ck_assert_ptr_nonnull(find_message(&cfg,
                                       NAME ":5: admin_variables."
                                            "refresh_interval is a ProxySQL "
                                            "setting not used by heapadmin; "
                                            "ignored"));
    ck_assert_ptr_nonnull(find_message(&cfg, NAME ":6: admin_variables."
                                                  "debug"));
    ck_assert_ptr_nonnull(find_message(&cfg, NAME ":7: admin_variables."
                                                  "web_enabled"));
    ck_assert_ptr_nonnull(find_message(&cfg, NAME ":8: admin_variables."
                                                  "cluster_username"));
    ck_assert_ptr_nonnull(find_message(&cfg,
                                       NAME ":10: section "
                                            "'proxysql_servers' is not used"));
    ck_assert_ptr_nonnull(find_message(&cfg,
                                       NAME ":11: section "
                                            "'ldap_variables' is not used"));
}
END_TEST

/* ------------------------------------------------------------------------
 * core: credentials and interfaces directly
 * --------------------------------------------------------------------- */

START_TEST(test_credentials_parse_and_find)
{
    struct ha_user *users = NULL;
    size_t n = 0;

    ck_assert_int_eq(ha_credentials_parse(" ; admin:admin ;;\tb-1.x@y:p:q ",
                                          HA_ROLE_ADMIN, &users, &n, err,
                                          sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(users[0].name, "admin");
    ck_assert(users[0].is_default);
    ck_assert_str_eq(users[1].name, "b-1.x@y");
    ck_assert(!users[1].is_default);
    ck_assert_ptr_eq(ha_credentials_find(users, n, "b-1.x@y"), &users[1]);
    ck_assert_ptr_null(ha_credentials_find(users, n, "Admin"));
    ck_assert_ptr_null(ha_credentials_find(users, n, "b-1"));

    /* Appending a list with a clash leaves the array as it was. */
    ck_assert_int_eq(ha_credentials_parse("new:1;admin:2", HA_ROLE_STATS,
                                          &users, &n, err, sizeof(err)),
                     -1);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_nonnull(strstr(err, "'admin'"));
    ck_assert_ptr_null(ha_credentials_find(users, n, "new"));

    /* Only whitespace and separators: nothing added, no error. */
    ck_assert_int_eq(ha_credentials_parse("  ; ;", HA_ROLE_STATS, &users, &n,
                                          err, sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    free(users);
}
END_TEST

/* A ';' in a password is written "\;" (and a backslash before ';' or
 * '\' as "\\"): "admin:Ab3;k:9" would be two users. */
START_TEST(test_credentials_escaped_semicolon)
{
    struct ha_user *users = NULL;
    size_t n = 0;
    uint8_t want[HA_SHA1_LEN];
    char masked[128];

    ck_assert_int_eq(ha_credentials_parse("admin:Ab3\\;k:9;ops:a\\\\b",
                                          HA_ROLE_ADMIN, &users, &n, err,
                                          sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(users[0].name, "admin");
    ha_digest_native_stage2("Ab3;k:9", 7, want);
    ck_assert_mem_eq(users[0].stage2, want, sizeof(want));
    ck_assert_str_eq(users[1].name, "ops");
    ha_digest_native_stage2("a\\b", 3, want);
    ck_assert_mem_eq(users[1].stage2, want, sizeof(want));
    ck_assert_ptr_null(ha_credentials_find(users, n, "k"));
    ha_credentials_mask("admin:Ab3\\;k:9;ops:x", masked, sizeof(masked));
    ck_assert_str_eq(masked, "admin:****;ops:****");
    free(users);

    /* Unescaped, it is two users, as before. */
    users = NULL;
    n = 0;
    ck_assert_int_eq(ha_credentials_parse("admin:Ab3;k:9", HA_ROLE_ADMIN,
                                          &users, &n, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    free(users);
}
END_TEST

/* Hashed passwords: '*' + SHA1(SHA1(pw)) as PASSWORD() shows it, and
 * sha2: + SHA256(SHA256(pw)); each gives only its own digest. */
START_TEST(test_credentials_hashed)
{
    struct ha_user *users = NULL;
    size_t n = 0;
    uint8_t native[HA_SHA1_LEN], sha2[HA_SHA256_LEN];

    ck_assert_int_eq(
        ha_credentials_parse(
            "n:*14E65567ABDB5135D0CFD9A70B3032C179A49EE7;"
            "l:*14e65567abdb5135d0cfd9a70b3032c179a49ee7;"
            "s:sha2:3881219d087dd9c634373fd33dfa33a2cb6bfc6c520b64b8bb60ef2c"
            "eb534ae7;p:secret",
            HA_ROLE_ADMIN, &users, &n, err, sizeof(err)),
        0);
    ck_assert_uint_eq(n, 4);
    ha_digest_native_stage2("secret", 6, native);
    ha_digest_sha2_stage2("secret", 6, sha2);
    ck_assert(users[0].has_native && !users[0].has_sha2);
    ck_assert_mem_eq(users[0].stage2, native, HA_SHA1_LEN);
    ck_assert_mem_eq(users[1].stage2, native, HA_SHA1_LEN);
    ck_assert(!users[2].has_native && users[2].has_sha2);
    ck_assert_mem_eq(users[2].sha2_stage2, sha2, HA_SHA256_LEN);
    ck_assert(users[3].has_native && users[3].has_sha2);
    ck_assert_mem_eq(users[3].stage2, native, HA_SHA1_LEN);
    ck_assert_mem_eq(users[3].sha2_stage2, sha2, HA_SHA256_LEN);
    for (size_t i = 0; i < n; i++)
        ck_assert(!users[i].empty_password && !users[i].is_default);
    /* The clear password checks against either digest. */
    ck_assert(ha_accounts_check_clear(&users[0], (const uint8_t *)"secret", 6));
    ck_assert(ha_accounts_check_clear(&users[2], (const uint8_t *)"secret", 6));
    ck_assert(!ha_accounts_check_clear(&users[2], (const uint8_t *)"secreT", 6));
    free(users);
}
END_TEST

START_TEST(test_credentials_hashed_errors)
{
    static const char *const bad[] = {
        "u:*14E65567ABDB5135D0CFD9A70B3032C179A49EE",   /* 39 digits */
        "u:*14E65567ABDB5135D0CFD9A70B3032C179A49EE77", /* 41 digits */
        "u:*14E65567ABDB5135D0CFD9A70B3032C179A49EEG",  /* not hex */
        "u:*",
        "u:sha2:3881219d087dd9c634373fd33dfa33a2cb6bfc6c520b64b8bb60ef2ceb534a",
        "u:sha2:",
        "u:sha2:3881219d087dd9c634373fd33dfa33a2cb6bfc6c520b64b8bb60ef2ceb534aez",
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(bad); i++) {
        struct ha_user *users = NULL;
        size_t n = 0;
        ck_assert_msg(ha_credentials_parse(bad[i], HA_ROLE_ADMIN, &users, &n,
                                           err, sizeof(err)) == -1,
                      "%zu accepted", i);
        ck_assert_ptr_nonnull(strstr(err, "user 'u'"));
        /* The message never repeats the value. */
        ck_assert_msg(strstr(err, "14E6") == NULL &&
                          strstr(err, "3881") == NULL,
                      "%zu: %s", i, err);
    }
}
END_TEST

/* admin:admin and stats:stats count as defaults however given, and are
 * accepted only from loopback or the unix socket. */
START_TEST(test_credentials_default_policy)
{
    struct ha_user *users = NULL;
    size_t n = 0;

    ck_assert_int_eq(
        ha_credentials_parse(
            "admin:*4ACFE3202A5FF5CF467898FC58AAB1D615029441;"
            "stats:sha2:01edcd7ff8c6554ab94656215df463dbf82c462ebb665ba17e5f0"
            "9ab170bdd07;x:admin",
            HA_ROLE_ADMIN, &users, &n, err, sizeof(err)),
        0);
    ck_assert(users[0].is_default);
    ck_assert(users[1].is_default);
    ck_assert(!users[2].is_default);
    ck_assert(ha_credentials_allows_from(&users[0], true));
    ck_assert(!ha_credentials_allows_from(&users[0], false));
    ck_assert(!ha_credentials_allows_from(&users[1], false));
    ck_assert(ha_credentials_allows_from(&users[2], false));
    ck_assert(!ha_credentials_allows_from(NULL, true));
    free(users);
    users = NULL;
    n = 0;
    ck_assert_int_eq(ha_credentials_parse("admin:Admin;stats:*2707D57595F6C"
                                          "BAD52FA17AD4B08C85FA7185BAC",
                                          HA_ROLE_ADMIN, &users, &n, err,
                                          sizeof(err)),
                     0);
    ck_assert(!users[0].is_default);
    ck_assert(users[1].is_default);
    free(users);
}
END_TEST

/* The start-up warning: a default credential and a non-loopback
 * interface. */
START_TEST(test_config_default_exposed)
{
    static const struct {
        const char *ifaces;
        bool exposed;
    } cases[] = {
        {"127.0.0.1:6032", false},
        {"127.0.0.2:6032;/tmp/x.sock", false},
        {"[::1]:6032;localhost:6033", false},
        {"0.0.0.0:6032", true},
        {"127.0.0.1:6032;[::]:6032", true},
        {"10.1.2.3:6032", true},
    };
    char why[512], text[256];

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        snprintf(text, sizeof(text),
                 "admin_variables = { mysql_ifaces = \"%s\" }",
                 cases[i].ifaces);
        ck_assert_int_eq(ha_config_load_string(&cfg, text, "t", err,
                                               sizeof(err)),
                         0);
        ck_assert_msg(ha_config_default_exposed(&cfg, why, sizeof(why)) ==
                          cases[i].exposed,
                      "%zu: %s", i, cases[i].ifaces);
    }
    ck_assert_str_eq(why, "user 'admin' has the default password and "
                          "mysql_ifaces listens on 10.1.2.3:6032, beyond "
                          "loopback: logins with default credentials are "
                          "accepted only over loopback or the unix socket; "
                          "give the user a password of its own");
    ck_assert_int_eq(ha_config_load_string(
                         &cfg,
                         "admin_variables = { mysql_ifaces = "
                         "\"0.0.0.0:6032\"; admin_credentials = \"a:b\"; "
                         "stats_credentials = \"s:t\" }",
                         "t", err, sizeof(err)),
                     0);
    ck_assert(!ha_config_default_exposed(&cfg, why, sizeof(why)));
}
END_TEST

START_TEST(test_credentials_mask)
{
    char out[128];

    ha_credentials_mask("admin:admin; ops:a:b ;;stats:", out, sizeof(out));
    ck_assert_str_eq(out, "admin:****;ops:****;stats:****");
    ha_credentials_mask("nocolon", out, sizeof(out));
    ck_assert_str_eq(out, "****");
    ha_credentials_mask("", out, sizeof(out));
    ck_assert_str_eq(out, "");
    /* Truncated output still never shows a password. */
    ha_credentials_mask("a:secret;b:secret", out, 6);
    ck_assert_str_eq(out, "a:***");
    ha_credentials_mask("a:secret", out, 1);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_config_parse_ifaces_direct)
{
    struct ha_iface *ifs = NULL;
    size_t n = 0;

    ck_assert_int_eq(ha_iface_parse("localhost:1;[fe80::1]:65535", &ifs, &n,
                                    err, sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(ifs[0].host, "localhost");
    ck_assert_int_eq(ifs[0].port, 1);
    ck_assert_str_eq(ifs[1].host, "fe80::1");
    ck_assert_int_eq(ifs[1].port, 65535);
    free(ifs);

    ifs = NULL;
    n = 0;
    ck_assert_int_eq(ha_iface_parse("1.2.3.4:5;1.2.3.4:5", &ifs, &n, err,
                                    sizeof(err)),
                     -1);
    ck_assert_ptr_null(ifs);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_nonnull(strstr(err, "listed twice"));
}
END_TEST

START_TEST(test_config_load_file_missing)
{
    ck_assert_int_eq(
        ha_config_load_string(&cfg, nondefault_cnf, NAME, err, sizeof(err)), 0);
    ck_assert_int_eq(
        ha_config_load_file(&cfg, "/nonexistent/h.cnf", err, sizeof(err)), -1);
    ck_assert_str_eq(err, "/nonexistent/h.cnf: cannot read: No such file "
                          "or directory");
    assert_defaults(&cfg);
}
END_TEST

/* @include paths are relative to the including file, not to the working
 * directory heapadmind happens to run in. */
START_TEST(test_config_include_relative)
{
    char dir[] = "/tmp/check_config.XXXXXX";
    char main_path[64], inc_path[64];
    FILE *f;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(main_path, sizeof(main_path), "%s/main.cnf", dir);
    snprintf(inc_path, sizeof(inc_path), "%s/inc.cnf", dir);
    f = fopen(main_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("datadir = \"/d\"\n@include \"inc.cnf\"\n", f);
    fclose(f);
    f = fopen(inc_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("jemalloc_variables = { lg_prof_sample = 17 }\n", f);
    fclose(f);

    ck_assert_msg(ha_config_load_file(&cfg, main_path, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_str_eq(cfg.datadir, "/d");
    ck_assert_int_eq(cfg.jemalloc.lg_prof_sample, 17);
    unlink(inc_path);
    unlink(main_path);
    rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------------
 * limits
 * --------------------------------------------------------------------- */

static const struct {
    const char *text; /* key = value, placed on line 4 inside group */
    const char *group;
    bool ok;
} limit_cases[] = {
    {"lg_prof_sample_min = 0; lg_prof_sample = 0", "jemalloc_variables",
     true},
    {"lg_prof_sample = 62", "jemalloc_variables", true},
    /* The floor that protects hosts: 14 unless lowered on purpose. */
    {"lg_prof_sample = 13", "jemalloc_variables", false},
    {"lg_prof_sample = 14", "jemalloc_variables", true},
    {"lg_prof_sample_min = 20; lg_prof_sample = 19", "jemalloc_variables",
     false},
    {"lg_prof_sample_min = 63", "jemalloc_variables", false},
    {"stats_max_age_ms = 0", "jemalloc_variables", true},
    {"stats_max_age_ms = 3600000", "jemalloc_variables", true},
    {"stats_max_age_ms = 3600001", "jemalloc_variables", false},
    {"stats_max_age_ms = -1", "jemalloc_variables", false},
    {"lg_prof_sample = 63", "jemalloc_variables", false},
    {"lg_prof_sample = -1", "jemalloc_variables", false},
    {"lg_prof_interval = -1", "jemalloc_variables", true},
    {"lg_prof_interval = 62", "jemalloc_variables", true},
    {"lg_prof_interval = -2", "jemalloc_variables", false},
    {"lg_prof_interval = 63", "jemalloc_variables", false},
    {"lg_prof_sample = 4294967296L", "jemalloc_variables", false},
    /* Dump housekeeping: 64-bit byte counts, ranges checked. */
    {"dump_retention_bytes = 10737418240L", "jemalloc_variables", true},
    {"dump_retention_bytes = -1", "jemalloc_variables", false},
    {"dump_retention_count = 1000000", "jemalloc_variables", true},
    {"dump_retention_count = 1000001", "jemalloc_variables", false},
    {"dump_min_free_bytes = 0", "jemalloc_variables", true},
    {"dump_interval_s = 604800", "jemalloc_variables", true},
    {"dump_interval_s = 604801", "jemalloc_variables", false},
    {"dump_resident_bytes = 8589934592L", "jemalloc_variables", true},
    {"dump_resident_bytes = \"8G\"", "jemalloc_variables", false},
    {"mysql_ifaces = \"127.0.0.1:1\"", "admin_variables", true},
    {"mysql_ifaces = \"127.0.0.1:65535\"", "admin_variables", true},
    {"mysql_ifaces = \"127.0.0.1:0\"", "admin_variables", false},
    {"mysql_ifaces = \"127.0.0.1:65536\"", "admin_variables", false},
    {"mysql_ifaces = \"127.0.0.1:99999999999999999999\"", "admin_variables",
     false},
    {"dump_prefix = \"a\"", "jemalloc_variables", true},
    {"dump_prefix = \""
     "0123456789012345678901234567890123456789"
     "01234567890123456789012\"",
     "jemalloc_variables", true}, /* 63 */
    {"dump_prefix = \""
     "0123456789012345678901234567890123456789"
     "012345678901234567890123\"",
     "jemalloc_variables", false}, /* 64 */
    {"dump_prefix = \"\"", "jemalloc_variables", false},
    {"stats_credentials = \"\"", "admin_variables", true},
    /* Limits: edges of each range, and a string where an int belongs. */
    {"max_connections = 1", "admin_variables", true},
    {"max_connections = 100000", "admin_variables", true},
    {"max_connections = 0", "admin_variables", false},
    {"max_connections = 100001", "admin_variables", false},
    {"max_connections = \"10\"", "admin_variables", false},
    {"connect_timeout = 1", "admin_variables", true},
    {"connect_timeout = 0", "admin_variables", false},
    {"wait_timeout = 31536000", "admin_variables", true},
    {"wait_timeout = 31536001", "admin_variables", false},
    {"net_write_timeout = 0", "admin_variables", false},
    {"max_allowed_packet = 1048576", "admin_variables", true},
    {"max_allowed_packet = 1048575", "admin_variables", false},
    {"max_allowed_packet = 1073741824", "admin_variables", true},
    {"max_allowed_packet = 1073741825", "admin_variables", false},
    {"max_allowed_packet = 4294967296L", "admin_variables", false},
    {"max_output_buffer = 65536", "admin_variables", true},
    {"max_output_buffer = 65535", "admin_variables", false},
    {"disk_timeout_ms = 0", "admin_variables", true},
    {"disk_timeout_ms = 3600000", "admin_variables", true},
    {"disk_timeout_ms = 3600001", "admin_variables", false},
    {"disk_timeout_ms = -1", "admin_variables", false},
};

START_TEST(test_config_limits)
{
    char text[512];
    int rc;

    snprintf(text, sizeof(text), "\n%s =\n{\n    %s\n}\n",
             limit_cases[_i].group, limit_cases[_i].text);
    rc = ha_config_load_string(&cfg, text, NAME, err, sizeof(err));
    if (limit_cases[_i].ok) {
        ck_assert_msg(rc == 0, "case %d (%s): %s", _i, limit_cases[_i].text,
                      err);
    } else {
        ck_assert_msg(rc == -1, "case %d (%s) loaded", _i,
                      limit_cases[_i].text);
        ck_assert_msg(strncmp(err, NAME ":4: ", strlen(NAME ":4: ")) == 0,
                      "case %d: '%s' lacks the location", _i, err);
    }
}
END_TEST

/* Lengths at the edges: user name 128/129, socket path 107/108. */
START_TEST(test_config_length_limits)
{
    char name[HA_USER_MAX + 2], path[110], text[512];

    memset(name, 'u', sizeof(name));
    name[HA_USER_MAX] = '\0';
    snprintf(text, sizeof(text),
             "admin_variables = { admin_credentials = \"%s:p\" }", name);
    ck_assert_msg(load(text) == 0, "%s", err);
    ck_assert_str_eq(cfg.users[0].name, name);

    name[HA_USER_MAX] = 'u';
    name[HA_USER_MAX + 1] = '\0';
    snprintf(text, sizeof(text),
             "admin_variables = { admin_credentials = \"%s:p\" }", name);
    ck_assert_int_eq(ha_config_load_string(&cfg, text, NAME, err, sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "1..128"));

    memset(path, 'p', sizeof(path));
    path[0] = '/';
    path[107] = '\0';
    snprintf(text, sizeof(text), "admin_variables = { mysql_ifaces = \"%s\" }",
             path);
    ck_assert_msg(load(text) == 0, "%s", err);
    ck_assert_int_eq(cfg.ifaces[0].kind, HA_IFACE_UNIX);
    ck_assert_str_eq(cfg.ifaces[0].path, path);

    path[107] = 'p';
    path[108] = '\0';
    snprintf(text, sizeof(text), "admin_variables = { mysql_ifaces = \"%s\" }",
             path);
    ck_assert_int_eq(ha_config_load_string(&cfg, text, NAME, err, sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "at most 107"));
}
END_TEST

/* ------------------------------------------------------------------------
 * errors: one per class of bad file
 * --------------------------------------------------------------------- */

/* Each text puts the fault on line 4, after a nondefault-looking start. */
static const struct {
    const char *text;
    const char *key;   /* must appear in the message */
    const char *what;  /* and so must this */
    const char *never; /* must not (a password), or NULL */
} error_cases[] = {
    /* names in heap profiles */
    {"jemalloc_variables =\n{\n\n  debug_root = \"debug\"\n}\n",
     "debug_root", "not an absolute path", NULL},
    {"jemalloc_variables =\n{\n\n  debug_root = \"/a:/b\"\n}\n",
     "debug_root", "without ':'", NULL},
    {"jemalloc_variables =\n{\n\n  debuginfod_urls = \"http://a ftp://b\"\n"
     "}\n",
     "debuginfod_urls", "'ftp://b' is not a debuginfod server URL", NULL},
    {"jemalloc_variables =\n{\n\n  debuginfod_timeout_ms = 50\n}\n",
     "debuginfod_timeout_ms", "allowed 100..600000", NULL},
    /* syntax */
    {"# c\ndatadir = \"/x\"\n\nadmin_variables = { mysql_ifaces = }\n",
     "admin_variables", "syntax error", NULL},
    /* Not 'datadir "/x"': libconfig 1.5 leaks the string token when the
     * syntax error lands on it, which valgrind would report. */
    {"# c\n\n\ndatadir = = 1\n", "datadir", "syntax error", NULL},
    /* interfaces */
    {"admin_variables =\n{\n\n  mysql_ifaces = \"127.0.0.1:abc\"\n}\n",
     "mysql_ifaces", "not a number", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"127.0.0.1:0\"\n}\n",
     "mysql_ifaces", "1..65535", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"127.0.0.1:70000\"\n}\n",
     "mysql_ifaces", "1..65535", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"127.0.0.1:\"\n}\n",
     "mysql_ifaces", "no port", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"[::1:6032\"\n}\n",
     "mysql_ifaces", "no ']'", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"[::1]6032\"\n}\n",
     "mysql_ifaces", "':port'", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"[1.2.3.4]:6032\"\n}\n",
     "mysql_ifaces", "not an IPv6 address", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"::1:6032\"\n}\n",
     "mysql_ifaces", "brackets", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"/"
     "tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\"\n"
     "}\n",
     "mysql_ifaces", "at most 107", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"./data/h.sock\"\n}\n",
     "mysql_ifaces", "absolute Unix socket path", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"\"\n}\n", "mysql_ifaces",
     "no interface", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \" ; ;\"\n}\n", "mysql_ifaces",
     "no interface", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"a b:1\"\n}\n", "mysql_ifaces",
     "host name", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \":6032\"\n}\n", "mysql_ifaces",
     "no host", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = \"h:1;/s;h:1\"\n}\n",
     "mysql_ifaces", "listed twice", NULL},
    /* credentials */
    {"admin_variables =\n{\n\n  admin_credentials = \"admin:x;hunter2\"\n"
     "}\n",
     "admin_credentials", "item 2 has no ':'", "hunter2"},
    {"admin_variables =\n{\n\n  admin_credentials = \"ad min:hunter2\"\n}\n",
     "admin_credentials", "[A-Za-z0-9_.@-]", "hunter2"},
    {"admin_variables =\n{\n\n  admin_credentials = \":hunter2\"\n}\n",
     "admin_credentials", "1..128", "hunter2"},
    {"admin_variables =\n{\n\n  admin_credentials = \"a:1;b:2;a:hunter2\"\n"
     "}\n",
     "admin_credentials", "user 'a' is defined twice", "hunter2"},
    {"admin_variables =\n{\n  admin_credentials = \"ops:1\"\n"
     "  stats_credentials = \"x:1;ops:hunter2\"\n}\n",
     "stats_credentials", "user 'ops' is defined twice", "hunter2"},
    {"admin_variables =\n{\n\n  admin_credentials = \" ; \"\n}\n",
     "admin_credentials", "at least one admin", NULL},
    /* jemalloc */
    {"jemalloc_variables =\n{\n\n  lg_prof_sample = 63\n}\n", "lg_prof_sample",
     "0..62", NULL},
    {"jemalloc_variables =\n{\n\n  dump_prefix = \"../x\"\n}\n", "dump_prefix",
     "contains '/'", NULL},
    {"jemalloc_variables =\n{\n\n  dirty_decay_ms = -2\n}\n",
     "dirty_decay_ms", "-1..31536000000", NULL},
    {"jemalloc_variables =\n{\n\n  leak_watch_dumps = 1\n}\n",
     "leak_watch_dumps", "2..1000", NULL},
    {"jemalloc_variables =\n{\n\n  dump_prefix = \"a b\"\n}\n", "dump_prefix",
     "[A-Za-z0-9_.-]", NULL},
    /* wrong types */
    {"\n\n\ndatadir = 5\n", "datadir", "must be a string", NULL},
    {"\n\n\ndatadir = \"\"\n", "datadir", "empty", NULL},
    {"\n\n\nerrorlog = [\"a\"]\n", "errorlog", "must be a string", NULL},
    {"jemalloc_variables =\n{\n\n  lg_prof_sample = \"19\"\n}\n",
     "lg_prof_sample", "must be an integer", NULL},
    {"jemalloc_variables =\n{\n\n  lg_prof_interval = 1.5\n}\n",
     "lg_prof_interval", "must be an integer", NULL},
    {"jemalloc_variables =\n{\n\n  prof_active = \"maybe\"\n}\n", "prof_active",
     "must be a boolean", NULL},
    {"jemalloc_variables =\n{\n\n  prof_final = 2\n}\n", "prof_final",
     "must be a boolean", NULL},
    {"jemalloc_variables =\n{\n\n  prof_accum = { }\n}\n", "prof_accum",
     "must be a boolean", NULL},
    {"admin_variables =\n{\n\n  mysql_ifaces = 6032\n}\n", "mysql_ifaces",
     "must be a string", NULL},
    {"\n\n\nadmin_variables = \"admin:admin\"\n", "admin_variables",
     "must be a group", NULL},
    {"\n\n\njemalloc_variables = ( )\n", "jemalloc_variables",
     "must be a group", NULL},
    /* unix socket permissions */
    {"admin_variables =\n{\n\n  unix_socket_mode = \"rw-rw----\"\n}\n",
     "unix_socket_mode", "3 or 4 octal digits", NULL},
    {"admin_variables =\n{\n\n  unix_socket_mode = \"0668\"\n}\n",
     "unix_socket_mode", "not a permission mode", NULL},
    {"admin_variables =\n{\n\n  unix_socket_mode = \"1660\"\n}\n",
     "unix_socket_mode", "not a permission mode", NULL},
};

START_TEST(test_config_errors)
{
    const char *text = error_cases[_i].text;
    int rc;

    ck_assert_int_eq(
        ha_config_load_string(&cfg, nondefault_cnf, NAME, err, sizeof(err)), 0);
    err[0] = '\0';
    rc = ha_config_load_string(&cfg, text, "bad.cnf", err, sizeof(err));
    ck_assert_msg(rc == -1, "case %d loaded:\n%s", _i, text);
    ck_assert_msg(strncmp(err, "bad.cnf:4: ", strlen("bad.cnf:4: ")) == 0,
                  "case %d: '%s' does not start with 'bad.cnf:4: '", _i, err);
    ck_assert_msg(strstr(err, error_cases[_i].key) != NULL,
                  "case %d: '%s' does not name '%s'", _i, err,
                  error_cases[_i].key);
    ck_assert_msg(strstr(err, error_cases[_i].what) != NULL,
                  "case %d: '%s' does not say '%s'", _i, err,
                  error_cases[_i].what);
    if (error_cases[_i].never != NULL)
        ck_assert_msg(strstr(err, error_cases[_i].never) == NULL,
                      "case %d: '%s' reveals '%s'", _i, err,
                      error_cases[_i].never);
    assert_defaults(&cfg);
}
END_TEST

START_TEST(test_config_error_null_err_buffer)
{
    /* ha_err_set is NULL-tolerant; so must the loader be. */
    ck_assert_int_eq(ha_config_load_string(&cfg, "datadir = 5", NAME, NULL, 0),
                     -1);
    assert_defaults(&cfg);
}
END_TEST

/* ------------------------------------------------------------------------
 * Suite
 * --------------------------------------------------------------------- */

static Suite *
config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_config_init_defaults);
    tcase_add_test(tc, test_config_write_round_trip);
    tcase_add_test(tc, test_config_unix_socket_mode);
    tcase_add_test(tc, test_config_empty_text_gives_defaults);
    tcase_add_test(tc, test_config_sample_quickstart);
    tcase_add_test(tc, test_config_sample_production);
    tcase_add_test(tc, test_config_sample_jemalloc_example);
    tcase_add_test(tc, test_config_leak_watch);
    tcase_add_test(tc, test_config_limit_watch);
    tcase_add_test(tc, test_config_proxysql_cnf);
    tcase_add_test(tc, test_config_all_keys);
    tcase_add_loop_test(tc, test_config_bool_forms, 0,
                        (int)HA_ARRAY_SIZE(bool_forms));
    tcase_add_test(tc, test_config_reload_replaces);
    tcase_add_test(tc, test_config_null_name);
    tcase_add_test(tc, test_config_log_runs);
    tcase_add_test(tc, test_config_typo_key_suggests);
    tcase_add_test(tc, test_config_proxysql_keys_notice);
    tcase_add_test(tc, test_credentials_parse_and_find);
    tcase_add_test(tc, test_credentials_escaped_semicolon);
    tcase_add_test(tc, test_credentials_hashed);
    tcase_add_test(tc, test_credentials_default_policy);
    tcase_add_test(tc, test_config_default_exposed);
    tcase_add_test(tc, test_credentials_mask);
    tcase_add_test(tc, test_config_parse_ifaces_direct);
    tcase_add_test(tc, test_config_load_file_missing);
    tcase_add_test(tc, test_config_include_relative);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_config_limits, 0,
                        (int)HA_ARRAY_SIZE(limit_cases));
    tcase_add_test(tc, test_config_length_limits);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_config_errors, 0,
                        (int)HA_ARRAY_SIZE(error_cases));
    tcase_add_test(tc, test_config_error_null_err_buffer);
    tcase_add_test(tc, test_credentials_hashed_errors);
    suite_add_tcase(s, tc);

    return s;
}

HA_CHECK_MAIN(config_suite)
