/* SPDX-License-Identifier: MIT
 *
 * The limit watch (see limitwatch.h): a pure rule, fed by the history
 * sampler's tick, a near-limit timer and what the kernel offers to wake
 * it; its dumps are the dump timer's automatic dumps, trigger "limit".
 */
#include "engine/limitwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/dumptimer.h"
#include "prof/breakdown.h"

#define WAKE_BELOW 0.10    /* the wake level: the first level less this */
#define RATE_MIN_MS 20     /* two looks closer than this give no rate */

/* ------------------------------------------------------------------
 * The watch
 * ------------------------------------------------------------------ */

struct ha_limitwatch {
    struct event_base *base;
    struct ha_worker *worker;      /* where the dumps are written */
    struct ha_heap *heap;          /* jemalloc, je, cgroup */
    struct ha_limitwatch_rule rule;
    struct ha_limitwatch_arm arm;
    double sample_frac;            /* sampling on past it; 0: never */

    struct ha_cgroup_state last;   /* the last look */
    bool have_last;
    bool holding;                  /* holds sampling on */
    bool limited;                  /* a limit applied at the last look */

    struct event *fast;            /* the next look near the limit */
    bool fast_pending;
    struct event *glance;          /* far from it, without thresholds */
    bool glance_pending;
    int64_t glance_usage, glance_ms; /* the glance before, for its rate */
    int64_t prev_ws, prev_ms;      /* the look before, for the rate */
    double rate;                   /* working set climb, bytes/s */

    /* The usage file of the limiting group: the v1 thresholds' and the
     * glance's. */
    int usage_fd;
    char usage_dir[PATH_MAX];
    int usage_version;

    /* What the kernel offers to wake the watch. */
    int v1_efd;                    /* cgroup.event_control thresholds */
    int64_t v1_limit;              /* ... set for this limit, in v1_dir */
    char v1_dir[PATH_MAX];
    struct event *v1_ev;
    int ino_fd;                    /* v2 memory.events changes */
    char ino_dir[PATH_MAX];
    struct event *ino_ev;
    int psi_fd, psi_epfd;          /* PSI trigger */
    char psi_file[PATH_MAX];
    struct event *psi_ev;
    bool psi_fired;

    /* The descriptors above as they were made, so a fork child closes
     * only what is provably still this watch's (ha_limitwatch_abandon). */
    struct owned {
        const int *fd;
        dev_t dev;
        ino_t ino;
    } owned[5];

    /* Dumps. */
    struct ha_dump_req *dumping;
    bool low_space;
    long long dumps;               /* limit dumps written */
    char last_file[PATH_MAX];
    char last_reason[256];
    time_t last_time;
    char pending_reason[256];      /* of the dump being written */
};

static void check(struct ha_limitwatch *w, const struct ha_cgroup_state *st);

/* Notes what *fd is now (its slot in w->owned), for a fork child. */
static void
own(struct ha_limitwatch *w, size_t slot, const int *fd)
{
    struct stat st;

    w->owned[slot].fd = fd;
    w->owned[slot].dev = 0;
    w->owned[slot].ino = 0;
    if (*fd >= 0 && fstat(*fd, &st) == 0) {
        w->owned[slot].dev = st.st_dev;
        w->owned[slot].ino = st.st_ino;
    }
}

static double
share(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0;
}

/* The wake level (share of the limit): the lower of where sampling goes
 * on and the first level less WAKE_BELOW; 0: none (no fractions). */
static double
wake_level(const struct ha_limitwatch *w)
{
    double wake = w->rule.n > 0 ? w->rule.fractions[0] - WAKE_BELOW : 0;

    if (w->sample_frac > 0 && (wake <= 0 || w->sample_frac < wake))
        wake = w->sample_frac;
    return wake < 0.05 ? 0.05 : wake;
}

static void
look(struct ha_limitwatch *w)
{
    struct ha_cgroup_state st;

    ha_cgroup_sample(&w->heap->cgroup, &st);
    check(w, &st);
}

/* --- the kernel's wake-ups --------------------------------------- */

static void
v1_cb(evutil_socket_t fd, short what, void *arg)
{
    uint64_t v;

    (void)what;
    while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
        ;
    look(arg);
}

/* The usage file of the limiting group, open (reopened when the group
 * changes); -1 when it cannot be read. */
static int
usage_on(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    char path[PATH_MAX + 32];

    if (w->usage_fd >= 0 && w->usage_version == st->version &&
        strcmp(w->usage_dir, st->dir) == 0)
        return w->usage_fd;
    if (w->usage_fd >= 0)
        close(w->usage_fd);
    ha_strlcpy(w->usage_dir, st->dir, sizeof(w->usage_dir));
    w->usage_version = st->version;
    snprintf(path, sizeof(path), "%s/%s", st->dir,
             st->version == 1 ? "memory.usage_in_bytes" : "memory.current");
    w->usage_fd = open(path, O_RDONLY | O_CLOEXEC);
    own(w, 1, &w->usage_fd);
    return w->usage_fd;
}

static void
usage_off(struct ha_limitwatch *w)
{
    if (w->usage_fd >= 0)
        close(w->usage_fd);
    w->usage_fd = -1;
    w->usage_dir[0] = '\0';
}

static void
v1_off(struct ha_limitwatch *w)
{
    if (w->v1_ev != NULL)
        event_free(w->v1_ev);
    w->v1_ev = NULL;
    if (w->v1_efd >= 0)
        close(w->v1_efd); /* the kernel drops the thresholds with it */
    w->v1_efd = -1;
    w->v1_limit = 0;
}

/* v1 usage thresholds in the limiting group (memory.usage_in_bytes
 * through cgroup.event_control; the kernel signals the eventfd as the
 * usage crosses one, either way): at the wake level and at each level,
 * so a climb past them all faster than any period of ours still wakes
 * the watch at each. The usage is never below the working set, so each
 * wakes it at or before the level's crossing; the timer takes it from
 * there. Without write access to cgroup.event_control the glance
 * serves. */
static void
v1_on(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    double marks[HA_LIMITWATCH_FRACTIONS_MAX + 1];
    char path[PATH_MAX + 32], line[96];
    size_t n = 0;
    int cfd = -1, ufd, len;

    if (w->v1_limit == st->limit && strcmp(w->v1_dir, st->dir) == 0)
        return; /* set, or refused, for this limit already */
    v1_off(w);
    ha_strlcpy(w->v1_dir, st->dir, sizeof(w->v1_dir));
    w->v1_limit = st->limit;
    marks[n++] = wake_level(w);
    for (size_t i = 0; i < w->rule.n; i++)
        if (w->rule.fractions[i] > marks[0])
            marks[n++] = w->rule.fractions[i];
    ufd = usage_on(w, st);
    w->v1_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    snprintf(path, sizeof(path), "%s/cgroup.event_control", st->dir);
    if (ufd >= 0 && w->v1_efd >= 0)
        cfd = open(path, O_WRONLY | O_CLOEXEC);
    for (size_t i = 0; cfd >= 0 && i < n; i++) {
        len = snprintf(line, sizeof(line), "%d %d %lld", w->v1_efd, ufd,
                       (long long)(marks[i] * (double)st->limit));
        if (write(cfd, line, (size_t)len) != len) {
            int err = errno;

            close(cfd);
            cfd = -1;
            errno = err; /* for the log line below */
        }
    }
    if (cfd < 0) {
        ha_log_info("limit watch: no usage thresholds from the kernel "
                    "(%s: %s); the watch reads the usage itself, at most "
                    "%d ms apart",
                    path, strerror(errno), HA_LIMITWATCH_GLANCE_MS);
        v1_off(w);
        w->v1_limit = st->limit; /* not tried again for this limit */
        return;
    }
    close(cfd);
    own(w, 0, &w->v1_efd);
    w->v1_ev = event_new(w->base, w->v1_efd, EV_READ | EV_PERSIST, v1_cb, w);
    if (w->v1_ev == NULL || event_add(w->v1_ev, NULL) != 0) {
        v1_off(w);
        w->v1_limit = st->limit;
    }
}

static void
ino_cb(evutil_socket_t fd, short what, void *arg)
{
    char buf[4096];

    (void)what;
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    look(arg);
}

static void
ino_off(struct ha_limitwatch *w)
{
    if (w->ino_ev != NULL)
        event_free(w->ino_ev);
    w->ino_ev = NULL;
    if (w->ino_fd >= 0)
        close(w->ino_fd);
    w->ino_fd = -1;
    w->ino_dir[0] = '\0';
}

/* v2: the kernel marks memory.events modified at each new event
 * (cgroup-v2.rst), which inotify reports. */
static void
ino_on(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    char path[PATH_MAX + 16];

    if (w->ino_fd >= 0 && strcmp(w->ino_dir, st->dir) == 0)
        return;
    ino_off(w);
    ha_strlcpy(w->ino_dir, st->dir, sizeof(w->ino_dir));
    snprintf(path, sizeof(path), "%s/memory.events", st->dir);
    w->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->ino_fd < 0 || inotify_add_watch(w->ino_fd, path, IN_MODIFY) < 0) {
        ino_off(w);
        ha_strlcpy(w->ino_dir, st->dir, sizeof(w->ino_dir));
        return;
    }
    own(w, 2, &w->ino_fd);
    w->ino_ev =
        event_new(w->base, w->ino_fd, EV_READ | EV_PERSIST, ino_cb, w);
    if (w->ino_ev == NULL || event_add(w->ino_ev, NULL) != 0)
        ino_off(w);
}

static void
psi_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_limitwatch *w = arg;
    struct epoll_event ev[4];

    (void)what;
    if (epoll_wait(fd, ev, 4, 0) > 0)
        w->psi_fired = true;
    look(w);
}

static void
psi_off(struct ha_limitwatch *w)
{
    if (w->psi_ev != NULL)
        event_free(w->psi_ev);
    w->psi_ev = NULL;
    if (w->psi_epfd >= 0)
        close(w->psi_epfd);
    if (w->psi_fd >= 0)
        close(w->psi_fd); /* the trigger goes with it */
    w->psi_fd = w->psi_epfd = -1;
}

/* A PSI trigger on the pressure file (accounting/psi.rst): POLLPRI once
 * tasks stalled longer than the bound within the window. libevent does
 * not wait for POLLPRI, so the file sits in an epoll set of its own
 * whose descriptor libevent waits on. */
static void
psi_on(struct ha_limitwatch *w)
{
    const char *file = w->heap->cgroup.psi_file;
    struct epoll_event ev = {.events = EPOLLPRI};
    char trig[64];
    int n;

    /* Once per pressure file: set, or refused (logged once). */
    if (w->rule.psi_pct <= 0 || file[0] == '\0' ||
        strcmp(w->psi_file, file) == 0)
        return;
    psi_off(w);
    ha_strlcpy(w->psi_file, file, sizeof(w->psi_file));
    if ((n = ha_cgroup_psi_trigger(w->rule.psi_pct, 2000, trig,
                                   sizeof(trig))) < 0)
        return;
    w->psi_fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (w->psi_fd < 0 || write(w->psi_fd, trig, (size_t)n) != n) {
        ha_log_info("limit watch: no pressure trigger from the kernel "
                    "(%s: %s); its 10 s average is read instead",
                    file, strerror(errno));
        psi_off(w);
        return;
    }
    ev.data.fd = w->psi_fd;
    own(w, 3, &w->psi_fd);
    if ((w->psi_epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        epoll_ctl(w->psi_epfd, EPOLL_CTL_ADD, w->psi_fd, &ev) != 0 ||
        (w->psi_ev = event_new(w->base, w->psi_epfd, EV_READ | EV_PERSIST,
                               psi_cb, w)) == NULL ||
        event_add(w->psi_ev, NULL) != 0) {
        psi_off(w);
        return;
    }
    own(w, 4, &w->psi_epfd);
    ha_log_info("limit watch: the kernel signals memory pressure past "
                "\"%s\" (%s)",
                trig, file);
}

/* --- the near-limit timer ----------------------------------------- */

static void
fast_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_limitwatch *w = arg;

    (void)fd;
    (void)what;
    w->fast_pending = false;
    look(w);
}

/* The next look in ms from now; 0: none. Each look sets it anew. */
static void
fast_set(struct ha_limitwatch *w, int ms)
{
    struct timeval tv;

    if (ms <= 0) {
        if (w->fast != NULL && w->fast_pending)
            event_del(w->fast);
        w->fast_pending = false;
        return;
    }
    if (w->fast == NULL &&
        (w->fast = evtimer_new(w->base, fast_cb, w)) == NULL)
        return;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    w->fast_pending = evtimer_add(w->fast, &tv) == 0;
}

static void glance_cb(evutil_socket_t fd, short what, void *arg);

/* Far from the limit where no kernel threshold wakes the watch (v2,
 * whose memory.events says nothing before the limit; v1 without write
 * access to cgroup.event_control): one read of the usage, paced by its
 * climb (limitrule.h), and a whole look once it is past the wake level
 * less the re-arm margin. */
static void
glance_in(struct ha_limitwatch *w, int ms)
{
    struct timeval tv = {ms / 1000, (suseconds_t)(ms % 1000) * 1000};

    if (w->glance == NULL &&
        (w->glance = evtimer_new(w->base, glance_cb, w)) == NULL)
        return;
    w->glance_pending = evtimer_add(w->glance, &tv) == 0;
}

static void
glance_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_limitwatch *w = arg;
    double near = wake_level(w) - HA_LIMITWATCH_REARM, rate = 0;
    int64_t usage, now = ha_clock_ms();
    char buf[32];
    ssize_t n;
    int ms;

    (void)fd;
    (void)what;
    w->glance_pending = false;
    if (w->usage_fd < 0 || !w->have_last ||
        (n = pread(w->usage_fd, buf, sizeof(buf) - 1, 0)) <= 0) {
        look(w);
        return;
    }
    buf[n] = '\0';
    usage = strtoll(buf, NULL, 10);
    if (w->glance_ms > 0 && now > w->glance_ms)
        rate = (double)(usage - w->glance_usage) * 1000.0 /
               (double)(now - w->glance_ms);
    w->glance_usage = usage;
    w->glance_ms = now;
    ms = ha_limitwatch_next_glance_ms(w->last.limit, usage, rate, near);
    if (ms == 0)
        look(w); /* sets the timer or the next glance */
    else
        glance_in(w, ms);
}

/* Off, or on with the next glance at most HA_LIMITWATCH_GLANCE_MS away
 * (kept when it is sooner). */
static void
glance_set(struct ha_limitwatch *w, bool on)
{
    if (!on) {
        if (w->glance != NULL)
            event_free(w->glance);
        w->glance = NULL;
        w->glance_pending = false;
        w->glance_ms = 0;
        return;
    }
    if (!w->glance_pending)
        glance_in(w, HA_LIMITWATCH_GLANCE_MS);
}

/* --- dumps ---------------------------------------------------------- */

static void
dumped(void *arg, const char *file)
{
    struct ha_limitwatch *w = arg;

    w->dumping = NULL;
    if (file != NULL) {
        const char *base = strrchr(file, '/');

        w->dumps++;
        ha_strlcpy(w->last_file, base != NULL ? base + 1 : file,
                   sizeof(w->last_file));
        ha_strlcpy(w->last_reason, w->pending_reason,
                   sizeof(w->last_reason));
        w->last_time = time(NULL);
    }
    /* What was held back while it was written. */
    look(w);
}

static void
take_dump(struct ha_limitwatch *w, const char *reason)
{
    ha_strlcpy(w->pending_reason, reason, sizeof(w->pending_reason));
    ha_log_notice("limit watch: %s: a limit dump", reason);
    w->dumping = ha_dumptimer_dump(
        w->worker, w->heap, "jemalloc_variables.limit_dump_fractions",
        "limit", reason, &w->low_space, dumped, w);
}

/* --- one look ------------------------------------------------------- */

static void
sampling(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    const struct ha_jemalloc_config *je = w->heap->je;
    double at = share(st->working_set, st->limit);
    char what[128];

    if (w->sample_frac <= 0)
        return;
    if (!w->holding && at >= w->sample_frac) {
        if (ha_heap_sampling_hold(w->heap, je->limit_watch_lg_prof_sample,
                                  what, sizeof(what)) == 0) {
            w->holding = true;
            ha_log_notice("limit watch: working set at %.0f%% of the memory "
                          "limit, past limit_watch_sample_pct = %d: %s",
                          at * 100, je->limit_watch_sample_pct, what);
        }
    } else if (w->holding &&
               (at < w->sample_frac - HA_LIMITWATCH_REARM ||
                !ha_cgroup_limited(st))) {
        ha_heap_sampling_release(w->heap);
        w->holding = false;
        ha_log_info("limit watch: working set back below the sampling "
                    "level; sampling as it was");
    }
}

/* The working set's climb since the look before, bytes per second;
 * looks closer than RATE_MIN_MS keep the rate they had. */
static void
climb(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    int64_t now = ha_clock_ms();

    if (st->working_set < 0 || !ha_cgroup_limited(st)) {
        w->prev_ms = 0;
        w->rate = 0;
        return;
    }
    if (w->prev_ms == 0) {
        w->prev_ms = now;
        w->prev_ws = st->working_set;
        return;
    }
    if (now - w->prev_ms < RATE_MIN_MS)
        return;
    w->rate = (double)(st->working_set - w->prev_ws) * 1000.0 /
              (double)(now - w->prev_ms);
    w->prev_ms = now;
    w->prev_ws = st->working_set;
}

/* The watch's own wake-ups for the next look: the timer near the limit
 * (paced by the climb), the glance far from it where the kernel sets no
 * threshold. */
static void
pace(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    struct ha_limitwatch_pace p;
    int ms;

    memset(&p, 0, sizeof(p));
    p.limit = ha_cgroup_limited(st) ? st->limit : 0;
    p.usage = st->usage;
    p.working_set = st->working_set;
    p.rate = w->rate;
    p.wake = wake_level(w);
    p.sample = w->sample_frac;
    p.sampling_held = w->holding;
    ms = ha_limitwatch_next_look_ms(&w->rule, &w->arm, &p);
    fast_set(w, ms);
    glance_set(w, p.limit > 0 && ms == 0 && w->v1_ev == NULL);
}

static void
check(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    struct ha_limitwatch_in in;
    enum ha_limitwatch_trigger t;
    char reason[256], lim[32];

    w->last = *st;
    w->have_last = true;
    climb(w, st);
    if (!ha_cgroup_limited(st)) {
        if (w->limited)
            ha_log_notice("limit watch: no memory limit any more");
        w->limited = false;
        sampling(w, st);
        v1_off(w);
        ino_off(w);
        usage_off(w);
    } else {
        if (!w->limited) {
            ha_breakdown_format_bytes(st->limit, lim, sizeof(lim));
            ha_log_notice("limit watch: memory limit %s (cgroup v%d %s)",
                          lim, st->version, st->limit_path);
        }
        w->limited = true;
        if (st->version == 1) {
            v1_on(w, st);
        } else {
            ino_on(w, st);
            (void)usage_on(w, st);
        }
        sampling(w, st);
    }
    psi_on(w);
    if (w->dumping == NULL) { /* else looked at again once written */
        memset(&in, 0, sizeof(in));
        in.limit = st->limit;
        in.working_set = st->working_set;
        in.ev_high = st->ev_high;
        in.ev_max = st->ev_max;
        in.ev_oom = st->ev_oom;
        in.has_psi = st->has_psi;
        in.psi_avg10 = st->psi.some.avg10;
        in.psi_fired = w->psi_fired;
        in.now_s = ha_clock_ms() / 1000;
        w->psi_fired = false;
        t = ha_limitwatch_decide(&w->rule, &w->arm, &in, reason,
                                 sizeof(reason));
        if (t != HA_LIMITWATCH_NONE)
            take_dump(w, reason);
    }
    pace(w, st);
}

void
ha_limitwatch_tick(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    if (w != NULL)
        check(w, st);
}

struct ha_limitwatch *
ha_limitwatch_new(struct event_base *base, struct ha_worker *worker,
                  struct ha_heap *heap)
{
    const struct ha_jemalloc_config *je = heap->je;
    struct ha_limitwatch *w;
    struct ha_cgroup_state st;
    char why[256];

    if (je == NULL || worker == NULL)
        return NULL;
    if ((w = calloc(1, sizeof(*w))) == NULL) {
        ha_log_error("limit watch: out of memory");
        return NULL;
    }
    w->v1_efd = w->usage_fd = w->ino_fd = w->psi_fd = w->psi_epfd = -1;
    w->base = base;
    w->worker = worker;
    w->heap = heap;
    if (ha_limitwatch_parse_fractions(je->limit_dump_fractions,
                                      w->rule.fractions,
                                      HA_LIMITWATCH_FRACTIONS_MAX, &w->rule.n,
                                      why, sizeof(why)) != 0) {
        /* The config was checked when loaded; be safe anyway. */
        ha_log_warn("limit watch: limit_dump_fractions: %s", why);
        w->rule.n = 0;
    }
    w->rule.psi_pct = je->limit_dump_psi_pct;
    w->rule.events = je->limit_dump_events != 0;
    w->rule.min_interval_s = je->limit_dump_min_interval_s;
    w->sample_frac = je->limit_watch_sample_pct / 100.0;
    ha_limitwatch_arm_init(&w->arm);
    /* An empty list switches the limit dumps off, pressure and events
     * with them: one setting says "no dumps relative to the limit". */
    if (w->rule.n == 0) {
        ha_log_info("limit watch: off (limit_dump_fractions is empty)");
        free(w);
        return NULL;
    }
    if (!ha_mallctl_prof_enabled(heap->ops)) {
        ha_log_info("limit watch: off: heap profiling is not available in "
                    "this process (opt.prof=false)");
        free(w);
        return NULL;
    }
    ha_cgroup_sample(&heap->cgroup, &st);
    if (!ha_cgroup_limited(&st))
        ha_log_info("limit watch: no memory limit now (%s); looked at "
                    "again at each history sample",
                    heap->cgroup.version == 0 ? "no memory cgroup"
                                              : "its cgroup has none");
    check(w, &st);
    return w;
}

void
ha_limitwatch_free(struct ha_limitwatch *w)
{
    if (w == NULL)
        return;
    ha_dump_req_forget(w->dumping);
    if (w->holding)
        ha_heap_sampling_release(w->heap);
    if (w->fast != NULL)
        event_free(w->fast);
    glance_set(w, false);
    v1_off(w);
    ino_off(w);
    psi_off(w);
    usage_off(w);
    free(w);
}

void
ha_limitwatch_abandon(struct ha_limitwatch *w)
{
    if (w == NULL)
        return;
    for (size_t i = 0; i < sizeof(w->owned) / sizeof(w->owned[0]); i++) {
        struct stat st;
        int fd = w->owned[i].fd != NULL ? *w->owned[i].fd : -1;

        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == w->owned[i].dev &&
            st.st_ino == w->owned[i].ino)
            close(fd);
    }
}

bool
ha_limitwatch_value(const void *arg, const char *name, char *buf, size_t len)
{
    const struct ha_limitwatch *w = arg;
    char ws[32], lim[32], levels[96], t[32];
    size_t at = 0;

    if (name == NULL || strcmp(name, "jemalloc-limit_watch_state") != 0)
        return false;
    if (w == NULL) {
        ha_strlcpy(buf, "off", len);
        return true;
    }
    if (!w->have_last || !ha_cgroup_limited(&w->last)) {
        snprintf(buf, len, "watching for a memory limit: %s",
                 w->heap->cgroup.version == 0
                     ? "no memory cgroup"
                     : "its cgroup sets none now");
        return true;
    }
    levels[0] = '\0';
    for (size_t i = 0; i < w->rule.n && at < sizeof(levels); i++)
        at += (size_t)snprintf(levels + at, sizeof(levels) - at, "%s%.2f%s",
                               i ? " " : "", w->rule.fractions[i],
                               w->arm.armed[i] ? "" : " (passed)");
    ha_breakdown_format_bytes(w->last.working_set, ws, sizeof(ws));
    ha_breakdown_format_bytes(w->last.limit, lim, sizeof(lim));
    if (w->dumps > 0) {
        (void)ha_utc_stamp(t, sizeof(t), w->last_time, ' ');
        snprintf(buf, len,
                 "watching: working set %s of %s (%.0f%%, cgroup v%d %s); "
                 "levels %s; %lld limit dump%s, last %s at %s UTC: %s",
                 ws, lim, share(w->last.working_set, w->last.limit) * 100,
                 w->last.version, w->last.limit_path,
                 levels[0] ? levels : "none", w->dumps,
                 w->dumps == 1 ? "" : "s", w->last_file, t, w->last_reason);
    } else {
        snprintf(buf, len,
                 "watching: working set %s of %s (%.0f%%, cgroup v%d %s); "
                 "levels %s; no limit dump yet",
                 ws, lim, share(w->last.working_set, w->last.limit) * 100,
                 w->last.version, w->last.limit_path,
                 levels[0] ? levels : "none");
    }
    return true;
}
