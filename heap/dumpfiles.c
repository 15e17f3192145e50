/* SPDX-License-Identifier: MIT
 *
 * Dump files kept whole and never overwritten (see dumpfiles.h).
 */
#include "heap/dumpfiles.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "core/fdio.h"
#include "core/forkguard.h"
#include "core/log.h"
#include "core/util.h"
#include "prof/dumpmem.h"
#include "prof/dumpname.h"

/* Splits prefix into its directory and its stem. */
static int
split_prefix(const char *prefix, char *dir, size_t dirlen, const char **stem)
{
    const char *slash = strrchr(prefix, '/');
    int n;

    if (slash == NULL) {
        *stem = prefix;
        n = snprintf(dir, dirlen, ".");
    } else {
        *stem = slash + 1;
        n = snprintf(dir, dirlen, "%.*s",
                     (int)(slash == prefix ? 1 : slash - prefix), prefix);
    }
    return n < 0 || (size_t)n >= dirlen ? ENAMETOOLONG : 0;
}

int
ha_dumpfiles_dir(const char *prefix, char *dir, size_t dirlen)
{
    const char *stem;

    return split_prefix(prefix, dir, dirlen, &stem);
}

/* A directory of this user's at path (never a symlink), made with mode
 * when missing. Returns 0 or an errno value. */
static int
own_dir(const char *path, mode_t mode)
{
    struct stat st;

    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return errno;
    if (lstat(path, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return ENOTDIR;
    return 0;
}

int
ha_dumpfiles_staging_prefix(const char *prefix, char *out, size_t outlen)
{
    char dir[PATH_MAX], staging[PATH_MAX];
    const char *stem;
    int rc, n;

    if ((rc = split_prefix(prefix, dir, sizeof(dir), &stem)) != 0)
        return rc;
    n = snprintf(staging, sizeof(staging), "%s/%s", dir,
                 HA_DUMPFILES_STAGING);
    if (n < 0 || (size_t)n >= sizeof(staging))
        return ENAMETOOLONG;
    if ((rc = own_dir(staging, 0700)) != 0)
        return rc;
    n = snprintf(out, outlen, "%s/%s", staging, stem);
    return n < 0 || (size_t)n >= outlen ? ENAMETOOLONG : 0;
}

int
ha_dumpfiles_staging_release(const char *dir)
{
    char staging[PATH_MAX];
    int n = snprintf(staging, sizeof(staging), "%s/%s", dir,
                     HA_DUMPFILES_STAGING);

    if (n < 0 || (size_t)n >= sizeof(staging))
        return ENAMETOOLONG;
    /* rmdir never follows a link, and removes only an empty
     * directory. */
    if (rmdir(staging) == 0 || errno == ENOENT)
        return 0;
    return errno;
}

/* ------------------------------------------------------------------
 * Earlier runs
 * ------------------------------------------------------------------ */

/* When this process started, in seconds since the epoch: now, less the
 * time since boot, plus /proc/self/stat's starttime (clock ticks after
 * boot). /proc/stat's btime is whole seconds and would put the start up
 * to a second early. Files older than this cannot be this run's. 0 when
 * unknown. */
static double
process_start_time(void)
{
    char buf[1024];
    unsigned long long start_ticks = 0;
    struct timespec real, boot;
    const char *p;
    FILE *f;
    size_t n;
    long hz = sysconf(_SC_CLK_TCK);

    if ((f = fopen("/proc/self/stat", "re")) == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Field 2 (comm) may hold spaces and parentheses: count from the
     * last ')'. starttime is field 22, the 20th after it. */
    if ((p = strrchr(buf, ')')) == NULL)
        return 0;
    for (int field = 2; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &start_ticks) != 1 || hz <= 0)
        return 0;
    if (clock_gettime(CLOCK_REALTIME, &real) != 0 ||
        clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return 0;
    return (double)real.tv_sec + (double)real.tv_nsec / 1e9 -
           ((double)boot.tv_sec + (double)boot.tv_nsec / 1e9) +
           (double)start_ticks / (double)hz;
}

/* Moves the regular files of dir whose names start with head and whose
 * mtime is before not_after (seconds; 0: any) into a new directory
 * earlier-runs/<label>.<UTC time of the newest>/. Returns how many, or
 * -1 (logged). */
static int
move_aside(const char *dir, const char *head, const char *label,
           double not_after)
{
    char (*names)[NAME_MAX + 1] = NULL;
    size_t cap = 0;
    char base[PATH_MAX], dest[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
    char stamp[80];
    time_t newest = 0;
    size_t n = 0, moved = 0;
    struct dirent *de;
    struct tm tm;
    DIR *d;
    int len, rc = ENAMETOOLONG;

    if ((d = opendir(dir)) == NULL) {
        ha_log_warn("dump housekeeping: cannot read %s: %s", dir,
                    strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        struct stat st;

        if (strncmp(de->d_name, head, strlen(head)) != 0)
            continue;
        snprintf(from, sizeof(from), "%s/%s", dir, de->d_name);
        if (lstat(from, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (not_after > 0 && (double)st.st_mtim.tv_sec +
                                     (double)st.st_mtim.tv_nsec / 1e9 >=
                                 not_after)
            continue;
        if (n == cap) {
            size_t ncap = cap == 0 ? 16 : cap * 2;
            void *p = realloc(names, ncap * sizeof(*names));

            if (p == NULL)
                break;
            names = p;
            cap = ncap;
        }
        if (st.st_mtime > newest)
            newest = st.st_mtime;
        ha_strlcpy(names[n++], de->d_name, sizeof(names[0]));
    }
    closedir(d);
    if (n == 0) {
        free(names);
        return 0;
    }
    ha_utc_tm(newest, &tm);
    snprintf(stamp, sizeof(stamp), "%04d%02d%02dT%02d%02d%02dZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec);
    len = snprintf(base, sizeof(base), "%s/%s", dir, HA_DUMPFILES_EARLIER);
    if (len < 0 || (size_t)len >= sizeof(base) ||
        (rc = own_dir(base, 0750)) != 0) {
        ha_log_warn("dump housekeeping: cannot create %s/%s: %s", dir,
                    HA_DUMPFILES_EARLIER, strerror(rc));
        free(names);
        return -1;
    }
    for (int k = 1;; k++) {
        len = k == 1 ? snprintf(dest, sizeof(dest), "%s/%s.%s", base, label,
                                stamp)
                     : snprintf(dest, sizeof(dest), "%s/%s.%s-%d", base,
                                label, stamp, k);
        if (len < 0 || (size_t)len >= sizeof(dest)) {
            free(names);
            return -1;
        }
        if (mkdir(dest, 0750) == 0)
            break;
        if (errno != EEXIST || k >= 100) {
            ha_log_warn("dump housekeeping: cannot create %s: %s", dest,
                        strerror(errno));
            free(names);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int a = snprintf(from, sizeof(from), "%s/%s", dir, names[i]);
        int b = snprintf(to, sizeof(to), "%s/%s", dest, names[i]);

        if (a < 0 || (size_t)a >= sizeof(from) || b < 0 ||
            (size_t)b >= sizeof(to))
            continue;
        if (rename(from, to) == 0)
            moved++;
        else
            ha_log_warn("dump housekeeping: cannot move %s to %s: %s", from,
                        dest, strerror(errno));
    }
    free(names);
    ha_log_info("dump housekeeping: %zu file%s of an earlier run with the "
                "same name moved to %s, so this run cannot overwrite them",
                moved, moved == 1 ? "" : "s", dest);
    return (int)moved;
}

/* -1: no group, dumps are 0600. */
static _Atomic long long dump_gid = -1;

void
ha_dumpfiles_set_perms(gid_t gid)
{
    atomic_store(&dump_gid, gid == (gid_t)-1 ? -1 : (long long)gid);
}

int
ha_dumpfiles_perms(const char *path)
{
    long long gid = atomic_load(&dump_gid);

    if (gid >= 0 && chown(path, (uid_t)-1, (gid_t)gid) != 0)
        return errno;
    return chmod(path, gid >= 0 ? 0640 : 0600) == 0 ? 0 : errno;
}

int
ha_dumpfiles_sidecar_perms(const char *dump, const char *suffix)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof(path), "%s%s", dump, suffix) >=
        sizeof(path))
        return ENAMETOOLONG;
    return ha_dumpfiles_perms(path);
}

#define MEMORY_ROOT "/dev/shm"
#define MEMORY_STEM "heapadmin."

/* This process's memory directory, "/dev/shm/heapadmin.<pid>.<six
 * random characters>" made by mkdtemp(3): a name nobody can make first
 * (anyone may create entries in /dev/shm, and a directory planted under
 * a name we would pick made heapadmin give up its in-memory staging),
 * checked to be ours at each use. Made at the first dump; a fork child
 * (another pid) makes its own. Under mem_lock, inside the fork gate. */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static char mem_dir[PATH_MAX];
static long mem_pid;
static int mem_users;              /* engines running (hold/stop) */

/* Whether path is a directory of this user's, mode 0700, not a link. */
static bool
own_private_dir(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == geteuid() && (st.st_mode & 07777) == 0700;
}

/* The name a heapadmin before issue 35 used, "/dev/shm/heapadmin.<pid>":
 * if someone else made it, say that it is left alone (once a process). */
static void
note_planted(void)
{
    static _Atomic long said_for;
    char old[PATH_MAX];
    struct stat st;
    long pid = (long)getpid();

    snprintf(old, sizeof(old), "%s/%s%ld", MEMORY_ROOT, MEMORY_STEM, pid);
    if (lstat(old, &st) != 0 ||
        (S_ISDIR(st.st_mode) && st.st_uid == geteuid()) ||
        atomic_exchange(&said_for, pid) == pid)
        return;
    ha_log_warn("%s is not this process's (%s owned by uid %u): left alone; "
                "heap dumps are staged in memory in a directory of an "
                "unguessable name",
                old,
                S_ISLNK(st.st_mode)  ? "a symlink"
                : S_ISDIR(st.st_mode) ? "a directory"
                                      : "a file",
                (unsigned)st.st_uid);
}

static int
memory_dir(char *out, size_t outlen)
{
    struct statfs fs;
    char tmpl[PATH_MAX];
    int rc = 0;

    if (statfs(MEMORY_ROOT, &fs) != 0)
        return errno;
    if ((unsigned long)fs.f_type != (unsigned long)TMPFS_MAGIC)
        return ENOTSUP;
    ha_forkguard_enter();
    pthread_mutex_lock(&mem_lock);
    if (mem_pid == (long)getpid() && mem_dir[0] != '\0' &&
        !own_private_dir(mem_dir)) {
        ha_log_warn("%s is no longer this process's private directory: "
                    "a new one is made for the in-memory staging of heap "
                    "dumps",
                    mem_dir);
        mem_dir[0] = '\0';
    }
    if (mem_pid != (long)getpid() || mem_dir[0] == '\0') {
        note_planted();
        snprintf(tmpl, sizeof(tmpl), "%s/%s%ld.XXXXXX", MEMORY_ROOT,
                 MEMORY_STEM, (long)getpid());
        if (mkdtemp(tmpl) == NULL) {
            rc = errno;
            mem_dir[0] = '\0';
        } else {
            ha_strlcpy(mem_dir, tmpl, sizeof(mem_dir));
            mem_pid = (long)getpid();
        }
    }
    if (rc == 0 && ha_strlcpy(out, mem_dir, outlen) != 0)
        rc = ENAMETOOLONG;
    pthread_mutex_unlock(&mem_lock);
    ha_forkguard_leave();
    return rc;
}

int
ha_dumpfiles_memory_prefix(const char *prefix, char *out, size_t outlen)
{
    char dir[PATH_MAX], mem[PATH_MAX];
    const char *stem;
    int rc, n;

    if ((rc = split_prefix(prefix, dir, sizeof(dir), &stem)) != 0 ||
        (rc = memory_dir(mem, sizeof(mem))) != 0)
        return rc;
    n = snprintf(out, outlen, "%s/%s", mem, stem);
    return n < 0 || (size_t)n >= outlen ? ENAMETOOLONG : 0;
}

/* Removes every file of dir (the memory directory: nothing in it is
 * kept), then dir; logs what was left there. */
static void
clear_memory_dir(const char *dir, const char *why)
{
    char file[PATH_MAX];
    struct dirent *de;
    DIR *d = opendir(dir);

    if (d != NULL) {
        while ((de = readdir(d)) != NULL) {
            int n;

            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            n = snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
            if (n > 0 && (size_t)n < sizeof(file) && unlink(file) == 0)
                ha_log_info("dump housekeeping: removed %s, %s", file, why);
        }
        closedir(d);
    }
    (void)rmdir(dir);
}

void
ha_dumpfiles_memory_release(void)
{
    ha_forkguard_enter();
    pthread_mutex_lock(&mem_lock);
    /* Only when empty: another instance's dump may be in it. */
    if (mem_pid == (long)getpid() && mem_dir[0] != '\0' &&
        rmdir(mem_dir) == 0)
        mem_dir[0] = '\0';
    pthread_mutex_unlock(&mem_lock);
    ha_forkguard_leave();
}

void
ha_dumpfiles_memory_hold(void)
{
    ha_forkguard_enter();
    pthread_mutex_lock(&mem_lock);
    mem_users++;
    pthread_mutex_unlock(&mem_lock);
    ha_forkguard_leave();
}

void
ha_dumpfiles_memory_stop(void)
{
    ha_forkguard_enter();
    pthread_mutex_lock(&mem_lock);
    if (mem_users > 0)
        mem_users--;
    /* The last instance of the process stops: no dump of its can be
     * under way any more, so what is left there is a dump cut short. */
    if (mem_users == 0 && mem_pid == (long)getpid() && mem_dir[0] != '\0') {
        clear_memory_dir(mem_dir, "a dump cut short by the stop");
        mem_dir[0] = '\0';
    }
    pthread_mutex_unlock(&mem_lock);
    ha_forkguard_leave();
}

int
ha_dumpfiles_copy_in(const char *mem, const char *prefix, char *out,
                     size_t outlen)
{
    char staged_prefix[PATH_MAX], dir[PATH_MAX], side[PATH_MAX];
    const char *name = strrchr(mem, '/'), *stem;
    char *buf = NULL;
    int in = -1, fd = -1, rc = 0, n;

    name = name != NULL ? name + 1 : mem;
    if ((rc = ha_dumpfiles_staging_prefix(prefix, staged_prefix,
                                          sizeof(staged_prefix))) != 0 ||
        (rc = split_prefix(staged_prefix, dir, sizeof(dir), &stem)) != 0)
        goto out;
    n = snprintf(out, outlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= outlen) {
        rc = ENAMETOOLONG;
        goto out;
    }
    if ((buf = malloc(1 << 20)) == NULL) {
        rc = ENOMEM;
        goto out;
    }
    /* Non-blocking: what is there may be no regular file (a FIFO would
     * hold this open for ever). */
    in = open(mem, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (in < 0) {
        rc = errno;
        goto out;
    }
    {
        struct stat st;

        if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
            rc = EINVAL;
            goto out;
        }
    }
    fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
              0600);
    /* Another process of the directory removed the empty staging
     * directory at its exit (ha_dumpfiles_staging_release) meanwhile:
     * made again, once. */
    if (fd < 0 && errno == ENOENT &&
        ha_dumpfiles_staging_prefix(prefix, staged_prefix,
                                    sizeof(staged_prefix)) == 0)
        fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                  0600);
    if (fd < 0) {
        rc = errno;
        goto out;
    }
    for (;;) {
        ssize_t r = read(in, buf, 1 << 20);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = errno;
            break;
        }
        if (r == 0)
            break;
        rc = ha_fdio_write_all(fd, buf, (size_t)r);
        if (rc != 0)
            break;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = errno;
    if (close(fd) != 0 && rc == 0)
        rc = errno;
    fd = -1;
    if (rc != 0)
        unlink(out);
out:
    if (in >= 0)
        close(in);
    if (fd >= 0)
        close(fd);
    free(buf);
    unlink(mem);
    /* No side file of it stays in memory either (the dump hook writes
     * none there: ha_dumpfiles_note_memory). */
    if ((size_t)snprintf(side, sizeof(side), "%s%s", mem,
                         HA_DUMPMEM_SUFFIX) < sizeof(side))
        unlink(side);
    return rc;
}

/* Removes the in-memory dump directories of processes that are gone (a
 * kill -9 between jemalloc's write and the copy) and this pid's own (an
 * earlier run's, same pid): "heapadmin.<pid>.<random>", or
 * "heapadmin.<pid>" of a heapadmin before issue 35. Only this user's
 * directories, never through a link; this process's own is kept. */
static void
clean_memory(long pid)
{
    char path[PATH_MAX], file[PATH_MAX], mine[PATH_MAX];
    struct dirent *de;
    DIR *d = opendir(MEMORY_ROOT);

    if (d == NULL)
        return;
    ha_forkguard_enter();
    pthread_mutex_lock(&mem_lock);
    ha_strlcpy(mine, mem_pid == (long)getpid() ? mem_dir : "",
               sizeof(mine));
    pthread_mutex_unlock(&mem_lock);
    ha_forkguard_leave();
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        struct dirent *fe;
        char *end;
        long owner;
        DIR *sub;
        int n;

        if (strncmp(de->d_name, MEMORY_STEM, strlen(MEMORY_STEM)) != 0)
            continue;
        owner = strtol(de->d_name + strlen(MEMORY_STEM), &end, 10);
        if ((*end != '\0' && (*end != '.' || strlen(end) != 7)) ||
            owner <= 0 ||
            (owner != pid && (kill((pid_t)owner, 0) == 0 || errno != ESRCH)))
            continue;
        n = snprintf(path, sizeof(path), "%s/%s", MEMORY_ROOT, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(path) || strcmp(path, mine) == 0 ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid() || (sub = opendir(path)) == NULL)
            continue;
        while ((fe = readdir(sub)) != NULL) {
            size_t len = strlen(fe->d_name);
            size_t sl = sizeof(HA_DUMPMEM_SUFFIX) - 1;

            if (fe->d_name[0] == '.')
                continue;
            n = snprintf(file, sizeof(file), "%s/%s", path, fe->d_name);
            /* Routine after a kill (the OOM killer's SIGKILL between
             * jemalloc's write and the copy), or a side file an earlier
             * heapadmin left there: info, not a warning. */
            if (n <= 0 || (size_t)n >= sizeof(file) || unlink(file) != 0)
                continue;
            if (len > sl &&
                strcmp(fe->d_name + len - sl, HA_DUMPMEM_SUFFIX) == 0)
                ha_log_info("dump housekeeping: removed %s, a side file an "
                            "earlier heapadmin left in memory (pid %ld)",
                            file, owner);
            else
                ha_log_info("dump housekeeping: removed %s, a dump written "
                            "in memory by a process that is gone (pid %ld)",
                            file, owner);
        }
        closedir(sub);
        rmdir(path);
    }
    closedir(d);
}

int
ha_dumpfiles_write_sidecar(const char *dump, const char *suffix,
                           const char *text, size_t len)
{
    char path[PATH_MAX];
    int fd, rc = 0;

    if ((size_t)snprintf(path, sizeof(path), "%s%s", dump, suffix) >=
        sizeof(path))
        return ENAMETOOLONG;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0)
        return errno;
    rc = ha_fdio_write_all(fd, text, len);
    if (close(fd) != 0 && rc == 0)
        rc = errno;
    if (rc != 0) {
        unlink(path);
        return rc;
    }
    (void)ha_dumpfiles_perms(path);
    return 0;
}

long long
ha_dumpfiles_resident(void)
{
    char buf[256];
    unsigned long long size = 0, resident = 0;
    long page = sysconf(_SC_PAGESIZE);
    ssize_t n;
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0 || page <= 0)
        return -1;
    buf[n] = '\0';
    /* "size resident shared text lib data dt", in pages */
    {
        const char *p = buf;

        while (*p >= '0' && *p <= '9')
            size = size * 10 + (unsigned long long)(*p++ - '0');
        if (*p++ != ' ')
            return -1;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            resident = resident * 10 + (unsigned long long)(*p++ - '0');
    }
    (void)size;
    return (long long)resident * page;
}

void
ha_dumpfiles_note_memory(const char *dump)
{
    struct ha_dumpmem m;
    struct ha_dump_name dn;
    struct timespec now;
    const char *base;
    char text[512];
    int len;

    /* Only the datadir's dumps: not staged ones, not a live profile's
     * private dump (whose directory is removed at once), not one written
     * in memory to be copied in (noted once published; a note left there
     * would outlive the dump, in tmpfs pages the process's cgroup pays
     * for). */
    if (dump == NULL || strstr(dump, "/" HA_DUMPFILES_STAGING "/") != NULL ||
        strncmp(dump, MEMORY_ROOT "/" MEMORY_STEM,
                strlen(MEMORY_ROOT "/" MEMORY_STEM)) == 0)
        return;
    base = strrchr(dump, '/');
    if (!ha_dumpname_parse(base != NULL ? base + 1 : dump, &dn))
        return;
    ha_dumpmem_init(&m);
    if (clock_gettime(CLOCK_REALTIME, &now) == 0)
        m.taken_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    memcpy(m.trigger, "jemalloc", sizeof("jemalloc"));
    m.resident = ha_dumpfiles_resident();
    len = ha_dumpmem_format(&m, text, sizeof(text));
    if (len > 0)
        (void)ha_dumpfiles_write_sidecar(dump, HA_DUMPMEM_SUFFIX, text,
                                         (size_t)len);
}

int
ha_dumpfiles_publish(const char *staged, const char *dir, char *out,
                     size_t outlen)
{
    const char *name = strrchr(staged, '/');
    int n;

    name = name != NULL ? name + 1 : staged;
    n = snprintf(out, outlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= outlen)
        return ENAMETOOLONG;
    /* Private before it has a name anyone can open. */
    (void)ha_dumpfiles_perms(staged);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (renameat2(AT_FDCWD, staged, AT_FDCWD, out, RENAME_NOREPLACE) ==
            0)
            return 0;
        if (errno == EINVAL || errno == ENOSYS) {
            /* A file system without RENAME_NOREPLACE: link(2) never
             * replaces either. */
            if (link(staged, out) == 0) {
                unlink(staged);
                return 0;
            }
        }
        if (errno != EEXIST || attempt > 0)
            return errno;
        /* Taken: an earlier run's file, same pid. Keep it, elsewhere. */
        if (move_aside(dir, name, name, 0) <= 0)
            return EEXIST;
    }
    return EEXIST;
}

/* ------------------------------------------------------------------
 * Start-up
 * ------------------------------------------------------------------ */

/* Removes staged dumps of processes that no longer run or of pid (an
 * earlier run's): the remains of a dump killed mid-write. */
static void
clean_staging(const char *dir, long pid)
{
    char staging[PATH_MAX], path[PATH_MAX];
    struct dirent *de;
    DIR *d;
    int n;

    n = snprintf(staging, sizeof(staging), "%s/%s", dir,
                 HA_DUMPFILES_STAGING);
    if (n < 0 || (size_t)n >= sizeof(staging) ||
        (d = opendir(staging)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        struct ha_dump_name dn;
        struct stat st;

        if (!ha_dumpname_parse(de->d_name, &dn))
            continue;
        if (dn.pid != pid && (kill((pid_t)dn.pid, 0) == 0 || errno != ESRCH))
            continue; /* another live process's dump in progress */
        n = snprintf(path, sizeof(path), "%s/%s", staging, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(path) || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (unlink(path) == 0)
            ha_log_warn("dump housekeeping: removed %s, a dump interrupted "
                        "mid-write by a process that is gone (pid %lld)",
                        path, dn.pid);
    }
    closedir(d);
}

int
ha_dumpfiles_start(const char *prefix, long pid)
{
    char dir[PATH_MAX], head[NAME_MAX + 1], label[NAME_MAX + 1];
    const char *stem;
    double started = process_start_time();
    int n;

    if (split_prefix(prefix, dir, sizeof(dir), &stem) != 0)
        return -1;
    clean_staging(dir, pid);
    clean_memory(pid);
    /* Without the start time every same-pid file would look earlier,
     * this run's own included: move nothing rather than that. */
    if (started <= 0)
        return 0;
    n = snprintf(head, sizeof(head), "%s.%ld.", stem, pid);
    if (n < 0 || (size_t)n >= sizeof(head))
        return -1;
    snprintf(label, sizeof(label), "%s.%ld", stem, pid);
    return move_aside(dir, head, label, started);
}

/* ------------------------------------------------------------------
 * Retention
 * ------------------------------------------------------------------ */

/* A regular file of the dump directory whose name starts "<stem>.". */
struct entry {
    char name[NAME_MAX + 1];
    struct timespec mtime;
    long long size;
};

/* A dump and its sidecars, which sort right after it by name. */
struct kept {
    size_t at;                 /* the dump: entries[at] */
    size_t end;                /* names extending it: entries[at + 1 ..
                                  end), sidecars those going on with '.' */
    struct timespec mtime;
    long long seq;
    long long bytes;           /* the dump and its sidecars */
    long long pid;
    int64_t resident;          /* <dump>.mem's; -1 unknown */
    bool limit;                /* a limit dump (trigger "limit") */
    bool held;                 /* out of rotation */
};

/* Runs whose peak and limit dumps retention holds: the newest ones, so
 * a service in a crash loop cannot fill the disk with them. */
#define KEEP_RUNS 8

/* What <dir>/<name>.mem says: resident and whether a limit dump. */
static void
read_memory(const char *dir, const char *name, struct kept *k)
{
    char path[PATH_MAX], buf[8192], err[64];
    struct ha_dumpmem m;
    ssize_t n = -1;
    int fd;

    k->resident = -1;
    k->limit = false;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s%s", dir, name,
                         HA_DUMPMEM_SUFFIX) >= sizeof(path) ||
        (fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) <
            0)
        return;
    n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n > 0 && ha_dumpmem_parse(buf, (size_t)n, &m, err, sizeof(err)) ==
                     0) {
        k->resident = m.resident;
        k->limit = strcmp(m.trigger, "limit") == 0;
    }
}

/* Marks what retention holds: each run's dump of highest resident
 * memory, whatever its kind, and the limit dumps of runs that are over
 * (their process gone: an OOM kill's evidence), for the KEEP_RUNS runs
 * with the newest dumps. */
static void
hold(struct kept *k, size_t n, long self)
{
    long long pids[KEEP_RUNS];
    size_t n_pids = 0;

    /* newest first: the runs to hold for */
    for (size_t i = n; i-- > 0 && n_pids < KEEP_RUNS;) {
        bool seen = false;

        for (size_t j = 0; j < n_pids; j++)
            seen = seen || pids[j] == k[i].pid;
        if (!seen)
            pids[n_pids++] = k[i].pid;
    }
    for (size_t p = 0; p < n_pids; p++) {
        bool over = pids[p] != self &&
                    kill((pid_t)pids[p], 0) != 0 && errno == ESRCH;
        size_t best = n;

        for (size_t i = 0; i < n; i++) {
            if (k[i].pid != pids[p])
                continue;
            if (over && k[i].limit)
                k[i].held = true;
            if (k[i].resident >= 0 &&
                (best == n ||
                 ha_dumpmem_higher(k[i].resident,
                                   (int64_t)k[i].mtime.tv_sec * 1000000000 +
                                       k[i].mtime.tv_nsec,
                                   k[best].resident,
                                   (int64_t)k[best].mtime.tv_sec *
                                           1000000000 +
                                       k[best].mtime.tv_nsec)))
                best = i;
        }
        if (best < n)
            k[best].held = true;
    }
}

static int
by_name(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name,
                  ((const struct entry *)b)->name);
}

static int
older_first(const void *a, const void *b)
{
    const struct kept *x = a, *y = b;

    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Adds the sizes of "<name>.*" files (sidecars) in dir, or removes them
 * when remove is set. */
static long long
sidecars(const char *dir, const char *name, bool remove)
{
    char path[PATH_MAX];
    size_t len = strlen(name);
    long long total = 0;
    struct dirent *de;
    DIR *d = opendir(dir);

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        int n;

        if (strncmp(de->d_name, name, len) != 0 || de->d_name[len] != '.')
            continue;
        n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(path) || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        total += (long long)st.st_size;
        if (remove)
            unlink(path);
    }
    closedir(d);
    return total;
}

/* The regular files of dir whose names start with head, sorted by name,
 * from one pass over the directory. Returns the count (*out malloc'd),
 * or -1 when dir cannot be read. */
static ssize_t
read_entries(const char *dir, const char *head, struct entry **out)
{
    char path[PATH_MAX];
    struct entry *e = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d = opendir(dir);

    *out = NULL;
    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        int len;

        if (strncmp(de->d_name, head, strlen(head)) != 0)
            continue;
        len = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (len < 0 || (size_t)len >= sizeof(path) || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t ncap = cap == 0 ? 32 : cap * 2;
            struct entry *p = realloc(e, ncap * sizeof(*e));

            if (p == NULL)
                break;
            e = p;
            cap = ncap;
        }
        ha_strlcpy(e[n].name, de->d_name, sizeof(e[n].name));
        e[n].mtime = st.st_mtim;
        e[n].size = (long long)st.st_size;
        n++;
    }
    closedir(d);
    if (n > 0)
        qsort(e, n, sizeof(*e), by_name);
    *out = e;
    return (ssize_t)n;
}

int
ha_dumpfiles_retain(const char *prefix, long long max_count,
                    long long max_bytes)
{
    char dir[PATH_MAX], path[PATH_MAX], head[NAME_MAX + 2];
    struct entry *e = NULL;
    struct kept *k = NULL;
    size_t n_kept = 0, count, first = 0;
    long long total = 0;
    const char *stem;
    ssize_t n;
    int removed = 0;

    if (max_count <= 0 && max_bytes <= 0)
        return 0;
    if (split_prefix(prefix, dir, sizeof(dir), &stem) != 0)
        return -1;
    snprintf(head, sizeof(head), "%s.", stem);
    if ((n = read_entries(dir, head, &e)) < 0)
        return -1;
    if (n > 0 && (k = malloc((size_t)n * sizeof(*k))) == NULL) {
        free(e);
        return -1;
    }
    for (size_t i = 0; i < (size_t)n; i++) {
        struct ha_dump_name dn;
        size_t len = strlen(e[i].name), j = i + 1;

        /* Only "<stem>.<pid>...": another stem with dots is not ours. */
        if (!ha_dumpname_parse(e[i].name, &dn) ||
            strchr(e[i].name + strlen(head), '.') == NULL)
            continue;
        k[n_kept] = (struct kept){i,     i + 1, e[i].mtime, dn.seq,
                                  e[i].size, dn.pid, -1, false, false};
        read_memory(dir, e[i].name, &k[n_kept]);
        /* Names that extend this one sort right after it; its sidecars
         * are those that go on with a '.'. */
        for (; j < (size_t)n && strncmp(e[j].name, e[i].name, len) == 0;
             j++)
            if (e[j].name[len] == '.')
                k[n_kept].bytes += e[j].size;
        k[n_kept].end = j;
        total += k[n_kept].bytes;
        n_kept++;
    }
    qsort(k, n_kept, sizeof(*k), older_first);
    hold(k, n_kept, (long)getpid());
    count = n_kept;
    /* The newest always stays: it is the one just written. Held dumps
     * count, but stay. */
    while (count > 1 && first + 1 < n_kept &&
           ((max_count > 0 && (long long)count > max_count) ||
            (max_bytes > 0 && total > max_bytes))) {
        struct kept *o = &k[first++];
        int len = snprintf(path, sizeof(path), "%s/%s", dir, e[o->at].name);

        if (o->held || len < 0 || (size_t)len >= sizeof(path))
            continue;
        if (unlink(path) != 0 && errno != ENOENT) {
            ha_log_warn("dump retention: cannot remove %s: %s", path,
                        strerror(errno));
            continue;
        }
        for (size_t j = o->at + 1; j < o->end; j++) {
            char side[PATH_MAX];
            size_t dlen = strlen(e[o->at].name);

            if (e[j].name[dlen] == '.' &&
                snprintf(side, sizeof(side), "%s/%s", dir, e[j].name) <
                    (int)sizeof(side))
                unlink(side);
        }
        count--;
        total -= o->bytes;
        removed++;
        ha_log_info("dump retention: removed %s (%lld bytes); %zu dumps, "
                    "%lld bytes kept (dump_retention_count = %lld, "
                    "dump_retention_bytes = %lld)",
                    path, o->bytes, count, total, max_count, max_bytes);
    }
    free(k);
    free(e);
    return removed;
}

long long
ha_dumpfiles_free_bytes(const char *prefix)
{
    char dir[PATH_MAX];
    const char *stem;
    struct statvfs sv;

    if (split_prefix(prefix, dir, sizeof(dir), &stem) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (statvfs(dir, &sv) != 0)
        return -1;
    return (long long)sv.f_bavail * (long long)sv.f_frsize;
}

int
ha_dumpfiles_drop_automatic(const char *prefix, long pid, time_t since)
{
    char dir[PATH_MAX], path[PATH_MAX];
    const char *stem;
    struct dirent *de;
    int dropped = 0;
    DIR *d;

    if (split_prefix(prefix, dir, sizeof(dir), &stem) != 0 ||
        (d = opendir(dir)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        struct ha_dump_name dn;
        struct stat st;
        int n;

        if (strncmp(de->d_name, stem, strlen(stem)) != 0 ||
            !ha_dumpname_parse(de->d_name, &dn) || dn.pid != pid ||
            (strcmp(dn.kind, "interval") != 0 &&
             strcmp(dn.kind, "high-water") != 0))
            continue;
        n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(path) || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode) || st.st_mtime < since)
            continue;
        if (unlink(path) == 0) {
            sidecars(dir, de->d_name, true);
            dropped++;
            ha_log_warn("dump housekeeping: removed %s, written by jemalloc "
                        "while free space is below dump_min_free_bytes",
                        path);
        }
    }
    closedir(d);
    return dropped;
}
