/* SPDX-License-Identifier: MIT
 *
 * The admin thread's stack, given back below where it runs. A query, a
 * history sample or the start-up (SQLite's parser, paths of PATH_MAX on
 * the stack) takes the thread's stack some tens of KiB deep, and those
 * pages stay in the host's resident set, dirty, for the thread's life:
 * 60 KiB of an idle nginx master's. When the agent is quiet again (the
 * tick that gives its code back, codepages.c) every page more than
 * MARGIN below the tick's own frame is dropped (MADV_DONTNEED: the
 * thread's next descent gets zeroed pages, as a new thread's would). Our
 * threads block every signal, so no handler's frame is ever down there;
 * glibc gives a thread's stack back the same way when the thread ends
 * (advise_stack_range).
 */
#include "agent/stacktrim.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define MARGIN 16384 /* bytes kept below the caller's frame: madvise's own
                        call and anything between it and the tick */

void
ha_agent_stack_trim(void)
{
    /* This thread's stack, found once per thread (a thread's stack never
     * moves). Thread-local, never static: a fork child's admin thread is
     * a new thread on a stack of its own, and the bounds of its parent's
     * would name whatever lies between the two. low 1: not known,
     * nothing is dropped. */
    static _Thread_local uintptr_t low, high;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0), top;
    long page = sysconf(_SC_PAGESIZE);

    if (low == 0) {
        pthread_attr_t a;
        void *addr = NULL;
        size_t size = 0;

        low = 1;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            if (pthread_attr_getstack(&a, &addr, &size) == 0 &&
                addr != NULL && (uintptr_t)addr < here &&
                here - (uintptr_t)addr <= size) {
                low = (uintptr_t)addr;
                high = low + size;
            }
            pthread_attr_destroy(&a);
        }
    }
    /* Only ever inside this thread's own stack, below this frame. */
    if (low == 1 || page <= 0 || here >= high || here < low + MARGIN)
        return;
    top = (here - MARGIN) & ~((uintptr_t)page - 1);
    if (top > low)
        (void)madvise((void *)low, top - low, MADV_DONTNEED);
}
