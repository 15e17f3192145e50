/* SPDX-License-Identifier: MIT
 *
 * The heap service of one instance: this process's jemalloc (control and
 * statistics through heap/mallctl.h), its heap profiles in the datadir
 * (dumps written, listed, loaded, symbolized, cached), and what is made
 * from them. Every face reads the heap through it: the SQL tables
 * (vtab/), the HTTP pages (http/), the engine's timers and watches. It
 * knows nothing of SQL or HTTP.
 *
 * Owned by the engine; fields not set by the owner stay zero. Caches are
 * created on first use and belong to the loop's thread, but for the
 * symbolizer and the dump totals, which only the worker thread touches
 * (heap/profiles.h).
 */
#ifndef HA_HEAP_H
#define HA_HEAP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "heap/cgroup.h"
#include "heap/jeconfig.h"
#include "heap/mallctl.h"
#include "prof/wrappers.h"

/* What the heap service's calls that wait return besides 0. */
#define HA_HEAP_ERROR (-1)   /* err says what was wrong */
#define HA_HEAP_STOPPED (-2) /* the asking task was stopped while it
                                waited (ha_task_stopped says why) */
#define HA_HEAP_BUSY (-3)    /* a live profile was asked for while a heap
                                dump is being written, which it would wait
                                for; err says so: try again later */
#define HA_HEAP_CONFLICT (-4) /* the process's state does not allow it (a
                                delta without prof_accum, or reset within
                                its window); err says what to change */

struct ha_symbolizer;
struct ha_heap_cache;
struct ha_dump_totals;
struct ha_heap_growth_cache;
struct ha_profmetrics;
struct ha_worker;
struct ha_labels;

/* Where an instance's run writes "exited" when the process exits with
 * it still running: armed by ha_runs_start, taken back by
 * ha_runs_disarm_exit (heap/runs.h). One per instance: two instances in
 * one process each end their own run. */
struct ha_runs_exit {
    char path[PATH_MAX];               /* the run's end file */
    long pid;                          /* the process that armed it */
    struct ha_runs_exit *next;         /* the armed ones (heap/runs.c) */
};

struct ha_heap {
    /* Set by the owner before first use. */
    const struct ha_mallctl_ops *ops;  /* jemalloc, or a fake in tests */
    const char *datadir;               /* absolute; dumps go here (through
                                          prof.prefix, ha_profconf_apply) */
    const struct ha_jemalloc_config *je; /* dump housekeeping, symbol
                                            sources; NULL: none */
    unsigned lg_prof_sample_min;       /* lower rates refused; 0: none */
    bool dump_symbolized;              /* dump_now also writes <dump>.sym
                                          (symcopy.h) */
    struct ha_worker *dump_worker;     /* the datadir's writes (dumps,
                                          history samples), apart from the
                                          worker that loads profiles, so a
                                          stalled disk holds up no one
                                          else; NULL: the task's */
    /* The lifetime window (logwin.h): called on the loop when one opens,
     * so the owner calls ha_logwin_tick until it returns -1; NULL: no
     * ticks (it closes at shutdown or exit only). */
    void (*window_opened)(void *arg);
    void *window_arg;
    char alloc_wrappers[HA_WRAP_TEXT_MAX]; /* the operator's edits of the
                                          allocation wrappers, checked
                                          (prof/wrappers.h: canonical
                                          text, jemalloc-alloc_wrappers);
                                          "": none. Loop thread: a load
                                          copies it, and a cached profile
                                          made with other edits is made
                                          again (profiles.h) */
    long long log_max_bytes;           /* a window closes when jemalloc
                                          holds this much for it
                                          (jemalloc-log_max_bytes); 0:
                                          HA_LOGWIN_DEFAULT_MAX_BYTES */
    const char *program;               /* this process's program, as the
                                          agents' registry names it: the
                                          label of heap/profmetrics.h's
                                          families; NULL: "" */
    /* Run first on the symbolizer's debuginfod fetch threads, as on the
     * owner's worker thread (log sink, profiling switches); NULL: none. */
    void (*thread_init)(void *arg);
    void *thread_init_arg;

    /* Statistics freshness: jemalloc's "epoch" refresh locks every arena
     * (costly with many), so readers share one refresh for up to
     * stats_max_age_ms; 0: every read refreshes. Loop thread. */
    unsigned stats_max_age_ms;
    long long stats_epoch_ms;          /* ha_clock_ms() of the last
                                          refresh; 0: never */

    /* This process's memory cgroup (cgroup.h), located by the owner at
     * start and again at each history sample (a process can be moved);
     * version 0: none. Loop thread; a dump job copies it. */
    struct ha_cgroup_where cgroup;

    int64_t run_started_ns;            /* this run's start, as its record
                                          has it (heap/runs.h); 0: none */
    struct ha_runs_exit run_exit;      /* this run's end at the exit */
    const struct ha_labels *labels;    /* the label contract
                                          (engine/labels.h), for
                                          /metrics; NULL: none */
    /* Called on the loop once a dump may have been published (one of
     * ours written, or the watch on jemalloc's own ones looked):
     * the push's cue (engine/push.h); NULL: nobody listens. */
    void (*published)(void *arg);
    void *published_arg;

    /* The variables of heap/settings.h that layers above own, as text
     * into buf (len bytes); false for NULL or a name it does not know.
     * NULL: such rows read NULL. admin_value: the admin-* rows, from the
     * config's owner (engine/config_show.c ha_config_admin_value);
     * engine_value: run-time state of the engine's watches
     * (jemalloc-leak_watch_state, jemalloc-limit_watch_state). */
    bool (*admin_value)(const void *arg, const char *name, char *buf,
                        size_t len);
    const void *admin_arg;
    bool (*engine_value)(const void *arg, const char *name, char *buf,
                         size_t len);
    const void *engine_arg;

    /* Sampling switched on by watches (ha_heap_sampling_hold). */
    struct ha_heap_sampling {
        unsigned holds;                /* watches that need it on */
        bool changed_active;           /* prof.active was off: turned on */
        bool changed_rate;             /* prof.reset to another rate */
        size_t old_rate;               /* prof.lg_sample before */
    } sampling;

    /* Caches, created on first use, freed together (caches.h). The
     * worker's are used only by jobs, one at a time under the worker's
     * run_lock (core/worker.h), even when a job runs on the loop. */
    struct ha_symbolizer *symbolizer;  /* the worker's; made on the loop
                                          before a job needs it
                                          (profiles.h) */
    struct ha_heap_cache *profiles;    /* loaded profiles (profiles.h) */
    struct ha_dump_totals *dump_totals; /* the dumps' parsed totals, the
                                           worker's (dumps.h) */
    struct ha_heap_growth_cache *growth; /* the last growth result
                                            (growth.h) */
    struct ha_profmetrics *profmetrics; /* what /metrics carries of the
                                           profiles (profmetrics.h) */
};

/* Refreshes jemalloc's statistics (the "epoch" mallctl) unless the last
 * refresh is younger than heap->stats_max_age_ms, or a dump of ours is
 * being written (the refresh would wait for it: the figures stay as of
 * the last refresh, ha_heap_stats_age_ms says how old). Never waits for
 * a dump. */
void ha_heap_refresh_stats(struct ha_heap *heap);

/* heap->published, when set. Loop thread. */
void ha_heap_published(struct ha_heap *heap);

/* Sampling on for a watch's sake (the leak watch's series, the limit
 * watch near a limit). The first hold switches it on when it is off, at
 * lg_rate (HA_UNSET: the current rate; a different rate is a prof.reset,
 * which discards the samples taken so far: there are none while it is
 * off) and writes what it did into what; while sampling was already on
 * (the operator's), rate and samples are left alone. Later holds change
 * nothing. Returns 0, or -1 when profiling is not available or
 * prof.active cannot be switched (what says why). Loop thread. */
int ha_heap_sampling_hold(struct ha_heap *heap, int lg_rate, char *what,
                          size_t whatlen);

/* Drops a hold; the last one puts sampling back as the first found it
 * (off, at its old rate). Loop thread. */
void ha_heap_sampling_release(struct ha_heap *heap);

/* Age of the statistics in ms (time since the last refresh), or -1 when
 * they were never refreshed. */
long long ha_heap_stats_age_ms(const struct ha_heap *heap);

#endif /* HA_HEAP_H */
