/* SPDX-License-Identifier: MIT
 *
 * The sizes the agent asks its arena for. jemalloc serves each small
 * size class from slabs of its own, and a slab of most classes is
 * several pages (48 bytes: 3 pages, 80: 5, 112: 7, 896: 7, 5120: 5, with
 * 4 KiB pages), so an arena holding a few objects of twenty classes keeps
 * a partly used slab of each: the idle agent's arena held 228 KiB of
 * slabs for 41 KiB of objects, in every host process it serves. Powers
 * of two up to a page fill one-page slabs, so every malloc, calloc and
 * realloc of the agent's own code and of its private libevent, SQLite
 * and libconfig (the link's --wrap, agent/Makemodule.am) is rounded up
 * to one: 8 to 4096 bytes to the next power of two, up to 8 KiB to
 * 8 KiB (a 2-page slab of 2 regions), above it to 16 KiB (jemalloc's
 * first large class: whole pages, no slab). A few bytes more per object
 * cost far less than the slabs' empty regions; large sizes are left as
 * they are. free() needs nothing: jemalloc knows each pointer's size.
 * What libc allocates itself (strdup, asprintf) is not rounded.
 */
#include "agent/slabsize.h"

#include <errno.h>
#include <stdint.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

#define PAGE_ROUND 4096u
#define LARGE_MIN 16384u /* jemalloc's smallest large class (4 KiB pages) */

size_t
ha_agent_slab_size(size_t n)
{
    size_t r = 8;

    if (n <= PAGE_ROUND) {
        while (r < n)
            r <<= 1;
        return r;
    }
    if (n <= 2 * PAGE_ROUND)
        return 2 * PAGE_ROUND;
    return n < LARGE_MIN ? LARGE_MIN : n;
}

void *
__wrap_malloc(size_t n)
{
    return __real_malloc(n == 0 ? 0 : ha_agent_slab_size(n));
}

void *
__wrap_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    /* calloc(1, rounded) zeroes the rounded size: the same object. */
    if (n == 0 || size == 0)
        return __real_calloc(n, size);
    return __real_calloc(1, ha_agent_slab_size(n * size));
}

void *
__wrap_realloc(void *p, size_t n)
{
    return __real_realloc(p, n == 0 ? 0 : ha_agent_slab_size(n));
}
