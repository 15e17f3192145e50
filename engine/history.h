/* SPDX-License-Identifier: MIT
 *
 * Memory history, as ProxySQL keeps it: stats_history.system_memory (a
 * sample every admin_variables.stats_system_memory seconds of jemalloc's
 * stats.allocated, resident, active, mapped, metadata and retained, in
 * bytes), with system_memory_hour and system_memory_day holding each
 * hour's and day's averages. Kept in <datadir>/heapadmin_stats.db
 * (ProxySQL: proxysql_stats.db), one committed transaction per sample, so
 * a restart or kill -9 loses at most the sample in flight. Raw rows are
 * kept 7 days, hourly rows 365 days, daily rows 10 years. Sessions attach
 * the file read-only as schema stats_history. The only timer is the
 * sampler's: an idle daemon wakes for nothing else.
 */
#ifndef HA_HISTORY_H
#define HA_HISTORY_H

#include <stdint.h>

#include <event2/event.h>
#include <sqlite3.h>

#include "heap/heap.h"

#define HA_HISTORY_FILE "heapadmin_stats.db"
#define HA_HISTORY_RAW_S (7 * 86400)       /* system_memory */
#define HA_HISTORY_HOUR_S (365 * 86400)    /* system_memory_hour */
#define HA_HISTORY_DAY_S (3650 * 86400)    /* system_memory_day */

#define HA_HISTORY_BUSY_MS 2000  /* a write waits this long for another
                                    process's */

/* One sample: unix seconds, jemalloc's stats.* in bytes, and the process
 * (several may share a datadir: each has its own rows and averages);
 * then the memory cgroup's usage and limit (heap/cgroup.h: the limiting
 * group's), -1 (NULL in the tables) when there is no cgroup or no
 * limit. */
struct ha_history_sample {
    int64_t timestamp;
    int64_t allocated, resident, active, mapped, metadata, retained;
    int64_t pid;
    int64_t cgroup_usage, cgroup_limit;
};

/* Opens (creating, mode 0600) path with the three tables: ProxySQL's
 * columns, then pid, cgroup_usage and cgroup_limit (a file from before
 * them is migrated: its rows pid 0, no cgroup figures).
 * Waits up to HA_HISTORY_BUSY_MS for another process's write. Returns
 * the connection, or NULL with err naming the file. */
sqlite3 *ha_history_open(const char *path, char *err, size_t errlen);

/* Stores s, refreshes the averages of its hour and day, and drops rows
 * past their retention, in one transaction. Pure but for the database.
 * Returns 0, or -1 with err (nothing stored). */
int ha_history_record(sqlite3 *db, const struct ha_history_sample *s,
                      char *err, size_t errlen);

struct ha_history;
struct ha_worker;

/* Samples every interval_s seconds into <datadir>/heapadmin_stats.db
 * through ctx's jemalloc; the file is created even when interval_s is 0
 * (no sampling), so stats_history always exists. The statistics are read
 * on the loop, the file is written on worker's thread (a stalled disk
 * never stalls the loop; a tick while the last write is still under way
 * is skipped). worker must outlive the history. Returns NULL when the
 * file cannot be opened (logged). */
struct ha_history *ha_history_new(struct event_base *base,
                                  struct ha_worker *worker,
                                  struct ha_heap *heap,
                                  const char *datadir, int interval_s);

/* After each sample is stored, fn(arg, sample, oldest) on the loop, with
 * oldest this process's oldest stored sample at or after since(arg, the
 * sample's time) (unix seconds), or NULL when there is none: read on the
 * worker with the write (the leak watch compares the two, and so needs
 * no timer or file access of its own). One listener; NULL fn removes it. */
void ha_history_set_listener(
    struct ha_history *h, int64_t (*since)(void *arg, int64_t now),
    void (*fn)(void *arg, const struct ha_history_sample *s,
               const struct ha_history_sample *oldest),
    void *arg);

/* At each tick, on the loop, before the sample is written (and even when
 * it is skipped): fn(arg, cg, s) with the memory cgroup located again
 * (heap->cgroup; a process can be moved) and read, and the sample. The
 * limit watch and the run record look at memory there, so they need no
 * timer of their own. One; NULL fn removes it. */
void ha_history_set_tick(struct ha_history *h,
                         void (*fn)(void *arg,
                                    const struct ha_cgroup_state *cg,
                                    const struct ha_history_sample *s),
                         void *arg);

/* The seconds between samples; 0: none. */
int ha_history_interval(const struct ha_history *h);

/* NULL is a no-op. */
void ha_history_free(struct ha_history *h);

#endif /* HA_HISTORY_H */
