/* SPDX-License-Identifier: MIT
 *
 * Closed-loop plumbing shared by the bench tools (see loop.h).
 */
#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

int
bench_loop_opt(struct bench_loop_opts *o, int c, const char *arg)
{
    char *end = NULL;

    errno = 0;
    switch (c) {
    case 'c': {
        long v = strtol(arg, &end, 10);
        if (v < 1 || v > 4096)
            return -1;
        o->conns = (int)v;
        break;
    }
    case 'd':
        o->seconds = strtod(arg, &end);
        if (!(o->seconds > 0))
            return -1;
        break;
    case 'n':
        o->total = strtoull(arg, &end, 10);
        if (o->total == 0)
            return -1;
        break;
    case 'w':
        o->warmup_s = strtod(arg, &end);
        if (!(o->warmup_s >= 0))
            return -1;
        break;
    default:
        return 0;
    }
    return errno != 0 || end == arg || *end != '\0' ? -1 : 1;
}

unsigned long long
bench_loop_quota(const struct bench_loop_opts *o, int i)
{
    unsigned long long n = (unsigned long long)o->conns;

    if (o->total == 0)
        return 0;
    return o->total / n + ((unsigned long long)i < o->total % n);
}

void
bench_loop_sleep(double s)
{
    struct timespec ts;

    if (s <= 0)
        return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
