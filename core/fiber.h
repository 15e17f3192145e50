/* SPDX-License-Identifier: MIT
 *
 * A fiber: a function run on a stack of its own, which may pause at a
 * point of its choosing (ha_fiber_yield) and be resumed later, all on the
 * calling thread. The admin port runs each SQL command in one, so a
 * statement that runs long pauses every few milliseconds (from SQLite's
 * progress handler, between VM steps) and the event loop serves the other
 * sessions meanwhile; nothing is shared across threads, so nothing needs
 * a lock, and a host's thread-local state (jemalloc's thread.prof.active,
 * the log sink) is the loop thread's as before.
 *
 * The stack is an anonymous mapping of HA_FIBER_STACK bytes reserved
 * without commitment (only the pages touched count in RSS) with a
 * PROT_NONE guard page below it. Built on ucontext (glibc); under
 * AddressSanitizer the switches are announced to it.
 *
 * Not thread-safe: a fiber is resumed by the thread that started it.
 */
#ifndef HA_FIBER_H
#define HA_FIBER_H

#include <stdbool.h>
#include <stddef.h>

/* 8 MiB, a thread's default: SQLite's parser and libdw's DWARF walk
 * recurse, and the bytes are reserved, not resident. */
#define HA_FIBER_STACK ((size_t)8 << 20)

/* Idle fibers a pool keeps for reuse (their stacks stay mapped). */
#define HA_FIBER_POOL_IDLE 4

struct ha_fiber;

typedef void (*ha_fiber_fn)(void *arg);

/* What ha_fiber_start and ha_fiber_resume return. */
enum ha_fiber_status {
    HA_FIBER_DONE = 0,  /* fn returned; the fiber may be started again */
    HA_FIBER_PAUSED = 1 /* fn called ha_fiber_yield; resume it later */
};

/* Maps a stack of stack_bytes (rounded up to pages). Returns NULL (errno
 * set) when the mapping fails. */
struct ha_fiber *ha_fiber_new(size_t stack_bytes);

/* Unmaps the stack. The fiber must not be paused: a paused fiber's
 * frames (and whatever they own) would be lost. */
void ha_fiber_free(struct ha_fiber *f);

/* Runs fn(arg) on f's stack until it returns or yields. f must be idle
 * (new, or its last run DONE). */
enum ha_fiber_status ha_fiber_start(struct ha_fiber *f, ha_fiber_fn fn,
                                    void *arg);

/* Continues a PAUSED fiber until it returns or yields again. */
enum ha_fiber_status ha_fiber_resume(struct ha_fiber *f);

/* From inside f's function: pauses f and returns to whoever started or
 * resumed it; returns when f is resumed. */
void ha_fiber_yield(struct ha_fiber *f);

/* True while f has been started and not yet returned (running or
 * paused). */
bool ha_fiber_busy(const struct ha_fiber *f);

/* True while f is paused in ha_fiber_yield (busy, and not the code
 * running now). */
bool ha_fiber_paused(const struct ha_fiber *f);

/* A few idle fibers kept for reuse: mapping a stack costs two system
 * calls and the page faults of a fresh stack. One per server. */
struct ha_fiber_pool {
    struct ha_fiber *idle[HA_FIBER_POOL_IDLE];
    size_t n;
};

/* An idle fiber from the pool, or a new one; NULL when none can be
 * mapped. */
struct ha_fiber *ha_fiber_pool_get(struct ha_fiber_pool *pool);

/* Returns an idle (not busy) fiber to the pool, or frees it when the
 * pool is full. */
void ha_fiber_pool_put(struct ha_fiber_pool *pool, struct ha_fiber *f);

/* Frees the pool's idle fibers. */
void ha_fiber_pool_clear(struct ha_fiber_pool *pool);

#endif
