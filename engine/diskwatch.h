/* SPDX-License-Identifier: MIT
 *
 * A watch on the disk worker (the thread that writes heap dumps, history
 * samples and heapadmin.db to the datadir, so that a disk that stops
 * answering holds up that one thread and nothing else): while one of its
 * jobs has run longer than HA_DISKWATCH_SHOW_S, SHOW PROCESSLIST has a
 * row for it (User "system user", Command "Daemon", State what it does,
 * Time how long), as MySQL shows its own background threads; past
 * HA_DISKWATCH_WARN_S the log says so once per episode, and again when
 * it ends. The timer runs only while the worker has work. Loop thread.
 */
#ifndef HA_DISKWATCH_H
#define HA_DISKWATCH_H

struct event_base;
struct ha_clients;
struct ha_diskwatch;
struct ha_worker;

#define HA_DISKWATCH_SHOW_S 1
#define HA_DISKWATCH_WARN_S 10

/* Watches w, listing it in clients. who names it in the log ("the disk
 * worker"), behind says what waits behind it; both static. Returns NULL
 * on OOM (no watch). */
struct ha_diskwatch *ha_diskwatch_new(struct event_base *base,
                                      struct ha_worker *w,
                                      struct ha_clients *clients,
                                      const char *who, const char *behind);
void ha_diskwatch_free(struct ha_diskwatch *d);

#endif /* HA_DISKWATCH_H */
