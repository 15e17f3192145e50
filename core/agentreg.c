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
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
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

/* Reads a small /proc file into buf (NUL-terminated). */
static ssize_t
read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
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
    if (read_small(path, buf, sizeof(buf)) <= 0 ||
        (p = strrchr(buf, ')')) == NULL)
        return 0;
    /* Field 22 (starttime); p is at the end of field 2 (comm). */
    for (field = 2; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
        return 0;
    {
        static char stat[8192];
        int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, stat, sizeof(stat) - 1) : -1;

        if (fd >= 0)
            close(fd);
        if (n <= 0)
            return 0;
        stat[n] = '\0';
        p = strstr(stat, "\nbtime ");
        if (p == NULL || sscanf(p + 7, "%lld", &btime) != 1)
            return 0;
    }
    return hz > 0 ? btime + (int64_t)(start / (unsigned long long)hz) : 0;
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

/* The effective uid of pid (from /proc/<pid>/status), or -1. */
static long
proc_euid(pid_t pid)
{
    char path[64], buf[4096], *p;
    long r, e;

    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    if (read_small(path, buf, sizeof(buf)) <= 0 ||
        (p = strstr(buf, "\nUid:")) == NULL ||
        sscanf(p + 5, "%ld %ld", &r, &e) != 2)
        return -1;
    return e;
}

static void
user_name(uid_t uid, char *out, size_t len)
{
    struct passwd pw, *found = NULL;
    char buf[1024];

    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 &&
        found != NULL)
        ha_strlcpy(out, found->pw_name, len);
    else
        snprintf(out, len, "%u", (unsigned)uid);
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
    long euid;
    int fd;

    a->why[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%ld", (long)a->pid);
    if (access(path, F_OK) != 0) {
        a->state = HA_AGENT_GONE;
        snprintf(a->why, sizeof(a->why), "process %ld is gone",
                 (long)a->pid);
        return;
    }
    a->started = ha_agentreg_started(a->pid);
    euid = proc_euid(a->pid);
    if (euid >= 0 && (uid_t)euid != a->uid) {
        a->state = HA_AGENT_GONE;
        snprintf(a->why, sizeof(a->why),
                 "pid %ld now runs as uid %ld, not %u: another process",
                 (long)a->pid, euid, (unsigned)a->uid);
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
        snprintf(a->why, sizeof(a->why), "%.159s",
                 strstr(err, "Connection refused") != NULL
                     ? "nothing listens on its socket: pid reused, or the "
                       "agent stopped"
                     : err);
        return;
    }
    close(fd);
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
    user_name(uid, user, sizeof(user));
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
        /* Its default MySQL socket, if it is one. */
        snprintf(name, sizeof(name), "%s.%ld%s", a->program, (long)a->pid,
                 HA_AGENTREG_SQL);
        {
            struct stat st;

            if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISSOCK(st.st_mode))
                (void)unlinkat(dfd, name, 0);
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

/* ------------------------------------------------------------------
 * Asking: HTTP/1.0 over the registry sockets
 * ------------------------------------------------------------------ */

struct exchange {
    int fd;
    struct ha_buf out;           /* the request, sent from sent */
    size_t sent;
    struct ha_buf in;            /* the answer as read */
    bool done;
};

/* Splits a whole answer into status, headers and body. */
static void
parse_reply(struct exchange *x, struct ha_agent_reply *r)
{
    const char *s = (const char *)x->in.data, *eoh, *line, *end;
    size_t len = x->in.len, hdr_len;
    int status = 0;

    if (len == 0) {
        ha_strlcpy(r->err, "closed without an answer", sizeof(r->err));
        return;
    }
    eoh = memmem(s, len, "\r\n\r\n", 4);
    if (eoh == NULL || sscanf(s, "HTTP/1.%*d %d", &status) != 1) {
        ha_strlcpy(r->err, "not an HTTP answer", sizeof(r->err));
        return;
    }
    hdr_len = (size_t)(eoh - s) + 4;
    for (line = memchr(s, '\n', hdr_len); line != NULL && line < eoh;
         line = end) {
        const char *v;
        size_t n;

        line++;
        end = memchr(line, '\n', (size_t)(eoh + 2 - line));
        if (end == NULL)
            break;
        n = (size_t)(end - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        v = memchr(line, ':', n);
        if (v == NULL)
            continue;
        for (v++; v < line + n && *v == ' '; v++) {
        }
        if (strncasecmp(line, "Content-Type:", 13) == 0)
            snprintf(r->content_type, sizeof(r->content_type), "%.*s",
                     (int)(line + n - v), v);
        else if (strncasecmp(line, "Content-Disposition:", 20) == 0)
            snprintf(r->content_disposition,
                     sizeof(r->content_disposition), "%.*s",
                     (int)(line + n - v), v);
    }
    ha_buf_append(&r->body, s + hdr_len, len - hdr_len);
    if (ha_buf_failed(&r->body)) {
        ha_buf_free(&r->body);
        ha_strlcpy(r->err, "out of memory", sizeof(r->err));
        return;
    }
    r->status = status;
}

void
ha_agentreg_get(const struct ha_agent *agents, size_t n, const char *method,
                const char *target, const char *headers,
                const struct ha_buf *body, int timeout_ms, size_t max_body,
                struct ha_agent_reply *replies)
{
    struct exchange *xs = calloc(n ? n : 1, sizeof(*xs));
    struct pollfd *pfd = calloc(n ? n : 1, sizeof(*pfd));
    int64_t deadline = ha_clock_ms() + timeout_ms;
    size_t open_n = 0;

    for (size_t i = 0; i < n; i++) {
        memset(&replies[i], 0, sizeof(replies[i]));
        ha_buf_init(&replies[i].body);
    }
    if (xs == NULL || pfd == NULL) {
        for (size_t i = 0; i < n; i++)
            ha_strlcpy(replies[i].err, "out of memory",
                       sizeof(replies[i].err));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct exchange *x = &xs[i];

        x->fd = -1;
        ha_buf_init(&x->out);
        ha_buf_init(&x->in);
        if (agents[i].state != HA_AGENT_SERVING) {
            snprintf(replies[i].err, sizeof(replies[i].err), "%s",
                     agents[i].why[0] ? agents[i].why : "not serving");
            x->done = true;
            continue;
        }
        x->fd = ha_agentreg_connect(&agents[i], replies[i].err,
                                    sizeof(replies[i].err));
        if (x->fd < 0) {
            x->done = true;
            continue;
        }
        ha_buf_printf(&x->out,
                      "%s %s HTTP/1.0\r\nHost: agent\r\nConnection: "
                      "close\r\n%s",
                      method, target, headers != NULL ? headers : "");
        if (body != NULL)
            ha_buf_printf(&x->out, "Content-Length: %zu\r\n", body->len);
        ha_buf_append_str(&x->out, "\r\n");
        if (body != NULL && body->len > 0)
            ha_buf_append(&x->out, body->data, body->len);
        if (ha_buf_failed(&x->out)) {
            ha_strlcpy(replies[i].err, "out of memory",
                       sizeof(replies[i].err));
            close(x->fd);
            x->fd = -1;
            x->done = true;
            continue;
        }
        open_n++;
    }
    while (open_n > 0) {
        int64_t left = deadline - ha_clock_ms();
        size_t k = 0;
        int rc;

        if (left <= 0)
            break;
        for (size_t i = 0; i < n; i++) {
            if (xs[i].done)
                continue;
            pfd[k].fd = xs[i].fd;
            pfd[k].events =
                xs[i].sent < xs[i].out.len ? POLLOUT : POLLIN;
            pfd[k].revents = 0;
            k++;
        }
        rc = poll(pfd, k, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        k = 0;
        for (size_t i = 0; i < n; i++) {
            struct exchange *x = &xs[i];
            struct ha_agent_reply *r = &replies[i];
            short ev;

            if (x->done)
                continue;
            ev = pfd[k++].revents;
            if (ev == 0)
                continue;
            if (x->sent < x->out.len) {
                ssize_t w = send(x->fd, x->out.data + x->sent,
                                 x->out.len - x->sent, MSG_NOSIGNAL);

                if (w < 0 && errno != EAGAIN && errno != EINTR) {
                    snprintf(r->err, sizeof(r->err), "send: %s",
                             strerror(errno));
                    x->done = true;
                    open_n--;
                } else if (w > 0) {
                    x->sent += (size_t)w;
                }
                continue;
            }
            for (;;) {
                ssize_t got;

                if (ha_buf_reserve(&x->in, 65536) != 0) {
                    ha_strlcpy(r->err, "out of memory", sizeof(r->err));
                    x->done = true;
                    open_n--;
                    break;
                }
                got = read(x->fd, x->in.data + x->in.len, 65536);
                if (got > 0) {
                    x->in.len += (size_t)got;
                    if (x->in.len > max_body + 16384) {
                        snprintf(r->err, sizeof(r->err),
                                 "answer larger than %zu bytes", max_body);
                        x->done = true;
                        open_n--;
                        break;
                    }
                    continue;
                }
                if (got < 0 && (errno == EAGAIN || errno == EINTR))
                    break;
                if (got < 0) {
                    snprintf(r->err, sizeof(r->err), "read: %s",
                             strerror(errno));
                } else {
                    parse_reply(x, r);
                }
                x->done = true;
                open_n--;
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct exchange *x = &xs[i];

        if (!x->done)
            snprintf(replies[i].err, sizeof(replies[i].err),
                     "no answer within %d ms", timeout_ms);
        if (x->fd >= 0)
            close(x->fd);
        ha_buf_free(&x->out);
        ha_buf_free(&x->in);
    }
out:
    free(xs);
    free(pfd);
}

void
ha_agentreg_replies_free(struct ha_agent_reply *replies, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ha_buf_free(&replies[i].body);
}
