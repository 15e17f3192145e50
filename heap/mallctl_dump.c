/* SPDX-License-Identifier: MIT
 *
 * What jemalloc writes to files, through mallctl() (see mallctl.h): the
 * heap dump with its file discovery (the prof_dump hook, or a directory
 * listing), in-memory or on-disk staging, publishing and clean-up; the
 * prof_log and the recent allocations; fds 0-2 held while jemalloc
 * writes. The dump gate and prof.prefix's lock it takes are mallctl.c's
 * (mallctl_int.h).
 */
#include "heap/mallctl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "heap/dumpfiles.h"
#include "heap/mallctl_int.h"

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
    ha_mallctl_dump_enter();
    rc = ha_mallctl_write_str(ops, "prof.dump", path);
    ha_mallctl_dump_leave();
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
                       void (*write_cb)(void *arg, const char *text), void *arg)
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
        ha_mallctl_dump_errmsg(ENOENT, variable, NULL, NULL, prof_built, NULL,
                               NULL, false, err, errlen);
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
    ha_mallctl_prefix_lock();
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
        had_before = latest_manual_dump(staged ? staged_prefix : prefix, path,
                                        sizeof(path), &seq_before);
    hook_called = false;
    hook_file[0] = '\0';
    {
        struct std_hold h;

        hold_std_fds(&h);
        ha_mallctl_dump_enter();
        rc = ha_mallctl_action(ops, "prof.dump");
        /* On disk: another process of the directory removed the empty
         * staging directory at its exit (ha_dumpfiles_staging_release)
         * between our making it and jemalloc's creat(): made again,
         * once. */
        if (rc != 0 && staged && !in_memory && !staging_exists(staged_prefix) &&
            ha_dumpfiles_staging_prefix(prefix, staged_prefix,
                                        sizeof(staged_prefix)) == 0)
            rc = ha_mallctl_action(ops, "prof.dump");
        ha_mallctl_dump_leave();
        release_std_fds(&h);
    }
    if (staged && (prc = ha_mallctl_write_str(ops, "prof.prefix", prefix)) != 0)
        ha_log_error("cannot set prof.prefix back to %s after a dump: %s; "
                     "jemalloc's own dumps now go to %s",
                     prefix, strerror(prc), staged_prefix);
    ha_mallctl_prefix_unlock();

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
