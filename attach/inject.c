/* SPDX-License-Identifier: MIT
 *
 * Loading the agent into a running process with ptrace(2) (inject.h).
 *
 * Why our own injector and not gdb (heaptrack's way). gdb is an 11 MB
 * package that pulls in libpython, and what it does while the target waits
 * is its own: it stops every thread at once, reads the symbols of every
 * object (gdb 13.1 making one dlopen() call in an idle redis-server: 1.1 s,
 * redis's worst PING latency 789-857 ms; this tool: 2-28 ms) and takes
 * its breakpoint where its scripting puts it. This injector stops one thread
 * only, for the length of one dlopen(), and chooses where: the other threads
 * never stop, nothing is read from the target while it is held that was not
 * read before, and every step below is measured.
 *
 * Where the thread is taken: in, or just back from, a wait (epoll_wait,
 * poll, select, accept, a sleep, sigsuspend, waiting for a child:
 * ha_inject_safe_syscall). A thread blocked there holds no lock of the
 * loader's (ld.so never waits that way) nor of jemalloc's (which never
 * does), so the dlopen() it is made to run cannot deadlock on a lock its own
 * thread holds: the hazard kubo/injector's README warns of when dlopen() is
 * called from an arbitrary stop, and the reason memray and heaptrack take
 * their breakpoint on an allocator's entry. A wait is a better point than an
 * allocator entry: no byte of code is patched (a breakpoint must be, and
 * every other thread stopped while it is), and an event loop reaches it
 * every turn. The thread is taken by PTRACE_INTERRUPT when /proc shows it
 * blocked in a wait, else followed from system call to system call
 * (PTRACE_SYSCALL) until it returns from one, else left alone (a thread busy
 * in a loop with no wait, or blocked in a lock, is never taken) and another
 * tried, for at most plan->search_ms.
 *
 * What is done to it, all from that stop:
 *   1. its registers (PTRACE_GETREGS) and extended state (AVX and the
 *      rest: PTRACE_GETREGSET NT_X86_XSTATE) saved;
 *   2. system calls made through the very `syscall` instruction it
 *      stopped after (two bytes before its rip; no code is written):
 *      mmap of a private 1 MiB region (a stack and the strings; the
 *      thread's own stack is never touched), rt_sigprocmask blocking
 *      every signal (no handler of the host's runs inside the load,
 *      and a pthread_cancel() cannot act there);
 *   3. calls, each returning to address 0, which faults into a stop we
 *      catch: __errno_location() (errno is kept), dlopen(agent,
 *      RTLD_NOW) (dlerror() when it fails), heapadmin_agent_attach();
 *   4. errno written back, the signal mask restored, the region
 *      unmapped, registers and extended state set back as saved, and
 *      the thread detached. The kernel then restarts the wait where it
 *      was interrupted, as after any stop (epoll_wait returns EINTR, as
 *      after SIGSTOP and SIGCONT: signal(7)).
 * A signal sent to that thread while it is held is kept and sent again
 * (tgkill) once it is released. No dlclose(): the agent stays loaded
 * (it is linked -z nodelete), as heaptrack's and memray's do.
 *
 * The cost to the host: one thread does not run its own code for
 * held_ms (measured and returned); the others run on. On a busy machine
 * that thread waits for a CPU at every step, so while our steps run its
 * nice value is -20 (set back before the agent's entry, whose new
 * thread would inherit it, and before the release): beside stress-ng,
 * 20 attaches' median hold went from 7.3 to 2.4 ms, the longest from 292
 * to 80 ms (bench/attach-stress, interleaved). A tracer that
 * dies while the thread runs injected code would leave it to return to
 * address 0: main.c blocks the signals that end a process by default
 * while the thread is held, and only SIGKILL remains.
 *
 * x86_64 only: the registers, the `syscall` instruction and the calling
 * convention are that architecture's; elsewhere this file compiles to a
 * refusal.
 */
#include "attach/inject.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/procparse.h"
#include "core/clock.h"
#include "core/smallfile.h"
#include "core/util.h"

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

#if !defined(__x86_64__)

int
ha_inject_agent(const struct ha_inject_plan *plan,
                struct ha_inject_result *res, char *err, size_t errlen)
{
    (void)plan;
    memset(res, 0, sizeof(*res));
    ha_err_set(err, errlen, "heapadmin-attach loads the agent on x86_64 "
                            "only");
    return -1;
}

#else /* x86_64 */

#include <sys/user.h>

#define REGION_SIZE (1u << 20) /* stack and strings in the target */
#define REGION_SIGSET 0        /* offsets in it: every signal */
#define REGION_OLDSET 8        /* the thread's mask, kept */
#define REGION_MSG 64          /* the agent's message */
#define REGION_PATH 2048       /* the agent's path */
#define REGION_REQ 8192        /* the request */
#define REGION_REQ_MAX 32768
#define XSTATE_MAX 16384       /* AMX's state is 11 KiB */
#define WAIT_SLICE_MS 20       /* a thread followed to its next wait is
                                  looked at this often when it blocks */
#define THREAD_BUDGET_MS 1000  /* ... for at most this long each */
#define RELEASE_WAIT_MS 5000   /* a thread asked to stop that does not
                                  (uninterruptible I/O): given up */
#define CODE_SEG_64 0x33       /* the x86_64 Linux user code segment */
#define EFLAGS_TF 0x100u
#define EFLAGS_DF 0x400u
#define PENDING_MAX 16

/* One thread of the target, traced. */
struct tracee {
    pid_t pid, tid;
    int pending[PENDING_MAX];  /* signals kept for after the release */
    unsigned n_pending;
    unsigned lost;             /* kept signals that did not fit */
};

/* ------------------------------------------------------------------
 * Low level: time, memory, waits
 * ------------------------------------------------------------------ */

/* Fractional: the steps it times (dlopen, the attach) take well under
 * a millisecond on a quiet host. */
static double
now_ms(void)
{
    return (double)ha_clock_ns() / 1e6;
}

static int
mem_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
    struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};

    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n
               ? 0
               : -1;
}

static int
mem_write(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
    struct iovec local = {(void *)buf, n},
                 remote = {(void *)(uintptr_t)addr, n};

    return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)n
               ? 0
               : -1;
}

static void
on_alarm(int sig)
{
    (void)sig; /* only interrupts waitpid() */
}

/* Waits up to timeout_ms (< 0: for ever) for a state change of t.
 * Returns 1 with *status, 0 on timeout, -1 when waitpid() fails. */
static int
wait_for(const struct tracee *t, int *status, int timeout_ms)
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

/* What a stop was. */
enum stop_kind {
    STOP_INTERRUPT,   /* PTRACE_INTERRUPT's (PTRACE_EVENT_STOP, SIGTRAP) */
    STOP_GROUP,       /* a group stop (SIGSTOP and kin) */
    STOP_SYSCALL,     /* entry or exit of a system call */
    STOP_SIGNAL,      /* a signal about to be delivered */
    STOP_GONE         /* the thread or process exited */
};

static enum stop_kind
kind_of(int status, int *sig)
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
static void
keep_signal(struct tracee *t, int sig)
{
    for (unsigned i = 0; i < t->n_pending; i++)
        if (t->pending[i] == sig && sig < SIGRTMIN)
            return; /* standard signals do not queue */
    if (t->n_pending < PENDING_MAX)
        t->pending[t->n_pending++] = sig;
    else
        t->lost++;
}

/* ------------------------------------------------------------------
 * Stopping a thread at a safe point
 * ------------------------------------------------------------------ */

/* Whether t, stopped with regs, is in or just back from a wait: its last
 * entry to the kernel was that system call (orig_rax) and the two bytes
 * before rip are the `syscall` instruction that made it. A thread
 * stopped anywhere else entered the kernel last by an interrupt or a
 * fault (orig_rax -1). */
static bool
at_safe_point(const struct tracee *t, const struct user_regs_struct *r)
{
    uint8_t insn[2];

    return r->cs == CODE_SEG_64 &&
           ha_inject_safe_syscall((long)r->orig_rax) &&
           mem_read(t->pid, r->rip - 2, insn, 2) == 0 && insn[0] == 0x0f &&
           insn[1] == 0x05;
}

/* Detaches t, which made no change yet, and sends it what it was kept
 * from. */
static void
release_untouched(struct tracee *t, int deliver)
{
    if (ptrace(PTRACE_DETACH, t->tid, NULL,
               (void *)(uintptr_t)deliver) != 0 &&
        errno == ESRCH) {
        /* Running, not stopped: stop it first, to detach. */
        int status, sig;

        (void)ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
        while (wait_for(t, &status, RELEASE_WAIT_MS) == 1) {
            enum stop_kind k = kind_of(status, &sig);

            if (k == STOP_GONE)
                return;
            if (k == STOP_SIGNAL)
                keep_signal(t, sig);
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
static int
take_thread(struct tracee *t, double budget_ms, struct user_regs_struct *regs,
            bool *blocked, unsigned *stops, char *err, size_t errlen)
{
    double deadline = now_ms() + budget_ms;
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
        release_untouched(t, 0);
        return -1;
    }
    for (;;) {
        double left = deadline - now_ms();
        int w = wait_for(t, &status, interrupting ? RELEASE_WAIT_MS
                                                  : WAIT_SLICE_MS);
        enum stop_kind k;
        int deliver = 0;

        if (w < 0) {
            ha_err_set(err, errlen, "waitpid: %s", strerror(errno));
            return -1;
        }
        if (w == 0) {
            if (interrupting) {
                release_untouched(t, 0);
                return 0; /* it would not stop (D state) */
            }
            /* Blocked in the kernel: a look where. */
            (void)ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
            interrupting = true;
            continue;
        }
        k = kind_of(status, &sig);
        if (k == STOP_GONE) {
            ha_err_set(err, errlen, "the process exited");
            return -1;
        }
        if (k == STOP_INTERRUPT)
            interrupting = false;
        if (k == STOP_GROUP) {
            release_untouched(t, 0);
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
            release_untouched(t, deliver);
            return 0;
        }
        if (ptrace(PTRACE_SYSCALL, t->tid, NULL,
                   (void *)(uintptr_t)deliver) != 0) {
            ha_err_set(err, errlen, "ptrace(PTRACE_SYSCALL): %s",
                       strerror(errno));
            release_untouched(t, 0);
            return -1;
        }
    }
}

/* The threads of pid, best first: those blocked in a wait now (the
 * main thread first), then those running, the main thread first. A
 * thread blocked in anything else (a lock, a read) is not tried. */
static size_t
candidates(pid_t pid, pid_t *out, size_t max)
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

/* ------------------------------------------------------------------
 * Work in the held thread
 * ------------------------------------------------------------------ */

/* The stop after a step or call of ours, signals not ours kept.
 * Returns 0 with *sig the stop's signal and *regs, or -1. */
static int
next_own_stop(struct tracee *t, int want, struct user_regs_struct *regs,
              char *err, size_t errlen)
{
    for (;;) {
        int status, sig;
        enum stop_kind k;

        if (wait_for(t, &status, -1) != 1) {
            ha_err_set(err, errlen, "waitpid: %s", strerror(errno));
            return -1;
        }
        k = kind_of(status, &sig);
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
            keep_signal(t, sig);
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
static int
do_syscall(struct tracee *t, const struct user_regs_struct *saved, long nr,
           const uint64_t args[6], int64_t *ret, char *err, size_t errlen)
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
static int
do_call(struct tracee *t, const struct user_regs_struct *saved, uint64_t fn,
        uint64_t a0, uint64_t a1, uint64_t a2, uint64_t stack_top,
        uint64_t *ret, char *err, size_t errlen)
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
    if (mem_write(t->pid, r.rsp, &zero, sizeof(zero)) != 0) {
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

/* The state the held thread's work needs. */
struct held {
    struct tracee *t;
    struct user_regs_struct regs;  /* as taken */
    uint8_t xstate[XSTATE_MAX];    /* its extended state */
    size_t xstate_len;             /* 0: saved with GETFPREGS instead */
    struct user_fpregs_struct fp;
    uint64_t region;               /* our mapping, 0 if none */
    bool masked;                   /* its signal mask replaced */
    uint64_t errno_addr;           /* 0 if not known */
    int errno_value;
    bool reniced;                  /* its nice value is -20 for now */
    int nice;                      /* ... and was this */
};

/* While the thread runs our steps, it runs first among the host's: a
 * busy machine would otherwise keep it waiting at every step. Back to
 * its own value for the agent's entry (the agent's thread, made there,
 * inherits it) and before the release. */
static void
boost(struct held *h, bool on)
{
    if (on && !h->reniced) {
        errno = 0;
        h->nice = getpriority(PRIO_PROCESS, (id_t)h->t->tid);
        h->reniced = errno == 0 &&
                     setpriority(PRIO_PROCESS, (id_t)h->t->tid, -20) == 0;
    } else if (!on && h->reniced) {
        (void)setpriority(PRIO_PROCESS, (id_t)h->t->tid, h->nice);
        h->reniced = false;
    }
}

static int
save_state(struct held *h, char *err, size_t errlen)
{
    struct iovec iov = {h->xstate, sizeof(h->xstate)};

    if (ptrace(PTRACE_GETREGSET, h->t->tid, (void *)NT_X86_XSTATE, &iov) ==
        0) {
        h->xstate_len = iov.iov_len;
        return 0;
    }
    h->xstate_len = 0;
    if (ptrace(PTRACE_GETFPREGS, h->t->tid, NULL, &h->fp) != 0) {
        ha_err_set(err, errlen, "saving the thread's FPU state: %s",
                   strerror(errno));
        return -1;
    }
    return 0;
}

/* Gives back everything step 2 and 3 changed, then the registers.
 * Returns 0, or -1 with err (the registers are set back regardless). */
static int
restore(struct held *h, char *err, size_t errlen)
{
    uint64_t a[6] = {0};
    int64_t ret;
    int rc = 0;

    if (h->errno_addr != 0 &&
        mem_write(h->t->pid, h->errno_addr, &h->errno_value,
                  sizeof(h->errno_value)) != 0)
        rc = -1;
    if (h->masked) {
        a[0] = SIG_SETMASK;
        a[1] = h->region + REGION_OLDSET;
        a[2] = 0;
        a[3] = 8;
        if (do_syscall(h->t, &h->regs, SYS_rt_sigprocmask, a, &ret, err,
                       errlen) != 0 ||
            ret != 0)
            rc = -1;
    }
    if (h->region != 0) {
        a[0] = h->region;
        a[1] = REGION_SIZE;
        if (do_syscall(h->t, &h->regs, SYS_munmap, a, &ret, err, errlen) !=
                0 ||
            ret != 0)
            rc = -1;
    }
    if (h->xstate_len > 0) {
        struct iovec iov = {h->xstate, h->xstate_len};

        if (ptrace(PTRACE_SETREGSET, h->t->tid, (void *)NT_X86_XSTATE,
                   &iov) != 0)
            rc = -1;
    } else if (ptrace(PTRACE_SETFPREGS, h->t->tid, NULL, &h->fp) != 0) {
        rc = -1;
    }
    if (ptrace(PTRACE_SETREGS, h->t->tid, NULL, &h->regs) != 0)
        rc = -1;
    if (rc != 0 && (err == NULL || err[0] == '\0'))
        ha_err_set(err, errlen, "the thread's state could not all be set "
                                "back");
    return rc;
}

/* Steps 2 and 3 (see the top). */
static int
load(const struct ha_inject_plan *plan, struct held *h,
     struct ha_inject_result *res, char *err, size_t errlen)
{
    uint64_t a[6] = {0}, ret, top, all = ~(uint64_t)0;
    size_t plen = strlen(plan->agent_path) + 1,
           rlen = strlen(plan->request) + 1;
    int64_t sret;
    double t0;

    if (plen > REGION_REQ - REGION_PATH || rlen > REGION_REQ_MAX) {
        ha_err_set(err, errlen, "the agent's path or the request is too "
                                "long");
        return -1;
    }
    a[0] = 0;
    a[1] = REGION_SIZE;
    a[2] = PROT_READ | PROT_WRITE;
    a[3] = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    a[4] = (uint64_t)-1;
    a[5] = 0;
    if (do_syscall(h->t, &h->regs, SYS_mmap, a, &sret, err, errlen) != 0)
        return -1;
    if (sret < 0 && sret > -4096) {
        ha_err_set(err, errlen, "mmap in the target: %s", strerror(-(int)sret));
        return -1;
    }
    h->region = (uint64_t)sret;
    top = h->region + REGION_SIZE;
    if (mem_write(h->t->pid, h->region + REGION_SIGSET, &all, 8) != 0 ||
        mem_write(h->t->pid, h->region + REGION_PATH, plan->agent_path,
                  plen) != 0 ||
        mem_write(h->t->pid, h->region + REGION_REQ, plan->request, rlen) !=
            0) {
        ha_err_set(err, errlen, "writing to the target: %s", strerror(errno));
        return -1;
    }
    a[0] = SIG_SETMASK;
    a[1] = h->region + REGION_SIGSET;
    a[2] = h->region + REGION_OLDSET;
    a[3] = 8;
    if (do_syscall(h->t, &h->regs, SYS_rt_sigprocmask, a, &sret, err,
                   errlen) != 0)
        return -1;
    if (sret != 0) {
        ha_err_set(err, errlen, "rt_sigprocmask in the target: %s",
                   strerror(-(int)sret));
        return -1;
    }
    h->masked = true;
    if (do_call(h->t, &h->regs, plan->errno_fn, 0, 0, 0, top, &ret, err,
                errlen) != 0)
        return -1;
    if (ret != 0 && mem_read(h->t->pid, ret, &h->errno_value,
                             sizeof(h->errno_value)) == 0)
        h->errno_addr = ret;
    t0 = now_ms();
    if (do_call(h->t, &h->regs, plan->dlopen_fn,
                h->region + REGION_PATH, RTLD_NOW, 0, top, &ret, err,
                errlen) != 0)
        return -1;
    res->dlopen_ms = now_ms() - t0;
    if (ret == 0) {
        uint64_t msg = 0;

        if (do_call(h->t, &h->regs, plan->dlerror_fn, 0, 0, 0, top, &msg,
                    err, errlen) == 0 &&
            msg != 0 &&
            mem_read(h->t->pid, msg, res->message,
                     sizeof(res->message) - 1) != 0) {
            /* A string near the end of a mapping: byte by byte. */
            size_t i;

            for (i = 0; i + 1 < sizeof(res->message); i++)
                if (mem_read(h->t->pid, msg + i, res->message + i, 1) != 0 ||
                    res->message[i] == '\0')
                    break;
            res->message[i] = '\0';
        }
        res->message[sizeof(res->message) - 1] = '\0';
        ha_err_set(err, errlen, "dlopen() in the target failed: %s",
                   res->message[0] != '\0' ? res->message : "no reason");
        return -1;
    }
    res->loaded = true;
    {
        /* The handle is the object's struct link_map, whose first field
         * (<link.h>, public) is its load bias. */
        uint64_t bias;

        if (mem_read(h->t->pid, ret, &bias, sizeof(bias)) != 0) {
            ha_err_set(err, errlen, "reading the agent's link map: %s",
                       strerror(errno));
            return -1;
        }
        t0 = now_ms();
        boost(h, false);
        if (do_call(h->t, &h->regs, bias + plan->attach_value,
                    h->region + REGION_REQ, h->region + REGION_MSG,
                    REGION_PATH - REGION_MSG, top, &ret, err, errlen) != 0)
            return -1;
        res->attach_ms = now_ms() - t0;
        boost(h, true);
    }
    res->attach_rc = (int)(int32_t)ret;
    if (mem_read(h->t->pid, h->region + REGION_MSG, res->message,
                 sizeof(res->message)) != 0)
        res->message[0] = '\0';
    res->message[sizeof(res->message) - 1] = '\0';
    return 0;
}

/* ------------------------------------------------------------------
 * The whole
 * ------------------------------------------------------------------ */

int
ha_inject_agent(const struct ha_inject_plan *plan,
                struct ha_inject_result *res, char *err, size_t errlen)
{
    static struct held h;   /* 16 KiB of extended state: not on the stack */
    struct sigaction sa, old_sa;
    struct tracee t;
    pid_t tids[64];
    size_t n;
    double start = now_ms(), deadline = start + plan->search_ms, taken;
    int rc = -1, took = 0;

    memset(res, 0, sizeof(*res));
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid() is cut short */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old_sa);
    memset(&t, 0, sizeof(t));
    t.pid = plan->pid;
    while (took == 0 && now_ms() < deadline) {
        n = candidates(plan->pid, tids, HA_ARRAY_SIZE(tids));
        if (n == 0) {
            usleep(2000); /* every thread blocked elsewhere: a moment */
            continue;
        }
        for (size_t i = 0; i < n && took == 0 && now_ms() < deadline; i++) {
            double budget = deadline - now_ms();

            if (budget > THREAD_BUDGET_MS)
                budget = THREAD_BUDGET_MS;
            memset(&h, 0, sizeof(h));
            t.tid = tids[i];
            t.n_pending = t.lost = 0;
            h.t = &t;
            took = take_thread(&t, budget, &h.regs, &res->blocked,
                               &res->syscall_stops, err, errlen);
            if (took < 0)
                goto done;
        }
    }
    if (took == 0) {
        ha_err_set(err, errlen,
                   "no thread reached a safe point (a wait: epoll_wait, "
                   "poll, select, accept, a sleep) within %u ms: the "
                   "process is busy without waiting, or every thread is "
                   "blocked in a lock or a read; nothing was changed",
                   plan->search_ms);
        goto done;
    }
    taken = now_ms();
    res->search_ms = taken - start;
    res->tid = t.tid;
    res->syscall_nr = (long)h.regs.orig_rax;
    if (save_state(&h, err, errlen) != 0) {
        release_untouched(&t, 0);
        goto done;
    }
    boost(&h, true);
    rc = load(plan, &h, res, err, errlen);
    {
        char rerr[256] = "";

        if (restore(&h, rerr, sizeof(rerr)) != 0) {
            if (rc == 0)
                ha_err_set(err, errlen, "%s", rerr);
            rc = -1;
        }
    }
    boost(&h, false);
    if (ptrace(PTRACE_DETACH, t.tid, NULL, NULL) != 0 && rc == 0) {
        ha_err_set(err, errlen, "PTRACE_DETACH: %s", strerror(errno));
        rc = -1;
    }
    res->held_ms = now_ms() - taken;
    for (unsigned i = 0; i < t.n_pending; i++)
        (void)syscall(SYS_tgkill, t.pid, t.tid, t.pending[i]);
    res->signals_requeued = t.n_pending + t.lost;
done:
    sigaction(SIGALRM, &old_sa, NULL);
    return rc;
}

#endif /* x86_64 */
