/* SPDX-License-Identifier: MIT
 *
 * Dumps in memory (see dumpfiles.h): this process's private directory
 * in /dev/shm that jemalloc writes its dumps into while it holds its
 * locks, kept while an engine runs and cleared at the last stop; the
 * directories of processes that are gone removed at start; and the
 * memory a dump was taken at (resident, <dump>.mem).
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

#include "core/forkguard.h"
#include "core/log.h"
#include "core/util.h"
#include "prof/dumpmem.h"
#include "prof/dumpname.h"
#include "heap/dumpfiles_int.h"

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
static int mem_users; /* engines running (hold/stop) */

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
                S_ISLNK(st.st_mode)   ? "a symlink"
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

    if ((rc = ha_dumpfiles_split_prefix(prefix, dir, sizeof(dir), &stem)) !=
            0 ||
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
    if (mem_pid == (long)getpid() && mem_dir[0] != '\0' && rmdir(mem_dir) == 0)
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

/* Removes the in-memory dump directories of processes that are gone (a
 * kill -9 between jemalloc's write and the copy) and this pid's own (an
 * earlier run's, same pid): "heapadmin.<pid>.<random>", or
 * "heapadmin.<pid>" of a heapadmin before issue 35. Only this user's
 * directories, never through a link; this process's own is kept. */
void
ha_dumpfiles_clean_memory(long pid)
{
    char path[PATH_MAX], file[PATH_MAX], mine[PATH_MAX];
    struct dirent *de;
    DIR *d = opendir(MEMORY_ROOT);

    if (d == NULL)
        return;
    ha_forkguard_enter();
    pthread_mutex_lock(&mem_lock);
    ha_strlcpy(mine, mem_pid == (long)getpid() ? mem_dir : "", sizeof(mine));
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
        if ((*end != '\0' && (*end != '.' || strlen(end) != 7)) || owner <= 0 ||
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
