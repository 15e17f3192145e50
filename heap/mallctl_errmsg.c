/* SPDX-License-Identifier: MIT
 *
 * Operator messages for mallctl errno values (see mallctl.h): what was
 * attempted and what to do, the heap dump's failures explained from its
 * target directory's state, and that state probed. Pure but for
 * ha_mallctl_dir_probe(); no mallctl() here.
 */
#include "heap/mallctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/util.h"

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
    return prof_built ? HA_MALLCTL_PROF_OFF_HINT : HA_MALLCTL_PROF_UNBUILT_HINT;
}

void
ha_mallctl_errmsg(const struct ha_mallctl_failure *f, char *err, size_t errlen)
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
                       "%s: this jemalloc has no mallctl '%s' (ENOENT)", head,
                       f->mallctl);
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
            ha_err_set(err, errlen, "%s: %s is write-only and cannot be read",
                       head, f->mallctl);
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
        ha_err_set(reason, reasonlen, "directory '%s' does not exist", st->dir);
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
                   "the disk holding '%s' is full (%llu bytes free)", st->dir,
                   st->bytes_free);
    } else if (st->have_statvfs && st->files_free == 0) {
        ha_err_set(reason, reasonlen,
                   "the file system holding '%s' has no free inodes", st->dir);
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
    if (before != NULL &&
        ha_mallctl_dir_problem(before, reason, sizeof(reason))) {
        ha_err_set(err, errlen, "%s: cannot write the heap profile %s: %s%s",
                   variable, target, reason, tail);
    } else if (after != NULL &&
               ha_mallctl_dir_problem(after, reason, sizeof(reason))) {
        ha_err_set(err, errlen, "%s: writing the heap profile %s failed: %s%s",
                   variable, target, reason, tail);
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
