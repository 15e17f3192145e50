/* SPDX-License-Identifier: MIT
 *
 * What the agent does in a fork() child (pthread_atfork). The child
 * inherits the admin instance but not its thread, whose event loop, locks
 * and epoll descriptor are the parent's (epoll instances are shared
 * across fork: a DEL from the child would remove the parent's
 * registration). So the child never touches it: heapadmin_abandon()
 * closes only the descriptors it proves are its own (listeners, the
 * loop's epoll and pipe, the log), and the rest is leaked. Then, by
 * policy:
 *
 *   follow       the child serves once the parent it was forked from has
 *                exited: the daemonizing fork (redis --daemonize yes) gets
 *                the endpoint, a child whose parent lives on (redis'
 *                BGSAVE, a helper, nginx's workers) never does. It waits
 *                for that exit without a timer (a pidfd the kernel
 *                wakes it on) and for a bounded time: a daemonizing
 *                parent exits at once, so a parent alive past the start
 *                delay and HA_AGENT_FOLLOW_WAIT_MS more lives on, and the
 *                child's agent thread ends there. An unserved child
 *                costs nothing after that: no thread, no timer.
 *   per-process  every child serves on its own endpoint (its pid in the
 *                socket name), after the start delay: varnishd's cache
 *                process, nghttpx's and nginx's workers hold the heap
 *                that matters.
 *   none         children never serve.
 *
 * The parent only counts its forks (children.c looks at the children
 * later, from the admin thread): the handler runs on whichever of the
 * host's threads forked.
 */
#include "agent/fork.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/log.h"
#include "core/clock.h"
#include "include/heapadmin.h"

static struct ha_agent_fork_hooks hooks;
static pid_t parent_at_fork;
static _Atomic unsigned long forks;

/* The fork waits until no thread of the agent's holds a lock the child
 * needs (heapadmin_fork_prepare: SQLite's, the C library's), so the
 * child never inherits one held by a thread it does not have: nginx
 * forks its workers, and daemonizes, while the agent's thread is
 * starting. */
static void
before_fork(void)
{
    parent_at_fork = getpid();
    (void)heapadmin_fork_prepare();
}

static void
in_parent(void)
{
    heapadmin_fork_parent();
    atomic_fetch_add(&forks, 1);
}

static void
in_child(void)
{
    bool usable = heapadmin_fork_child() != 0;

    hooks.forget_inherited();
    if (!usable && hooks.policy != HA_AGENT_FORK_NONE) {
        ha_agent_log(1, "not served: forked while a thread of the "
                        "parent's agent was inside a call that holds a "
                        "lock the child would need (SQLite's, the C "
                        "library's) for over a second; a later fork "
                        "child is served as usual");
        return;
    }
    switch (hooks.policy) {
    case HA_AGENT_FORK_FOLLOW:
        hooks.launch(hooks.delay_ms, true, parent_at_fork);
        break;
    case HA_AGENT_FORK_PER_PROCESS:
        hooks.launch(hooks.delay_ms, false, 0);
        break;
    case HA_AGENT_FORK_NONE:
    case HA_AGENT_FORK_MAX:
        break;
    }
}

#define PARENT_POLL_MS 100 /* without a pidfd (a kernel before 5.3, a
                              seccomp filter): getppid() this often */

static void
nap_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A pidfd of parent (readable once it has exited: the kernel wakes the
 * poll, nothing wakes before), or -1. Its identity goes to *st: the
 * host may close every descriptor meanwhile and reuse the number. */
static int
open_parent(pid_t parent, struct stat *st)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, parent, 0);

    if (fd >= 0 && fstat(fd, st) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
#else
    (void)parent;
    (void)st;
    return -1;
#endif
}

/* Whether fd is still the descriptor open_parent returned. */
static bool
still_ours(int fd, const struct stat *st)
{
    struct stat now;

    return fd >= 0 && fstat(fd, &now) == 0 && now.st_dev == st->st_dev &&
           now.st_ino == st->st_ino;
}

bool
ha_agent_await_parent(pid_t parent, unsigned delay_ms)
{
    int64_t deadline = ha_clock_ms() + delay_ms + HA_AGENT_FOLLOW_WAIT_MS;
    struct stat st;
    int fd = open_parent(parent, &st);
    bool poll_fd = fd >= 0;

    /* getppid() changes when the parent exits (the child is reparented
     * before the pidfd turns readable, and before the parent's pid can
     * be reused), so it is the test; the pidfd only says when to look. */
    while (getppid() == parent) {
        int64_t left = deadline - ha_clock_ms();

        if (left <= 0)
            break;
        if (!poll_fd) {
            nap_ms(left < PARENT_POLL_MS ? left : PARENT_POLL_MS);
            continue;
        }
        {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            int r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);

            /* Woken with the parent still there: the number is not our
             * pidfd any more (closed or reused by the host). Polled
             * again, it could wake at once for ever: getppid() then. */
            if (r > 0 && getppid() == parent)
                poll_fd = false;
            else if (r < 0 && errno != EINTR)
                poll_fd = false;
        }
    }
    if (still_ours(fd, &st))
        close(fd);
    if (getppid() != parent)
        return true;
    ha_agent_log(3, "parent %ld lives on after %u ms: this fork child is "
                    "not served (HEAPADMIN_FORK=follow serves the child of "
                    "a daemonizing parent; per-process serves every "
                    "process); its agent thread ends",
                 (long)parent, delay_ms + HA_AGENT_FOLLOW_WAIT_MS);
    return false;
}

unsigned long
ha_agent_forks(void)
{
    return atomic_load(&forks);
}

void
ha_agent_count_fork(void)
{
    atomic_fetch_add(&forks, 1);
}

void
ha_agent_fork_init(const struct ha_agent_fork_hooks *h)
{
    hooks = *h;
    (void)pthread_atfork(before_fork, in_parent, in_child);
}
