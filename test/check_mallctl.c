/* SPDX-License-Identifier: MIT
 *
 * The jemalloc layer below the virtual tables: errno-to-message text
 * (pure), dump-directory reasons, value parsers, the typed accessors and
 * profconf over the fake backend, and one TCase on the real jemalloc this
 * binary runs on (started without prof:true).
 *
 * TCase "real_jemalloc" needs jemalloc to be the allocator. The sanitizer
 * build (HA_SANITIZERS) replaces malloc, so that TCase is not added there;
 * run it alone with CK_RUN_CASE=real_jemalloc.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <time.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include "check_main.h"
#include "fake_mallctl.h"
#include "core/log.h"
#include "heap/dumpfiles.h"
#include "heap/profconf.h"
#include "core/util.h"
#include "heap/value.h"

#define ck_assert_has(hay, needle)                                        \
    ck_assert_msg(strstr((hay), (needle)) != NULL,                        \
                  "\"%s\" lacks \"%s\"", (hay), (needle))

/* ------------------------------------------------------------------
 * errno -> operator message
 * ------------------------------------------------------------------ */

static const char *
msg_for(int errnum, const char *mallctl, const char *variable,
        const char *value, const char *allowed, bool prof_built)
{
    static char err[1024];
    struct ha_mallctl_failure f = {
        .errnum = errnum,
        .mallctl = mallctl,
        .variable = variable,
        .value = value,
        .allowed = allowed,
        .prof_built = prof_built,
    };

    ha_mallctl_errmsg(&f, err, sizeof(err));
    return err;
}

START_TEST(test_mallctl_errmsg_enoent_prof)
{
    const char *m = msg_for(ENOENT, "prof.active", "jemalloc-prof_active",
                            "true", NULL, true);

    ck_assert_str_eq(m,
                     "jemalloc-prof_active = 'true': heap profiling is not "
                     "available in this process (opt.prof=false): start "
                     "the process with prof:true in MALLOC_CONF, e.g. "
                     "MALLOC_CONF=prof:true,prof_active:false,"
                     "prof_time_resolution:high (for an agent, in the "
                     "service's environment)");
    /* Every profiling mallctl family gets the same advice. */
    ck_assert_has(msg_for(ENOENT, "prof.dump", "jemalloc-dump_now", "true",
                          NULL, true),
                  "jemalloc-dump_now = 'true': heap profiling is not "
                  "available");
    ck_assert_has(msg_for(ENOENT, "experimental.hooks.prof_dump", NULL, NULL,
                          NULL, true),
                  "experimental.hooks.prof_dump: heap profiling");
    ck_assert_has(msg_for(ENOENT, "thread.prof.active", NULL, "1", NULL,
                          true),
                  "opt.prof=false");
    /* A jemalloc built without --enable-prof: say that instead. */
    m = msg_for(ENOENT, "prof.active", "jemalloc-prof_active", "true", NULL,
                false);
    ck_assert_has(m, "jemalloc-prof_active = 'true': heap profiling is not "
                     "available: this jemalloc was built without "
                     "--enable-prof (config.prof=false)");
    ck_assert_has(msg_for(ENOENT, "opt.prof_final", "jemalloc-prof_final",
                          NULL, NULL, false),
                  "built without --enable-prof");
}
END_TEST

START_TEST(test_mallctl_errmsg_enoent_other)
{
    ck_assert_str_eq(msg_for(ENOENT, "stats.mapped", "mapped", NULL, NULL,
                             true),
                     "mapped: statistics are not available: this jemalloc "
                     "was built without --enable-stats (mallctl "
                     "stats.mapped)");
    ck_assert_str_eq(msg_for(ENOENT, "experimental.foo", NULL, NULL, NULL,
                             true),
                     "experimental.foo: this jemalloc has no mallctl "
                     "'experimental.foo' (ENOENT)");
    /* opt.prof_* exists whenever profiling is built in. */
    ck_assert_has(msg_for(ENOENT, "opt.prof_stats", NULL, NULL, NULL, true),
                  "has no mallctl 'opt.prof_stats'");
}
END_TEST

START_TEST(test_mallctl_errmsg_einval_eperm_eagain_efault)
{
    ck_assert_str_eq(msg_for(EINVAL, "prof.reset",
                             "jemalloc-lg_prof_sample", "99", "0..62", true),
                     "jemalloc-lg_prof_sample = '99': invalid value; "
                     "allowed: 0..62");
    ck_assert_str_eq(msg_for(EINVAL, "prof.active", NULL, "x", NULL, true),
                     "prof.active = 'x': jemalloc rejected the call to "
                     "prof.active as invalid (EINVAL)");
    ck_assert_str_eq(msg_for(EPERM, "opt.prof", "jemalloc-prof", "true",
                             NULL, true),
                     "jemalloc-prof = 'true': jemalloc-prof is read-only and "
                     "cannot be changed at run time");
    ck_assert_str_eq(msg_for(EPERM, "prof.dump", NULL, NULL, NULL, true),
                     "prof.dump: prof.dump is write-only and cannot be read");
    ck_assert_str_eq(msg_for(EAGAIN, "prof.gdump", "jemalloc-prof_gdump",
                             "true", NULL, true),
                     "jemalloc-prof_gdump = 'true': jemalloc ran out of "
                     "memory while doing it (EAGAIN); nothing was changed, "
                     "try again");
    ck_assert_has(msg_for(EFAULT, "prof.prefix", NULL, "/x", NULL, true),
                  "prof.prefix = '/x': jemalloc could not complete "
                  "prof.prefix (EFAULT");
    ck_assert_has(msg_for(EIO, "prof.active", NULL, "1", NULL, true),
                  "mallctl prof.active failed: ");
    ck_assert_has(msg_for(EIO, "prof.active", NULL, "1", NULL, true),
                  "(errno 5)");
}
END_TEST

START_TEST(test_mallctl_errmsg_null_buffer)
{
    struct ha_mallctl_failure f = {.errnum = ENOENT, .mallctl = "prof.x"};

    ha_mallctl_errmsg(&f, NULL, 0); /* must not crash */
}
END_TEST

/* ------------------------------------------------------------------
 * Dump directory reasons and dump messages
 * ------------------------------------------------------------------ */

static struct ha_mallctl_dirstate
dir_ok(const char *dir)
{
    struct ha_mallctl_dirstate st;

    memset(&st, 0, sizeof(st));
    snprintf(st.dir, sizeof(st.dir), "%s", dir);
    st.is_dir = true;
    st.have_statvfs = true;
    st.bytes_free = 10ULL << 30;
    st.files_free = 1000;
    return st;
}

START_TEST(test_mallctl_dir_problem_reasons)
{
    static const struct {
        int stat_errno, access_errno;
        bool is_dir;
        unsigned long long bytes, files;
        const char *want;
    } cases[] = {
        {ENOENT, 0, false, 0, 0, "directory '/d' does not exist"},
        {ENOTDIR, 0, false, 0, 0, "directory '/d' does not exist"},
        {EACCES, 0, false, 0, 0,
         "directory '/d' cannot be reached (permission denied on a parent "
         "directory)"},
        {ELOOP, 0, false, 0, 0, "directory '/d' cannot be checked: "},
        {0, 0, false, 1 << 30, 10, "'/d' is not a directory"},
        {0, EROFS, true, 1 << 30, 10,
         "directory '/d' is on a read-only file system"},
        {0, EACCES, true, 1 << 30, 10,
         "directory '/d' is not writable by this process (permission "
         "denied)"},
        {0, EIO, true, 1 << 30, 10, "directory '/d' is not writable: "},
        {0, 0, true, 4096, 10,
         "the disk holding '/d' is full (4096 bytes free)"},
        {0, 0, true, 1 << 30, 0,
         "the file system holding '/d' has no free inodes"},
    };
    char reason[512];

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        struct ha_mallctl_dirstate st = dir_ok("/d");

        st.stat_errno = cases[i].stat_errno;
        st.access_errno = cases[i].access_errno;
        st.is_dir = cases[i].is_dir;
        st.bytes_free = cases[i].bytes;
        st.files_free = cases[i].files;
        ck_assert_msg(ha_mallctl_dir_problem(&st, reason, sizeof(reason)),
                      "case %zu: no problem found", i);
        ck_assert_msg(strstr(reason, cases[i].want) != NULL,
                      "case %zu: \"%s\" lacks \"%s\"", i, reason,
                      cases[i].want);
    }
    {
        struct ha_mallctl_dirstate st = dir_ok("/d");

        ck_assert(!ha_mallctl_dir_problem(&st, reason, sizeof(reason)));
        st.have_statvfs = false; /* unknown space is not "full" */
        st.bytes_free = 0;
        ck_assert(!ha_mallctl_dir_problem(&st, reason, sizeof(reason)));
    }
}
END_TEST

START_TEST(test_mallctl_dump_errmsg)
{
    struct ha_mallctl_dirstate before = dir_ok("/data");
    struct ha_mallctl_dirstate after = dir_ok("/data");
    struct ha_mallctl_dirstate missing = dir_ok("/data");
    char err[1024];

    missing.stat_errno = ENOENT;
    /* Refused before the dump: the directory and the name pattern. */
    ha_mallctl_dump_errmsg(EFAULT, "jemalloc-dump_now", NULL,
                           "/data/proxysql", true, &missing, NULL, false, err,
                           sizeof(err));
    ck_assert_str_eq(err, "jemalloc-dump_now: cannot write the heap profile "
                          "'/data/proxysql.<pid>.<seq>.m<mseq>.heap': "
                          "directory '/data' does not exist");

    /* Disk filled up during the dump: named file, after-state reason. */
    after.bytes_free = 0;
    ha_mallctl_dump_errmsg(EFAULT, "jemalloc-dump_now",
                           "/data/proxysql.1.0.m0.heap", "/data/proxysql",
                           true, &before, &after, true, err, sizeof(err));
    ck_assert_str_eq(err, "jemalloc-dump_now: writing the heap profile "
                          "'/data/proxysql.1.0.m0.heap' failed: the disk "
                          "holding '/data' is full (0 bytes free); the "
                          "partial file was removed");

    /* Nothing visible is wrong: say so, with the facts. */
    ha_mallctl_dump_errmsg(EFAULT, "jemalloc-dump_now",
                           "/data/proxysql.1.0.m0.heap", "/data/proxysql",
                           true, &before, &before, false, err, sizeof(err));
    ck_assert_has(err, "jemalloc could not write the heap profile "
                       "'/data/proxysql.1.0.m0.heap' (EFAULT), although "
                       "directory '/data' exists, is writable and has "
                       "10737418240 bytes free");
    ck_assert(strstr(err, "partial") == NULL);

    /* Profiling off, not built, empty prefix, another errno. */
    ha_mallctl_dump_errmsg(ENOENT, "jemalloc-dump_now", NULL, NULL, true,
                           NULL, NULL, false, err, sizeof(err));
    ck_assert_has(err, "jemalloc-dump_now: no heap profile written: heap "
                       "profiling is not available in this process "
                       "(opt.prof=false)");
    ha_mallctl_dump_errmsg(ENOENT, "jemalloc-dump_now", NULL, NULL, false,
                           NULL, NULL, false, err, sizeof(err));
    ck_assert_has(err, "built without --enable-prof");
    ha_mallctl_dump_errmsg(EFAULT, "jemalloc-dump_now", NULL, "", true, NULL,
                           NULL, false, err, sizeof(err));
    ck_assert_has(err, "jemalloc's prof_prefix is empty");
    ha_mallctl_dump_errmsg(EIO, "jemalloc-dump_now", "/data/x.heap",
                           "/data/x", true, &before, &before, true, err,
                           sizeof(err));
    ck_assert_has(err, "writing the heap profile '/data/x.heap' failed: ");
    ck_assert_has(err, "(errno 5); the partial file was removed");
}
END_TEST

START_TEST(test_mallctl_dir_probe)
{
    char dir[] = "/tmp/check_mallctl.XXXXXX";
    char path[PATH_MAX];
    struct ha_mallctl_dirstate st;
    char reason[512];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/proxysql", dir);
    ha_mallctl_dir_probe(path, &st);
    ck_assert_str_eq(st.dir, dir);
    ck_assert_int_eq(st.stat_errno, 0);
    ck_assert(st.is_dir);
    ck_assert(st.have_statvfs);
    ck_assert(!ha_mallctl_dir_problem(&st, reason, sizeof(reason)));

    snprintf(path, sizeof(path), "%s/nope/proxysql", dir);
    ha_mallctl_dir_probe(path, &st);
    ck_assert_int_eq(st.stat_errno, ENOENT);

    ha_mallctl_dir_probe("proxysql", &st);
    ck_assert_str_eq(st.dir, ".");
    ha_mallctl_dir_probe("/proxysql", &st);
    ck_assert_str_eq(st.dir, "/");
    rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------
 * Value parsers
 * ------------------------------------------------------------------ */

START_TEST(test_value_parse_bool)
{
    static const struct {
        const char *in;
        int rc;
        bool out;
    } cases[] = {
        {"true", 0, true},   {"TRUE", 0, true},   {"True", 0, true},
        {"1", 0, true},      {"on", 0, true},     {"ON", 0, true},
        {"false", 0, false}, {"FALSE", 0, false}, {"0", 0, false},
        {"off", 0, false},   {"Off", 0, false},   {" on\t", 0, true},
        {"", -1, false},     {"yes", -1, false},  {"no", -1, false},
        {"2", -1, false},    {"01", -1, false},   {"truee", -1, false},
        {"t", -1, false},    {"o n", -1, false},  {"-1", -1, false},
        {"falsefalse", -1, false},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        bool b = !cases[i].out;
        int rc = ha_value_parse_bool(cases[i].in, &b);

        ck_assert_msg(rc == cases[i].rc, "case %zu '%s': rc %d, want %d", i,
                      cases[i].in, rc, cases[i].rc);
        if (rc == 0)
            ck_assert_msg(b == cases[i].out, "case %zu '%s': got %d", i,
                          cases[i].in, b);
    }
    {
        bool b = true;

        ck_assert_int_eq(ha_value_parse_bool(NULL, &b), -1);
        ck_assert(b); /* untouched on error */
    }
    ck_assert_str_eq(ha_value_bool_str(true), "true");
    ck_assert_str_eq(ha_value_bool_str(false), "false");
}
END_TEST

START_TEST(test_value_parse_int)
{
    static const struct {
        const char *in;
        int rc;
        long long out;
    } cases[] = {
        {"0", 0, 0},        {"62", 0, 62},     {"19", 0, 19},
        {" 20 ", 0, 20},    {"+7", 0, 7},      {"63", -1, 0},
        {"-1", -1, 0},      {"", -1, 0},       {"  ", -1, 0},
        {"abc", -1, 0},     {"19x", -1, 0},    {"0x10", -1, 0},
        {"1 9", -1, 0},     {"1e3", -1, 0},    {"99999999999999999999", -1, 0},
        {"- 1", -1, 0},
    };

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        long long v = -99;
        int rc = ha_value_parse_int(cases[i].in, 0, 62, &v);

        ck_assert_msg(rc == cases[i].rc, "case %zu '%s': rc %d, want %d", i,
                      cases[i].in, rc, cases[i].rc);
        if (rc == 0)
            ck_assert_msg(v == cases[i].out, "case %zu '%s': got %lld", i,
                          cases[i].in, v);
        else
            ck_assert_int_eq(v, -99);
    }
    {
        long long v;

        ck_assert_int_eq(ha_value_parse_int("-1", -1, 62, &v), 0);
        ck_assert_int_eq(v, -1);
        ck_assert_int_eq(ha_value_parse_int(NULL, 0, 1, &v), -1);
    }
}
END_TEST

START_TEST(test_value_format_lg_bytes)
{
    static const struct {
        unsigned lg;
        const char *want;
    } cases[] = {
        {0, "1 B"},      {3, "8 B"},     {10, "1 KiB"}, {19, "512 KiB"},
        {20, "1 MiB"},   {30, "1 GiB"},  {62, "4 EiB"}, {63, "2^63 B"},
    };
    char buf[32];

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        ha_value_format_lg_bytes(cases[i].lg, buf, sizeof(buf));
        ck_assert_str_eq(buf, cases[i].want);
    }
}
END_TEST

/* ------------------------------------------------------------------
 * Typed accessors over the fake
 * ------------------------------------------------------------------ */

START_TEST(test_mallctl_typed_accessors)
{
    bool b = true, old = true;
    size_t z = 0;
    ssize_t s = 0;
    uint64_t u = 0;
    unsigned n = 0;
    const char *str = NULL;

    fake_reset(true);
    ck_assert_int_eq(ha_mallctl_read_bool(&fake_ops, "prof.active", &b), 0);
    ck_assert(!b);
    ck_assert_int_eq(ha_mallctl_read_size(&fake_ops, "stats.resident", &z),
                     0);
    ck_assert_uint_eq(z, 5000);
    ck_assert_int_eq(
        ha_mallctl_read_ssize(&fake_ops, "opt.lg_prof_interval", &s), 0);
    ck_assert_int_eq(s, -1);
    ck_assert_int_eq(ha_mallctl_read_u64(&fake_ops,
                                         "stats.background_thread.num_runs",
                                         &u),
                     0);
    ck_assert_uint_eq(u, 9);
    ck_assert_int_eq(ha_mallctl_read_unsigned(&fake_ops, "arenas.narenas",
                                              &n),
                     0);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(ha_mallctl_read_str(&fake_ops, "version", &str), 0);
    ck_assert_str_eq(str, "5.3.0-fake");

    /* Wrong type = wrong size: EINVAL, out untouched. */
    z = 77;
    ck_assert_int_eq(ha_mallctl_read_size(&fake_ops, "prof.active", &z),
                     EINVAL);
    ck_assert_uint_eq(z, 77);
    ck_assert_int_eq(ha_mallctl_read_bool(&fake_ops, "no.such", &b), ENOENT);
    ck_assert_int_eq(ha_mallctl_read_bool(&fake_ops, "prof.dump", &b), EPERM);

    /* Writes, with the old value from the same call. */
    ck_assert_int_eq(ha_mallctl_write_bool(&fake_ops, "prof.active", true,
                                           &old),
                     0);
    ck_assert(!old);
    ck_assert(fake_get("prof.active")->v.b);
    ck_assert_int_eq(ha_mallctl_write_bool(&fake_ops, "opt.prof", false,
                                           NULL),
                     EPERM);
    ck_assert_int_eq(ha_mallctl_write_size(&fake_ops, "prof.reset", 21), 0);
    ck_assert_uint_eq(fake_get("prof.lg_sample")->v.z, 21);
    ck_assert_int_eq(ha_mallctl_action(&fake_ops, "prof.reset"), 0);
    ck_assert_uint_eq(fake_get("prof.lg_sample")->v.z, 21);
    ck_assert_int_eq(ha_mallctl_action(&fake_ops, HA_MALLCTL_PURGE_ALL), 0);
    ck_assert_uint_eq(fake_get("arena.4096.purge")->n_writes, 1);
    ck_assert_int_eq(ha_mallctl_epoch(&fake_ops), 0);
    ck_assert_uint_eq(fake_get("epoch")->n_writes, 1);
    ck_assert(ha_mallctl_prof_built(&fake_ops));
    ck_assert(ha_mallctl_prof_enabled(&fake_ops));

    /* prof.prefix is write-only: remembered; opt.prof_prefix otherwise. */
    {
        char prefix[PATH_MAX];

        ck_assert_int_eq(ha_mallctl_prof_prefix(&fake_ops, prefix,
                                                sizeof(prefix)),
                         0);
        ck_assert_str_eq(prefix, "jeprof");
        ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, "/v/p"), 0);
        ck_assert_str_eq(fake_get("prof.prefix")->str, "/v/p");
        ck_assert_int_eq(ha_mallctl_prof_prefix(&fake_ops, prefix,
                                                sizeof(prefix)),
                         0);
        ck_assert_str_eq(prefix, "/v/p");
        /* Not remembered when jemalloc refused it. */
        fake_get("opt.prof")->v.b = false;
        ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, "/w/q"),
                         ENOENT);
        ck_assert_int_eq(ha_mallctl_prof_prefix(&fake_ops, prefix,
                                                sizeof(prefix)),
                         0);
        ck_assert_str_eq(prefix, "/v/p");
        ck_assert(!ha_mallctl_prof_enabled(&fake_ops));
    }
}
END_TEST

/* What prof.dump saw of fds 0-2: 1 open, 0 closed. */
static int dump_saw_std[3];

static int
std_probe_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
                  size_t newlen)
{
    (void)oldp;
    (void)oldlenp;
    (void)newp;
    (void)newlen;
    if (strcmp(name, "prof.dump") == 0)
        for (int k = 0; k < 3; k++)
            dump_saw_std[k] = fcntl(k, F_GETFD) != -1;
    return 0;
}

/* A host that closed stdin and stderr: while prof.dump runs, 0 and 2 are
 * held (so the dump cannot become the host's fd 0-2 and jemalloc's leak
 * report cannot land in it), and they are closed again afterwards. In a
 * child, so the test runner's own descriptors are left alone. */
START_TEST(test_mallctl_dump_never_takes_std_fds)
{
    struct ha_mallctl_ops ops = {.mallctl = std_probe_mallctl};
    pid_t pid = fork();
    int status = 0;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int bad = 0;

        close(0);
        close(2);
        if (ha_mallctl_dump_to(&ops, "/nonexistent/x.heap") != 0)
            bad |= 1;
        if (!dump_saw_std[0] || !dump_saw_std[1] || !dump_saw_std[2])
            bad |= 2;
        if (fcntl(0, F_GETFD) != -1 || fcntl(2, F_GETFD) != -1)
            bad |= 4;
        if (fcntl(1, F_GETFD) == -1)
            bad |= 8;
        _exit(bad);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_msg(WEXITSTATUS(status) == 0,
                  "child: %d (2: fds not held during the dump, 4: not "
                  "closed after, 8: stdout lost)",
                  WEXITSTATUS(status));
}
END_TEST

/* Regular files in dir[/sub] (sub NULL: dir itself; a subdirectory of
 * earlier-runs counts its files). */
static int
count_files(const char *dir, const char *sub)
{
    char path[PATH_MAX], inner[PATH_MAX + 256];
    struct dirent *de;
    struct stat st;
    int n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "%s%s%s", dir, sub ? "/" : "",
             sub ? sub : "");
    if ((d = opendir(path)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
                                     strcmp(de->d_name, "..") == 0))
            continue;
        snprintf(inner, sizeof(inner), "%s/%s", path, de->d_name);
        if (lstat(inner, &st) != 0)
            continue;
        if (S_ISREG(st.st_mode))
            n++;
        else if (S_ISDIR(st.st_mode) && sub != NULL)
            n += count_files(path, de->d_name);
    }
    closedir(d);
    return n;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void
rm_tree(const char *dir)
{
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static const char *
read_small(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    size_t n;

    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

START_TEST(test_mallctl_dump_over_fake)
{
    char dir[] = "/tmp/check_mallctl.XXXXXX";
    char prefix[PATH_MAX], file[PATH_MAX], want[PATH_MAX + 64], err[1024];

    fake_reset(true);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof(prefix), "%s/proxysql", dir);
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, prefix), 0);
    ck_assert_int_eq(ha_mallctl_dump(&fake_ops, "dump", file, sizeof(file),
                                     err, sizeof(err)),
                     0);
    snprintf(want, sizeof(want), "%s.%ld.0.m0.heap", prefix, (long)getpid());
    ck_assert_str_eq(file, want);
    ck_assert_int_eq(access(file, R_OK), 0);
    /* Written in the staging directory, then published whole: nothing
     * stays behind, and jemalloc's prefix is the datadir's again. */
    ck_assert_int_eq(count_files(dir, HA_DUMPFILES_STAGING), 0);
    ck_assert_str_eq(fake_get("prof.prefix")->str, prefix);
    unlink(file);

    /* jemalloc failing after creating the file: gone afterwards. */
    fake_get("prof.dump")->fail_errno = EFAULT;
    ck_assert_int_eq(ha_mallctl_dump(&fake_ops, "dump", file, sizeof(file),
                                     err, sizeof(err)),
                     -1);
    snprintf(want, sizeof(want), "%s.%ld.1.m1.heap", prefix, (long)getpid());
    ck_assert_has(err, want);
    ck_assert_has(err, "the partial file was removed");
    ck_assert_int_ne(access(want, F_OK), 0);
    ck_assert_int_eq(count_files(dir, HA_DUMPFILES_STAGING), 0);
    ck_assert_str_eq(fake_get("prof.prefix")->str, prefix);
    rm_tree(dir);
}
END_TEST

/* Publishing never replaces a file: an earlier run's dump under the same
 * name (same pid after a restart) is moved to earlier-runs first. */
START_TEST(test_dumpfiles_publish_keeps_earlier)
{
    char dir[] = "/tmp/check_dumpfiles.XXXXXX";
    char prefix[PATH_MAX], staged[PATH_MAX], path[PATH_MAX + 64];
    char out[PATH_MAX + 64];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof(prefix), "%s/proxysql", dir);
    ck_assert_int_eq(ha_dumpfiles_staging_prefix(prefix, staged,
                                                 sizeof(staged)),
                     0);
    snprintf(path, sizeof(path), "%s.1.0.m0.heap", staged);
    write_file(path, "new run");
    snprintf(out, sizeof(out), "%s/proxysql.1.0.m0.heap", dir);
    write_file(out, "earlier run");
    ck_assert_int_eq(ha_dumpfiles_publish(path, dir, out, sizeof(out)), 0);
    ck_assert_str_eq(read_small(out), "new run");
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(count_files(dir, HA_DUMPFILES_EARLIER), 1);
    /* A symlink planted at the staging name is refused, never followed. */
    rm_tree(dir);
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof(prefix), "%s/proxysql", dir);
    snprintf(path, sizeof(path), "%s/%s", dir, HA_DUMPFILES_STAGING);
    ck_assert_int_eq(symlink("/tmp", path), 0);
    ck_assert_int_eq(ha_dumpfiles_staging_prefix(prefix, staged,
                                                 sizeof(staged)),
                     ENOTDIR);
    rm_tree(dir);
}
END_TEST

/* Start-up: an earlier run's files under this pid (older than this
 * process) move to earlier-runs, this run's stay; a staged dump of a
 * process that is gone is removed, one of a live process is not. */
START_TEST(test_dumpfiles_start)
{
    char dir[] = "/tmp/check_dumpfiles.XXXXXX";
    char prefix[PATH_MAX], staged[PATH_MAX], path[PATH_MAX + 64];
    struct timespec old[2] = {{.tv_sec = time(NULL) - 3600},
                              {.tv_sec = time(NULL) - 3600}};
    long me = (long)getpid();
    pid_t dead;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof(prefix), "%s/proxysql", dir);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s.%ld.%d.m%d.heap", prefix, me, i, i);
        write_file(path, "earlier");
        ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
    }
    snprintf(path, sizeof(path), "%s.%ld.0.m0.heap.sym", prefix, me);
    write_file(path, "earlier sidecar");
    ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
    snprintf(path, sizeof(path), "%s.%ld.5.i0.heap", prefix, me);
    write_file(path, "this run");
    snprintf(path, sizeof(path), "%s.%ld.0.m0.heap", prefix, me + 1);
    write_file(path, "another pid");
    ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);

    ck_assert_int_eq(ha_dumpfiles_staging_prefix(prefix, staged,
                                                 sizeof(staged)),
                     0);
    if ((dead = fork()) == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    snprintf(path, sizeof(path), "%s.%ld.0.m0.heap", staged, (long)dead);
    write_file(path, "half a dump");
    snprintf(path, sizeof(path), "%s.1.0.m0.heap", staged);
    write_file(path, "pid 1 is alive: its dump is in progress");

    ck_assert_int_eq(ha_dumpfiles_start(prefix, me), 4);
    ck_assert_int_eq(count_files(dir, NULL), 2); /* this run, other pid */
    ck_assert_int_eq(count_files(dir, HA_DUMPFILES_STAGING), 1);
    snprintf(path, sizeof(path), "%s.1.0.m0.heap", staged);
    ck_assert_int_eq(access(path, F_OK), 0);
    /* Again: nothing more to move (this run's file is too new). */
    ck_assert_int_eq(ha_dumpfiles_start(prefix, me), 0);
    rm_tree(dir);
}
END_TEST

/* Retention: oldest first, sidecars with their dump, the newest always
 * kept, other stems and names left alone. */
START_TEST(test_dumpfiles_retain)
{
    char dir[] = "/tmp/check_dumpfiles.XXXXXX";
    char prefix[PATH_MAX], path[PATH_MAX + 64];
    time_t base = time(NULL) - 1000;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof(prefix), "%s/proxysql", dir);
    for (int i = 0; i < 5; i++) {
        struct timespec ts[2] = {{.tv_sec = base + i}, {.tv_sec = base + i}};

        snprintf(path, sizeof(path), "%s.42.%d.i%d.heap", prefix, i, i);
        write_file(path, "0123456789"); /* 10 bytes */
        ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
        snprintf(path, sizeof(path), "%s.42.%d.i%d.heap.buildid", prefix, i,
                 i);
        write_file(path, "01234"); /* 5 bytes */
    }
    snprintf(path, sizeof(path), "%s/other.42.0.i0.heap", dir);
    write_file(path, "not ours");
    snprintf(path, sizeof(path), "%s/notes.txt", dir);
    write_file(path, "not a dump");

    ck_assert_int_eq(ha_dumpfiles_retain(prefix, 0, 0), 0);
    ck_assert_int_eq(ha_dumpfiles_retain(prefix, 3, 0), 2);
    ck_assert_int_eq(count_files(dir, NULL), 3 * 2 + 2);
    snprintf(path, sizeof(path), "%s.42.0.i0.heap", prefix);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s.42.1.i1.heap.buildid", prefix);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* 3 x 15 bytes kept; 31 allows two. */
    ck_assert_int_eq(ha_dumpfiles_retain(prefix, 0, 31), 1);
    ck_assert_int_eq(count_files(dir, NULL), 2 * 2 + 2);
    /* The newest stays even when it alone is over the limit. */
    ck_assert_int_eq(ha_dumpfiles_retain(prefix, 0, 1), 1);
    snprintf(path, sizeof(path), "%s.42.4.i4.heap", prefix);
    ck_assert_int_eq(access(path, F_OK), 0);
    ck_assert_int_eq(count_files(dir, NULL), 1 * 2 + 2);
    ck_assert_int_gt(ha_dumpfiles_free_bytes(prefix), 0);
    /* Only jemalloc's automatic kinds, this pid, newer than since. */
    snprintf(path, sizeof(path), "%s.42.5.m0.heap", prefix);
    write_file(path, "manual");
    ck_assert_int_eq(ha_dumpfiles_drop_automatic(prefix, 42, base + 100), 0);
    ck_assert_int_eq(ha_dumpfiles_drop_automatic(prefix, 43, 0), 0);
    ck_assert_int_eq(ha_dumpfiles_drop_automatic(prefix, 42, 0), 1);
    ck_assert_int_eq(access(path, F_OK), 0);
    rm_tree(dir);
}
END_TEST

/* ------------------------------------------------------------------
 * profconf
 * ------------------------------------------------------------------ */

static struct ha_jemalloc_config
jc_unset(void)
{
    struct ha_jemalloc_config jc = {
        .prof_active = HA_UNSET,
        .lg_prof_sample = HA_UNSET,
        .lg_prof_interval = HA_LG_INTERVAL_UNSET,
        .prof_gdump = HA_UNSET,
        .prof_final = HA_UNSET,
        .prof_leak = HA_UNSET,
        .prof_accum = HA_UNSET,
        .dump_prefix = "proxysql",
        .dirty_decay_ms = HA_DECAY_UNSET,
        .muzzy_decay_ms = HA_DECAY_UNSET,
        .leak_watch_lg_prof_sample = HA_UNSET,
    };

    return jc;
}

START_TEST(test_profconf_init_only_conf)
{
    struct ha_jemalloc_config jc = jc_unset();
    char out[256];

    ck_assert_int_eq(ha_profconf_init_only_conf(&jc, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "");
    jc.lg_prof_interval = 20;
    jc.prof_final = 1;
    ck_assert_int_eq(ha_profconf_init_only_conf(&jc, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "lg_prof_interval:20,prof_final:true");
    jc.lg_prof_interval = -1;
    jc.prof_accum = 0;
    jc.prof_leak = 1;
    ck_assert_int_eq(ha_profconf_init_only_conf(&jc, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "lg_prof_interval:-1,prof_accum:false,"
                          "prof_final:true,prof_leak:true");
    /* Runtime options never appear here. */
    jc = jc_unset();
    jc.prof_active = 1;
    jc.lg_prof_sample = 20;
    ck_assert_int_eq(ha_profconf_init_only_conf(&jc, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "");
    jc.prof_final = 1;
    ck_assert_int_eq(ha_profconf_init_only_conf(&jc, out, 8), -1);
}
END_TEST

START_TEST(test_profconf_conf_has_key)
{
    ck_assert(ha_profconf_conf_has_key("prof:true,lg_prof_interval:20",
                                       "lg_prof_interval"));
    ck_assert(ha_profconf_conf_has_key("lg_prof_interval:20", "lg_prof_interval"));
    ck_assert(!ha_profconf_conf_has_key("prof:true", "prof_final"));
    ck_assert(!ha_profconf_conf_has_key("prof_final_x:1", "prof_final"));
    ck_assert(!ha_profconf_conf_has_key("xprof_final:1", "prof_final"));
    ck_assert(!ha_profconf_conf_has_key("prof_final", "prof_final"));
    ck_assert(!ha_profconf_conf_has_key("", "prof"));
    ck_assert(!ha_profconf_conf_has_key(NULL, "prof"));
    ck_assert(ha_profconf_conf_has_key("a:1,,prof:true", "prof"));
}
END_TEST

START_TEST(test_profconf_reexec_conf)
{
    struct ha_jemalloc_config jc = jc_unset();
    struct ha_profconf_opts cur = {.lg_prof_interval = -1};
    char out[256];

    /* Nothing wanted: no re-exec. */
    ck_assert_int_eq(ha_profconf_reexec_conf(&jc, &cur, "prof:true", out,
                                             sizeof(out)),
                     0);
    ck_assert_str_eq(out, "");
    /* Wanted and different: ours first, the operator's after. */
    jc.lg_prof_interval = 20;
    jc.prof_leak = 1;
    ck_assert_int_eq(ha_profconf_reexec_conf(&jc, &cur,
                                             "prof:true,prof_active:false",
                                             out, sizeof(out)),
                     0);
    ck_assert_str_eq(out, "lg_prof_interval:20,prof_leak:true,prof:true,"
                          "prof_active:false");
    ck_assert_int_eq(ha_profconf_reexec_conf(&jc, &cur, NULL, out,
                                             sizeof(out)),
                     0);
    ck_assert_str_eq(out, "lg_prof_interval:20,prof_leak:true");
    /* Already in effect: no re-exec. */
    cur.lg_prof_interval = 20;
    cur.prof_leak = true;
    ck_assert_int_eq(ha_profconf_reexec_conf(&jc, &cur, NULL, out,
                                             sizeof(out)),
                     0);
    ck_assert_str_eq(out, "");
    /* The operator set it: they win, no re-exec for it. */
    cur.lg_prof_interval = 25;
    ck_assert_int_eq(ha_profconf_reexec_conf(&jc, &cur,
                                             "lg_prof_interval:25", out,
                                             sizeof(out)),
                     0);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(ha_profconf_reexec_conf(&jc, &cur, "x:1", out, 8), -1);
}
END_TEST

START_TEST(test_profconf_startup_conf)
{
    struct ha_jemalloc_config jc = jc_unset();
    char out[256];

    jc.lg_prof_interval = 20;
    jc.prof_final = 1;
    /* Profiling off: the init-only options mean nothing. */
    fake_reset(false);
    ck_assert_int_eq(
        ha_profconf_startup_conf(&fake_ops, &jc, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "");
    /* Missing from the running jemalloc: both asked for. */
    fake_reset(true);
    ck_assert_int_eq(
        ha_profconf_startup_conf(&fake_ops, &jc, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "lg_prof_interval:20,prof_final:true");
    /* The operator's MALLOC_CONF sets one: theirs wins, only the other. */
    ck_assert_int_eq(ha_profconf_startup_conf(&fake_ops, &jc,
                                              "prof:true,lg_prof_interval:25",
                                              out, sizeof(out)),
                     0);
    ck_assert_str_eq(out, "prof_final:true");
    /* Nothing differs: nothing asked for. */
    fake_get("opt.lg_prof_interval")->v.s = 20;
    fake_get("opt.prof_final")->v.b = true;
    ck_assert_int_eq(
        ha_profconf_startup_conf(&fake_ops, &jc, NULL, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(ha_profconf_startup_conf(&fake_ops, &jc, NULL, out, 1),
                     0);
}
END_TEST

START_TEST(test_profconf_apply)
{
    struct ha_jemalloc_config jc = jc_unset();
    char dir[] = "/tmp/check_mallctl.XXXXXX";
    char want[PATH_MAX], err[1024];

    fake_reset(true);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    jc.prof_active = 1;
    jc.lg_prof_sample = 21;
    jc.prof_gdump = 0;
    ck_assert_int_eq(ha_profconf_apply(&fake_ops, &jc, dir, err, sizeof(err)),
                     0);
    snprintf(want, sizeof(want), "%s/proxysql", dir);
    ck_assert_str_eq(fake_get("prof.prefix")->str, want);
    ck_assert(fake_get("prof.active")->v.b);
    ck_assert_uint_eq(fake_get("prof.lg_sample")->v.z, 21);
    ck_assert_uint_eq(fake_get("prof.reset")->n_writes, 1);
    ck_assert_uint_eq(fake_get("prof.gdump")->n_writes, 1);

    /* Same rate again: no reset (samples kept). Custom stem. */
    snprintf(jc.dump_prefix, sizeof(jc.dump_prefix), "heap");
    ck_assert_int_eq(ha_profconf_apply(&fake_ops, &jc, dir, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(fake_get("prof.reset")->n_writes, 1);
    snprintf(want, sizeof(want), "%s/heap", dir);
    ck_assert_str_eq(fake_get("prof.prefix")->str, want);

    /* Profiling off: no prefix, the operator's message, all attempted
     * (the failures after the first go to the log; keep it quiet). */
    fake_reset(false);
    ck_assert_int_eq(ha_profconf_apply(&fake_ops, &jc, dir, err, sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc_variables.prof_active = 'true': heap "
                       "profiling is not available in this process "
                       "(opt.prof=false)");
    ck_assert_uint_eq(fake_get("prof.prefix")->n_calls, 0);
    /* Nothing that needs profiling asked for: fine. */
    jc = jc_unset();
    jc.prof_active = 0;
    ck_assert_int_eq(ha_profconf_apply(&fake_ops, &jc, dir, err, sizeof(err)),
                     0);
    rmdir(dir);
}
END_TEST

/* jemalloc's recent-allocation records switched on for heap_fragmentation
 * only when no one set them, and when heapadmin last saw sampling start
 * (a prof.active switch from off to on, a prof.reset) is remembered. */
START_TEST(test_profconf_recent)
{
    char what[256];

    fake_reset(true);
    ck_assert_int_eq(ha_mallctl_sampling_since(&fake_ops), 0);
    fake_get("opt.prof_active")->v.b = true;
    ck_assert_int_eq(ha_mallctl_sampling_since(&fake_ops), -1);
    ck_assert_int_eq(ha_profconf_recent(&fake_ops, "prof:true", what,
                                        sizeof(what)),
                     1);
    ck_assert_int_eq(fake_get("experimental.prof_recent.alloc_max")->v.s,
                     HA_PROFCONF_RECENT_MAX);
    ck_assert_has(what, "jemalloc keeps its last 4096 sampled allocations "
                        "(jemalloc-recent_alloc_max, about 340 KiB of its "
                        "metadata at most)");
    /* set already (by the program, its malloc_conf, MALLOC_CONF, or a
     * start before): kept */
    fake_get("experimental.prof_recent.alloc_max")->v.s = 100;
    ck_assert_int_eq(ha_profconf_recent(&fake_ops, NULL, what, sizeof(what)),
                     0);
    ck_assert_int_eq(fake_get("experimental.prof_recent.alloc_max")->v.s,
                     100);
    ck_assert_has(what, "as set before heapadmin started (kept)");
    /* the operator's MALLOC_CONF says 0: kept */
    fake_get("experimental.prof_recent.alloc_max")->v.s = 0;
    ck_assert_int_eq(ha_profconf_recent(&fake_ops,
                                        "prof:true,prof_recent_alloc_max:0",
                                        what, sizeof(what)),
                     0);
    ck_assert_int_eq(fake_get("experimental.prof_recent.alloc_max")->v.s, 0);
    ck_assert_has(what, "MALLOC_CONF sets prof_recent_alloc_max:0");
    /* no profiling: nothing */
    fake_reset(false);
    ck_assert_int_eq(ha_profconf_recent(&fake_ops, NULL, what, sizeof(what)),
                     0);
    ck_assert_str_eq(what, "");

    /* sampling switched on, or reset, through heapadmin: that moment */
    fake_reset(true);
    ck_assert_int_eq(ha_mallctl_write_bool(&fake_ops, "prof.active", false,
                                           NULL),
                     0);
    ck_assert_int_eq(ha_mallctl_sampling_since(&fake_ops), 0);
    ck_assert_int_eq(ha_mallctl_write_bool(&fake_ops, "prof.active", true,
                                           NULL),
                     0);
    {
        int64_t a = ha_mallctl_sampling_since(&fake_ops);
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ck_assert(a > 0 && a <= (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
        /* on already: no new start */
        ck_assert_int_eq(ha_mallctl_write_bool(&fake_ops, "prof.active",
                                               true, NULL),
                         0);
        ck_assert(ha_mallctl_sampling_since(&fake_ops) == a);
        usleep(2000);
        ck_assert_int_eq(ha_mallctl_write_size(&fake_ops, "prof.reset", 19),
                         0);
        ck_assert(ha_mallctl_sampling_since(&fake_ops) > a);
    }
}
END_TEST

START_TEST(test_profconf_effective)
{
    char line[1024];

    fake_reset(true);
    ck_assert_int_eq(ha_mallctl_set_prof_prefix(&fake_ops, "/v/proxysql"), 0);
    ha_profconf_effective(&fake_ops, line, sizeof(line));
    ck_assert_str_eq(line, "jemalloc 5.3.0-fake: opt.prof=true "
                           "prof.active=false lg_prof_sample=19 "
                           "lg_prof_interval=-1 prof_gdump=false "
                           "prof_final=false prof_leak=false "
                           "prof_accum=false prefix=/v/proxysql");
    fake_reset(false);
    ha_profconf_effective(&fake_ops, line, sizeof(line));
    ck_assert_has(line, "heap profiling off (opt.prof=false; start with "
                        "MALLOC_CONF=prof:true");
    fake_get("config.prof")->v.b = false;
    ha_profconf_effective(&fake_ops, line, sizeof(line));
    ck_assert_has(line, "heap profiling not available (built without "
                        "--enable-prof)");
}
END_TEST

/* ------------------------------------------------------------------
 * The real jemalloc (not under sanitizers)
 * ------------------------------------------------------------------ */

#ifndef HA_SANITIZERS
START_TEST(test_mallctl_real_stats_after_epoch)
{
    const struct ha_mallctl_ops *ops = &ha_mallctl_jemalloc;
    size_t before = 0, after = 0;
    void *volatile p;

    ck_assert_int_eq(ha_mallctl_epoch(ops), 0);
    ck_assert_int_eq(ha_mallctl_read_size(ops, "stats.allocated", &before),
                     0);
    ck_assert_uint_gt(before, 0);
    /* mallocx, not malloc: valgrind (like ASan) takes over malloc, but
     * jemalloc's own entry points always reach jemalloc. */
    p = mallocx(8 << 20, 0);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(ha_mallctl_epoch(ops), 0);
    ck_assert_int_eq(ha_mallctl_read_size(ops, "stats.allocated", &after),
                     0);
    ck_assert_uint_ge(after, before + (8 << 20));
    dallocx(p, 0);
}
END_TEST

START_TEST(test_mallctl_real_cached_mib)
{
    /* The MIB path reads the same value as the name path, and a name
     * jemalloc does not know fails the same way through both. */
    const struct ha_mallctl_ops *ops = &ha_mallctl_jemalloc;
    struct ha_mallctl_mib m = {{0}, 0, 0}, bad = {{0}, 0, 0};
    size_t by_name = 0, by_mib = 0;
    unsigned narenas = 0;

    ck_assert_int_eq(ha_mallctl_epoch(ops), 0);
    ck_assert_int_eq(ha_mallctl_read_size(ops, "stats.mapped", &by_name), 0);
    ck_assert_int_eq(ha_mallctl_read_cached(ops, "stats.mapped", &m, &by_mib,
                                            sizeof(by_mib)),
                     0);
    ck_assert_int_eq(m.state, 1);
    ck_assert_uint_eq(by_mib, by_name);
    ck_assert_int_eq(ha_mallctl_read_cached(ops, "stats.mapped", &m, &by_mib,
                                            sizeof(by_mib)),
                     0);
    ck_assert_uint_eq(by_mib, by_name);
    /* Wrong width: EINVAL, as jemalloc reports it. */
    ck_assert_int_eq(ha_mallctl_read_cached(ops, "stats.mapped", &m,
                                            &narenas, sizeof(narenas)),
                     EINVAL);
    ck_assert_int_eq(ha_mallctl_read_cached(ops, "stats.no_such", &bad,
                                            &by_mib, sizeof(by_mib)),
                     ENOENT);
    ck_assert_int_eq(bad.state, -1);
}
END_TEST

START_TEST(test_mallctl_real_prof_active_enoent)
{
    const struct ha_mallctl_ops *ops = &ha_mallctl_jemalloc;
    struct ha_mallctl_failure f = {
        .mallctl = "prof.active",
        .variable = "jemalloc-prof_active",
        .value = "true",
    };
    char err[1024], file[PATH_MAX];
    int rc;

    /* This binary runs without prof:true unless someone set MALLOC_CONF. */
    if (getenv("MALLOC_CONF") != NULL)
        return;
    ck_assert(!ha_mallctl_prof_enabled(ops));
    rc = ha_mallctl_write_bool(ops, "prof.active", true, NULL);
    ck_assert_int_eq(rc, ENOENT);
    f.errnum = rc;
    f.prof_built = ha_mallctl_prof_built(ops);
    ha_mallctl_errmsg(&f, err, sizeof(err));
    ck_assert_has(err, "jemalloc-prof_active = 'true': heap profiling is not "
                       "available");
    ck_assert_has(err, f.prof_built ? "(opt.prof=false)"
                                    : "built without --enable-prof");
    ck_assert_int_eq(ha_mallctl_dump(ops, "jemalloc-dump_now", file,
                                     sizeof(file), err, sizeof(err)),
                     -1);
    ck_assert_has(err, "jemalloc-dump_now: no heap profile written: heap "
                       "profiling is not available");
}
END_TEST
#endif

/* ------------------------------------------------------------------
 * Suite
 * ------------------------------------------------------------------ */

static Suite *
mallctl_suite(void)
{
    Suite *s = suite_create("mallctl");
    TCase *core = tcase_create("core");
    TCase *errors = tcase_create("errors");
    TCase *profconf = tcase_create("profconf");

    tcase_add_test(core, test_value_parse_bool);
    tcase_add_test(core, test_value_parse_int);
    tcase_add_test(core, test_value_format_lg_bytes);
    tcase_add_test(core, test_mallctl_typed_accessors);
    tcase_add_test(core, test_mallctl_dir_probe);
    tcase_add_test(core, test_mallctl_dump_over_fake);
    tcase_add_test(core, test_mallctl_dump_never_takes_std_fds);
    tcase_add_test(core, test_dumpfiles_publish_keeps_earlier);
    tcase_add_test(core, test_dumpfiles_start);
    tcase_add_test(core, test_dumpfiles_retain);
    suite_add_tcase(s, core);

    tcase_add_test(errors, test_mallctl_errmsg_enoent_prof);
    tcase_add_test(errors, test_mallctl_errmsg_enoent_other);
    tcase_add_test(errors, test_mallctl_errmsg_einval_eperm_eagain_efault);
    tcase_add_test(errors, test_mallctl_errmsg_null_buffer);
    tcase_add_test(errors, test_mallctl_dir_problem_reasons);
    tcase_add_test(errors, test_mallctl_dump_errmsg);
    suite_add_tcase(s, errors);

    tcase_add_test(profconf, test_profconf_init_only_conf);
    tcase_add_test(profconf, test_profconf_conf_has_key);
    tcase_add_test(profconf, test_profconf_reexec_conf);
    tcase_add_test(profconf, test_profconf_startup_conf);
    tcase_add_test(profconf, test_profconf_apply);
    tcase_add_test(profconf, test_profconf_effective);
    tcase_add_test(profconf, test_profconf_recent);
    suite_add_tcase(s, profconf);

#ifndef HA_SANITIZERS
    {
        TCase *real = tcase_create("real_jemalloc");

        tcase_add_test(real, test_mallctl_real_stats_after_epoch);
        tcase_add_test(real, test_mallctl_real_cached_mib);
        tcase_add_test(real, test_mallctl_real_prof_active_enoent);
        suite_add_tcase(s, real);
    }
#endif
    return s;
}

HA_CHECK_MAIN(mallctl_suite)
