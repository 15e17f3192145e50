/* SPDX-License-Identifier: MIT
 *
 * Loading heap profiles for the heap tables, with a bounded cache and
 * the live profile (see heap/profiles.h).
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
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/blockio.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/buildid.h"
#include "prof/delta.h"
#include "prof/dumpfile.h"
#include "prof/symbolize.h"
#include "prof/wrapdetect.h"
#include "heap/dumpfiles.h"
#include "heap/mallctl.h"
#include "heap/profmetrics.h"
#include "heap/sizeclasses.h"

/* A load under way, which later askers of the same file wait for. */
struct inflight {
    char *name;
    struct stat st;               /* the file being read */
    struct ha_task **waiters;     /* woken when it lands */
    size_t n_waiters, cap_waiters;
    bool landed;
    int rc;                       /* its result, once landed */
    char err[1024];
    int refs;                     /* the loader and each waiter */
    struct inflight *next;
};

static bool has_news(const struct ha_heap *heap,
                     const struct ha_heap_profile *pr);

struct ha_heap_cache {
    struct ha_heap_profile *list; /* most recently used first */
    uint64_t clock;
    unsigned live_seq;            /* private live-dump directories */
    struct inflight *inflight;    /* loads under way */
    time_t used;                  /* CLOCK_MONOTONIC s of the last use */
};

/* ------------------------------------------------------------------
 * Profiles
 * ------------------------------------------------------------------ */

static void
profile_free(struct ha_heap_profile *pr)
{
    if (pr == NULL)
        return;
    if (pr->top != NULL) {
        ha_agg_free(pr->top);
        free(pr->top);
    }
    free(pr->modules);
    free(pr->threads);
    ha_logfile_free(pr->log);
    free(pr->log);
    ha_products_free(&pr->products);
    ha_syms_free(&pr->syms);
    ha_maps_free(&pr->maps);
    ha_heapv2_free(&pr->p);
    free(pr->stale);
    free(pr->mem);
    free(pr->wrap_conf);
    if (pr->sizes != NULL)
        ha_livesizes_free(pr->sizes);
    free(pr->sizes);
    free(pr->name);
    free(pr);
}

struct ha_heap_profile *
ha_heap_profile_ref(struct ha_heap_profile *pr)
{
    if (pr != NULL)
        pr->refs++;
    return pr;
}

void
ha_heap_profile_put(struct ha_heap_profile *pr)
{
    if (pr != NULL && --pr->refs == 0)
        profile_free(pr);
}

/* Memory a profile holds, roughly (its arrays and strings). */
static size_t
profile_bytes(const struct ha_heap_profile *pr)
{
    size_t b = sizeof(*pr) + pr->p.n_stacks * sizeof(*pr->p.stacks) +
               pr->p.n_frames * sizeof(*pr->p.frames) + pr->p.maps_len +
               pr->maps.n_entries * sizeof(*pr->maps.entries) +
               pr->syms.addrs_cap * sizeof(*pr->syms.addrs) +
               pr->syms.frames_cap * sizeof(*pr->syms.frames) +
               pr->syms.strs.buf.cap + pr->syms.strs.n_slots * 4 +
               pr->syms.modules_cap * sizeof(*pr->syms.modules);

    b += pr->p.n_tlines * sizeof(*pr->p.tlines) +
         pr->p.n_threads * sizeof(*pr->p.threads) + pr->p.names_len +
         pr->n_threads * sizeof(*pr->threads);
    if (pr->modules != NULL)
        b += pr->syms.n_modules * sizeof(*pr->modules);
    if (pr->top != NULL)
        b += pr->top->rows_cap * sizeof(*pr->top->rows) +
             pr->top->index_cap * 4 + pr->top->names.buf.cap +
             pr->top->names.n_slots * 4;
    if (pr->log != NULL)
        b += ha_logfile_bytes(pr->log);
    return b + ha_products_bytes(&pr->products);
}

int
ha_heap_profile_product(struct ha_heap_profile *pr, const char *kind,
                        bool keep, ha_product_make_fn make, void *arg,
                        void (*arg_free)(void *arg), struct ha_product *made,
                        char *err, size_t errlen)
{
    int rc = ha_products_get(&pr->products, kind, keep && !pr->live, make,
                             arg, arg_free, made, err, errlen);

    if (rc == 0)
        pr->bytes = profile_bytes(pr);
    return rc;
}

static struct ha_heap_cache *
cache_of(struct ha_heap *heap)
{
    if (heap->profiles == NULL)
        heap->profiles = calloc(1, sizeof(*heap->profiles));
    if (heap->profiles != NULL)
        heap->profiles->used = ha_clock_s();
    return heap->profiles;
}

/* Drops least recently used profiles until the cache is within bounds;
 * keep stays. */
static void
cache_trim(struct ha_heap_cache *c, const struct ha_heap_profile *keep)
{
    for (;;) {
        struct ha_heap_profile **pp, **lru = NULL, *victim;
        size_t n = 0, bytes = 0;

        for (pp = &c->list; *pp != NULL; pp = &(*pp)->next) {
            n++;
            bytes += (*pp)->bytes;
            if (*pp != keep &&
                (lru == NULL || (*pp)->last_use < (*lru)->last_use))
                lru = pp;
        }
        if ((n <= HA_HEAP_CACHE_MAX && bytes <= HA_HEAP_CACHE_BYTES) ||
            lru == NULL)
            return;
        victim = *lru;
        *lru = victim->next;
        victim->next = NULL;
        ha_heap_profile_put(victim);
    }
}

static bool
same_file(const struct stat *a, dev_t dev, ino_t ino, off_t size,
          const struct timespec *mtime)
{
    return a->st_dev == dev && a->st_ino == ino && a->st_size == size &&
           a->st_mtim.tv_sec == mtime->tv_sec &&
           a->st_mtim.tv_nsec == mtime->tv_nsec;
}

/* The cached profile of name read from the file st describes, made with
 * the current wrapper edits, or NULL. */
static struct ha_heap_profile *
cache_find(const struct ha_heap *heap, struct ha_heap_cache *c,
           const char *name, const struct stat *st)
{
    for (struct ha_heap_profile *pr = c->list; pr != NULL; pr = pr->next)
        if (strcmp(pr->name, name) == 0 &&
            same_file(st, pr->dev, pr->ino, pr->size, &pr->mtime) &&
            !has_news(heap, pr) &&
            strcmp(pr->wrap_conf != NULL ? pr->wrap_conf : "",
                   heap->alloc_wrappers) == 0)
            return pr;
    return NULL;
}

/* Puts pr (holding one reference for the cache) in front, replacing an
 * older file of the same name. */
static void
cache_insert(struct ha_heap_cache *c, struct ha_heap_profile *pr)
{
    for (struct ha_heap_profile **pp = &c->list; *pp != NULL;
         pp = &(*pp)->next)
        if (strcmp((*pp)->name, pr->name) == 0) {
            struct ha_heap_profile *old = *pp;

            *pp = old->next;
            old->next = NULL;
            ha_heap_profile_put(old);
            break;
        }
    pr->bytes = profile_bytes(pr);
    pr->last_use = ++c->clock;
    pr->next = c->list;
    c->list = pr;
    cache_trim(c, pr);
}

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
        ha_buf_printf(&report, "%s%s (%s)", report.len ? "; " : "", path,
                      why);
        {
            char detail[sizeof(why) + 96];

            snprintf(detail, sizeof(detail), "replaced on disk since the "
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
                                           ha_syms_str(&pr->syms,
                                                       a->module),
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

/* True when pr was symbolized while debuginfod answers were pending and
 * some answer has come since (the generation is atomic: the loop may ask
 * while the worker or a fetch thread answers). */
static bool
has_news(const struct ha_heap *heap, const struct ha_heap_profile *pr)
{
    return pr->syms.pending > 0 && heap->symbolizer != NULL &&
           ha_symbolizer_generation(heap->symbolizer) != pr->generation;
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
profile_load(struct ha_heap *heap, struct ha_heap_profile *pr,
             const char *buf, size_t len, const char *side, size_t side_len,
             char *err, size_t errlen)
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
    if (ha_heap_wrappers_make(pr->wrap_conf, pr->name, &pr->p, &pr->syms,
                              err, errlen) != 0)
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

/* One load: a dump by name, or a live dump's text already taken. */
struct load {
    struct ha_heap *heap;
    struct ha_heap_cache *cache;
    struct ha_heap_profile *pr;   /* being filled; NULL after landing */
    char *text;                   /* live: the dump's text, else NULL */
    size_t text_len;
    struct inflight *fl;          /* dumps: who else waits; NULL: live */
    int rc;
    char err[1024];
};

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
        l->rc = profile_load(l->heap, pr, l->text, l->text_len, NULL, 0,
                             l->err, sizeof(l->err));
        return;
    }
    if (pr->is_log) {
        if (ha_dumpfile_read(l->heap->datadir, pr->name, HA_DUMPFILE_LOG,
                             &buf, &len, &st, l->err, sizeof(l->err)) != 0)
            return;
    } else {
        /* A dump is parsed as it is read: no copy of it is made. */
        char why[512];
        int fd = ha_dumpfile_open(l->heap->datadir, pr->name,
                                  HA_DUMPFILE_DUMP, &st, l->err,
                                  sizeof(l->err));

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
    pr->taken_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
                   st.st_mtim.tv_nsec;
    if ((size_t)snprintf(side_name, sizeof(side_name), "%s.buildid",
                         pr->name) < sizeof(side_name) &&
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
    if (pr->mem != NULL &&
        (pr->sizes = malloc(sizeof(*pr->sizes))) != NULL &&
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
    for (struct inflight **pp = &c->inflight; *pp != NULL;
         pp = &(*pp)->next)
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
        cache_insert(l->cache, l->pr);
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
static int
run_load(struct load *l, struct ha_heap_profile **out, char *err,
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
 * Live profiles
 * ------------------------------------------------------------------ */

/* Memory now, for a live profile: resident, the cgroup, the bins of a
 * fresh epoch. */
static void
live_memory(struct ha_heap *heap, struct ha_dumpmem *m)
{
    struct ha_sizeclasses cl;

    ha_dumpmem_init(m);
    ha_strlcpy(m->trigger, "live", sizeof(m->trigger));
    m->resident = ha_dumpfiles_resident();
    m->sampling_since = ha_mallctl_sampling_since(heap->ops);
    memset(&cl, 0, sizeof(cl));
    if (ha_mallctl_epoch(heap->ops) == 0 && ha_sizeclasses_load(heap->ops, &cl))
        (void)ha_sizeclasses_read_bins(heap->ops, &cl, m->bins,
                                       HA_DUMPMEM_BINS_MAX, &m->n_bins);
    ha_sizeclasses_free(&cl);
}

/* prof.dump into file, read back and removed: the text of a fresh
 * profile. Returns 0, HA_HEAP_BUSY (another dump is being written) or
 * HA_HEAP_ERROR, with err. */
static int
dump_read(const struct ha_mallctl_ops *ops, const char *file, char **buf,
          size_t *len, char *err, size_t errlen)
{
    struct stat st;
    int rc, fd, ret = -1;

    rc = ha_mallctl_dump_to(ops, file);
    if (rc != 0) {
        struct ha_mallctl_failure f = {
            .errnum = rc,
            .mallctl = "prof.dump",
            .variable = NULL,
            .value = file,
            .prof_built = ha_mallctl_prof_built(ops),
        };
        char why[512];

        ha_mallctl_errmsg(&f, why, sizeof(why));
        ha_err_set(err, errlen, "live profile: %s", why);
        if (rc == EBUSY)
            ret = HA_HEAP_BUSY;
        goto out;
    }
    fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0) {
        ha_err_set(err, errlen, "live profile: %s: %s", file,
                   strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    ret = ha_dumpfile_read_fd(fd, HA_HEAP_LIVE, &st, buf, len, err, errlen);
    close(fd);
out:
    unlink(file);
    return ret;
}

/* A live profile in a private directory of the datadir, where no memory
 * directory is to be had: on the I/O thread (core/blockio.h). */
struct live_disk {
    const struct ha_mallctl_ops *ops;
    char dir[PATH_MAX];
    char *buf;
    size_t len;
    int rc;
    char err[1024];
};

static void
live_disk_run(void *arg)
{
    struct live_disk *j = arg;
    char file[PATH_MAX + 16];

    j->rc = HA_HEAP_ERROR;
    if (mkdtemp(j->dir) == NULL) {
        ha_err_set(j->err, sizeof(j->err),
                   "live profile: cannot make a private directory in the "
                   "datadir: %s",
                   strerror(errno));
        return;
    }
    snprintf(file, sizeof(file), "%s/live.heap", j->dir);
    j->rc = dump_read(j->ops, file, &j->buf, &j->len, j->err,
                      sizeof(j->err));
    rmdir(j->dir);
}

static void
live_disk_free(void *arg)
{
    struct live_disk *j = arg;

    free(j->buf);
    free(j);
}

/* The text of a fresh profile. jemalloc writes it on this thread, the
 * loop's, into this process's private directory in memory
 * (heap/dumpfiles.h): never on a disk, which may stop answering while
 * jemalloc holds its dump lock and the loop waits (issue 35). Without
 * one, in a private directory of the datadir, on the I/O thread.
 * Returns 0, HA_HEAP_BUSY (another dump is being written) or
 * HA_HEAP_ERROR. */
static int
live_dump(struct ha_heap *heap, char **buf, size_t *len, char *err,
          size_t errlen)
{
    struct ha_heap_cache *c = cache_of(heap);
    char prefix[PATH_MAX], mem[PATH_MAX], file[PATH_MAX + 32];
    struct live_disk *j;
    int rc;

    *buf = NULL;
    *len = 0;
    if (c == NULL || heap->datadir == NULL || heap->ops == NULL) {
        ha_err_set(err, errlen, "a live profile needs a datadir and "
                                "jemalloc");
        return -1;
    }
    if ((size_t)snprintf(prefix, sizeof(prefix), "%s/live", heap->datadir) <
            sizeof(prefix) &&
        ha_dumpfiles_memory_prefix(prefix, mem, sizeof(mem)) == 0) {
        snprintf(file, sizeof(file), "%s.%ld.%u.heap", mem, (long)getpid(),
                 c->live_seq++);
        return dump_read(heap->ops, file, buf, len, err, errlen);
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    j->ops = heap->ops;
    if ((size_t)snprintf(j->dir, sizeof(j->dir), "%s/.live.%ld.%u.XXXXXX",
                         heap->datadir, (long)getpid(), c->live_seq++) >=
        sizeof(j->dir)) {
        free(j);
        ha_err_set(err, errlen, "live profile: datadir path too long");
        return -1;
    }
    if (ha_blockio_call("writing a live profile in the datadir",
                        live_disk_run, live_disk_free, j, err,
                        errlen) != 0)
        return -1;
    rc = j->rc;
    if (rc == 0) {
        *buf = j->buf;
        *len = j->len;
        j->buf = NULL;
    } else {
        ha_err_set(err, errlen, "%s", j->err);
    }
    live_disk_free(j);
    return rc;
}

/* A text checked to parse, off the loop. */
struct text_check {
    const char *text;
    size_t len;
    char name[NAME_MAX + 1];
    int rc;
    char err[1024];
};

static void
text_check_run(void *arg)
{
    struct text_check *t = arg;
    struct ha_heapv2 p;
    char why[512];

    t->rc = ha_heapv2_parse(t->text, t->len, &p, why, sizeof(why));
    if (t->rc == 0)
        ha_heapv2_free(&p);
    else
        ha_err_set(t->err, sizeof(t->err), "%s: not a heap profile: %s",
                   t->name, why);
}

static void
text_check_discard(void *arg)
{
    struct text_check *t = arg;

    free((char *)t->text);
    free(t);
}

/* Checks that text parses (a file that is not a dump is never served).
 * On HA_HEAP_STOPPED the text is freed. */
static int
check_text(const char *name, char *text, size_t len, char *err,
           size_t errlen)
{
    struct text_check *t = calloc(1, sizeof(*t));
    int rc;

    if (t == NULL) {
        free(text);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    t->text = text;
    t->len = len;
    ha_strlcpy(t->name, name, sizeof(t->name));
    if (ha_task_offload(text_check_run, text_check_discard, t) != 0)
        return HA_HEAP_STOPPED;
    rc = t->rc;
    if (rc != 0)
        ha_err_set(err, errlen, "%s", t->err);
    free(t);
    return rc == 0 ? 0 : HA_HEAP_ERROR;
}

int
ha_heap_live_text(struct ha_heap *heap, char **buf, size_t *len,
                  char *err, size_t errlen)
{
    int rc;

    if ((rc = live_dump(heap, buf, len, err, errlen)) != 0)
        return rc;
    rc = check_text(HA_HEAP_LIVE, *buf, *len, err, errlen);
    if (rc == HA_HEAP_ERROR)
        free(*buf);
    if (rc != 0)
        *buf = NULL;
    return rc;
}

/* ------------------------------------------------------------------
 * Getting a profile
 * ------------------------------------------------------------------ */

static struct load *
load_new(struct ha_heap *heap, struct ha_heap_cache *c, const char *name,
         bool live, bool is_log)
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
    if (ha_blockio_call("looking at a dump of the datadir", stat_job_run,
                        free, j, err, errlen) != 0)
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
    struct ha_heap_cache *c = cache_of(heap);
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
        ha_err_set(err, errlen, "a live profile ('" HA_HEAP_LIVE "') "
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
        if ((l = load_new(heap, c, name, true, false)) == NULL) {
            ha_err_set(err, errlen, "out of memory");
            return HA_HEAP_ERROR;
        }
        /* The bins in the same pass: a fresh epoch just before the
         * dump (heap_fragmentation, which reads the samples' sizes when
         * it is asked: 50 ms for 4096 records, a cost for it alone). */
        if ((l->pr->mem = malloc(sizeof(*l->pr->mem))) != NULL)
            live_memory(heap, l->pr->mem);
        l->pr->ops = heap->ops;
        if ((rc = live_dump(heap, &l->text, &l->text_len, err, errlen)) !=
            0) {
            ha_heap_profile_put(l->pr);
            free(l);
            return rc;
        }
        {
            struct timespec now;

            clock_gettime(CLOCK_REALTIME, &now);
            l->pr->taken_ns =
                (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
        }
        return run_load(l, out, err, errlen);
    }
    /* The identity first: a cached profile costs no read at all. */
    if (stat_file(heap->datadir, name,
                  is_log ? HA_DUMPFILE_LOG : HA_DUMPFILE_DUMP, &st, err,
                  errlen) != 0)
        return HA_HEAP_ERROR;
    for (;;) {
        if ((pr = cache_find(heap, c, name, &st)) != NULL) {
            pr->last_use = ++c->clock;
            pr->refs++;
            *out = pr;
            return 0;
        }
        for (fl = c->inflight; fl != NULL; fl = fl->next)
            if (strcmp(fl->name, name) == 0 &&
                same_file(&st, fl->st.st_dev, fl->st.st_ino,
                          fl->st.st_size, &fl->st.st_mtim))
                break;
        if (fl == NULL || ha_task_current() == NULL)
            break;
        /* Someone reads this file already: its result is ours. */
        if ((rc = wait_inflight(c, fl, err, errlen)) != 0)
            return rc;
    }
    if ((l = load_new(heap, c, name, false, is_log)) == NULL ||
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
    return run_load(l, out, err, errlen);
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

/* ------------------------------------------------------------------
 * Deltas: what was allocated in the last N seconds
 * ------------------------------------------------------------------ */

/* A live dump written into the memory directory and read, on the
 * worker. */
struct live_job {
    const struct ha_mallctl_ops *ops;
    char file[PATH_MAX + 32];
    char *text;
    size_t len;
    int rc;
    char err[1024];
};

static void
live_job_run(void *arg)
{
    struct live_job *j = arg;

    j->rc = dump_read(j->ops, j->file, &j->text, &j->len, j->err,
                      sizeof(j->err));
}

static void
live_job_discard(void *arg)
{
    struct live_job *j = arg;

    free(j->text);
    free(j);
}

/* A live profile whose dump is written off the loop: into this process's
 * memory directory (heap/dumpfiles.h) on the worker, or, without one,
 * as live_dump does, in the datadir on the I/O thread; then loaded as
 * any live one. *dumped gets when the dump was written (ha_clock_ns).
 * Returns as ha_heap_profile_get. */
static int
live_off_loop(struct ha_heap *heap, struct ha_heap_profile **out,
              int64_t *dumped, char *err, size_t errlen)
{
    struct ha_heap_cache *c = cache_of(heap);
    char prefix[PATH_MAX], mem[PATH_MAX];
    struct live_job *j;
    struct load *l;
    struct timespec now;
    int rc;

    *out = NULL;
    if (c == NULL || (j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->ops = heap->ops;
    if (heap->datadir != NULL &&
        (size_t)snprintf(prefix, sizeof(prefix), "%s/live", heap->datadir) <
            sizeof(prefix) &&
        ha_dumpfiles_memory_prefix(prefix, mem, sizeof(mem)) == 0) {
        snprintf(j->file, sizeof(j->file), "%s.%ld.%u.heap", mem,
                 (long)getpid(), c->live_seq++);
        if (ha_task_offload(live_job_run, live_job_discard, j) != 0)
            return HA_HEAP_STOPPED;
    } else {
        j->rc = live_dump(heap, &j->text, &j->len, j->err, sizeof(j->err));
    }
    clock_gettime(CLOCK_REALTIME, &now);
    *dumped = ha_clock_ns();
    if (j->rc != 0) {
        rc = j->rc == HA_HEAP_BUSY ? HA_HEAP_BUSY : HA_HEAP_ERROR;
        ha_err_set(err, errlen, "%s", j->err);
        live_job_discard(j);
        return rc;
    }
    if ((l = load_new(heap, c, HA_HEAP_LIVE, true, false)) == NULL) {
        live_job_discard(j);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    l->pr->ops = heap->ops;
    l->pr->taken_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    l->text = j->text;
    l->text_len = j->len;
    j->text = NULL;
    live_job_discard(j);
    return run_load(l, out, err, errlen);
}

/* The delta's arithmetic on the worker: end's stacks become the delta
 * from base, and its threads are counted again. */
struct delta_job {
    struct ha_heap_profile *end, *base; /* references held */
    int rc;
    char err[512];
};

static void
delta_run(void *arg)
{
    struct delta_job *j = arg;
    struct ha_heapv2 d;
    struct ha_threads_row *rows = NULL;
    size_t n = 0;

    j->rc = ha_heapv2_delta(&j->end->p, &j->base->p, &d, j->err,
                            sizeof(j->err));
    if (j->rc != 0)
        return;
    if (ha_threads_rows(&d, &rows, &n) != 0) {
        ha_heapv2_free(&d);
        j->rc = HA_DELTA_NOMEM;
        ha_strlcpy(j->err, "out of memory", sizeof(j->err));
        return;
    }
    /* The same frames, in the same places: the symbols' frame index
     * (ha_syms_set_frame_index) still holds. The maps text was parsed
     * into end->maps already. */
    free(d.maps);
    d.maps = j->end->p.maps;
    d.maps_len = j->end->p.maps_len;
    j->end->p.maps = NULL;
    ha_heapv2_free(&j->end->p);
    j->end->p = d;
    free(j->end->threads);
    j->end->threads = rows;
    j->end->n_threads = n;
}

static void
delta_discard(void *arg)
{
    struct delta_job *j = arg;

    ha_heap_profile_put(j->end);
    ha_heap_profile_put(j->base);
    free(j);
}

int
ha_heap_profile_delta(struct ha_heap *heap, int seconds, bool admin,
                      struct ha_heap_profile **out, int64_t *waited,
                      char *err, size_t errlen)
{
    struct ha_task *t = ha_task_current();
    struct ha_heap_profile *base = NULL, *end = NULL;
    struct delta_job *j;
    bool accum = false, active = false;
    int64_t since, t0, t1, window;
    int rc;

    *out = NULL;
    if (waited != NULL)
        *waited = 0;
    if (seconds < 1 || seconds > HA_HEAP_DELTA_MAX_S) {
        ha_err_set(err, errlen, "seconds must be 1 to %d (the window of a "
                                "delta profile), not %d",
                   HA_HEAP_DELTA_MAX_S, seconds);
        return HA_HEAP_ERROR;
    }
    if (!admin) {
        ha_err_set(err, errlen, "a delta of the live profile needs an "
                                "admin user");
        return HA_HEAP_ERROR;
    }
    if (heap->ops == NULL || !ha_mallctl_prof_enabled(heap->ops)) {
        ha_err_set(err, errlen, "heap profiling is not available in this "
                                "process (opt.prof=false)");
        return HA_HEAP_CONFLICT;
    }
    if (ha_mallctl_read_bool(heap->ops, "opt.prof_accum", &accum) != 0 ||
        !accum) {
        ha_err_set(err, errlen, "a delta needs cumulative counters, and "
                                "this process runs without prof_accum: "
                                "start it with prof_accum:true "
                                "(MALLOC_CONF, or jemalloc_variables."
                                "prof_accum)");
        return HA_HEAP_CONFLICT;
    }
    if (ha_mallctl_read_bool(heap->ops, "prof.active", &active) != 0 ||
        !active) {
        ha_err_set(err, errlen, "sampling is off (prof.active=false): a "
                                "delta would count nothing; switch it on "
                                "first (SET jemalloc-prof_active=true)");
        return HA_HEAP_CONFLICT;
    }
    if (t == NULL) {
        ha_err_set(err, errlen, "a delta profile waits, which only a "
                                "request can");
        return HA_HEAP_ERROR;
    }
    since = ha_mallctl_sampling_since(heap->ops);
    if ((rc = live_off_loop(heap, &base, &t0, err, errlen)) != 0)
        return rc;
    /* The window is waiting, not work: it does not count toward the
     * request's max_execution_time (a task's deadline, or a statement's:
     * *waited). It runs from the first dump, not from its load. */
    window = (int64_t)seconds * 1000000000;
    if (t->deadline_ns != 0)
        ha_task_set_deadline(t, t->deadline_ns + window);
    if (waited != NULL)
        *waited = window;
    if (ha_task_sleep(t, t0 + window - ha_clock_ns()) != 0) {
        ha_heap_profile_put(base);
        return HA_HEAP_STOPPED;
    }
    if ((rc = live_off_loop(heap, &end, &t1, err, errlen)) != 0) {
        ha_heap_profile_put(base);
        return rc;
    }
    active = false;
    if (ha_mallctl_sampling_since(heap->ops) != since ||
        ha_mallctl_read_bool(heap->ops, "prof.active", &active) != 0 ||
        !active) {
        ha_err_set(err, errlen, "the heap profile was reset, or sampling "
                                "switched off and on, within the %d s "
                                "window: the counts do not cover it; ask "
                                "again",
                   seconds);
        rc = HA_HEAP_CONFLICT;
        goto fail;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        rc = HA_HEAP_ERROR;
        goto fail;
    }
    j->end = end;
    j->base = base;
    if (ha_task_offload(delta_run, delta_discard, j) != 0)
        return HA_HEAP_STOPPED;
    rc = j->rc;
    if (rc != 0) {
        ha_err_set(err, errlen, "%s", j->err);
        delta_discard(j);
        return rc == HA_DELTA_NOMEM ? HA_HEAP_ERROR : HA_HEAP_CONFLICT;
    }
    end->window_ns = t1 - t0;
    *out = end;
    j->end = NULL;
    delta_discard(j);
    return 0;
fail:
    ha_heap_profile_put(base);
    ha_heap_profile_put(end);
    return rc;
}

/* The figures kept with a profile, each made once off the loop: heap_top's
 * aggregate (pr->top) and heap_modules' per-module figures
 * (pr->modules). */
enum figure {
    FIG_TOP,
    FIG_MODULES,
    FIG_MAX
};

struct figure_job {
    struct ha_heap_profile *pr;   /* a reference held for the job */
    enum figure kind;
    struct ha_agg *agg;           /* FIG_TOP's, once made */
    struct ha_agg_module *m;      /* FIG_MODULES', once made */
    int rc;
};

static void
figure_run(void *arg)
{
    struct figure_job *j = arg;
    char why[256];
    size_t n;

    j->rc = -1;
    switch (j->kind) {
    case FIG_TOP:
        if ((j->agg = calloc(1, sizeof(*j->agg))) == NULL)
            return;
        if (ha_agg_add(j->agg, &j->pr->p, &j->pr->syms, 1, false, why,
                       sizeof(why)) != 0)
            return;
        ha_agg_sort(j->agg, HA_AGG_BY_FLAT_BYTES);
        j->rc = 0;
        return;
    case FIG_MODULES:
        n = j->pr->syms.n_modules ? j->pr->syms.n_modules : 1;
        if ((j->m = calloc(n, sizeof(*j->m))) != NULL &&
            ha_agg_modules(&j->pr->p, &j->pr->syms, j->m) == 0)
            j->rc = 0;
        return;
    default:
        return;
    }
}

/* Lands the figure on its profile (on the loop), unless one landed
 * meanwhile; frees what was not landed. */
static void
figure_land(struct figure_job *j)
{
    struct ha_heap_profile *pr = j->pr;

    if (j->rc == 0 && j->kind == FIG_TOP && pr->top == NULL) {
        pr->top = j->agg;
        j->agg = NULL;
        pr->bytes = profile_bytes(pr);
    } else if (j->rc == 0 && j->kind == FIG_MODULES && pr->modules == NULL) {
        pr->modules = j->m;
        j->m = NULL;
        pr->bytes = profile_bytes(pr);
    }
    if (j->agg != NULL) {
        ha_agg_free(j->agg);
        free(j->agg);
        j->agg = NULL;
    }
    free(j->m);
    j->m = NULL;
}

static void
figure_discard(void *arg)
{
    struct figure_job *j = arg;

    figure_land(j);
    ha_heap_profile_put(j->pr);
    free(j);
}

/* Makes pr's figure kind off the loop and lands it. Returns 0 (the
 * figure is on pr), HA_HEAP_ERROR (err set) or HA_HEAP_STOPPED. */
static int
figure_make(struct ha_heap_profile *pr, enum figure kind, char *err,
            size_t errlen)
{
    struct figure_job *j;

    if ((j = calloc(1, sizeof(*j))) == NULL)
        goto oom;
    j->pr = pr;
    j->kind = kind;
    pr->refs++;
    if (ha_task_offload(figure_run, figure_discard, j) != 0)
        return HA_HEAP_STOPPED;
    figure_land(j);
    ha_heap_profile_put(pr);
    free(j);
    if ((kind == FIG_TOP && pr->top != NULL) ||
        (kind == FIG_MODULES && pr->modules != NULL))
        return 0;
oom:
    ha_err_set(err, errlen, "%s: out of memory", pr->name);
    return HA_HEAP_ERROR;
}

int
ha_heap_profile_top(struct ha_heap_profile *pr, const struct ha_agg **out,
                    char *err, size_t errlen)
{
    int rc = pr->top != NULL ? 0 : figure_make(pr, FIG_TOP, err, errlen);

    *out = pr->top;
    return rc;
}

/* heap_top's aggregate of some threads' part, made for one query. */
struct top_threads_job {
    struct ha_heap_profile *pr;   /* a reference held for the job */
    struct ha_threads_match m;
    char *name;                   /* m.name's copy */
    struct ha_agg *agg;
    int rc;
};

static void
top_threads_run(void *arg)
{
    struct top_threads_job *j = arg;
    struct ha_heapv2 part;
    char why[256];

    j->rc = -1;
    if (ha_threads_filter(&j->pr->p, &j->m, &part) != 0)
        return;
    if ((j->agg = calloc(1, sizeof(*j->agg))) != NULL &&
        ha_agg_add(j->agg, &part, &j->pr->syms, 1, false, why,
                   sizeof(why)) == 0) {
        ha_agg_sort(j->agg, HA_AGG_BY_FLAT_BYTES);
        j->rc = 0;
    }
    ha_heapv2_free(&part);
}

static void
top_threads_free(void *arg)
{
    struct top_threads_job *j = arg;

    if (j->agg != NULL) {
        ha_agg_free(j->agg);
        free(j->agg);
    }
    ha_heap_profile_put(j->pr);
    free(j->name);
    free(j);
}

int
ha_heap_profile_top_threads(struct ha_heap_profile *pr,
                            const struct ha_threads_match *m,
                            struct ha_agg **out, char *err, size_t errlen)
{
    struct top_threads_job *j = calloc(1, sizeof(*j));

    *out = NULL;
    if (j == NULL || (m->name != NULL && (j->name = strdup(m->name)) ==
                                             NULL)) {
        free(j);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->pr = ha_heap_profile_ref(pr);
    j->m = *m;
    j->m.name = j->name;
    if (ha_task_offload(top_threads_run, top_threads_free, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        top_threads_free(j);
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        return HA_HEAP_ERROR;
    }
    *out = j->agg;
    j->agg = NULL;
    top_threads_free(j);
    return 0;
}

int
ha_heap_profile_modules(struct ha_heap_profile *pr,
                        const struct ha_agg_module **out, char *err,
                        size_t errlen)
{
    int rc = pr->modules != NULL ? 0
                                 : figure_make(pr, FIG_MODULES, err, errlen);

    *out = pr->modules;
    return rc;
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
        ret = strndup(report.len ? (const char *)report.data : "",
                      report.len);
    ha_buf_free(&report);
    ha_buildids_free(&ids);
    free(side);
    return ret;
}

void
ha_heap_cache_free(struct ha_heap *heap)
{
    struct ha_heap_cache *c = heap->profiles;

    if (c == NULL)
        return;
    while (c->list != NULL) {
        struct ha_heap_profile *pr = c->list;

        c->list = pr->next;
        pr->next = NULL;
        ha_heap_profile_put(pr);
    }
    /* Loads still in flight were discarded with the worker (it is freed
     * first), so nothing refers to c now. */
    free(c);
    heap->profiles = NULL;
}

int
ha_heap_cache_release(struct ha_heap *heap, unsigned idle_s)
{
    struct ha_heap_cache *c = heap->profiles;

    if (c != NULL &&
        (c->inflight != NULL || ha_clock_s() - c->used < (time_t)idle_s))
        return -1;
    if (c != NULL)
        ha_heap_cache_free(heap);
    /* The fetch threads of debuginfod would be joined here, on the loop:
     * with it on, the symbols stay. */
    if (heap->symbolizer != NULL && (heap->je == NULL || !heap->je->debuginfod)) {
        ha_symbolizer_free(heap->symbolizer);
        heap->symbolizer = NULL;
    }
    return 0;
}
