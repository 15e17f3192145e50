/* SPDX-License-Identifier: MIT
 *
 * A budget of log lines for one kind of event that an outsider can make
 * happen at will (a failed login, a refused request, accept() failing):
 * the first HA_LOGRATE_BURST events of each window get a line of their
 * own, the rest are only counted, and the count is said once, in one
 * summary line, when the window is over. So a flood costs the log a
 * bounded number of lines per window, however fast it comes, and the
 * first lines still say who and why.
 *
 * Pure: time comes in as an argument (monotonic ms). Not thread-safe:
 * one owner thread.
 */
#ifndef HA_LOGRATE_H
#define HA_LOGRATE_H

#include <stdbool.h>
#include <stdint.h>

#define HA_LOGRATE_BURST 10        /* lines per window */
#define HA_LOGRATE_WINDOW_MS 10000

struct ha_lograte {
    int64_t from_ms;       /* start of the window (0: none yet) */
    unsigned said;         /* lines written in the window */
    uint64_t held;         /* events not written in the window */
};

/* An event at now_ms: true when it may have a line of its own. When it
 * starts a new window, *flushed is what the last one held (to be said
 * first, in one line), else 0. */
bool ha_lograte_take(struct ha_lograte *r, int64_t now_ms,
                     uint64_t *flushed);

/* For a timer: when the window is over at now_ms, returns the events it
 * held (not written) and starts a new one; 0 when nothing is due. */
uint64_t ha_lograte_due(struct ha_lograte *r, int64_t now_ms);

#endif /* HA_LOGRATE_H */
