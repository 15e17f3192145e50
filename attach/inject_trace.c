/* SPDX-License-Identifier: MIT
 *
 * The ptrace mechanics under the injector: the target's memory, waits
 * with a timeout, what a stop was, and a system call or a function call
 * run in the held thread until its own stop comes back. Kept apart from
 * the choice of thread (inject_take.c) and the sequence run in it
 * (inject.c) so that each step of those reads as the plan at the top of
 * inject.c, with the register-level detail of x86_64 in one place.
 */
#include "attach/inject_int.h"

#if defined(__x86_64__)

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "core/clock.h"
#include "core/util.h"

#define EFLAGS_TF 0x100u
#define EFLAGS_DF 0x400u

/* Fractional: the steps it times (dlopen, the attach) take well under
 * a millisecond on a quiet host. */
double
ha_inject_now_ms(void)
{
    return (double)ha_clock_ns() / 1e6;
}

int
ha_inject_mem_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
    struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};

    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n
               ? 0
               : -1;
}

int
ha_inject_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
    struct iovec local = {(void *)buf, n},
                 remote = {(void *)(uintptr_t)addr, n};

    return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)n
               ? 0
               : -1;
}

/* Waits up to timeout_ms (< 0: for ever) for a state change of t.
 * Returns 1 with *status, 0 on timeout, -1 when waitpid() fails. */
int
ha_inject_wait_for(const struct tracee *t, int *status, int timeout_ms)
{
    struct itimerval it;
    pid_t r;
    int saved;

    memset(&it, 0, sizeof(it));
    if (timeout_ms >= 0) {
        it.it_value.tv_sec = timeout_ms / 1000;
        it.it_value.tv_usec = (timeout_ms % 1000) * 1000 + 1;
        setitimer(ITIMER_REAL, &it, NULL);
    }
    r = waitpid(t->tid, status, __WALL);
    saved = errno;
    if (timeout_ms >= 0) {
        memset(&it, 0, sizeof(it));
        setitimer(ITIMER_REAL, &it, NULL);
    }
    if (r == t->tid)
        return 1;
    errno = saved;
    return saved == EINTR ? 0 : -1;
}

enum stop_kind
ha_inject_kind_of(int status, int *sig)
{
    *sig = 0;
    if (!WIFSTOPPED(status))
        return STOP_GONE;
    *sig = WSTOPSIG(status);
    if ((status >> 16) == PTRACE_EVENT_STOP)
        return *sig == SIGTRAP ? STOP_INTERRUPT : STOP_GROUP;
    if (*sig == (SIGTRAP | 0x80))
        return STOP_SYSCALL;
    return STOP_SIGNAL;
}

/* Keeps sig to send again once the thread is released. */
void
ha_inject_keep_signal(struct tracee *t, int sig)
{
    for (unsigned i = 0; i < t->n_pending; i++)
        if (t->pending[i] == sig && sig < SIGRTMIN)
            return; /* standard signals do not queue */
    if (t->n_pending < PENDING_MAX)
        t->pending[t->n_pending++] = sig;
    else
        t->lost++;
}

/* The stop after a step or call of ours, signals not ours kept.
 * Returns 0 with *sig the stop's signal and *regs, or -1. */
static int
next_own_stop(struct tracee *t, int want, struct user_regs_struct *regs,
              char *err, size_t errlen)
{
    for (;;) {
        int status, sig;
        enum stop_kind k;

        if (ha_inject_wait_for(t, &status, -1) != 1) {
            ha_err_set(err, errlen, "waitpid: %s", strerror(errno));
            return -1;
        }
        k = ha_inject_kind_of(status, &sig);
        if (k == STOP_GONE) {
            ha_err_set(err, errlen, "the process exited");
            return -1;
        }
        if (ptrace(PTRACE_GETREGS, t->tid, NULL, regs) != 0) {
            ha_err_set(err, errlen, "PTRACE_GETREGS: %s", strerror(errno));
            return -1;
        }
        if (k == STOP_SIGNAL && sig == want)
            return 0;
        if (k == STOP_SIGNAL &&
            (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
             sig == SIGFPE)) {
            ha_err_set(err, errlen, "the injected call faulted (signal %d "
                                    "at %#llx)",
                       sig, (unsigned long long)regs->rip);
            return -1;
        }
        if (k == STOP_SIGNAL)
            ha_inject_keep_signal(t, sig);
        /* A group stop or an interrupt: go on with what we do. */
        if (ptrace(want == SIGTRAP ? PTRACE_SINGLESTEP : PTRACE_CONT,
                   t->tid, NULL, NULL) != 0) {
            ha_err_set(err, errlen, "ptrace: %s", strerror(errno));
            return -1;
        }
    }
}

/* Runs system call nr with args through the `syscall` instruction at
 * saved->rip - 2. Returns 0 with *ret (a negative errno on failure), or
 * -1 with err. */
int
ha_inject_do_syscall(struct tracee *t, const struct user_regs_struct *saved,
                     long nr, const uint64_t args[6], int64_t *ret, char *err,
                     size_t errlen)
{
    struct user_regs_struct r = *saved;
    uint64_t gadget = saved->rip - 2;

    r.rip = gadget;
    r.rax = (uint64_t)nr;
    r.orig_rax = (uint64_t)-1; /* no restart of the interrupted wait */
    r.rdi = args[0];
    r.rsi = args[1];
    r.rdx = args[2];
    r.r10 = args[3];
    r.r8 = args[4];
    r.r9 = args[5];
    r.eflags &= ~(unsigned long long)(EFLAGS_TF | EFLAGS_DF);
    for (;;) {
        if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r) != 0 ||
            ptrace(PTRACE_SINGLESTEP, t->tid, NULL, NULL) != 0) {
            ha_err_set(err, errlen, "ptrace: %s", strerror(errno));
            return -1;
        }
        if (next_own_stop(t, SIGTRAP, &r, err, errlen) != 0)
            return -1;
        if (r.rip == gadget + 2)
            break;
        if (r.rip != gadget) {
            ha_err_set(err, errlen, "a step of system call %ld ended at "
                                    "%#llx",
                       nr, (unsigned long long)r.rip);
            return -1;
        }
        /* Stopped before it ran (a signal came first): again. */
        r.rax = (uint64_t)nr;
        r.orig_rax = (uint64_t)-1;
    }
    *ret = (int64_t)r.rax;
    return 0;
}

/* Calls fn(a0, a1, a2) on the stack that ends at stack_top, returning
 * to address 0. Returns 0 with *ret (rax), or -1 with err. */
int
ha_inject_do_call(struct tracee *t, const struct user_regs_struct *saved,
                  uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2,
                  uint64_t stack_top, uint64_t *ret, char *err, size_t errlen)
{
    struct user_regs_struct r = *saved;
    uint64_t zero = 0;

    r.rip = fn;
    r.rdi = a0;
    r.rsi = a1;
    r.rdx = a2;
    r.rax = 0;
    r.orig_rax = (uint64_t)-1;
    /* At a function's entry rsp + 8 is 16-byte aligned (the SysV ABI);
     * the return address, 0, is the word at rsp. */
    r.rsp = (stack_top & ~(uint64_t)15) - 8;
    r.eflags &= ~(unsigned long long)(EFLAGS_TF | EFLAGS_DF);
    if (ha_inject_mem_write(t->pid, r.rsp, &zero, sizeof(zero)) != 0) {
        ha_err_set(err, errlen, "writing the call's stack: %s",
                   strerror(errno));
        return -1;
    }
    if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r) != 0 ||
        ptrace(PTRACE_CONT, t->tid, NULL, NULL) != 0) {
        ha_err_set(err, errlen, "ptrace: %s", strerror(errno));
        return -1;
    }
    {
        uint64_t back = r.rsp + 8; /* rsp once `ret` popped our 0 */

        if (next_own_stop(t, SIGSEGV, &r, err, errlen) != 0)
            return -1;
        if (r.rip != 0 || r.rsp != back) {
            ha_err_set(err, errlen, "the injected call faulted at %#llx",
                       (unsigned long long)r.rip);
            return -1;
        }
    }
    *ret = r.rax;
    return 0;
}

#endif /* x86_64 */
