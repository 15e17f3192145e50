/* SPDX-License-Identifier: MIT
 *
 * The jemalloc part of the config (jemalloc_variables): what profconf.c
 * applies at start-up. Lives in vtab/, beneath engine/config.h which
 * embeds it, so the jemalloc layer needs nothing from admin/. Plain data.
 */
#ifndef HA_JECONFIG_H
#define HA_JECONFIG_H

/* Tri-state for optional settings: unset keeps jemalloc's own value. */
#define HA_UNSET (-1)

struct ha_jemalloc_config {
    int prof_active;        /* 0/1 or HA_UNSET */
    int lg_prof_sample;     /* 0..62 or HA_UNSET */
    int lg_prof_interval;   /* -1..62, HA_UNSET (-2) when absent */
    int prof_gdump;         /* 0/1 or HA_UNSET */
    int prof_final;         /* 0/1 or HA_UNSET */
    int prof_leak;          /* 0/1 or HA_UNSET */
    int prof_accum;         /* 0/1 or HA_UNSET */
    char dump_prefix[64];   /* file stem of dumps in the datadir */
    char dump_group[64];    /* group that may read dumps (mode 0640);
                               "": none (0600) */
    int lg_prof_sample_min; /* lowest lg_prof_sample accepted, 0..62 */
    int stats_max_age_ms;   /* statistics refreshed at most this often */
    int dump_symbolized;    /* 0/1: dump_now also writes <dump>.sym */

    /* Names in heap profiles (prof/symbolize.h) */
    char debug_root[1024];  /* another directory of .build-id/xx/yyyy.debug
                               files, before /usr/lib/debug; "": none */
    int debuginfod;         /* 0/1: ask debuginfod for missing debug info */
    char debuginfod_urls[1024]; /* its servers, space-separated; "": the
                                   environment's DEBUGINFOD_URLS */
    int debuginfod_timeout_ms;  /* the longest a query waits for it */
    char alloc_wrappers[2048];  /* the operator's edits of the allocation
                                   wrappers (prof/wrappers.h syntax,
                                   HA_WRAP_TEXT_MAX); "": none */

    /* Dump housekeeping (heap/dumpfiles.h, engine/dumptimer.h) */
    long long dump_retention_count; /* dumps kept in the datadir, oldest
                                       removed first; 0: no limit */
    long long dump_retention_bytes; /* their total size kept under this;
                                       0: no limit */
    long long dump_min_free_bytes;  /* automatic dumps skipped while the
                                       datadir's free space is below it;
                                       0: no floor */
    long long dump_interval_s;      /* a dump every this many s; 0: none */
    long long dump_resident_bytes;  /* a dump when stats.resident rises
                                       past it; 0: none */

    /* Decay (arenas.*_decay_ms and every arena's), applied at start */
    long long dirty_decay_ms;       /* -1..; HA_DECAY_UNSET: jemalloc's */
    long long muzzy_decay_ms;

    /* The leak watch (engine/leakwatch.h) */
    long long leak_watch_growth_bytes; /* resident growth over the window
                                          that starts a series; 0: off */
    long long leak_watch_window_s;     /* the window, seconds */
    long long leak_watch_dump_interval_s; /* between the series' dumps */
    long long leak_watch_dumps;        /* dumps in a series */
    int leak_watch_lg_prof_sample;     /* sampling rate while watching;
                                          HA_UNSET: the current one */
    long long leak_watch_sites;        /* a finished series' top sites
                                          exported as metrics
                                          (heap/profmetrics.h); 0: none */

    /* The limit watch (engine/limitwatch.h) */
    char limit_dump_fractions[64];     /* "0.80,0.90,0.95": a dump as the
                                          working set passes each share
                                          of the memory limit; "": off */
    int limit_dump_psi_pct;            /* a dump when memory pressure
                                          (PSI some) passes this percent;
                                          0: off */
    int limit_dump_events;             /* 0/1: a dump on new high/max/oom
                                          events of the cgroup */
    long long limit_dump_min_interval_s; /* between two limit dumps but
                                            for a new, higher level */
    int limit_watch_sampling;          /* 0/1: sampling held on wherever
                                          a memory limit binds the
                                          process, from the first look
                                          (unless prof_active = false is
                                          configured) */
    int limit_watch_lg_prof_sample;    /* its rate; HA_UNSET: current */
};

/* dirty_decay_ms / muzzy_decay_ms not set: jemalloc's own stay (-1 is a
 * value: never decay). */
#define HA_DECAY_UNSET (-2LL)

/* Leak watch defaults: an hour's window, a dump every 5 minutes, a
 * series of 12 (an hour of evidence). */
#define HA_DEFAULT_LEAK_WATCH_WINDOW_S 3600
#define HA_DEFAULT_LEAK_WATCH_DUMP_INTERVAL_S 300
#define HA_DEFAULT_LEAK_WATCH_DUMPS 12
/* ... and its 5 top sites as metrics, of at most 10: the bound on the
 * series per process. */
#define HA_DEFAULT_LEAK_WATCH_SITES 5
#define HA_LEAK_WATCH_SITES_MAX 10

/* Limit watch defaults: a dump at 80, 90 and 95 % of the limit, on
 * memory pressure above 20 % (PSI some, over 2 s), on new high/max/oom
 * events, at most one a 30 s but for a new higher level; sampling on
 * wherever a limit binds the process. */
#define HA_DEFAULT_LIMIT_DUMP_FRACTIONS "0.80,0.90,0.95"
#define HA_DEFAULT_LIMIT_DUMP_PSI_PCT 20
#define HA_DEFAULT_LIMIT_DUMP_MIN_INTERVAL_S 30

/* dump_min_free_bytes when the config says nothing: 256 MiB left for the
 * host, whatever the interval dumps want. */
#define HA_DEFAULT_DUMP_MIN_FREE_BYTES (256LL << 20)
#define HA_LG_INTERVAL_UNSET (-2)

/* jemalloc 5.3 promotes every sampled small allocation to a 16 KiB
 * extent, so a low lg_prof_sample multiplies a host's resident memory
 * (measured: 2.8x RSS at lg 10 in redis); below 2^14 = 16 KiB between
 * samples is refused unless the config lowers this floor. */
#define HA_DEFAULT_LG_PROF_SAMPLE_MIN 14

/* debuginfod_timeout_ms when the config says nothing: a dashboard's
 * query may wait this long for a first download; what is not in by then
 * is named at the next query. */
#define HA_DEFAULT_DEBUGINFOD_TIMEOUT_MS 5000

/* dump_prefix when the config names none (ProxySQL's file stem). */
#define HA_DEFAULT_DUMP_PREFIX "proxysql"

#endif /* HA_JECONFIG_H */
