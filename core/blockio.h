/* SPDX-License-Identifier: MIT
 *
 * Calls that may block on a disk (open, stat, read, fsync, a lock on a
 * file, mkdir), made so that a disk that stops answering (a hard-mounted
 * NFS server that went away, a FUSE server that hangs, a dying disk)
 * never holds up the event loop. Such a call cannot be interrupted: the
 * thread inside it stays there until the disk answers. So it runs on an
 * I/O thread of its own (an ha_worker, "heapadmin-io"), and whoever
 * asked waits for it a bounded time, the timeout (admin_variables.
 * disk_timeout_ms):
 *   - a task (core/task.h: a statement, a login, an HTTP request) waits
 *     as a task: the loop serves everyone else meanwhile, and the wait
 *     ends at the timeout, at KILL, at its deadline or at a shutdown;
 *   - the loop's thread outside a task (a connection being freed, the
 *     start-up) blocks, but for the timeout at most;
 *   - any other thread (a worker, a host's thread) runs the call itself:
 *     it is not the loop.
 * A call that does not finish in time is abandoned, not undone: it
 * still runs when the disk answers, on its own copies of what it needs,
 * and its discard function then tidies up. Once the I/O thread has been
 * inside one call longer than the timeout, the disk is taken as hung and
 * new calls fail at once, saying so, rather than queue behind it.
 *
 * Which I/O thread serves a call: the current task's env (task.h
 * env->blockio), else the one bound to the calling thread
 * (ha_blockio_bind: the engine binds its loop's thread).
 */
#ifndef HA_BLOCKIO_H
#define HA_BLOCKIO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ha_worker;

struct ha_blockio {
    struct ha_worker *worker;      /* the I/O thread: runs the calls */
    _Atomic int64_t timeout_ms;    /* the longest wait; 0: no bound */
    _Atomic int64_t stop_by_ns;    /* the owner stops: no wait goes past
                                      this (CLOCK_MONOTONIC); 0: none */
};

/* Binds b to the calling thread (NULL unbinds): its calls outside a task
 * go to b's thread, the caller blocking for b's timeout at most. Returns
 * the previous binding. */
struct ha_blockio *ha_blockio_bind(struct ha_blockio *b);

/* Unbinds b from the calling thread if it is the one bound there (b is
 * about to go; a binding made after it is left as it is). */
void ha_blockio_unbind(const struct ha_blockio *b);

/* Whether a call made here now would go to an I/O thread (the loop's
 * thread, bound or in a task) rather than run on the calling thread. */
bool ha_blockio_offloading(void);

/* Runs run(arg) as the header says; what names it for the watchers
 * (SHOW PROCESSLIST's row of a call that hangs, the log): static.
 * Returns 0 once run(arg) has returned (arg is the caller's again), or
 * -1 with err set ("the datadir's disk did not answer within
 * disk_timeout_ms = 2000 (statting /data/heapadmin.db)", "... has not
 * answered for 12 s ...", or the task stopped waiting): arg then belongs
 * to discard (NULL: nothing to do), called on the loop's thread once
 * run(arg) has ended, or never if it never does. */
int ha_blockio_call(const char *what, void (*run)(void *),
                    void (*discard)(void *), void *arg, char *err,
                    size_t errlen);

/* For work nobody waits for (closing a file, unlocking it): queued on the
 * I/O thread when ha_blockio_offloading(), after the calls queued
 * before it (so a file's close comes after its last read even when that
 * read was abandoned); run here otherwise. done(arg) (may be NULL) runs
 * after run(arg), on the thread that calls it: the loop's when queued.
 * If the I/O thread stops before it, only done(arg) runs. */
void ha_blockio_post(const char *what, void (*run)(void *),
                     void (*done)(void *), void *arg);

/* ha_blockio_call's bounded wait for a job on w (the disk worker, whose
 * writes to the datadir keep their order there): -1 at once when w has
 * been in one job past the timeout, or when the wait passed it, with err
 * saying so; -1 too when the task stopped waiting. On -1, arg is
 * discard's. Without a task (or a worker), run(arg) runs here. */
int ha_blockio_call_on(struct ha_worker *w, const char *what,
                       void (*run)(void *), void (*discard)(void *),
                       void *arg, char *err, size_t errlen);

/* For a stop, when no I/O thread is left: runs run(arg) on a thread of
 * its own and waits for it timeout_ms at most. Returns 0 once it has
 * returned; -1 when it has not (it is left to run, detached, and arg
 * with it: the caller must not free arg; free_fn(arg), may be NULL, is
 * called by that thread once run returns), or when no thread could be
 * started (run was not called; free_fn(arg) was). On 0, free_fn(arg) has
 * been called. */
int ha_blockio_run_detached(void (*run)(void *), void (*free_fn)(void *),
                            void *arg, int64_t timeout_ms);

/* For a wait begun now on another thread that writes to the disk (the
 * dump worker): the CLOCK_MONOTONIC deadline it must end by, the
 * timeout from now or the stop's deadline, whichever comes first; 0:
 * none. *timeout_ms gets the timeout (may be NULL). */
int64_t ha_blockio_deadline(int64_t *timeout_ms);

/* Whether w (the dump worker) has been inside one job for at least the
 * timeout of the calling thread's I/O thread: true with *what and
 * *for_ms. Loop thread. */
bool ha_blockio_worker_stuck(struct ha_worker *w, const char **what,
                             int64_t *for_ms);

/* close(fd) as ha_blockio_post does it: a close of a file on a network
 * or FUSE filesystem waits for the server (its flush), never on the
 * loop. */
void ha_blockio_close(int fd);

/* The I/O thread has been inside one call for at least the timeout (the
 * disk is taken as hung): true with *what and *for_ms. Any thread. */
bool ha_blockio_stuck(const struct ha_blockio *b, const char **what,
                      int64_t *for_ms);

#endif /* HA_BLOCKIO_H */
