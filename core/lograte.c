/* SPDX-License-Identifier: MIT
 *
 * Log line budgets (see lograte.h).
 */
#include "core/lograte.h"

bool
ha_lograte_take(struct ha_lograte *r, int64_t now_ms, uint64_t *flushed)
{
    *flushed = 0;
    if (r->from_ms == 0 || now_ms - r->from_ms >= HA_LOGRATE_WINDOW_MS) {
        *flushed = r->held;
        r->held = 0;
        r->said = 0;
        r->from_ms = now_ms != 0 ? now_ms : 1;
    }
    if (r->said < HA_LOGRATE_BURST) {
        r->said++;
        return true;
    }
    r->held++;
    return false;
}

uint64_t
ha_lograte_due(struct ha_lograte *r, int64_t now_ms)
{
    uint64_t held = r->held;

    if (held == 0 || now_ms - r->from_ms < HA_LOGRATE_WINDOW_MS)
        return 0;
    r->held = 0;
    r->said = 0;
    r->from_ms = now_ms;
    return held;
}
