/* SPDX-License-Identifier: MIT
 *
 * The limit watch's rule (engine/limitwatch.h has what it does): when a
 * look at the memory cgroup calls for a limit dump. Levels once per
 * crossing, re-armed HA_LIMITWATCH_REARM of the limit below; a level
 * above any dumped in this climb at once, anything else no sooner than
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
    int top;                       /* highest level dumped in this climb
                                      (until the working set falls below
                                      the lowest level less the re-arm
                                      margin); -1: none */
    bool psi_armed;
    int64_t seen_high, seen_max, seen_oom; /* events counted; -1: not yet
                                              looked */
    int64_t last_dump_s;           /* when the last limit dump was taken;
                                      0: none */
};

/* One look. */
struct ha_limitwatch_in {
    int64_t limit;                 /* bytes; -1 (HA_CGROUP_UNLIMITED):
                                      none */
    int64_t working_set;           /* bytes; -1: unknown */
    int64_t ev_high, ev_max, ev_oom; /* -1: not offered */
    bool has_psi;
    double psi_avg10;              /* some, percent */
    bool psi_fired;                /* the kernel's trigger fired */
    int64_t now_s;                 /* a monotonic clock, seconds */
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
 * set 57.6 MiB reached 0.90 of the limit 64.0 MiB"). */
enum ha_limitwatch_trigger
ha_limitwatch_decide(const struct ha_limitwatch_rule *r,
                     struct ha_limitwatch_arm *a,
                     const struct ha_limitwatch_in *in, char *reason,
                     size_t reasonlen);

#endif /* HA_LIMITRULE_H */
