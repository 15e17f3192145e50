/* SPDX-License-Identifier: MIT
 *
 * stats_history.system_memory and its rollups (see history.h).
 */
#include "engine/history.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "core/worker.h"
#include "engine/filevfs.h"
#include "heap/mallctl.h"

/* ProxySQL's columns (include/ProxySQL_Statistics.hpp), in its order,
 * then the pid: several processes may sample into one datadir (the
 * agent in a host of several processes), each its own rows, and the
 * hourly and daily averages are each process's. */
#define COLUMNS                                                            \
    "(timestamp INT NOT NULL, allocated INT NOT NULL, resident INT NOT "   \
    "NULL, active INT NOT NULL, mapped INT NOT NULL, metadata INT NOT "    \
    "NULL, retained INT NOT NULL, pid INT NOT NULL DEFAULT 0, "           \
    "cgroup_usage INT, cgroup_limit INT, PRIMARY KEY (timestamp, pid))"
#define OLD_COLUMNS                                                        \
    "timestamp, allocated, resident, active, mapped, metadata, retained"

static const char *const tables[] = {"system_memory", "system_memory_hour",
                                     "system_memory_day"};

/* WAL where the filesystem allows it (ha_filevfs_journal): sessions read
 * these tables (attached read-only) with statements that may pause
 * between slices; in WAL mode a paused reader never makes a sample wait,
 * nor a sample a reader. */
static const char schema[] =
    "PRAGMA synchronous = NORMAL;"
    "CREATE TABLE IF NOT EXISTS system_memory " COLUMNS ";"
    "CREATE TABLE IF NOT EXISTS system_memory_hour " COLUMNS ";"
    "CREATE TABLE IF NOT EXISTS system_memory_day " COLUMNS ";";

/* Whether table has column. */
static bool
has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    bool has = false;

    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) "
                               "WHERE name = ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
    has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* A file from before the cgroup columns: they are added (NULL in the
 * old rows), in one transaction. */
static int
migrate_cgroup(sqlite3 *db)
{
    char sql[160];

    if (has_column(db, "system_memory", "cgroup_limit"))
        return SQLITE_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    /* Another process may have added them while this one waited. */
    if (has_column(db, "system_memory", "cgroup_limit"))
        return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        snprintf(sql, sizeof(sql),
                 "ALTER TABLE %s ADD COLUMN cgroup_usage INT; ALTER TABLE "
                 "%s ADD COLUMN cgroup_limit INT",
                 tables[i], tables[i]);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return SQLITE_ERROR;
        }
    }
    return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
}

/* A file from before the pid column: its tables are rebuilt with it
 * (pid 0 for the old rows), in one transaction. */
static int
migrate(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    bool has_pid = false;
    char sql[1024];

    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info("
                               "'system_memory') WHERE name = 'pid'",
                           -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    has_pid = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (has_pid)
        return SQLITE_OK;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        snprintf(sql, sizeof(sql),
                 "CREATE TABLE %s_new " COLUMNS "; INSERT INTO %s_new ("
                 OLD_COLUMNS ", pid) SELECT " OLD_COLUMNS ", 0 FROM %s; "
                 "DROP TABLE %s; ALTER TABLE %s_new RENAME TO %s",
                 tables[i], tables[i], tables[i], tables[i], tables[i],
                 tables[i]);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return SQLITE_ERROR;
        }
    }
    return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
}

sqlite3 *
ha_history_open(const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int fd, rc;

    /* 0600 and never through a symlink, before SQLite creates it. */
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    close(fd);
    rc = sqlite3_open_v2(path, &db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                             SQLITE_OPEN_NOFOLLOW,
                         ha_filevfs_name());
    /* Processes starting together on one datadir (the agent in a host of
     * several) create and migrate the same file: each waits its turn
     * rather than failing with "database is locked". */
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, HA_HISTORY_BUSY_MS);
        ha_filevfs_journal_begin(db, path);
    }
    if (rc == SQLITE_OK && ha_filevfs_journal(db, path, err, errlen) != 0) {
        sqlite3_close_v2(db);
        return NULL;
    }
    if (rc != SQLITE_OK ||
        sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        migrate(db) != SQLITE_OK || migrate_cgroup(db) != SQLITE_OK) {
        ha_err_set(err, errlen, "%s: %s", path,
                   db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close_v2(db);
        return NULL;
    }
    return db;
}

/* The average of a bucket of process pid's system_memory rows into table
 * (bucket_s wide, starting at from). */
static int
rollup(sqlite3 *db, const char *table, int64_t from, int64_t bucket_s,
       int64_t pid)
{
    char sql[768];
    sqlite3_stmt *st = NULL;
    int rc;

    snprintf(sql, sizeof(sql),
             "INSERT OR REPLACE INTO %s (timestamp, allocated, resident, "
             "active, mapped, metadata, retained, pid, cgroup_usage, "
             "cgroup_limit) SELECT ?1, CAST(avg(allocated) AS "
             "INT), CAST(avg(resident) AS INT), CAST(avg(active) AS INT), "
             "CAST(avg(mapped) AS INT), CAST(avg(metadata) AS INT), "
             "CAST(avg(retained) AS INT), ?3, CAST(avg(cgroup_usage) AS "
             "INT), min(cgroup_limit) FROM system_memory WHERE "
             "timestamp >= ?1 AND timestamp < ?2 AND pid = ?3 "
             "HAVING count(*) > 0",
             table);
    rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, from);
        sqlite3_bind_int64(st, 2, from + bucket_s);
        sqlite3_bind_int64(st, 3, pid);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
}

static int
prune(sqlite3 *db, const char *table, int64_t before)
{
    char sql[128];
    sqlite3_stmt *st = NULL;
    int rc;

    snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE timestamp < ?1", table);
    rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, before);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
}

int
ha_history_record(sqlite3 *db, const struct ha_history_sample *s, char *err,
                  size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int64_t hour = s->timestamp / 3600 * 3600;
    int64_t day = s->timestamp / 86400 * 86400;
    int rc;

    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    rc = sqlite3_prepare_v2(db,
                            "INSERT OR REPLACE INTO system_memory "
                            "(timestamp, allocated, resident, active, "
                            "mapped, metadata, retained, pid, "
                            "cgroup_usage, cgroup_limit) VALUES "
                            "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        goto fail_rollback;
    sqlite3_bind_int64(st, 1, s->timestamp);
    sqlite3_bind_int64(st, 2, s->allocated);
    sqlite3_bind_int64(st, 3, s->resident);
    sqlite3_bind_int64(st, 4, s->active);
    sqlite3_bind_int64(st, 5, s->mapped);
    sqlite3_bind_int64(st, 6, s->metadata);
    sqlite3_bind_int64(st, 7, s->retained);
    sqlite3_bind_int64(st, 8, s->pid);
    if (s->cgroup_usage >= 0)
        sqlite3_bind_int64(st, 9, s->cgroup_usage);
    if (s->cgroup_limit >= 0)
        sqlite3_bind_int64(st, 10, s->cgroup_limit);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE ||
        rollup(db, "system_memory_hour", hour, 3600, s->pid) != SQLITE_OK ||
        rollup(db, "system_memory_day", day, 86400, s->pid) != SQLITE_OK ||
        prune(db, "system_memory", s->timestamp - HA_HISTORY_RAW_S) !=
            SQLITE_OK ||
        prune(db, "system_memory_hour", s->timestamp - HA_HISTORY_HOUR_S) !=
            SQLITE_OK ||
        prune(db, "system_memory_day", s->timestamp - HA_HISTORY_DAY_S) !=
            SQLITE_OK)
        goto fail_rollback;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail_rollback;
    return 0;
fail_rollback:
    ha_err_set(err, errlen, "%s", sqlite3_errmsg(db));
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
fail:
    ha_err_set(err, errlen, "%s", sqlite3_errmsg(db));
    return -1;
}

/* ------------------------------------------------------------------
 * The sampler
 * ------------------------------------------------------------------ */

struct sample_job;

struct ha_history {
    char path[PATH_MAX];         /* heapadmin_stats.db, opened per sample:
                                    no descriptor or cache held between
                                    two (nor inherited by a fork child) */
    struct ha_heap *heap;     /* jemalloc */
    struct ha_worker *worker;    /* where the file is written */
    struct event *timer;         /* NULL: not sampling */
    bool warned;                 /* a failure was logged (once) */
    struct sample_job *writing;  /* a sample on the worker */
    int interval_s;              /* between samples; 0: none */
    void (*tick)(void *arg, const struct ha_cgroup_state *cg,
                 const struct ha_history_sample *s);
    void *tick_arg;              /* told at each tick */
    int64_t (*since)(void *arg, int64_t now);
    void (*listener)(void *arg, const struct ha_history_sample *s,
                     const struct ha_history_sample *oldest);
    void *listener_arg;          /* told of each stored sample */
};

/* One sample's file work, on the worker: the write, then the oldest
 * sample the listener wants, on the same connection. */
struct sample_job {
    struct ha_job job;           /* the worker's */
    struct ha_history *h;        /* NULL: the history was freed */
    char path[PATH_MAX];
    struct ha_history_sample s;
    bool want_oldest;
    int64_t since;
    int rc;                      /* out: 0 stored */
    bool have_oldest;            /* out */
    struct ha_history_sample oldest;
    char err[PATH_MAX + 256];
};

static int
read_stat(const struct ha_mallctl_ops *ops, const char *name, int64_t *out)
{
    size_t v = 0;
    int rc = ha_mallctl_read_size(ops, name, &v);

    *out = (int64_t)v;
    return rc;
}

/* Process pid's oldest sample at or after since into *out: 0, or -1 when
 * there is none (other processes of the datadir sample into the same
 * file). */
static int
oldest_since(sqlite3 *db, int64_t since, int64_t pid,
             struct ha_history_sample *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(db,
                           "SELECT timestamp, allocated, resident, active, "
                           "mapped, metadata, retained FROM system_memory "
                           "WHERE timestamp >= ?1 AND pid = ?2 "
                           "ORDER BY timestamp LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, since);
    sqlite3_bind_int64(st, 2, pid);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->timestamp = sqlite3_column_int64(st, 0);
        out->allocated = sqlite3_column_int64(st, 1);
        out->resident = sqlite3_column_int64(st, 2);
        out->active = sqlite3_column_int64(st, 3);
        out->mapped = sqlite3_column_int64(st, 4);
        out->metadata = sqlite3_column_int64(st, 5);
        out->retained = sqlite3_column_int64(st, 6);
        out->pid = pid;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

static void
sample_run(void *arg)
{
    struct sample_job *j = arg;
    sqlite3 *db = ha_history_open(j->path, j->err, sizeof(j->err));

    j->rc = db != NULL &&
                    ha_history_record(db, &j->s, j->err, sizeof(j->err)) == 0
                ? 0
                : -1;
    j->have_oldest = j->rc == 0 && j->want_oldest &&
                     oldest_since(db, j->since, j->s.pid, &j->oldest) == 0;
    sqlite3_close_v2(db);
}

static void
sample_done(void *arg)
{
    struct sample_job *j = arg;
    struct ha_history *h = j->h;

    if (h != NULL) {
        h->writing = NULL;
        if (!j->job.ran) {
            /* the worker went away first: nothing was written */
        } else if (j->rc != 0) {
            if (!h->warned)
                ha_log_warn("stats_history.system_memory: sample not "
                            "stored: %s",
                            j->err);
            h->warned = true;
        } else {
            h->warned = false;
            if (h->listener != NULL)
                h->listener(h->listener_arg, &j->s,
                            j->have_oldest ? &j->oldest : NULL);
        }
    }
    free(j);
}

static void
sample_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_history *h = arg;
    const struct ha_mallctl_ops *ops = h->heap->ops;
    struct ha_history_sample s;
    struct sample_job *j;
    struct ha_cgroup_state cg;
    char err[256];
    int rc;

    (void)fd;
    (void)what;
    memset(&s, 0, sizeof(s));
    s.timestamp = (int64_t)time(NULL);
    s.pid = (int64_t)getpid();
    /* The memory cgroup, located again (the process may have been
     * moved) and read: its files are the kernel's counters. */
    if (ha_cgroup_locate(NULL, &h->heap->cgroup, err, sizeof(err)) != 0)
        h->heap->cgroup.version = 0;
    ha_cgroup_sample(&h->heap->cgroup, &cg);
    s.cgroup_usage = cg.usage;
    s.cgroup_limit = ha_cgroup_limited(&cg) ? cg.limit : -1;
    ha_heap_refresh_stats(h->heap);
    rc = read_stat(ops, "stats.allocated", &s.allocated);
    if (rc == 0)
        rc = read_stat(ops, "stats.resident", &s.resident);
    if (rc == 0)
        rc = read_stat(ops, "stats.active", &s.active);
    if (rc == 0)
        rc = read_stat(ops, "stats.mapped", &s.mapped);
    if (rc == 0)
        rc = read_stat(ops, "stats.metadata", &s.metadata);
    if (rc == 0)
        rc = read_stat(ops, "stats.retained", &s.retained);
    if (h->tick != NULL)
        h->tick(h->tick_arg, &cg, &s);
    if (h->writing != NULL) {
        ha_log_info("stats_history.system_memory: sample skipped: the last "
                    "one is still being written");
        return;
    }
    if (rc != 0) {
        if (!h->warned)
            ha_log_warn("stats_history.system_memory: no sample: jemalloc's "
                        "statistics cannot be read (%s)",
                        strerror(rc));
        h->warned = true;
        return;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return;
    j->job.run = sample_run;
    j->job.done = sample_done;
    j->job.arg = j;
    j->h = h;
    ha_strlcpy(j->path, h->path, sizeof(j->path));
    j->s = s;
    j->want_oldest = h->listener != NULL && h->since != NULL;
    if (j->want_oldest)
        j->since = h->since(h->listener_arg, s.timestamp);
    j->job.what = "writing a stats_history sample";
    if (ha_worker_submit(h->worker, &j->job, err, sizeof(err)) != 0) {
        if (!h->warned)
            ha_log_warn("stats_history.system_memory: sample not stored: "
                        "%s",
                        err);
        h->warned = true;
        free(j);
        return;
    }
    h->writing = j;
}

void
ha_history_set_tick(struct ha_history *h,
                    void (*fn)(void *arg, const struct ha_cgroup_state *cg,
                               const struct ha_history_sample *s),
                    void *arg)
{
    h->tick = fn;
    h->tick_arg = arg;
}

int
ha_history_interval(const struct ha_history *h)
{
    return h != NULL ? h->interval_s : 0;
}

void
ha_history_set_listener(
    struct ha_history *h, int64_t (*since)(void *arg, int64_t now),
    void (*fn)(void *arg, const struct ha_history_sample *s,
               const struct ha_history_sample *oldest),
    void *arg)
{
    h->since = since;
    h->listener = fn;
    h->listener_arg = arg;
}

struct ha_history *
ha_history_new(struct event_base *base, struct ha_worker *worker,
               struct ha_heap *heap, const char *datadir, int interval_s)
{
    struct ha_history *h;
    char path[PATH_MAX], err[PATH_MAX + 256];
    int n = snprintf(path, sizeof(path), "%s/%s", datadir, HA_HISTORY_FILE);

    if (n < 0 || (size_t)n >= sizeof(path))
        return NULL;
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return NULL;
    h->heap = heap;
    h->worker = worker;
    ha_strlcpy(h->path, path, sizeof(h->path));
    {
        sqlite3 *db = ha_history_open(path, err, sizeof(err));

        if (db == NULL) {
            ha_log_warn("stats_history: %s; no memory history", err);
            free(h);
            return NULL;
        }
        sqlite3_close_v2(db);
    }
    if (interval_s > 0) {
        struct timeval tv = {interval_s, 0};

        h->interval_s = interval_s;
        h->timer = event_new(base, -1, EV_PERSIST, sample_cb, h);
        if (h->timer == NULL || event_add(h->timer, &tv) != 0) {
            ha_log_warn("stats_history: cannot arm the sampler");
            ha_history_free(h);
            return NULL;
        }
        ha_log_info("stats_history.system_memory: a sample every %d s "
                    "into %s (raw rows kept 7 days, hourly 365 days)",
                    interval_s, path);
    }
    return h;
}

void
ha_history_free(struct ha_history *h)
{
    if (h == NULL)
        return;
    if (h->writing != NULL)
        h->writing->h = NULL; /* its done only frees it */
    if (h->timer != NULL)
        event_free(h->timer);
    free(h);
}
