/* SPDX-License-Identifier: MIT
 *
 * The limit watch (see limitwatch.h): a pure rule, fed by the history
 * sampler's tick, a near-limit timer and what the kernel offers to wake
 * it; its dumps are the dump timer's automatic dumps, trigger "limit".
 * Here: each look (the rule's inputs, sampling held on under a limit,
 * the climb, the pace of the next look) and what wakes it (the kernel's
 * thresholds, inotify and PSI triggers, the near-limit timer, the
 * glance), which ends in a look and is re-armed by one: they stay
 * together. The dumps are limitwatch_dump.c's, the state's text
 * limitwatch_state.c's.
 */
#include "engine/limitwatch.h"
#include "engine/limitwatch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#define RATE_WINDOW_MS 250 /* the climb is measured over this much at
                              least, where the looks go back so far: a
                              host that grows in steps (a tick's worth at
                              a time) shows no climb between two looks
                              in the same step */
#define RATE_LEARN_MS 50   /* the next look, or glance, when the climb is
                              not known yet: a fill from the start, or the
                              first look past a kernel threshold, is
                              measured before it passes the next mark */

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


/* The wake level (share of the limit): the first level less WAKE_BELOW,
 * at least 0.05. */
static double
wake_level(const struct ha_limitwatch *w)
{
    double wake = w->rule.n > 0 ? w->rule.fractions[0] - WAKE_BELOW : 0;

    return wake < 0.05 ? 0.05 : wake;
}

/* --- the climb ------------------------------------------------------ */

static void
ring_reset(struct rate_ring *r)
{
    r->n = r->next = 0;
}

/* The climb up to (ms, v), bytes per second, from the newest pair at
 * least RATE_WINDOW_MS older (else the oldest at least RATE_MIN_MS
 * older) into *rate; false, *rate untouched, when there is none. The
 * pair is kept when RATE_MIN_MS or more after the last one kept, so the
 * ring spans RATE_WINDOW_MS however often the watch looks. */
static bool
ring_rate(struct rate_ring *r, int64_t ms, int64_t v, double *rate)
{
    unsigned newest = (r->next + RATE_RING - 1) % RATE_RING;
    int64_t from_ms = 0, from_v = 0;
    bool have = false;

    for (unsigned i = 0; i < r->n; i++) {
        unsigned k = (r->next + RATE_RING - 1 - i) % RATE_RING;
        int64_t age = ms - r->ms[k];

        if (age < RATE_MIN_MS)
            continue;
        from_ms = r->ms[k];
        from_v = r->v[k];
        have = true;
        if (age >= RATE_WINDOW_MS)
            break;
    }
    if (have)
        *rate = (double)(v - from_v) * 1000.0 / (double)(ms - from_ms);
    if (r->n == 0 || ms - r->ms[newest] >= RATE_MIN_MS) {
        r->ms[r->next] = ms;
        r->v[r->next] = v;
        r->next = (r->next + 1) % RATE_RING;
        if (r->n < RATE_RING)
            r->n++;
    }
    return have;
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
    /* The root group's memory.pressure and /proc/pressure/memory are
     * the whole machine's: another process's stalls are not this one's
     * evidence. */
    if (w->heap->cgroup.psi_system) {
        snprintf(w->psi_note, sizeof(w->psi_note),
                 "no pressure trigger: the process has no cgroup v2 group "
                 "of its own (%s is the whole machine's)",
                 file);
        ha_log_info("limit watch: %s", w->psi_note);
        return;
    }
    if ((n = ha_cgparse_psi_trigger(w->rule.psi_pct, 2000, trig,
                                    sizeof(trig))) < 0)
        return;
    w->psi_fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (w->psi_fd < 0 || write(w->psi_fd, trig, (size_t)n) != n) {
        snprintf(w->psi_note, sizeof(w->psi_note),
                 "pressure: the 10 s average of %s (no trigger from the "
                 "kernel: %s)",
                 file, strerror(errno));
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
    snprintf(w->psi_note, sizeof(w->psi_note), "pressure: a trigger on %s",
             file);
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

/* The usage at which a glance calls for a whole look, as a share of the
 * limit: far from the limit, the wake level less the re-arm margin (the
 * looks take over); near it, the next armed level above the last look's
 * working set, plus the inactive file cache that look saw (the usage
 * gets there as the working set reaches the level: a threshold of the
 * watch's own where the kernel sets none); 0: nothing to glance for. */
static double
glance_mark(const struct ha_limitwatch *w)
{
    double near = wake_level(w) - HA_LIMITWATCH_REARM, lim, ws, cache;

    if (!w->have_last || !ha_cgroup_limited(&w->last) ||
        w->last.usage < 0 || w->last.working_set < 0)
        return near;
    lim = (double)w->last.limit;
    if ((double)w->last.usage < near * lim)
        return near;
    ws = (double)w->last.working_set;
    cache = (double)(w->last.usage - w->last.working_set);
    for (size_t i = 0; i < w->rule.n; i++)
        if (w->arm.armed[i] && w->rule.fractions[i] * lim > ws)
            return (w->rule.fractions[i] * lim + cache) / lim;
    return 0;
}

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
    double mark = glance_mark(w), rate = 0;
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
    if ((w->glance_rate_known = ring_rate(&w->glances, now, usage, &rate)))
        w->glance_rate = rate;
    ms = mark > 0
             ? ha_limitwatch_next_glance_ms(w->last.limit, usage, rate, mark)
             : HA_LIMITWATCH_GLANCE_MS;
    if (ms == 0)
        look(w); /* sets the timer or the next glance */
    else
        glance_in(w, w->glance_rate_known || ms < RATE_LEARN_MS
                         ? ms
                         : RATE_LEARN_MS);
}

/* Off, or on with the next glance at most HA_LIMITWATCH_GLANCE_MS away
 * (kept when it is sooner): far from the limit, where the kernel sets no
 * threshold, the only wake-up; near it, between two looks, so that a
 * climb faster than the looks' pace is still seen as it passes a level
 * (the looks are paced on the climb as measured; a host that catches up
 * after a stall climbs at several times that). */
static void
glance_set(struct ha_limitwatch *w, bool on)
{
    if (!on) {
        if (w->glance != NULL)
            event_free(w->glance);
        w->glance = NULL;
        w->glance_pending = false;
        ring_reset(&w->glances);
        w->glance_rate_known = false;
        return;
    }
    if (!w->glance_pending) {
        double mark = glance_mark(w);
        int ms = HA_LIMITWATCH_GLANCE_MS;

        /* Paced from the last look on its climb; without one, soon: the
         * climb is learnt before it matters. */
        if (w->rate_known && mark > 0 && w->have_last)
            ms = ha_limitwatch_next_glance_ms(w->last.limit, w->last.usage,
                                              w->rate, mark);
        else if (!w->glance_rate_known)
            ms = RATE_LEARN_MS;
        glance_in(w, ms > 0 ? ms : HA_LIMITWATCH_GLANCE_MIN_MS);
    }
}

/* --- one look ------------------------------------------------------- */

/* Sampling held on for as long as a limit binds the process: a limit
 * dump holds what was sampled, and what grew before sampling was on is
 * not in it (a watch that waited for half the limit gave dumps of half
 * the heap). The operator's sampling, when on, is left as it is. */
static void
sampling(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    char what[128];

    if (!w->sampling)
        return;
    if (!w->holding && ha_cgroup_limited(st)) {
        if (ha_heap_sampling_hold(w->heap, w->sample_rate, what,
                                  sizeof(what)) == 0) {
            w->holding = true;
            w->sampling_note[0] = '\0';
            ha_log_notice("limit watch: a memory limit binds the process: "
                          "%s, so that its limit dumps hold the whole heap",
                          what);
        } else {
            snprintf(w->sampling_note, sizeof(w->sampling_note),
                     "sampling off (not switched on: %s)", what);
            ha_log_warn("limit watch: %s", w->sampling_note);
            w->sampling = false;
        }
    } else if (w->holding && !ha_cgroup_limited(st)) {
        ha_heap_sampling_release(w->heap);
        w->holding = false;
        ha_log_info("limit watch: no memory limit any more; sampling as it "
                    "was");
    }
}

/* The working set's climb, bytes per second, over the last
 * RATE_WINDOW_MS or so; looks too close to the last keep the rate. */
static void
climb(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    if (st->working_set < 0 || !ha_cgroup_limited(st)) {
        ring_reset(&w->looks);
        w->rate = 0;
        w->rate_known = false;
        return;
    }
    if (ring_rate(&w->looks, ha_clock_ms(), st->working_set, &w->rate))
        w->rate_known = true;
    else if (w->looks.n <= 1) {
        /* The first look past the glances: the usage's climb stands
         * in. (A look too close to the last keeps the rate it had.) */
        w->rate = w->glance_rate_known ? w->glance_rate : 0;
        w->rate_known = w->glance_rate_known;
    }
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
    ms = ha_limitwatch_next_look_ms(&w->rule, &w->arm, &p);
    if (ms > RATE_LEARN_MS && !w->rate_known)
        ms = RATE_LEARN_MS;
    fast_set(w, ms);
    glance_set(w, p.limit > 0 && w->v1_ev == NULL &&
                      (ms == 0 || glance_mark(w) > 0));
}

static int64_t
realtime_ns(void)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static void
check(struct ha_limitwatch *w, const struct ha_cgroup_state *st)
{
    struct ha_limitwatch_in in;
    enum ha_limitwatch_trigger t;
    char reason[256], lim[32];
    int64_t looked_ns = realtime_ns();

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
    memset(&in, 0, sizeof(in));
    in.limit = st->limit;
    in.working_set = st->working_set;
    in.ev_high = st->ev_high;
    in.ev_max = st->ev_max;
    in.ev_oom = st->ev_oom;
    /* The whole machine's pressure is not this process's evidence. */
    in.has_psi = st->has_psi && !w->heap->cgroup.psi_system;
    in.psi_avg10 = st->psi.some.avg10;
    in.psi_fired = w->psi_fired;
    in.now_ms = ha_clock_ms();
    w->psi_fired = false;
    t = ha_limitwatch_decide(&w->rule, &w->arm, &in, reason, sizeof(reason));
    /* The owner hears of the look before the dump is queued: a run
     * record written on the same worker then has the usage the dump
     * was decided on, should the kill come while it is written. */
    if (w->hooks.looked != NULL && ha_cgroup_limited(st))
        w->hooks.looked(w->hooks.arg, st, looked_ns,
                        t != HA_LIMITWATCH_NONE);
    if (t != HA_LIMITWATCH_NONE)
        ha_limitwatch_dump_take(w, reason, st, looked_ns);
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
                  struct ha_heap *heap,
                  const struct ha_limitwatch_hooks *hooks)
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
    if (hooks != NULL)
        w->hooks = *hooks;
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
    /* The operator's word on sampling stands: prof_active = false in the
     * config keeps it off (the dumps then hold nothing sampled), and an
     * lg_prof_sample of theirs is the rate. */
    w->sampling = je->limit_watch_sampling != 0 && je->prof_active != 0;
    w->sample_rate = je->lg_prof_sample != HA_UNSET
                         ? HA_UNSET
                         : je->limit_watch_lg_prof_sample;
    if (je->limit_watch_sampling == 0)
        ha_strlcpy(w->sampling_note,
                   "sampling off (limit_watch_sampling = false)",
                   sizeof(w->sampling_note));
    else if (je->prof_active == 0)
        ha_strlcpy(w->sampling_note,
                   "sampling off (jemalloc_variables.prof_active = false)",
                   sizeof(w->sampling_note));
    ha_limitwatch_arm_init(&w->arm);
    if (!w->sampling && w->rule.n > 0)
        ha_log_info("limit watch: %s: its dumps hold what the operator's "
                    "sampling takes",
                    w->sampling_note);
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
    for (size_t i = 0; i < DUMPS_QUEUED; i++)
        if (w->queued[i] != NULL) {
            ha_dump_req_forget(w->queued[i]->req);
            free(w->queued[i]);
        }
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
