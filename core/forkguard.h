/* SPDX-License-Identifier: MIT
 *
 * The C library's own locks at a host's fork. A fork child keeps only
 * the thread that forked; a lock another thread held at that instant
 * stays held in the child for ever, and the C library has several that
 * it does not take around fork itself. Every one a heapadmin thread can
 * hold, and what heapadmin does about it (api/forksafe.c takes the
 * guard below around a host's fork; glibc 2.36 as Debian 12 ships it):
 *
 *   lock (glibc)                      taken by                 here
 *   NSS module list, nss_files        getpwuid_r, getgrnam_r,  never on a heapadmin
 *     (__nss_module_allocate)           getaddrinfo by name      thread for users
 *                                                               (core/users.h reads
 *                                                               /etc/passwd); group
 *                                                               and host lookups
 *                                                               under the guard
 *   dl_load_write_lock                dl_iterate_phdr          under the guard
 *                                     (build-ids of a dump)    (the agent computes
 *                                                               its own segments
 *                                                               before any thread)
 *   dl_load_lock, dl_load_tls_lock    dlopen, dlsym, dladdr    reset by glibc's fork;
 *                                                               under the guard so
 *                                                               the loader's lists
 *                                                               are whole
 *   tzset lock                        localtime_r, mktime      log lines never
 *                                                               (core/util.h ha_utc_tm);
 *                                                               NOW() under the guard
 *   resolver (res_hconf, resolv.conf) getaddrinfo              under the guard
 *   __exit_funcs_lock                 atexit (the lifetime     under the guard
 *                                     window's exit handler,
 *                                     heap/logwin.c, once)
 *   _nl_state_lock (rwlock, read)     strerror's translation   readers only: a child
 *                                                               deadlocks only on a
 *                                                               write (setlocale,
 *                                                               textdomain) in a host
 *                                                               child that never
 *                                                               execs; not taken
 *   stdio list, malloc (glibc)        fopen, malloc            taken by glibc's fork
 *   jemalloc's mutexes                every allocation         taken by jemalloc's
 *                                                               own atfork handlers
 *   SQLite's static mutexes, the      every SQLite call        api/forksafe.c
 *     datadir's file VFS
 *
 * The guard: a heapadmin thread calls such a function only between
 * ha_forkguard_enter() and ha_forkguard_leave() (a shared hold, cheap);
 * the fork's prepare handler takes it exclusively, trying, never
 * waiting long, so no heapadmin thread is inside one at the fork.
 */
#ifndef HA_FORKGUARD_H
#define HA_FORKGUARD_H

/* Around a call that takes one of the C library's locks listed above.
 * May wait while a host thread forks (microseconds). Not recursive
 * across a fork: keep the section short and never nest two. */
void ha_forkguard_enter(void);
void ha_forkguard_leave(void);

/* For the prepare handler: 1 when the guard is now held exclusively
 * (no heapadmin thread inside a guarded call), 0 when one is (try
 * again, or give up). */
int ha_forkguard_fork_try(void);
/* Gives it back in the parent; made new in the child. */
void ha_forkguard_fork_parent(void);
void ha_forkguard_fork_child(void);

#endif /* HA_FORKGUARD_H */
