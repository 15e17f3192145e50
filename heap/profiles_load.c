/* SPDX-License-Identifier: MIT
 *
 * Loading heap profiles for the heap tables: a dump or a lifetime log by
 * name, from the cache (profiles_cache.c) or read now, and 'live'
 * (its text from profiles_live.c); see heap/profiles.h.
 *
 * A load is a job for the worker thread (struct load): the job reads,
 * parses and symbolizes into a profile nobody else sees yet; the loop
 * then puts it in the cache (load_land) and wakes the tasks that waited
 * for the same file. load_land runs whether the asking task still waits
 * or gave up (the offload's discard callback), so a stopped query still
 * leaves its profile for the next one.
 */
#include "heap/profiles.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/blockio.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/buildid.h"
#include "prof/dumpfile.h"
#include "prof/symbolize.h"
#include "prof/wrapdetect.h"
#include "heap/profiles_int.h"
#include "heap/profmetrics.h"

/* ------------------------------------------------------------------
 * Loading (worker thread)
 * ------------------------------------------------------------------ */

/* Modules of pr whose recorded build-id differs from the file on disk:
 * their addresses lose their names (HA_SYMS_STALE) and pr->stale lists
 * them. side is the dump's .buildid text (may be NULL). */
static int
mark_stale(struct ha_symbolizer *s, struct ha_heap_profile *pr,
           const char *side, size_t side_len)
{
    struct ha_buildids ids = {0};
    struct ha_buf report = HA_BUF_INIT;
    char why[384];
    uint32_t *stale_mods = NULL;
    size_t n_stale = 0;
    int ret = -1;

    if (side == NULL)
        return 0;
    if (ha_buildids_parse(side, side_len, &ids, why, sizeof(why)) != 0)
        return 0; /* an unreadable side file is as good as none */
    pr->has_buildids = true;
    if (ids.dumped_at_ns > 0)
        pr->taken_ns = ids.dumped_at_ns;
    stale_mods = calloc(pr->maps.n_modules ? pr->maps.n_modules : 1,
                        sizeof(*stale_mods));
    if (stale_mods == NULL)
        goto out;
    for (size_t m = 0; m < pr->maps.n_modules; m++) {
        const char *path = ha_maps_module_path(&pr->maps, m);
        const char *rec = ha_buildids_find(&ids, path);
        const char *disk;
        uint32_t off;

        if (rec == NULL || !pr->maps.modules[m].exec)
            continue;
        disk = ha_symbolizer_build_id(s, path);
        if (disk != NULL && strcmp(disk, rec) == 0)
            continue;
        snprintf(why, sizeof(why), "dump build-id %s, on disk %s", rec,
                 disk != NULL ? disk : "none or unreadable");
        ha_buf_printf(&report, "%s%s (%s)", report.len ? "; " : "", path, why);
        {
            char detail[sizeof(why) + 96];

            snprintf(detail, sizeof(detail),
                     "replaced on disk since the "
                     "dump (%s): left unnamed",
                     why);
            if (ha_syms_set_module(&pr->syms, path, rec, HA_SYMS_SRC_NONE,
                                   detail) != 0)
                goto out;
        }
        off = ha_strtab_intern(&pr->syms.strs, path, strlen(path));
        if (off == UINT32_MAX)
            goto out;
        stale_mods[n_stale++] = off;
    }
    /* The symbolizer named them from the file on disk: forget it. The
     * offset comes from the mapping alone (the file that was mapped is
     * gone): its file offset, which is its ELF address in GNU ld's
     * shared objects and PIEs. */
    for (size_t i = 0; i < pr->syms.n_addrs && n_stale > 0; i++) {
        struct ha_syms_addr *a = &pr->syms.addrs[i];

        for (size_t k = 0; k < n_stale; k++)
            if (a->module == stale_mods[k]) {
                uint64_t foff = 0;

                ha_maps_lookup(&pr->maps, a->pc, &foff);
                if (ha_syms_rename_unnamed(&pr->syms, i, HA_SYMS_STALE,
                                           ha_syms_str(&pr->syms, a->module),
                                           foff) != 0)
                    goto out;
                break;
            }
    }
    if (report.len > 0) {
        if (ha_buf_failed(&report) ||
            (pr->stale = strndup((const char *)report.data, report.len)) ==
                NULL)
            goto out;
    }
    ret = 0;
out:
    free(stale_mods);
    ha_buf_free(&report);
    ha_buildids_free(&ids);
    return ret;
}

struct ha_symbolizer *
ha_heap_symbolizer(struct ha_heap *heap)
{
    struct ha_symbolizer_limits lim;
    char cache[PATH_MAX];

    if (heap->symbolizer != NULL)
        return heap->symbolizer;
    memset(&lim, 0, sizeof(lim));
    /* Symbol indexes: private to the daemon, like everything in the
     * datadir, and in a directory no dump name can reach. */
    if (heap->datadir != NULL &&
        (size_t)snprintf(cache, sizeof(cache), "%s/" HA_HEAP_SYMBOL_CACHE,
                         heap->datadir) < sizeof(cache))
        lim.index_dir = cache;
    if (heap->je != NULL) {
        lim.debug_root = heap->je->debug_root;
        lim.debuginfod = heap->je->debuginfod != 0;
        lim.debuginfod_timeout_ms = (unsigned)heap->je->debuginfod_timeout_ms;
    }
    lim.thread_init = heap->thread_init;
    lim.thread_init_arg = heap->thread_init_arg;
    heap->symbolizer = ha_symbolizer_new(&lim);
    return heap->symbolizer;
}

/* A lifetime log's text into pr->log and pr->p. */
static int
log_parse(struct ha_heap *heap, struct ha_heap_profile *pr, const char *buf,
          size_t len, char *err, size_t errlen)
{
    if ((pr->log = calloc(1, sizeof(*pr->log))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    if (ha_logfile_parse(heap->datadir, pr->name, buf, len, pr->log, &pr->p,
                         err, errlen) != 0)
        return -1;
    /* The time it describes: when its window closed. */
    if (pr->log->has_window && pr->log->window.closed_ns > 0)
        pr->taken_ns = pr->log->window.closed_ns;
    return 0;
}

int
ha_heap_wrappers_make(const char *conf_text, const char *what,
                      const struct ha_heapv2 *p, struct ha_syms *syms,
                      char *err, size_t errlen)
{
    struct ha_wrap_conf conf;
    char why[512];
    int rc;

    if (ha_wrap_conf_parse(conf_text, &conf, why, sizeof(why)) != 0) {
        /* Checked when it was set: only memory can fail here. */
        ha_log_warn("%s: allocation wrappers '%s' not applied: %s", what,
                    conf_text != NULL ? conf_text : "", why);
        memset(&conf, 0, sizeof(conf));
    }
    ha_wrap_set_free(syms->wrappers);
    syms->wrappers = NULL;
    rc = ha_wrap_set_make(&conf, p, syms, &syms->wrappers, why, sizeof(why));
    ha_wrap_conf_free(&conf);
    if (rc != 0)
        ha_err_set(err, errlen, "%s: %s", what, why);
    return rc;
}

/* Parses and symbolizes buf into pr (name and identity already set);
 * buf NULL: pr->p is parsed already. side: the .buildid text or NULL.
 * Worker thread. Returns 0 or -1 with err set. */
static int
profile_load(struct ha_heap *heap, struct ha_heap_profile *pr, const char *buf,
             size_t len, const char *side, size_t side_len, char *err,
             size_t errlen)
{
    struct ha_symbolize_ops ops;
    uint64_t *pcs = NULL;
    uint32_t *index = NULL;
    size_t n_pcs = 0;
    char why[512];
    int ret = -1;

    if ((buf == NULL ? 0
         : pr->is_log
             ? log_parse(heap, pr, buf, len, why, sizeof(why))
             : ha_heapv2_parse(buf, len, &pr->p, why, sizeof(why))) != 0 ||
        ha_maps_parse(pr->p.maps, pr->p.maps_len, &pr->maps, why,
                      sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", pr->name, why);
        return -1;
    }
    if (ha_heap_symbolizer(heap) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    ops = ha_symbolizer_ops(heap->symbolizer);
    /* Before: an answer that lands while this runs makes a difference. */
    pr->generation = ha_symbolizer_generation(heap->symbolizer);
    if (ha_agg_lookup_index(&pr->p, &pcs, &n_pcs, &index) != 0) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        goto out;
    }
    if (ops.symbolize(ops.ctx, &pr->maps, pcs, n_pcs, &pr->syms, why,
                      sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", pr->name, why);
        goto out;
    }
    /* Every later pass over the stacks finds frames by index. */
    ha_syms_set_frame_index(&pr->syms, pcs, n_pcs, index, pr->p.n_frames);
    index = NULL;
    if (mark_stale(heap->symbolizer, pr, side, side_len) != 0) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        goto out;
    }
    if (ha_heap_wrappers_make(pr->wrap_conf, pr->name, &pr->p, &pr->syms, err,
                              errlen) != 0)
        goto out;
    /* Memory by thread, while the stacks are in the cache: heap_threads
     * and the metrics read it (a log's stacks have no thread lines). */
    if (!pr->is_log &&
        ha_threads_rows(&pr->p, &pr->threads, &pr->n_threads) != 0) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        goto out;
    }
    ret = 0;
out:
    free(pcs);
    free(index);
    return ret;
}

static void
load_run(void *arg)
{
    struct load *l = arg;
    struct ha_heap_profile *pr = l->pr;
    char *buf = NULL, *side = NULL, side_name[NAME_MAX + 16];
    size_t len = 0, side_len = 0;
    struct stat st, side_st;

    l->rc = -1;
    if (pr->live) {
        l->rc = profile_load(l->heap, pr, l->text, l->text_len, NULL, 0, l->err,
                             sizeof(l->err));
        return;
    }
    if (pr->is_log) {
        if (ha_dumpfile_read(l->heap->datadir, pr->name, HA_DUMPFILE_LOG, &buf,
                             &len, &st, l->err, sizeof(l->err)) != 0)
            return;
    } else {
        /* A dump is parsed as it is read: no copy of it is made. */
        char why[512];
        int fd = ha_dumpfile_open(l->heap->datadir, pr->name, HA_DUMPFILE_DUMP,
                                  &st, l->err, sizeof(l->err));

        if (fd < 0)
            return;
        if (ha_heapv2_parse_fd(fd, (uint64_t)st.st_size, &pr->p, why,
                               sizeof(why)) != 0) {
            close(fd);
            ha_err_set(l->err, sizeof(l->err), "%s: %s", pr->name, why);
            return;
        }
        close(fd);
    }
    pr->dev = st.st_dev;
    pr->ino = st.st_ino;
    pr->size = st.st_size;
    pr->mtime = st.st_mtim;
    pr->taken_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if ((size_t)snprintf(side_name, sizeof(side_name), "%s.buildid", pr->name) <
            sizeof(side_name) &&
        ha_dumpfile_read(l->heap->datadir, side_name, HA_DUMPFILE_BUILDID,
                         &side, &side_len, &side_st, NULL, 0) != 0)
        side = NULL;
    l->rc = profile_load(l->heap, pr, buf, len, side, side_len, l->err,
                         sizeof(l->err));
    free(side);
    side = NULL;
    /* What memory looked like then, when recorded (the bins). */
    if (l->rc == 0 &&
        (size_t)snprintf(side_name, sizeof(side_name), "%s%s", pr->name,
                         HA_DUMPMEM_SUFFIX) < sizeof(side_name) &&
        ha_dumpfile_read(l->heap->datadir, side_name, HA_DUMPFILE_MEM, &side,
                         &side_len, &side_st, NULL, 0) == 0 &&
        (pr->mem = malloc(sizeof(*pr->mem))) != NULL &&
        ha_dumpmem_parse(side, side_len, pr->mem, NULL, 0) != 0) {
        free(pr->mem);
        pr->mem = NULL;
    }
    /* ... with the live samples' sizes (none in an older .mem: state
     * NONE; lines that do not read: taken as not recorded) */
    if (pr->mem != NULL && (pr->sizes = malloc(sizeof(*pr->sizes))) != NULL &&
        ha_livesizes_parse(side, side_len, pr->sizes, NULL, 0) != 0)
        memset(pr->sizes, 0, sizeof(*pr->sizes));
    /* Said once per dump read, not once per row: the alloc_* columns of
     * its tables are NULL. */
    if (l->rc == 0 && !pr->is_log && !ha_heapv2_has_accum(&pr->p))
        ha_log_info("%s carries no cumulative counters (written without "
                    "prof_accum): its alloc_* columns are NULL; start the "
                    "process with prof_accum:true (MALLOC_CONF, or "
                    "jemalloc_variables.prof_accum) to have them",
                    pr->name);
    free(side);
    free(buf);
}

static void
inflight_put(struct ha_heap_cache *c, struct inflight *fl)
{
    if (fl == NULL || --fl->refs > 0)
        return;
    for (struct inflight **pp = &c->inflight; *pp != NULL; pp = &(*pp)->next)
        if (*pp == fl) {
            *pp = fl->next;
            break;
        }
    free(fl->waiters);
    free(fl->name);
    free(fl);
}

/* On the loop, once the job ran: the profile goes to the cache and the
 * waiters wake. Runs whether the asking task still waits or not. */
static void
load_land(struct load *l)
{
    struct inflight *fl = l->fl;

    if (l->rc == 0 && !l->pr->live && l->cache != NULL) {
        l->pr->refs++; /* the cache's */
        ha_profiles_cache_insert(l->cache, l->pr);
    }
    if (l->rc == 0 && !l->pr->is_log)
        ha_profmetrics_note_profile(l->heap, l->pr->name, l->pr->live,
                                    l->pr->taken_ns, l->pr->threads,
                                    l->pr->n_threads);
    if (fl != NULL) {
        fl->landed = true;
        fl->rc = l->rc;
        ha_strlcpy(fl->err, l->err, sizeof(fl->err));
        for (size_t i = 0; i < fl->n_waiters; i++)
            ha_task_wake(fl->waiters[i]);
        fl->n_waiters = 0;
        /* Off the in-flight list: later askers find the cache. */
        for (struct inflight **pp = &l->cache->inflight; *pp != NULL;
             pp = &(*pp)->next)
            if (*pp == fl) {
                *pp = fl->next;
                fl->next = NULL;
                break;
            }
    }
}

/* Frees l and drops its hold on its in-flight record (landed: no longer
 * listed), freeing that with the last hold. */
static void
load_free(struct load *l)
{
    free(l->text);
    if (l->fl != NULL && --l->fl->refs == 0) {
        free(l->fl->waiters);
        free(l->fl->name);
        free(l->fl);
    }
    free(l);
}

/* The asking task gave up: land it anyway, then drop the job's hold. */
static void
load_discard(void *arg)
{
    struct load *l = arg;

    load_land(l);
    ha_heap_profile_put(l->pr);
    load_free(l);
}

/* Waits for fl to land (another task's load of the same file). */
static int
wait_inflight(struct ha_heap_cache *c, struct inflight *fl, char *err,
              size_t errlen)
{
    struct ha_task *t = ha_task_current();
    int rc;

    if (fl->n_waiters == fl->cap_waiters) {
        size_t cap = fl->cap_waiters ? fl->cap_waiters * 2 : 4;
        struct ha_task **w = realloc(fl->waiters, cap * sizeof(*w));

        if (w == NULL) {
            ha_err_set(err, errlen, "out of memory");
            return HA_HEAP_ERROR;
        }
        fl->waiters = w;
        fl->cap_waiters = cap;
    }
    fl->waiters[fl->n_waiters++] = t;
    fl->refs++;
    while (!fl->landed && ha_task_stopped(t) == HA_TASK_GO)
        ha_task_wait(t);
    if (!fl->landed) {
        for (size_t i = 0; i < fl->n_waiters; i++)
            if (fl->waiters[i] == t) {
                fl->waiters[i] = fl->waiters[--fl->n_waiters];
                break;
            }
        rc = HA_HEAP_STOPPED;
    } else {
        rc = fl->rc == 0 ? 0 : HA_HEAP_ERROR;
        if (rc != 0)
            ha_err_set(err, errlen, "%s", fl->err);
    }
    inflight_put(c, fl);
    return rc;
}

/* Runs l off the loop and lands it. Returns 0 (l->pr loaded, l freed
 * but for the profile, whose reference moves to *out), HA_HEAP_ERROR or
 * HA_HEAP_STOPPED (l is the discard's then). */
int
ha_profiles_run_load(struct load *l, struct ha_heap_profile **out, char *err,
                     size_t errlen)
{
    int rc;

    if (ha_task_offload(load_run, load_discard, l) != 0)
        return HA_HEAP_STOPPED;
    load_land(l);
    rc = l->rc;
    if (rc == 0)
        *out = l->pr;
    else {
        ha_err_set(err, errlen, "%s", l->err);
        ha_heap_profile_put(l->pr);
    }
    load_free(l);
    return rc == 0 ? 0 : HA_HEAP_ERROR;
}

/* ------------------------------------------------------------------
 * Getting a profile
 * ------------------------------------------------------------------ */

struct load *
ha_profiles_load_new(struct ha_heap *heap, struct ha_heap_cache *c,
                     const char *name, bool live, bool is_log)
{
    struct load *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    l->heap = heap;
    l->cache = c;
    l->pr = calloc(1, sizeof(*l->pr));
    if (l->pr == NULL || (l->pr->name = strdup(name)) == NULL) {
        free(l->pr);
        free(l);
        return NULL;
    }
    l->pr->refs = 1; /* the load's, then the caller's */
    l->pr->live = live;
    l->pr->is_log = is_log;
    if ((l->pr->wrap_conf = strdup(heap->alloc_wrappers)) == NULL) {
        free(l->pr->name);
        free(l->pr);
        free(l);
        return NULL;
    }
    /* What lands if the job never runs (the worker went away). */
    l->rc = -1;
    ha_err_set(l->err, sizeof(l->err), "%s: the load was abandoned", name);
    return l;
}

/* ha_dumpfile_stat on the I/O thread (core/blockio.h): the loop never
 * waits for the datadir's disk. */
struct stat_job {
    char datadir[PATH_MAX];
    char name[NAME_MAX + 1];
    enum ha_dumpfile_kind kind;
    struct stat st;
    int rc;
    char err[512];
};

static void
stat_job_run(void *arg)
{
    struct stat_job *j = arg;

    j->rc = ha_dumpfile_stat(j->datadir, j->name, j->kind, &j->st, j->err,
                             sizeof(j->err));
}

static int
stat_file(const char *datadir, const char *name, enum ha_dumpfile_kind kind,
          struct stat *st, char *err, size_t errlen)
{
    struct stat_job *j;
    int rc;

    if (datadir == NULL || strlen(name) >= sizeof(j->name))
        return ha_dumpfile_stat(datadir, name, kind, st, err, errlen);
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    ha_strlcpy(j->datadir, datadir, sizeof(j->datadir));
    ha_strlcpy(j->name, name, sizeof(j->name));
    j->kind = kind;
    if (ha_blockio_call("looking at a dump of the datadir", stat_job_run, free,
                        j, err, errlen) != 0)
        return -1;
    rc = j->rc;
    if (rc == 0)
        *st = j->st;
    else
        ha_err_set(err, errlen, "%s", j->err);
    free(j);
    return rc;
}

/* A dump, 'live', or (is_log) a lifetime log, from the cache or loaded
 * now. */
static int
get_common(struct ha_heap *heap, const char *name, bool admin, bool is_log,
           struct ha_heap_profile **out, char *err, size_t errlen)
{
    struct ha_heap_cache *c = ha_profiles_cache_of(heap);
    struct ha_heap_profile *pr;
    struct inflight *fl;
    struct load *l;
    struct stat st;
    bool live = !is_log && name != NULL && strcmp(name, HA_HEAP_LIVE) == 0;
    int rc;

    *out = NULL;
    if (c == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    if (live && !admin) {
        ha_err_set(err, errlen,
                   "a live profile ('" HA_HEAP_LIVE "') "
                   "needs an admin user; stats users may "
                   "read the dumps in stats_heap_dumps");
        return HA_HEAP_ERROR;
    }
    /* Made here, on the loop, before any job uses it: from then on its
     * pointer never changes, and only jobs use it. */
    if (ha_heap_symbolizer(heap) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    if (live) {
        if ((l = ha_profiles_load_new(heap, c, name, true, false)) == NULL) {
            ha_err_set(err, errlen, "out of memory");
            return HA_HEAP_ERROR;
        }
        /* The bins in the same pass: a fresh epoch just before the
         * dump (heap_fragmentation, which reads the samples' sizes when
         * it is asked: 50 ms for 4096 records, a cost for it alone). */
        if ((l->pr->mem = malloc(sizeof(*l->pr->mem))) != NULL)
            ha_profiles_live_memory(heap, l->pr->mem);
        l->pr->ops = heap->ops;
        if ((rc = ha_profiles_live_dump(heap, &l->text, &l->text_len, err,
                                        errlen)) != 0) {
            ha_heap_profile_put(l->pr);
            free(l);
            return rc;
        }
        {
            struct timespec now;

            clock_gettime(CLOCK_REALTIME, &now);
            l->pr->taken_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
        }
        return ha_profiles_run_load(l, out, err, errlen);
    }
    /* The identity first: a cached profile costs no read at all. */
    if (stat_file(heap->datadir, name,
                  is_log ? HA_DUMPFILE_LOG : HA_DUMPFILE_DUMP, &st, err,
                  errlen) != 0)
        return HA_HEAP_ERROR;
    for (;;) {
        if ((pr = ha_profiles_cache_find(heap, c, name, &st)) != NULL) {
            pr->last_use = ++c->clock;
            pr->refs++;
            *out = pr;
            return 0;
        }
        for (fl = c->inflight; fl != NULL; fl = fl->next)
            if (strcmp(fl->name, name) == 0 &&
                ha_profiles_same_file(&st, fl->st.st_dev, fl->st.st_ino,
                                      fl->st.st_size, &fl->st.st_mtim))
                break;
        if (fl == NULL || ha_task_current() == NULL)
            break;
        /* Someone reads this file already: its result is ours. */
        if ((rc = wait_inflight(c, fl, err, errlen)) != 0)
            return rc;
    }
    if ((l = ha_profiles_load_new(heap, c, name, false, is_log)) == NULL ||
        (fl = calloc(1, sizeof(*fl))) == NULL ||
        (fl->name = strdup(name)) == NULL) {
        if (l != NULL) {
            ha_heap_profile_put(l->pr);
            free(l);
        }
        if (fl != NULL)
            free(fl);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    fl->st = st;
    fl->refs = 1; /* the load's */
    fl->next = c->inflight;
    c->inflight = fl;
    l->fl = fl;
    return ha_profiles_run_load(l, out, err, errlen);
}

int
ha_heap_profile_get(struct ha_heap *heap, const char *name, bool admin,
                    struct ha_heap_profile **out, char *err, size_t errlen)
{
    return get_common(heap, name, admin, false, out, err, errlen);
}

int
ha_heap_log_get(struct ha_heap *heap, const char *name,
                struct ha_heap_profile **out, char *err, size_t errlen)
{
    return get_common(heap, name, false, true, out, err, errlen);
}

char *
ha_heap_buildid_report(const char *datadir, const char *name)
{
    struct ha_buildids ids = {0};
    struct ha_buf report = HA_BUF_INIT;
    char side_name[NAME_MAX + 16], *side = NULL, why[128], *ret = NULL;
    size_t len = 0;
    struct stat st;

    if ((size_t)snprintf(side_name, sizeof(side_name), "%s.buildid", name) >=
            sizeof(side_name) ||
        ha_dumpfile_read(datadir, side_name, HA_DUMPFILE_BUILDID, &side, &len,
                         &st, why, sizeof(why)) != 0)
        return NULL;
    if (ha_buildids_parse(side, len, &ids, why, sizeof(why)) != 0) {
        free(side);
        return NULL;
    }
    for (size_t i = 0; i < ids.n_ids; i++) {
        const char *path = ids.paths + ids.ids[i].path_off;
        char disk[HA_BUILDID_HEX_MAX];

        if (ha_buildid_check(&ids, path, disk) != HA_BUILDID_MISMATCH)
            continue;
        ha_buf_printf(&report, "%s%s (dump build-id %s, on disk %s)",
                      report.len ? "; " : "", path, ids.ids[i].hex, disk);
    }
    if (!ha_buf_failed(&report))
        ret = strndup(report.len ? (const char *)report.data : "", report.len);
    ha_buf_free(&report);
    ha_buildids_free(&ids);
    free(side);
    return ret;
}
