/* SPDX-License-Identifier: MIT
 *
 * Fibers on ucontext (see fiber.h).
 */
#include "core/fiber.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define HA_FIBER_ASAN 1
#endif

struct ha_fiber {
    ucontext_t ctx;         /* the fiber's registers while it is paused */
    ucontext_t caller;      /* whoever started or resumed it */
    void *map;              /* the mapping: guard page, then the stack */
    size_t map_len;
    void *stack;            /* lowest usable byte */
    size_t stack_len;
    ha_fiber_fn fn;
    void *arg;
    bool busy;              /* started and not yet returned */
    bool paused;            /* the last switch out was a yield */
#ifdef HA_FIBER_ASAN
    void *fake_stack;       /* AddressSanitizer's, of the side left */
    const void *caller_bottom;
    size_t caller_size;
#endif
};

/* AddressSanitizer must be told of every stack switch, or it reports the
 * other stack's frames as overflows (its "fiber" interface). */
static void
switch_begin(void **save, const void *bottom, size_t size)
{
#ifdef HA_FIBER_ASAN
    __sanitizer_start_switch_fiber(save, bottom, size);
#else
    (void)save;
    (void)bottom;
    (void)size;
#endif
}

static void
switch_end(void *save, const void **bottom, size_t *size)
{
#ifdef HA_FIBER_ASAN
    __sanitizer_finish_switch_fiber(save, bottom, size);
#else
    (void)save;
    (void)bottom;
    (void)size;
#endif
}

struct ha_fiber *
ha_fiber_new(size_t stack_bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct ha_fiber *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return NULL;
    f->stack_len = (stack_bytes + page - 1) / page * page;
    f->map_len = f->stack_len + page;
    f->map = mmap(NULL, f->map_len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                  -1, 0);
    if (f->map == MAP_FAILED) {
        int e = errno;

        free(f);
        errno = e;
        return NULL;
    }
    /* The guard page: an overflow faults here instead of writing into
     * whatever mapping lies below. */
    if (mprotect(f->map, page, PROT_NONE) != 0) {
        int e = errno;

        munmap(f->map, f->map_len);
        free(f);
        errno = e;
        return NULL;
    }
    f->stack = (char *)f->map + page;
    return f;
}

void
ha_fiber_free(struct ha_fiber *f)
{
    if (f == NULL)
        return;
    munmap(f->map, f->map_len);
    free(f);
}

/* makecontext passes int arguments only: the fiber's address comes in
 * two halves. */
static void
fiber_entry(unsigned int hi, unsigned int lo)
{
    struct ha_fiber *f =
        (struct ha_fiber *)(((uintptr_t)hi << 16 << 16) | (uintptr_t)lo);

#ifdef HA_FIBER_ASAN
    switch_end(NULL, &f->caller_bottom, &f->caller_size);
#else
    switch_end(NULL, NULL, NULL);
#endif
    f->fn(f->arg);
    f->busy = false;
    f->paused = false;
    /* NULL: this stack's frames are done with for good. */
#ifdef HA_FIBER_ASAN
    switch_begin(NULL, f->caller_bottom, f->caller_size);
#endif
    setcontext(&f->caller);
    abort(); /* setcontext returns only on failure */
}

/* Switches from the caller into f until it yields or returns. */
static enum ha_fiber_status
enter(struct ha_fiber *f)
{
    void *save = NULL;

    switch_begin(&save, f->stack, f->stack_len);
    if (swapcontext(&f->caller, &f->ctx) != 0)
        abort(); /* only with an invalid context: a bug */
    switch_end(save, NULL, NULL);
    return f->busy ? HA_FIBER_PAUSED : HA_FIBER_DONE;
}

enum ha_fiber_status
ha_fiber_start(struct ha_fiber *f, ha_fiber_fn fn, void *arg)
{
    uintptr_t p = (uintptr_t)f;

    if (getcontext(&f->ctx) != 0)
        abort();
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = f->stack_len;
    f->ctx.uc_link = NULL;
    f->fn = fn;
    f->arg = arg;
    f->busy = true;
    f->paused = false;
    makecontext(&f->ctx, (void (*)(void))fiber_entry, 2,
                (unsigned int)(p >> 16 >> 16), (unsigned int)(p & 0xffffffffu));
    return enter(f);
}

enum ha_fiber_status
ha_fiber_resume(struct ha_fiber *f)
{
    if (!f->busy || !f->paused)
        return f->busy ? HA_FIBER_PAUSED : HA_FIBER_DONE;
    f->paused = false;
    return enter(f);
}

void
ha_fiber_yield(struct ha_fiber *f)
{
#ifdef HA_FIBER_ASAN
    void *save = NULL;

    switch_begin(&save, f->caller_bottom, f->caller_size);
#endif
    f->paused = true;
    if (swapcontext(&f->ctx, &f->caller) != 0)
        abort();
#ifdef HA_FIBER_ASAN
    switch_end(save, &f->caller_bottom, &f->caller_size);
#endif
}

bool
ha_fiber_busy(const struct ha_fiber *f)
{
    return f != NULL && f->busy;
}

bool
ha_fiber_paused(const struct ha_fiber *f)
{
    return f != NULL && f->busy && f->paused;
}

struct ha_fiber *
ha_fiber_pool_get(struct ha_fiber_pool *pool)
{
    if (pool->n > 0)
        return pool->idle[--pool->n];
    return ha_fiber_new(HA_FIBER_STACK);
}

void
ha_fiber_pool_put(struct ha_fiber_pool *pool, struct ha_fiber *f)
{
    if (f == NULL)
        return;
    /* A busy fiber's frames are live: never reused nor unmapped (a
     * caller's bug, left as a leak rather than a crash in the host). */
    if (f->busy)
        return;
    if (pool->n == HA_FIBER_POOL_IDLE) {
        ha_fiber_free(f);
        return;
    }
    pool->idle[pool->n++] = f;
}

void
ha_fiber_pool_clear(struct ha_fiber_pool *pool)
{
    while (pool->n > 0)
        ha_fiber_free(pool->idle[--pool->n]);
}
