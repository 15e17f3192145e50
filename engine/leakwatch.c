/* SPDX-License-Identifier: MIT
 *
 * The leak watch (see leakwatch.h): a state machine fed by the history
 * sampler, with a dump timer only while a series is being taken.
 */
#include "engine/leakwatch.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "engine/dumptimer.h"
#include "prof/breakdown.h"
#include "heap/mallctl.h"

enum watch_state {
    WATCH_WATCHING,    /* reading samples */
    WATCH_COLLECTING,  /* taking a series */
    WATCH_STATE_MAX
};

struct ha_leakwatch {
    struct event_base *base;
    struct ha_worker *worker;      /* where the dumps are written */
    struct ha_heap *heap;       /* jemalloc, je */
    struct ha_history *history;
    enum watch_state state;

    /* What the last sample showed. */
    char growth[128];              /* "+12.0 MiB over 3600 s" */
    int64_t rearm_after;           /* samples before this (unix s) do
                                      not count: the last series' end */

    /* The series being taken (or the last one). */
    struct event *timer;           /* every dump_interval_s; NULL: none */
    time_t started, ended;         /* unix s; 0: none yet */
    long long taken, attempts;     /* dumps written, tried */
    char first[PATH_MAX];          /* their file names */
    char last[PATH_MAX];
    char trigger[160];             /* the growth that started it */
    bool low_space;                /* in a low-space episode (logged) */
    struct ha_dump_req *dumping;   /* a dump of the series on the worker */
    bool holding;                  /* holds sampling on (heap.h) */
    struct ha_leakrank *rank;      /* ranks a complete series for the
                                      metrics; NULL: none */
};

/* ------------------------------------------------------------------
 * Pure parts
 * ------------------------------------------------------------------ */

bool
ha_leakwatch_grown(long long growth_bytes, int64_t oldest_ts,
                   int64_t oldest_resident, int64_t newest_ts,
                   int64_t newest_resident, char *why, size_t whylen)
{
    int64_t d = newest_resident - oldest_resident;
    char bytes[32];

    ha_breakdown_format_bytes(d, bytes, sizeof(bytes));
    ha_err_set(why, whylen, "%s%s over %lld s", d > 0 ? "+" : "", bytes,
               (long long)(newest_ts - oldest_ts));
    return growth_bytes > 0 && newest_ts > oldest_ts && d > growth_bytes;
}

/* The base name of a path. */
static const char *
base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash != NULL ? slash + 1 : path;
}

static void
utc(time_t t, char *buf, size_t len)
{
    (void)ha_utc_stamp(buf, len, t, ' ');
}

/* ------------------------------------------------------------------
 * The series
 * ------------------------------------------------------------------ */

/* Sampling back as it was before the series (unless another watch
 * still needs it). */
static void
restore_sampling(struct ha_leakwatch *w)
{
    if (w->holding)
        ha_heap_sampling_release(w->heap);
    w->holding = false;
}

static void
end_series(struct ha_leakwatch *w, const char *how)
{
    if (w->timer != NULL) {
        event_free(w->timer);
        w->timer = NULL;
    }
    restore_sampling(w);
    w->ended = time(NULL);
    w->rearm_after = (int64_t)w->ended;
    w->state = WATCH_WATCHING;
    if (w->taken >= 2) {
        ha_log_notice("leak watch: series %s, %lld dumps from %s to %s; "
                      "rank it with: SELECT * FROM heap_growth('%s', '%s')",
                      how, w->taken, w->first, w->last, w->first, w->last);
        /* Ranked now for the metrics (an alert names its sites); not
         * at shutdown. */
        if (strcmp(how, "complete") == 0)
            ha_leakrank_series(w->rank, w->first, w->last);
    } else
        ha_log_warn("leak watch: series %s with %lld dump(s): too few to "
                    "rank (see the log for why dumps failed)",
                    how, w->taken);
}

/* A dump of the series has been written (file) or not (NULL); on the
 * loop. The series ends with its last attempt's answer. */
static void
series_dumped(void *arg, const char *file)
{
    struct ha_leakwatch *w = arg;

    w->dumping = NULL;
    if (file != NULL) {
        w->taken++;
        if (w->taken == 1)
            ha_strlcpy(w->first, base_name(file), sizeof(w->first));
        ha_strlcpy(w->last, base_name(file), sizeof(w->last));
    }
    if (w->state == WATCH_COLLECTING &&
        w->attempts >= w->heap->je->leak_watch_dumps)
        end_series(w, "complete");
}

/* One dump of the series, on the worker; a tick while the last one is
 * still being written is skipped (the series waits for it). */
static void
take_dump(struct ha_leakwatch *w)
{
    const struct ha_jemalloc_config *je = w->heap->je;
    char reason[128];

    if (w->dumping != NULL || w->attempts >= je->leak_watch_dumps)
        return;
    w->attempts++;
    snprintf(reason, sizeof(reason), "leak watch, dump %lld of %lld",
             w->attempts, je->leak_watch_dumps);
    w->dumping = ha_dumptimer_dump(w->worker, w->heap,
                                   "jemalloc_variables.leak_watch_dumps",
                                   "leak-watch", reason, NULL, &w->low_space,
                                   series_dumped, w);
    if (w->dumping == NULL && w->attempts >= je->leak_watch_dumps)
        end_series(w, "complete"); /* not queued (logged) */
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    take_dump(arg);
}

/* Sampling on (see leakwatch.h for the policy), a dump now, the timer. */
static void
start_series(struct ha_leakwatch *w, const char *growth)
{
    const struct ha_mallctl_ops *ops = w->heap->ops;
    const struct ha_jemalloc_config *je = w->heap->je;
    struct timeval tv = {(time_t)je->leak_watch_dump_interval_s, 0};
    char sampling[96];

    if (!ha_mallctl_prof_enabled(ops)) {
        ha_log_warn("leak watch: resident memory grew %s, more than "
                    "leak_watch_growth_bytes = %lld, but heap profiling is "
                    "not available in this process (opt.prof=false): no "
                    "dumps can be taken; start it with "
                    "MALLOC_CONF=prof:true,prof_active:false,"
                    "prof_time_resolution:high",
                    growth, je->leak_watch_growth_bytes);
        w->rearm_after = (int64_t)time(NULL);
        return;
    }
    if (ha_heap_sampling_hold(w->heap, je->leak_watch_lg_prof_sample,
                              sampling, sizeof(sampling)) != 0) {
        ha_log_warn("leak watch: %s; no series", sampling);
        w->rearm_after = (int64_t)time(NULL);
        return;
    }
    w->holding = true;
    w->state = WATCH_COLLECTING;
    w->started = time(NULL);
    w->ended = 0;
    w->taken = w->attempts = 0;
    w->first[0] = w->last[0] = '\0';
    ha_strlcpy(w->trigger, growth, sizeof(w->trigger));
    ha_log_notice("leak watch: resident memory grew %s, more than "
                  "leak_watch_growth_bytes = %lld: %s, %lld dumps, one "
                  "every %lld s",
                  growth, je->leak_watch_growth_bytes, sampling,
                  je->leak_watch_dumps, je->leak_watch_dump_interval_s);
    w->timer = event_new(w->base, -1, EV_PERSIST, timer_cb, w);
    if (w->timer == NULL || event_add(w->timer, &tv) != 0) {
        ha_log_error("leak watch: cannot arm the dump timer");
        end_series(w, "abandoned");
        return;
    }
    take_dump(w);
}

/* ------------------------------------------------------------------
 * Samples
 * ------------------------------------------------------------------ */

/* The oldest sample the window looks back to (none from before the last
 * series' end); asked on the loop when a sample is taken. */
static int64_t
window_start(void *arg, int64_t now)
{
    const struct ha_leakwatch *w = arg;
    int64_t since = now - w->heap->je->leak_watch_window_s;

    return since < w->rearm_after ? w->rearm_after : since;
}

static void
on_sample(void *arg, const struct ha_history_sample *s,
          const struct ha_history_sample *oldest)
{
    struct ha_leakwatch *w = arg;
    const struct ha_jemalloc_config *je = w->heap->je;

    if (w->state != WATCH_WATCHING || oldest == NULL ||
        oldest->timestamp < w->rearm_after)
        return;
    if (ha_leakwatch_grown(je->leak_watch_growth_bytes, oldest->timestamp,
                           oldest->resident, s->timestamp, s->resident,
                           w->growth, sizeof(w->growth)))
        start_series(w, w->growth);
}

struct ha_leakwatch *
ha_leakwatch_new(struct event_base *base, struct ha_worker *worker,
                 struct ha_heap *heap, struct ha_history *h,
                 struct ha_leakrank *rank)
{
    const struct ha_jemalloc_config *je = heap->je;
    struct ha_leakwatch *w;

    if (je == NULL || je->leak_watch_growth_bytes <= 0)
        return NULL;
    if (h == NULL) {
        ha_log_warn("leak watch: off, stats_history is not available");
        return NULL;
    }
    if ((w = calloc(1, sizeof(*w))) == NULL) {
        ha_log_error("leak watch: out of memory");
        return NULL;
    }
    w->base = base;
    w->worker = worker;
    w->heap = heap;
    w->history = h;
    w->rank = rank;
    /* Growth from before this start is not this run's to judge. */
    w->rearm_after = (int64_t)time(NULL);
    w->growth[0] = '\0';
    ha_history_set_listener(h, window_start, on_sample, w);
    ha_log_info("leak watch: a series of %lld dumps, one every %lld s, "
                "when resident memory grows by more than %lld bytes within "
                "%lld s",
                je->leak_watch_dumps, je->leak_watch_dump_interval_s,
                je->leak_watch_growth_bytes, je->leak_watch_window_s);
    return w;
}

void
ha_leakwatch_free(struct ha_leakwatch *w)
{
    if (w == NULL)
        return;
    ha_history_set_listener(w->history, NULL, NULL, NULL);
    w->rank = NULL;
    ha_dump_req_forget(w->dumping);
    w->dumping = NULL;
    if (w->state == WATCH_COLLECTING)
        end_series(w, "stopped (shutdown)");
    free(w);
}

bool
ha_leakwatch_value(const void *arg, const char *name, char *buf,
                   size_t len)
{
    const struct ha_leakwatch *w = arg;
    const struct ha_jemalloc_config *je;
    char t[32], limit[32];

    if (name == NULL || strcmp(name, "jemalloc-leak_watch_state") != 0)
        return false;
    if (w == NULL) {
        ha_strlcpy(buf, "off", len);
        return true;
    }
    je = w->heap->je;
    if (w->state == WATCH_COLLECTING) {
        utc(w->started, t, sizeof(t));
        snprintf(buf, len,
                 "collecting since %s UTC (resident grew %s): %lld of %lld "
                 "dumps, one every %lld s, first %s",
                 t, w->trigger, w->taken, je->leak_watch_dumps,
                 je->leak_watch_dump_interval_s,
                 w->first[0] ? w->first : "(none yet)");
        return true;
    }
    ha_breakdown_format_bytes(je->leak_watch_growth_bytes, limit,
                              sizeof(limit));
    if (w->ended != 0 && w->taken >= 2) {
        utc(w->ended, t, sizeof(t));
        snprintf(buf, len,
                 "watching: resident %s; a series starts past +%s within "
                 "%lld s; last series %lld dumps, done %s UTC: SELECT * "
                 "FROM heap_growth('%s', '%s')",
                 w->growth, limit, je->leak_watch_window_s, w->taken, t,
                 w->first, w->last);
        return true;
    }
    snprintf(buf, len, "watching: %s%s; a series starts past +%s within "
                       "%lld s",
             w->growth[0] ? "resident " : "no sample yet",
             w->growth, limit, je->leak_watch_window_s);
    return true;
}
