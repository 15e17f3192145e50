/* SPDX-License-Identifier: MIT
 *
 * A task: one request of a client (a MySQL command, an HTTP request) run
 * on a fiber (fiber.h) on the loop's thread, so that it can pause and let
 * the loop serve everyone else:
 *   - for a slice: it has run long enough (SQLite's progress handler
 *     calls ha_task_slice every few ms) and goes on at the loop's next
 *     pass;
 *   - to wait: for its client to take a streamed reply, or for work it
 *     handed to the worker thread (ha_task_offload), until someone calls
 *     ha_task_wake;
 * and so that it can be stopped from outside: KILL (ha_task_kill), its
 * deadline (ha_task_set_deadline: a timer wakes a waiting task), or the
 * owner's shutdown flag. A stopped task is not torn down: the code
 * running in it sees ha_task_stopped() at its next check and ends.
 *
 * Long work that cannot be cut into slices (libdw reading a library's
 * DWARF, a protobuf encode) goes to the worker thread with
 * ha_task_offload: the task waits, the loop runs on, and the task
 * resumes when the job is done, or gives up waiting when it is stopped
 * (the job's result is then discarded when it ends).
 *
 * Everything here runs on the loop's thread, except the offloaded jobs.
 */
#ifndef HA_TASK_H
#define HA_TASK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;
struct ha_fiber;
struct ha_blockio;
struct ha_fiber_pool;
struct ha_worker;

/* Why a task should stop, most urgent first. */
enum ha_task_stop {
    HA_TASK_GO = 0,        /* keep going */
    HA_TASK_SHUTDOWN,      /* the owner stops (heapadmin_stop, SIGTERM) */
    HA_TASK_KILLED,        /* KILL [QUERY], or its client went away */
    HA_TASK_TIMEOUT        /* past its deadline (max_execution_time) */
};

/* What the tasks of one owner share (the engine's executor). */
struct ha_task_env {
    struct event_base *base;
    struct ha_fiber_pool *fibers;  /* NULL: bodies run on the loop's
                                      stack, never pausing */
    struct ha_worker *worker;      /* NULL: offloaded work runs inline */
    struct ha_worker *const *askers; /* ha_task_offload_ask's workers;
                                      * NULL: the worker's */
    size_t n_askers;
    const _Atomic bool *shutdown;  /* NULL: never */
    struct ha_task_sched *sched;   /* the paused tasks' turns (below);
                                      NULL: each resumes on a timer of
                                      its own */
    struct ha_blockio *blockio;    /* disk calls (core/blockio.h); NULL:
                                      they run on the loop's thread */
};

/* Whose turn it is among the paused tasks ready to go on: one slice per
 * pass of the loop, taken in turn, so that a request that has just come
 * in (a SELECT 1, a scrape) is served within about one slice however
 * many slow statements are paused; without it every paused task got its
 * slice in the same pass, and the request waited for them all
 * (bench/stall's 10-minute soak of 16 clients: SELECT 1 p99 47.5 ms
 * without, 26.5 ms with; 16.7 ms with the logins' steps first, below,
 * and 5 ms slices). */
struct ha_task_sched;

/* A scheduler on base, or NULL on OOM. */
struct ha_task_sched *ha_task_sched_new(struct event_base *base);

/* Frees s; no task may be queued on it (they have all ended). */
void ha_task_sched_free(struct ha_task_sched *s);

struct ha_task {
    const struct ha_task_env *env;
    struct ha_fiber *fiber;        /* while the body runs or is paused */
    void (*body)(void *arg);
    void (*finished)(void *arg);   /* the body ended after a pause */
    void *arg;
    struct event *resume_ev;       /* resumes it at the loop's next pass */
    struct event *deadline_ev;     /* wakes it at its deadline */
    int64_t deadline_ns;           /* CLOCK_MONOTONIC; 0: none */
    bool waiting;                  /* paused in ha_task_wait */
    bool queued;                   /* waiting for its turn (sched) */
    struct ha_task *next_turn;     /* ... after this one */
    bool killed;                   /* ha_task_kill */
    bool timed_out;                /* the deadline timer fired */
};

/* Ready for ha_task_run; env must outlive t. */
void ha_task_init(struct ha_task *t, const struct ha_task_env *env);

/* Frees t's timers. t must not be running or paused. */
void ha_task_release(struct ha_task *t);

/* Runs body(arg) on a fiber. Returns 0 when the body ended without
 * pausing (or ran on the loop's stack: no fiber could be had), 1 when
 * it paused: finished(arg) is then called on the loop once it ends.
 * Clears the killed and timeout marks of a previous run; a deadline set
 * before it (ha_task_set_deadline) is this run's, and ends with it. */
int ha_task_run(struct ha_task *t, void (*body)(void *),
                void (*finished)(void *), void *arg);

/* True while a body runs or is paused. */
bool ha_task_busy(const struct ha_task *t);

/* The task whose body is running on this thread now, or NULL (on the
 * loop's own stack, or on the worker thread). */
struct ha_task *ha_task_current(void);

/* From the body: pauses until the loop's next pass (after the sockets
 * ready meanwhile are served). A no-op outside a fiber. */
void ha_task_slice(struct ha_task *t);

/* From the body of short work cut into steps (a login opening its
 * session): like ha_task_slice, but its turn comes before those of the
 * paused statements, so the step waits for one pass of the loop, not
 * for every long statement's slice. A no-op outside a fiber. */
void ha_task_step(struct ha_task *t);

/* From the body: pauses until ha_task_wake (or a kill, the deadline, a
 * shutdown). Callers re-check what they wait for: a wake may come early. */
void ha_task_wait(struct ha_task *t);

/* From the body: pauses for ns nanoseconds (CLOCK_MONOTONIC), the loop
 * serving everyone else. Returns 0 once they have passed, or -1 at once
 * when the task is stopped (kill, deadline, shutdown), or is not a
 * paused-capable task on a loop (no fiber, no base). */
int ha_task_sleep(struct ha_task *t, int64_t ns);

/* Makes a waiting task go on at the loop's next pass; no-op otherwise. */
void ha_task_wake(struct ha_task *t);

/* KILL: the body sees HA_TASK_KILLED from now on; a waiting body wakes. */
void ha_task_kill(struct ha_task *t);

/* The body must end by deadline_ns (CLOCK_MONOTONIC ns; 0: no deadline),
 * even while it waits. */
void ha_task_set_deadline(struct ha_task *t, int64_t deadline_ns);

/* Whether, and why, the body should stop now. NULL t: HA_TASK_GO. */
enum ha_task_stop ha_task_stopped(const struct ha_task *t);

/* For an owner that must free t while its body is paused (a closing
 * connection): kills it and resumes it until the body has ended, on the
 * caller's stack; finished is not called. */
void ha_task_abort(struct ha_task *t);

/* Runs run(arg) on the worker thread of the current task's env while the
 * task waits, so the loop serves others meanwhile. Without a current
 * task, a worker or a fiber to wait on it runs inline, after the job the
 * worker is running (ha_worker_run_here). Returns 0 once run(arg) has returned;
 * -1 when the task stopped waiting (killed, deadline, shutdown) or the
 * worker could not take it: then the caller must not touch arg again,
 * discard(arg) is called (now, or on the loop when the abandoned job
 * ends). */
int ha_task_offload(void (*run)(void *), void (*discard)(void *),
                    void *arg);

/* ha_task_offload on worker w (NULL: the env's): work that may block for
 * long on I/O (a heap dump to a stalled disk) goes to a worker of its
 * own, so that it never holds up the other tasks' jobs queued behind. */
struct ha_worker;
int ha_task_offload_to(struct ha_worker *w, void (*run)(void *),
                       void (*discard)(void *), void *arg);

/* ha_task_offload for a job that waits on other processes (a gateway
 * asking its agents, each bounded by a deadline): to the least busy of
 * the env's askers, so that one slow peer holds up the jobs that asked
 * it, never the profile work or the other askers' jobs queued behind on
 * one thread. Up to n_askers such jobs run at once; more queue. Without
 * askers, the env's worker. */
int ha_task_offload_ask(void (*run)(void *), void (*discard)(void *),
                        void *arg);

/* ha_task_offload_to with what the job does, for the worker's watchers
 * (SHOW PROCESSLIST's row of a job that runs long, the log): static. */
int ha_task_offload_named(struct ha_worker *w, const char *what,
                          void (*run)(void *), void (*discard)(void *),
                          void *arg);

/* ha_task_offload_named, waiting until deadline_ns at most
 * (CLOCK_MONOTONIC; 0: until the task stops): a wait for a disk that
 * may stop answering is bounded so (core/blockio.h). Past it, as when
 * the task stops, -1 and the job is discard's; *late (may be NULL) is
 * true when it was that deadline, not a stop of the task. */
int ha_task_offload_until(struct ha_worker *w, const char *what,
                          int64_t deadline_ns, void (*run)(void *),
                          void (*discard)(void *), void *arg, bool *late);

#endif /* HA_TASK_H */
