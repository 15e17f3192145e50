/* SPDX-License-Identifier: MIT
 *
 * The monotonic clock (clock.h).
 */
#include "core/clock.h"

#include <time.h>

int64_t
ha_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
ha_clock_ms(void)
{
    return ha_clock_ns() / 1000000;
}

int64_t
ha_clock_s(void)
{
    return ha_clock_ns() / 1000000000;
}
