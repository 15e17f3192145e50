/* SPDX-License-Identifier: MIT
 *
 * The guard around the C library's locks at a fork (see forkguard.h).
 */
#include "core/forkguard.h"

#include <pthread.h>

/* Shared by heapadmin's threads inside a guarded call; exclusive for a
 * fork's prepare handler, which only ever tries it (so a reader never
 * finds a writer waiting, and a shared hold may nest safely). */
static pthread_rwlock_t guard = PTHREAD_RWLOCK_INITIALIZER;

void
ha_forkguard_enter(void)
{
    (void)pthread_rwlock_rdlock(&guard);
}

void
ha_forkguard_leave(void)
{
    (void)pthread_rwlock_unlock(&guard);
}

int
ha_forkguard_fork_try(void)
{
    return pthread_rwlock_trywrlock(&guard) == 0;
}

void
ha_forkguard_fork_parent(void)
{
    (void)pthread_rwlock_unlock(&guard);
}

void
ha_forkguard_fork_child(void)
{
    /* The forking thread held it; it is the child's only thread. */
    (void)pthread_rwlock_init(&guard, NULL);
}
