/* SPDX-License-Identifier: MIT
 *
 * heapadmin's own memory: one jemalloc arena per process, and the host's
 * figures without it (see arena.h).
 *
 * Every thread that does heapadmin's work (the admin thread, the worker,
 * debuginfod's fetchers, the agent's start-up) allocates from one arena
 * of its own, without a thread cache (nothing hoarded between two
 * queries), with freed pages given back at once (decay 0), and outside
 * heap profiles. The arena is created once per process and kept across
 * fork (a child's instance reuses it). What the tables and /metrics call
 * allocated, active, metadata, resident, mapped and retained is then the
 * host's alone: the resolved jemalloc is wrapped (host_ops) so that
 * those statistics come back with the arena's share taken off, and
 * heapadmin.<same> names read the arena's share itself.
 */
#include "api/arena.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "api/instance.h"
#include "core/util.h"
#include "heap/mallctl.h"
#include "include/heapadmin.h"

enum arena_state { ARENA_NONE, ARENA_CREATING, ARENA_READY, ARENA_FAILED };

static struct ha_mallctl_ops resolved;  /* jemalloc, as resolved first */
static _Atomic bool have_resolved;
static _Atomic int arena_state;
static unsigned own_arena;               /* valid when ARENA_READY */

/* The statistics that are reported apart, and the arena's share of each
 * (stats.arenas.<i>.<name>, summed; pactive is in pages). */
static const struct {
    const char *global;   /* what the tables read */
    const char *own;      /* heapadmin's share, as its own name */
    const char *parts[2]; /* stats.arenas.<i>.<part>, summed */
} apart[] = {
    {"stats.allocated", "heapadmin.allocated",
     {"small.allocated", "large.allocated"}},
    {"stats.active", "heapadmin.active", {"pactive", NULL}},
    {"stats.metadata", "heapadmin.metadata", {"base", "internal"}},
    {"stats.resident", "heapadmin.resident", {"resident", NULL}},
    {"stats.mapped", "heapadmin.mapped", {"mapped", NULL}},
    {"stats.retained", "heapadmin.retained", {"retained", NULL}},
};

/* Creates the arena at the first call; false when there is none. */
static bool
arena_ready(void)
{
    int st = atomic_load(&arena_state);

    if (st == ARENA_NONE &&
        atomic_compare_exchange_strong(&arena_state, &st, ARENA_CREATING)) {
        unsigned a = 0;
        size_t len = sizeof(a);
        ssize_t zero = 0;
        char name[64];
        bool ok = atomic_load(&have_resolved) &&
                  resolved.mallctl("arenas.create", &a, &len, NULL, 0) == 0;

        if (ok) {
            /* Freed pages go back to the system at once: heapadmin is
             * idle most of the time, and an idle arena never decays. */
            snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", a);
            (void)resolved.mallctl(name, NULL, NULL, &zero, sizeof(zero));
            snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", a);
            (void)resolved.mallctl(name, NULL, NULL, &zero, sizeof(zero));
            own_arena = a;
        }
        atomic_store(&arena_state, ok ? ARENA_READY : ARENA_FAILED);
        return ok;
    }
    /* Another thread creates it: wait a little (a fork child whose
     * parent forked mid-creation gives up). */
    for (int i = 0; i < 1000 && st == ARENA_CREATING; i++) {
        sched_yield();
        st = atomic_load(&arena_state);
    }
    return st == ARENA_READY;
}

/* heapadmin's share of the statistic at apart[i], or -1. */
static int
own_share(size_t i, size_t *out)
{
    char name[96];
    size_t sum = 0, page = 4096;

    if (atomic_load(&arena_state) != ARENA_READY)
        return -1;
    for (size_t k = 0; k < 2 && apart[i].parts[k] != NULL; k++) {
        size_t v = 0, len = sizeof(v);

        snprintf(name, sizeof(name), "stats.arenas.%u.%s", own_arena,
                 apart[i].parts[k]);
        if (resolved.mallctl(name, &v, &len, NULL, 0) != 0)
            return -1;
        sum += v;
    }
    if (strcmp(apart[i].parts[0], "pactive") == 0) {
        size_t len = sizeof(page);

        (void)resolved.mallctl("arenas.page", &page, &len, NULL, 0);
        sum *= page;
    }
    *out = sum;
    return 0;
}

/* Whether name is arena.<ours>.dirty_decay_ms or .muzzy_decay_ms. */
static bool
own_decay(const char *name)
{
    char own[64];
    size_t n;

    if (atomic_load(&arena_state) != ARENA_READY)
        return false;
    n = (size_t)snprintf(own, sizeof(own), "arena.%u.", own_arena);
    return n < sizeof(own) && strncmp(name, own, n) == 0 &&
           (strcmp(name + n, "dirty_decay_ms") == 0 ||
            strcmp(name + n, "muzzy_decay_ms") == 0);
}

static int
host_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
             size_t newlen)
{
    /* Which arena is ours, for what reads arenas one by one (the bins,
     * heap/sizeclasses.h). */
    if (strcmp(name, HA_MALLCTL_OWN_ARENA) == 0) {
        if (newp != NULL || oldp == NULL || oldlenp == NULL ||
            *oldlenp != sizeof(unsigned))
            return EINVAL;
        if (atomic_load(&arena_state) != ARENA_READY)
            return ENOENT;
        memcpy(oldp, &own_arena, sizeof(own_arena));
        return 0;
    }
    /* The operator's decay settings are the host's: every arena is
     * written (heap/mallctl.h), and ours would keep freed pages with
     * the host's -1 for ever, billing the host for heapadmin's transient
     * work (a symbol index built, a profile loaded). Ours stays at 0. */
    if (newp != NULL && own_decay(name)) {
        if (oldp != NULL && oldlenp != NULL)
            return resolved.mallctl(name, oldp, oldlenp, NULL, 0);
        return 0;
    }
    for (size_t i = 0; i < HA_ARRAY_SIZE(apart); i++) {
        bool global = strcmp(name, apart[i].global) == 0;
        size_t own, total;
        int rc;

        if (!global && strcmp(name, apart[i].own) != 0)
            continue;
        if (newp != NULL || oldp == NULL || oldlenp == NULL ||
            *oldlenp != sizeof(size_t))
            return global ? resolved.mallctl(name, oldp, oldlenp, newp,
                                             newlen)
                          : EINVAL;
        if (!global)
            return own_share(i, &own) == 0
                       ? (memcpy(oldp, &own, sizeof(own)), 0)
                       : ENOENT;
        rc = resolved.mallctl(name, oldp, oldlenp, NULL, 0);
        if (rc != 0 || own_share(i, &own) != 0)
            return rc;
        memcpy(&total, oldp, sizeof(total));
        total = total > own ? total - own : 0;
        memcpy(oldp, &total, sizeof(total));
        return 0;
    }
    return resolved.mallctl(name, oldp, oldlenp, newp, newlen);
}

/* The wrapped names have no MIB: reads of them go by name, through
 * host_mallctl. */
static int
host_nametomib(const char *name, size_t *mibp, size_t *miblenp)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(apart); i++)
        if (strcmp(name, apart[i].global) == 0 ||
            strcmp(name, apart[i].own) == 0)
            return ENOENT;
    if (strcmp(name, HA_MALLCTL_OWN_ARENA) == 0)
        return ENOENT;
    return resolved.nametomib(name, mibp, miblenp);
}

static int
host_bymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
           void *newp, size_t newlen)
{
    return resolved.bymib(mib, miblen, oldp, oldlenp, newp, newlen);
}

/* The calling thread allocates from the arena, uncached and unsampled.
 * Returns 0, or -1 without an arena. */
static int
adopt_thread(const char *prof_name)
{
    bool off = false;
    unsigned a;

    if (!atomic_load(&have_resolved))
        return -1;
    (void)resolved.mallctl("thread.prof.active", NULL, NULL, &off,
                           sizeof(off));
    if (prof_name != NULL)
        (void)resolved.mallctl("thread.prof.name", NULL, NULL,
                               (void *)&prof_name, sizeof(prof_name));
    if (!arena_ready())
        return -1;
    /* No thread cache: what a query frees goes back to the arena (and,
     * decay 0, to the system), not into a cache no one will use. */
    (void)resolved.mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    (void)resolved.mallctl("thread.tcache.enabled", NULL, NULL, &off,
                           sizeof(off));
    a = own_arena;
    return resolved.mallctl("thread.arena", NULL, NULL, &a, sizeof(a)) == 0
               ? 0
               : -1;
}

void
ha_api_arena_wrap(struct ha_mallctl_ops *ops)
{
    if (!atomic_load(&have_resolved)) {
        resolved = *ops;
        atomic_store(&have_resolved, true);
    }
    ops->mallctl = host_mallctl;
    if (ops->nametomib != NULL && ops->bymib != NULL) {
        ops->nametomib = host_nametomib;
        ops->bymib = host_bymib;
    }
}

void
ha_api_arena_hide_thread(const struct heapadmin *h)
{
    if (!h->have_jemalloc)
        return;
    if (h->wrapped) {
        (void)adopt_thread("heapadmin");
        return;
    }
    /* A jemalloc the host handed over: only its profiling switch. */
    {
        bool off = false;
        const char *name = "heapadmin";

        (void)h->ops.mallctl("thread.prof.active", NULL, NULL, &off,
                             sizeof(off));
        (void)h->ops.mallctl("thread.prof.name", NULL, NULL, (void *)&name,
                             sizeof(name));
    }
}

/* jemalloc resolved once per process (a race resolves it twice, to the
 * same functions). */
static bool
resolve_once(void)
{
    if (!atomic_load(&have_resolved)) {
        struct ha_mallctl_ops ops;

        if (ha_mallctl_resolve(&ops, NULL, 0) != 0)
            return false;
        resolved = ops;
        atomic_store(&have_resolved, true);
    }
    return true;
}

int
heapadmin_adopt_thread(void)
{
    if (!resolve_once())
        return -1;
    return adopt_thread(NULL);
}

int
heapadmin_set_thread_name(const char *name)
{
    int rc;

    if (!resolve_once()) {
        errno = ENOSYS;
        return -1;
    }
    /* jemalloc copies the name (prof_thread_name_alloc). */
    rc = resolved.mallctl("thread.prof.name", NULL, NULL, (void *)&name,
                          sizeof(name));
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}
