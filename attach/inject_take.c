/* SPDX-License-Identifier: MIT
 *
 * Which thread of the target is taken, and where: only one blocked in
 * (or just back from) a wait, the one point where it holds no lock the
 * loader or jemalloc needs (see inject.c), found from /proc and by
 * following it from system call to system call for a bounded time. A
 * thread that does not get there is given back untouched, with any
 * signal it was kept from, so a refusal costs the host nothing.
 */
#include "attach/inject_take.h"

#include <sys/syscall.h>

bool
ha_inject_safe_syscall(long nr)
{
#if defined(__x86_64__)
    switch (nr) {
    case SYS_poll:
    case SYS_select:
    case SYS_pause:
    case SYS_nanosleep:
    case SYS_accept:
    case SYS_wait4:
    case SYS_rt_sigtimedwait:
    case SYS_epoll_wait:
    case SYS_clock_nanosleep:
    case SYS_waitid:
    case SYS_pselect6:
    case SYS_ppoll:
    case SYS_epoll_pwait:
    case SYS_accept4:
    case SYS_rt_sigsuspend:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
        return true;
    default:
        return false;
    }
#else
    (void)nr;
    return false;
#endif
}

#if defined(__x86_64__)

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "attach/inject_int.h"
#include "attach/procparse.h"
#include "core/smallfile.h"
#include "core/util.h"

#define WAIT_SLICE_MS 20       /* a thread followed to its next wait is
                                  looked at this often when it blocks */
#define RELEASE_WAIT_MS 5000   /* a thread asked to stop that does not
                                  (uninterruptible I/O): given up */
#define CODE_SEG_64 0x33       /* the x86_64 Linux user code segment */

/* Whether t, stopped with regs, is in or just back from a wait: its last
 * entry to the kernel was that system call (orig_rax) and the two bytes
 * before rip are the `syscall` instruction that made it. A thread
 * stopped anywhere else entered the kernel last by an interrupt or a
 * fault (orig_rax -1). */
static bool
at_safe_point(const struct tracee *t, const struct user_regs_struct *r)
{
    uint8_t insn[2];

    return r->cs == CODE_SEG_64 && ha_inject_safe_syscall((long)r->orig_rax) &&
           ha_inject_mem_read(t->pid, r->rip - 2, insn, 2) == 0 &&
           insn[0] == 0x0f && insn[1] == 0x05;
}

/* Detaches t, which made no change yet, and sends it what it was kept
 * from. */
void
ha_inject_release_untouched(struct tracee *t, int deliver)
{
    if (ptrace(PTRACE_DETACH, t->tid, NULL,
               (void *)(uintptr_t)deliver) != 0 &&
        errno == ESRCH) {
        /* Running, not stopped: stop it first, to detach. */
        int status, sig;

        (void)ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
        while (ha_inject_wait_for(t, &status, RELEASE_WAIT_MS) == 1) {
            enum stop_kind k = ha_inject_kind_of(status, &sig);

            if (k == STOP_GONE)
                return;
            if (k == STOP_SIGNAL)
                ha_inject_keep_signal(t, sig);
            if (ptrace(PTRACE_DETACH, t->tid, NULL, NULL) == 0)
                break;
        }
        /* Still running after that: our exit detaches it. */
    }
    for (unsigned i = 0; i < t->n_pending; i++)
        (void)syscall(SYS_tgkill, t->pid, t->tid, t->pending[i]);
    t->n_pending = 0;
}

/* Takes thread t->tid at a safe point within budget_ms: 1 with it
 * stopped there, *regs and *blocked set (*stops counts the system-call
 * stops seen on the way); 0 when it did not get there (released,
 * untouched); -1 with err when ptrace refused or the process went. */
int
ha_inject_take_thread(struct tracee *t, double budget_ms,
                      struct user_regs_struct *regs, bool *blocked,
                      unsigned *stops, char *err, size_t errlen)
{
    double deadline = ha_inject_now_ms() + budget_ms;
    bool interrupting = true;
    int status, sig;

    if (ptrace(PTRACE_SEIZE, t->tid, NULL,
               (void *)(uintptr_t)PTRACE_O_TRACESYSGOOD) != 0) {
        ha_err_set(err, errlen, "ptrace(PTRACE_SEIZE) of thread %ld: %s",
                   (long)t->tid, strerror(errno));
        return -1;
    }
    if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) != 0) {
        ha_err_set(err, errlen, "ptrace(PTRACE_INTERRUPT): %s",
                   strerror(errno));
        ha_inject_release_untouched(t, 0);
        return -1;
    }
    for (;;) {
        double left = deadline - ha_inject_now_ms();
        int w = ha_inject_wait_for(
            t, &status, interrupting ? RELEASE_WAIT_MS : WAIT_SLICE_MS);
        enum stop_kind k;
        int deliver = 0;

        if (w < 0) {
            ha_err_set(err, errlen, "waitpid: %s", strerror(errno));
            return -1;
        }
        if (w == 0) {
            if (interrupting) {
                ha_inject_release_untouched(t, 0);
                return 0; /* it would not stop (D state) */
            }
            /* Blocked in the kernel: a look where. */
            (void)ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
            interrupting = true;
            continue;
        }
        k = ha_inject_kind_of(status, &sig);
        if (k == STOP_GONE) {
            ha_err_set(err, errlen, "the process exited");
            return -1;
        }
        if (k == STOP_INTERRUPT)
            interrupting = false;
        if (k == STOP_GROUP) {
            ha_inject_release_untouched(t, 0);
            ha_err_set(err, errlen, "the process is being stopped (job "
                                    "control signal %d): continue it "
                                    "first", sig);
            return -1;
        }
        if (k == STOP_SIGNAL) {
            deliver = sig; /* not ours: on its way, as if untraced */
        } else if (ptrace(PTRACE_GETREGS, t->tid, NULL, regs) == 0) {
            bool exiting = true;

            if (k == STOP_SYSCALL) {
                struct __ptrace_syscall_info si;

                (*stops)++;
                /* At an entry the call has not run: taking the thread
                 * there would skip it. Only exits count. */
                if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid,
                           (void *)sizeof(si), &si) <= 0 ||
                    si.op != PTRACE_SYSCALL_INFO_EXIT)
                    exiting = false;
            }
            if (exiting && at_safe_point(t, regs)) {
                *blocked = k == STOP_INTERRUPT;
                return 1;
            }
        }
        if (left <= 0) {
            ha_inject_release_untouched(t, deliver);
            return 0;
        }
        if (ptrace(PTRACE_SYSCALL, t->tid, NULL,
                   (void *)(uintptr_t)deliver) != 0) {
            ha_err_set(err, errlen, "ptrace(PTRACE_SYSCALL): %s",
                       strerror(errno));
            ha_inject_release_untouched(t, 0);
            return -1;
        }
    }
}

/* The threads of pid, best first: those blocked in a wait now (the
 * main thread first), then those running, the main thread first. A
 * thread blocked in anything else (a lock, a read) is not tried. */
size_t
ha_inject_candidates(pid_t pid, pid_t *out, size_t max)
{
    char path[64], text[256];
    struct dirent *d;
    size_t n_wait = 0, n_run = 0;
    pid_t waiting[256], running[256];
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    dir = opendir(path);
    if (dir == NULL)
        return 0;
    while ((d = readdir(dir)) != NULL) {
        long tid = strtol(d->d_name, NULL, 10);
        long nr;

        if (tid <= 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/task/%ld/syscall", (long)pid,
                 tid);
        if (ha_smallfile_read(path, text, sizeof(text)) <= 0)
            continue;
        nr = ha_procparse_syscall(text);
        if (ha_inject_safe_syscall(nr) && n_wait < 256) {
            if (tid == pid && n_wait > 0) {
                waiting[n_wait++] = waiting[0];
                waiting[0] = (pid_t)tid;
            } else {
                waiting[n_wait++] = (pid_t)tid;
            }
        } else if ((nr == -2 || nr == -1) && n_run < 256) {
            if (tid == pid && n_run > 0) {
                running[n_run++] = running[0];
                running[0] = (pid_t)tid;
            } else {
                running[n_run++] = (pid_t)tid;
            }
        }
    }
    closedir(dir);
    {
        size_t n = 0;

        for (size_t i = 0; i < n_wait && n < max; i++)
            out[n++] = waiting[i];
        for (size_t i = 0; i < n_run && n < max; i++)
            out[n++] = running[i];
        return n;
    }
}

#endif /* x86_64 */
