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
 *
 * This file is the sequence in the held thread (steps 1 to 4) and the
 * whole; below it, inject_take.c chooses the thread and takes it at a
 * wait, and inject_trace.c holds the ptrace mechanics (the target's
 * memory, stops, one system call or function call run in the thread).
 */
#include "attach/inject.h"

#include <string.h>

#include "core/util.h"

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

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "attach/inject_int.h"

#define REGION_SIZE (1u << 20) /* stack and strings in the target */
#define REGION_SIGSET 0        /* offsets in it: every signal */
#define REGION_OLDSET 8        /* the thread's mask, kept */
#define REGION_MSG 64          /* the agent's message */
#define REGION_PATH 2048       /* the agent's path */
#define REGION_REQ 8192        /* the request */
#define REGION_REQ_MAX 32768
#define XSTATE_MAX 16384       /* AMX's state is 11 KiB */
#define THREAD_BUDGET_MS 1000  /* each thread looked at for at most this
                                  long */

static void
on_alarm(int sig)
{
    (void)sig; /* only interrupts waitpid() */
}

/* ------------------------------------------------------------------
 * Work in the held thread
 * ------------------------------------------------------------------ */

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
        ha_inject_mem_write(h->t->pid, h->errno_addr, &h->errno_value,
                            sizeof(h->errno_value)) != 0)
        rc = -1;
    if (h->masked) {
        a[0] = SIG_SETMASK;
        a[1] = h->region + REGION_OLDSET;
        a[2] = 0;
        a[3] = 8;
        if (ha_inject_do_syscall(h->t, &h->regs, SYS_rt_sigprocmask, a, &ret,
                                 err, errlen) != 0 ||
            ret != 0)
            rc = -1;
    }
    if (h->region != 0) {
        a[0] = h->region;
        a[1] = REGION_SIZE;
        if (ha_inject_do_syscall(h->t, &h->regs, SYS_munmap, a, &ret, err,
                                 errlen) != 0 ||
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
    if (ha_inject_do_syscall(h->t, &h->regs, SYS_mmap, a, &sret, err,
                             errlen) != 0)
        return -1;
    if (sret < 0 && sret > -4096) {
        ha_err_set(err, errlen, "mmap in the target: %s", strerror(-(int)sret));
        return -1;
    }
    h->region = (uint64_t)sret;
    top = h->region + REGION_SIZE;
    if (ha_inject_mem_write(h->t->pid, h->region + REGION_SIGSET, &all,
                            8) != 0 ||
        ha_inject_mem_write(h->t->pid, h->region + REGION_PATH,
                            plan->agent_path, plen) != 0 ||
        ha_inject_mem_write(h->t->pid, h->region + REGION_REQ, plan->request,
                            rlen) != 0) {
        ha_err_set(err, errlen, "writing to the target: %s", strerror(errno));
        return -1;
    }
    a[0] = SIG_SETMASK;
    a[1] = h->region + REGION_SIGSET;
    a[2] = h->region + REGION_OLDSET;
    a[3] = 8;
    if (ha_inject_do_syscall(h->t, &h->regs, SYS_rt_sigprocmask, a, &sret, err,
                             errlen) != 0)
        return -1;
    if (sret != 0) {
        ha_err_set(err, errlen, "rt_sigprocmask in the target: %s",
                   strerror(-(int)sret));
        return -1;
    }
    h->masked = true;
    if (ha_inject_do_call(h->t, &h->regs, plan->errno_fn, 0, 0, 0, top, &ret,
                          err, errlen) != 0)
        return -1;
    if (ret != 0 && ha_inject_mem_read(h->t->pid, ret, &h->errno_value,
                                       sizeof(h->errno_value)) == 0)
        h->errno_addr = ret;
    t0 = ha_inject_now_ms();
    if (ha_inject_do_call(h->t, &h->regs, plan->dlopen_fn,
                          h->region + REGION_PATH, RTLD_NOW, 0, top, &ret, err,
                          errlen) != 0)
        return -1;
    res->dlopen_ms = ha_inject_now_ms() - t0;
    if (ret == 0) {
        uint64_t msg = 0;

        if (ha_inject_do_call(h->t, &h->regs, plan->dlerror_fn, 0, 0, 0, top,
                              &msg, err, errlen) == 0 &&
            msg != 0 &&
            ha_inject_mem_read(h->t->pid, msg, res->message,
                               sizeof(res->message) - 1) != 0) {
            /* A string near the end of a mapping: byte by byte. */
            size_t i;

            for (i = 0; i + 1 < sizeof(res->message); i++)
                if (ha_inject_mem_read(h->t->pid, msg + i, res->message + i,
                                       1) != 0 ||
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

        if (ha_inject_mem_read(h->t->pid, ret, &bias, sizeof(bias)) != 0) {
            ha_err_set(err, errlen, "reading the agent's link map: %s",
                       strerror(errno));
            return -1;
        }
        t0 = ha_inject_now_ms();
        boost(h, false);
        if (ha_inject_do_call(h->t, &h->regs, bias + plan->attach_value,
                              h->region + REGION_REQ, h->region + REGION_MSG,
                              REGION_PATH - REGION_MSG, top, &ret, err,
                              errlen) != 0)
            return -1;
        res->attach_ms = ha_inject_now_ms() - t0;
        boost(h, true);
    }
    res->attach_rc = (int)(int32_t)ret;
    if (ha_inject_mem_read(h->t->pid, h->region + REGION_MSG, res->message,
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
    double start = ha_inject_now_ms(), deadline = start + plan->search_ms,
           taken;
    int rc = -1, took = 0;

    memset(res, 0, sizeof(*res));
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid() is cut short */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old_sa);
    memset(&t, 0, sizeof(t));
    t.pid = plan->pid;
    while (took == 0 && ha_inject_now_ms() < deadline) {
        n = ha_inject_candidates(plan->pid, tids, HA_ARRAY_SIZE(tids));
        if (n == 0) {
            usleep(2000); /* every thread blocked elsewhere: a moment */
            continue;
        }
        for (size_t i = 0;
             i < n && took == 0 && ha_inject_now_ms() < deadline; i++) {
            double budget = deadline - ha_inject_now_ms();

            if (budget > THREAD_BUDGET_MS)
                budget = THREAD_BUDGET_MS;
            memset(&h, 0, sizeof(h));
            t.tid = tids[i];
            t.n_pending = t.lost = 0;
            h.t = &t;
            took = ha_inject_take_thread(&t, budget, &h.regs, &res->blocked,
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
    taken = ha_inject_now_ms();
    res->search_ms = taken - start;
    res->tid = t.tid;
    res->syscall_nr = (long)h.regs.orig_rax;
    if (save_state(&h, err, errlen) != 0) {
        ha_inject_release_untouched(&t, 0);
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
    res->held_ms = ha_inject_now_ms() - taken;
    for (unsigned i = 0; i < t.n_pending; i++)
        (void)syscall(SYS_tgkill, t.pid, t.tid, t.pending[i]);
    res->signals_requeued = t.n_pending + t.lost;
done:
    sigaction(SIGALRM, &old_sa, NULL);
    return rc;
}

#endif /* x86_64 */
