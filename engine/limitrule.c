/* SPDX-License-Identifier: MIT
 *
 * The limit watch's rule (see limitrule.h). Pure.
 */
#include "engine/limitrule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "prof/breakdown.h"

int
ha_limitwatch_parse_fractions(const char *text, double *out, size_t max,
                              size_t *n, char *why, size_t whylen)
{
    const char *p = text != NULL ? text : "";

    *n = 0;
    while (*p != '\0') {
        const char *s, *e;
        double v = 0, scale = 0.1;
        bool digits = false, dot = false;

        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        s = p;
        while (*p != '\0' && *p != ',' && *p != ' ')
            p++;
        e = p;
        /* A plain decimal, no exponent: read here, so a host's locale
         * cannot turn the dot into something else. */
        for (const char *q = s; q < e; q++) {
            if (*q == '.' && !dot) {
                dot = true;
            } else if (*q >= '0' && *q <= '9') {
                digits = true;
                if (!dot)
                    v = v * 10 + (*q - '0');
                else {
                    v += (*q - '0') * scale;
                    scale /= 10;
                }
            } else {
                digits = false;
                break;
            }
        }
        if (!digits || !(v > 0 && v <= 1)) {
            ha_err_set(why, whylen,
                       "'%.*s' is not a share of the limit: give numbers "
                       "above 0 and at most 1, comma-separated (e.g. "
                       "'0.80,0.90,0.95'), or '' for none",
                       (int)(e - s > 40 ? 40 : e - s), s);
            return -1;
        }
        if (*n == max) {
            ha_err_set(why, whylen, "at most %zu levels", max);
            return -1;
        }
        for (size_t i = 0; i < *n; i++)
            if (fabs(out[i] - v) < 1e-9) {
                ha_err_set(why, whylen, "%.*s is given twice",
                           (int)(e - s), s);
                return -1;
            }
        out[(*n)++] = v;
    }
    /* ascending */
    for (size_t i = 1; i < *n; i++)
        for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
            double t = out[j];

            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return 0;
}

void
ha_limitwatch_arm_init(struct ha_limitwatch_arm *a)
{
    memset(a, 0, sizeof(*a));
    for (size_t i = 0; i < HA_LIMITWATCH_FRACTIONS_MAX; i++)
        a->armed[i] = true;
    a->top = -1;
    a->psi_armed = true;
    a->seen_high = a->seen_max = a->seen_oom = -1;
}

static bool
interval_passed(const struct ha_limitwatch_rule *r,
                const struct ha_limitwatch_arm *a, int64_t now_ms)
{
    return a->last_dump_ms == 0 ||
           now_ms - a->last_dump_ms >= r->min_interval_s * 1000;
}

/* New events of one kind: the count since the last look, or 0; the
 * first look only learns the count. */
static int64_t
new_events(int64_t now, int64_t seen)
{
    return now >= 0 && seen >= 0 && now > seen ? now - seen : 0;
}

enum ha_limitwatch_trigger
ha_limitwatch_decide(const struct ha_limitwatch_rule *r,
                     struct ha_limitwatch_arm *a,
                     const struct ha_limitwatch_in *in, char *reason,
                     size_t reasonlen)
{
    char ws[32], lim[32];
    int64_t limit = in->limit, d_high, d_max, d_oom;
    int crossed = -1, lowest = -1;

    reason[0] = '\0';
    if (limit <= 0 || in->working_set < 0) {
        /* Events before a limit applied are not this limit's. */
        a->seen_high = in->ev_high;
        a->seen_max = in->ev_max;
        a->seen_oom = in->ev_oom;
        return HA_LIMITWATCH_NONE;
    }
    ha_breakdown_format_bytes(in->working_set, ws, sizeof(ws));
    ha_breakdown_format_bytes(limit, lim, sizeof(lim));

    /* Levels: re-arm those the working set has stayed well below for
     * the hold (the climb ends when even the lowest is re-armed), then
     * the highest armed level it has reached. */
    for (size_t i = 0; i < r->n; i++) {
        double level = r->fractions[i] * (double)limit;

        if (a->armed[i])
            continue;
        if ((double)in->working_set >=
            level - HA_LIMITWATCH_REARM * (double)limit) {
            a->below_ms[i] = 0;
            continue;
        }
        if (a->below_ms[i] == 0)
            a->below_ms[i] = in->now_ms;
        if (in->now_ms - a->below_ms[i] >= HA_LIMITWATCH_REARM_HOLD_MS) {
            a->armed[i] = true;
            a->below_ms[i] = 0;
            if (i == 0)
                a->top = -1;
        }
    }
    for (size_t i = 0; i < r->n; i++)
        if (a->armed[i] &&
            (double)in->working_set >= r->fractions[i] * (double)limit) {
            crossed = (int)i;
            if (lowest < 0)
                lowest = (int)i;
        }
    if (crossed >= 0 &&
        (crossed > a->top || interval_passed(r, a, in->now_ms))) {
        for (int i = 0; i <= crossed; i++)
            if ((double)in->working_set >= r->fractions[i] * (double)limit) {
                a->armed[i] = false;
                a->below_ms[i] = 0;
            }
        if (crossed > a->top)
            a->top = crossed;
        a->last_dump_ms = in->now_ms;
        if (lowest != crossed)
            snprintf(reason, reasonlen,
                     "working set %s reached %.2f of the memory limit %s "
                     "(%.2f to %.2f passed since the last look)",
                     ws, r->fractions[crossed], lim, r->fractions[lowest],
                     r->fractions[crossed]);
        else
            snprintf(reason, reasonlen,
                     "working set %s reached %.2f of the memory limit %s",
                     ws, r->fractions[crossed], lim);
        return HA_LIMITWATCH_FRACTION;
    }

    /* Events: new since the last look; held back by the interval, they
     * stay counted as new until a dump takes them. */
    d_high = new_events(in->ev_high, a->seen_high);
    d_max = new_events(in->ev_max, a->seen_max);
    d_oom = new_events(in->ev_oom, a->seen_oom);
    if (a->seen_high < 0)
        a->seen_high = in->ev_high;
    if (a->seen_max < 0)
        a->seen_max = in->ev_max;
    if (a->seen_oom < 0)
        a->seen_oom = in->ev_oom;
    if (r->events && (d_high > 0 || d_max > 0 || d_oom > 0) &&
        interval_passed(r, a, in->now_ms)) {
        char what[128];
        size_t at = 0;

        what[0] = '\0';
        if (d_oom > 0)
            at += (size_t)snprintf(what + at, sizeof(what) - at,
                                   "%s%lld oom", at ? ", " : "",
                                   (long long)d_oom);
        if (d_max > 0 && at < sizeof(what))
            at += (size_t)snprintf(what + at, sizeof(what) - at,
                                   "%s%lld max", at ? ", " : "",
                                   (long long)d_max);
        if (d_high > 0 && at < sizeof(what))
            snprintf(what + at, sizeof(what) - at, "%s%lld high",
                     at ? ", " : "", (long long)d_high);
        a->seen_high = in->ev_high;
        a->seen_max = in->ev_max;
        a->seen_oom = in->ev_oom;
        a->last_dump_ms = in->now_ms;
        snprintf(reason, reasonlen,
                 "new memory events of the cgroup (%s) with the working "
                 "set at %s of the limit %s",
                 what, ws, lim);
        return HA_LIMITWATCH_EVENT;
    }
    if (!r->events) {
        a->seen_high = in->ev_high;
        a->seen_max = in->ev_max;
        a->seen_oom = in->ev_oom;
    }

    /* Pressure. */
    if (r->psi_pct > 0 && in->has_psi) {
        bool above = in->psi_fired || in->psi_avg10 >= r->psi_pct;

        if (!a->psi_armed && !in->psi_fired &&
            in->psi_avg10 < r->psi_pct / 2)
            a->psi_armed = true;
        if (a->psi_armed && above && interval_passed(r, a, in->now_ms)) {
            a->psi_armed = false;
            a->last_dump_ms = in->now_ms;
            snprintf(reason, reasonlen,
                     "memory pressure: tasks stalled %.1f%% of the time "
                     "(PSI some avg10; bound %.0f%%)%s, working set %s of "
                     "the limit %s",
                     in->psi_avg10, r->psi_pct,
                     in->psi_fired ? ", the kernel's trigger fired" : "", ws,
                     lim);
            return HA_LIMITWATCH_PSI;
        }
    }
    return HA_LIMITWATCH_NONE;
}


int
ha_limitwatch_next_look_ms(const struct ha_limitwatch_rule *r,
                           const struct ha_limitwatch_arm *a,
                           const struct ha_limitwatch_pace *p)
{
    double limit = (double)p->limit, ws = (double)p->working_set;
    double near = p->usage >= 0 ? (double)p->usage : ws;
    double cap, next = -1, ms;

    if (p->limit <= 0 || r->n == 0 || near < 0 ||
        near < (p->wake - HA_LIMITWATCH_REARM) * limit)
        return 0;
    if (ws < 0)
        return HA_LIMITWATCH_HOT_MS;
    cap = ws >= (r->fractions[0] - HA_LIMITWATCH_REARM) * limit
              ? HA_LIMITWATCH_HOT_MS
              : HA_LIMITWATCH_NEAR_MS;
    if (p->rate <= 0)
        return (int)cap;
    /* The lowest mark above the working set. */
    if (ws < p->wake * limit)
        next = p->wake * limit;
    for (size_t i = 0; i < r->n; i++) {
        double level = r->fractions[i] * limit;

        if (a->armed[i] && ws < level && (next < 0 || level < next))
            next = level;
    }
    if (next < 0)
        return (int)cap;
    ms = (next - ws) / p->rate * 1000.0 / 2;
    if (ms > cap)
        ms = cap;
    if (ms < HA_LIMITWATCH_LOOK_MIN_MS)
        ms = HA_LIMITWATCH_LOOK_MIN_MS;
    return (int)ms;
}

int
ha_limitwatch_next_glance_ms(int64_t limit, int64_t usage, double rate,
                             double near)
{
    double gap = near * (double)limit - (double)usage, ms;

    if (limit <= 0 || usage < 0)
        return HA_LIMITWATCH_GLANCE_MS;
    if (gap <= 0)
        return 0;
    if (rate <= 0)
        return HA_LIMITWATCH_GLANCE_MS;
    ms = gap / rate * 1000.0 / 4;
    if (ms > HA_LIMITWATCH_GLANCE_MS)
        ms = HA_LIMITWATCH_GLANCE_MS;
    if (ms < HA_LIMITWATCH_GLANCE_MIN_MS)
        ms = HA_LIMITWATCH_GLANCE_MIN_MS;
    return (int)ms;
}
