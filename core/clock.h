/* SPDX-License-Identifier: MIT
 *
 * The one monotonic clock every layer reads (CLOCK_MONOTONIC): deadlines,
 * throttles, cache ages, statistics freshness. Not wall time: it never
 * jumps with the system clock, and 0 is some instant before this process
 * started, so a stored 0 can mean "never". Safe on any thread, in a
 * fork child and in the agent's guest code: clock_gettime takes no lock
 * and nothing here allocates. Being CLOCK_MONOTONIC, a deadline made from
 * ha_clock_ns may be given to a pthread wait told that clock
 * (core/forkguard.c). The one copy: agent/ and attach/ use it too.
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
