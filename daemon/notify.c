/* SPDX-License-Identifier: MIT
 *
 * sd_notify for heapadmind (see notify.h).
 */
#include "daemon/notify.h"

#include <event2/event.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>

static pid_t notify_pid;          /* our pid at ha_notify_init */
static uint64_t watchdog_usec;    /* 0: no watchdog asked for */
static struct event *watchdog_ev; /* freed by ha_notify_stopping() */

void
ha_notify_init(void)
{
    uint64_t usec = 0;

    notify_pid = getpid();
    /* > 0 only in the process WATCHDOG_PID names (or when it is unset). */
    if (sd_watchdog_enabled(0, &usec) > 0)
        watchdog_usec = usec;
}

static void
on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    /* Sent from the loop itself: a loop that stops turning stops the
     * pings, and systemd restarts the service after WatchdogSec=. */
    sd_notify(0, "WATCHDOG=1");
}

void
ha_notify_ready(struct event_base *base)
{
    pid_t self = getpid();

    /* Forked (daemon mode): hand systemd the process that serves. The
     * unit says NotifyAccess=all, since this process is not the one it
     * started. */
    if (notify_pid != 0 && self != notify_pid)
        sd_notifyf(0, "MAINPID=%ld\nREADY=1", (long)self);
    else
        sd_notify(0, "READY=1");
    if (watchdog_usec > 0 && base != NULL) {
        /* Half the interval, as sd_watchdog_enabled(3) recommends. */
        uint64_t half = watchdog_usec / 2;
        struct timeval tv = {(time_t)(half / 1000000),
                             (suseconds_t)(half % 1000000)};

        watchdog_ev = event_new(base, -1, EV_PERSIST, on_watchdog, NULL);
        if (watchdog_ev != NULL && event_add(watchdog_ev, &tv) == 0)
            sd_notify(0, "WATCHDOG=1");
    }
}

void
ha_notify_stopping(void)
{
    if (watchdog_ev != NULL) {
        event_free(watchdog_ev);
        watchdog_ev = NULL;
    }
    sd_notify(0, "STOPPING=1");
}

#else /* !HAVE_LIBSYSTEMD */

void
ha_notify_init(void)
{
}

void
ha_notify_ready(struct event_base *base)
{
    (void)base;
}

void
ha_notify_stopping(void)
{
}

#endif
