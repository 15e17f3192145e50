/* SPDX-License-Identifier: MIT
 *
 * Unit tests for core/: the Prometheus / OpenMetrics writer (expo.h),
 * fibers (fiber.h), the worker's run lock (worker.h), the radix sort
 * (radix.h), the id map (idmap.h) and hex digits (util.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "check_main.h"

#include "core/agenthttp.h"
#include "core/agentreg.h"
#include "core/blockio.h"
#include "core/clock.h"
#include "core/buf.h"
#include "core/dirwalk.h"
#include "core/expo.h"
#include "core/fdio.h"
#include "core/exposcan.h"
#include "core/users.h"
#include "core/fiber.h"
#include "core/forkguard.h"
#include "core/idmap.h"
#include "core/radix.h"
#include "core/sha.h"
#include "core/smallfile.h"
#include "core/task.h"
#include "core/util.h"
#include "core/worker.h"

#include <openssl/sha.h>
#include <jemalloc/jemalloc.h>

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

/* Paused tasks take turns: three statements that each log and pause
 * for a slice three times, run one loop pass at a time; and a login
 * opening its session, which logs and pauses for a step three times. */
struct turner {
    struct ha_task task;
    int id;
    bool step;                     /* ha_task_step, not ha_task_slice */
    int *log, *n;
};

static void
turner_body(void *arg)
{
    struct turner *t = arg;

    for (int i = 0; i < 3; i++) {
        t->log[(*t->n)++] = t->id;
        if (t->step)
            ha_task_step(&t->task);
        else
            ha_task_slice(&t->task);
    }
}

static void
turner_done(void *arg)
{
    (void)arg;
}

/* Runs the three (and, with stepper, a fourth that steps, started
 * last) with or without the scheduler; per_pass[k]: the slices loop pass
 * k ran. Returns the number of passes until all had ended. */
static int
run_turners(bool sched, bool stepper, int *log, int *n, int *per_pass)
{
    struct event_base *base = event_base_new();
    struct ha_fiber_pool pool = {0};
    struct ha_task_env env;
    struct turner t[4];
    int passes = 0, nt = stepper ? 4 : 3, running = nt;

    memset(&env, 0, sizeof(env));
    env.base = base;
    env.fibers = &pool;
    env.sched = sched ? ha_task_sched_new(base) : NULL;
    *n = 0;
    for (int i = 0; i < nt; i++) {
        ha_task_init(&t[i].task, &env);
        t[i].id = i;
        t[i].step = i == 3;
        t[i].log = log;
        t[i].n = n;
        ck_assert_int_eq(ha_task_run(&t[i].task, turner_body, turner_done,
                                     &t[i]),
                         1);
    }
    ck_assert_int_eq(*n, nt); /* each ran to its first slice */
    while (running > 0 && passes < 50) {
        int before = *n;

        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        per_pass[passes++] = *n - before;
        running = 0;
        for (int i = 0; i < nt; i++)
            running += ha_task_busy(&t[i].task);
    }
    for (int i = 0; i < nt; i++)
        ha_task_release(&t[i].task);
    ha_task_sched_free(env.sched);
    ha_fiber_pool_clear(&pool);
    event_base_free(base);
    return passes;
}

START_TEST(test_task_turns)
{
    int log[16], n, per_pass[64], passes;
    static const int order[9] = {0, 1, 2, 0, 1, 2, 0, 1, 2};

    /* One slice a pass, in turn: whatever else the loop has to serve
     * waits for one slice, not for every paused task's. */
    passes = run_turners(true, false, log, &n, per_pass);
    ck_assert_int_eq(n, 9);
    for (int i = 0; i < 9; i++)
        ck_assert_int_eq(log[i], order[i]);
    for (int k = 0; k < passes; k++)
        ck_assert_int_le(per_pass[k], 1);
    ck_assert_int_ge(passes, 9); /* 6 logging slices, 3 last ones */
    /* Without it, one pass ran every paused task's slice: the rule the
     * scheduler exists to change. */
    passes = run_turners(false, false, log, &n, per_pass);
    ck_assert_int_eq(n, 9);
    ck_assert_int_eq(per_pass[0], 3);
}
END_TEST

/* A login's steps go before the paused statements' slices: started last,
 * it ends before any of them takes another turn (with ha_task_slice it
 * would wait behind all three at every pause: 0 1 2 3 0 1 2 3 ...). */
START_TEST(test_task_steps_go_first)
{
    int log[16], n, per_pass[64];
    static const int order[12] = {0, 1, 2, 3, 3, 3, 0, 1, 2, 0, 1, 2};

    (void)run_turners(true, true, log, &n, per_pass);
    ck_assert_int_eq(n, 12);
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(log[i], order[i]);
    for (int k = 0; k < 9; k++)
        ck_assert_int_le(per_pass[k], 1); /* still one turn a pass */
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

/* Every byte: 0-9, a-f and A-F have their values, nothing else has one
 * (a NUL, '/', ':', '@', 'G', '`', 'g', bytes above 0x7f). */
START_TEST(test_hex_digit_every_byte)
{
    static const char digits[] = "0123456789abcdef";

    for (int i = 0; i < 256; i++) {
        char c = (char)i;
        const char *at = i != 0 ? strchr(digits, i >= 'A' && i <= 'F'
                                                     ? i - 'A' + 'a'
                                                     : i)
                                : NULL;
        int want = at != NULL ? (int)(at - digits) : -1;

        ck_assert_msg(ha_hex_digit(c) == want, "byte 0x%02x: %d, want %d",
                      i, ha_hex_digit(c), want);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Worker: what jobs own stays one thread's                            */
/* ------------------------------------------------------------------ */

struct run_here_probe {
    _Atomic int a_running;   /* job A is inside its run */
    _Atomic int b_waiting;   /* the test thread is about to run B */
    _Atomic int a_seen;      /* B ran while A was running */
    _Atomic int b_ran;
};

static void
job_a_run(void *arg)
{
    struct run_here_probe *p = arg;
    struct timespec ms = {0, 1000000};

    atomic_store(&p->a_running, 1);
    while (atomic_load(&p->b_waiting) == 0)
        nanosleep(&ms, NULL);
    /* B is being run now; give it time to run beside A if it could. */
    for (int i = 0; i < 20; i++)
        nanosleep(&ms, NULL);
    atomic_store(&p->a_running, 0);
}

static void
job_a_done(void *arg)
{
    (void)arg;
}

static void
run_b(void *arg)
{
    struct run_here_probe *p = arg;

    atomic_store(&p->a_seen, atomic_load(&p->a_running));
    atomic_store(&p->b_ran, 1);
}

/* A job run in the worker's place (a task that cannot wait) waits for the
 * worker's running job: the symbolizer and the dumps' totals are never
 * used by two threads at once. Without the lock B would run while A
 * sleeps; with it B always runs after A, whatever the timing. */
START_TEST(test_worker_run_here_waits_for_the_running_job)
{
    struct event_base *base = event_base_new();
    struct run_here_probe p;
    struct ha_job a = {.run = job_a_run, .done = job_a_done, .arg = &p};
    struct ha_worker *w;
    struct timespec ms = {0, 1000000};
    char err[256];

    memset(&p, 0, sizeof(p));
    ck_assert_ptr_nonnull(base);
    w = ha_worker_new(base, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(ha_worker_submit(w, &a, err, sizeof(err)), 0);
    while (atomic_load(&p.a_running) == 0)
        nanosleep(&ms, NULL);
    atomic_store(&p.b_waiting, 1);
    ha_worker_run_here(w, run_b, &p);
    ck_assert_int_eq(atomic_load(&p.b_ran), 1);
    ck_assert_msg(atomic_load(&p.a_seen) == 0,
                  "ran beside the worker's job");
    ha_worker_free(w);
    ck_assert(a.ran);
    /* No worker: it runs at once. */
    atomic_store(&p.b_ran, 0);
    ha_worker_run_here(NULL, run_b, &p);
    ck_assert_int_eq(atomic_load(&p.b_ran), 1);
    event_base_free(base);
}
END_TEST

/* Every key put is found with its value through several growths, keys
 * never put are not, a value of UINT32_MAX is refused, and a cleared map
 * is empty but usable. */
START_TEST(test_idmap_put_get_grow_clear)
{
    struct ha_idmap m = {0};
    const uint32_t n = 20000;
    uint32_t v;

    ck_assert(!ha_idmap_get(&m, 1, &v));
    for (uint32_t i = 0; i < n; i++)
        ck_assert_int_eq(ha_idmap_put(&m, (uint64_t)i << 32 | i * 7, i), 0);
    ck_assert_uint_eq(m.n, n);
    ck_assert_uint_ge(m.cap, 2 * (size_t)n);
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_msg(ha_idmap_get(&m, (uint64_t)i << 32 | i * 7, &v),
                      "key %u lost", i);
        ck_assert_uint_eq(v, i);
    }
    ck_assert(!ha_idmap_get(&m, (uint64_t)n << 32 | n * 7, &v));
    ck_assert_int_eq(ha_idmap_put(&m, 5, UINT32_MAX), -1);
    ck_assert(!ha_idmap_get(&m, 5, &v));
    ha_idmap_clear(&m);
    ck_assert_uint_eq(m.n, 0);
    ck_assert(!ha_idmap_get(&m, 0, &v));
    ck_assert_int_eq(ha_idmap_put(&m, 0, 0), 0);
    ck_assert(ha_idmap_get(&m, 0, &v));
    ck_assert_uint_eq(v, 0);
    ha_idmap_free(&m);
    ck_assert_ptr_null(m.keys);
    ck_assert_uint_eq(m.cap, 0);
}
END_TEST


/* ------------------------------------------------------------------ */
/* Exposition reader (the gateway's merge)                             */
/* ------------------------------------------------------------------ */

/* What an agent serves: a gauge, a labelled gauge and a counter. */
static void
agent_text(struct ha_buf *out, double resident, double questions)
{
    static const char *const labels[] = {"type", "a\"b\\c\nd", NULL};
    struct ha_expo e;

    ha_expo_init(&e, out, HA_EXPO_PROMETHEUS);
    ha_expo_one(&e, "x_resident_bytes", HA_EXPO_GAUGE, "Resident\nbytes.",
                resident);
    ha_expo_family(&e, "x_bytes", HA_EXPO_GAUGE, "By type.");
    ha_expo_sample(&e, labels, 7);
    ha_expo_one(&e, "x_questions", HA_EXPO_COUNTER, "Questions.", questions);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
}

/* The families the tests' gateway accepts. */
static const struct ha_exposcan_rule test_rules[] = {
    {"x_resident_bytes", HA_EXPO_GAUGE, "", "Resident\nbytes."},
    {"x_bytes", HA_EXPO_GAUGE, "type", "By type."},
    {"x_questions", HA_EXPO_COUNTER, "", "Questions."},
};
static const struct ha_exposcan_policy test_policy = {
    test_rules, 3, "pid program user", 100, 1 << 20,
};

/* Two processes' metrics become one exposition: each family announced
 * once, each sample with its pid and program first, label values and
 * HELP escapes kept, a counter's _total put back in either format. */
START_TEST(test_exposcan_relabels_and_merges)
{
    struct ha_buf a = HA_BUF_INIT, b = HA_BUF_INIT, out = HA_BUF_INIT;
    struct ha_exposcan s;
    struct ha_exposcan_report rep;
    const char *pa[] = {"pid", "10", "program", "nginx", NULL};
    const char *pb[] = {"pid", "11", "program", "nginx", NULL};
    struct ha_expo e;
    const char *t;

    ha_exposcan_init(&s, &test_policy);
    agent_text(&a, 1000, 5);
    agent_text(&b, 2000, 6);
    ck_assert_int_eq(ha_exposcan_add(&s, (const char *)a.data, a.len, pa,
                                     &rep), 0);
    ck_assert_uint_eq(rep.accepted, 3);
    ck_assert_int_eq(ha_exposcan_add(&s, (const char *)b.data, b.len, pb,
                                     &rep), 0);
    ck_assert_uint_eq(rep.accepted, 3);
    for (int i = 0; i < HA_EXPOSCAN_REFUSAL_MAX; i++)
        ck_assert_uint_eq(rep.refused[i], 0);
    ck_assert_uint_eq(s.n, 3);
    ha_expo_init(&e, &out, HA_EXPO_PROMETHEUS);
    ha_exposcan_write(&s, &e);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    ha_buf_append_u8(&out, 0);
    t = (const char *)out.data;
    ck_assert_msg(strstr(t, "# HELP x_resident_bytes Resident\\nbytes.\n"
                            "# TYPE x_resident_bytes gauge\n"
                            "x_resident_bytes{pid=\"10\",program=\"nginx\"} "
                            "1000\n"
                            "x_resident_bytes{pid=\"11\",program=\"nginx\"} "
                            "2000\n") != NULL,
                  "%s", t);
    ck_assert_msg(strstr(t, "x_bytes{pid=\"11\",program=\"nginx\",type=\"a\\\"b"
                            "\\\\c\\nd\"} 7\n") != NULL,
                  "%s", t);
    ck_assert_msg(strstr(t, "# TYPE x_questions_total counter\n"
                            "x_questions_total{pid=\"10\",program=\"nginx\"} "
                            "5\n") != NULL,
                  "%s", t);
    ck_assert_ptr_null(strstr(strstr(t, "# TYPE x_questions") + 1,
                              "# TYPE x_questions"));
    ha_buf_reset(&out);
    ha_expo_init(&e, &out, HA_EXPO_OPENMETRICS);
    ha_exposcan_write(&s, &e);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    ha_buf_append_u8(&out, 0);
    t = (const char *)out.data;
    ck_assert_msg(strstr(t, "# TYPE x_questions counter\n"
                            "x_questions_total{pid=\"10\",program=\"nginx\"} "
                            "5\n") != NULL &&
                      strstr(t, "# EOF\n") != NULL,
                  "%s", t);
    ha_exposcan_free(&s);
    ha_buf_free(&a);
    ha_buf_free(&b);
    ha_buf_free(&out);
}
END_TEST

/* What a forging neighbour answers: nothing of it is copied through.
 * Its own pid/program labels are renamed exported_*, a second HELP/TYPE
 * is ignored, foreign families, NaN, infinities, negative counters,
 * repeated labels and series, bad UTF-8 and malformed lines are refused
 * and counted; a finite absurd value is its own process's figure. */
START_TEST(test_exposcan_refuses_forgeries)
{
    static const char text[] =
        "# HELP x_resident_bytes Forged help.\n"
        "# TYPE x_resident_bytes counter\n"
        "x_resident_bytes{pid=\"8393\",program=\"nginx\"} 999999999\n"
        "# HELP x_resident_bytes Again.\n"
        "x_resident_bytes 1e300\n"
        "evil_family 1\n"
        "x_bytes{type=\"nan\"} NaN\n"
        "x_bytes{type=\"inf\"} +Inf\n"
        "x_bytes{type=\"a\",type=\"b\"} 1\n"
        "x_bytes{type=\"a\"} 2\n"
        "x_bytes{type=\"a\"} 3\n"
        "x_bytes{other=\"a\"} 4\n"
        "x_bytes{type=\"\xff\xfe\"} 5\n"
        "x_bytes{type=\"bad\\escape\"} 6\n"
        "x_questions_total -1\n"
        "x_questions 7\n"
        "x_bytes{type=\"u\",user=\"root\"} 8 1700000000\n"
        "g{a=\"unterminated} 2\n"
        "x_bytes{type=\"x\"} notanumber\n"
        "x_bytes{type=\"hex\"} 0x10\n"
        "9bad 1\n";
    const char *extra[] = {"pid", "25663", "program", "python3", NULL};
    struct ha_exposcan s;
    struct ha_exposcan_report rep;
    struct ha_buf out = HA_BUF_INIT;
    struct ha_expo e;
    const char *t;

    ha_exposcan_init(&s, &test_policy);
    ck_assert_int_eq(ha_exposcan_add(&s, text, sizeof(text) - 1, extra, &rep),
                     0);
    ck_assert_uint_eq(rep.accepted, 4);
    ck_assert_uint_eq(rep.renamed, 2);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_FAMILY], 2);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_VALUE], 3);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_DUP_LABEL], 1);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_DUP_SERIES], 1);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_LABEL], 1);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_MALFORMED], 6);
    ha_expo_init(&e, &out, HA_EXPO_PROMETHEUS);
    ha_exposcan_write(&s, &e);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    ha_buf_append_u8(&out, 0);
    t = (const char *)out.data;
    ck_assert_msg(strstr(t, "# HELP x_resident_bytes Resident\\nbytes.\n"
                            "# TYPE x_resident_bytes gauge\n"
                            "x_resident_bytes{pid=\"25663\",program="
                            "\"python3\",exported_pid=\"8393\","
                            "exported_program=\"nginx\"} 999999999\n"
                            "x_resident_bytes{pid=\"25663\",program="
                            "\"python3\"} 1.0000000000000001e+300\n") != NULL,
                  "%s", t);
    ck_assert_msg(strstr(t, "exported_user=\"root\"} 8\n") != NULL, "%s", t);
    ck_assert_ptr_null(strstr(t, "Forged"));
    ck_assert_ptr_null(strstr(t, "evil"));
    ck_assert_ptr_null(strstr(t, "NaN"));
    ck_assert_ptr_null(strstr(t, "Inf"));
    ha_exposcan_free(&s);
    ha_buf_free(&out);
}
END_TEST

/* A process's own program and pid where the caller sets the same (its
 * leak sites carry them): one label each, nothing renamed; a pid that
 * differs is still renamed. */
START_TEST(test_exposcan_same_labels_kept_once)
{
    static const char text[] =
        "x_bytes{program=\"python3\",pid=\"25663\",type=\"s\"} 9\n"
        "x_bytes{program=\"python3\",pid=\"1\",type=\"t\"} 10\n";
    const char *extra[] = {"pid", "25663", "program", "python3", NULL};
    struct ha_exposcan s;
    struct ha_exposcan_report rep;
    struct ha_buf out = HA_BUF_INIT;
    struct ha_expo e;
    const char *t;

    ha_exposcan_init(&s, &test_policy);
    ck_assert_int_eq(ha_exposcan_add(&s, text, sizeof(text) - 1, extra, &rep),
                     0);
    ck_assert_uint_eq(rep.accepted, 2);
    ck_assert_uint_eq(rep.renamed, 1);
    ha_expo_init(&e, &out, HA_EXPO_PROMETHEUS);
    ha_exposcan_write(&s, &e);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    ha_buf_append_u8(&out, 0);
    t = (const char *)out.data;
    ck_assert_msg(strstr(t, "x_bytes{pid=\"25663\",program=\"python3\","
                            "type=\"s\"} 9\n") != NULL,
                  "%s", t);
    ck_assert_msg(strstr(t, "x_bytes{pid=\"25663\",program=\"python3\","
                            "exported_pid=\"1\",type=\"t\"} 10\n") != NULL,
                  "%s", t);
    ha_exposcan_free(&s);
    ha_buf_free(&out);
}
END_TEST

/* Caps: past max_series the rest is refused and counted; a text past
 * max_bytes is refused whole, counted once; the next text is judged on
 * its own. */
START_TEST(test_exposcan_caps)
{
    struct ha_exposcan_policy pol = test_policy;
    struct ha_exposcan s;
    struct ha_exposcan_report rep;
    struct ha_buf b = HA_BUF_INIT;

    pol.max_series = 10;
    pol.max_bytes = 4096;
    ha_exposcan_init(&s, &pol);
    for (int i = 0; i < 30; i++)
        ha_buf_printf(&b, "x_bytes{type=\"t%d\"} %d\n", i, i);
    ck_assert_int_eq(ha_exposcan_add(&s, (const char *)b.data, b.len, NULL,
                                     &rep), 0);
    ck_assert_uint_eq(rep.accepted, 10);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_SERIES_CAP], 20);
    while (b.len <= 4096)
        ha_buf_append_str(&b, "x_resident_bytes 1\n");
    ck_assert_int_eq(ha_exposcan_add(&s, (const char *)b.data, b.len, NULL,
                                     &rep), 0);
    ck_assert_uint_eq(rep.accepted, 0);
    ck_assert_uint_eq(rep.refused[HA_EXPOSCAN_BYTES_CAP], 1);
    ck_assert_uint_eq(s.families[0].n, 10);
    ck_assert_int_eq(ha_exposcan_add(&s, "x_bytes{type=\"t0\"} 1\n", 21,
                                     NULL, &rep), 0);
    ck_assert_uint_eq(rep.accepted, 1); /* another text: not a duplicate */
    ha_exposcan_free(&s);
    ha_buf_free(&b);
}
END_TEST

/* Whose executable the kernel says a process runs: the basename, or a
 * link in the same directory to the same file; never a name elsewhere. */
static bool
same_if_named_link(const char *path, void *arg)
{
    (void)arg;
    return strcmp(path, "/usr/bin/redis-server") == 0;
}

START_TEST(test_agentreg_exe_matches)
{
    ck_assert(ha_agentreg_exe_matches("/usr/sbin/nginx", "nginx", NULL, NULL));
    ck_assert(ha_agentreg_exe_matches("/usr/sbin/nginx (deleted)", "nginx",
                                      NULL, NULL));
    ck_assert(!ha_agentreg_exe_matches("/usr/bin/python3.11", "nginx",
                                       same_if_named_link, NULL));
    ck_assert(ha_agentreg_exe_matches("/usr/bin/redis-check-rdb",
                                      "redis-server", same_if_named_link,
                                      NULL));
    ck_assert(!ha_agentreg_exe_matches("/usr/bin/redis-check-rdb",
                                       "../bin/redis-server",
                                       same_if_named_link, NULL));
    ck_assert(!ha_agentreg_exe_matches("nginx", "nginx", NULL, NULL));
}
END_TEST

/* User names come from /etc/passwd read directly, never NSS. */
START_TEST(test_users_name_without_nss)
{
    char path[] = "/tmp/check_users.XXXXXX", name[64];
    int fd = mkstemp(path);
    static const char pw[] = "root:x:0:0:root:/root:/bin/bash\n"
                             "broken line\n"
                             "www-data:x:33:33:www-data:/var/www:/usr/sbin/"
                             "nologin\n"
                             "last:x:4242:1::/:/bin/sh";

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, pw, sizeof(pw) - 1), (ssize_t)sizeof(pw) - 1);
    close(fd);
    ck_assert_int_eq(ha_users_name_in(path, 33, name, sizeof(name)), 0);
    ck_assert_str_eq(name, "www-data");
    ck_assert_int_eq(ha_users_name_in(path, 4242, name, sizeof(name)), 0);
    ck_assert_str_eq(name, "last");
    ck_assert_int_eq(ha_users_name_in(path, 3, name, sizeof(name)), -1);
    ck_assert_str_eq(name, "3");
    unlink(path);
    ck_assert_int_eq(ha_users_name(0, name, sizeof(name)), 0);
    ck_assert_str_eq(name, "root");
}
END_TEST

/* ------------------------------------------------------------------ */
/* The agents' registry                                                */
/* ------------------------------------------------------------------ */

START_TEST(test_agentreg_names)
{
    char prog[64];
    pid_t pid = 0;

    ck_assert(ha_agentreg_parse_name("nginx.1234.http", ".http", prog,
                                     sizeof(prog), &pid));
    ck_assert_str_eq(prog, "nginx");
    ck_assert_int_eq(pid, 1234);
    ck_assert(ha_agentreg_parse_name("python3.11.77.http", ".http", prog,
                                     sizeof(prog), &pid));
    ck_assert_str_eq(prog, "python3.11");
    ck_assert_int_eq(pid, 77);
    ck_assert(!ha_agentreg_parse_name("nginx.1234.sock", ".http", prog,
                                      sizeof(prog), &pid));
    ck_assert(!ha_agentreg_parse_name(".1234.http", ".http", prog,
                                      sizeof(prog), &pid));
    ck_assert(!ha_agentreg_parse_name("nginx.0.http", ".http", prog,
                                      sizeof(prog), &pid));
    ck_assert(!ha_agentreg_parse_name("nginx.012.http", ".http", prog,
                                      sizeof(prog), &pid));
    ck_assert(!ha_agentreg_parse_name("nginx.99999999999.http", ".http",
                                      prog, sizeof(prog), &pid));
    ck_assert(!ha_agentreg_parse_name("nginx1234.http", ".http", prog,
                                      sizeof(prog), &pid));
    ck_assert(!ha_agentreg_parse_name("nginx.12a.http", ".http", prog,
                                      sizeof(prog), &pid));
    ck_assert(!ha_agentreg_parse_name("averyveryverylongprogramname.1.http",
                                      ".http", prog, 8, &pid));
}
END_TEST

static int
listen_at(const char *path)
{
    struct sockaddr_un sun;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    ck_assert_int_eq(ha_strlcpy(sun.sun_path, path, sizeof(sun.sun_path)), 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    return fd;
}

/* An agent that answers one request with a fixed reply. */
static void *
answer_one(void *arg)
{
    int lfd = *(int *)arg;
    char buf[1024];
    static const char reply[] = "HTTP/1.0 200 OK\r\nContent-Type: "
                                "text/plain\r\nRetry-After: 7\r\n\r\n"
                                "hello from the agent";

    /* The listing's probes connected and left without a word first. */
    for (;;) {
        int fd = accept(lfd, NULL, NULL);

        if (fd < 0)
            return NULL;
        if (read(fd, buf, sizeof(buf)) > 0) {
            (void)send(fd, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
            close(fd);
            return NULL;
        }
        close(fd);
    }
}

/* A pid no process has. */
static pid_t
dead_pid(void)
{
    for (pid_t p = 4000000; p > 1000; p -= 7919)
        if (kill(p, 0) != 0 && errno == ESRCH)
            return p;
    return 0;
}

/* This test program's name as the kernel has it (/proc/self/exe). */
static void
self_exe_name(char *out, size_t len)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    const char *b;

    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    b = strrchr(exe, '/');
    ha_strlcpy(out, b != NULL ? b + 1 : exe, len);
}

/* Live and stale entries are told apart; links and FIFOs at registry
 * names are not entries and are never followed; cleaning removes the
 * stale entry alone; a peer that is not the named process is not asked;
 * one that is the process but not the program its name says is a
 * mismatch, never asked and never removed; the live one answers. */
START_TEST(test_agentreg_lists_cleans_and_asks)
{
    char dir[] = "/tmp/check_agentreg.XXXXXX", live[300], stale[200];
    char link[200], fifo[200], liar[200], target[200], forger[200];
    char prog[128];
    struct ha_agent *list = NULL;
    struct ha_agent_reply rep;
    struct stat st;
    size_t n = 0;
    pid_t gone = dead_pid();
    pthread_t t;
    int lfd, sfd, xfd, ffd;

    ck_assert_int_ne(gone, 0);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    self_exe_name(prog, sizeof(prog));
    snprintf(live, sizeof(live), "%s/%s.%ld.http", dir, prog, (long)getpid());
    snprintf(forger, sizeof(forger), "%s/nginx.%ld.http", dir,
             (long)getpid());
    snprintf(stale, sizeof(stale), "%s/host.%ld.http", dir, (long)gone);
    snprintf(link, sizeof(link), "%s/evil.%ld.http", dir, (long)getpid());
    snprintf(fifo, sizeof(fifo), "%s/fifo.%ld.http", dir, (long)getpid());
    snprintf(liar, sizeof(liar), "%s/liar.%ld.http", dir, (long)getppid());
    snprintf(target, sizeof(target), "%s/target", dir);
    lfd = listen_at(live);
    sfd = listen_at(stale);
    close(sfd); /* kill -9: the file stays, nobody listens */
    xfd = listen_at(liar); /* ours, named after another pid */
    ffd = listen_at(forger); /* ours, named after another program */
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(close(open(target, O_CREAT | O_WRONLY, 0600)), 0);

    ck_assert_int_eq(ha_agentreg_list(dir, &list, &n, NULL, 0), 0);
    ck_assert_uint_eq(n, 4);
    for (size_t i = 0; i < n; i++) {
        if (list[i].pid == getpid() && strcmp(list[i].program, "nginx") == 0)
            ck_assert_msg(list[i].state == HA_AGENT_MISMATCH &&
                              strstr(list[i].why, "/exe is ") != NULL,
                          "%d %s", list[i].state, list[i].why);
        else if (list[i].pid == getpid())
            ck_assert_msg(list[i].state == HA_AGENT_SERVING, "%d %s",
                          list[i].state, list[i].why);
        else if (list[i].pid == getppid())
            ck_assert_msg(list[i].state == HA_AGENT_GONE &&
                              strstr(list[i].why, "not process") != NULL,
                          "%s", list[i].why);
        else
            ck_assert_int_eq(list[i].state, HA_AGENT_GONE);
        ck_assert_uint_eq(list[i].uid, geteuid());
    }
    /* Asked: the live one answers; nothing is sent to the liar. */
    for (size_t i = 0; i < n; i++) {
        if (list[i].pid != getpid() || list[i].state != HA_AGENT_SERVING)
            continue;
        ck_assert_int_eq(pthread_create(&t, NULL, answer_one, &lfd), 0);
        ha_agenthttp_get(&list[i], 1, "GET", "/agent", "X-Test: 1\r\n", NULL,
                        5000, 1024, &rep);
        pthread_join(t, NULL);
        ck_assert_msg(rep.status == 200, "%s", rep.err);
        ck_assert_str_eq(rep.content_type, "text/plain");
        ck_assert_int_eq(rep.retry_after_s, 7);
        ck_assert_uint_eq(rep.body.len, 20);
        ck_assert(memcmp(rep.body.data, "hello from the agent", 20) == 0);
        ha_agenthttp_replies_free(&rep, 1);
    }
    free(list);

    /* The stale one goes (and the liar, whose name promises a process
     * that is not listening there); links, FIFOs and their targets
     * stay. */
    ck_assert_uint_eq(ha_agentreg_clean(dir, NULL, NULL), 2);
    ck_assert_int_ne(lstat(stale, &st), 0);
    ck_assert_int_eq(lstat(live, &st), 0);
    ck_assert_int_eq(lstat(forger, &st), 0);
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(lstat(fifo, &st), 0);
    ck_assert_int_eq(stat(target, &st), 0);
    close(lfd);
    close(xfd);
    close(ffd);
    unlink(forger);
    unlink(live);
    unlink(link);
    unlink(fifo);
    unlink(target);
    unlink(liar);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A process killed while its parent is too busy to reap it is a zombie:
 * /proc/<pid> is still there and its young socket refuses, which alone
 * reads as an agent still starting. It is gone. */
START_TEST(test_agentreg_zombie_is_gone)
{
    char dir[] = "/tmp/check_agentreg.XXXXXX", path[300], prog[128];
    char stat_path[64], buf[512], *p = NULL;
    struct ha_agent *list = NULL;
    size_t n = 0;
    int status, fd;
    pid_t kid;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    self_exe_name(prog, sizeof(prog));
    kid = fork();
    ck_assert_int_ge(kid, 0);
    if (kid == 0) {
        snprintf(path, sizeof(path), "%s/%s.%ld.http", dir, prog,
                 (long)getpid());
        listen_at(path);
        _exit(0);
    }
    snprintf(path, sizeof(path), "%s/%s.%ld.http", dir, prog, (long)kid);
    snprintf(stat_path, sizeof(stat_path), "/proc/%ld/stat", (long)kid);
    for (int i = 0; i < 500; i++) { /* until it is a zombie: 5 s at most */
        fd = open(stat_path, O_RDONLY);
        ck_assert_int_ge(fd, 0);
        ssize_t r = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[r > 0 ? r : 0] = '\0';
        if ((p = strrchr(buf, ')')) != NULL && p[2] == 'Z')
            break;
        p = NULL;
        usleep(10000);
    }
    ck_assert_msg(p != NULL, "child %ld never became a zombie", (long)kid);
    ck_assert_int_eq(ha_agentreg_list(dir, &list, &n, NULL, 0), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(list[0].state == HA_AGENT_GONE &&
                      strstr(list[0].why, "has exited") != NULL,
                  "state %d, %s", list[0].state, list[0].why);
    free(list);
    ck_assert_int_eq(waitpid(kid, &status, 0), kid);
    unlink(path);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A live agent too busy to accept (its backlog full: it is starting
 * while many siblings probe it) is not stale: its socket stays. */
START_TEST(test_agentreg_busy_is_not_stale)
{
    char dir[] = "/tmp/check_agentreg.XXXXXX", path[300], prog[128];
    struct ha_agent *list = NULL;
    struct sockaddr_un sun;
    struct stat st;
    int lfd, held[64], n_held = 0;
    size_t n = 0;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    self_exe_name(prog, sizeof(prog));
    snprintf(path, sizeof(path), "%s/%s.%ld.http", dir, prog, (long)getpid());
    lfd = listen_at(path);
    ck_assert_int_eq(listen(lfd, 0), 0);
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    ck_assert_int_eq(ha_strlcpy(sun.sun_path, path, sizeof(sun.sun_path)), 0);
    /* Fill the backlog: connects that nobody accepts. */
    for (; n_held < 64; n_held++) {
        held[n_held] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        ck_assert_int_ge(held[n_held], 0);
        if (connect(held[n_held], (struct sockaddr *)&sun, sizeof(sun)) != 0) {
            ck_assert_int_eq(errno, EAGAIN);
            close(held[n_held]);
            break;
        }
    }
    ck_assert_int_lt(n_held, 64);
    ck_assert_int_eq(ha_agentreg_list(dir, &list, &n, NULL, 0), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(list[0].state == HA_AGENT_SERVING &&
                      strncmp(list[0].why, "busy: ", 6) == 0,
                  "state %d, %s", list[0].state, list[0].why);
    free(list);
    ck_assert_uint_eq(ha_agentreg_clean(dir, NULL, NULL), 0);
    ck_assert_int_eq(lstat(path, &st), 0);
    for (int i = 0; i < n_held; i++)
        close(held[i]);
    close(lfd);
    unlink(path);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* SHA-1, SHA-256                                                      */
/* ------------------------------------------------------------------ */

/* FIPS 180-4's examples, then every length 0..300 (each padding case)
 * against OpenSSL's. */
START_TEST(test_sha_matches_openssl)
{
    static const uint8_t abc1[] = {0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81,
                                   0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50,
                                   0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d};
    uint8_t buf[300], a[32], b[32];

    ha_sha1("abc", 3, a);
    ck_assert(memcmp(a, abc1, 20) == 0);
    ha_sha256("abc", 3, a);
    ck_assert_uint_eq(a[0], 0xba);
    ck_assert_uint_eq(a[31], 0xad);
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 37 + 11);
    for (size_t n = 0; n <= sizeof(buf); n++) {
        ha_sha1(buf, n, a);
        SHA1(buf, n, b);
        ck_assert_msg(memcmp(a, b, 20) == 0, "sha1 of %zu bytes", n);
        ha_sha256(buf, n, a);
        SHA256(buf, n, b);
        ck_assert_msg(memcmp(a, b, 32) == 0, "sha256 of %zu bytes", n);
    }
}
END_TEST

/* ha_utc_tm agrees with glibc's gmtime_r field by field: the epoch,
 * either side of it, leap days (2000 is one, 1900 and 2100 are not),
 * ends of years, and a spread of times up to the year 9999. */
START_TEST(test_utc_tm_matches_gmtime)
{
    static const int64_t fixed[] = {
        0,          -1,         86399,       86400,      -86400,
        951782400,  951868799,  951868800,   -2203891200, 4107456000,
        4107542400, 1798761599, 1798761600,  253402300799, -62135596800,
    };
    uint64_t x = 88172645463325252ull;
    char buf[40];

    for (int i = 0; i < 20000 + (int)HA_ARRAY_SIZE(fixed); i++) {
        int64_t t;
        time_t tt;
        struct tm want, got;

        if (i < (int)HA_ARRAY_SIZE(fixed)) {
            t = fixed[i];
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t = (int64_t)(x % 253402300800ull) - 2208988800LL;
        }
        tt = (time_t)t;
        ck_assert_ptr_nonnull(gmtime_r(&tt, &want));
        ha_utc_tm(t, &got);
        ck_assert_msg(got.tm_year == want.tm_year && got.tm_mon == want.tm_mon &&
                          got.tm_mday == want.tm_mday &&
                          got.tm_hour == want.tm_hour &&
                          got.tm_min == want.tm_min &&
                          got.tm_sec == want.tm_sec &&
                          got.tm_wday == want.tm_wday &&
                          got.tm_yday == want.tm_yday,
                      "t=%lld: %d-%d-%d %d:%d:%d wday %d yday %d, gmtime "
                      "%d-%d-%d %d:%d:%d wday %d yday %d",
                      (long long)t, got.tm_year, got.tm_mon, got.tm_mday,
                      got.tm_hour, got.tm_min, got.tm_sec, got.tm_wday,
                      got.tm_yday, want.tm_year, want.tm_mon, want.tm_mday,
                      want.tm_hour, want.tm_min, want.tm_sec, want.tm_wday,
                      want.tm_yday);
    }
    ck_assert_int_eq(ha_utc_stamp(buf, sizeof(buf), 951782400, 'T'), 19);
    ck_assert_str_eq(buf, "2000-02-29T00:00:00");
    ck_assert_int_eq(ha_utc_stamp(buf, 11, 951782400, ' '), 10);
    ck_assert_str_eq(buf, "2000-02-29");
}
END_TEST

/* The fork gate (core/forkguard.h): a fork waits for the section open
 * when it came, however long that takes, while a new section waits
 * behind the fork; nested sections touch the gate once; a section that
 * outlasts the bound makes the fork give up. Each step waits for the
 * previous one's proof, never for a time. */
static _Atomic int gate_step;

static void *
gate_holder(void *arg)
{
    (void)arg;
    ha_forkguard_enter();
    ha_forkguard_enter(); /* nested: counted, not a second hold */
    atomic_store(&gate_step, 1);
    while (atomic_load(&gate_step) != 2)
        usleep(1000);
    ha_forkguard_leave();
    ha_forkguard_leave();
    return NULL;
}

static _Atomic int fork_result = -1;

static void *
gate_forker(void *arg)
{
    unsigned max_ms = *(unsigned *)arg;

    atomic_store(&fork_result, ha_forkguard_fork_wait(max_ms));
    if (atomic_load(&fork_result) == 1) {
        while (atomic_load(&gate_step) != 3)
            usleep(1000);
        ha_forkguard_fork_parent();
    }
    return NULL;
}

START_TEST(test_forkguard_waits_for_open_sections)
{
    pthread_t holder, forker;
    unsigned max_ms = 600000;
    int entered;

    atomic_store(&gate_step, 0);
    atomic_store(&fork_result, -1);
    ck_assert_int_eq(pthread_create(&holder, NULL, gate_holder, NULL), 0);
    while (atomic_load(&gate_step) != 1)
        usleep(1000);
    ck_assert_int_eq(pthread_create(&forker, NULL, gate_forker, &max_ms), 0);
    /* Once the fork waits, a new section cannot start. */
    while ((entered = ha_forkguard_try_enter()) == 1)
        ha_forkguard_leave();
    ck_assert_int_eq(atomic_load(&fork_result), -1);
    atomic_store(&gate_step, 2); /* the open section ends */
    while (atomic_load(&fork_result) == -1)
        usleep(1000);
    ck_assert_int_eq(atomic_load(&fork_result), 1);
    ck_assert_int_eq(ha_forkguard_try_enter(), 0); /* the fork is made */
    atomic_store(&gate_step, 3);
    pthread_join(forker, NULL);
    pthread_join(holder, NULL);
    ck_assert_int_eq(ha_forkguard_try_enter(), 1); /* open again */
    ha_forkguard_leave();
    ck_assert_int_ge(ha_forkguard_longest_wait_ns(), 1);

    /* A section that outlasts the bound: the fork gives up, and the
     * gate is open again for everyone. */
    atomic_store(&gate_step, 0);
    atomic_store(&fork_result, -1);
    max_ms = 20;
    ck_assert_int_eq(pthread_create(&holder, NULL, gate_holder, NULL), 0);
    while (atomic_load(&gate_step) != 1)
        usleep(1000);
    ck_assert_int_eq(pthread_create(&forker, NULL, gate_forker, &max_ms), 0);
    pthread_join(forker, NULL);
    ck_assert_int_eq(atomic_load(&fork_result), 0);
    ck_assert_int_eq(ha_forkguard_try_enter(), 1);
    ha_forkguard_leave();
    atomic_store(&gate_step, 2);
    pthread_join(holder, NULL);

    /* A thread inside a section cannot wait for itself. */
    ha_forkguard_enter();
    ck_assert_int_eq(ha_forkguard_fork_wait(10), 0);
    ha_forkguard_leave();
}
END_TEST

/* ------------------------------------------------------------------
 * dirwalk: numbered directory entries without opendir/readdir
 * ------------------------------------------------------------------ */

struct seen {
    long n[700];
    size_t count;
    size_t stop_after;      /* 0: never stop */
};

static bool
note_number(long n, void *arg)
{
    struct seen *s = arg;

    if (s->count < sizeof(s->n) / sizeof(s->n[0]))
        s->n[s->count] = n;
    s->count++;
    return s->stop_after == 0 || s->count < s->stop_after;
}

static bool
seen_has(const struct seen *s, long n)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->n[i] == n)
            return true;
    return false;
}

static void
touch_in(const char *dir, const char *name)
{
    char path[256];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

static void
unlink_in(const char *dir, const char *name)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ck_assert_int_eq(unlink(path), 0);
}

/* Only names that are decimal numbers reach the callback; a number above
 * INT64_MAX, more than 19 digits, a sign, a suffix or a leading dot do
 * not. */
START_TEST(test_dirwalk_numbers_only)
{
    static const char *const names[] = {
        "1", "22", "0", "333", "abc", "4x", "-5", ".7", "+8", "9 ",
        "9223372036854775808", "9223372036854775807", "00000000000000000001",
    };
    char dir[] = "/tmp/ha_dirwalk_XXXXXX", sub[64];
    struct seen s = {.count = 0};

    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (size_t i = 0; i < HA_ARRAY_SIZE(names); i++)
        touch_in(dir, names[i]);
    snprintf(sub, sizeof(sub), "%s/55", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    ck_assert_int_eq(ha_dirwalk_numbers(dir, note_number, &s), 6);
    ck_assert_uint_eq(s.count, 6);
    ck_assert(seen_has(&s, 0) && seen_has(&s, 1) && seen_has(&s, 22) &&
              seen_has(&s, 333) && seen_has(&s, 55) &&
              seen_has(&s, 9223372036854775807L));

    /* The callback ends the walk. */
    memset(&s, 0, sizeof(s));
    s.stop_after = 2;
    ck_assert_int_eq(ha_dirwalk_numbers(dir, note_number, &s), 2);
    ck_assert_uint_eq(s.count, 2);

    for (size_t i = 0; i < HA_ARRAY_SIZE(names); i++)
        unlink_in(dir, names[i]);
    ck_assert_int_eq(rmdir(sub), 0);

    /* Empty: no call, no error. */
    memset(&s, 0, sizeof(s));
    ck_assert_int_eq(ha_dirwalk_numbers(dir, note_number, &s), 0);
    ck_assert_uint_eq(s.count, 0);
    ck_assert_int_eq(rmdir(dir), 0);

    /* What cannot be walked says why. */
    errno = 0;
    ck_assert_int_eq(ha_dirwalk_numbers(dir, note_number, &s), -1);
    ck_assert_int_eq(errno, ENOENT);
    errno = 0;
    ck_assert_int_eq(ha_dirwalk_numbers("/proc/self/status", note_number,
                                        &s), -1);
    ck_assert_int_eq(errno, ENOTDIR);
    ck_assert_uint_eq(s.count, 0);
}
END_TEST

/* More entries than one getdents64 buffer holds: each one once. */
START_TEST(test_dirwalk_many_entries)
{
    char dir[] = "/tmp/ha_dirwalk_XXXXXX", name[32];
    struct seen s = {.count = 0};
    enum { N = 600 };
    static bool got[N];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "%d", 100000 + i);
        touch_in(dir, name);
    }
    ck_assert_int_eq(ha_dirwalk_numbers(dir, note_number, &s), N);
    ck_assert_uint_eq(s.count, N);
    memset(got, 0, sizeof(got));
    for (size_t i = 0; i < s.count; i++) {
        ck_assert(s.n[i] >= 100000 && s.n[i] < 100000 + N);
        ck_assert_msg(!got[s.n[i] - 100000], "%ld twice", s.n[i]);
        got[s.n[i] - 100000] = true;
    }
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "%d", 100000 + i);
        unlink_in(dir, name);
    }
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* The descriptors open now, in ascending order, without the walk's own
 * (which takes the lowest free number, as open(2) gives it). And the
 * walk allocates nothing: jemalloc's count of this thread's allocations
 * does not move (the point of not using opendir, which allocates). */
START_TEST(test_dirwalk_fds)
{
    struct seen s = {.count = 0};
    int p[2], lowest;
    uint64_t *allocated = NULL, before = 0, after = 0;
    size_t len = sizeof(allocated);
    long walked;

    lowest = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(lowest, 0);
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    ck_assert_int_eq(close(lowest), 0);
#if !defined(__SANITIZE_ADDRESS__)
    /* (Under ASan, ASan's allocator serves malloc: nothing to count.) */
    ck_assert_int_eq(mallctl("thread.allocatedp", &allocated, &len, NULL, 0),
                     0);
    before = *allocated;
#endif
    /* (No ck_assert between the two reads: Check allocates to note
     * where each assertion was.) */
    walked = ha_dirwalk_fds(note_number, &s);
#if !defined(__SANITIZE_ADDRESS__)
    after = *allocated;
    ck_assert_uint_eq(after, before);
#else
    (void)allocated;
    (void)before;
    (void)after;
    (void)len;
#endif
    ck_assert_int_gt(walked, 0);
    ck_assert(seen_has(&s, p[0]) && seen_has(&s, p[1]));
    ck_assert_msg(!seen_has(&s, lowest), "the walk's own descriptor %d",
                  lowest);
    for (size_t i = 0; i < s.count; i++) {
        ck_assert_int_ne(fcntl((int)s.n[i], F_GETFD), -1);
        if (i > 0)
            ck_assert_int_lt(s.n[i - 1], s.n[i]);
    }
    close(p[0]);
    close(p[1]);
    memset(&s, 0, sizeof(s));
    ck_assert_int_gt(ha_dirwalk_fds(note_number, &s), 0);
    ck_assert(!seen_has(&s, p[0]) && !seen_has(&s, p[1]));
}
END_TEST

/* The helpers of line-per-key records (prof/dumpmem.c, prof/runrec.c)
 * and of every decimal field read from the kernel or a record. */
START_TEST(test_decimal_appendf_one_line)
{
    static const struct {
        const char *in;
        bool ok;
        uint64_t v;
    } cases[] = {
        {"0", true, 0},
        {"42", true, 42},
        {"9223372036854775807", true, 9223372036854775807ULL},
        {"9223372036854775808", false, 0},
        {"18446744073709551615", false, 0},
        {"00000000000000000001", false, 0}, /* 20 digits */
        {"0000000000000000001", true, 1},   /* 19 */
        {"", false, 0},
        {"-1", false, 0},
        {"+1", false, 0},
        {" 1", false, 0},
        {"1 ", false, 0},
        {"1x", false, 0},
        {"0x1", false, 0},
    };
    char buf[16], line[8];
    size_t at = 0;

    for (size_t i = 0; i < HA_ARRAY_SIZE(cases); i++) {
        uint64_t v = 77;
        const char *s = cases[i].in;

        ck_assert_msg(ha_decimal(s, s + strlen(s), &v) == cases[i].ok,
                      "'%s'", s);
        ck_assert_msg(v == (cases[i].ok ? cases[i].v : 77), "'%s'", s);
    }

    /* A line that does not fit whole is not written, and the ones
     * before it stay. */
    ck_assert(ha_appendf(buf, sizeof(buf), &at, "a %d\n", 1));
    ck_assert(ha_appendf(buf, sizeof(buf), &at, "bb %s\n", "cc"));
    ck_assert_uint_eq(at, 10);
    ck_assert(!ha_appendf(buf, sizeof(buf), &at, "%s", "dddddd"));
    ck_assert_uint_eq(at, 10);
    ck_assert(ha_appendf(buf, sizeof(buf), &at, "%s", "eeeee"));
    ck_assert_uint_eq(at, 15);
    ck_assert_str_eq(buf, "a 1\nbb cc\neeeee");

    ha_one_line("a\nb\r\nc", line, sizeof(line));
    ck_assert_str_eq(line, "a b  c");
    ha_one_line("0123456789", line, sizeof(line));
    ck_assert_str_eq(line, "0123456");
}
END_TEST

/* A small file read whole, cut to the buffer, NUL-terminated; what
 * cannot be read says why; nothing is allocated. */
START_TEST(test_smallfile_read)
{
    char dir[] = "/tmp/ha_smallfile_XXXXXX", path[64], buf[8];
    char big[8192];
    uint64_t *allocated = NULL, before = 0, after = 0;
    size_t len = sizeof(allocated);
    ssize_t n;
    int fd;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/f", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(ha_smallfile_read(path, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "");

    fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    ck_assert_int_eq(write(fd, "0123456789", 10), 10);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_int_eq(ha_smallfile_read(path, buf, sizeof(buf)), 7);
    ck_assert_str_eq(buf, "0123456");
    ck_assert_int_eq(ha_smallfile_read(path, buf, 1), 0);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(ha_smallfile_read(path, big, sizeof(big)), 10);
    ck_assert_str_eq(big, "0123456789");
    ck_assert_int_eq(unlink(path), 0);

    errno = 0;
    ck_assert_int_eq(ha_smallfile_read(path, buf, sizeof(buf)), -1);
    ck_assert_int_eq(errno, ENOENT);
    errno = 0;
    ck_assert_int_eq(ha_smallfile_read(dir, buf, sizeof(buf)), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* A FIFO where a file is expected: refused at once, never waited
     * on (a blocking open would wait for a writer for ever). */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    errno = 0;
    ck_assert_int_eq(ha_smallfile_read(path, buf, sizeof(buf)), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(unlink(path), 0);
    /* A symlink is not followed. */
    ck_assert_int_eq(symlink("/proc/self/status", path), 0);
    errno = 0;
    ck_assert_int_eq(ha_smallfile_read(path, buf, sizeof(buf)), -1);
    ck_assert_int_eq(errno, ELOOP);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);

    /* A /proc file, whole (it is made as it is read). */
#if !defined(__SANITIZE_ADDRESS__)
    ck_assert_int_eq(mallctl("thread.allocatedp", &allocated, &len, NULL, 0),
                     0);
    before = *allocated;
#endif
    n = ha_smallfile_read("/proc/self/status", big, sizeof(big));
#if !defined(__SANITIZE_ADDRESS__)
    after = *allocated;
    ck_assert_uint_eq(after, before);
#else
    (void)allocated;
    (void)before;
    (void)after;
    (void)len;
#endif
    ck_assert_int_gt(n, 0);
    ck_assert_uint_eq(strlen(big), (size_t)n);
    ck_assert_ptr_nonnull(strstr(big, "\nVmRSS:"));
}
END_TEST

/* A buffer written whole, or the errno of the write that failed. */
START_TEST(test_fdio_write_all)
{
    char path[] = "/tmp/ha_fdio_XXXXXX";
    static char big[3 << 20], back[sizeof(big)];
    int fd = mkstemp(path), p[2];
    size_t got = 0;

    ck_assert_int_ge(fd, 0);
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7 + i / 4096);
    ck_assert_int_eq(ha_fdio_write_all(fd, big, sizeof(big)), 0);
    ck_assert_int_eq(ha_fdio_write_all(fd, big, 0), 0);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    while (got < sizeof(back)) {
        ssize_t n = read(fd, back + got, sizeof(back) - got);

        ck_assert_int_gt(n, 0);
        got += (size_t)n;
    }
    ck_assert_int_eq(memcmp(big, back, sizeof(big)), 0);
    close(fd);
    unlink(path);

    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(ha_fdio_write_all(fd, "x", 1), EBADF);
    close(fd);
    signal(SIGPIPE, SIG_IGN);
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    close(p[0]);
    ck_assert_int_eq(ha_fdio_write_all(p[1], "x", 1), EPIPE);
    close(p[1]);
}
END_TEST

/* ------------------------------------------------------------------
 * Disk calls off the loop (core/blockio.h)
 * ------------------------------------------------------------------ */

/* A call that blocks until released, as a call into a disk that stopped
 * answering does, and what became of it. */
struct slow_call {
    _Atomic int release;
    _Atomic int ran;               /* run returned */
    _Atomic int discarded;
    pthread_t thread;              /* the thread it ran on */
};

static void
slow_run(void *arg)
{
    struct slow_call *c = arg;
    struct timespec ms = {0, 1000000};

    c->thread = pthread_self();
    while (atomic_load(&c->release) == 0)
        nanosleep(&ms, NULL);
    atomic_store(&c->ran, 1);
}

static void
slow_discard(void *arg)
{
    struct slow_call *c = arg;

    atomic_store(&c->discarded, 1);
}

/* Unbound, not in a task: the call runs on the calling thread. */
START_TEST(test_blockio_runs_here_unbound)
{
    struct slow_call c;
    char err[256];

    memset(&c, 0, sizeof(c));
    atomic_store(&c.release, 1);
    ck_assert(!ha_blockio_offloading());
    ck_assert_int_eq(ha_blockio_call("a test call", slow_run, slow_discard,
                                     &c, err, sizeof(err)),
                     0);
    ck_assert_int_eq(atomic_load(&c.ran), 1);
    ck_assert(pthread_equal(c.thread, pthread_self()));
}
END_TEST

/* The loop's thread, bound, outside a task: the call runs on the I/O
 * thread, the caller blocks for the timeout at most, the call goes on and
 * its discard comes on the loop once it ends; meanwhile the I/O thread
 * is taken as stuck and a new call fails at once, saying so. */
START_TEST(test_blockio_bound_loop_waits_bounded)
{
    struct event_base *base = event_base_new();
    struct ha_blockio b;
    struct slow_call c, quick;
    struct ha_blockio *prev;
    char err[512];
    int64_t t0, ms;

    memset(&b, 0, sizeof(b));
    memset(&c, 0, sizeof(c));
    memset(&quick, 0, sizeof(quick));
    b.worker = ha_worker_new(base, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(b.worker);
    atomic_store(&b.timeout_ms, 200);
    prev = ha_blockio_bind(&b);
    ck_assert(ha_blockio_offloading());
    t0 = ha_clock_ns();
    ck_assert_int_eq(ha_blockio_call("a test call", slow_run, slow_discard,
                                     &c, err, sizeof(err)),
                     -1);
    ms = (ha_clock_ns() - t0) / 1000000;
    ck_assert_msg(ms >= 190 && ms < 5000, "waited %lld ms", (long long)ms);
    ck_assert_msg(strstr(err, "did not answer within disk_timeout_ms = "
                              "200 (a test call)") != NULL,
                  "%s", err);
    ck_assert_int_eq(atomic_load(&c.discarded), 0);
    /* Stuck past the timeout (counted from when the I/O thread took the
     * call, a little after it was asked for): the next call is not even
     * queued. */
    {
        struct timespec tick = {0, 1000000};
        const char *busy;
        int64_t for_ms;

        for (int i = 0; i < 5000 && !ha_blockio_stuck(&b, &busy, &for_ms);
             i++)
            nanosleep(&tick, NULL);
        ck_assert(ha_blockio_stuck(&b, &busy, &for_ms));
        ck_assert_str_eq(busy, "a test call");
    }
    atomic_store(&quick.release, 1);
    ck_assert_int_eq(ha_blockio_call("another call", slow_run, slow_discard,
                                     &quick, err, sizeof(err)),
                     -1);
    ck_assert_msg(strstr(err, "has not answered for") != NULL &&
                      strstr(err, "a test call since") != NULL &&
                      strstr(err, "another call was not tried") != NULL,
                  "%s", err);
    ck_assert_int_eq(atomic_load(&quick.discarded), 1);
    ck_assert_int_eq(atomic_load(&quick.ran), 0);
    /* The disk answers: the call ends on the I/O thread, its discard on
     * the loop. */
    atomic_store(&c.release, 1);
    for (int i = 0; i < 5000 && atomic_load(&c.discarded) == 0; i++)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_eq(atomic_load(&c.ran), 1);
    ck_assert_int_eq(atomic_load(&c.discarded), 1);
    ck_assert(!pthread_equal(c.thread, pthread_self()));
    /* And it answers again. */
    memset(&quick, 0, sizeof(quick));
    atomic_store(&quick.release, 1);
    ck_assert_int_eq(ha_blockio_call("another call", slow_run, slow_discard,
                                     &quick, err, sizeof(err)),
                     0);
    ck_assert_int_eq(atomic_load(&quick.ran), 1);
    ha_blockio_bind(prev);
    ha_worker_free(b.worker);
    event_base_free(base);
}
END_TEST

/* In a task the call is waited for as a task: the loop goes on serving
 * (a timer fires meanwhile), and the wait ends at the timeout. */
struct blockio_task {
    struct ha_task task;
    struct slow_call *c;
    int rc;
    char err[512];
    bool ended;
};

static void
blockio_task_body(void *arg)
{
    struct blockio_task *bt = arg;

    bt->rc = ha_blockio_call("a task's call", slow_run, slow_discard, bt->c,
                             bt->err, sizeof(bt->err));
}

static void
blockio_task_done(void *arg)
{
    ((struct blockio_task *)arg)->ended = true;
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (*(int *)arg)++;
}

START_TEST(test_blockio_task_waits_as_task)
{
    struct event_base *base = event_base_new();
    struct ha_fiber_pool pool = {0};
    struct ha_task_env env;
    struct ha_blockio b;
    struct slow_call c;
    struct blockio_task bt;
    struct timeval tv = {0, 20000};
    struct event *tick;
    char err[256];
    int ticks = 0;

    memset(&env, 0, sizeof(env));
    memset(&b, 0, sizeof(b));
    memset(&c, 0, sizeof(c));
    memset(&bt, 0, sizeof(bt));
    b.worker = ha_worker_new(base, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(b.worker);
    atomic_store(&b.timeout_ms, 300);
    env.base = base;
    env.fibers = &pool;
    env.blockio = &b;
    tick = event_new(base, -1, EV_PERSIST, tick_cb, &ticks);
    ck_assert_int_eq(event_add(tick, &tv), 0);
    ha_task_init(&bt.task, &env);
    bt.c = &c;
    ck_assert_int_eq(ha_task_run(&bt.task, blockio_task_body,
                                 blockio_task_done, &bt),
                     1);
    for (int i = 0; i < 5000 && !bt.ended; i++)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert(bt.ended);
    ck_assert_int_eq(bt.rc, -1);
    ck_assert_msg(strstr(bt.err, "did not answer within disk_timeout_ms = "
                                 "300 (a task's call)") != NULL,
                  "%s", bt.err);
    ck_assert_msg(ticks >= 5, "the loop turned %d times meanwhile", ticks);
    atomic_store(&c.release, 1);
    for (int i = 0; i < 5000 && atomic_load(&c.discarded) == 0; i++)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert_int_eq(atomic_load(&c.discarded), 1);
    event_free(tick);
    ha_task_release(&bt.task);
    ha_worker_free(b.worker);
    ha_fiber_pool_clear(&pool);
    event_base_free(base);
}
END_TEST

/* A thread of its own for a stop: 0 once done, -1 past the timeout
 * (the argument then freed by that thread when it ends). */
static void
free_slow(void *arg)
{
    struct slow_call *c = arg;

    atomic_store(&c->discarded, 1);
}

START_TEST(test_blockio_run_detached)
{
    static struct slow_call c; /* outlives the test's frame */
    struct timespec ms = {0, 1000000};

    memset(&c, 0, sizeof(c));
    atomic_store(&c.release, 1);
    ck_assert_int_eq(ha_blockio_run_detached(slow_run, free_slow, &c, 1000),
                     0);
    ck_assert_int_eq(atomic_load(&c.discarded), 1);
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(ha_blockio_run_detached(slow_run, free_slow, &c, 50),
                     -1);
    ck_assert_int_eq(atomic_load(&c.discarded), 0);
    atomic_store(&c.release, 1);
    for (int i = 0; i < 5000 && atomic_load(&c.discarded) == 0; i++)
        nanosleep(&ms, NULL);
    ck_assert_int_eq(atomic_load(&c.discarded), 1);
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
    tcase_add_test(tc, test_task_turns);
    tcase_add_test(tc, test_task_steps_go_first);
    tcase_add_test(tc, test_fiber_pool_refuses_busy);
    suite_add_tcase(s, tc);
    tc = tcase_create("radix");
    tcase_add_test(tc, test_radix_sorts_stably);
    suite_add_tcase(s, tc);
    tc = tcase_create("worker");
    tcase_add_test(tc, test_worker_run_here_waits_for_the_running_job);
    tcase_add_test(tc, test_blockio_runs_here_unbound);
    tcase_add_test(tc, test_blockio_bound_loop_waits_bounded);
    tcase_add_test(tc, test_blockio_task_waits_as_task);
    tcase_add_test(tc, test_blockio_run_detached);
    suite_add_tcase(s, tc);
    tc = tcase_create("dirwalk");
    tcase_add_test(tc, test_dirwalk_numbers_only);
    tcase_add_test(tc, test_dirwalk_many_entries);
    tcase_add_test(tc, test_dirwalk_fds);
    tcase_add_test(tc, test_smallfile_read);
    tcase_add_test(tc, test_fdio_write_all);
    suite_add_tcase(s, tc);
    tc = tcase_create("hex");
    tcase_add_test(tc, test_hex_digit_every_byte);
    tcase_add_test(tc, test_decimal_appendf_one_line);
    suite_add_tcase(s, tc);
    tc = tcase_create("idmap");
    tcase_add_test(tc, test_idmap_put_get_grow_clear);
    suite_add_tcase(s, tc);
    tc = tcase_create("sha");
    tcase_add_test(tc, test_sha_matches_openssl);
    suite_add_tcase(s, tc);
    tc = tcase_create("forkguard");
    tcase_add_test(tc, test_forkguard_waits_for_open_sections);
    suite_add_tcase(s, tc);
    tc = tcase_create("time");
    tcase_add_test(tc, test_utc_tm_matches_gmtime);
    suite_add_tcase(s, tc);
    tc = tcase_create("agents");
    tcase_add_test(tc, test_exposcan_relabels_and_merges);
    tcase_add_test(tc, test_exposcan_refuses_forgeries);
    tcase_add_test(tc, test_exposcan_same_labels_kept_once);
    tcase_add_test(tc, test_exposcan_caps);
    tcase_add_test(tc, test_agentreg_exe_matches);
    tcase_add_test(tc, test_users_name_without_nss);
    tcase_add_test(tc, test_agentreg_names);
    tcase_add_test(tc, test_agentreg_lists_cleans_and_asks);
    tcase_add_test(tc, test_agentreg_busy_is_not_stale);
    tcase_add_test(tc, test_agentreg_zombie_is_gone);
    suite_add_tcase(s, tc);
    return s;
}

HA_CHECK_MAIN(core_suite)
