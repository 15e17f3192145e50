/* SPDX-License-Identifier: MIT
 *
 * The injector's insides, shared by its files and private to them
 * (x86_64 only): the traced thread, what a stop was, and the calls that
 * cross files. They run one way, down: inject.c (the sequence in the
 * held thread, and the whole) -> inject_take.c (a thread taken at a safe
 * point) -> inject_trace.c (ptrace and the target's memory).
 */
#ifndef HA_ATTACH_INJECT_INT_H
#define HA_ATTACH_INJECT_INT_H

#if defined(__x86_64__)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define PENDING_MAX 16

/* One thread of the target, traced. */
struct tracee {
    pid_t pid, tid;
    int pending[PENDING_MAX];  /* signals kept for after the release */
    unsigned n_pending;
    unsigned lost;             /* kept signals that did not fit */
};

/* What a stop was. */
enum stop_kind {
    STOP_INTERRUPT,   /* PTRACE_INTERRUPT's (PTRACE_EVENT_STOP, SIGTRAP) */
    STOP_GROUP,       /* a group stop (SIGSTOP and kin) */
    STOP_SYSCALL,     /* entry or exit of a system call */
    STOP_SIGNAL,      /* a signal about to be delivered */
    STOP_GONE         /* the thread or process exited */
};

/* inject_trace.c: time, the target's memory, waits and stops, and one
 * system call or function call run in the held thread. */
double ha_inject_now_ms(void);
int ha_inject_mem_read(pid_t pid, uint64_t addr, void *buf, size_t n);
int ha_inject_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t n);
int ha_inject_wait_for(const struct tracee *t, int *status, int timeout_ms);
enum stop_kind ha_inject_kind_of(int status, int *sig);
void ha_inject_keep_signal(struct tracee *t, int sig);
int ha_inject_do_syscall(struct tracee *t,
                         const struct user_regs_struct *saved, long nr,
                         const uint64_t args[6], int64_t *ret, char *err,
                         size_t errlen);
int ha_inject_do_call(struct tracee *t, const struct user_regs_struct *saved,
                      uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2,
                      uint64_t stack_top, uint64_t *ret, char *err,
                      size_t errlen);

/* inject_take.c: a thread taken at a safe point, or given back. */
void ha_inject_release_untouched(struct tracee *t, int deliver);
int ha_inject_take_thread(struct tracee *t, double budget_ms,
                          struct user_regs_struct *regs, bool *blocked,
                          unsigned *stops, char *err, size_t errlen);
size_t ha_inject_candidates(pid_t pid, pid_t *out, size_t max);

#endif /* x86_64 */

#endif /* HA_ATTACH_INJECT_INT_H */
