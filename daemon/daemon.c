/* SPDX-License-Identifier: MIT
 *
 * Datadir, pid-file lock and daemonizing (see daemon.h).
 */
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
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
