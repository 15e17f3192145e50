/* SPDX-License-Identifier: MIT
 *
 * fork() while heapadmin's threads run (see heapadmin_fork_prepare in
 * include/heapadmin.h). A fork child has only the thread that forked;
 * any lock another thread held at that instant stays held there for
 * ever. heapadmin's threads take three kinds of process-wide lock, each
 * only inside the fork gate (core/forkguard.h), which the prepare
 * handler closes: it waits for the sections open at that instant (a few
 * system calls each, however long the scheduler keeps their thread
 * waiting on a loaded machine) while no new one starts, so that at the
 * fork no heapadmin thread holds any of them:
 *
 *   - SQLite's static mutexes (the memory accounting one on every SQLite
 *     allocation, the VFS, PRNG, open and main ones now and then):
 *     SQLite's own mutex methods, installed through the gate before
 *     SQLite initialises (SQLITE_CONFIG_MUTEX), so each static mutex is
 *     held only inside a section. They are then tried in the order
 *     SQLite nests them, which succeeds at once unless SQLite was
 *     initialised before heapadmin (a host of libheapadmin that uses the
 *     same libsqlite3 first): then they are tried until the same
 *     deadline, as before the gate;
 *   - the datadir's SQLite files (engine/filevfs.c): SQLite's unix VFS
 *     keeps a record per open file for the whole process, with mutexes
 *     and lock counts, which a connection the child opens on the same
 *     file would join. Their calls run inside the gate, and the child
 *     closes the files open at the fork so that SQLite forgets them;
 *   - the C library's (NSS, the loader's, the resolver's, the time
 *     zone's: the list is in core/forkguard.h).
 * heapadmin's own (the prof.prefix lock a dump holds for its whole
 * write, the lifetime window's) are re-initialised in the child, whose
 * only thread holds none.
 *
 * The wait is bounded (HA_FORK_WAIT_MS: a section stuck in the kernel,
 * a close() on a hung mount); past it the fork goes ahead untouched and
 * the child is told not to use SQLite.
 *
 * jemalloc's own locks are jemalloc's: it takes them around fork itself.
 */
#include "api/forksafe.h"
#include "core/clock.h"
#include "include/heapadmin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <sqlite3.h>

#include "core/forkguard.h"
#include "core/task.h"
#include "engine/filevfs.h"
#include "heap/logwin.h"
#include "heap/mallctl.h"

/* At most this long a fork waits for heapadmin's sections under way. */
#define HA_FORK_WAIT_MS 1000

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

/* ------------------------------------------------------------------
 * SQLite's mutexes through the fork gate (the agent's private SQLite)
 * ------------------------------------------------------------------ */
#ifdef HA_PRIVATE_SQLITE

/* SQLite's own methods (its pthreads implementation), under ours. */
static sqlite3_mutex_methods inner;

/* Our handle of each static mutex: what SQLite is given for ids
 * SQLITE_MUTEX_STATIC_MAIN..VFS3; a dynamic mutex is SQLite's own
 * handle, passed through (connections and files: a fork child never
 * uses the parent's). */
#define N_STATIC (SQLITE_MUTEX_STATIC_VFS3 + 1)
struct gated {
    sqlite3_mutex *real;
};
static struct gated statics[N_STATIC];

static struct gated *
as_static(sqlite3_mutex *m)
{
    struct gated *g = (struct gated *)(void *)m;

    return g >= statics && g < statics + N_STATIC ? g : NULL;
}

static int
m_init(void)
{
    int rc = inner.xMutexInit();

    if (rc == SQLITE_OK)
        for (int id = SQLITE_MUTEX_STATIC_MAIN; id < N_STATIC; id++)
            statics[id].real = inner.xMutexAlloc(id);
    return rc;
}

static int
m_end(void)
{
    return inner.xMutexEnd();
}

static sqlite3_mutex *
m_alloc(int id)
{
    if (id >= SQLITE_MUTEX_STATIC_MAIN && id < N_STATIC &&
        statics[id].real != NULL)
        return (sqlite3_mutex *)(void *)&statics[id];
    return inner.xMutexAlloc(id);
}

static void
m_free(sqlite3_mutex *m)
{
    if (as_static(m) == NULL)
        inner.xMutexFree(m);
}

static void
m_enter(sqlite3_mutex *m)
{
    struct gated *g = as_static(m);

    if (g == NULL) {
        inner.xMutexEnter(m);
        return;
    }
    ha_forkguard_enter();
    inner.xMutexEnter(g->real);
}

static int
m_try(sqlite3_mutex *m)
{
    struct gated *g = as_static(m);
    int rc;

    if (g == NULL)
        return inner.xMutexTry(m);
    if (!ha_forkguard_try_enter())
        return SQLITE_BUSY;
    rc = inner.xMutexTry(g->real);
    if (rc != SQLITE_OK)
        ha_forkguard_leave();
    return rc;
}

static void
m_leave(sqlite3_mutex *m)
{
    struct gated *g = as_static(m);

    if (g == NULL) {
        inner.xMutexLeave(m);
        return;
    }
    inner.xMutexLeave(g->real);
    ha_forkguard_leave();
}

static int
m_held(sqlite3_mutex *m)
{
    struct gated *g = as_static(m);

    return inner.xMutexHeld(g != NULL ? g->real : m);
}

static int
m_notheld(sqlite3_mutex *m)
{
    struct gated *g = as_static(m);

    return inner.xMutexNotheld(g != NULL ? g->real : m);
}

/* Installs the gated methods over SQLite's own. SQLite chooses its
 * methods when it first initialises and gives them only while it is
 * not initialised: so it is initialised and shut down once to learn
 * them. A SQLite someone initialised before (a host of libheapadmin
 * using the same libsqlite3) refuses the first question, and is left
 * as it is: its static mutexes stay outside the gate. */
static void
gate_sqlite(void)
{
    static sqlite3_mutex_methods ours;
    sqlite3_mutex_methods probe;

    if (sqlite3_config(SQLITE_CONFIG_GETMUTEX, &probe) != SQLITE_OK ||
        sqlite3_initialize() != SQLITE_OK || sqlite3_shutdown() != SQLITE_OK ||
        sqlite3_config(SQLITE_CONFIG_GETMUTEX, &inner) != SQLITE_OK ||
        inner.xMutexAlloc == NULL)
        return;
    ours = (sqlite3_mutex_methods){
        m_init, m_end, m_alloc, m_free, m_enter, m_try, m_leave,
        inner.xMutexHeld != NULL ? m_held : NULL,
        inner.xMutexNotheld != NULL ? m_notheld : NULL,
    };
    (void)sqlite3_config(SQLITE_CONFIG_MUTEX, &ours);
}

/* The agent's SQLite costs its host no memory it does not use. By
 * default each connection that reads a page allocates room for 20 pages
 * at once (SQLITE_CONFIG_PAGECACHE's N, SQLITE_DEFAULT_PCACHE_INITSZ:
 * about 90 KiB) and 48 KiB of lookaside (SQLITE_CONFIG_LOOKASIDE 1200,
 * 40), each written through when the connection opens: the datadir's
 * database the agent keeps open held 150 KiB of the host's resident set
 * for a handful of pages. Pages are then allocated one at a time, and
 * lookaside is 8 KiB (https://sqlite.org/malloc.html, sections 3.2 and
 * 3.3). Only while SQLite is not initialised (gate_sqlite shut it down). */
static void
trim_sqlite(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
    (void)sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 256, 32);
}
#endif

void
ha_forksafe_init(void)
{
    if (atomic_load(&fork_state) == FORK_READY)
        return;
    /* Waits at most for another thread's initialisation or a fork.
     * Inside the gate, which a fork closes before it tries init_lock:
     * a fork waits for this, never this for a fork holding init_lock. */
    ha_forkguard_enter();
    pthread_mutex_lock(&init_lock);
    if (atomic_load(&fork_state) != FORK_READY) {
        /* SQLite initialised here, once, before any of heapadmin's use
         * of it, with its mutexes through the gate; then its static
         * mutexes (no allocation). */
#ifdef HA_PRIVATE_SQLITE
        /* The agent's own copy: ours to configure. libheapadmin never
         * configures a SQLite its host may share. */
        gate_sqlite();
        trim_sqlite();
#endif
        (void)sqlite3_initialize();
        for (size_t i = 0; i < N_FORK_LOCKS; i++)
            fork_locks[i] = sqlite3_mutex_alloc(fork_order[i]);
        (void)ha_filevfs_name(); /* registered before any fork needs it */
        atomic_store(&fork_state, FORK_READY);
    }
    pthread_mutex_unlock(&init_lock);
    ha_forkguard_leave();
}

/* Between two tries of locks held outside the gate (a SQLite someone
 * else initialised): a sleep that doubles up to 1 ms, so that the
 * holder, not this spin, gets the CPU on a loaded machine. */
static void
pause_us(long *us)
{
    struct timespec ts = {0, *us * 1000L};

    (void)nanosleep(&ts, NULL);
    if (*us < 1000)
        *us *= 2;
}

/* Past the deadline: the fork goes ahead untouched, the child is told
 * not to use SQLite. */
static int
give_up(void)
{
    fork_taken = 0;
    ha_forkguard_fork_parent();
    guard_taken = false;
    return 0;
}

int
heapadmin_fork_prepare(void)
{
    long long deadline = ha_clock_ms() + HA_FORK_WAIT_MS;
    long backoff_us = 20;

    fork_taken = 0;
    vfs_taken = init_taken = guard_taken = false;
    /* No heapadmin thread inside a section (core/forkguard.h): SQLite's
     * static mutexes, the file VFS, the C library's lookups, the
     * loader, the resolver. */
    if (!(guard_taken = ha_forkguard_fork_wait(HA_FORK_WAIT_MS) != 0))
        return 0;
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
        /* Held outside the gate: a thread between its lock and its
         * section, about to wait for this fork. */
        if (ha_clock_ms() >= deadline)
            return give_up();
        pause_us(&backoff_us);
    }
    for (;;) {
        size_t i = 0;

        /* The file VFS's lock first: its calls take SQLite's mutexes
         * while holding it. Free at once (its holders are inside the
         * gate), as SQLite's static mutexes are when they are gated. */
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
        if (ha_clock_ms() >= deadline)
            return give_up();
        pause_us(&backoff_us);
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
