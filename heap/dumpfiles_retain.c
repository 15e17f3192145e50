/* SPDX-License-Identifier: MIT
 *
 * Retention (see dumpfiles.h): the oldest dumps and their side files
 * removed past dump_retention_count or dump_retention_bytes, each run's
 * peak dump and a gone run's limit dumps held; the free space of the
 * dump directory; automatic dumps dropped when it runs low.
 */

#include "heap/dumpfiles.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "prof/dumpmem.h"
#include "prof/dumpname.h"
#include "heap/dumpfiles_int.h"

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
    size_t at;  /* the dump: entries[at] */
    size_t end; /* names extending it: entries[at + 1 ..
                   end), sidecars those going on with '.' */
    struct timespec mtime;
    long long seq;
    long long bytes; /* the dump and its sidecars */
    long long pid;
    int64_t resident; /* <dump>.mem's; -1 unknown */
    bool limit;       /* a limit dump (trigger "limit") */
    bool held;        /* out of rotation */
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
        (fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
        return;
    n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n > 0 && ha_dumpmem_parse(buf, (size_t)n, &m, err, sizeof(err)) == 0) {
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
        bool over =
            pids[p] != self && kill((pid_t)pids[p], 0) != 0 && errno == ESRCH;
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
                                   (int64_t)k[best].mtime.tv_sec * 1000000000 +
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
    if (ha_dumpfiles_split_prefix(prefix, dir, sizeof(dir), &stem) != 0)
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
        k[n_kept] = (struct kept){i,      i + 1, e[i].mtime, dn.seq, e[i].size,
                                  dn.pid, -1,    false,      false};
        read_memory(dir, e[i].name, &k[n_kept]);
        /* Names that extend this one sort right after it; its sidecars
         * are those that go on with a '.'. */
        for (; j < (size_t)n && strncmp(e[j].name, e[i].name, len) == 0; j++)
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

    if (ha_dumpfiles_split_prefix(prefix, dir, sizeof(dir), &stem) != 0) {
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

    if (ha_dumpfiles_split_prefix(prefix, dir, sizeof(dir), &stem) != 0 ||
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
