/* SPDX-License-Identifier: MIT
 *
 * The mallctl files' insides, shared by them and private to them: the
 * dump gate and prof.prefix's writing lock, kept in mallctl.c with the
 * rest of the process-wide state (ha_mallctl_forget_locks resets them
 * together), which the heap dump of mallctl_dump.c takes. What callers
 * use is mallctl.h.
 */
#ifndef HA_MALLCTL_INT_H
#define HA_MALLCTL_INT_H

/* A dump of ours enters the gate before prof.dump, waiting for the epoch
 * and prof.reset calls already started, and leaves it after; meanwhile
 * new ones answer EBUSY (ha_mallctl_dumping is true). */
void ha_mallctl_dump_enter(void);
void ha_mallctl_dump_leave(void);

/* Holds prof.prefix's writing lock for as long as jemalloc's prof.prefix
 * differs from the remembered one (a dump pointing it at the staging
 * directory); readers of the prefix do not wait for it. */
void ha_mallctl_prefix_lock(void);
void ha_mallctl_prefix_unlock(void);

#endif /* HA_MALLCTL_INT_H */
