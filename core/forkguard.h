/* SPDX-License-Identifier: MIT
 *
 * The C library's own locks at a host's fork. A fork child keeps only
 * the thread that forked; a lock another thread held at that instant
 * stays held in the child for ever, and the C library has several that
 * it does not take around fork itself. Every one a heapadmin thread can
 * hold, and what heapadmin does about it (api/forksafe.c closes the
 * gate below around a host's fork; glibc 2.36 as Debian 12 ships it):
 *
 *   lock (glibc)                      taken by                 here
 *   NSS module list, nss_files        getpwuid_r, getgrnam_r,  never on a heapadmin
 *     (__nss_module_allocate)           getaddrinfo by name      thread for users
 *                                                               (core/users.h reads
 *                                                               /etc/passwd); group
 *                                                               and host lookups
 *                                                               under the gate
 *   dl_load_write_lock                dl_iterate_phdr          under the gate
 *                                     (build-ids of a dump)    (the agent computes
 *                                                               its own segments
 *                                                               before any thread)
 *   dl_load_lock, dl_load_tls_lock    dlopen, dlsym, dladdr    reset by glibc's fork;
 *                                                               under the gate so
 *                                                               the loader's lists
 *                                                               are whole
 *   tzset lock                        localtime_r, mktime      log lines never
 *                                                               (core/util.h ha_utc_tm);
 *                                                               NOW() under the gate
 *   resolver (res_hconf, resolv.conf) getaddrinfo              under the gate
 *   __exit_funcs_lock                 atexit (the lifetime     under the gate
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
 *   SQLite's static mutexes           every SQLite call        inside the gate (the
 *                                                               agent's private SQLite:
 *                                                               api/forksafe.c); a
 *                                                               shared one's tried
 *   the datadir's file VFS            opening, locking files   inside the gate
 *                                                               (engine/filevfs.c)
 *   the listeners' accept guards      adding, removing a       inside the gate
 *     (core/acceptguard.c)              listener; accept errors
 *   the runs armed for the exit       an instance's run        inside the gate
 *     (heap/runs.c)                     started or stopped
 *   the journal modes logged once     a datadir database       inside the gate
 *     (engine/filevfs_journal.c)        opened
 *
 * The gate. Every section in which a heapadmin thread may hold one of
 * these locks is inside the gate: the C library calls above, each of
 * SQLite's static mutexes (api/forksafe.c installs SQLite's mutexes
 * through it), the datadir's file VFS (engine/filevfs.c). A fork's
 * prepare handler closes the gate and waits for the sections open at
 * that instant to end, each one a few system calls: new ones wait
 * behind the fork instead of starting. So the wait is as long as the
 * open sections take to finish, however loaded the machine is (a
 * section's thread descheduled for 80 ms costs the fork 80 ms, where a
 * fixed try-for-50-ms gave up and lost the child), never a stall of a
 * host whose agent is idle (no section open: nothing to wait for), and
 * bounded by the caller's maximum (a section stuck in the kernel: a
 * close() on a hung NFS mount).
 */
#ifndef HA_FORKGUARD_H
#define HA_FORKGUARD_H

/* Opens and closes a section (nested ones are counted: only the
 * outermost touches the gate). Waits while a fork is being made. Keep
 * sections to a few calls that never wait for another thread of the
 * process (the host's included): a fork waits for them. */
void ha_forkguard_enter(void);
void ha_forkguard_leave(void);

/* ha_forkguard_enter without waiting: 1 inside, 0 when a fork is being
 * made now (nothing entered). */
int ha_forkguard_try_enter(void);

/* For a fork's prepare handler: closes the gate and waits, at most
 * max_ms, for the sections open now to end. 1: closed, no thread inside
 * a section (this thread's own calls then pass, as inside one); 0: not
 * closed (a section outlasted max_ms, or this thread is inside one). */
int ha_forkguard_fork_wait(unsigned max_ms);
/* After the fork: opens the gate again in the parent (only after 1 from
 * ha_forkguard_fork_wait); makes it new in the child (always). */
void ha_forkguard_fork_parent(void);
void ha_forkguard_fork_child(void);

/* The longest ha_forkguard_fork_wait so far in this process, in ns. */
long long ha_forkguard_longest_wait_ns(void);

#endif /* HA_FORKGUARD_H */
