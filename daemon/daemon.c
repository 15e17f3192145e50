/* SPDX-License-Identifier: MIT
 *
 * Datadir, pid-file lock and daemonizing (see daemon.h).
 */
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The start-up pipe's first byte: the daemon's verdict; after a failure,
 * the message follows. */
#define READY_OK '+'
#define READY_FAILED '-'


/* heapadmind sits above the library's public header only, so it keeps
 * its own copy of the error-buffer helper. */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int
ha_daemon_lock_pidfile(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    char buf[32];
    ssize_t n;

    if (fd < 0) {
        set_err(err, errlen, "cannot open pid file %s: %s", path,
                   strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    if (errno != EWOULDBLOCK) {
        set_err(err, errlen, "cannot lock pid file %s: %s", path,
                   strerror(errno));
        close(fd);
        return -1;
    }
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    set_err(err, errlen,
               "another heapadmind (pid %s) is running on this datadir: %s "
               "is locked",
               buf[0] ? buf : "unknown", path);
    close(fd);
    return -1;
}

int
ha_daemon_write_pid(int fd, pid_t pid)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%ld\n", (long)pid);

    if (ftruncate(fd, 0) != 0)
        return -1;
    if (pwrite(fd, buf, (size_t)n, 0) != n)
        return -1;
    return 0;
}

int
ha_daemon_start(char *err, size_t errlen)
{
    int pfd[2];
    pid_t pid;

    if (pipe2(pfd, O_CLOEXEC) != 0) {
        set_err(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        set_err(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid > 0) {
        /* Original process: wait for the daemon's verdict. */
        char msg[1024];
        size_t have = 0;
        ssize_t n;
        close(pfd[1]);
        while (have < sizeof(msg) - 1 &&
               (n = read(pfd[0], msg + have, sizeof(msg) - 1 - have)) != 0) {
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            have += (size_t)n;
        }
        msg[have] = '\0';
        waitpid(pid, NULL, 0); /* the intermediate child exits at once */
        /* The first byte is the verdict (see ha_daemon_ready), so no
         * error text can read as success. */
        if (have >= 1 && msg[0] == READY_OK)
            _exit(0);
        fprintf(stderr, "heapadmind: %s\n",
                have > 1 ? msg + 1 : "the daemon exited during start-up");
        _exit(1);
    }
    close(pfd[0]);
    if (setsid() < 0) {
        ha_daemon_ready(pfd[1], "setsid failed");
        _exit(1);
    }
    /* Fork again so the daemon is not a session leader and can never
     * reacquire a controlling terminal. */
    pid = fork();
    if (pid < 0) {
        ha_daemon_ready(pfd[1], "second fork failed");
        _exit(1);
    }
    if (pid > 0)
        _exit(0);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        if (devnull > STDERR_FILENO)
            close(devnull);
    }
    umask(027);
    return pfd[1];
}

void
ha_daemon_ready(int fd, const char *msg)
{
    char verdict = msg == NULL ? READY_OK : READY_FAILED;
    struct iovec v[2] = {
        {&verdict, 1},
        {(void *)(msg != NULL ? msg : ""), msg != NULL ? strlen(msg) : 0},
    };

    if (fd < 0)
        return;
    if (writev(fd, v, 2) < 0) {
        /* The parent is gone; nothing else to tell. */
    }
    close(fd);
}

int
ha_daemon_raise_nofile(char *msg, size_t len)
{
    struct rlimit rl;
    rlim_t was;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(msg, len, "cannot read the descriptor limit: %s",
                 strerror(errno));
        return -1;
    }
    if (rl.rlim_cur == rl.rlim_max) {
        snprintf(msg, len, "descriptor limit: %llu",
                 (unsigned long long)rl.rlim_cur);
        return 0;
    }
    was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(msg, len,
                 "cannot raise the descriptor limit from %llu to %llu: %s",
                 (unsigned long long)was, (unsigned long long)rl.rlim_max,
                 strerror(errno));
        return -1;
    }
    snprintf(msg, len,
             "descriptor limit raised from %llu to %llu (the hard limit)",
             (unsigned long long)was, (unsigned long long)rl.rlim_max);
    return 1;
}

/* An unlink left to a thread of its own (ha_daemon_unlink_within). */
struct unlinker {
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* CLOCK_MONOTONIC */
    int rc;                        /* 0 or errno, once done */
    bool done;
    bool abandoned;                /* the caller went: the thread frees */
    char path[];
};

static void
unlinker_free(struct unlinker *u)
{
    pthread_cond_destroy(&u->cv);
    pthread_mutex_destroy(&u->mu);
    free(u);
}

static void *
unlinker_main(void *arg)
{
    struct unlinker *u = arg;
    int rc = unlink(u->path) == 0 ? 0 : errno;
    bool gone;

    pthread_mutex_lock(&u->mu);
    u->rc = rc;
    u->done = true;
    gone = u->abandoned;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->mu);
    if (gone)
        unlinker_free(u);
    return NULL;
}

int
ha_daemon_unlink_within(const char *path, int timeout_ms)
{
    size_t n = strlen(path) + 1;
    struct unlinker *u = calloc(1, sizeof(*u) + n);
    pthread_condattr_t ca;
    struct timespec ts;
    sigset_t all, old;
    pthread_t th;
    int rc;

    if (u == NULL)
        return unlink(path);
    memcpy(u->path, path, n);
    pthread_mutex_init(&u->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&u->cv, &ca);
    pthread_condattr_destroy(&ca);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&th, NULL, unlinker_main, u);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        unlinker_free(u);
        return unlink(path);
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&u->mu);
    while (!u->done && pthread_cond_timedwait(&u->cv, &u->mu, &ts) == 0)
        ;
    if (!u->done) {
        u->abandoned = true;
        pthread_mutex_unlock(&u->mu);
        pthread_detach(th);
        errno = ETIMEDOUT;
        return -1;
    }
    rc = u->rc;
    pthread_mutex_unlock(&u->mu);
    pthread_join(th, NULL);
    unlinker_free(u);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------
 * Closing files at the end
 * ------------------------------------------------------------------ */

static pthread_mutex_t closing_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t closing_cv = PTHREAD_COND_INITIALIZER;
static int closing;                /* closer threads not done (mu) */

static void *
closer_main(void *arg)
{
    int fd = (int)(intptr_t)arg;

    (void)close(fd);
    pthread_mutex_lock(&closing_mu);
    closing--;
    pthread_cond_signal(&closing_cv);
    pthread_mutex_unlock(&closing_mu);
    return NULL;
}

/* Whether descriptor fd is a file or directory of some filesystem, by
 * its /proc link (which reads no filesystem). */
static bool
is_file(int fd)
{
    char link[64], to[PATH_MAX];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, to, sizeof(to) - 1);
    if (n <= 0)
        return false;
    to[n] = '\0';
    return to[0] == '/' && strncmp(to, "/dev/", 5) != 0 &&
           strncmp(to, "/proc/", 6) != 0;
}

int
ha_daemon_close_files_within(int timeout_ms)
{
    int fds[256], n = 0, left;
    struct dirent *de;
    struct timespec ts;
    sigset_t all, old;
    DIR *d = opendir("/proc/self/fd");

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL && n < (int)(sizeof(fds) / sizeof(*fds))) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);

        if (*end != '\0' || end == de->d_name || fd < 0 || fd == dirfd(d))
            continue;
        if (is_file((int)fd))
            fds[n++] = (int)fd;
    }
    closedir(d);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < n; i++) {
        pthread_t th;

        pthread_mutex_lock(&closing_mu);
        closing++;
        pthread_mutex_unlock(&closing_mu);
        if (pthread_create(&th, NULL, closer_main,
                           (void *)(intptr_t)fds[i]) != 0) {
            pthread_mutex_lock(&closing_mu);
            closing--;
            pthread_mutex_unlock(&closing_mu);
            continue; /* left for the exit */
        }
        pthread_detach(th);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&closing_mu);
    while (closing > 0 &&
           pthread_cond_timedwait(&closing_cv, &closing_mu, &ts) == 0)
        ;
    left = closing;
    pthread_mutex_unlock(&closing_mu);
    return left;
}
