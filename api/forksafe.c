/* SPDX-License-Identifier: MIT
 *
 * fork() while heapadmin's threads run (see heapadmin_fork_prepare in
 * include/heapadmin.h). A fork child has only the thread that forked;
 * any lock another thread held at that instant stays held there for
 * ever. heapadmin's threads take two kinds of process-wide lock:
 *
 *   - SQLite's static mutexes (the memory accounting one on every SQLite
 *     allocation, the VFS, PRNG, open and main ones now and then), which
 *     cannot be re-initialised from outside SQLite: they are taken
 *     before the fork, in the order SQLite nests them, and given back on
 *     both sides after it. Each is held by its users for microseconds,
 *     so they are tried, never waited on: after HA_FORK_WAIT_MS without
 *     all of them the fork goes ahead untouched and the child is told
 *     not to use SQLite (a host's fork never waits on heapadmin longer);
 *   - the datadir's SQLite files (engine/filevfs.c): SQLite's unix VFS
 *     keeps a record per open file for the whole process, with mutexes
 *     and lock counts, which a connection the child opens on the same
 *     file would join. Their lock is tried first (every call that takes
 *     one of those mutexes holds it), and the child closes the files
 *     open at the fork so that SQLite forgets them;
 *   - heapadmin's own (the prof.prefix lock a dump holds for its whole
 *     write, the lifetime window's): re-initialised in the child, whose
 *     only thread holds none;
 *   - the C library's (NSS, the loader's, the resolver's, the time
 *     zone's: the list is in core/forkguard.h): heapadmin's threads call
 *     the functions that take them only inside the fork guard, which is
 *     tried first, like SQLite's mutexes.
 *
 * jemalloc's own locks are jemalloc's: it takes them around fork itself.
 */
#include "api/forksafe.h"
#include "core/clock.h"
#include "include/heapadmin.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <sqlite3.h>

#include "core/forkguard.h"
#include "core/task.h"
#include "engine/filevfs.h"
#include "heap/logwin.h"
#include "heap/mallctl.h"

#define HA_FORK_WAIT_MS 50

/* SQLite's static mutexes in the order its code nests them: a temp file
 * name is made under VFS1 (the unix VFS's lock, also its temp-directory
 * lock, and memdb's) and draws from the PRNG, whose first seeding finds
 * the VFS under MAIN; shared-cache opens hold OPEN then MAIN; the page
 * caches allocate under LRU and PMEM, and every allocation ends in MEM,
 * which nests nothing. Being only tried, a lock taken out of some
 * path's order costs a retry, never a deadlock. */
static const int fork_order[] = {
    SQLITE_MUTEX_STATIC_VFS1, SQLITE_MUTEX_STATIC_PRNG,
    SQLITE_MUTEX_STATIC_OPEN, SQLITE_MUTEX_STATIC_MAIN,
    SQLITE_MUTEX_STATIC_VFS2, SQLITE_MUTEX_STATIC_VFS3,
    SQLITE_MUTEX_STATIC_LRU,  SQLITE_MUTEX_STATIC_PMEM,
    SQLITE_MUTEX_STATIC_MEM,
};
#define N_FORK_LOCKS (sizeof(fork_order) / sizeof(fork_order[0]))

/* Filled under init_lock before fork_state turns READY; read-only after
 * (the atomic store of READY publishes it). */
static sqlite3_mutex *fork_locks[N_FORK_LOCKS];
/* NONE: no heapadmin instance yet, so none of its threads uses SQLite;
 * READY: SQLite initialised and fork_locks resolved. The change is made
 * under init_lock, which a fork at NONE holds across the fork: a child
 * never inherits SQLite's initialisation half done (sqlite3_initialize
 * holds a recursive mutex of its own meanwhile). */
enum { FORK_NONE, FORK_READY };
static _Atomic int fork_state;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* What this thread's fork took, for its own parent and child handlers:
 * two host threads may fork at once, and each must give back only what
 * it took (the child's one thread is the forking one, with its values). */
static _Thread_local int fork_taken; /* SQLite locks held; -1 none needed,
                                      * 0 none taken: child unusable */
static _Thread_local bool vfs_taken;  /* the file VFS's lock held */
static _Thread_local bool init_taken; /* init_lock held */
static _Thread_local bool guard_taken; /* the C library's fork guard */

void
ha_forksafe_init(void)
{
    if (atomic_load(&fork_state) == FORK_READY)
        return;
    /* Waits at most for another thread's initialisation or a fork. */
    pthread_mutex_lock(&init_lock);
    if (atomic_load(&fork_state) != FORK_READY) {
        /* SQLite initialised here, once, before any of heapadmin's use
         * of it; then its static mutexes (no allocation). */
        (void)sqlite3_initialize();
        for (size_t i = 0; i < N_FORK_LOCKS; i++)
            fork_locks[i] = sqlite3_mutex_alloc(fork_order[i]);
        (void)ha_filevfs_name(); /* registered before any fork needs it */
        atomic_store(&fork_state, FORK_READY);
    }
    pthread_mutex_unlock(&init_lock);
}

int
heapadmin_fork_prepare(void)
{
    long long deadline = ha_clock_ms() + HA_FORK_WAIT_MS;

    fork_taken = 0;
    vfs_taken = init_taken = guard_taken = false;
    /* No heapadmin thread inside a lookup, the loader or the resolver
     * (core/forkguard.h): each holds the guard for microseconds. */
    while (!(guard_taken = ha_forkguard_fork_try() != 0)) {
        if (ha_clock_ms() >= deadline)
            return 0;
        sched_yield();
    }
    while (atomic_load(&fork_state) != FORK_READY) {
        if (pthread_mutex_trylock(&init_lock) == 0) {
            if (atomic_load(&fork_state) != FORK_READY) {
                /* No heapadmin yet, and none can start until the fork
                 * is made: none of its threads uses SQLite. */
                init_taken = true;
                fork_taken = -1;
                return 1;
            }
            pthread_mutex_unlock(&init_lock); /* finished meanwhile */
            break;
        }
        if (ha_clock_ms() >= deadline) {
            ha_forkguard_fork_parent();
            guard_taken = false;
            return 0; /* initialising all along */
        }
        sched_yield();
    }
    for (;;) {
        size_t i = 0;

        /* The file VFS's lock first: its calls take SQLite's mutexes
         * while holding it. */
        vfs_taken = ha_filevfs_fork_try() != 0;
        while (vfs_taken && i < N_FORK_LOCKS &&
               sqlite3_mutex_try(fork_locks[i]) == SQLITE_OK)
            i++;
        if (i == N_FORK_LOCKS) {
            fork_taken = (int)i;
            return 1;
        }
        /* Give back what was taken, so the holder can finish. */
        while (i > 0)
            sqlite3_mutex_leave(fork_locks[--i]);
        if (vfs_taken)
            ha_filevfs_fork_parent();
        vfs_taken = false;
        if (ha_clock_ms() >= deadline) {
            fork_taken = 0;
            ha_forkguard_fork_parent();
            guard_taken = false;
            return 0;
        }
        sched_yield();
    }
}

static void
release(void)
{
    for (int i = fork_taken; i > 0; i--)
        sqlite3_mutex_leave(fork_locks[i - 1]);
}

void
heapadmin_fork_parent(void)
{
    if (init_taken)
        pthread_mutex_unlock(&init_lock);
    init_taken = false;
    release();
    if (vfs_taken)
        ha_filevfs_fork_parent();
    vfs_taken = false;
    if (guard_taken)
        ha_forkguard_fork_parent();
    guard_taken = false;
}

int
heapadmin_fork_child(void)
{
    int usable = fork_taken != 0;

    if (init_taken)
        pthread_mutex_init(&init_lock, NULL);
    init_taken = false;
    release();
    if (vfs_taken)
        ha_filevfs_fork_child(); /* after SQLite's mutexes are free */
    vfs_taken = false;
    /* Made new whether this fork took it or not: no thread that held it
     * exists here. */
    ha_forkguard_fork_child();
    guard_taken = false;
    ha_mallctl_forget_locks();
    /* A lifetime window open at the fork: the child's inherited log is
     * stopped (its copy to /dev/null), or it would grow for the child's
     * whole life. */
    ha_logwin_fork_child();
    return usable;
}
