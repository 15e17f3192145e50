/* SPDX-License-Identifier: MIT
 *
 * The datadir's dumps, listed (dumps.h), with the totals of each dump
 * parsed once per file identity.
 */
#include "heap/dumps.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/task.h"
#include "core/util.h"
#include "heap/profiles.h"
#include "prof/buildid.h"
#include "prof/dumpfile.h"
#include "prof/dumpmem.h"
#include "prof/heapv2.h"
#include "prof/proflog.h"

/* ------------------------------------------------------------------
 * Totals, kept per file identity (the worker's: only jobs touch them)
 * ------------------------------------------------------------------ */

struct ha_dump_totals {
    struct totals_entry {
        char *name;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        bool ok;
        long long period, bytes, objects;
        bool has_alloc;
        long long alloc_bytes, alloc_objects;
        uint64_t seen;      /* the scan that last listed it */
    } *e;
    size_t n, cap;
    uint64_t scan;
};

#define TOTALS_MAX 8192     /* entries kept; the oldest scans' go first */

/* A log's totals: what was freed in its window, scaled as its samples
 * are in heap_lifetimes. */
static void
log_totals(struct totals_entry *e, const char *buf, size_t len)
{
    struct ha_proflog log;
    char err[256];
    double objs = 0, bytes = 0;
    uint64_t period;

    if (ha_proflog_parse(buf, len, &log, err, sizeof(err)) != 0)
        return;
    period = ha_proflog_period(&log);
    for (size_t i = 0; i < log.n_allocs; i++) {
        double w = ha_proflog_weight(period, log.allocs[i].usize);

        objs += w;
        bytes += w * (double)log.allocs[i].usize;
    }
    e->ok = true;
    e->period = (long long)period;
    e->bytes = (long long)(bytes + 0.5);
    e->objects = (long long)(objs + 0.5);
    e->has_alloc = false;
    ha_proflog_free(&log);
}

/* The totals of the dump st describes: cached, or parsed now and kept. */
/* r's totals for the file identity st: kept, or read now (a dump from
 * fd when it is not -1: the descriptor st describes, read from 0). */
static void
totals_of(struct ha_dump_totals *t, const char *dir, struct ha_dump_entry *r,
          const struct stat *st, int fd)
{
    struct totals_entry *e = NULL;
    struct ha_heapv2 p;
    struct stat rst;
    char *buf, err[256];
    size_t len;
    int own = -1;

    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->e[i].name, r->name) == 0) {
            e = &t->e[i];
            break;
        }
    if (e != NULL && e->dev == st->st_dev && e->ino == st->st_ino &&
        e->size == st->st_size && e->mtime.tv_sec == st->st_mtim.tv_sec &&
        e->mtime.tv_nsec == st->st_mtim.tv_nsec)
        goto found;
    if (e == NULL) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 64;
            struct totals_entry *v = realloc(t->e, cap * sizeof(*v));

            if (v == NULL)
                return;
            t->e = v;
            t->cap = cap;
        }
        e = &t->e[t->n];
        memset(e, 0, sizeof(*e));
        if ((e->name = strdup(r->name)) == NULL)
            return;
        t->n++;
    }
    e->ok = false;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->size = st->st_size;
    e->mtime = st->st_mtim;
    if (r->d.log &&
        ha_dumpfile_read(dir, r->name, HA_DUMPFILE_LOG, &buf, &len, &rst, err,
                         sizeof(err)) == 0) {
        log_totals(e, buf, len);
        free(buf);
    } else if (!r->d.log &&
               (fd >= 0 ||
                (fd = own = ha_dumpfile_open(dir, r->name, HA_DUMPFILE_DUMP,
                                             &rst, err, sizeof(err))) >= 0)) {
        if (lseek(fd, 0, SEEK_SET) == 0 &&
            ha_heapv2_parse_fd(fd, (uint64_t)st->st_size, &p, err,
                               sizeof(err)) == 0) {
            e->ok = true;
            e->period = (long long)p.period;
            /* jeprof's Total, to the byte. */
            e->bytes = ha_heapv2_jeprof_int(p.scaled_bytes);
            e->objects = ha_heapv2_jeprof_int(p.scaled_objs);
            e->has_alloc = ha_heapv2_has_accum(&p);
            e->alloc_bytes = ha_heapv2_jeprof_int(p.scaled_accum_bytes);
            e->alloc_objects = ha_heapv2_jeprof_int(p.scaled_accum_objs);
            ha_heapv2_free(&p);
        }
        if (own >= 0)
            close(own);
    }
found:
    e->seen = t->scan;
    r->has_totals = e->ok;
    r->period = e->period;
    r->bytes = e->bytes;
    r->objects = e->objects;
    r->has_alloc = e->has_alloc;
    r->alloc_bytes = e->alloc_bytes;
    r->alloc_objects = e->alloc_objects;
}

/* Keeps the entries of the latest scans within TOTALS_MAX. */
static void
totals_trim(struct ha_dump_totals *t)
{
    size_t out = 0;

    for (size_t i = 0; i < t->n; i++) {
        if (t->n - (i - out) > TOTALS_MAX && t->e[i].seen != t->scan) {
            free(t->e[i].name);
            continue;
        }
        t->e[out++] = t->e[i];
    }
    t->n = out;
}

bool
ha_dump_totals_parses(struct ha_heap *heap, const char *name, int fd,
                      const struct stat *st)
{
    struct ha_dump_entry r;

    if (heap->dump_totals == NULL &&
        (heap->dump_totals = calloc(1, sizeof(*heap->dump_totals))) == NULL)
        return false;
    memset(&r, 0, sizeof(r));
    r.name = (char *)name; /* a dump's, by the caller's file rule */
    totals_of(heap->dump_totals, heap->datadir, &r, st, fd);
    return r.has_totals;
}

void
ha_dump_totals_free(struct ha_dump_totals *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->e[i].name);
    free(t->e);
    free(t);
}

/* ------------------------------------------------------------------
 * The listing, on the worker thread
 * ------------------------------------------------------------------ */

/* When dump name was taken: "# dumped_at" in its .buildid, else mtime. */
static int64_t
taken_ns(const char *datadir, const char *name, int64_t mtime_ns)
{
    char side[NAME_MAX + 16], *buf = NULL, err[64];
    struct ha_buildids b;
    struct stat st;
    size_t len = 0;
    int64_t t = mtime_ns;

    if ((size_t)snprintf(side, sizeof(side), "%s.buildid", name) >=
            sizeof(side) ||
        ha_dumpfile_read(datadir, side, HA_DUMPFILE_BUILDID, &buf, &len,
                         &st, err, sizeof(err)) != 0)
        return t;
    if (ha_buildids_parse(buf, len, &b, err, sizeof(err)) == 0) {
        if (b.dumped_at_ns > 0)
            t = b.dumped_at_ns;
        ha_buildids_free(&b);
    }
    free(buf);
    return t;
}

/* What <name>.mem says of dump r. */
static void
memory_of(const char *datadir, struct ha_dump_entry *r)
{
    char side[NAME_MAX + 16], *buf = NULL, err[64];
    struct ha_dumpmem m;
    struct stat st;
    size_t len = 0;

    r->kind = r->d.kind;
    r->resident = r->cgroup_usage = r->cgroup_limit = -1;
    r->cgroup_working_set = r->allocated = -1;
    if ((size_t)snprintf(side, sizeof(side), "%s%s", r->name,
                         HA_DUMPMEM_SUFFIX) >= sizeof(side) ||
        ha_dumpfile_read(datadir, side, HA_DUMPFILE_MEM, &buf, &len, &st,
                         err, sizeof(err)) != 0)
        return;
    if (ha_dumpmem_parse(buf, len, &m, err, sizeof(err)) == 0) {
        r->has_mem = true;
        if (strcmp(m.trigger, "limit") == 0)
            r->kind = "limit";
        r->resident = m.resident;
        r->cgroup_usage = m.cgroup_usage;
        r->cgroup_limit = m.cgroup_limit >= 0 ? m.cgroup_limit : -1;
        r->cgroup_working_set = m.cgroup_working_set;
        r->allocated = m.allocated;
        if (m.reason[0] != '\0')
            r->reason = strdup(m.reason);
    }
    free(buf);
}

/* Marks each process's dump of highest resident memory (the rule
 * retention keeps: ha_dumpmem_higher). */
static void
mark_peaks(struct ha_dump_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        struct ha_dump_entry *a = &l->e[i];
        bool best = a->resident >= 0;

        for (size_t j = 0; best && j < l->n; j++) {
            const struct ha_dump_entry *b = &l->e[j];

            if (j != i && b->d.pid == a->d.pid && b->resident >= 0 &&
                ha_dumpmem_higher(b->resident, b->mtime_ns, a->resident,
                                  a->mtime_ns))
                best = false;
        }
        a->peak = best;
    }
}

void
ha_dump_list_free(struct ha_dump_list *l)
{
    for (size_t i = 0; l->e != NULL && i < l->n; i++) {
        free(l->e[i].name);
        free(l->e[i].report);
        free(l->e[i].reason);
    }
    free(l->e);
    memset(l, 0, sizeof(*l));
}

struct list_job {
    struct ha_heap *heap;        /* datadir; dump_totals is the worker's */
    unsigned what;               /* HA_DUMPS_* */
    struct ha_dump_list l;
    int rc;                      /* 0, or -1: out of memory */
};

static void
list_run(void *arg)
{
    struct list_job *j = arg;
    const char *dir = j->heap->datadir;
    struct ha_dump_totals *t = j->heap->dump_totals;
    size_t cap = 0;
    struct dirent *de;
    DIR *d;

    if ((j->what & HA_DUMPS_TOTALS) && t == NULL)
        t = j->heap->dump_totals = calloc(1, sizeof(*t));
    if (t != NULL)
        t->scan++;
    if (dir == NULL || (d = opendir(dir)) == NULL)
        return; /* no datadir: no dumps */
    while ((de = readdir(d)) != NULL) {
        struct ha_dump_entry r;
        struct stat st;
        char path[PATH_MAX];

        memset(&r, 0, sizeof(r));
        if (!ha_dumpname_parse(de->d_name, &r.d) ||
            (r.d.log && !(j->what & HA_DUMPS_LOGS)) ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
                sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (j->l.n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct ha_dump_entry *p = realloc(j->l.e, ncap * sizeof(*p));

            if (p == NULL)
                goto oom;
            j->l.e = p;
            cap = ncap;
        }
        if ((r.name = strdup(de->d_name)) == NULL)
            goto oom;
        r.size = (long long)st.st_size;
        r.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
                     st.st_mtim.tv_nsec;
        r.taken_ns = r.mtime_ns;
        if (j->what & HA_DUMPS_TIME)
            r.taken_ns = taken_ns(dir, r.name, r.mtime_ns);
        if ((j->what & HA_DUMPS_TOTALS) && t != NULL)
            totals_of(t, dir, &r, &st, -1);
        if (j->what & HA_DUMPS_REPORT) {
            r.report = ha_heap_buildid_report(dir, r.name);
            r.has_report = true;
        }
        memory_of(dir, &r);
        j->l.e[j->l.n++] = r;
    }
    closedir(d);
    mark_peaks(&j->l);
    if (t != NULL)
        totals_trim(t);
    return;
oom:
    closedir(d);
    j->rc = -1;
}

static void
list_discard(void *arg)
{
    struct list_job *j = arg;

    ha_dump_list_free(&j->l);
    free(j);
}

int
ha_dumps_list(struct ha_heap *heap, unsigned what, struct ha_dump_list *out,
              char *err, size_t errlen)
{
    struct list_job *j = calloc(1, sizeof(*j));

    memset(out, 0, sizeof(*out));
    if (j == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->heap = heap;
    j->what = what;
    /* On -1 the job is list_discard's: never touch it again. */
    if (ha_task_offload(list_run, list_discard, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        list_discard(j);
        ha_err_set(err, errlen, "out of memory listing the dumps");
        return HA_HEAP_ERROR;
    }
    *out = j->l;
    free(j);
    return 0;
}
