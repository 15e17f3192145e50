/* SPDX-License-Identifier: MIT
 *
 * The lifetime window's timer (see logtimer.h).
 */
#include "engine/logtimer.h"

#include <stdlib.h>

#include "core/log.h"
#include "heap/logwin.h"

struct ha_logtimer {
    struct ha_heap *heap;
    struct event *ev;
};

static void
arm(struct ha_logtimer *t, long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    event_add(t->ev, &tv);
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_logtimer *t = arg;
    long ms = ha_logwin_tick(t->heap);

    (void)fd;
    (void)what;
    if (ms >= 0)
        arm(t, ms);
}

struct ha_logtimer *
ha_logtimer_new(struct event_base *base, struct ha_heap *heap)
{
    struct ha_logtimer *t = calloc(1, sizeof(*t));

    if (t == NULL || (t->ev = event_new(base, -1, 0, tick_cb, t)) == NULL) {
        ha_log_error("lifetime windows: cannot create their timer; a "
                     "window closes at stop or exit only");
        free(t);
        return NULL;
    }
    t->heap = heap;
    return t;
}

void
ha_logtimer_kick(void *arg)
{
    struct ha_logtimer *t = arg;

    if (t != NULL)
        arm(t, 0);
}

void
ha_logtimer_free(struct ha_logtimer *t)
{
    if (t == NULL)
        return;
    event_free(t->ev);
    free(t);
}
