/* SPDX-License-Identifier: MIT
 *
 * The lifetime window (see logwin.h): one per process, like jemalloc's
 * log. Two locks, as the prof.prefix memory in mallctl.c: `op` is held
 * for a whole open or close (which may write megabytes), `lock` for the
 * state's fields only, so the loop reading the state never waits for a
 * disk.
 */
#include "heap/logwin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fdio.h"
#include "core/forkguard.h"
#include "core/blockio.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "core/worker.h"
#include "prof/buildid.h"
#include "prof/dumpname.h"
#include "heap/dumpfiles.h"
#include "heap/mallctl.h"

/* ------------------------------------------------------------------
 * The window, process-wide
 * ------------------------------------------------------------------ */

static struct {
    pthread_mutex_t op;       /* a whole open or close */
    pthread_mutex_t lock;     /* the fields below */

    bool open;                /* jemalloc logs into our file */
    bool closing;             /* a close is queued or running */
    const struct ha_heap *owner; /* who opened it (compared, never used
                                    after the open: it may be gone) */
    const struct ha_mallctl_ops *ops;
    int fd;                   /* the staged file; -1 */
    bool via_proc;            /* jemalloc was given /proc/self/fd/<fd> */
    char staged[PATH_MAX];    /* <dir>/.heapadmin-staging/<name> */
    char dir[PATH_MAX];       /* where it is published */
    char prefix[PATH_MAX];    /* prof prefix, for retention */
    char name[NAME_MAX + 1];  /* <stem>.<pid>.<seq>.json */
    long long seconds;        /* asked for */
    int64_t opened_ns;        /* unix ns */
    int64_t deadline_ms;      /* ha_clock_ms() it closes at */
    long long max_bytes;
    size_t internal0;         /* stats.arenas.<all>.internal at the open */
    uint64_t requests0;       /* allocation requests at the open */
    long long retention_count, retention_bytes;
    unsigned next_seq;        /* the next log's sequence, at least */

    struct ha_logwin_state last; /* the last window's last_* fields */
    bool atexit_set;
} W = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static int64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define ALL "4096" /* MALLCTL_ARENAS_ALL: every arena merged */

/* jemalloc's internal bytes and allocation requests, fresh (epoch). */
static void
read_counters(const struct ha_mallctl_ops *ops, size_t *internal,
              uint64_t *requests)
{
    uint64_t small = 0, large = 0;

    *internal = 0;
    (void)ha_mallctl_epoch(ops);
    (void)ha_mallctl_read_size(ops, "stats.arenas." ALL ".internal",
                               internal);
    (void)ha_mallctl_read_u64(ops, "stats.arenas." ALL ".small.nrequests",
                              &small);
    (void)ha_mallctl_read_u64(ops, "stats.arenas." ALL ".large.nrequests",
                              &large);
    *requests = small + large;
}

/* ------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------ */

/* The highest log sequence of pid in dir (stem's logs), or -1. */
static long long
highest_seq(const char *dir, const char *stem, long pid)
{
    struct ha_dump_name d;
    struct dirent *de;
    long long best = -1;
    size_t sl = strlen(stem);
    DIR *dp = opendir(dir);

    if (dp == NULL)
        return -1;
    while ((de = readdir(dp)) != NULL)
        if (strncmp(de->d_name, stem, sl) == 0 && de->d_name[sl] == '.' &&
            ha_dumpname_parse(de->d_name, &d) && d.log && d.pid == pid &&
            d.seq > best)
            best = d.seq;
    closedir(dp);
    return best;
}

/* ------------------------------------------------------------------
 * Side files
 * ------------------------------------------------------------------ */

/* Copies /proc/self/maps to path (0600). Returns 0 or an errno value. */
static int
write_maps(const char *path)
{
    char buf[65536];
    ssize_t n;
    int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), out, rc = 0;

    if (in < 0)
        return errno;
    out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
               0600);
    if (out < 0) {
        rc = errno;
        close(in);
        return rc;
    }
    /* A short write (a signal, a nearly full disk) goes on where it
     * stopped; only an error ends the copy. */
    while ((n = read(in, buf, sizeof(buf))) > 0)
        if ((rc = ha_fdio_write_all(out, buf, (size_t)n)) != 0)
            break;
    if (n < 0)
        rc = errno;
    close(in);
    if (close(out) != 0 && rc == 0)
        rc = errno;
    return rc;
}

/* The resolution of the clock jemalloc stamps the log with, in ns:
 * CLOCK_REALTIME with prof_time_resolution:high, else
 * CLOCK_MONOTONIC_COARSE (nstime_prof_update in jemalloc 5.3.0's
 * src/nstime.c); 0 when unknown. */
static long long
clock_tick_ns(const struct ha_mallctl_ops *ops)
{
    const char *res = NULL;
    struct timespec ts;
    bool high = ha_mallctl_read_str(ops, "opt.prof_time_resolution",
                                    &res) == 0 &&
                strcmp(res, "high") == 0;

    if (clock_getres(high ? CLOCK_REALTIME : CLOCK_MONOTONIC_COARSE, &ts) !=
        0)
        return 0;
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
write_window(const char *path, const char *closed_by, int64_t closed_ns,
             uint64_t requests, long long bytes, long long tick)
{
    FILE *f;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                  0600);

    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        int e = errno;

        if (fd >= 0)
            close(fd);
        return e;
    }
    fprintf(f,
            "# heapadmin's lifetime window of %s (prof.log_start to "
            "prof.log_stop)\n"
            "opened_ns=%" PRId64 "\nclosed_ns=%" PRId64 "\nseconds=%lld\n"
            "closed_by=%s\nalloc_requests=%" PRIu64 "\n"
            "internal_bytes=%lld\nclock_tick_ns=%lld\n",
            W.name, W.opened_ns, closed_ns, W.seconds, closed_by, requests,
            bytes, tick);
    return fclose(f) == 0 ? 0 : errno;
}

/* Publishes staged + suffix into W.dir. Returns 0 or an errno value. */
static int
publish_one(const char *suffix)
{
    char from[PATH_MAX], to[PATH_MAX];

    if ((size_t)snprintf(from, sizeof(from), "%s%s", W.staged, suffix) >=
        sizeof(from))
        return ENAMETOOLONG;
    return ha_dumpfiles_publish(from, W.dir, to, sizeof(to));
}

/* ------------------------------------------------------------------
 * Open and close (under W.op)
 * ------------------------------------------------------------------ */

/* Starts the log. err gets why not. Returns 0 or -1. */
static int
open_locked(const struct ha_heap *heap, unsigned seconds, char *err,
            size_t errlen)
{
    const struct ha_mallctl_ops *ops = heap->ops;
    char prefix[PATH_MAX], staging[PATH_MAX], dir[PATH_MAX], jpath[64];
    const char *stem, *given;
    long pid = (long)getpid();
    long long seq, high;
    size_t internal;
    uint64_t requests;
    int fd = -1, rc;

    if (W.open) {
        ha_err_set(err, errlen, "a lifetime window is already open in this "
                                "process (%s, %lld s); close it first with "
                                "jemalloc-log_now = 0",
                   W.name, W.seconds);
        return -1;
    }
    if (!ha_mallctl_prof_enabled(ops)) {
        ha_err_set(err, errlen, "%s", ha_mallctl_prof_built(ops)
                                          ? HA_MALLCTL_PROF_OFF_HINT
                                          : HA_MALLCTL_PROF_UNBUILT_HINT);
        return -1;
    }
    if ((rc = ha_mallctl_prof_prefix(ops, prefix, sizeof(prefix))) != 0 ||
        prefix[0] == '\0' ||
        (rc = ha_dumpfiles_dir(prefix, dir, sizeof(dir))) != 0 ||
        (rc = ha_dumpfiles_staging_prefix(prefix, staging,
                                          sizeof(staging))) != 0) {
        ha_err_set(err, errlen, "no directory for the log (prof prefix "
                                "'%s'): %s",
                   prefix, strerror(rc ? rc : ENOENT));
        return -1;
    }
    stem = strrchr(prefix, '/') != NULL ? strrchr(prefix, '/') + 1 : prefix;
    /* jemalloc's numbering for logs: its own sequence, one past every log
     * of this pid there is (the staging directory's included). */
    seq = W.next_seq;
    high = highest_seq(dir, stem, pid);
    if (high >= seq)
        seq = high + 1;
    {
        char sdir[PATH_MAX];

        if (ha_dumpfiles_dir(staging, sdir, sizeof(sdir)) == 0 &&
            (high = highest_seq(sdir, stem, pid)) >= seq)
            seq = high + 1;
    }
    if ((size_t)snprintf(W.name, sizeof(W.name), "%s.%ld.%lld.json", stem,
                         pid, seq) >= sizeof(W.name) ||
        (size_t)snprintf(W.staged, sizeof(W.staged), "%s.%ld.%lld.json",
                         staging, pid, seq) >= sizeof(W.staged)) {
        ha_err_set(err, errlen, "the log's name is too long");
        return -1;
    }
    unlink(W.staged); /* a stale one of ours: never appended to */
    fd = open(W.staged, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0) {
        ha_err_set(err, errlen, "cannot create %s: %s", W.staged,
                   strerror(errno));
        return -1;
    }
    /* jemalloc creat()s the name it was given at the stop: a name of our
     * descriptor reopens our private file (and lets a fork child's copy
     * go to /dev/null instead); without /proc, the staged path. */
    snprintf(jpath, sizeof(jpath), "/proc/self/fd/%d", fd);
    W.via_proc = access(jpath, W_OK) == 0;
    given = W.via_proc ? jpath : W.staged;
    read_counters(ops, &internal, &requests);
    rc = ha_mallctl_log_start(ops, given);
    if (rc != 0) {
        close(fd);
        unlink(W.staged);
        if (rc == EFAULT)
            ha_err_set(err, errlen,
                       "jemalloc refused prof.log_start: a log is already "
                       "being recorded in this process (opt.prof_log, or "
                       "the program's own prof.log_start)");
        else {
            struct ha_mallctl_failure f = {rc, "prof.log_start",
                                           "jemalloc-log_now", NULL, NULL,
                                           ha_mallctl_prof_built(ops)};

            ha_mallctl_errmsg(&f, err, errlen);
        }
        return -1;
    }
    ha_strlcpy(W.dir, dir, sizeof(W.dir));
    ha_strlcpy(W.prefix, prefix, sizeof(W.prefix));
    pthread_mutex_lock(&W.lock);
    W.open = true;
    W.closing = false;
    W.owner = heap;
    W.ops = ops;
    W.fd = fd;
    W.seconds = seconds;
    W.opened_ns = now_ns();
    W.deadline_ms = ha_clock_ms() + (int64_t)seconds * 1000;
    W.max_bytes = heap->log_max_bytes > 0 ? heap->log_max_bytes
                                          : HA_LOGWIN_DEFAULT_MAX_BYTES;
    W.internal0 = internal;
    W.requests0 = requests;
    W.retention_count = heap->je != NULL ? heap->je->dump_retention_count : 0;
    W.retention_bytes = heap->je != NULL ? heap->je->dump_retention_bytes : 0;
    W.next_seq = (unsigned)seq + 1;
    pthread_mutex_unlock(&W.lock);
    return 0;
}

/* Stops the log and publishes it with its side files; closed_by says
 * why. Logs the outcome. Returns 0 or -1 (W.last.last_err says why). */
static int
close_locked(const char *closed_by, char *file, size_t filelen)
{
    const struct ha_mallctl_ops *ops = W.ops;
    char side[PATH_MAX + 16], why[PATH_MAX + 128];
    size_t internal;
    uint64_t requests;
    long long bytes;
    int64_t closed_ns;
    int rc;

    if (file != NULL && filelen > 0)
        file[0] = '\0';
    if (!W.open)
        return 0;
    read_counters(ops, &internal, &requests);
    bytes = internal > W.internal0 ? (long long)(internal - W.internal0) : 0;
    rc = ha_mallctl_log_stop(ops);
    closed_ns = now_ns();
    close(W.fd);
    why[0] = '\0';
    if (rc != 0) {
        ha_err_set(why, sizeof(why), "prof.log_stop failed: %s (%s)",
                 strerror(rc), rc == EFAULT ? "the log could not be written"
                                            : "jemalloc refused");
    } else if ((size_t)snprintf(side, sizeof(side), "%s.maps", W.staged) >=
                   sizeof(side) ||
               (rc = write_maps(side)) != 0 ||
               (size_t)snprintf(side, sizeof(side), "%s.window", W.staged) >=
                   sizeof(side) ||
               (rc = write_window(side, closed_by, closed_ns,
                                  requests - W.requests0, bytes,
                                  clock_tick_ns(ops))) != 0) {
        ha_err_set(why, sizeof(why), "%s: %s", side,
                   strerror(rc ? rc : ENAMETOOLONG));
    } else {
        char bid[256];

        /* A log without build-ids is still a log. */
        if (ha_buildid_record(W.staged, bid, sizeof(bid)) != 0)
            ha_log_warn("%s: build-ids not recorded: %s", W.name, bid);
        /* Its side files first: whoever finds the log finds them. */
        if ((rc = publish_one(".maps")) != 0 ||
            (rc = publish_one(".window")) != 0 ||
            ((rc = publish_one(".buildid")) != 0 && rc != ENOENT) ||
            (rc = publish_one("")) != 0)
            ha_err_set(why, sizeof(why), "cannot publish %s into %s: %s",
                       W.name, W.dir, strerror(rc));
    }
    if (why[0] != '\0') {
        static const char *const sides[] = {"", ".maps", ".window",
                                            ".buildid"};

        for (size_t i = 0; i < HA_ARRAY_SIZE(sides); i++) {
            snprintf(side, sizeof(side), "%s%s", W.staged, sides[i]);
            unlink(side);
        }
        ha_log_warn("lifetime window %s closed (%s) but not kept: %s",
                    W.name, closed_by, why);
    } else {
        ha_log_notice("lifetime window closed (%s) after %.1f s: %s/%s, "
                      "%lld bytes of jemalloc's memory at the end",
                      closed_by, (double)(closed_ns - W.opened_ns) / 1e9,
                      W.dir, W.name, bytes);
        if (file != NULL)
            ha_err_set(file, filelen, "%s/%s", W.dir, W.name);
        if (W.retention_count > 0 || W.retention_bytes > 0)
            (void)ha_dumpfiles_retain(W.prefix, W.retention_count,
                                      W.retention_bytes);
    }
    pthread_mutex_lock(&W.lock);
    W.open = false;
    W.closing = false;
    W.fd = -1;
    ha_strlcpy(W.last.last, why[0] ? "" : W.name, sizeof(W.last.last));
    ha_strlcpy(W.last.last_why, closed_by, sizeof(W.last.last_why));
    W.last.last_seconds = (closed_ns - W.opened_ns) / 1000000000;
    W.last.last_bytes = bytes;
    ha_strlcpy(W.last.last_err, why, sizeof(W.last.last_err));
    pthread_mutex_unlock(&W.lock);
    return why[0] ? -1 : 0;
}

/* The process exits with a window open: close it first (jemalloc's own
 * handler, registered before ours, runs after and finds it stopped). */
static void
at_exit(void)
{
    pthread_mutex_lock(&W.op);
    if (W.open && W.ops != NULL)
        (void)close_locked("exit", NULL, 0);
    pthread_mutex_unlock(&W.op);
}

/* ------------------------------------------------------------------
 * Jobs
 * ------------------------------------------------------------------ */

struct win_job {
    struct ha_job job;          /* for ha_worker_submit (tick) */
    const struct ha_heap *heap;
    bool open;                  /* open, else close */
    unsigned seconds;
    char closed_by[32];
    int rc;
    char file[PATH_MAX];
    char err[PATH_MAX + 512];
};

static void
job_run(void *arg)
{
    struct win_job *j = arg;

    pthread_mutex_lock(&W.op);
    if (j->open) {
        j->rc = open_locked(j->heap, j->seconds, j->err, sizeof(j->err));
        if (j->rc == 0 && !W.atexit_set) {
            /* The exit-handler list's lock (core/forkguard.h). */
            ha_forkguard_enter();
            W.atexit_set = atexit(at_exit) == 0;
            ha_forkguard_leave();
        }
    } else {
        j->rc = close_locked(j->closed_by, j->file, sizeof(j->file));
        if (j->rc != 0)
            ha_strlcpy(j->err, W.last.last_err, sizeof(j->err));
    }
    pthread_mutex_unlock(&W.op);
}

static void
job_free(void *arg)
{
    free(arg);
}

/* The asking task stopped waiting for an open: once it has run, the
 * window (if it opened) still needs the owner's ticks. */
static void
open_discard(void *arg)
{
    struct win_job *j = arg;
    struct ha_heap *heap = (struct ha_heap *)j->heap;

    if (j->rc == 0 && heap->window_opened != NULL)
        heap->window_opened(heap->window_arg);
    free(j);
}

/* A queued close's end, on the loop. */
static void
job_done(void *arg)
{
    struct win_job *j = arg;

    if (!j->job.ran) {
        /* The worker went away first: ha_logwin_shutdown closes it. */
        pthread_mutex_lock(&W.lock);
        W.closing = false;
        pthread_mutex_unlock(&W.lock);
    }
    free(j);
}

static struct win_job *
job_new(const struct ha_heap *heap, bool open)
{
    struct win_job *j = calloc(1, sizeof(*j));

    if (j != NULL) {
        j->heap = heap;
        j->open = open;
        j->job.run = job_run;
        j->job.done = job_done;
        j->job.arg = j;
    }
    return j;
}

/* ------------------------------------------------------------------
 * API
 * ------------------------------------------------------------------ */

int
ha_logwin_open(struct ha_heap *heap, unsigned seconds, char *info,
               size_t infolen, char *err, size_t errlen)
{
    struct win_job *j = job_new(heap, true);
    int rc;

    if (info != NULL && infolen > 0)
        info[0] = '\0';
    if (j == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->seconds = seconds;
    j->rc = -1;
    /* Bounded as every wait for the disk worker (core/blockio.h). */
    if (ha_blockio_call_on(heap->dump_worker, "opening a lifetime window",
                           job_run, open_discard, j, err, errlen) != 0)
        return ha_task_stopped(ha_task_current()) != HA_TASK_GO
                   ? HA_HEAP_STOPPED
                   : HA_HEAP_ERROR;
    if ((rc = j->rc) != 0) {
        ha_err_set(err, errlen, "%s", j->err);
        free(j);
        return HA_HEAP_ERROR;
    }
    free(j);
    {
        struct ha_logwin_state st;

        ha_logwin_state(heap, &st);
        ha_err_set(info, infolen,
                   "lifetime window open for %u s (at most %lld bytes of "
                   "jemalloc's memory): every sampled allocation freed "
                   "until then is logged, then published as %s "
                   "(stats_heap_dumps kind 'log'; read it with "
                   "heap_lifetimes('%s'))",
                   seconds, st.max_bytes, st.file, st.file);
    }
    if (heap->window_opened != NULL)
        heap->window_opened(heap->window_arg);
    return 0;
}

int
ha_logwin_close(struct ha_heap *heap, char *info, size_t infolen,
                char *err, size_t errlen)
{
    struct ha_logwin_state st;
    struct win_job *j;

    if (info != NULL && infolen > 0)
        info[0] = '\0';
    ha_logwin_state(heap, &st);
    if (!st.open) {
        ha_err_set(info, infolen, "no lifetime window is open");
        return 0;
    }
    if (!st.ours) {
        ha_err_set(err, errlen, "the open lifetime window (%s) is another "
                                "heapadmin instance's in this process",
                   st.file);
        return HA_HEAP_ERROR;
    }
    if ((j = job_new(heap, false)) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    ha_strlcpy(j->closed_by, "operator", sizeof(j->closed_by));
    pthread_mutex_lock(&W.lock);
    W.closing = true;
    pthread_mutex_unlock(&W.lock);
    if (ha_blockio_call_on(heap->dump_worker, "closing a lifetime window",
                           job_run, job_free, j, err, errlen) != 0)
        return ha_task_stopped(ha_task_current()) != HA_TASK_GO
                   ? HA_HEAP_STOPPED
                   : HA_HEAP_ERROR;
    if (j->rc != 0) {
        ha_err_set(err, errlen, "jemalloc-log_now: %s", j->err);
        free(j);
        return HA_HEAP_ERROR;
    }
    ha_err_set(info, infolen, "lifetime window closed: log published as %s",
               j->file);
    free(j);
    return 0;
}

void
ha_logwin_state(const struct ha_heap *heap, struct ha_logwin_state *st)
{
    size_t internal = 0;
    bool ours;

    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&W.lock);
    *st = W.last;
    st->open = W.open;
    st->closing = W.closing;
    ours = W.open && W.owner == heap;
    st->ours = ours;
    st->max_bytes = W.open ? W.max_bytes
                           : heap->log_max_bytes > 0
                                 ? heap->log_max_bytes
                                 : HA_LOGWIN_DEFAULT_MAX_BYTES;
    st->bytes = -1;
    if (W.open) {
        long long left = (W.deadline_ms - ha_clock_ms() + 999) / 1000;

        st->seconds = W.seconds;
        st->seconds_left = left > 0 ? left : 0;
        ha_strlcpy(st->file, W.name, sizeof(st->file));
        /* Read the counter outside nothing: the statistics were refreshed
         * by whoever asked (a tick, a table's scan). */
        if (W.ops != NULL &&
            ha_mallctl_read_size(W.ops, "stats.arenas." ALL ".internal",
                                 &internal) == 0)
            st->bytes = internal > W.internal0
                            ? (long long)(internal - W.internal0)
                            : 0;
    }
    pthread_mutex_unlock(&W.lock);
}

long
ha_logwin_tick(struct ha_heap *heap)
{
    struct ha_logwin_state st;
    struct win_job *j;
    char err[256];
    const char *why = NULL;
    int64_t left_ms;

    ha_heap_refresh_stats(heap);
    ha_logwin_state(heap, &st);
    if (!st.open || !st.ours)
        return -1;
    if (st.closing)
        return 1000;
    pthread_mutex_lock(&W.lock);
    left_ms = W.deadline_ms - ha_clock_ms();
    pthread_mutex_unlock(&W.lock);
    if (left_ms <= 0)
        why = "time";
    else if (st.bytes >= st.max_bytes)
        why = "memory";
    if (why == NULL)
        return left_ms < 1000 ? (long)left_ms : 1000;
    if (why[0] == 'm')
        ha_log_warn("lifetime window %s closes early: jemalloc holds %lld "
                    "bytes for it, jemalloc-log_max_bytes is %lld",
                    st.file, st.bytes, st.max_bytes);
    if ((j = job_new(heap, false)) == NULL) {
        ha_log_error("lifetime window %s: out of memory queueing its close",
                     st.file);
        return 1000;
    }
    ha_strlcpy(j->closed_by, why, sizeof(j->closed_by));
    j->job.what = "closing a lifetime window";
    pthread_mutex_lock(&W.lock);
    W.closing = true;
    pthread_mutex_unlock(&W.lock);
    if (ha_worker_submit(heap->dump_worker, &j->job, err, sizeof(err)) !=
        0) {
        ha_log_error("lifetime window %s: its close was not queued: %s",
                     st.file, err);
        pthread_mutex_lock(&W.lock);
        W.closing = false;
        pthread_mutex_unlock(&W.lock);
        free(j);
        return 1000;
    }
    return 1000;
}

void
ha_logwin_shutdown(struct ha_heap *heap)
{
    pthread_mutex_lock(&W.op);
    if (W.open && W.owner == heap)
        (void)close_locked("stop", NULL, 0);
    pthread_mutex_unlock(&W.op);
}

void
ha_logwin_fork_child(void)
{
    /* The child's only thread: nobody holds either lock here. */
    pthread_mutex_init(&W.op, NULL);
    pthread_mutex_init(&W.lock, NULL);
    if (W.open && W.via_proc && W.fd >= 0 && W.ops != NULL) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

        /* jemalloc reopens /proc/self/fd/<fd> at the stop: make that
         * /dev/null in the child, so the parent's file is never
         * touched, then stop the child's log. */
        if (null >= 0 && dup3(null, W.fd, O_CLOEXEC) >= 0) {
            (void)ha_mallctl_log_stop(W.ops);
            close(W.fd);
        }
        if (null >= 0 && null != W.fd)
            close(null);
    } else if (W.fd >= 0) {
        close(W.fd);
    }
    W.open = W.closing = false;
    W.fd = -1;
    W.owner = NULL;
}
