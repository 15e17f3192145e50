/* SPDX-License-Identifier: MIT
 *
 * The limit watch's rule (engine/limitwatch.h has what it does): when a
 * look at the memory cgroup calls for a limit dump. Levels once per
 * crossing: a level is re-armed once the working set has stayed
 * HA_LIMITWATCH_REARM of the limit below it for HA_LIMITWATCH_REARM_HOLD_MS
 * (a burst freed and grown again within that time, or page cache the
 * kernel moved between its lists, is no new crossing); a level above any
 * dumped in this climb at once, anything else no sooner than
 * min_interval_s after the last limit dump; events counted, and held
 * back rather than lost; pressure once, re-armed below half its bound.
 * Pure: the figures come from heap/cgroup.h.
 */
#ifndef HA_LIMITRULE_H
#define HA_LIMITRULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_LIMITWATCH_FRACTIONS_MAX 8
#define HA_LIMITWATCH_REARM 0.05   /* of the limit, below a level */
#define HA_LIMITWATCH_REARM_HOLD_MS 10000 /* ... for this long */
#define HA_LIMITWATCH_NEAR_MS 1000 /* looks past the wake level, at most */
#define HA_LIMITWATCH_HOT_MS 250   /* ... within 5 points of the first level */
#define HA_LIMITWATCH_LOOK_MIN_MS 10 /* ... at least, however fast the climb:
                                        1 MB at 100 MB/s */
#define HA_LIMITWATCH_GLANCE_MS 250 /* usage reads far from it, at most: a
                                       fill of 0.6 of the limit a second
                                       (115 MB/s under 192 MiB) goes no
                                       further between two than from the
                                       wake level's margin to the first
                                       level (0.15) */
#define HA_LIMITWATCH_GLANCE_MIN_MS 20 /* ... at least (one pread: a fast
                                           climb is not read 10 MB apart) */

struct ha_limitwatch_rule {
    double fractions[HA_LIMITWATCH_FRACTIONS_MAX]; /* ascending, (0, 1] */
    size_t n;
    double psi_pct;                /* 0: off */
    bool events;
    int64_t min_interval_s;
};

/* What the watch remembers between two looks. */
struct ha_limitwatch_arm {
    bool armed[HA_LIMITWATCH_FRACTIONS_MAX];
    int64_t below_ms[HA_LIMITWATCH_FRACTIONS_MAX]; /* a passed level: since
                                      when the working set has been below
                                      its re-arm mark; 0: not below */
    int top;                       /* highest level dumped in this climb
                                      (until the lowest level re-arms);
                                      -1: none */
    bool psi_armed;
    int64_t seen_high, seen_max, seen_oom; /* events counted; -1: not yet
                                              looked */
    int64_t last_dump_ms;          /* when the last limit dump was decided;
                                      0: none */
};

/* One look. */
struct ha_limitwatch_in {
    int64_t limit;                 /* bytes; -1 (HA_CGPARSE_UNLIMITED):
                                      none */
    int64_t working_set;           /* bytes; -1: unknown */
    int64_t ev_high, ev_max, ev_oom; /* -1: not offered */
    bool has_psi;
    double psi_avg10;              /* some, percent */
    bool psi_fired;                /* the kernel's trigger fired */
    int64_t now_ms;                /* a monotonic clock, ms (> 0) */
};

enum ha_limitwatch_trigger {
    HA_LIMITWATCH_NONE,
    HA_LIMITWATCH_FRACTION,
    HA_LIMITWATCH_PSI,
    HA_LIMITWATCH_EVENT,
    HA_LIMITWATCH_TRIGGER_MAX
};

/* Parses "0.80,0.90,0.95" (or with spaces) into out[0 .. *n), ascending,
 * each in (0, 1], at most max, no duplicates; "" is the empty list (off).
 * Returns 0, or -1 with why naming the bad entry and what is allowed. */
int ha_limitwatch_parse_fractions(const char *text, double *out,
                                  size_t max, size_t *n, char *why,
                                  size_t whylen);

/* Every level and PSI armed, no events seen yet. */
void ha_limitwatch_arm_init(struct ha_limitwatch_arm *a);

/* Decides whether in calls for a limit dump, and updates a (levels
 * disarmed and re-armed, events counted, the dump's time). Returns the
 * trigger (HA_LIMITWATCH_NONE: no dump) with reason saying why ("working
 * set 57.6 MiB reached 0.90 of the limit 64.0 MiB"). A level's dump is
 * decided on in->working_set alone, so a dump is never taken below its
 * level: the caller records in's figures with the dump. */
enum ha_limitwatch_trigger
ha_limitwatch_decide(const struct ha_limitwatch_rule *r,
                     struct ha_limitwatch_arm *a,
                     const struct ha_limitwatch_in *in, char *reason,
                     size_t reasonlen);

/* Where the watch stands between two looks, for the next one's time. */
struct ha_limitwatch_pace {
    int64_t limit;                 /* bytes; <= 0: none */
    int64_t usage;                 /* bytes, page cache too; -1: unknown */
    int64_t working_set;           /* bytes; -1: unknown */
    double rate;                   /* the working set's climb, bytes per
                                      second over the last looks; <= 0:
                                      not climbing, or not known yet */
    double wake;                   /* the wake level, share of the limit */
};

/* How soon the watch looks again on its own timer, in ms; 0: no timer
 * (no limit, or the usage is below the wake level less the re-arm
 * margin: the kernel's wake-ups or the watch's glance at the usage serve).
 * Otherwise at most HA_LIMITWATCH_NEAR_MS, HA_LIMITWATCH_HOT_MS from 5
 * points below the first level; and, at the climb rate, half the time the
 * working set needs to reach the next mark above it (the wake level,
 * each armed level), so that the looks close in on a mark as the climb
 * nears it and one comes at most HA_LIMITWATCH_LOOK_MIN_MS after it is
 * passed (a kernel threshold on the usage wakes the watch a little before
 * the working set gets there: page cache); never under
 * HA_LIMITWATCH_LOOK_MIN_MS. The usage (never below the working set)
 * decides near or far, so a group whose page cache hides the climb is
 * still looked at. */
int ha_limitwatch_next_look_ms(const struct ha_limitwatch_rule *r,
                               const struct ha_limitwatch_arm *a,
                               const struct ha_limitwatch_pace *p);

/* Where no kernel threshold wakes the watch: how soon to read the usage
 * again, in ms, given the usage now and its climb (bytes, bytes per
 * second; rate <= 0: not climbing or not known) and the share of the
 * limit where a whole look is called for (near: where the looks take
 * over, or the usage at which the working set reaches the next level). A
 * quarter of the time the climb needs to reach it (a read costs a few
 * microseconds, and a host that stalled catches up at several times its
 * rate), within [HA_LIMITWATCH_GLANCE_MIN_MS, HA_LIMITWATCH_GLANCE_MS];
 * 0 when the usage is there already. */
int ha_limitwatch_next_glance_ms(int64_t limit, int64_t usage, double rate,
                                 double near);

#endif /* HA_LIMITRULE_H */
