/* SPDX-License-Identifier: MIT
 *
 * Unit tests for what heapadmin knows of memory limits: the cgroup
 * parsers (prof/cgparse.h) on hand-written text and every truncation,
 * and the reader (heap/cgroup.h) on fixture trees (test/data/cgroup/:
 * v1 nested under a limited parent, v1 unlimited, a container's v1
 * mount of its own group, v2 nested with memory.high, v2 "max" all the
 * way up, no memory controller).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"

#include "engine/limitwatch.h"
#include "heap/cgroup.h"
#include "heap/dumpfiles.h"
#include "heap/runs.h"
#include "prof/breakdown.h"
#include "prof/cgparse.h"
#include "prof/dumpfile.h"
#include "prof/dumpmem.h"
#include "prof/runrec.h"

static const char *
data_dir(void)
{
    const char *src = getenv("HA_TOP_SRCDIR");
    static char dir[1024];

    snprintf(dir, sizeof(dir), "%s/test/data/cgroup", src ? src : ".");
    return dir;
}

/* Copies text into an exact-size block (no NUL), so an overread shows
 * under ASan. */
static char *
exact(const char *text, size_t *len)
{
    char *p;

    *len = strlen(text);
    p = malloc(*len ? *len : 1);
    ck_assert_ptr_nonnull(p);
    memcpy(p, text, *len);
    return p;
}

/* ------------------------------------------------------------------
 * Parsers
 * ------------------------------------------------------------------ */

START_TEST(test_limit_parse_procfile)
{
    struct ha_cgparse_groups pf;
    char err[128];
    size_t len;
    char *b = exact("12:pids:/\n4:cpuacct,memory:/svc/a b\n0::/app.slice\n",
                    &len);

    ck_assert_int_eq(ha_cgparse_procfile(b, len, &pf, err, sizeof(err)),
                     0);
    ck_assert(pf.v1_memory);
    ck_assert_str_eq(pf.v1_path, "/svc/a b");
    ck_assert(pf.v2);
    ck_assert_str_eq(pf.v2_path, "/app.slice");
    free(b);

    b = exact("0::/\n", &len);
    ck_assert_int_eq(ha_cgparse_procfile(b, len, &pf, err, sizeof(err)),
                     0);
    ck_assert(!pf.v1_memory);
    ck_assert(pf.v2);
    ck_assert_str_eq(pf.v2_path, "/");
    free(b);

    /* name=systemd is not the memory controller, "memoryx" neither */
    b = exact("9:name=systemd:/\n3:memoryx:/x\n", &len);
    ck_assert_int_eq(ha_cgparse_procfile(b, len, &pf, err, sizeof(err)),
                     0);
    ck_assert(!pf.v1_memory && !pf.v2);
    free(b);

    b = exact("4:memory\n", &len);
    ck_assert_int_eq(ha_cgparse_procfile(b, len, &pf, err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "line 1: expected ID:CONTROLLERS:/PATH");
    free(b);
}
END_TEST

START_TEST(test_limit_parse_mountinfo)
{
    struct ha_cgparse_mounts m;
    char dir[256];
    size_t len;
    char *b = exact(
        "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
        "garbage line\n"
        "34 30 0:31 /docker/ab /sys/fs/cgroup/mem\\040ory rw,relatime "
        "shared:9 - cgroup cgroup rw,memory\n"
        "35 30 0:32 / /other rw - cgroup cgroup rw,memory\n"
        "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw",
        &len);

    ck_assert_int_eq(ha_cgparse_mountinfo(b, len, &m), 0);
    ck_assert(m.v1_memory.found);
    ck_assert_str_eq(m.v1_memory.root, "/docker/ab");
    ck_assert_str_eq(m.v1_memory.point, "/sys/fs/cgroup/mem ory");
    ck_assert(m.v2.found);
    ck_assert_str_eq(m.v2.point, "/sys/fs/cgroup/unified");
    free(b);

    /* the group's directory: under the mount's root only */
    ck_assert_int_eq(ha_cgparse_dir(&m.v1_memory, "/docker/ab", dir,
                                    sizeof(dir)),
                     0);
    ck_assert_str_eq(dir, "/sys/fs/cgroup/mem ory");
    ck_assert_int_eq(ha_cgparse_dir(&m.v1_memory, "/docker/ab/x", dir,
                                    sizeof(dir)),
                     0);
    ck_assert_str_eq(dir, "/sys/fs/cgroup/mem ory/x");
    ck_assert_int_eq(ha_cgparse_dir(&m.v1_memory, "/docker/abc", dir,
                                    sizeof(dir)),
                     -1);
    ck_assert_int_eq(ha_cgparse_dir(&m.v1_memory, "/docker/ab/../../etc",
                                    dir, sizeof(dir)),
                     -1);
    ck_assert_int_eq(ha_cgparse_dir(&m.v2, "/", dir, sizeof(dir)), 0);
    ck_assert_str_eq(dir, "/sys/fs/cgroup/unified");
    ck_assert_int_eq(ha_cgparse_dir(&m.v2, "/a.slice", dir, 10), -1);
}
END_TEST

START_TEST(test_limit_parse_values)
{
    int64_t v;
    uint64_t u;
    const char *events = "low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\n";

    ck_assert_int_eq(ha_cgparse_bytes("max\n", 4, &v), 0);
    ck_assert_int_eq(v, HA_CGPARSE_UNLIMITED);
    ck_assert_int_eq(ha_cgparse_bytes("9223372036854771712\n", 20, &v),
                     0);
    ck_assert_int_eq(v, HA_CGPARSE_UNLIMITED);
    ck_assert_int_eq(ha_cgparse_bytes("67108864\n", 9, &v), 0);
    ck_assert_int_eq(v, 67108864);
    ck_assert_int_eq(ha_cgparse_bytes("67108864", 8, &v), 0);
    ck_assert_int_eq(ha_cgparse_bytes("", 0, &v), -1);
    ck_assert_int_eq(ha_cgparse_bytes("-1\n", 3, &v), -1);
    ck_assert_int_eq(ha_cgparse_bytes("12 34\n", 6, &v), -1);
    ck_assert_int_eq(ha_cgparse_bytes("99999999999999999999\n", 21, &v),
                     -1);

    ck_assert_int_eq(
        ha_cgparse_key(events, strlen(events), "oom_kill", &u), 0);
    ck_assert_uint_eq(u, 1);
    ck_assert_int_eq(ha_cgparse_key(events, strlen(events), "oom", &u),
                     0);
    ck_assert_uint_eq(u, 1);
    ck_assert_int_eq(ha_cgparse_key(events, strlen(events), "high", &u),
                     0);
    ck_assert_uint_eq(u, 12);
    ck_assert_int_eq(ha_cgparse_key(events, strlen(events), "hig", &u),
                     -1);
    ck_assert_int_eq(ha_cgparse_key("max x\n", 6, "max", &u), -1);
}
END_TEST

START_TEST(test_limit_parse_psi)
{
    struct ha_psi p;
    char err[128], trig[64];
    const char *good = "some avg10=12.50 avg60=0.25 avg300=0.05 total=99\n"
                       "full avg10=3.00 avg60=0.10 avg300=0.00 total=7\n";
    size_t len;
    char *b = exact(good, &len);

    ck_assert_int_eq(ha_cgparse_psi(b, len, &p, err, sizeof(err)), 0);
    ck_assert(p.some.present && p.full.present);
    ck_assert(p.some.avg10 > 12.49 && p.some.avg10 < 12.51);
    ck_assert(p.some.avg60 > 0.24 && p.some.avg60 < 0.26);
    ck_assert_uint_eq(p.some.total_us, 99);
    ck_assert(p.full.avg10 > 2.99 && p.full.avg10 < 3.01);
    free(b);
    /* every truncation parses or fails cleanly */
    for (size_t cut = 0; cut < strlen(good); cut++) {
        b = exact(good, &len);
        (void)ha_cgparse_psi(b, cut, &p, err, sizeof(err));
        free(b);
    }
    b = exact("some avg10=1,50 avg60=0 avg300=0 total=1\n", &len);
    ck_assert_int_eq(ha_cgparse_psi(b, len, &p, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "line 1: expected some|full avg10=N avg60=N "
                          "avg300=N total=N");
    free(b);
    b = exact("full avg10=1.00 avg60=0 avg300=0 total=1\n", &len);
    ck_assert_int_eq(ha_cgparse_psi(b, len, &p, err, sizeof(err)), -1);
    ck_assert_str_eq(err, "no \"some\" line");
    free(b);

    ck_assert_int_eq(ha_cgparse_psi_trigger(10, 1000, trig, sizeof(trig)),
                     (int)strlen("some 200000 2000000") + 1);
    ck_assert_str_eq(trig, "some 200000 2000000");
    ck_assert_int_gt(ha_cgparse_psi_trigger(25, 3000, trig, sizeof(trig)), 0);
    ck_assert_str_eq(trig, "some 1000000 4000000");
    ck_assert_int_eq(ha_cgparse_psi_trigger(0, 2000, trig, sizeof(trig)), -1);
    ck_assert_int_eq(ha_cgparse_psi_trigger(101, 2000, trig, sizeof(trig)),
                     -1);
    ck_assert_int_eq(ha_cgparse_psi_trigger(10, 2000, trig, 8), -1);
}
END_TEST

/* ------------------------------------------------------------------
 * The reader on fixture trees
 * ------------------------------------------------------------------ */

static void
locate(const char *tree, struct ha_cgroup_where *w,
       struct ha_cgroup_state *st)
{
    char root[1200], err[256];

    snprintf(root, sizeof(root), "%s/%s", data_dir(), tree);
    ck_assert_msg(ha_cgroup_locate(root, w, err, sizeof(err)) == 0, "%s: %s",
                  tree, err);
    ha_cgroup_sample(w, st);
}

/* path ends with suffix */
static void
ends_with(const char *path, const char *suffix)
{
    size_t pl = strlen(path), sl = strlen(suffix);

    ck_assert_msg(pl >= sl && strcmp(path + pl - sl, suffix) == 0,
                  "'%s' does not end with '%s'", path, suffix);
}

START_TEST(test_limit_read_v1_nested)
{
    struct ha_cgroup_where w;
    struct ha_cgroup_state st;
    uint64_t kills;

    locate("v1-nested", &w, &st);
    ck_assert_int_eq(w.version, 1);
    ck_assert_str_eq(w.path, "/svc/worker");
    ends_with(w.dir, "/v1-nested/sys/fs/cgroup/memory/svc/worker");
    /* the parent's limit binds the child, which has none of its own;
     * the figures are the parent's: what the limit is held against */
    ck_assert(ha_cgroup_limited(&st));
    ck_assert_int_eq(st.limit, 67108864);
    ck_assert_str_eq(st.limit_path, "/svc");
    ends_with(st.dir, "/sys/fs/cgroup/memory/svc");
    ck_assert_int_eq(st.usage, 58720256);
    ck_assert_int_eq(st.inactive_file, 4194304);
    ck_assert_int_eq(st.working_set, 58720256 - 4194304);
    ck_assert_int_eq(st.peak, 66060288);
    ck_assert_int_eq(st.ev_max, 9);
    ck_assert_int_eq(st.ev_oom_kill, 3);
    ck_assert_int_eq(st.ev_high, -1);
    ck_assert_int_eq(st.ev_oom, -1);
    ck_assert(!st.under_oom);
    /* hybrid: PSI from the unified hierarchy's root group */
    ends_with(w.psi_file, "/v1-nested/sys/fs/cgroup/unified/memory.pressure");
    ck_assert(w.psi_system);
    ck_assert(st.has_psi);
    ck_assert(st.psi.some.avg10 > 1.49 && st.psi.some.avg10 < 1.51);
    ck_assert_int_eq(ha_cgroup_oom_kills(1, w.dir, &kills), 0);
    ck_assert_uint_eq(kills, 2);
    ck_assert_int_eq(ha_cgroup_oom_kills(1, st.dir, &kills), 0);
    ck_assert_uint_eq(kills, 3);
    ck_assert_int_eq(ha_cgroup_oom_kills(1, "/nonexistent/x", &kills), -1);
}
END_TEST

START_TEST(test_limit_read_v1_unlimited)
{
    struct ha_cgroup_where w;
    struct ha_cgroup_state st;

    locate("v1-unlimited", &w, &st);
    ck_assert_int_eq(w.version, 1);
    ck_assert_str_eq(w.path, "/");
    ck_assert(!ha_cgroup_limited(&st));
    ck_assert_int_eq(st.limit, HA_CGPARSE_UNLIMITED);
    ck_assert_int_eq(st.usage, 1073741824);
    ck_assert_int_eq(st.working_set, 1073741824);
    ck_assert_int_eq(st.ev_oom_kill, 0);
}
END_TEST

START_TEST(test_limit_read_v1_container)
{
    struct ha_cgroup_where w;
    struct ha_cgroup_state st;

    locate("v1-container", &w, &st);
    ck_assert_int_eq(w.version, 1);
    ck_assert_str_eq(w.path, "/docker/0123abcd");
    ends_with(w.dir, "/v1-container/sys/fs/cgroup/memory");
    ck_assert_int_eq(st.limit, 268435456);
    ck_assert_str_eq(st.limit_path, "/docker/0123abcd");
    ck_assert_str_eq(w.psi_file, "");
    ck_assert(!st.has_psi);
}
END_TEST

START_TEST(test_limit_read_v2_nested)
{
    struct ha_cgroup_where w;
    struct ha_cgroup_state st;
    uint64_t kills;

    locate("v2-nested", &w, &st);
    ck_assert_int_eq(w.version, 2);
    ck_assert_str_eq(w.path, "/app.slice/web.service");
    ck_assert_int_eq(st.limit, 1073741824);
    ck_assert_str_eq(st.limit_path, "/app.slice");
    ck_assert_int_eq(st.high, 805306368);
    /* the slice's figures: its limit counts the service and siblings */
    ends_with(st.dir, "/sys/fs/cgroup/app.slice");
    ck_assert_int_eq(st.usage, 805306368);
    ck_assert_int_eq(st.working_set, 805306368 - 105306368);
    ck_assert_int_eq(st.peak, 1000000000);
    ck_assert_int_eq(st.ev_high, 0);
    ck_assert_int_eq(st.ev_max, 5);
    ck_assert_int_eq(st.ev_oom, 2);
    ck_assert_int_eq(st.ev_oom_kill, 2);
    /* its own group's pressure, not the system's */
    ends_with(w.psi_file, "/web.service/memory.pressure");
    ck_assert(!w.psi_system);
    ck_assert(st.has_psi);
    ck_assert_int_eq(ha_cgroup_oom_kills(2, w.dir, &kills), 0);
    ck_assert_uint_eq(kills, 1);
}
END_TEST

START_TEST(test_limit_read_v2_max)
{
    struct ha_cgroup_where w;
    struct ha_cgroup_state st;

    locate("v2-max", &w, &st);
    ck_assert_int_eq(w.version, 2);
    ck_assert(!ha_cgroup_limited(&st));
    ck_assert_str_eq(st.limit_path, "");
    ck_assert_str_eq(st.dir, w.dir);
    ck_assert_int_eq(st.high, HA_CGPARSE_UNLIMITED);
    ck_assert_int_eq(st.usage, 1048576);
    ck_assert_int_eq(st.ev_oom_kill, 0);
}
END_TEST

START_TEST(test_limit_read_none)
{
    struct ha_cgroup_where w;
    struct ha_cgroup_state st;
    char err[256];

    locate("none", &w, &st);
    ck_assert_int_eq(w.version, 0);
    ck_assert_int_eq(st.version, 0);
    ck_assert(!ha_cgroup_limited(&st));
    ck_assert_int_eq(st.usage, -1);
    ck_assert_int_eq(ha_cgroup_locate("/nonexistent-root", &w, err,
                                      sizeof(err)),
                     -1);
    ck_assert_msg(strstr(err, "/proc/self/cgroup") != NULL, "%s", err);
}
END_TEST

/* The machine's own: whatever it has, the reader answers without error,
 * and a limit it reports is positive. */
START_TEST(test_limit_read_this_machine)
{
    struct ha_cgroup_where w;
    struct ha_cgroup_state st;
    char err[256];

    ck_assert_int_eq(ha_cgroup_locate(NULL, &w, err, sizeof(err)), 0);
    ha_cgroup_sample(&w, &st);
    if (w.version != 0)
        ck_assert_int_ge(st.usage, 0);
    ck_assert(st.limit == HA_CGPARSE_UNLIMITED || st.limit > 0);
}
END_TEST


/* ------------------------------------------------------------------
 * The limit watch's rule
 * ------------------------------------------------------------------ */

START_TEST(test_limit_fractions_parse)
{
    double f[HA_LIMITWATCH_FRACTIONS_MAX];
    char why[256];
    size_t n;

    ck_assert_int_eq(ha_limitwatch_parse_fractions("0.80,0.90,0.95", f,
                                                   HA_LIMITWATCH_FRACTIONS_MAX,
                                                   &n, why, sizeof(why)),
                     0);
    ck_assert_uint_eq(n, 3);
    ck_assert(f[0] > 0.799 && f[0] < 0.801 && f[2] > 0.949 && f[2] < 0.951);
    ck_assert_int_eq(ha_limitwatch_parse_fractions(" 0.9, 0.5 ,1", f, 8, &n,
                                                   why, sizeof(why)),
                     0);
    ck_assert_uint_eq(n, 3);
    ck_assert(f[0] == 0.5 && f[1] > 0.899 && f[2] == 1);
    ck_assert_int_eq(ha_limitwatch_parse_fractions("", f, 8, &n, why,
                                                   sizeof(why)),
                     0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(ha_limitwatch_parse_fractions("0.8,1.5", f, 8, &n, why,
                                                   sizeof(why)),
                     -1);
    ck_assert_str_eq(why, "'1.5' is not a share of the limit: give numbers "
                          "above 0 and at most 1, comma-separated (e.g. "
                          "'0.80,0.90,0.95'), or '' for none");
    ck_assert_int_eq(ha_limitwatch_parse_fractions("0", f, 8, &n, why,
                                                   sizeof(why)),
                     -1);
    ck_assert_int_eq(ha_limitwatch_parse_fractions("8e-1", f, 8, &n, why,
                                                   sizeof(why)),
                     -1);
    ck_assert_int_eq(ha_limitwatch_parse_fractions("0.8,0.80", f, 8, &n,
                                                   why, sizeof(why)),
                     -1);
    ck_assert_str_eq(why, "0.80 is given twice");
    ck_assert_int_eq(ha_limitwatch_parse_fractions(
                         "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", f, 8, &n,
                         why, sizeof(why)),
                     -1);
    ck_assert_str_eq(why, "at most 8 levels");
}
END_TEST

#define MIB (INT64_C(1) << 20)

/* One look at ws percent of a 100 MiB limit at time t. */
static enum ha_limitwatch_trigger
look_at(const struct ha_limitwatch_rule *r, struct ha_limitwatch_arm *a,
        int ws_pct, int64_t t, int64_t ev_max, double psi, char *why)
{
    struct ha_limitwatch_in in;

    memset(&in, 0, sizeof(in));
    in.limit = 100 * MIB;
    in.working_set = ws_pct * MIB;
    in.ev_high = in.ev_oom = -1;
    in.ev_max = ev_max;
    in.has_psi = true;
    in.psi_avg10 = psi;
    in.now_ms = t * 1000 + 1;
    return ha_limitwatch_decide(r, a, &in, why, 256);
}

START_TEST(test_limit_rule_levels)
{
    struct ha_limitwatch_rule r = {{0.80, 0.90, 0.95}, 3, 0, false, 30};
    struct ha_limitwatch_arm a;
    char why[256];

    ha_limitwatch_arm_init(&a);
    ck_assert_int_eq(look_at(&r, &a, 50, 0, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 81, 1, 0, 0, why),
                     HA_LIMITWATCH_FRACTION);
    ck_assert_str_eq(why, "working set 81.0 MiB reached 0.80 of the memory "
                          "limit 100.0 MiB");
    /* once per crossing */
    ck_assert_int_eq(look_at(&r, &a, 85, 2, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 82, 3, 0, 0, why), HA_LIMITWATCH_NONE);
    /* a new, higher level is never held back by the interval */
    ck_assert_int_eq(look_at(&r, &a, 91, 4, 0, 0, why),
                     HA_LIMITWATCH_FRACTION);
    ck_assert_int_eq(look_at(&r, &a, 96, 5, 0, 0, why),
                     HA_LIMITWATCH_FRACTION);
    ck_assert_str_eq(why, "working set 96.0 MiB reached 0.95 of the memory "
                          "limit 100.0 MiB");
    ck_assert_int_eq(look_at(&r, &a, 99, 6, 0, 0, why), HA_LIMITWATCH_NONE);
    /* hysteresis: a level re-arms once the working set has stayed 5
     * points below it for 10 s; a dip that comes back sooner does not */
    ck_assert_int_eq(look_at(&r, &a, 89, 7, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 96, 8, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 89, 9, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 84, 11, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 84, 18, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert(!a.armed[1] && !a.armed[2]);
    ck_assert_int_eq(look_at(&r, &a, 84, 19, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert(!a.armed[1] && a.armed[2]); /* below 0.90 since t=9 */
    ck_assert_int_eq(look_at(&r, &a, 84, 21, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert(a.armed[1] && !a.armed[0]); /* below 0.85 since t=11 */
    /* re-crossed within the interval: held back, and taken once it has
     * passed while it still holds */
    ck_assert_int_eq(look_at(&r, &a, 96, 28, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 96, 36, 0, 0, why),
                     HA_LIMITWATCH_FRACTION);
    ck_assert_str_eq(why, "working set 96.0 MiB reached 0.95 of the memory "
                          "limit 100.0 MiB (0.90 to 0.95 passed since the "
                          "last look)");
    ck_assert_int_eq(look_at(&r, &a, 96, 80, 0, 0, why), HA_LIMITWATCH_NONE);
    /* the climb ends once below 0.75 for 10 s; a jump then passes three
     * levels, one dump saying so */
    ck_assert_int_eq(look_at(&r, &a, 70, 81, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 70, 91, 0, 0, why), HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 97, 92, 0, 0, why),
                     HA_LIMITWATCH_FRACTION);
    ck_assert_str_eq(why, "working set 97.0 MiB reached 0.95 of the memory "
                          "limit 100.0 MiB (0.80 to 0.95 passed since the "
                          "last look)");
    ck_assert_int_eq(look_at(&r, &a, 97, 93, 0, 0, why), HA_LIMITWATCH_NONE);
}
END_TEST

/* A host that grows in bursts (test/growthhost: 8 MiB held 1.5 s every
 * 4 s, on a steady leak): the working set swings 6 points about a level
 * as each burst comes and goes. Once per crossing: one dump, not one at
 * every burst (the double dump 310 ms apart of issue 34). */
START_TEST(test_limit_rule_bursts)
{
    struct ha_limitwatch_rule r = {{0.80, 0.90, 0.95}, 3, 0, false, 30};
    struct ha_limitwatch_arm a;
    struct ha_limitwatch_in in;
    char why[256];
    int dumps = 0;

    ha_limitwatch_arm_init(&a);
    memset(&in, 0, sizeof(in));
    in.limit = 100 * MIB;
    in.ev_high = in.ev_max = in.ev_oom = -1;
    /* leak 0.2 points/s from 70; a burst of 6 points from 0.5 s to 2 s
     * of every 4 s; a look every 100 ms for a minute */
    for (int64_t ms = 100; ms <= 60000; ms += 100) {
        int64_t phase = ms % 4000;
        double ws = 70 + 0.0002 * (double)ms +
                    (phase >= 500 && phase < 2000 ? 6 : 0);

        if (ws > 89)
            ws = 89 - (phase >= 500 && phase < 2000 ? 0 : 6);
        in.working_set = (int64_t)(ws * (double)MIB);
        in.now_ms = ms;
        if (ha_limitwatch_decide(&r, &a, &in, why, sizeof(why)) ==
            HA_LIMITWATCH_FRACTION) {
            dumps++;
            /* never below its level */
            ck_assert_msg(strstr(why, "reached 0.80") != NULL, "%s", why);
            ck_assert_msg(ws >= 80, "dump at %.1f", ws);
        }
    }
    ck_assert_int_eq(dumps, 1);
}
END_TEST

START_TEST(test_limit_rule_events_psi)
{
    struct ha_limitwatch_rule r = {{0.80}, 1, 20, true, 30};
    struct ha_limitwatch_arm a;
    struct ha_limitwatch_in in;
    char why[256];

    ha_limitwatch_arm_init(&a);
    /* events from before the first look are not new */
    ck_assert_int_eq(look_at(&r, &a, 10, 100, 7, 0, why),
                     HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 10, 101, 8, 0, why),
                     HA_LIMITWATCH_EVENT);
    ck_assert_str_eq(why, "new memory events of the cgroup (1 max) with the "
                          "working set at 10.0 MiB of the limit 100.0 MiB");
    /* held back by the interval, counted, taken once it has passed */
    ck_assert_int_eq(look_at(&r, &a, 10, 110, 10, 0, why),
                     HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 10, 120, 11, 0, why),
                     HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 10, 131, 11, 0, why),
                     HA_LIMITWATCH_EVENT);
    ck_assert_str_eq(why, "new memory events of the cgroup (3 max) with the "
                          "working set at 10.0 MiB of the limit 100.0 MiB");
    /* pressure: once, re-armed below half the bound */
    ck_assert_int_eq(look_at(&r, &a, 10, 200, 11, 25, why),
                     HA_LIMITWATCH_PSI);
    ck_assert_int_eq(look_at(&r, &a, 10, 300, 11, 25, why),
                     HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 10, 301, 11, 5, why),
                     HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 10, 400, 11, 21, why),
                     HA_LIMITWATCH_PSI);
    /* the kernel's trigger counts though the average lags */
    ck_assert_int_eq(look_at(&r, &a, 10, 401, 11, 1, why),
                     HA_LIMITWATCH_NONE);
    memset(&in, 0, sizeof(in));
    in.limit = 100 * MIB;
    in.working_set = 10 * MIB;
    in.ev_high = in.ev_oom = -1;
    in.ev_max = 11;
    in.has_psi = true;
    in.psi_avg10 = 1;
    in.psi_fired = true;
    in.now_ms = 500000;
    ck_assert_int_eq(ha_limitwatch_decide(&r, &a, &in, why, sizeof(why)),
                     HA_LIMITWATCH_PSI);
    ck_assert_msg(strstr(why, "the kernel's trigger fired") != NULL, "%s",
                  why);
    /* no limit: nothing, and events then are not held against a later
     * limit */
    in.limit = HA_CGPARSE_UNLIMITED;
    in.ev_max = 50;
    in.now_ms = 600000;
    ck_assert_int_eq(ha_limitwatch_decide(&r, &a, &in, why, sizeof(why)),
                     HA_LIMITWATCH_NONE);
    ck_assert_int_eq(look_at(&r, &a, 10, 700, 50, 0, why),
                     HA_LIMITWATCH_NONE);
    /* events switched off: counted, never a dump */
    r.events = false;
    ck_assert_int_eq(look_at(&r, &a, 10, 800, 60, 0, why),
                     HA_LIMITWATCH_NONE);
}
END_TEST

/* The next look's time: ws and usage in MiB of a 100 MiB limit, rate in
 * MiB/s, levels 0.80 0.90 0.95, wake 0.50. */
static int
next_look(const struct ha_limitwatch_arm *a, double usage, double ws,
          double rate, bool unused)
{
    struct ha_limitwatch_rule r = {{0.80, 0.90, 0.95}, 3, 0, false, 30};
    struct ha_limitwatch_pace p = {100 * MIB, (int64_t)(usage * MIB),
                                   (int64_t)(ws * MIB), rate * MIB, 0.50};

    (void)unused;
    return ha_limitwatch_next_look_ms(&r, a, &p);
}

START_TEST(test_limit_rule_pace)
{
    struct ha_limitwatch_arm a;

    ha_limitwatch_arm_init(&a);
    /* far: no timer of its own, however fast the climb */
    ck_assert_int_eq(next_look(&a, 40, 40, 500, false), 0);
    ck_assert_int_eq(next_look(&a, 44.9, 44, 0, false), 0);
    /* the usage decides near or far: page cache hiding the climb */
    ck_assert_int_eq(next_look(&a, 60, 30, 0, false), HA_LIMITWATCH_NEAR_MS);
    /* near, not climbing: the caps */
    ck_assert_int_eq(next_look(&a, 46, 46, 0, false), HA_LIMITWATCH_NEAR_MS);
    ck_assert_int_eq(next_look(&a, 60, 60, -5, true), HA_LIMITWATCH_NEAR_MS);
    ck_assert_int_eq(next_look(&a, 76, 76, 0, true), HA_LIMITWATCH_HOT_MS);
    /* climbing: half the time to the next mark (the wake level at 50,
     * then the levels), capped, never under the floor (10 ms: a level
     * about to be passed is looked at again that soon) */
    ck_assert_int_eq(next_look(&a, 46, 46, 10, false), 200);
    ck_assert_int_eq(next_look(&a, 60, 60, 10, true), 1000);
    ck_assert_int_eq(next_look(&a, 60, 60, 80, true), 125);
    ck_assert_int_eq(next_look(&a, 79, 79, 1, true), HA_LIMITWATCH_HOT_MS);
    ck_assert_int_eq(next_look(&a, 79.9, 79.9, 80, true),
                     HA_LIMITWATCH_LOOK_MIN_MS);
    ck_assert_int_eq(HA_LIMITWATCH_LOOK_MIN_MS, 10);
    ck_assert_int_eq(next_look(&a, 78, 78, 80, true), 12);
    /* a v1 threshold on the usage woke it at the level, page cache
     * keeping the working set 1 MiB short: looked at again in 10 ms */
    ck_assert_int_eq(next_look(&a, 80, 79, 100, true),
                     HA_LIMITWATCH_LOOK_MIN_MS);
    /* a passed level is no mark: the next armed one is */
    a.armed[0] = false;
    ck_assert_int_eq(next_look(&a, 81, 81, 20, true), 225);
    a.armed[1] = a.armed[2] = false;
    ck_assert_int_eq(next_look(&a, 97, 97, 80, true), HA_LIMITWATCH_HOT_MS);
    /* no limit, no levels, nothing known */
    ha_limitwatch_arm_init(&a);
    {
        struct ha_limitwatch_rule none = {{0}, 0, 0, false, 30};
        struct ha_limitwatch_pace p = {100 * MIB, 90 * MIB, 90 * MIB, 0,
                                       0.5};

        struct ha_limitwatch_rule three = {{0.80, 0.90, 0.95}, 3, 0, false,
                                           30};

        ck_assert_int_eq(ha_limitwatch_next_look_ms(&none, &a, &p), 0);
        ck_assert_int_eq(ha_limitwatch_next_look_ms(&three, &a, &p),
                         HA_LIMITWATCH_HOT_MS);
        p.limit = -1;
        ck_assert_int_eq(ha_limitwatch_next_look_ms(&three, &a, &p), 0);
        p.limit = 100 * MIB;
        p.usage = -1; /* then the working set decides */
        ck_assert_int_eq(ha_limitwatch_next_look_ms(&three, &a, &p),
                         HA_LIMITWATCH_HOT_MS);
        p.working_set = 10 * MIB;
        ck_assert_int_eq(ha_limitwatch_next_look_ms(&three, &a, &p), 0);
    }
    ck_assert_int_eq(next_look(&a, 90, -1.0 / MIB, 0, false),
                     HA_LIMITWATCH_HOT_MS);
}
END_TEST

START_TEST(test_limit_rule_glance)
{
    /* 100 MiB limit, whole looks from 45 MiB */
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 10 * MIB, 0,
                                                  0.45),
                     HA_LIMITWATCH_GLANCE_MS);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 10 * MIB,
                                                  -1.0 * MIB, 0.45),
                     HA_LIMITWATCH_GLANCE_MS);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 25 * MIB,
                                                  40.0 * MIB, 0.45),
                     125);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 44 * MIB,
                                                  80.0 * MIB, 0.45),
                     HA_LIMITWATCH_GLANCE_MIN_MS);
    /* a fill of 100 MiB/s is read 2 MiB apart near the switch to looks,
     * not 10 (the floor was 100 ms) */
    ck_assert_int_eq(HA_LIMITWATCH_GLANCE_MIN_MS, 20);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 35 * MIB,
                                                  100.0 * MIB, 0.45),
                     25);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 40 * MIB,
                                                  100.0 * MIB, 0.45),
                     HA_LIMITWATCH_GLANCE_MIN_MS);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 10 * MIB,
                                                  1.0 * MIB, 0.45),
                     HA_LIMITWATCH_GLANCE_MS);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, 45 * MIB,
                                                  0, 0.45), 0);
    ck_assert_int_eq(ha_limitwatch_next_glance_ms(100 * MIB, -1, 0, 0.45),
                     HA_LIMITWATCH_GLANCE_MS);
}
END_TEST


/* ------------------------------------------------------------------
 * What is kept beside dumps and runs
 * ------------------------------------------------------------------ */

START_TEST(test_limit_dumpmem_roundtrip)
{
    struct ha_dumpmem m, back;
    char text[4096], err[128];
    int len;

    ha_dumpmem_init(&m);
    m.taken_ns = 1764000000123456789LL;
    strcpy(m.trigger, "limit");
    strcpy(m.reason, "working set 57.6 MiB reached 0.90\nof the limit");
    m.resident = 60817408;
    m.cgroup_version = 1;
    strcpy(m.cgroup_path, "/svc/worker");
    m.cgroup_limit = 67108864;
    m.cgroup_usage = 58720256;
    m.cgroup_working_set = 54525952;
    m.cgroup_looked_ns = m.taken_ns - 3000000;
    m.allocated = 50331648;
    m.n_bins = 2;
    m.bins[0] = (struct ha_dumpmem_bin){8, 512, 4096, 100, 1};
    m.bins[1] = (struct ha_dumpmem_bin){64, 64, 4096, 16384, 8192};
    len = ha_dumpmem_format(&m, text, sizeof(text));
    ck_assert_int_gt(len, 0);
    ck_assert_msg(strstr(text, "reason working set 57.6 MiB reached 0.90 of "
                               "the limit\n") != NULL,
                  "a newline in the reason stays on its line: %s", text);
    ck_assert_int_eq(ha_dumpmem_parse(text, (size_t)len, &back, err,
                                      sizeof(err)),
                     0);
    ck_assert_int_eq(back.taken_ns, m.taken_ns);
    ck_assert_str_eq(back.trigger, "limit");
    ck_assert_int_eq(back.resident, m.resident);
    ck_assert_int_eq(back.cgroup_version, 1);
    ck_assert_str_eq(back.cgroup_path, "/svc/worker");
    ck_assert_int_eq(back.cgroup_limit, m.cgroup_limit);
    ck_assert_int_eq(back.cgroup_working_set, m.cgroup_working_set);
    ck_assert_int_eq(back.cgroup_looked_ns, m.cgroup_looked_ns);
    ck_assert_int_eq(back.allocated, m.allocated);
    ck_assert_uint_eq(back.n_bins, 2);
    ck_assert(back.bins[1].curslabs == 8192 && back.bins[1].size == 64);
    /* too small a buffer: -1, never a cut file */
    ck_assert_int_eq(ha_dumpmem_format(&m, text, 40), -1);
    /* "max", unknown keys, a bad value, a foreign file */
    ck_assert_int_eq(ha_dumpmem_parse("heapadmin-dump-memory 1\ncgroup 2 /a\n"
                                      "cgroup_limit max\nfuture 1 2 3\n",
                                      58, &back, err, sizeof(err)),
                     0);
    ck_assert_int_eq(back.cgroup_limit, -1);
    /* a file from before: read at the dump, allocated unknown */
    ck_assert_int_eq(back.cgroup_looked_ns, 0);
    ck_assert_int_eq(back.allocated, -1);
    ck_assert_int_eq(ha_dumpmem_parse("heapadmin-dump-memory 1\nresident x\n",
                                      37, &back, err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "line 2: a value that is not a number");
    ck_assert_int_eq(ha_dumpmem_parse("heap_v2/524288\n", 15, &back, err,
                                      sizeof(err)),
                     -1);
    ck_assert(ha_dumpmem_higher(2, 1, 1, 9));
    ck_assert(ha_dumpmem_higher(2, 9, 2, 1));
    ck_assert(!ha_dumpmem_higher(-1, 9, 0, 1));
}
END_TEST

START_TEST(test_limit_runrec)
{
    struct ha_runrec r, back;
    struct ha_runrec_after a;
    char text[4096], err[128];
    int len;

    ha_runrec_init(&r);
    r.pid = 1;
    strcpy(r.program, "redis-server");
    r.started_ns = 1764000000000000000LL;
    strcpy(r.prefix, "proxysql");
    r.cgroup_version = 1;
    strcpy(r.cgroup_path, "/svc/worker");
    strcpy(r.cgroup_dir, "/sys/fs/cgroup/memory/svc/worker");
    r.limit = 67108864;
    r.oom_kills = 0;
    r.last_seen_ns = r.started_ns + 9000000000LL;
    r.usage = 60000000;
    r.working_set = 59900000;
    r.resident = 59000000;
    r.peak_resident = 61000000;
    {
        struct ha_runrec_dump d = {r.started_ns + 8000000000LL, 54000000,
                                   53900000, "proxysql.1.0.m0.heap"};

        /* the last HA_RUNREC_LIMIT_DUMPS kept, oldest first */
        for (int i = 0; i < HA_RUNREC_LIMIT_DUMPS + 2; i++) {
            d.usage = 50000000 + i;
            ha_runrec_add_limit_dump(&r, &d);
        }
        ck_assert_uint_eq(r.n_limit_dumps, HA_RUNREC_LIMIT_DUMPS);
        ck_assert_int_eq(r.limit_dumps[0].usage, 50000002);
    }
    len = ha_runrec_format(&r, text, sizeof(text));
    ck_assert_int_gt(len, 0);
    ck_assert_int_eq(ha_runrec_parse(text, (size_t)len, &back, err,
                                     sizeof(err)),
                     0);
    ck_assert_int_eq(back.pid, 1);
    ck_assert_str_eq(back.program, "redis-server");
    ck_assert_str_eq(back.cgroup_dir, r.cgroup_dir);
    ck_assert_int_eq(back.oom_kills, 0);
    ck_assert_int_eq(back.peak_resident, r.peak_resident);
    ck_assert_int_eq(back.usage, r.usage);
    ck_assert_int_eq(back.working_set, r.working_set);
    ck_assert_uint_eq(back.n_limit_dumps, HA_RUNREC_LIMIT_DUMPS);
    ck_assert_int_eq(back.limit_dumps[7].usage, 50000009);
    ck_assert_int_eq(back.limit_dumps[7].working_set, 53900000);
    ck_assert_int_eq(back.limit_dumps[7].ns, r.started_ns + 8000000000LL);
    ck_assert_str_eq(back.limit_dumps[7].file, "proxysql.1.0.m0.heap");
    ck_assert_str_eq(back.how, "");
    {
        const char *bad = "heapadmin-run 1\npid 1\nstarted_ns 2\n"
                          "limit_dump 1 2 x f.heap\n";

        ck_assert_int_eq(ha_runrec_parse(bad, strlen(bad), &back, err,
                                         sizeof(err)),
                         -1);
        ck_assert_str_eq(err, "line 4: a value that does not parse");
    }

    /* the kernel's count moved: OOM-killed */
    memset(&a, 0, sizeof(a));
    a.oom_kills_now = 1;
    a.newest_dump_ns = r.last_seen_ns + 500000000LL;
    back = r;
    ha_runrec_settle(&back, &a);
    ck_assert_str_eq(back.how, "oom-killed");
    ck_assert_int_eq(back.ended_ns, 0);
    ck_assert_int_eq(back.last_seen_ns, a.newest_dump_ns);
    ck_assert_str_eq(back.detail,
                     "the kernel's OOM killer: the oom_kill count of its "
                     "cgroup v1 /svc/worker went from 0 to 1 after its last "
                     "look; memory limit 64.0 MiB, usage 57.2 MiB at its "
                     "last look (working set 57.1 MiB, 0.893 of the "
                     "limit)");
    len = ha_runrec_format(&back, text, sizeof(text));
    ck_assert_int_eq(ha_runrec_parse(text, (size_t)len, &r, err,
                                     sizeof(err)),
                     0);
    ck_assert_str_eq(r.how, "oom-killed");
    ck_assert_str_eq(r.detail, back.detail);

    /* a clean stop wins over a moved count */
    r.how[0] = '\0';
    a.has_end = true;
    strcpy(a.end_how, "stopped");
    a.end_ns = r.last_seen_ns + 1;
    back = r;
    ha_runrec_settle(&back, &a);
    ck_assert_str_eq(back.how, "stopped");
    ck_assert_int_eq(back.ended_ns, a.end_ns);
    /* the count did not move: killed */
    a.has_end = false;
    a.oom_kills_now = 0;
    back = r;
    ha_runrec_settle(&back, &a);
    ck_assert_str_eq(back.how, "killed");
    /* the group is gone: the kernel cannot say */
    a.oom_kills_now = -1;
    back = r;
    ha_runrec_settle(&back, &a);
    ck_assert_str_eq(back.how, "ended");

    ck_assert_int_eq(ha_runrec_parse_end("stopped 123\n", 12, err, 16,
                                         &a.end_ns),
                     0);
    ck_assert_str_eq(err, "stopped");
    ck_assert_int_eq(a.end_ns, 123);
    ck_assert_int_eq(ha_runrec_parse_end("gone 123\n", 9, err, 16,
                                         &a.end_ns),
                     -1);
    ck_assert_int_eq(ha_runrec_parse("heapadmin-run 1\nprogram x\n", 26,
                                     &back, err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "no pid or started_ns");
    ck_assert_int_eq(ha_runrec_parse("heapadmin-run 1\npid -4\n", 24, &back,
                                     err, sizeof(err)),
                     -1);
}
END_TEST

START_TEST(test_limit_breakdown_rows)
{
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    struct ha_breakdown_in in;
    int limit = -1, usage = -1, headroom = -1;

    memset(&in, 0, sizeof(in));
    in.cgroup_version = 2;
    in.cgroup_path = "/app.slice/web.service";
    in.limit_path = "/app.slice";
    in.cgroup_limit = 1 << 30;
    in.cgroup_usage = 800 << 20;
    in.cgroup_working_set = 700 << 20;
    ha_breakdown_compute(&in, rows);
    for (int i = 0; i < HA_BREAKDOWN_ROWS; i++) {
        if (strcmp(rows[i].component, "cgroup.limit") == 0)
            limit = i;
        else if (strcmp(rows[i].component, "cgroup.usage") == 0)
            usage = i;
        else if (strcmp(rows[i].component, "cgroup.headroom") == 0)
            headroom = i;
    }
    ck_assert(limit >= 0 && usage >= 0 && headroom >= 0);
    ck_assert(rows[limit].known && rows[limit].bytes == 1 << 30);
    ck_assert_int_eq(rows[limit].kind, HA_BREAKDOWN_INFO);
    ck_assert_msg(strstr(rows[limit].detail, "cgroup v2 /app.slice, an "
                                             "ancestor of /app.slice/"
                                             "web.service") != NULL,
                  "%s", rows[limit].detail);
    ck_assert(rows[usage].known && rows[usage].bytes == 800 << 20);
    ck_assert(rows[headroom].known &&
              rows[headroom].bytes == (1 << 30) - (700 << 20));
    ck_assert_msg(strstr(rows[headroom].detail, "324.0 MiB left") != NULL,
                  "%s", rows[headroom].detail);
    /* no limit: the row is there, its bytes unknown, and says why */
    in.cgroup_limit = -1;
    ha_breakdown_compute(&in, rows);
    ck_assert(!rows[limit].known && !rows[headroom].known);
    ck_assert(rows[usage].known);
    ck_assert_str_eq(rows[limit].detail,
                     "no memory limit on cgroup v2 /app.slice/web.service "
                     "or above it");
}
END_TEST

/* Names under earlier-runs/ pass the file rule, each part plain; a
 * planted symlink at any part leads nowhere. */
START_TEST(test_limit_earlier_runs_names)
{
    char dir[] = "/tmp/ha-limit-XXXXXX", path[512], why[512], *buf = NULL;
    struct stat st;
    size_t len;
    FILE *f;

    ck_assert(ha_dumpfile_name_ok("earlier-runs/proxysql.1.20261127T1200"
                                  "00Z/proxysql.1.0.m3.heap",
                                  HA_DUMPFILE_DUMP, why, sizeof(why)));
    ck_assert(ha_dumpfile_name_ok("earlier-runs/d/proxysql.1.0.m3.heap.mem",
                                  HA_DUMPFILE_MEM, why, sizeof(why)));
    ck_assert(!ha_dumpfile_name_ok("earlier-runs/../proxysql.1.0.m3.heap",
                                   HA_DUMPFILE_DUMP, why, sizeof(why)));
    ck_assert(!ha_dumpfile_name_ok("earlier-runs/a/b/proxysql.1.0.m3.heap",
                                   HA_DUMPFILE_DUMP, why, sizeof(why)));
    ck_assert(!ha_dumpfile_name_ok("other/d/proxysql.1.0.m3.heap",
                                   HA_DUMPFILE_DUMP, why, sizeof(why)));
    ck_assert(!ha_dumpfile_name_ok("earlier-runs/d/heapadmin-key.pem",
                                   HA_DUMPFILE_DUMP, why, sizeof(why)));

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/earlier-runs", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/earlier-runs/run1", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/earlier-runs/run1/p.1.0.m0.heap", dir);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs("heap_v2/1\n", f);
    fclose(f);
    ck_assert_int_eq(ha_dumpfile_read(dir, "earlier-runs/run1/p.1.0.m0.heap",
                                      HA_DUMPFILE_DUMP, &buf, &len, &st, why,
                                      sizeof(why)),
                     0);
    ck_assert_str_eq(buf, "heap_v2/1\n");
    free(buf);
    /* a symlinked run directory is not followed */
    snprintf(path, sizeof(path), "%s/earlier-runs/link", dir);
    ck_assert_int_eq(symlink("run1", path), 0);
    ck_assert_int_eq(ha_dumpfile_read(dir, "earlier-runs/link/p.1.0.m0.heap",
                                      HA_DUMPFILE_DUMP, &buf, &len, &st, why,
                                      sizeof(why)),
                     -1);
    unlink(path);
    snprintf(path, sizeof(path), "%s/earlier-runs/run1/p.1.0.m0.heap", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/earlier-runs/run1", dir);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/earlier-runs", dir);
    rmdir(path);
    rmdir(dir);
}
END_TEST

/* Writes dir/name with text, its mtime sec seconds after the epoch. */
static void
put_file(const char *dir, const char *name, const char *text, time_t sec)
{
    char path[512];
    struct timespec t[2] = {{sec, 0}, {sec, 0}};
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs(text, f);
    fclose(f);
    ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

static bool
exists_in(const char *dir, const char *name)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Retention keeps each run's peak, and an ended run's limit dumps, out
 * of rotation. */
START_TEST(test_limit_retention_holds_peaks)
{
    char dir[] = "/tmp/ha-retain-XXXXXX", prefix[64], cmd[128];
    long self = (long)getpid();
    char name[64], mem[256];
    int removed;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof(prefix), "%s/p", dir);
    /* a gone run (pid 999999999): dumps 0..3, its peak the second, its
     * third a limit dump */
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "p.999999999.%d.m%d.heap", i, i);
        put_file(dir, name, "heap_v2/1\n", 1000 + i);
        snprintf(mem, sizeof(mem),
                 "heapadmin-dump-memory 1\ntrigger %s\nresident %d\n",
                 i == 2 ? "limit" : "manual", i == 1 ? 500 : 100 + i);
        snprintf(name, sizeof(name), "p.999999999.%d.m%d.heap.mem", i, i);
        put_file(dir, name, mem, 1000 + i);
    }
    /* this run: dumps 0..3, its peak the first */
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "p.%ld.%d.m%d.heap", self, i, i);
        put_file(dir, name, "heap_v2/1\n", 2000 + i);
        snprintf(mem, sizeof(mem),
                 "heapadmin-dump-memory 1\ntrigger manual\nresident %d\n",
                 i == 0 ? 900 : 10 + i);
        snprintf(name, sizeof(name), "p.%ld.%d.m%d.heap.mem", self, i, i);
        put_file(dir, name, mem, 2000 + i);
    }
    removed = ha_dumpfiles_retain(prefix, 2, 0);
    /* 8 dumps, 3 held (two peaks, the gone run's limit dump), the newest
     * always stays: 4 go */
    ck_assert_int_eq(removed, 4);
    ck_assert(exists_in(dir, "p.999999999.1.m1.heap"));
    ck_assert(exists_in(dir, "p.999999999.1.m1.heap.mem"));
    ck_assert(exists_in(dir, "p.999999999.2.m2.heap"));
    ck_assert(!exists_in(dir, "p.999999999.0.m0.heap"));
    ck_assert(!exists_in(dir, "p.999999999.0.m0.heap.mem"));
    ck_assert(!exists_in(dir, "p.999999999.3.m3.heap"));
    snprintf(name, sizeof(name), "p.%ld.0.m0.heap", self);
    ck_assert(exists_in(dir, name));
    snprintf(name, sizeof(name), "p.%ld.3.m3.heap", self);
    ck_assert(exists_in(dir, name));
    snprintf(name, sizeof(name), "p.%ld.1.m1.heap", self);
    ck_assert(!exists_in(dir, name));
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST


/* Earlier runs settled from their records, the kernel's count and their
 * dumps, the pid-1 rule's moved ones included: two runs of pid 1 (a
 * container restarted twice), the first OOM-killed with its dumps moved
 * to earlier-runs/, the second gone without a word. */
START_TEST(test_limit_runs_settled)
{
    char dir[] = "/tmp/ha-runs-XXXXXX", sub[512], text[1024], cmd[600];
    const int64_t S = 1700000000LL * 1000000000LL;
    const char *moved = "earlier-runs/p.1.20231114T221320Z";
    struct ha_run_list l;
    struct ha_runrec r;
    char err[128], buf[4096];
    FILE *f;
    size_t n;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/runs", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof(sub), "%s/cg", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    put_file(sub, "memory.oom_control",
             "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", 0);
    snprintf(sub, sizeof(sub), "%s/earlier-runs", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof(sub), "%s/%s", dir, moved);
    ck_assert_int_eq(mkdir(sub, 0700), 0);

    ha_runrec_init(&r);
    r.pid = 1;
    strcpy(r.program, "svc");
    strcpy(r.prefix, "p");
    r.started_ns = S;
    r.cgroup_version = 1;
    strcpy(r.cgroup_path, "/T");
    snprintf(r.cgroup_dir, sizeof(r.cgroup_dir), "%s/cg", dir);
    r.limit = 64 << 20;
    r.oom_kills = 0;
    r.last_seen_ns = S + 10000000000LL;
    r.peak_resident = 50;
    ck_assert_int_eq(ha_runs_write(dir, &r), 0);
    ha_runrec_init(&r);
    r.pid = 1;
    strcpy(r.program, "svc");
    strcpy(r.prefix, "p");
    r.started_ns = S + 50000000000LL;
    ck_assert_int_eq(ha_runs_write(dir, &r), 0);

    /* the first run's dumps, moved aside at the second's start */
    for (int i = 0; i < 3; i++) {
        char name[64];

        snprintf(name, sizeof(name), "p.1.%d.m%d.heap", i, i);
        put_file(sub, name, "heap_v2/1\n", 1700000000 + 5 + i);
        snprintf(text, sizeof(text),
                 "heapadmin-dump-memory 1\ntrigger %s\nresident %d\n",
                 i < 2 ? "limit" : "jemalloc", i == 1 ? 300 : 100 + i);
        snprintf(name, sizeof(name), "p.1.%d.m%d.heap.mem", i, i);
        put_file(sub, name, text, 1700000000 + 5 + i);
    }
    /* the second run's, in the datadir */
    put_file(dir, "p.1.0.m0.heap", "heap_v2/1\n", 1700000000 + 100);
    /* a writer killed mid-write (kill -9 between the new file and its
     * rename) left half a record under a temporary name: the record it
     * was to replace stays whole, and the leftover goes once its writer
     * is gone */
    {
        pid_t gone = fork();
        char tmpname[96];

        ck_assert_int_ge(gone, 0);
        if (gone == 0)
            _exit(0);
        ck_assert_int_eq(waitpid(gone, NULL, 0), gone);
        snprintf(tmpname, sizeof(tmpname), "1.%lld.run.tmp%ld",
                 (long long)(S + 50000000000LL), (long)gone);
        snprintf(sub, sizeof(sub), "%s/runs", dir);
        put_file(sub, tmpname, "heapadmin-run 1\npid 1\nstart", 0);
        ck_assert_int_eq(ha_runs_list_now(dir, &l), 0);
        ck_assert_uint_eq(l.n, 2);
        ha_run_list_free(&l);
        snprintf(text, sizeof(text), "%s/%s", sub, tmpname);
        ck_assert_int_ne(access(text, F_OK), 0);
        snprintf(sub, sizeof(sub), "%s/%s", dir, moved);
    }
    /* the listing above settled both: undo, as if it had not run */
    ha_runrec_init(&r);
    r.pid = 1;
    strcpy(r.program, "svc");
    strcpy(r.prefix, "p");
    r.started_ns = S;
    r.cgroup_version = 1;
    strcpy(r.cgroup_path, "/T");
    snprintf(r.cgroup_dir, sizeof(r.cgroup_dir), "%s/cg", dir);
    r.limit = 64 << 20;
    r.oom_kills = 0;
    r.last_seen_ns = S + 10000000000LL;
    r.peak_resident = 50;
    ck_assert_int_eq(ha_runs_write(dir, &r), 0);
    ha_runrec_init(&r);
    r.pid = 1;
    strcpy(r.program, "svc");
    strcpy(r.prefix, "p");
    r.started_ns = S + 50000000000LL;
    ck_assert_int_eq(ha_runs_write(dir, &r), 0);

    ck_assert_int_eq(ha_runs_list_now(dir, &l), 0);
    ck_assert_uint_eq(l.n, 2);
    /* newest first: the second run, gone without a clean stop or a
     * cgroup to ask */
    ck_assert_int_eq(l.e[0].r.started_ns, S + 50000000000LL);
    ck_assert(!l.e[0].alive);
    ck_assert_str_eq(l.e[0].r.how, "killed");
    ck_assert_int_eq(l.e[0].n_dumps, 1);
    ck_assert_str_eq(l.e[0].last_dump, "p.1.0.m0.heap");
    /* the first: OOM-killed, its dumps found where they were moved */
    ck_assert_str_eq(l.e[1].r.how, "oom-killed");
    ck_assert_int_eq(l.e[1].n_dumps, 3);
    snprintf(text, sizeof(text), "%s/p.1.1.m1.heap", moved);
    ck_assert_str_eq(l.e[1].peak_dump, text);
    ck_assert_int_eq(l.e[1].peak_resident, 300);
    snprintf(text, sizeof(text), "%s/p.1.0.m0.heap, %s/p.1.1.m1.heap", moved,
             moved);
    ck_assert_str_eq(l.e[1].limit_dumps, text);
    snprintf(text, sizeof(text), "%s/p.1.2.m2.heap", moved);
    ck_assert_str_eq(l.e[1].last_dump, text);
    ck_assert(l.e[1].r.last_seen_ns >= (1700000000LL + 7) * 1000000000LL);
    ha_run_list_free(&l);
    /* settled once, written down: the record says it */
    snprintf(sub, sizeof(sub), "%s/runs/1.%lld.run", dir, (long long)S);
    ck_assert_ptr_nonnull(f = fopen(sub, "r"));
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    ck_assert_int_eq(ha_runrec_parse(buf, n, &r, err, sizeof(err)), 0);
    ck_assert_str_eq(r.how, "oom-killed");
    /* the dump names it gives are ones the file rule reads */
    snprintf(text, sizeof(text), "%s/p.1.1.m1.heap", moved);
    ck_assert(ha_dumpfile_name_ok(text, HA_DUMPFILE_DUMP, err, sizeof(err)));
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *
limit_suite(void)
{
    Suite *s = suite_create("limit");
    TCase *core = tcase_create("core");
    TCase *errors = tcase_create("errors");

    tcase_add_test(core, test_limit_parse_procfile);
    tcase_add_test(core, test_limit_parse_mountinfo);
    tcase_add_test(core, test_limit_parse_values);
    tcase_add_test(core, test_limit_parse_psi);
    tcase_add_test(core, test_limit_read_v1_nested);
    tcase_add_test(core, test_limit_read_v1_unlimited);
    tcase_add_test(core, test_limit_read_v1_container);
    tcase_add_test(core, test_limit_read_v2_nested);
    tcase_add_test(core, test_limit_read_v2_max);
    tcase_add_test(core, test_limit_read_this_machine);
    tcase_add_test(core, test_limit_fractions_parse);
    tcase_add_test(core, test_limit_rule_levels);
    tcase_add_test(core, test_limit_rule_bursts);
    tcase_add_test(core, test_limit_rule_events_psi);
    tcase_add_test(core, test_limit_rule_pace);
    tcase_add_test(core, test_limit_rule_glance);
    tcase_add_test(core, test_limit_dumpmem_roundtrip);
    tcase_add_test(core, test_limit_runrec);
    tcase_add_test(core, test_limit_breakdown_rows);
    tcase_add_test(core, test_limit_earlier_runs_names);
    tcase_add_test(core, test_limit_retention_holds_peaks);
    tcase_add_test(core, test_limit_runs_settled);
    tcase_add_test(errors, test_limit_read_none);
    suite_add_tcase(s, core);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(limit_suite)
