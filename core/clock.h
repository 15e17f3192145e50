/* SPDX-License-Identifier: MIT
 *
 * The one monotonic clock every layer reads (CLOCK_MONOTONIC): deadlines,
 * throttles, cache ages, statistics freshness. Not wall time: it never
 * jumps with the system clock, and 0 is some instant before this process
 * started, so a stored 0 can mean "never". Safe on any thread and in a
 * fork child (clock_gettime takes no lock).
 */
#ifndef HA_CLOCK_H
#define HA_CLOCK_H

#include <stdint.h>

/* Now, in nanoseconds. */
int64_t ha_clock_ns(void);

/* Now, in milliseconds. */
int64_t ha_clock_ms(void);

/* Now, in whole seconds. */
int64_t ha_clock_s(void);

#endif /* HA_CLOCK_H */
