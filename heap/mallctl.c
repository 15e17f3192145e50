/* SPDX-License-Identifier: MIT
 *
 * The one module that calls jemalloc's mallctl() (see mallctl.h): typed
 * accessors over struct ha_mallctl_ops, operator-facing messages for
 * mallctl errno values, and the heap dump with its file discovery and
 * clean-up.
 */
#include "heap/mallctl.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "heap/dumpfiles.h"

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

static void
dump_enter(void)
{
    atomic_fetch_add(&gate_dumps, 1);
    while (atomic_load(&gate_others) > 0) {
        struct timespec ts = {0, 100000};

        nanosleep(&ts, NULL);
    }
}

static void
dump_leave(void)
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

/* ------------------------------------------------------------------
 * Operator messages (pure)
 * ------------------------------------------------------------------ */

static bool
starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* mallctls that exist only with profiling on (ENOENT otherwise). */
static bool
is_prof_mallctl(const char *name)
{
    return starts_with(name, "prof.") || starts_with(name, "thread.prof.") ||
           starts_with(name, "experimental.hooks.prof_") ||
           starts_with(name, "experimental.prof_recent.");
}

/* opt.* settings of the profiler: ENOENT only without --enable-prof. */
static bool
is_prof_opt(const char *name)
{
    return starts_with(name, "opt.prof") || starts_with(name, "opt.lg_prof");
}

static const char *
prof_hint(bool prof_built)
{
    return prof_built ? HA_MALLCTL_PROF_OFF_HINT
                      : HA_MALLCTL_PROF_UNBUILT_HINT;
}

void
ha_mallctl_errmsg(const struct ha_mallctl_failure *f, char *err,
                  size_t errlen)
{
    const char *var = f->variable != NULL ? f->variable : f->mallctl;
    char head[256];

    if (f->value != NULL)
        snprintf(head, sizeof(head), "%s = '%s'", var, f->value);
    else
        snprintf(head, sizeof(head), "%s", var);

    switch (f->errnum) {
    case ENOENT:
        if (is_prof_mallctl(f->mallctl) ||
            (is_prof_opt(f->mallctl) && !f->prof_built))
            ha_err_set(err, errlen, "%s: %s", head, prof_hint(f->prof_built));
        else if (starts_with(f->mallctl, "stats."))
            ha_err_set(err, errlen,
                       "%s: statistics are not available: this jemalloc "
                       "was built without --enable-stats (mallctl %s)",
                       head, f->mallctl);
        else
            ha_err_set(err, errlen,
                       "%s: this jemalloc has no mallctl '%s' (ENOENT)",
                       head, f->mallctl);
        break;
    case EINVAL:
        if (f->allowed != NULL)
            ha_err_set(err, errlen, "%s: invalid value; allowed: %s", head,
                       f->allowed);
        else
            ha_err_set(err, errlen,
                       "%s: jemalloc rejected the call to %s as invalid "
                       "(EINVAL)",
                       head, f->mallctl);
        break;
    case EPERM:
        if (f->value != NULL)
            ha_err_set(err, errlen,
                       "%s: %s is read-only and cannot be changed at run "
                       "time",
                       head, var);
        else
            ha_err_set(err, errlen,
                       "%s: %s is write-only and cannot be read", head,
                       f->mallctl);
        break;
    case EAGAIN:
        ha_err_set(err, errlen,
                   "%s: jemalloc ran out of memory while doing it (EAGAIN); "
                   "nothing was changed, try again",
                   head);
        break;
    case EFAULT:
        ha_err_set(err, errlen,
                   "%s: jemalloc could not complete %s (EFAULT: an internal "
                   "allocation or write failed)",
                   head, f->mallctl);
        break;
    case EBUSY:
        ha_err_set(err, errlen,
                   "%s: a heap dump is being written, and %s would wait for "
                   "it; nothing was changed: try again once it is done",
                   head, f->mallctl);
        break;
    default:
        ha_err_set(err, errlen, "%s: mallctl %s failed: %s (errno %d)", head,
                   f->mallctl, strerror(f->errnum), f->errnum);
        break;
    }
}

bool
ha_mallctl_dir_problem(const struct ha_mallctl_dirstate *st, char *reason,
                       size_t reasonlen)
{
    if (st->stat_errno == ENOENT || st->stat_errno == ENOTDIR) {
        ha_err_set(reason, reasonlen, "directory '%s' does not exist",
                   st->dir);
    } else if (st->stat_errno == EACCES) {
        ha_err_set(reason, reasonlen,
                   "directory '%s' cannot be reached (permission denied on "
                   "a parent directory)",
                   st->dir);
    } else if (st->stat_errno != 0) {
        ha_err_set(reason, reasonlen, "directory '%s' cannot be checked: %s",
                   st->dir, strerror(st->stat_errno));
    } else if (!st->is_dir) {
        ha_err_set(reason, reasonlen, "'%s' is not a directory", st->dir);
    } else if (st->access_errno == EROFS) {
        ha_err_set(reason, reasonlen,
                   "directory '%s' is on a read-only file system", st->dir);
    } else if (st->access_errno == EACCES || st->access_errno == EPERM) {
        ha_err_set(reason, reasonlen,
                   "directory '%s' is not writable by this process "
                   "(permission denied)",
                   st->dir);
    } else if (st->access_errno != 0) {
        ha_err_set(reason, reasonlen, "directory '%s' is not writable: %s",
                   st->dir, strerror(st->access_errno));
    } else if (st->have_statvfs &&
               st->bytes_free < HA_MALLCTL_DISK_FULL_BYTES) {
        ha_err_set(reason, reasonlen,
                   "the disk holding '%s' is full (%llu bytes free)",
                   st->dir, st->bytes_free);
    } else if (st->have_statvfs && st->files_free == 0) {
        ha_err_set(reason, reasonlen,
                   "the file system holding '%s' has no free inodes",
                   st->dir);
    } else {
        return false;
    }
    return true;
}

void
ha_mallctl_dir_probe(const char *path, struct ha_mallctl_dirstate *st)
{
    const char *slash = strrchr(path, '/');
    struct stat sb;
    struct statvfs vb;

    memset(st, 0, sizeof(*st));
    if (slash == NULL) {
        ha_strlcpy(st->dir, ".", sizeof(st->dir));
    } else if (slash == path) {
        ha_strlcpy(st->dir, "/", sizeof(st->dir));
    } else {
        size_t len = (size_t)(slash - path);

        if (len >= sizeof(st->dir))
            len = sizeof(st->dir) - 1;
        memcpy(st->dir, path, len);
        st->dir[len] = '\0';
    }
    if (stat(st->dir, &sb) != 0) {
        st->stat_errno = errno;
        return;
    }
    st->is_dir = S_ISDIR(sb.st_mode);
    if (!st->is_dir)
        return;
    /* The effective ids, which write the dump: a process whose real
     * user differs (squid's master: real proxy, effective root) would
     * be judged by the wrong one with access(2). */
    if (faccessat(AT_FDCWD, st->dir, W_OK | X_OK, AT_EACCESS) != 0)
        st->access_errno = errno;
    if (statvfs(st->dir, &vb) == 0) {
        st->have_statvfs = true;
        st->bytes_free =
            (unsigned long long)vb.f_bavail * (unsigned long long)vb.f_frsize;
        /* Some file systems (btrfs) report no inode counts at all. */
        st->files_free =
            vb.f_files == 0 ? ~0ULL : (unsigned long long)vb.f_favail;
    }
}

void
ha_mallctl_dump_errmsg(int errnum, const char *variable, const char *file,
                       const char *prefix, bool prof_built,
                       const struct ha_mallctl_dirstate *before,
                       const struct ha_mallctl_dirstate *after, bool removed,
                       char *err, size_t errlen)
{
    char reason[PATH_MAX + 128];
    char target[PATH_MAX + 32];
    const char *tail = removed ? "; the partial file was removed" : "";

    if (errnum == ENOENT) {
        ha_err_set(err, errlen, "%s: no heap profile written: %s", variable,
                   prof_hint(prof_built));
        return;
    }
    if (prefix == NULL || prefix[0] == '\0') {
        ha_err_set(err, errlen,
                   "%s: no heap profile written: jemalloc's prof_prefix is "
                   "empty, so it cannot name the file; set one, e.g. "
                   "MALLOC_CONF=prof_prefix:/var/lib/heapadmin/proxysql",
                   variable);
        return;
    }
    if (file != NULL)
        snprintf(target, sizeof(target), "'%s'", file);
    else
        snprintf(target, sizeof(target), "'%s.<pid>.<seq>.m<mseq>.heap'",
                 prefix);
    if (errnum != EFAULT) {
        ha_err_set(err, errlen,
                   "%s: writing the heap profile %s failed: %s (errno %d)%s",
                   variable, target, strerror(errnum), errnum, tail);
        return;
    }
    if (before != NULL && ha_mallctl_dir_problem(before, reason,
                                                 sizeof(reason))) {
        ha_err_set(err, errlen,
                   "%s: cannot write the heap profile %s: %s%s", variable,
                   target, reason, tail);
    } else if (after != NULL && ha_mallctl_dir_problem(after, reason,
                                                       sizeof(reason))) {
        ha_err_set(err, errlen,
                   "%s: writing the heap profile %s failed: %s%s", variable,
                   target, reason, tail);
    } else {
        const struct ha_mallctl_dirstate *st = after ? after : before;

        if (st != NULL && st->have_statvfs)
            ha_err_set(err, errlen,
                       "%s: jemalloc could not write the heap profile %s "
                       "(EFAULT), although directory '%s' exists, is "
                       "writable and has %llu bytes free%s",
                       variable, target, st->dir, st->bytes_free, tail);
        else
            ha_err_set(err, errlen,
                       "%s: jemalloc could not write the heap profile %s "
                       "(EFAULT)%s",
                       variable, target, tail);
    }
}

/* ------------------------------------------------------------------
 * Heap dump
 * ------------------------------------------------------------------ */

/* Name of the last dump the hook saw in this thread. A manual dump runs
 * the hook in the calling thread, so the thread-local copy is exactly the
 * file prof.dump wrote; interval dumps in other threads cannot mix in. The
 * hook runs under jemalloc's prof_dump_mtx: it copies and never allocates. */
static _Thread_local char hook_file[PATH_MAX];
static _Thread_local bool hook_called;
/* A hook installed before ours, still called after ours. */
static _Atomic(ha_mallctl_dump_hook) chained_hook;
/* The mallctl our hook was installed through, for ha_mallctl_detach(). */
static _Atomic(ha_mallctl_fn *) hook_mallctl;

static void
dump_hook(const char *filename)
{
    ha_mallctl_dump_hook next = atomic_load(&chained_hook);

    if (filename != NULL) {
        ha_strlcpy(hook_file, filename, sizeof(hook_file));
        hook_called = true;
        /* jemalloc creat()s every dump 0644: no dump stays readable by
         * others (a staged one is made private again when published). */
        (void)ha_dumpfiles_perms(filename);
        /* What memory looked like, for the peak rule: jemalloc's own
         * dumps (heapadmin's are noted once published). */
        ha_dumpfiles_note_memory(filename);
    }
    if (next != NULL)
        next(filename);
}

/* Makes dump_hook the prof_dump hook (jemalloc 5.3); errno value if the
 * hook interface is missing (5.2). */
static int
install_dump_hook(const struct ha_mallctl_ops *ops)
{
    ha_mallctl_dump_hook old = NULL, ours = dump_hook;
    size_t len = sizeof(old);
    int rc;

    rc = ops->mallctl("experimental.hooks.prof_dump", &old, &len, &ours,
                      sizeof(ours));
    if (rc != 0)
        return rc;
    if (old != dump_hook)
        atomic_store(&chained_hook, old);
    atomic_store(&hook_mallctl, ops->mallctl);
    return 0;
}

int
ha_mallctl_watch_dumps(const struct ha_mallctl_ops *ops)
{
    return install_dump_hook(ops);
}

void
ha_mallctl_detach(void)
{
    ha_mallctl_fn *ctl = atomic_exchange(&hook_mallctl, NULL);
    ha_mallctl_dump_hook cur = NULL, prev = atomic_load(&chained_hook);
    size_t len = sizeof(cur);

    if (ctl == NULL)
        return;
    /* Put back the hook we chained to, but only if ours is still the one
     * installed: a hook installed after ours chains to us, and removing
     * ours from under it is its owner's business. */
    if (ctl("experimental.hooks.prof_dump", &cur, &len, NULL, 0) == 0 &&
        cur == dump_hook)
        (void)ctl("experimental.hooks.prof_dump", NULL, NULL, &prev,
                  sizeof(prev));
}

/* Finds the manual dump with the highest <seq> for prefix and this pid:
 * <prefix>.<pid>.<seq>.m<mseq>.heap. Returns true and fills path/seq when
 * one exists. Used only when the dump hook is not available. */
static bool
latest_manual_dump(const char *prefix, char *path, size_t pathlen,
                   unsigned long long *seq)
{
    const char *slash = strrchr(prefix, '/');
    const char *stem = slash != NULL ? slash + 1 : prefix;
    char dir[PATH_MAX], head[NAME_MAX + 32];
    bool found = false;
    struct dirent *de;
    DIR *d;

    if (ha_dumpfiles_dir(prefix, dir, sizeof(dir)) != 0)
        return false;
    snprintf(head, sizeof(head), "%s.%ld.", stem, (long)getpid());
    d = opendir(dir);
    if (d == NULL)
        return false;
    while ((de = readdir(d)) != NULL) {
        unsigned long long s, m;
        int end = 0;

        if (strncmp(de->d_name, head, strlen(head)) != 0)
            continue;
        if (sscanf(de->d_name + strlen(head), "%llu.m%llu.heap%n", &s, &m,
                   &end) != 2 ||
            end == 0 || de->d_name[strlen(head) + (size_t)end] != '\0')
            continue;
        if (!found || s > *seq) {
            int n = snprintf(path, pathlen, "%s/%s", dir, de->d_name);

            if (n < 0 || (size_t)n >= pathlen)
                continue;
            *seq = s;
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* jemalloc's prof.dump creat()s its file and writes its leak report to
 * fd 2. In a host that closed 0-2 the dump would get one of them and the
 * report would land inside it (or the dump on the host's "stdin"): hold
 * every closed one of 0-2 with /dev/null for the length of the call.
 * held[] gets the fds opened here; release_std_fds() closes them only if
 * they are still this /dev/null (the host may have reused the number). */
struct std_hold {
    int fd[3];
    struct stat st[3];
    int n;
};

static void
hold_std_fds(struct std_hold *h)
{
    h->n = 0;
    for (int want = 0; want < 3; want++) {
        int fd;

        if (fcntl(want, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* open() returns the lowest free number: 'want' or below. */
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return;
        if (fd > 2 || fstat(fd, &h->st[h->n]) != 0) {
            close(fd);
            return;
        }
        h->fd[h->n++] = fd;
    }
}

static void
release_std_fds(const struct std_hold *h)
{
    for (int i = 0; i < h->n; i++) {
        struct stat now;

        if (fstat(h->fd[i], &now) == 0 && now.st_dev == h->st[i].st_dev &&
            now.st_ino == h->st[i].st_ino)
            close(h->fd[i]);
    }
}

int
ha_mallctl_dump_to(const struct ha_mallctl_ops *ops, const char *path)
{
    struct std_hold h;
    int rc;

    /* A live profile is wanted now or not at all: behind a dump that is
     * still being written it would wait as long. */
    if (ha_mallctl_dumping())
        return EBUSY;
    hold_std_fds(&h);
    dump_enter();
    rc = ha_mallctl_write_str(ops, "prof.dump", path);
    dump_leave();
    release_std_fds(&h);
    return rc;
}


/* Whether the directory of staged (a staging prefix) exists. */
static bool
staging_exists(const char *staged)
{
    char dir[PATH_MAX];
    struct stat st;

    return ha_dumpfiles_dir(staged, dir, sizeof(dir)) == 0 &&
           lstat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int
ha_mallctl_log_start(const struct ha_mallctl_ops *ops, const char *path)
{
    return ops->mallctl("prof.log_start", NULL, NULL,
                        path != NULL ? (void *)&path : NULL,
                        path != NULL ? sizeof(path) : 0);
}

int
ha_mallctl_log_stop(const struct ha_mallctl_ops *ops)
{
    struct std_hold h;
    int rc;

    hold_std_fds(&h);
    rc = ha_mallctl_action(ops, "prof.log_stop");
    release_std_fds(&h);
    return rc;
}

int
ha_mallctl_recent_dump(const struct ha_mallctl_ops *ops,
                       void (*write_cb)(void *arg, const char *text),
                       void *arg)
{
    /* jemalloc's write_cb_packet_t: the callback and its argument. */
    struct {
        void (*cb)(void *, const char *);
        void *arg;
    } packet = {write_cb, arg};

    return ops->mallctl("experimental.prof_recent.alloc_dump", NULL, NULL,
                        &packet, sizeof(packet));
}

/* In-memory staging is not to be had (no tmpfs at /dev/shm, mkdtemp
 * failed): said once per reason, since jemalloc then writes the dump on
 * the datadir's disk while it holds its profiler's locks. */
static void
note_no_memory(int rc)
{
    static _Atomic int said;

    if (atomic_exchange(&said, rc) != rc)
        ha_log_warn("heap dumps are not staged in memory (/dev/shm: %s): "
                    "jemalloc writes them on the datadir's disk, holding "
                    "its profiler's locks while it does",
                    rc == ENOTSUP ? "not a tmpfs" : strerror(rc));
}

int
ha_mallctl_dump(const struct ha_mallctl_ops *ops, const char *variable,
                char *file, size_t filelen, char *err, size_t errlen)
{
    struct ha_mallctl_dirstate before, after;
    char prefix[PATH_MAX], path[PATH_MAX], reason[PATH_MAX + 128];
    char staged_prefix[PATH_MAX];
    unsigned long long seq_before = 0, seq_after = 0;
    bool prof_built = ha_mallctl_prof_built(ops);
    bool hooked, had_before = false, found = false, removed = false;
    bool staged = false, in_memory = false;
    int rc, prc;

    if (filelen > 0)
        file[0] = '\0';
    if (!ha_mallctl_prof_enabled(ops)) {
        ha_mallctl_dump_errmsg(ENOENT, variable, NULL, NULL, prof_built,
                               NULL, NULL, false, err, errlen);
        return -1;
    }
    rc = ha_mallctl_prof_prefix(ops, prefix, sizeof(prefix));
    if (rc != 0 || prefix[0] == '\0') {
        ha_mallctl_dump_errmsg(EFAULT, variable, NULL, "", prof_built, NULL,
                               NULL, false, err, errlen);
        return -1;
    }
    ha_mallctl_dir_probe(prefix, &before);
    if (ha_mallctl_dir_problem(&before, reason, sizeof(reason))) {
        ha_mallctl_dump_errmsg(EFAULT, variable, NULL, prefix, prof_built,
                               &before, NULL, false, err, errlen);
        return -1;
    }

    /* jemalloc writes the file in place under its final name, holding its
     * profiler's locks all along: have it write into memory instead (its
     * naming and counters kept), or failing that into the staging
     * directory, then copy and publish the whole file with no lock held
     * (heap/dumpfiles.h). The writing lock keeps other instances from
     * changing prof.prefix meanwhile; readers of the prefix get the
     * remembered one without waiting. */
    pthread_mutex_lock(&prefix_memory.writing);
    if ((prc = ha_dumpfiles_memory_prefix(prefix, staged_prefix,
                                          sizeof(staged_prefix))) != 0)
        note_no_memory(prc);
    if (prc == 0 &&
        ha_mallctl_write_str(ops, "prof.prefix", staged_prefix) == 0)
        staged = in_memory = true;
    else if (ha_dumpfiles_staging_prefix(prefix, staged_prefix,
                                         sizeof(staged_prefix)) == 0 &&
             ha_mallctl_write_str(ops, "prof.prefix", staged_prefix) == 0)
        staged = true;
    hooked = install_dump_hook(ops) == 0;
    if (!hooked)
        had_before = latest_manual_dump(staged ? staged_prefix : prefix,
                                        path, sizeof(path), &seq_before);
    hook_called = false;
    hook_file[0] = '\0';
    {
        struct std_hold h;

        hold_std_fds(&h);
        dump_enter();
        rc = ha_mallctl_action(ops, "prof.dump");
        /* On disk: another process of the directory removed the empty
         * staging directory at its exit (ha_dumpfiles_staging_release)
         * between our making it and jemalloc's creat(): made again,
         * once. */
        if (rc != 0 && staged && !in_memory &&
            !staging_exists(staged_prefix) &&
            ha_dumpfiles_staging_prefix(prefix, staged_prefix,
                                        sizeof(staged_prefix)) == 0)
            rc = ha_mallctl_action(ops, "prof.dump");
        dump_leave();
        release_std_fds(&h);
    }
    if (staged && (prc = ha_mallctl_write_str(ops, "prof.prefix", prefix)) !=
                      0)
        ha_log_error("cannot set prof.prefix back to %s after a dump: %s; "
                     "jemalloc's own dumps now go to %s",
                     prefix, strerror(prc), staged_prefix);
    pthread_mutex_unlock(&prefix_memory.writing);

    if (hooked && hook_called) {
        ha_strlcpy(path, hook_file, sizeof(path));
        found = true;
    } else if (!hooked &&
               latest_manual_dump(staged ? staged_prefix : prefix, path,
                                  sizeof(path), &seq_after) &&
               (!had_before || seq_after > seq_before)) {
        found = true;
    }
    if (rc == 0 && staged && found && in_memory) {
        char copied[PATH_MAX], dir[PATH_MAX];

        if ((prc = ha_dumpfiles_copy_in(path, prefix, copied,
                                        sizeof(copied))) != 0) {
            (void)ha_dumpfiles_dir(prefix, dir, sizeof(dir));
            ha_err_set(err, errlen,
                       "%s: the dump was written but cannot be copied into "
                       "%s: %s; nothing was kept",
                       variable, dir, strerror(prc));
            return -1;
        }
        ha_strlcpy(path, copied, sizeof(path));
    }
    if (rc == 0 && staged && found) {
        char final[PATH_MAX], dir[PATH_MAX];
        if ((prc = ha_dumpfiles_dir(prefix, dir, sizeof(dir))) != 0 ||
            (prc = ha_dumpfiles_publish(path, dir, final, sizeof(final))) !=
                0) {
            unlink(path);
            ha_err_set(err, errlen,
                       "%s: the dump was written but cannot be moved into "
                       "%s: %s; nothing was kept",
                       variable, dir, strerror(prc));
            return -1;
        }
        ha_strlcpy(path, final, sizeof(path));
    }
    if (rc == 0) {
        if (found)
            ha_strlcpy(file, path, filelen);
        else
            snprintf(file, filelen, "%s.%ld.<seq>.m<mseq>.heap", prefix,
                     (long)getpid());
        return 0;
    }

    {
        /* The operator is told of the dump's name in the datadir, not of
         * the staging file it would have been published from. */
        char shown[PATH_MAX];
        char dir[PATH_MAX];
        const char *base = found ? strrchr(path, '/') : NULL;
        int n = -1;

        if (found && staged && base != NULL &&
            ha_dumpfiles_dir(prefix, dir, sizeof(dir)) == 0)
            n = snprintf(shown, sizeof(shown), "%s%s", dir, base);
        if (n < 0 || (size_t)n >= sizeof(shown))
            ha_strlcpy(shown, found ? path : "", sizeof(shown));
        ha_mallctl_dir_probe(found ? shown : prefix, &after);
        /* jemalloc creat()s the file before writing: a write error (disk
         * full) leaves a truncated profile under a valid dump name. */
        if (found && unlink(path) == 0)
            removed = true;
        ha_mallctl_dump_errmsg(rc, variable, found ? shown : NULL, prefix,
                               prof_built, &before, &after, removed, err,
                               errlen);
    }
    return -1;
}
