/* SPDX-License-Identifier: MIT
 *
 * heapadmind and systemd's notification protocol (sd_notify(3)): READY=1
 * once the listeners are bound, WATCHDOG=1 from the event loop so a frozen
 * daemon is restarted (WatchdogSec=), STOPPING=1 on SIGTERM/SIGINT.
 *
 * Built without libsystemd (configure --without-systemd, or no
 * libsystemd-dev) every function is a no-op; outside systemd (no
 * NOTIFY_SOCKET) they cost one getenv.
 */
#ifndef HA_NOTIFY_H
#define HA_NOTIFY_H

struct event_base;

/* Call before daemonizing: systemd names the process it started in
 * WATCHDOG_PID, and only that process can read the watchdog interval
 * with sd_watchdog_enabled(3). Remembers it and our pid. */
void ha_notify_init(void);

/* The listeners are bound: tells systemd READY=1 (with MAINPID= when the
 * daemon has forked since ha_notify_init, so systemd supervises the
 * process that serves), and, when systemd asked for a watchdog, sends
 * WATCHDOG=1 from a timer on base every half interval. */
void ha_notify_ready(struct event_base *base);

/* Shutting down: STOPPING=1, and the watchdog timer stops. */
void ha_notify_stopping(void);

#endif /* HA_NOTIFY_H */
