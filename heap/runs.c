/* SPDX-License-Identifier: MIT
 *
 * The runs of the datadir's processes (see runs.h).
 */
#include "heap/runs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fdio.h"
#include "core/forkguard.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "heap/dumpfiles.h"
#include "prof/breakdown.h"
#include "prof/dumpmem.h"
#include "prof/dumpname.h"

#define RECORD_MAX 8192

/* ------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------ */

/* A record or end file of the datadir: a regular file only (a FIFO or
 * a device a crash or a bad restore left there is skipped). */
static ssize_t
read_small(const char *path, char *buf, size_t max)
{
    size_t got = 0;
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    while (got + 1 < max) {
        ssize_t n = read(fd, buf + got, max - 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

/* "<datadir>/runs/<pid>.<start>.<ext>" */
static int
run_path(const char *datadir, int64_t pid, int64_t start_ns,
         const char *ext, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/%s/%lld.%lld.%s", datadir, HA_RUNS_DIR,
                     (long long)pid, (long long)start_ns, ext);

    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int
ha_runs_write(const char *datadir, const struct ha_runrec *r)
{
    char path[PATH_MAX], tmp[PATH_MAX + 16], text[RECORD_MAX];
    int len = ha_runrec_format(r, text, sizeof(text)), fd, rc = 0;

    if (len < 0 || run_path(datadir, r->pid, r->started_ns, "run", path,
                            sizeof(path)) != 0)
        return ENAMETOOLONG;
    snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0)
        return errno;
    rc = ha_fdio_write_all(fd, text, (size_t)len);
    if (close(fd) != 0 && rc == 0)
        rc = errno;
    /* rename: a kill mid-write leaves the old record whole */
    if (rc == 0 && rename(tmp, path) != 0)
        rc = errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/* The runs armed for the process's exit: one per instance that started
 * one and has not stopped (ha_runs_exit in its struct ha_heap). The
 * lock is held for a list operation only, inside the fork gate
 * (core/forkguard.h): a host's fork child that starts an instance of its
 * own never finds it held. */
static pthread_mutex_t exits_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ha_runs_exit *exits;

/* Takes x off the armed list. exits_lock held. */
static void
exit_unlink(struct ha_runs_exit *x)
{
    for (struct ha_runs_exit **p = &exits; *p != NULL; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            break;
        }
    x->next = NULL;
}

/* Writes "<how> <now ns>" as a new file at path (never over one). */
static void
write_end(const char *path, const char *how)
{
    struct timespec now;
    char line[64];
    int fd, n;

    clock_gettime(CLOCK_REALTIME, &now);
    n = snprintf(line, sizeof(line), "%s %lld\n", how,
                 (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) != n) {
        /* nothing more to do at an exit */
    }
    close(fd);
}

void
ha_runs_end(const char *datadir, const struct ha_runrec *r, const char *how)
{
    char path[PATH_MAX];

    if (r->pid == (int64_t)getpid() &&
        run_path(datadir, r->pid, r->started_ns, "end", path,
                 sizeof(path)) == 0)
        write_end(path, how);
}

void
ha_runs_disarm_exit(struct ha_runs_exit *x)
{
    ha_forkguard_enter();
    pthread_mutex_lock(&exits_lock);
    exit_unlink(x);
    x->pid = 0;
    pthread_mutex_unlock(&exits_lock);
    ha_forkguard_leave();
}

/* The process's exit: a host that never stops heapadmin leaves an
 * "exited" end for each instance's run, so the next start does not take
 * it for a kill. A SIGKILL runs nothing, which is the point. The exit
 * never waits on the lock: a thread that holds it at that instant is
 * given a while, and should a fork child ever find it held, it writes
 * nothing of its parent's runs anyway (their pid is not its own). */
__attribute__((destructor)) static void
runs_exit(void)
{
    long self = (long)getpid();
    int tries = 0;

    while (pthread_mutex_trylock(&exits_lock) != 0)
        if (++tries == 1000)
            return;
        else
            sched_yield();
    for (const struct ha_runs_exit *x = exits; x != NULL; x = x->next)
        if (x->pid == self && x->path[0] != '\0')
            write_end(x->path, "exited");
    pthread_mutex_unlock(&exits_lock);
}

int64_t
ha_runs_process_start_ns(long pid)
{
    char path[64], buf[1024];
    unsigned long long ticks = 0;
    struct timespec real, boot;
    const char *p;
    long hz = sysconf(_SC_CLK_TCK);
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if ((n = read_small(path, buf, sizeof(buf))) <= 0)
        return -1;
    if ((p = strrchr(buf, ')')) == NULL)
        return -1;
    for (int field = 2; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &ticks) != 1 || hz <= 0)
        return -1;
    if (clock_gettime(CLOCK_REALTIME, &real) != 0 ||
        clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return -1;
    return ((int64_t)real.tv_sec - (int64_t)boot.tv_sec) * 1000000000LL +
           ((int64_t)real.tv_nsec - (int64_t)boot.tv_nsec) +
           (int64_t)(ticks * 1000000000ULL / (unsigned long long)hz);
}

/* Whether the run's process still runs: its pid, started within 2 s of
 * the record's start (a reused pid started later). */
static bool
run_alive(const struct ha_runrec *r)
{
    int64_t s;

    if (r->pid <= 0 || (kill((pid_t)r->pid, 0) != 0 && errno == ESRCH))
        return false;
    s = ha_runs_process_start_ns((long)r->pid);
    return s > 0 && s <= r->started_ns + 2000000000LL &&
           s >= r->started_ns - 2000000000LL;
}

/* ------------------------------------------------------------------
 * A run's dumps
 * ------------------------------------------------------------------ */

#define LIMIT_DUMPS_MAX 32

struct dump_scan {
    const char *prefix;          /* the dump stem */
    int64_t pid;
    int64_t from_ns, to_ns;      /* [from, to); to 0: open */
    struct ha_run_entry *e;
    int64_t peak_ns, last_ns, newest_ns;
    struct {
        int64_t ns;
        char name[256];
    } limit[LIMIT_DUMPS_MAX];    /* its limit dumps, to list in order */
    size_t n_limit;
};

static int
by_time(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/* e's limit dumps, oldest first, ", "-joined. */
static void
list_limit_dumps(struct dump_scan *s)
{
    size_t at = 0;

    qsort(s->limit, s->n_limit, sizeof(s->limit[0]), by_time);
    s->e->limit_dumps[0] = '\0';
    for (size_t i = 0; i < s->n_limit; i++) {
        int n = snprintf(s->e->limit_dumps + at,
                         sizeof(s->e->limit_dumps) - at, "%s%s",
                         at ? ", " : "", s->limit[i].name);

        if (n < 0 || (size_t)n >= sizeof(s->e->limit_dumps) - at) {
            s->e->limit_dumps[at] = '\0';
            break;
        }
        at += (size_t)n;
    }
}

/* One directory (rel: "" for the datadir, "earlier-runs/<d>/"). */
static void
scan_dir(const char *datadir, const char *rel, struct dump_scan *s)
{
    char dir[PATH_MAX], path[PATH_MAX], name[PATH_MAX], buf[8192], err[64];
    size_t pl = strlen(s->prefix);
    struct dirent *de;
    DIR *d;

    if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", datadir, rel) >=
            sizeof(dir) ||
        (d = opendir(dir)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        struct ha_dump_name dn;
        struct ha_dumpmem m;
        struct stat st;
        int64_t mt;
        ssize_t n;

        if (strncmp(de->d_name, s->prefix, pl) != 0 ||
            de->d_name[pl] != '.' || !ha_dumpname_parse(de->d_name, &dn) ||
            dn.pid != s->pid ||
            (size_t)snprintf(path, sizeof(path), "%s%s", dir, de->d_name) >=
                sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        mt = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        if (mt < s->from_ns || (s->to_ns > 0 && mt >= s->to_ns))
            continue;
        snprintf(name, sizeof(name), "%s%s", rel, de->d_name);
        s->e->n_dumps++;
        if (mt > s->last_ns) {
            s->last_ns = mt;
            ha_strlcpy(s->e->last_dump, name, sizeof(s->e->last_dump));
        }
        if (mt > s->newest_ns)
            s->newest_ns = mt;
        if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir, de->d_name,
                             HA_DUMPMEM_SUFFIX) >= sizeof(path) ||
            (n = read_small(path, buf, sizeof(buf))) <= 0 ||
            ha_dumpmem_parse(buf, (size_t)n, &m, err, sizeof(err)) != 0)
            continue;
        if (strcmp(m.trigger, "limit") == 0) {
            if (s->n_limit < LIMIT_DUMPS_MAX) {
                s->limit[s->n_limit].ns = mt;
                ha_strlcpy(s->limit[s->n_limit].name, name,
                           sizeof(s->limit[0].name));
                s->n_limit++;
            }
            s->e->n_limit_dumps++;
        }
        if (m.resident >= 0 &&
            (s->e->peak_dump[0] == '\0' ||
             ha_dumpmem_higher(m.resident, mt, s->e->peak_resident,
                               s->peak_ns))) {
            /* peak_resident holds the dumps' best until the record's is
             * weighed in (find_dumps) */
            s->e->peak_resident = m.resident;
            s->peak_ns = mt;
            ha_strlcpy(s->e->peak_dump, name, sizeof(s->e->peak_dump));
        }
    }
    closedir(d);
}

/* e's dumps in the datadir and under earlier-runs/, from its start to
 * to_ns (the next start of the same pid; 0: none). Returns the newest
 * dump's time. */
static int64_t
find_dumps(const char *datadir, struct ha_run_entry *e, int64_t to_ns)
{
    struct dump_scan *sp = calloc(1, sizeof(*sp));
    char dir[PATH_MAX], rel[PATH_MAX];
    struct dirent *de;
    int64_t newest;
    DIR *d;

    e->peak_resident = -1;
    if (sp == NULL)
        return 0;
    sp->prefix = e->r.prefix[0] ? e->r.prefix : "proxysql";
    sp->pid = e->r.pid;
    sp->from_ns = e->r.started_ns - 1000000000LL;
    sp->to_ns = to_ns;
    sp->e = e;
    scan_dir(datadir, "", sp);
    snprintf(dir, sizeof(dir), "%s/%s", datadir, HA_DUMPFILES_EARLIER);
    if ((d = opendir(dir)) != NULL) {
        while ((de = readdir(d)) != NULL) {
            char pidpart[32];

            /* the pid-1 rule names them "<stem>.<pid>.<time>" */
            snprintf(pidpart, sizeof(pidpart), ".%lld.",
                     (long long)e->r.pid);
            if (de->d_name[0] == '.' || strstr(de->d_name, pidpart) == NULL)
                continue;
            if ((size_t)snprintf(rel, sizeof(rel), "%s/%s/",
                                 HA_DUMPFILES_EARLIER, de->d_name) <
                sizeof(rel))
                scan_dir(datadir, rel, sp);
        }
        closedir(d);
    }
    if (e->r.peak_resident > e->peak_resident)
        e->peak_resident = e->r.peak_resident;
    list_limit_dumps(sp);
    newest = sp->newest_ns;
    free(sp);
    return newest;
}

/* ------------------------------------------------------------------
 * Listing and settling
 * ------------------------------------------------------------------ */

void
ha_run_list_free(struct ha_run_list *l)
{
    free(l->e);
    l->e = NULL;
    l->n = 0;
}

static int
newest_first(const void *a, const void *b)
{
    const struct ha_run_entry *x = a, *y = b;

    if (x->r.started_ns != y->r.started_ns)
        return x->r.started_ns > y->r.started_ns ? -1 : 1;
    return x->r.pid < y->r.pid ? -1 : x->r.pid > y->r.pid;
}

/* The end file of r, if any, into a. */
static void
read_end(const char *datadir, const struct ha_runrec *r,
         struct ha_runrec_after *a)
{
    char path[PATH_MAX], buf[128];
    ssize_t n;

    if (run_path(datadir, r->pid, r->started_ns, "end", path,
                 sizeof(path)) == 0 &&
        (n = read_small(path, buf, sizeof(buf))) > 0 &&
        ha_runrec_parse_end(buf, (size_t)n, a->end_how, sizeof(a->end_how),
                            &a->end_ns) == 0)
        a->has_end = true;
}

/* A record's new file left by a writer killed mid-write
 * ("<pid>.<start>.run.tmp<writer pid>", ha_runs_write): removed once its
 * writer is gone (the record it was to replace is whole). True for any
 * such name. */
static bool
leftover_tmp(const char *dir, const char *name)
{
    const char *t = strstr(name, ".run.tmp");
    char path[PATH_MAX], *end;
    long writer;

    if (t == NULL)
        return false;
    writer = strtol(t + strlen(".run.tmp"), &end, 10);
    if (*end == '\0' && writer > 0 && writer != (long)getpid() &&
        kill((pid_t)writer, 0) != 0 && errno == ESRCH &&
        (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) <
            sizeof(path))
        (void)unlink(path);
    return true;
}

/* Every record in runs/, newest first, dumps found, the runs newly over
 * settled and written down. self_start: this process's run (0: none). */
static int
list_runs(const char *datadir, int64_t self_start, struct ha_run_list *out)
{
    char dir[PATH_MAX], path[PATH_MAX];
    char *buf = malloc(RECORD_MAX);
    size_t cap = 0;
    struct dirent *de;
    DIR *d;

    memset(out, 0, sizeof(*out));
    if (buf == NULL)
        return -1;
    snprintf(dir, sizeof(dir), "%s/%s", datadir, HA_RUNS_DIR);
    if ((d = opendir(dir)) == NULL) {
        free(buf);
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        size_t nl = strlen(de->d_name);
        struct ha_run_entry e;
        char err[128];
        ssize_t n;

        if (leftover_tmp(dir, de->d_name))
            continue;
        if (nl < 5 || strcmp(de->d_name + nl - 4, ".run") != 0 ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
                sizeof(path) ||
            (n = read_small(path, buf, RECORD_MAX)) <= 0)
            continue;
        memset(&e, 0, sizeof(e));
        if (ha_runrec_parse(buf, (size_t)n, &e.r, err, sizeof(err)) != 0)
            continue;
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct ha_run_entry *v = realloc(out->e, ncap * sizeof(*v));

            if (v == NULL)
                break;
            out->e = v;
            cap = ncap;
        }
        out->e[out->n++] = e;
    }
    closedir(d);
    free(buf);
    if (out->n > 1)
        qsort(out->e, out->n, sizeof(out->e[0]), newest_first);
    for (size_t i = 0; i < out->n; i++) {
        struct ha_run_entry *e = &out->e[i];
        int64_t to_ns = 0, newest;

        e->self = e->r.pid == (int64_t)getpid() &&
                  e->r.started_ns == self_start;
        /* the next start of the same pid ends its dumps' span */
        for (size_t j = 0; j < i; j++)
            if (out->e[j].r.pid == e->r.pid &&
                (to_ns == 0 || out->e[j].r.started_ns < to_ns))
                to_ns = out->e[j].r.started_ns;
        newest = find_dumps(datadir, e, to_ns);
        e->alive = e->self || run_alive(&e->r);
        if (!e->alive && e->r.how[0] == '\0') {
            struct ha_runrec_after a;
            uint64_t kills;

            memset(&a, 0, sizeof(a));
            a.oom_kills_now = -1;
            a.newest_dump_ns = newest;
            read_end(datadir, &e->r, &a);
            if (e->r.cgroup_version != 0 && e->r.cgroup_dir[0] != '\0' &&
                ha_cgroup_oom_kills(e->r.cgroup_version, e->r.cgroup_dir,
                                    &kills) == 0)
                a.oom_kills_now = (int64_t)kills;
            ha_runrec_settle(&e->r, &a);
            e->settled_now = true;
            (void)ha_runs_write(datadir, &e->r);
        }
    }
    return 0;
}

int
ha_runs_list_now(const char *datadir, struct ha_run_list *out)
{
    return list_runs(datadir, 0, out);
}

/* Past HA_RUNS_KEEP: the oldest runs' files go (their dumps stay with
 * dump retention). */
static void
trim(const char *datadir, const struct ha_run_list *l)
{
    char path[PATH_MAX];

    for (size_t i = HA_RUNS_KEEP; i < l->n; i++) {
        if (l->e[i].alive)
            continue;
        if (run_path(datadir, l->e[i].r.pid, l->e[i].r.started_ns, "run",
                     path, sizeof(path)) == 0)
            unlink(path);
        if (run_path(datadir, l->e[i].r.pid, l->e[i].r.started_ns, "end",
                     path, sizeof(path)) == 0)
            unlink(path);
    }
}

/* The start-up log line for a run settled now. */
static void
log_settled(const struct ha_run_entry *e)
{
    char started[32], seen[32], peak[32], lim[32];
    bool oom = strcmp(e->r.how, "oom-killed") == 0;

    (void)ha_utc_stamp(started, sizeof(started),
                       e->r.started_ns / 1000000000LL, ' ');
    (void)ha_utc_stamp(seen, sizeof(seen),
                       (e->r.ended_ns > 0 ? e->r.ended_ns
                                          : e->r.last_seen_ns) /
                           1000000000LL,
                       ' ');
    ha_breakdown_format_bytes(e->peak_resident, peak, sizeof(peak));
    ha_breakdown_format_bytes(e->r.limit, lim, sizeof(lim));
    ha_log(oom ? HA_LOG_WARN : HA_LOG_NOTICE,
        "previous run: %s pid %lld, started %s UTC, %s %s UTC: %s (%s); peak "
        "resident %s%s%s; %ld dumps%s%s%s%s%s%s",
        e->r.program[0] ? e->r.program : "?", (long long)e->r.pid, started,
        e->r.ended_ns > 0 ? "ended" : "last seen", seen,
        oom ? "OOM-killed" : e->r.how, e->r.detail,
        e->peak_resident >= 0 ? peak : "unknown",
        e->r.limit >= 0 ? ", memory limit " : "", e->r.limit >= 0 ? lim : "",
        e->n_dumps, e->limit_dumps[0] ? "; limit dumps: " : "",
        e->limit_dumps, e->peak_dump[0] ? "; what was in the heap at its peak: "
                                        : "",
        e->peak_dump[0] ? "SELECT * FROM heap_top('" : "", e->peak_dump,
        e->peak_dump[0] ? "')" : "");
}

int
ha_runs_start(const char *datadir, struct ha_runrec *self,
              struct ha_runs_exit *x)
{
    struct ha_run_list l;
    char dir[PATH_MAX], end[PATH_MAX];
    int rc;

    if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", datadir, HA_RUNS_DIR) >=
        sizeof(dir))
        return -1;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        ha_log_warn("runs: cannot create %s: %s; how this run ends will not "
                    "be known at the next start",
                    dir, strerror(errno));
        return -1;
    }
    if (list_runs(datadir, 0, &l) == 0) {
        for (size_t i = 0; i < l.n; i++)
            if (l.e[i].settled_now &&
                strcmp(l.e[i].r.program, self->program) == 0)
                log_settled(&l.e[i]);
        trim(datadir, &l);
        ha_run_list_free(&l);
    }
    /* A second start in the same process (the library restarted): the
     * run goes on, an earlier stop's end file does not hold. */
    if (run_path(datadir, self->pid, self->started_ns, "end", end,
                 sizeof(end)) == 0)
        unlink(end);
    if ((rc = ha_runs_write(datadir, self)) != 0) {
        ha_log_warn("runs: cannot record this run in %s: %s", dir,
                    strerror(rc));
        return -1;
    }
    if (run_path(datadir, self->pid, self->started_ns, "end", end,
                 sizeof(end)) == 0) {
        ha_forkguard_enter();
        pthread_mutex_lock(&exits_lock);
        exit_unlink(x);
        ha_strlcpy(x->path, end, sizeof(x->path));
        x->pid = (long)self->pid;
        x->next = exits;
        exits = x;
        pthread_mutex_unlock(&exits_lock);
        ha_forkguard_leave();
    }
    return 0;
}

/* ------------------------------------------------------------------
 * The listing, on the worker
 * ------------------------------------------------------------------ */

struct list_job {
    char datadir[PATH_MAX];
    int64_t self_start;
    struct ha_run_list l;
    int rc;
};

static void
list_run(void *arg)
{
    struct list_job *j = arg;

    j->rc = list_runs(j->datadir, j->self_start, &j->l);
}

static void
list_discard(void *arg)
{
    struct list_job *j = arg;

    ha_run_list_free(&j->l);
    free(j);
}

int
ha_runs_list(struct ha_heap *heap, struct ha_run_list *out, char *err,
             size_t errlen)
{
    struct list_job *j = calloc(1, sizeof(*j));

    memset(out, 0, sizeof(*out));
    if (j == NULL || heap->datadir == NULL) {
        free(j);
        ha_err_set(err, errlen, j == NULL ? "out of memory"
                                          : "no datadir is configured");
        return HA_HEAP_ERROR;
    }
    ha_strlcpy(j->datadir, heap->datadir, sizeof(j->datadir));
    j->self_start = heap->run_started_ns;
    if (ha_task_offload(list_run, list_discard, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        list_discard(j);
        ha_err_set(err, errlen, "out of memory listing the runs");
        return HA_HEAP_ERROR;
    }
    *out = j->l;
    free(j);
    return 0;
}
