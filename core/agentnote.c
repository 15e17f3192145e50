/* SPDX-License-Identifier: MIT
 *
 * The process's note for its /agent answer (see agentnote.h).
 */
#include "core/agentnote.h"

#include <stdatomic.h>

static _Atomic int64_t attached_at;
static _Atomic long unserved[HA_AGENTNOTE_CHILDREN_MAX];
static _Atomic size_t n_unserved, n_more;

void
ha_agentnote_set_attached(int64_t when)
{
    atomic_store(&attached_at, when);
}

int64_t
ha_agentnote_attached(void)
{
    return atomic_load(&attached_at);
}

void
ha_agentnote_set_unserved(const long *pids, size_t n, size_t more)
{
    if (n > HA_AGENTNOTE_CHILDREN_MAX) {
        more += n - HA_AGENTNOTE_CHILDREN_MAX;
        n = HA_AGENTNOTE_CHILDREN_MAX;
    }
    for (size_t i = 0; i < n; i++)
        atomic_store(&unserved[i], pids[i]);
    atomic_store(&n_unserved, n);
    atomic_store(&n_more, more);
}

size_t
ha_agentnote_unserved(long *pids, size_t max, size_t *more)
{
    size_t have = atomic_load(&n_unserved), n = have < max ? have : max;

    for (size_t i = 0; i < n; i++)
        pids[i] = atomic_load(&unserved[i]);
    *more = atomic_load(&n_more) + (have - n);
    return n;
}
