/* SPDX-License-Identifier: MIT
 *
 * jemalloc's mallctl() reached through struct ha_mallctl_ops (see
 * mallctl.h; heap/mallctl*.c are the only code that calls it): the typed
 * accessors, the decay settings, whether profiling is built and on, and
 * the process-wide state they keep: the dump gate (epoch and prof.reset
 * wait for no dump of ours), when sampling started as far as they saw,
 * and prof.prefix remembered. The heap dump itself is mallctl_dump.c's.
 */
#include "heap/mallctl.h"

#include <pthread.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "heap/mallctl_int.h"

/* ------------------------------------------------------------------
 * The dump gate
 * ------------------------------------------------------------------ */

/* jemalloc's "epoch" reads the profiler's mutexes' statistics, so it
 * waits on prof_dump_mtx, which a writing dump holds for the whole dump
 * (and holds ctl_mtx meanwhile, on which every stats read then waits);
 * prof.reset takes prof_dump_mtx too. So none of them may start while a
 * dump of ours writes, on any thread: they answer EBUSY, and statistics
 * stay as of the last refresh. A dump waits for the ones already
 * started (short: they wait on nothing else). Dekker's rule with
 * sequentially consistent atomics: each side announces itself, then
 * looks at the other. */
static _Atomic int gate_dumps;   /* prof.dump calls of ours running */
static _Atomic int gate_others;  /* epoch and prof.reset calls running */

static bool
gated(const char *name)
{
    return strcmp(name, "epoch") == 0 || strcmp(name, "prof.reset") == 0;
}

static bool
gate_enter(void)
{
    atomic_fetch_add(&gate_others, 1);
    if (atomic_load(&gate_dumps) > 0) {
        atomic_fetch_sub(&gate_others, 1);
        return false;
    }
    return true;
}

static void
gate_leave(void)
{
    atomic_fetch_sub(&gate_others, 1);
}

void
ha_mallctl_dump_enter(void)
{
    atomic_fetch_add(&gate_dumps, 1);
    while (atomic_load(&gate_others) > 0) {
        struct timespec ts = {0, 100000};

        nanosleep(&ts, NULL);
    }
}

void
ha_mallctl_dump_leave(void)
{
    atomic_fetch_sub(&gate_dumps, 1);
}

bool
ha_mallctl_dumping(void)
{
    return atomic_load(&gate_dumps) > 0;
}

/* ------------------------------------------------------------------
 * When sampling started
 * ------------------------------------------------------------------ */

/* Unix ns of the last prof.active switch from off to on, or prof.reset
 * (which forgets every sample), made through this module; 0: none. */
static _Atomic int64_t sampling_since_ns;

static void
note_sampling_start(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
        atomic_store(&sampling_since_ns,
                     (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

int64_t
ha_mallctl_sampling_since(const struct ha_mallctl_ops *ops)
{
    int64_t since = atomic_load(&sampling_since_ns);
    bool on = false;

    if (since > 0)
        return since;
    return ops != NULL &&
                   ha_mallctl_read_bool(ops, "opt.prof_active", &on) == 0 &&
                   on
               ? -1
               : 0;
}

/* ops->mallctl for a call that changes something, through the gate. */
static int
call_write(const struct ha_mallctl_ops *ops, const char *name, void *oldp,
           size_t *oldlenp, void *newp, size_t newlen)
{
    int rc;

    if (!gated(name))
        return ops->mallctl(name, oldp, oldlenp, newp, newlen);
    if (!gate_enter())
        return EBUSY;
    rc = ops->mallctl(name, oldp, oldlenp, newp, newlen);
    gate_leave();
    return rc;
}

/* ------------------------------------------------------------------
 * Typed accessors
 * ------------------------------------------------------------------ */

/* Reads exactly len bytes into out; a different length is EINVAL. */
static int
read_exact(const struct ha_mallctl_ops *ops, const char *name, void *out,
           size_t len)
{
    size_t got = len;
    int rc = ops->mallctl(name, out, &got, NULL, 0);

    if (rc == 0 && got != len)
        return EINVAL;
    return rc;
}

int
ha_mallctl_read_cached(const struct ha_mallctl_ops *ops, const char *name,
                       struct ha_mallctl_mib *m, void *out, size_t len)
{
    size_t got = len;
    int rc;

    if (m->state == 0) {
        m->len = HA_MALLCTL_MIB_MAX;
        m->state = ops->nametomib != NULL && ops->bymib != NULL &&
                           ops->nametomib(name, m->mib, &m->len) == 0
                       ? 1
                       : -1;
    }
    if (m->state < 0)
        return read_exact(ops, name, out, len);
    rc = ops->bymib(m->mib, m->len, out, &got, NULL, 0);
    if (rc == 0 && got != len)
        return EINVAL;
    return rc;
}

/* Where the %u fields of fmt sit among its dot-separated components (the
 * MIB positions), at most two. Returns how many. */
static int
index_positions(const char *fmt, size_t pos[2])
{
    size_t component = 0;
    int n = 0;

    for (const char *p = fmt; *p != '\0'; p++) {
        if (*p == '.')
            component++;
        else if (p[0] == '%' && p[1] == 'u' && n < 2)
            pos[n++] = component;
    }
    return n;
}

/* fmt with its "%u" fields replaced by a, then b (no printf: the format
 * is data here). */
static void
format_at(const char *fmt, unsigned a, unsigned b, char *buf, size_t len)
{
    unsigned idx[2] = {a, b};
    size_t o = 0;
    int n = 0;

    for (const char *p = fmt; *p != '\0' && o + 1 < len; p++) {
        if (p[0] == '%' && p[1] == 'u' && n < 2) {
            char num[16];
            int k = snprintf(num, sizeof(num), "%u", idx[n++]);

            for (int i = 0; i < k && o + 1 < len; i++)
                buf[o++] = num[i];
            p++;
            continue;
        }
        buf[o++] = *p;
    }
    buf[o] = '\0';
}

int
ha_mallctl_read_at(const struct ha_mallctl_ops *ops, const char *fmt,
                   struct ha_mallctl_mib *m, unsigned a, unsigned b,
                   void *out, size_t len)
{
    size_t pos[2] = {0, 0}, mib[HA_MALLCTL_MIB_MAX], got = len;
    unsigned idx[2] = {a, b};
    char name[128];
    int n = index_positions(fmt, pos), rc;

    if (m->state == 0) {
        /* Index 0 exists for every numbered node (arena 0, bin 0,
         * lextent 0), so the template resolves. */
        format_at(fmt, 0, 0, name, sizeof(name));
        m->len = HA_MALLCTL_MIB_MAX;
        m->state = ops->nametomib != NULL && ops->bymib != NULL &&
                           ops->nametomib(name, m->mib, &m->len) == 0
                       ? 1
                       : -1;
        for (int i = 0; m->state > 0 && i < n; i++)
            if (pos[i] >= m->len)
                m->state = -1;
    }
    if (m->state < 0) {
        format_at(fmt, a, b, name, sizeof(name));
        return read_exact(ops, name, out, len);
    }
    memcpy(mib, m->mib, m->len * sizeof(*mib));
    for (int i = 0; i < n; i++)
        mib[pos[i]] = idx[i];
    rc = ops->bymib(mib, m->len, out, &got, NULL, 0);
    if (rc == 0 && got != len)
        return EINVAL;
    return rc;
}

int
ha_mallctl_read_bool(const struct ha_mallctl_ops *ops, const char *name,
                     bool *out)
{
    bool v;
    int rc = read_exact(ops, name, &v, sizeof(v));

    if (rc == 0)
        *out = v;
    return rc;
}

int
ha_mallctl_read_size(const struct ha_mallctl_ops *ops, const char *name,
                     size_t *out)
{
    size_t v;
    int rc = read_exact(ops, name, &v, sizeof(v));

    if (rc == 0)
        *out = v;
    return rc;
}

int
ha_mallctl_read_ssize(const struct ha_mallctl_ops *ops, const char *name,
                      ssize_t *out)
{
    ssize_t v;
    int rc = read_exact(ops, name, &v, sizeof(v));

    if (rc == 0)
        *out = v;
    return rc;
}

int
ha_mallctl_read_u64(const struct ha_mallctl_ops *ops, const char *name,
                    uint64_t *out)
{
    uint64_t v;
    int rc = read_exact(ops, name, &v, sizeof(v));

    if (rc == 0)
        *out = v;
    return rc;
}

int
ha_mallctl_read_unsigned(const struct ha_mallctl_ops *ops, const char *name,
                         unsigned *out)
{
    unsigned v;
    int rc = read_exact(ops, name, &v, sizeof(v));

    if (rc == 0)
        *out = v;
    return rc;
}

int
ha_mallctl_read_str(const struct ha_mallctl_ops *ops, const char *name,
                    const char **out)
{
    const char *v = NULL;
    int rc = read_exact(ops, name, &v, sizeof(v));

    if (rc == 0 && v == NULL)
        return EINVAL;
    if (rc == 0)
        *out = v;
    return rc;
}

int
ha_mallctl_write_bool(const struct ha_mallctl_ops *ops, const char *name,
                      bool v, bool *old)
{
    bool prev = false;
    size_t len = sizeof(prev);
    bool active = strcmp(name, "prof.active") == 0;
    int rc;

    if (old == NULL && !active)
        return ops->mallctl(name, NULL, NULL, &v, sizeof(v));
    rc = ops->mallctl(name, &prev, &len, &v, sizeof(v));
    if (rc == 0 && len != sizeof(prev))
        return EINVAL;
    if (rc == 0 && active && v && !prev)
        note_sampling_start();
    if (rc == 0 && old != NULL)
        *old = prev;
    return rc;
}

int
ha_mallctl_write_size(const struct ha_mallctl_ops *ops, const char *name,
                      size_t v)
{
    int rc;

    if (!gated(name))
        return ops->mallctl(name, NULL, NULL, &v, sizeof(v));
    rc = call_write(ops, name, NULL, NULL, &v, sizeof(v));
    if (rc == 0 && strcmp(name, "prof.reset") == 0)
        note_sampling_start();
    return rc;
}

int
ha_mallctl_write_ssize(const struct ha_mallctl_ops *ops, const char *name,
                       ssize_t v, ssize_t *old)
{
    ssize_t prev = 0;
    size_t len = sizeof(prev);
    int rc = ops->mallctl(name, old != NULL ? &prev : NULL,
                          old != NULL ? &len : NULL, &v, sizeof(v));

    if (rc == 0 && old != NULL)
        *old = prev;
    return rc;
}

int
ha_mallctl_write_str(const struct ha_mallctl_ops *ops, const char *name,
                     const char *v)
{
    return ops->mallctl(name, NULL, NULL, &v, sizeof(v));
}

int
ha_mallctl_action(const struct ha_mallctl_ops *ops, const char *name)
{
    int rc = call_write(ops, name, NULL, NULL, NULL, 0);

    if (rc == 0 && strcmp(name, "prof.reset") == 0)
        note_sampling_start();
    return rc;
}

int
ha_mallctl_epoch(const struct ha_mallctl_ops *ops)
{
    uint64_t epoch = 1;

    return call_write(ops, "epoch", NULL, NULL, &epoch, sizeof(epoch));
}

/* ------------------------------------------------------------------
 * Decay settings
 * ------------------------------------------------------------------ */

int
ha_mallctl_set_decay(const struct ha_mallctl_ops *ops, const char *kind,
                     ssize_t ms, struct ha_mallctl_decay_undo *undo)
{
    char name[64];
    unsigned narenas = 0;
    int rc;

    if (undo != NULL)
        memset(undo, 0, sizeof(*undo));
    /* arenas.narenas and arena.<i>.initialized are as of the last epoch:
     * an arena created since would be missed. */
    (void)ha_mallctl_epoch(ops);
    snprintf(name, sizeof(name), "arenas.%s_decay_ms", kind);
    rc = ha_mallctl_write_ssize(ops, name, ms,
                                undo != NULL ? &undo->def : NULL);
    if (rc != 0)
        return rc;
    if ((rc = ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas)) !=
        0)
        return rc;
    if (undo != NULL && narenas > 0) {
        undo->arena = malloc(narenas * sizeof(*undo->arena));
        if (undo->arena == NULL)
            return ENOMEM;
        undo->n = narenas;
    }
    for (unsigned i = 0; i < narenas; i++) {
        bool init = false;
        ssize_t old = HA_MALLCTL_DECAY_NONE;

        if (undo != NULL)
            undo->arena[i] = HA_MALLCTL_DECAY_NONE;
        snprintf(name, sizeof(name), "arena.%u.initialized", i);
        if (ha_mallctl_read_bool(ops, name, &init) != 0 || !init)
            continue;
        snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", i, kind);
        if ((rc = ha_mallctl_write_ssize(ops, name, ms, &old)) != 0)
            return rc;
        if (undo != NULL)
            undo->arena[i] = old;
    }
    return 0;
}

int
ha_mallctl_restore_decay(const struct ha_mallctl_ops *ops, const char *kind,
                         const struct ha_mallctl_decay_undo *undo)
{
    char name[64];
    int rc, first = 0;

    /* A per-arena change recorded no default (HA_MALLCTL_DECAY_NONE). */
    if (undo->def != HA_MALLCTL_DECAY_NONE) {
        snprintf(name, sizeof(name), "arenas.%s_decay_ms", kind);
        rc = ha_mallctl_write_ssize(ops, name, undo->def, NULL);
        first = rc;
    }
    for (unsigned i = 0; i < undo->n; i++) {
        if (undo->arena[i] == HA_MALLCTL_DECAY_NONE)
            continue;
        snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", i, kind);
        rc = ha_mallctl_write_ssize(ops, name, undo->arena[i], NULL);
        if (first == 0)
            first = rc;
    }
    return first;
}

void
ha_mallctl_decay_undo_free(struct ha_mallctl_decay_undo *undo)
{
    free(undo->arena);
    memset(undo, 0, sizeof(*undo));
}

bool
ha_mallctl_prof_built(const struct ha_mallctl_ops *ops)
{
    bool b = false;

    return ha_mallctl_read_bool(ops, "config.prof", &b) == 0 && b;
}

bool
ha_mallctl_prof_enabled(const struct ha_mallctl_ops *ops)
{
    bool b = false;

    return ha_mallctl_prof_built(ops) &&
           ha_mallctl_read_bool(ops, "opt.prof", &b) == 0 && b;
}

/* ------------------------------------------------------------------
 * prof.prefix memory
 * ------------------------------------------------------------------ */

/* jemalloc's prof.prefix is write-only and process-wide, so the value
 * last written is remembered process-wide too. Two locks: lock guards
 * the memory and is held for a copy; writing holds writing for as long
 * as jemalloc's prof.prefix differs from the memory or must not change:
 * a dump points it at the staging directory for the whole prof.dump,
 * which can take seconds on a big heap, and reading the prefix (a
 * statement listing dumps, on the loop) must not wait for that. */
static struct {
    pthread_mutex_t writing;          /* prof.prefix writes and dumps */
    pthread_mutex_t lock;             /* the fields below */
    const struct ha_mallctl_ops *ops; /* backend it was set on; NULL: none */
    char prefix[PATH_MAX];            /* value written to prof.prefix */
} prefix_memory = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                   NULL, ""};

void
ha_mallctl_prefix_lock(void)
{
    pthread_mutex_lock(&prefix_memory.writing);
}

void
ha_mallctl_prefix_unlock(void)
{
    pthread_mutex_unlock(&prefix_memory.writing);
}

void
ha_mallctl_forget_locks(void)
{
    /* The child's only thread holds nothing: whoever held it is gone. */
    pthread_mutex_init(&prefix_memory.writing, NULL);
    pthread_mutex_init(&prefix_memory.lock, NULL);
    atomic_store(&gate_dumps, 0);
    atomic_store(&gate_others, 0);
}

int
ha_mallctl_set_prof_prefix(const struct ha_mallctl_ops *ops,
                           const char *prefix)
{
    int rc;

    if (strlen(prefix) >= sizeof(prefix_memory.prefix))
        return EINVAL;
    pthread_mutex_lock(&prefix_memory.writing);
    rc = ha_mallctl_write_str(ops, "prof.prefix", prefix);
    if (rc == 0) {
        pthread_mutex_lock(&prefix_memory.lock);
        ha_strlcpy(prefix_memory.prefix, prefix,
                   sizeof(prefix_memory.prefix));
        prefix_memory.ops = ops;
        pthread_mutex_unlock(&prefix_memory.lock);
    }
    pthread_mutex_unlock(&prefix_memory.writing);
    return rc;
}

int
ha_mallctl_prof_prefix(const struct ha_mallctl_ops *ops, char *out,
                       size_t outlen)
{
    const char *opt;
    int rc;

    if (outlen > 0)
        out[0] = '\0';
    pthread_mutex_lock(&prefix_memory.lock);
    if (prefix_memory.ops == ops ||
        (prefix_memory.ops != NULL && ops != NULL &&
         prefix_memory.ops->mallctl == ops->mallctl)) {
        ha_strlcpy(out, prefix_memory.prefix, outlen);
        pthread_mutex_unlock(&prefix_memory.lock);
        return 0;
    }
    pthread_mutex_unlock(&prefix_memory.lock);
    rc = ha_mallctl_read_str(ops, "opt.prof_prefix", &opt);
    if (rc != 0)
        return rc;
    ha_strlcpy(out, opt, outlen);
    return 0;
}

void
ha_mallctl_forget_prof_prefix(void)
{
    pthread_mutex_lock(&prefix_memory.writing);
    pthread_mutex_lock(&prefix_memory.lock);
    prefix_memory.ops = NULL;
    prefix_memory.prefix[0] = '\0';
    pthread_mutex_unlock(&prefix_memory.lock);
    pthread_mutex_unlock(&prefix_memory.writing);
}
