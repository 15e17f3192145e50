/* SPDX-License-Identifier: MIT
 *
 * The settings engine's actions (settings_impl.h): what acts at once when
 * a change set is applied, and cannot be undone: a heap dump, a purge, a
 * lifetime window opened or closed.
 */
#include "heap/settings.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blockio.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "heap/dumpjob.h"
#include "heap/heap.h"
#include "heap/logwin.h"
#include "heap/mallctl.h"
#include "heap/settings_impl.h"
#include "heap/symcopy.h"
#include "prof/breakdown.h"

/* ------------------------------------------------------------------
 * jemalloc-purge_now, jemalloc-purge_arena_now
 * ------------------------------------------------------------------ */

/* arena.<i>.purge, with what it returned in info: the dirty and muzzy
 * pages before and after, read around it from a fresh epoch. */
int
ha_settings_purge(struct ha_heap *heap, unsigned arena, char *info,
                  size_t infolen)
{
    const struct ha_mallctl_ops *ops = heap->ops;
    char name[64], ctl[64], who[32];
    size_t before = 0, after = 0, page = 0, m;
    bool counted;
    int rc;

    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", arena);
    (void)ha_mallctl_epoch(ops);
    counted = ha_mallctl_read_size(ops, "arenas.page", &page) == 0 &&
              ha_mallctl_read_size(ops, name, &before) == 0;
    snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", arena);
    if (counted && ha_mallctl_read_size(ops, name, &m) == 0)
        before += m;
    snprintf(ctl, sizeof(ctl), "arena.%u.purge", arena);
    if ((rc = ha_mallctl_action(ops, ctl)) != 0)
        return rc;
    (void)ha_mallctl_epoch(ops);
    heap->stats_epoch_ms = 0; /* the next scan refreshes */
    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", arena);
    counted = counted && ha_mallctl_read_size(ops, name, &after) == 0;
    snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", arena);
    if (counted && ha_mallctl_read_size(ops, name, &m) == 0)
        after += m;
    if (arena == HA_MALLCTL_ARENAS_ALL)
        ha_strlcpy(who, "all arenas", sizeof(who));
    else
        snprintf(who, sizeof(who), "arena %u", arena);
    if (counted) {
        char bytes[32];

        ha_breakdown_format_bytes(
            before > after ? (int64_t)((before - after) * page) : 0, bytes,
            sizeof(bytes));
        ha_err_set(info, infolen,
                   "%s purged (%s): %s of unused pages returned to the "
                   "system (dirty and muzzy pages %zu -> %zu)",
                   who, ctl, bytes, before, after);
    } else {
        ha_err_set(info, infolen,
                   "unused dirty pages of %s were returned to the system (%s)",
                   who, ctl);
    }
    return 0;
}

/* ------------------------------------------------------------------
 * jemalloc-dump_now
 * ------------------------------------------------------------------ */

/* Path of the running executable for the jeprof hint. */
static void
self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);

    if (n <= 0) {
        ha_strlcpy(buf, "heapadmind", len);
        return;
    }
    buf[n] = '\0';
}

/* dump_now's job: the dump job (first: ha_dump_job_run takes it) and
 * the heap to tell once its file is published, on the loop. */
struct dump_req {
    struct ha_dump_job dj;
    struct ha_heap *heap;
};

/* The statement stopped waiting (KILL, max_execution_time, shutdown, or
 * disk_timeout_ms on a slow disk): the dump still completes on the disk
 * worker, says where it went, and is pushed like any other (the heap
 * outlives every done callback of its dump worker: ha_engine_free). */
static void
dump_discard(void *arg)
{
    struct dump_req *r = arg;
    struct ha_dump_job *j = &r->dj;

    if (j->rc == 0 && j->file[0] != '\0') {
        ha_log_notice("%s: heap profile written to %s after the statement "
                      "that asked for it stopped waiting",
                      j->variable, j->file);
        ha_heap_published(r->heap);
    }
    free(r);
}

/* The job of a dump for variable: the dump, its build-ids and retention
 * on the worker (dumpjob.h); no free-space floor: an operator's dump is
 * never skipped. NULL when out of memory. */
static struct dump_req *
dump_req_new(struct ha_heap *heap, const char *variable)
{
    const struct ha_jemalloc_config *je = heap->je;
    struct dump_req *r = calloc(1, sizeof(*r));
    struct ha_dump_job *j;

    if (r == NULL)
        return NULL;
    r->heap = heap;
    j = &r->dj;
    ha_dump_job_init(j, heap, variable, "manual");
    j->ops = heap->ops;
    ha_strlcpy(j->reason, variable, sizeof(j->reason));
    j->dump = true;
    j->rc = -1;
    if (je != NULL) {
        j->retain = true;
        j->retention_count = je->dump_retention_count;
        j->retention_bytes = je->dump_retention_bytes;
    }
    return r;
}

/* Writes a heap dump for variable off the loop; file receives its path.
 * Returns 0, or -1 with the reason in err. */
static int
write_dump(struct ha_heap *heap, const char *variable, char *file,
           size_t filelen, long long *bytes, char *err, size_t errlen)
{
    struct ha_worker *w = heap->dump_worker;
    struct dump_req *r;
    const char *busy;
    int64_t for_ms, timeout_ms, deadline;
    bool late = false;
    int rc;

    /* A disk worker stuck in another job (a sample, a dump of the
     * timers) for longer than the disk timeout would hold this one
     * behind it: said at once. */
    if (ha_blockio_worker_stuck(w, &busy, &for_ms)) {
        ha_err_set(err, errlen,
                   "%s: the disk worker has been %s for %lld s: the "
                   "datadir's disk is not answering; no dump was taken",
                   variable, busy, (long long)(for_ms / 1000));
        return -1;
    }
    if ((r = dump_req_new(heap, variable)) == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", variable);
        return -1;
    }
    /* On -1 the job belongs to dump_discard. The wait is bounded like
     * any wait for the disk (core/blockio.h). */
    deadline = ha_blockio_deadline(&timeout_ms);
    if (ha_task_offload_until(w, "writing a heap dump (dump_now)", deadline,
                              ha_dump_job_run, dump_discard, r,
                              &late) != 0) {
        if (late)
            ha_err_set(err, errlen,
                       "%s: the dump was not written within "
                       "disk_timeout_ms = %lld: the datadir's disk is not "
                       "answering; the dump goes on, and its file will be "
                       "in stats_heap_dumps if the disk answers",
                       variable, (long long)timeout_ms);
        else
            ha_err_set(err, errlen,
                       "%s: the statement stopped waiting (KILL, "
                       "max_execution_time or shutdown); the dump goes on "
                       "and its file will be in stats_heap_dumps",
                       variable);
        return -1;
    }
    rc = r->dj.rc;
    *bytes = r->dj.bytes;
    if (rc == 0) {
        /* Published (heap/dumpfiles.h: copied out of /dev/shm and linked
         * into the datadir by the job): the push's cue. */
        ha_strlcpy(file, r->dj.file, filelen);
        ha_heap_published(heap);
    } else {
        ha_err_set(err, errlen, "%s", r->dj.err);
    }
    free(r);
    return rc;
}

/* Appends the symbolized copy of file (heap/symcopy.h) to info: a
 * failure leaves the dump a dump. */
static void
add_symbolized(struct ha_heap *heap, const char *file, char *info,
               size_t infolen)
{
    char sym[PATH_MAX + 8], why[512];
    size_t at = strlen(info);

    if (ha_symcopy_write(heap, file, sym, sizeof(sym), why, sizeof(why)) ==
        0) {
        snprintf(info + at, infolen - at,
                 "; symbolized copy %.400s (jeprof --text %.400s, "
                 "no binary needed)",
                 sym, sym);
    } else {
        ha_log_warn("%s: no symbolized copy: %s", file, why);
        snprintf(info + at, infolen - at,
                 "; the symbolized copy was not written: %.400s", why);
    }
}

int
ha_settings_dump_now(struct ha_heap *heap, const char *variable, char *info,
                     size_t infolen, char *err, size_t errlen)
{
    char file[PATH_MAX], exe[PATH_MAX];
    const char *base;
    long long bytes = -1;

    if (write_dump(heap, variable, file, sizeof(file), &bytes, err,
                   errlen) != 0)
        return -1;
    self_exe(exe, sizeof(exe));
    /* SQL first: it names what jeprof would guess at in a stripped
     * library (docs/getting-started.md). */
    base = strrchr(file, '/');
    base = base != NULL ? base + 1 : file;
    if (bytes >= 0)
        ha_err_set(info, infolen,
                   "heap profile written to %s (%lld bytes); read it with: "
                   "SELECT * FROM heap_top('%s'); or jeprof --text %s %s",
                   file, bytes, base, exe, file);
    else
        ha_err_set(info, infolen,
                   "heap profile written to %s; read it with: SELECT * FROM "
                   "heap_top('%s'); or jeprof --text %s %s",
                   file, base, exe, file);
    if (heap->dump_symbolized && file[0] == '/')
        add_symbolized(heap, file, info, infolen);
    return 0;
}

/* ------------------------------------------------------------------
 * jemalloc-log_now
 * ------------------------------------------------------------------ */

int
ha_settings_log_now(struct ha_heap *heap, const struct ha_settings_change *c,
                    char *info, size_t infolen, char *err, size_t errlen)
{
    const char *name = ha_settings_rows[c->row].name;
    char why[PATH_MAX + 512];
    int rc = c->value > 0
                 ? ha_logwin_open(heap, (unsigned)c->value, info, infolen,
                                  why, sizeof(why))
                 : ha_logwin_close(heap, info, infolen, why, sizeof(why));

    if (rc == HA_HEAP_STOPPED) {
        ha_err_set(err, errlen,
                   "%s: the statement stopped waiting (KILL, "
                   "max_execution_time or shutdown); the window %s anyway "
                   "(jemalloc-log_state)",
                   name, c->value > 0 ? "opens" : "closes");
        return -1;
    }
    if (rc != 0) {
        ha_err_set(err, errlen, "%s = '%s': %s", name, c->text, why);
        return -1;
    }
    return 0;
}
