/* SPDX-License-Identifier: MIT
 *
 * Growth over a series of heap dumps: which keys (allocation-site
 * functions, or collapsed stacks) hold more memory dump after dump, how
 * fast, and how steadily. The answer to "is it a leak, and where",
 * ranked so that a site that grows at every step tops one that spikes
 * and frees, and one that grew once and then stayed.
 *
 * Feeding: one dump at a time, in time order. ha_growth_begin(t) opens a
 * dump taken at t (seconds, any epoch); ha_growth_add() gives a key's
 * bytes and objects in it (the same key twice in one dump adds up);
 * ha_growth_end() closes it. A key absent from a dump holds 0 there,
 * before its first appearance as after its last. Memory is O(keys), not
 * O(keys x dumps): every statistic is kept as a running sum (Welford's
 * updates, so a series of large, nearly equal values loses no
 * precision), and a key that appears late starts from the zeros it had
 * in the earlier dumps.
 *
 * Per key, over the n dumps (times t_k in hours from the first, values
 * y_k in bytes):
 *   slope   least-squares bytes per hour of y on t: cov(t, y) / var(t);
 *           undefined (NAN) with fewer than two dumps or when every dump
 *           has the same time;
 *   r2      how much of y's variance the line explains,
 *           cov(t, y)^2 / (var(t) var(y)), 0..1; NAN when y never
 *           changed or slope is undefined;
 *   steps   n - 1 intervals between consecutive dumps, of which `grew`
 *           rose and `shrank` fell;
 *   score   max(slope, 0) * r2 * grew / steps: growth that is fast,
 *           fits a line and happens at most steps. A steady leak keeps
 *           its full slope; a site that spikes and frees has a small r2
 *           and a slope near zero; a one-off step keeps a slope and r2
 *           (a step halfway fits a line with r2 = 0.75) but grew at one
 *           step only, so it scores 1/steps of its slope. 0 when slope
 *           or r2 is undefined.
 * Rows come out by score, then by growth (last - first), then by key.
 *
 * Pure: no I/O, no SQLite; the dumps are read and symbolized elsewhere
 * (vtab/heap_growth.c), which is where the keys come from.
 */
#ifndef HA_GROWTH_H
#define HA_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/syms.h"

/* The shape of a key's series, for people reading the ranking. */
enum ha_growth_pattern {
    HA_GROWTH_UNKNOWN,   /* one dump, or every dump at the same time */
    HA_GROWTH_FLAT,      /* never changed */
    HA_GROWTH_STEADY,    /* grew at most steps and fits a rising line */
    HA_GROWTH_STEP,      /* grew at one step, never shrank */
    HA_GROWTH_GROWING,   /* rose overall, irregularly */
    HA_GROWTH_BURSTY,    /* rose and fell, no trend up */
    HA_GROWTH_SHRINKING, /* fell overall, falling at most steps */
    HA_GROWTH_PATTERN_MAX
};

/* Thresholds of HA_GROWTH_STEADY: the share of steps that grew and the
 * fit of the line. */
#define HA_GROWTH_STEADY_GREW 0.7
#define HA_GROWTH_STEADY_R2 0.8

/* One key's figures; see the header comment for the definitions. */
struct ha_growth_row {
    uint32_t key;             /* in ha_growth.keys (ha_growth_key()) */
    uint32_t first_dump;      /* index of the first dump it was in */
    double first_bytes;       /* at the series' first dump (0: absent) */
    double first_objs;
    double last_bytes;        /* at the last dump */
    double last_objs;
    double max_bytes;         /* the most it held in any dump */
    double bytes_per_hour;    /* slope; NAN: undefined */
    double objs_per_hour;     /* the same for objects */
    double r2;                /* fit of the bytes line; NAN: undefined */
    uint32_t steps;           /* dumps - 1 */
    uint32_t grew;            /* steps where bytes rose */
    uint32_t shrank;          /* steps where bytes fell */
    double score;             /* ranking key (>= 0) */
    enum ha_growth_pattern pattern;
    /* Cumulative counters (ha_growth_add_alloc, opt.prof_accum): what it
     * had allocated by the first and by the last dump, freed or not. */
    double first_alloc_bytes, first_alloc_objs;
    double last_alloc_bytes, last_alloc_objs;

    /* Running state while dumps are added (internal). */
    double cur_bytes, cur_objs;   /* this dump's sum */
    double cur_abytes, cur_aobjs; /* this dump's cumulative sums */
    double n;                     /* points so far */
    double mean_t, mean_b, mean_o;
    double m2_t, m2_b, c_tb, c_to;
    bool in_dump;                 /* cur_* set in the open dump */
    const char *sort_key;         /* the key's text while sorting */
};

struct ha_growth {
    struct ha_growth_row *rows;   /* one per key; sorted by finish */
    size_t n_rows, cap_rows;
    struct ha_strtab keys;        /* the keys' text */
    uint32_t *index;              /* open-addressed: key offset -> row+1 */
    size_t index_cap;             /* power of two */

    size_t n_dumps;               /* dumps closed */
    bool open;                    /* between begin and end */
    double t0_s;                  /* the first dump's time, seconds */
    double t_hours;               /* the open dump's time, hours from t0 */
    double first_t_hours;         /* the first and last dumps' times */
    double last_t_hours;
    /* Welford state of the times of the dumps closed so far: what a key
     * that appears now had before it (zeros at those times). */
    double tn, tmean, tm2;
    bool finished;
    size_t alloc_dumps;           /* dumps that carried cumulative
                                     counters (ha_growth_add_alloc) */
    bool open_alloc;              /* the open dump does */
};

/* Whether every dump of g carried cumulative counters: only then do the
 * rows' *_alloc_* figures mean anything. */
static inline bool
ha_growth_has_alloc(const struct ha_growth *g)
{
    return g->n_dumps > 0 && g->alloc_dumps == g->n_dumps;
}

/* Opens dump number n_dumps, taken at t_s seconds (later or equal to the
 * previous one's; an earlier time is taken as given). Returns 0, or -1
 * when a dump is already open or the series is finished (err set). */
int ha_growth_begin(struct ha_growth *g, double t_s, char *err,
                    size_t errlen);

/* Adds bytes and objects to key (len bytes, not NUL-terminated) in the
 * open dump. An empty key is ignored. Returns 0, or -1 on allocation
 * failure or without an open dump (err set). */
int ha_growth_add(struct ha_growth *g, const char *key, size_t len,
                  double bytes, double objs, char *err, size_t errlen);

/* Adds cumulative bytes and objects (opt.prof_accum: allocated since
 * profiling began, freed or not) to key in the open dump, and marks the
 * dump as carrying them. A dump fed only by ha_growth_add() carries none,
 * and then no row has alloc figures (ha_growth_has_alloc). Returns 0, or
 * -1 as ha_growth_add(). */
int ha_growth_add_alloc(struct ha_growth *g, const char *key, size_t len,
                        double bytes, double objs, char *err,
                        size_t errlen);

/* Closes the open dump: every key gets its point (0 when absent). Returns
 * 0, or -1 without an open dump (err set). */
int ha_growth_end(struct ha_growth *g, char *err, size_t errlen);

/* Computes every row's figures and sorts the rows by rank (best first).
 * No dump may be added afterwards. Idempotent. */
void ha_growth_finish(struct ha_growth *g);

/* The text of row r's key. */
static inline const char *
ha_growth_key(const struct ha_growth *g, const struct ha_growth_row *r)
{
    return ha_strtab_str(&g->keys, r->key);
}

/* "steady", "step", ...: the pattern's name for tables. */
const char *ha_growth_pattern_name(enum ha_growth_pattern p);

/* Hours between the first and the last dump (0 with fewer than two). */
double ha_growth_span_hours(const struct ha_growth *g);

/* Frees everything; g is zeroed. NULL-tolerant. */
void ha_growth_free(struct ha_growth *g);

#endif /* HA_GROWTH_H */
