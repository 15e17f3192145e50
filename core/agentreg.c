/* SPDX-License-Identifier: MIT
 *
 * The agents of a datadir (see agentreg.h): listing, checking, cleaning
 * and asking them over their registry sockets.
 */
#include "core/agentreg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/smallfile.h"
#include "core/users.h"
#include "core/util.h"

#define CONNECT_TIMEOUT_MS 1000 /* a local socket answers at once */

/* ------------------------------------------------------------------
 * Names and processes
 * ------------------------------------------------------------------ */

bool
ha_agentreg_parse_name(const char *name, const char *suffix, char *program,
                       size_t len, pid_t *pid)
{
    size_t n = strlen(name), s = strlen(suffix), end, dot;
    long long v = 0;

    if (n <= s || strcmp(name + n - s, suffix) != 0)
        return false;
    end = n - s;
    dot = end;
    while (dot > 0 && name[dot - 1] >= '0' && name[dot - 1] <= '9')
        dot--;
    if (dot == end || end - dot > 10 || dot < 2 || name[dot - 1] != '.' ||
        name[dot] == '0')
        return false;
    for (size_t i = dot; i < end; i++)
        v = v * 10 + (name[i] - '0');
    if (v < 1 || v > 2147483647LL || dot - 1 >= len)
        return false;
    memcpy(program, name, dot - 1);
    program[dot - 1] = '\0';
    *pid = (pid_t)v;
    return true;
}

/* The boot time, Unix seconds ("btime" in /proc/stat), or 0. It never
 * changes: read once, by whichever thread asks first (the loop and the
 * worker both may; a race reads the same value twice). The file is
 * scanned in pieces: on a host of many CPUs the line is far in. */
static long long
boot_time(void)
{
    static _Atomic long long cached;
    char buf[4096 + 32];
    size_t have = 0;
    long long v = atomic_load(&cached);
    ssize_t n;
    int fd;

    if (v > 0)
        return v;
    fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    while (v == 0 && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
        char *p;

        have += (size_t)n;
        buf[have] = '\0';
        p = strstr(buf, "btime ");
        if (p != NULL && (p == buf || p[-1] == '\n') &&
            memchr(p, '\n', have - (size_t)(p - buf)) != NULL) {
            if (sscanf(p + 6, "%lld", &v) != 1)
                v = -1;
            break;
        }
        /* Keep the last partial line for the next piece. */
        p = memrchr(buf, '\n', have);
        if (p != NULL) {
            have -= (size_t)(p - buf);
            memmove(buf, p, have);
        } else if (have > 64) {
            have = 0;
        }
    }
    close(fd);
    if (v <= 0)
        return 0;
    atomic_store(&cached, v);
    return v;
}

int64_t
ha_agentreg_started(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long start = 0;
    long long btime = 0;
    long hz = sysconf(_SC_CLK_TCK);
    int field;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0 ||
        (p = strrchr(buf, ')')) == NULL)
        return 0;
    /* Field 22 (starttime); p is at the end of field 2 (comm). */
    for (field = 2; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
        return 0;
    btime = boot_time();
    return hz > 0 && btime > 0
               ? btime + (int64_t)(start / (unsigned long long)hz)
               : 0;
}

void
ha_agentreg_self_program(char *out, size_t len)
{
    char exe[PATH_MAX];
    const char *fn = (const char *)getauxval(AT_EXECFN), *base;
    struct stat a, b;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    out[0] = '\0';
    if (n > 0) {
        exe[n] = '\0';
        base = strrchr(exe, '/');
        ha_strlcpy(out, base != NULL ? base + 1 : exe, len);
    }
    /* The name it was started as, when that is the same file (a link to
     * it): "redis-server", not the "redis-check-rdb" it links to. A
     * script run through its interpreter is named by the interpreter. */
    if (fn != NULL && stat(fn, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        base = strrchr(fn, '/');
        base = base != NULL ? base + 1 : fn;
        if (*base != '\0')
            ha_strlcpy(out, base, len);
    }
    if (out[0] == '\0')
        ha_strlcpy(out, "unknown", len);
}

/* True when pid has exited and only its exit status is left for its
 * parent to reap (state Z, or X while it is being reaped, in field 3 of
 * /proc/<pid>/stat, proc(5)): its descriptors are closed, so its socket
 * refuses as a dead agent's does, and /proc/<pid> still exists. */
static bool
proc_exited(pid_t pid)
{
    char path[64], buf[1024], *p;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0 ||
        (p = strrchr(buf, ')')) == NULL || p[1] != ' ')
        return false;
    return p[2] == 'Z' || p[2] == 'X';
}

/* The real, effective, saved and file-system uids of pid (the kernel's
 * "Uid:" line of /proc/<pid>/status). Returns 0, or -1. */
static int
proc_uids(pid_t pid, long ids[4])
{
    char path[64], buf[4096], *p;

    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0 ||
        (p = strstr(buf, "\nUid:")) == NULL ||
        sscanf(p + 5, "%ld %ld %ld %ld", &ids[0], &ids[1], &ids[2],
               &ids[3]) != 4)
        return -1;
    return 0;
}

bool
ha_agentreg_exe_matches(const char *exe, const char *program,
                        bool (*same_file)(const char *path, void *arg),
                        void *arg)
{
    char dir[4096], alt[4096 + HA_AGENTREG_PROGRAM_MAX + 2];
    const char *slash = strrchr(exe, '/'), *base;
    size_t n = strlen(exe), d;
    static const char deleted[] = " (deleted)";

    /* An upgraded binary reads "<path> (deleted)": the process still
     * runs the file it was started from. */
    if (n > sizeof(deleted) - 1 &&
        strcmp(exe + n - (sizeof(deleted) - 1), deleted) == 0)
        n -= sizeof(deleted) - 1;
    if (slash == NULL || n >= sizeof(dir) || program[0] == '\0' ||
        strchr(program, '/') != NULL)
        return false;
    base = slash + 1;
    if ((size_t)(exe + n - base) == strlen(program) &&
        memcmp(base, program, strlen(program)) == 0)
        return true;
    /* The agent names a process after the path it was started as when
     * that is a link to the running file (redis-server, a link to
     * redis-check-rdb): the same directory must hold that name, and it
     * must be the very file the kernel says runs. */
    d = (size_t)(slash - exe);
    memcpy(dir, exe, d);
    dir[d] = '\0';
    snprintf(alt, sizeof(alt), "%s/%s", dir, program);
    return same_file != NULL && same_file(alt, arg);
}

/* Whether path is the file /proc/<*pid>/exe runs. */
static bool
same_as_exe(const char *path, void *arg)
{
    const pid_t *pid = arg;
    char proc[64];
    struct stat a, b;

    snprintf(proc, sizeof(proc), "/proc/%ld/exe", (long)*pid);
    return stat(path, &a) == 0 && stat(proc, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether the kernel's program of a->pid (/proc/<pid>/exe) is the one
 * its name says; false with a->why when not, or not provable. */
static bool
program_proven(struct ha_agent *a)
{
    char path[64], exe[4096];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/exe", (long)a->pid);
    n = readlink(path, exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(a->why, sizeof(a->why),
                 "cannot read %s (%.60s): its program is not proven",
                 path, strerror(errno));
        return false;
    }
    exe[n] = '\0';
    if (ha_agentreg_exe_matches(exe, a->program, same_as_exe, &a->pid))
        return true;
    snprintf(a->why, sizeof(a->why),
             "its name says program '%.40s' but /proc/%ld/exe is %.100s",
             a->program, (long)a->pid, exe);
    return false;
}

/* ------------------------------------------------------------------
 * Connecting
 * ------------------------------------------------------------------ */

/* Connects fd to path; a path too long for sun_path goes through a
 * descriptor of its directory. */
static int
connect_path(int fd, const char *path)
{
    struct sockaddr_un sun;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int dfd = -1, rc;

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    if (strlen(path) < sizeof(sun.sun_path)) {
        memcpy(sun.sun_path, path, strlen(path) + 1);
    } else {
        if (slash == NULL || (size_t)(slash - path) >= sizeof(dir)) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return -1;
        if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path),
                             "/proc/self/fd/%d/%s", dfd, slash + 1) >=
            sizeof(sun.sun_path)) {
            close(dfd);
            errno = ENAMETOOLONG;
            return -1;
        }
    }
    rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        int soerr = 0;
        socklen_t sl = sizeof(soerr);

        if (poll(&p, 1, CONNECT_TIMEOUT_MS) <= 0) {
            errno = ETIMEDOUT;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
                   soerr == 0) {
            rc = 0;
        } else {
            errno = soerr != 0 ? soerr : EIO;
        }
    }
    if (dfd >= 0) {
        int e = errno;

        close(dfd);
        errno = e;
    }
    return rc;
}

int
ha_agentreg_connect(const struct ha_agent *a, char *err, size_t errlen)
{
    struct ucred cr;
    socklen_t sl = sizeof(cr);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0) {
        ha_err_set(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect_path(fd, a->path) != 0) {
        ha_err_set(err, errlen, "%s: connect: %s", a->path, strerror(errno));
        close(fd);
        return -1;
    }
    /* Believed only if the process and user are those the name and the
     * directory promise: a link planted at the name leads elsewhere. */
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) != 0 ||
        cr.pid != a->pid || cr.uid != a->uid) {
        ha_err_set(err, errlen,
                   "%s: the peer is not process %ld of uid %u (it is "
                   "process %ld of uid %u); not asked",
                   a->path, (long)a->pid, (unsigned)a->uid, (long)cr.pid,
                   (unsigned)cr.uid);
        close(fd);
        return -1;
    }
    return fd;
}

/* ------------------------------------------------------------------
 * Checking, listing, cleaning
 * ------------------------------------------------------------------ */

void
ha_agentreg_check(struct ha_agent *a)
{
    char path[64], err[256];
    long ids[4];
    int fd;

    a->why[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%ld", (long)a->pid);
    if (access(path, F_OK) != 0) {
        a->state = HA_AGENT_GONE;
        snprintf(a->why, sizeof(a->why), "process %ld is gone",
                 (long)a->pid);
        return;
    }
    /* Killed and not yet reaped by its parent (which may be busy, or
     * slow on a loaded machine): dead all the same. Without this, its
     * young socket's refusal reads as an agent still starting. */
    if (proc_exited(a->pid)) {
        a->state = HA_AGENT_GONE;
        snprintf(a->why, sizeof(a->why),
                 "process %ld has exited (its parent has not reaped it yet)",
                 (long)a->pid);
        return;
    }
    a->started = ha_agentreg_started(a->pid);
    /* A process that switches its effective user back and forth (squid
     * keeps root as its real or saved uid) is still its user's: any of
     * the kernel's uids will do; none of them is another process. */
    if (proc_uids(a->pid, ids) == 0 && (uid_t)ids[0] != a->uid &&
        (uid_t)ids[1] != a->uid && (uid_t)ids[2] != a->uid) {
        a->state = HA_AGENT_GONE;
        a->foreign = true;
        snprintf(a->why, sizeof(a->why),
                 "pid %ld now runs as uid %ld, not %u: another process",
                 (long)a->pid, ids[1], (unsigned)a->uid);
        return;
    }
    /* Its .sock without its .http: the process lives as the directory's
     * user; if it runs the program the name says, its agent socket was
     * deleted (the agent binds it again within a second), else the
     * entry is stale. */
    if (a->no_socket) {
        if (program_proven(a)) {
            a->state = HA_AGENT_NO_SOCKET;
            snprintf(a->why, sizeof(a->why),
                     "socket missing: %.120s was deleted; the agent makes "
                     "it again within a second",
                     a->path);
        } else {
            a->state = HA_AGENT_GONE;
            a->foreign = true;
        }
        return;
    }
    /* The pid lives as the right user: is it the process that bound the
     * socket? Only the connection says (a pid reused by another program,
     * an agent that stopped serving). Nothing is sent. */
    fd = ha_agentreg_connect(a, err, sizeof(err));
    if (fd < 0 && strstr(err, "Connection refused") != NULL) {
        struct stat st;

        /* Bound but not yet listening: a process starting right now
         * (several start together on one datadir). Not stale. */
        if (lstat(a->path, &st) == 0 &&
            time(NULL) - st.st_mtime < HA_AGENTREG_YOUNG_S) {
            a->state = HA_AGENT_SERVING;
            snprintf(a->why, sizeof(a->why), "starting");
            return;
        }
    }
    /* Only what proves the entry dead makes it stale: nothing listening
     * on an old socket, or another process behind it. A listener whose
     * backlog is full (EAGAIN: it is starting, or busy, while many
     * siblings ask at once) or slow to answer lives: removing its
     * socket would take a served process off the datadir. */
    if (fd < 0 && strstr(err, "Connection refused") == NULL &&
        strstr(err, "the peer is not") == NULL) {
        a->state = HA_AGENT_SERVING;
        snprintf(a->why, sizeof(a->why), "busy: %.150s", err);
        return;
    }
    if (fd < 0) {
        a->state = HA_AGENT_GONE;
        a->foreign = strstr(err, "the peer is not") != NULL;
        snprintf(a->why, sizeof(a->why), "%.159s",
                 strstr(err, "Connection refused") != NULL
                     ? "nothing listens on its socket: pid reused, or the "
                       "agent stopped"
                     : err);
        return;
    }
    close(fd);
    /* The process is the one the name says and listens as the user the
     * directory says; its program is what the kernel says it runs, never
     * what the name claims. */
    if (!program_proven(a)) {
        a->state = HA_AGENT_MISMATCH;
        return;
    }
    a->state = HA_AGENT_SERVING;
}

static int
cmp_agent(const void *x, const void *y)
{
    const struct ha_agent *a = x, *b = y;
    int c = strcmp(a->path, b->path);

    if (a->uid != b->uid)
        return a->uid < b->uid ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return c;
}

/* Adds the entries of directory dfd (path dir, owner uid) to the list. */
static int
scan_dir(int dfd, const char *dir, uid_t uid, struct ha_agent **list,
         size_t *n, size_t *cap)
{
    DIR *d;
    struct dirent *e;
    char user[64];
    int fd = dup(dfd);

    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    /* The descriptor is a dup: its offset is shared, start over. */
    rewinddir(d);
    (void)ha_users_name(uid, user, sizeof(user));
    while ((e = readdir(d)) != NULL) {
        struct ha_agent *a;
        struct stat st;
        char program[HA_AGENTREG_PROGRAM_MAX];
        pid_t pid;

        if (!ha_agentreg_parse_name(e->d_name, HA_AGENTREG_HTTP, program,
                                    sizeof(program), &pid) ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISSOCK(st.st_mode))
            continue;
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 16;
            struct ha_agent *g = realloc(*list, c * sizeof(*g));

            if (g == NULL) {
                closedir(d);
                return -1;
            }
            *list = g;
            *cap = c;
        }
        a = &(*list)[(*n)++];
        memset(a, 0, sizeof(*a));
        a->pid = pid;
        ha_strlcpy(a->program, program, sizeof(a->program));
        snprintf(a->path, sizeof(a->path), "%s/%s", dir, e->d_name);
        a->uid = uid;
        ha_strlcpy(a->user, user, sizeof(a->user));
    }
    /* Then the .sock files whose .http is gone: a process whose agent
     * socket was deleted is "socket missing", not absent. */
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        struct ha_agent *a;
        struct stat st;
        char program[HA_AGENTREG_PROGRAM_MAX], http[300];
        pid_t pid;

        if (!ha_agentreg_parse_name(e->d_name, HA_AGENTREG_SQL, program,
                                    sizeof(program), &pid) ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISSOCK(st.st_mode))
            continue;
        snprintf(http, sizeof(http), "%s.%ld" HA_AGENTREG_HTTP, program,
                 (long)pid);
        if (fstatat(dfd, http, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
            errno != ENOENT)
            continue;
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 16;
            struct ha_agent *g = realloc(*list, c * sizeof(*g));

            if (g == NULL) {
                closedir(d);
                return -1;
            }
            *list = g;
            *cap = c;
        }
        a = &(*list)[(*n)++];
        memset(a, 0, sizeof(*a));
        a->pid = pid;
        a->no_socket = true;
        ha_strlcpy(a->program, program, sizeof(a->program));
        snprintf(a->path, sizeof(a->path), "%s/%s", dir, http);
        a->uid = uid;
        ha_strlcpy(a->user, user, sizeof(a->user));
    }
    closedir(d);
    return 0;
}

/* A directory a registry may live in: a real directory (not a link)
 * that no one but its owner may write to. */
static bool
usable_dir(const struct stat *st)
{
    return S_ISDIR(st->st_mode) && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* Calls fn for the datadir and each per-user directory in it. */
static int
for_each_dir(const char *datadir,
             int (*fn)(void *arg, int dfd, const char *dir, uid_t uid),
             void *arg)
{
    int top = open(datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    DIR *d;
    struct dirent *e;
    int fd, rc = 0;

    if (top < 0)
        return -1;
    if (fstat(top, &st) != 0 || !usable_dir(&st)) {
        close(top);
        return -1;
    }
    if (fn(arg, top, datadir, st.st_uid) != 0)
        rc = -1;
    fd = dup(top);
    if (fd < 0 || (d = fdopendir(fd)) == NULL) {
        if (fd >= 0)
            close(fd);
        close(top);
        return rc;
    }
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        char sub[4096];
        int sfd;

        if (e->d_name[0] == '.' ||
            (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
            continue;
        /* O_NOFOLLOW: a link in the datadir is never a registry. */
        sfd = openat(top, e->d_name,
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
            continue;
        if (fstat(sfd, &st) == 0 && usable_dir(&st) &&
            (size_t)snprintf(sub, sizeof(sub), "%s/%s", datadir,
                             e->d_name) < sizeof(sub) &&
            fn(arg, sfd, sub, st.st_uid) != 0)
            rc = -1;
        close(sfd);
    }
    closedir(d);
    close(top);
    return rc;
}

struct list_ctx {
    struct ha_agent *list;
    size_t n, cap;
};

static int
list_one(void *arg, int dfd, const char *dir, uid_t uid)
{
    struct list_ctx *c = arg;

    return scan_dir(dfd, dir, uid, &c->list, &c->n, &c->cap);
}

int
ha_agentreg_list(const char *datadir, struct ha_agent **out, size_t *n,
                 char *err, size_t errlen)
{
    struct list_ctx c = {NULL, 0, 0};

    *out = NULL;
    *n = 0;
    if (for_each_dir(datadir, list_one, &c) != 0 && c.n == 0 &&
        access(datadir, R_OK | X_OK) != 0) {
        ha_err_set(err, errlen, "%s: %s", datadir, strerror(errno));
        free(c.list);
        return -1;
    }
    for (size_t i = 0; i < c.n; i++)
        ha_agentreg_check(&c.list[i]);
    if (c.n > 1)
        qsort(c.list, c.n, sizeof(*c.list), cmp_agent);
    *out = c.list;
    *n = c.n;
    return 0;
}

struct clean_ctx {
    void (*removed)(void *arg, const char *path, const char *why);
    void *arg;
    size_t n;
};

static int
clean_one(void *arg, int dfd, const char *dir, uid_t uid)
{
    struct clean_ctx *c = arg;
    struct ha_agent *list = NULL;
    size_t n = 0, cap = 0;

    /* Root cleans every user's directory (names only); others their
     * own. */
    if (geteuid() != 0 && geteuid() != uid)
        return 0;
    if (scan_dir(dfd, dir, uid, &list, &n, &cap) != 0) {
        free(list);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct ha_agent *a = &list[i];
        char name[HA_AGENTREG_PROGRAM_MAX + 32];

        ha_agentreg_check(a);
        if (a->state != HA_AGENT_GONE)
            continue;
        snprintf(name, sizeof(name), "%s.%ld%s", a->program, (long)a->pid,
                 HA_AGENTREG_HTTP);
        if (unlinkat(dfd, name, 0) == 0) {
            c->n++;
            if (c->removed != NULL)
                c->removed(c->arg, a->path, a->why);
        }
        /* Its default MySQL socket, if it is one: said too, file by
         * file. */
        snprintf(name, sizeof(name), "%s.%ld%s", a->program, (long)a->pid,
                 HA_AGENTREG_SQL);
        {
            struct stat st;
            char full[4096 + sizeof(name)];

            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISSOCK(st.st_mode) && unlinkat(dfd, name, 0) == 0 &&
                c->removed != NULL) {
                snprintf(full, sizeof(full), "%s/%s", dir, name);
                c->removed(c->arg, full, a->why);
            }
        }
    }
    free(list);
    return 0;
}

size_t
ha_agentreg_clean(const char *datadir,
                  void (*removed)(void *arg, const char *path,
                                  const char *why),
                  void *arg)
{
    struct clean_ctx c = {removed, arg, 0};

    (void)for_each_dir(datadir, clean_one, &c);
    return c.n;
}

