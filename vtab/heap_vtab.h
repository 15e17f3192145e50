/* SPDX-License-Identifier: MIT
 *
 * What the heap-profile tables share (heap.c): the vtab object, connect /
 * disconnect / rowid, and xBestIndex for table-valued functions with
 * required arguments and optional `=` push-downs. Each table is a file:
 *   heap_dumps.c   stats_heap_dumps            the dumps in the datadir
 *   heap_top.c     heap_top(dump)              per function (jeprof --text)
 *   heap_stacks.c  heap_stacks(dump),          per stack, and per frame
 *                  heap_profile(dump)
 *   heap_diff.c    heap_profile_diff(base, current)   jeprof --base
 *   heap_modules.c heap_modules(dump)          per mapped module: where
 *                                              its names came from
 *   heap_wrappers.c heap_wrappers(dump)        the allocation wrappers the
 *                                              site rule skipped, and why
 *   heap_threads.c heap_threads(dump)          per thread: which thread
 *                                              (pool) holds the memory
 *   heap_growth.c  heap_growth(...),           per function, and per stack,
 *                  heap_growth_stacks(...)     ranked by growth over a
 *                                              series of dumps
 *   previous_runs.c stats_previous_runs        the datadir's earlier runs
 *                                              and how each ended
 *   heap_fragmentation.c heap_fragmentation(dump), whose objects pin the
 *                  heap_fragmentation_stacks(dump) fragmented size
 *                                              classes
 *   heap_lifetimes.c heap_lifetimes(log),      per allocation site, and
 *                  heap_lifetimes_stacks(log)  per stack: how long the
 *                                              objects freed in a lifetime
 *                                              window lived
 *   recent.c       stats_jemalloc_recent      the last sampled allocations,
 *                                              freed or not
 * A dump argument is a file name from stats_heap_dumps.file_name, or
 * 'live' (admin only) for this process now; see heap/profiles.h. With
 * 'live', heap_top, heap_stacks and heap_threads take a second argument,
 * seconds (1..60): a delta, what was allocated in the last that many
 * seconds (alloc_* columns) and what is held at the end
 * (ha_heap_vtab_profile). heap_top and heap_stacks take thread = <name>
 * (every thread of that name: a pool) or thread = <jemalloc thread id>
 * (heap_threads' thread_id): the figures of those threads alone.
 */
#ifndef HA_HEAP_VTAB_H
#define HA_HEAP_VTAB_H

#include <sqlite3.h>

#include "vtab/cursor.h"
#include "vtab/vtab_util.h"

typedef struct heap_vtab heap_vtab;
struct heap_vtab {
    sqlite3_vtab base;         /* Base class - must be first */
    struct ha_vtab_conn *conn; /* ctx: datadir, symbolizer, cache */
};

/* xConnect body: declares schema, marks the table innocuous (it only
 * reads). */
int ha_heap_vtab_connect(sqlite3 *db, void *aux, const char *schema,
                    sqlite3_vtab **pp, char **pzErr);
int ha_heap_vtab_disconnect(sqlite3_vtab *p);
int ha_heap_vtab_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid);

/* idxNum of ha_heap_vtab_best_index(): HA_HEAP_IDX_ARGS when every argument
 * is bound (argv[0 .. n_args) in column order), plus HA_HEAP_IDX_PUSH(k)
 * for each push-down column push[k] bound with `=` (its value follows
 * the arguments in argv, in k order). */
#define HA_HEAP_IDX_ARGS 1
#define HA_HEAP_IDX_PUSH(k) (2 << (k))

/* xBestIndex for a table-valued function whose arguments are the hidden
 * columns [arg0, arg0 + n_args), which may also take `=` constraints on
 * the columns push[0 .. n_push) (at most 8). A plan without every
 * argument is priced out rather than refused (SQLite may be weighing
 * several, e.g. for an OR); xFilter then says what is missing. rows is
 * the table's expected size with the arguments alone. */
int ha_heap_vtab_best_index(sqlite3_index_info *info, int arg0, int n_args,
                       const int *push, int n_push, double rows);

struct ha_heap_profile;

/* The profile a heap table reads: dump's ('live' or a file name), or,
 * with seconds (not NULL nor SQL NULL), a delta of the live profile over
 * that many seconds (heap/profiles.h ha_heap_profile_delta; seconds
 * must be an integer and dump 'live'), the wait then told to the
 * session (its deadline moves). table names it in errors. Returns
 * SQLITE_OK with *out holding a reference, or an error as
 * ha_heap_vtab_fail (zErrMsg set). */
int ha_heap_vtab_profile(sqlite3_vtab *vt, const char *table,
                         sqlite3_value *dump, sqlite3_value *seconds,
                         struct ha_heap_profile **out);

struct ha_threads_match;

/* The thread filter v of a heap table (its hidden column thread): text
 * a name (every thread of that name; '' those with none), an integer
 * >= 0 a thread_id. *m points into v, which must outlive it. Returns
 * SQLITE_OK, or SQLITE_ERROR with zErrMsg saying what is allowed. */
int ha_heap_vtab_thread(sqlite3_vtab *vt, const char *table,
                        sqlite3_value *v, struct ha_threads_match *m);

/* A heap table's call failed with rc from heap/profiles.h: HA_HEAP_STOPPED
 * (the statement was killed, timed out or the server stops while it
 * waited) becomes SQLITE_INTERRUPT, which the session reports as ERR
 * 1317, 3024 or 1053; HA_HEAP_ERROR sets "<table>: <err>" and returns
 * SQLITE_ERROR. */
int ha_heap_vtab_fail(sqlite3_vtab *vt, int rc, const char *table,
                 const char *err);

/* The modules, registered by ha_heap_vtab_register (heap.c). */
extern const sqlite3_module ha_heap_dumps_module;
extern const sqlite3_module ha_heap_top_module;
extern const sqlite3_module ha_heap_stacks_module;
extern const sqlite3_module ha_heap_profile_module;
extern const sqlite3_module ha_heap_diff_module;
extern const sqlite3_module ha_heap_modules_module;
extern const sqlite3_module ha_heap_wrappers_module;
extern const sqlite3_module ha_heap_growth_module;
extern const sqlite3_module ha_heap_growth_stacks_module;
extern const sqlite3_module ha_heap_lifetimes_module;
extern const sqlite3_module ha_heap_lifetimes_stacks_module;
extern const sqlite3_module ha_heap_recent_module;
extern const sqlite3_module ha_previous_runs_module;
extern const sqlite3_module ha_heap_fragmentation_module;
extern const sqlite3_module ha_heap_fragmentation_stacks_module;
extern const sqlite3_module ha_heap_threads_module;


#endif /* HA_HEAP_VTAB_H */
