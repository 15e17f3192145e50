/* SPDX-License-Identifier: MIT
 *
 * The fork gate (see forkguard.h).
 */
#include "core/forkguard.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "core/clock.h"

/* Shared by the threads inside a section, exclusive for a fork's
 * prepare handler. Writers are preferred: once a fork waits, a thread
 * that has no section open waits behind it instead of opening one, so
 * the fork waits only for the sections open when it came. A thread
 * takes the lock once, at its outermost section (depth counts the
 * nested ones): a nested shared hold would wait behind a waiting writer
 * that waits for it. */
static pthread_rwlock_t gate = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static _Thread_local unsigned depth;
static _Atomic long long longest_ns;

/* The child's: a new lock as the initializer makes it. */
static void
gate_init(void)
{
    pthread_rwlockattr_t a;

    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&gate, &a);
    pthread_rwlockattr_destroy(&a);
}

void
ha_forkguard_enter(void)
{
    if (depth++ == 0) {
        (void)pthread_rwlock_rdlock(&gate);
    }
}

int
ha_forkguard_try_enter(void)
{
    if (depth > 0) {
        depth++;
        return 1;
    }
    if (pthread_rwlock_tryrdlock(&gate) != 0)
        return 0;
    depth = 1;
    return 1;
}

void
ha_forkguard_leave(void)
{
    if (depth > 0 && --depth == 0)
        (void)pthread_rwlock_unlock(&gate);
}

int
ha_forkguard_fork_wait(unsigned max_ms)
{
    struct timespec until;
    int64_t t0, end;
    int rc;

    /* A thread inside a section forks: it cannot wait for itself. */
    if (depth > 0)
        return 0;
    /* ha_clock_ns is CLOCK_MONOTONIC, the clock the wait is told. */
    t0 = ha_clock_ns();
    end = t0 + (int64_t)max_ms * 1000000;
    until.tv_sec = (time_t)(end / 1000000000);
    until.tv_nsec = (long)(end % 1000000000);
    do
        rc = pthread_rwlock_clockwrlock(&gate, CLOCK_MONOTONIC, &until);
    while (rc == EINTR);
    {
        long long took = (long long)(ha_clock_ns() - t0),
                  seen = atomic_load(&longest_ns);

        while (took > seen &&
               !atomic_compare_exchange_weak(&longest_ns, &seen, took)) {
        }
    }
    if (rc != 0)
        return 0;
    depth = 1; /* this thread's own SQLite calls pass, as inside */
    return 1;
}

void
ha_forkguard_fork_parent(void)
{
    depth = 0;
    (void)pthread_rwlock_unlock(&gate);
}

void
ha_forkguard_fork_child(void)
{
    /* The child's one thread is the forking one: nobody else is inside,
     * whether this fork took the gate or gave up waiting. */
    depth = 0;
    gate_init();
}

long long
ha_forkguard_longest_wait_ns(void)
{
    return atomic_load(&longest_ns);
}
