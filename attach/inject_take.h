/* SPDX-License-Identifier: MIT
 *
 * Where the injector may take a thread of the target (inject_take.c):
 * the waits that hold no lock the loader or the allocator needs. The
 * rest of inject_take.c is private to the injector (inject_int.h).
 */
#ifndef HA_ATTACH_INJECT_TAKE_H
#define HA_ATTACH_INJECT_TAKE_H

#include <stdbool.h>

/* Whether a thread blocked in (or just back from) system call nr holds
 * no lock the loader or the allocator needs: an event loop's wait, a
 * sleep, accept, sigsuspend (nginx's master), waiting for a child.
 * Pure. */
bool ha_inject_safe_syscall(long nr);

#endif /* HA_ATTACH_INJECT_TAKE_H */
