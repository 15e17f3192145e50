/* SPDX-License-Identifier: MIT
 *
 * Fork safety's internal half (api/forksafe.c; the public half is
 * heapadmin_fork_* in include/heapadmin.h).
 */
#ifndef HA_FORKSAFE_H
#define HA_FORKSAFE_H

/* Initialises SQLite and resolves its static mutexes for
 * heapadmin_fork_prepare. Called by heapadmin_new before any of
 * heapadmin's SQLite use; idempotent, and safe from several threads. */
void ha_forksafe_init(void);

#endif /* HA_FORKSAFE_H */
