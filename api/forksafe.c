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
 *   - heapadmin's own (the prof.prefix lock a dump holds for its whole
 *     write): re-initialised in the child, whose only thread holds none.
 *
 * jemalloc's own locks are jemalloc's: it takes them around fork itself.
 */
#include "api/forksafe.h"
#include "include/heapadmin.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <sqlite3.h>

#include "vtab/mallctl.h"

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

static sqlite3_mutex *fork_locks[N_FORK_LOCKS];
/* NONE: no heapadmin instance yet, so none of its threads uses SQLite;
 * INIT: sqlite3_initialize() is running (it holds a recursive mutex of
 * its own that a child could inherit held); READY: fork_locks resolved. */
enum { FORK_NONE, FORK_INIT, FORK_READY };
static _Atomic int fork_state;
static int fork_taken;           /* prepare: locks held; -1 none needed */

void
ha_forksafe_init(void)
{
    int st = FORK_NONE;

    if (atomic_compare_exchange_strong(&fork_state, &st, FORK_INIT)) {
        /* SQLite initialised here, once, before any of heapadmin's use
         * of it; then its static mutexes (no allocation). */
        (void)sqlite3_initialize();
        for (size_t i = 0; i < N_FORK_LOCKS; i++)
            fork_locks[i] = sqlite3_mutex_alloc(fork_order[i]);
        atomic_store(&fork_state, FORK_READY);
        return;
    }
    while (atomic_load(&fork_state) != FORK_READY)
        sched_yield(); /* another thread is initialising */
}

static long long
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
heapadmin_fork_prepare(void)
{
    long long deadline;
    int st = atomic_load(&fork_state);

    if (st == FORK_NONE) {
        fork_taken = -1; /* no heapadmin yet: none of its threads run */
        return 1;
    }
    deadline = now_ms() + HA_FORK_WAIT_MS;
    while (atomic_load(&fork_state) != FORK_READY) {
        if (now_ms() >= deadline) {
            fork_taken = 0;
            return 0;
        }
        sched_yield();
    }
    for (;;) {
        size_t i = 0;

        while (i < N_FORK_LOCKS &&
               sqlite3_mutex_try(fork_locks[i]) == SQLITE_OK)
            i++;
        if (i == N_FORK_LOCKS) {
            fork_taken = (int)i;
            return 1;
        }
        /* Give back what was taken, so the holder can finish. */
        while (i > 0)
            sqlite3_mutex_leave(fork_locks[--i]);
        if (now_ms() >= deadline) {
            fork_taken = 0;
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
    release();
}

int
heapadmin_fork_child(void)
{
    int usable = fork_taken != 0;

    release();
    ha_mallctl_forget_locks();
    return usable;
}
