/* SPDX-License-Identifier: MIT
 *
 * The engine: one heapadmin instance under both front-ends, the MySQL
 * server (admin/) and the HTTP server (http/), which are siblings over
 * it and never reach each other. It owns what must be the same whichever
 * port a client came through:
 *   - the config and the datadir;
 *   - the accounts, the clear-text password check and the failed-login
 *     throttle (accounts.h);
 *   - the clients now served, one id space, PROCESSLIST and KILL
 *     (clients.h);
 *   - the executor: tasks on fibers with their deadlines and KILL, and
 *     the worker thread that takes long work off the loop (core/task.h);
 *   - the heap service (heap/heap.h: jemalloc, dumps, loaded profiles),
 *     the SQL tables' context over it and the shared scratch database
 *     admin sessions create tables in;
 *   - the TLS certificate and RSA key, persistence, the memory history,
 *     the automatic dump timers and the leak watch.
 * It runs on the caller's event_base in the caller's thread.
 */
#ifndef HA_ENGINE_H
#define HA_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/task.h"
#include "engine/accounts.h"
#include "engine/clients.h"
#include "engine/config.h"
#include "engine/tls.h"
#include "heap/mallctl.h"

struct event_base;
struct ha_engine;
struct ha_heap;
struct ha_vtab_ctx;

/* Creates an engine for cfg (which must outlive it) on base; dumps and
 * state go to datadir (absolute, copied). ops is jemalloc's mallctl (or
 * a fake). thread_init, if not NULL, runs first on the worker thread
 * with init_arg (the owner's log sink, arena and profiling switches).
 * Returns NULL with err set. */
struct ha_engine *ha_engine_new(struct event_base *base,
                                const struct ha_config *cfg,
                                const char *datadir,
                                const struct ha_mallctl_ops *ops,
                                void (*thread_init)(void *), void *init_arg,
                                char *err, size_t errlen);

/* Loads or generates the key material in the datadir (tls.h): the TLS
 * certificate when have_ssl is on, and the RSA key pair of
 * caching_sha2_password's full authentication. Returns 0, or -1 with err
 * naming the file and the reason. */
int ha_engine_enable_tls(struct ha_engine *e, char *err, size_t errlen);

/* Start-up precedence: applies the jemalloc variables saved on disk over
 * what the config set, each one logged, or with initial discards them.
 * Returns the number applied or -1 (logged). */
int ha_engine_apply_saved(struct ha_engine *e, bool initial);

/* flag, once set (from any thread or a signal handler), stops every task
 * at its next check (ERR 1053 for SQL). The owner keeps it alive. */
void ha_engine_set_shutdown_flag(struct ha_engine *e,
                                 const _Atomic bool *flag);

/* Frees the engine once both front-ends are gone: waits for the worker
 * threads' running jobs, HA_ENGINE_STOP_WAIT_MS at most; a job still
 * running then (blocked on a disk that stopped answering) is left behind
 * with its thread, and the engine with it (leaked: the job may use it).
 * NULL is a no-op. */
#define HA_ENGINE_STOP_WAIT_MS 2000
/* Returns 0, or -1 when the datadir's disk did not answer and something
 * was left behind (the owner then leaves the disk alone too). */
int ha_engine_free(struct ha_engine *e);

/* The owner begins to stop (the loop has ended or is about to): from
 * now on no wait for the datadir's disk (core/blockio.h) lasts past
 * HA_ENGINE_STOP_DISK_MS from here, whatever disk_timeout_ms says, so
 * that the stop, closing sessions and writing this run's end, is over
 * within it even on a disk that stopped answering. Called again, or by
 * ha_engine_free, it keeps the first deadline. Loop thread. */
#define HA_ENGINE_STOP_DISK_MS 2500
void ha_engine_stopping(struct ha_engine *e);

/* For a fork child: forgets what the parent's threads own (the worker)
 * without joining or freeing; e is leaked. */
void ha_engine_abandon(struct ha_engine *e);

/* What the front-ends serve from. */
struct event_base *ha_engine_base(const struct ha_engine *e);
const struct ha_config *ha_engine_config(const struct ha_engine *e);
const char *ha_engine_datadir(const struct ha_engine *e);
/* The heap service every face reads (heap/heap.h). */
struct ha_heap *ha_engine_heap(struct ha_engine *e);
/* The SQL tables' context over it, for the MySQL front-end's sessions. */
struct ha_vtab_ctx *ha_engine_vtab(struct ha_engine *e);
struct ha_clients *ha_engine_clients(struct ha_engine *e);
struct ha_accounts *ha_engine_accounts(struct ha_engine *e);
const struct ha_tls *ha_engine_tls(const struct ha_engine *e);
const struct ha_task_env *ha_engine_tasks(const struct ha_engine *e);
const _Atomic bool *ha_engine_shutdown_flag(const struct ha_engine *e);

/* A host gateway (heapadmind --gateway): its /metrics also covers the
 * agents of its datadir and /debug/pprof/heap?pid=N is agent N's
 * (http/gateway.h). Set once, after ha_engine_new. A gateway asks its
 * agents on HA_ENGINE_ASKERS threads of their own, each job to the
 * least busy (core/task.h ha_task_offload_ask). */
#define HA_ENGINE_ASKERS 4
void ha_engine_set_gateway(struct ha_engine *e, bool gateway);
bool ha_engine_is_gateway(const struct ha_engine *e);
/* A gateway's merged exposition (engine/hostmetrics.h); NULL when this
 * instance is not a gateway. */
struct ha_hostmetrics *ha_engine_hostmetrics(struct ha_engine *e);

/* Where the MySQL front-end listens ("/path.sock" or "port 6032"), for
 * the gateway's stats_agents; "" until set. */
void ha_engine_set_endpoint(struct ha_engine *e, const char *endpoint);
const char *ha_engine_endpoint(const struct ha_engine *e);

/* Starts pushing dumps to admin_variables.push_targets (engine/push.h),
 * each encoded by encode(encode_arg, ...) (the HTTP front-end's
 * /debug/pprof/allocs encoder: http/pprof.h). Nothing when no target is
 * configured. Once, after ha_engine_new. */
typedef int (*ha_engine_encode_fn)(void *arg, const char *dump,
                                   struct ha_buf *out, char *err,
                                   size_t errlen);
void ha_engine_start_push(struct ha_engine *e, ha_engine_encode_fn encode,
                          void *encode_arg);

/* This process's label contract (engine/labels.h). */
struct ha_labels;
const struct ha_labels *ha_engine_labels(const struct ha_engine *e);

/* This process's program name, as the agents' registry names it. */
const char *ha_engine_program(const struct ha_engine *e);

/* Gives back what the tables cached for later queries (loaded heap
 * profiles; symbols, unless debuginfod fetches may be running) once none
 * was used for idle_s seconds and no job runs on the worker. Returns 0,
 * or -1 when not yet (try again later). Loop thread. */
int ha_engine_release_caches(struct ha_engine *e, unsigned idle_s);

/* The URI of the scratch database every admin session shares (tables an
 * admin creates), for sqlite3_open_v2 / ATTACH with SQLITE_OPEN_URI. */
const char *ha_engine_scratch_uri(const struct ha_engine *e);

#endif /* HA_ENGINE_H */
