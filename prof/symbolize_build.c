/* SPDX-License-Identifier: MIT
 *
 * Symbol indexes built and written in the background (see
 * symbolize_int.h, prof/symindex.h): once a module has been named from
 * its files, the symbolizer hands the file over, libdwfl handle and all,
 * and a thread of its own makes the index (symbolize_enum.c), writes it
 * into the index directory (prof/symcache.h), trims the directory to
 * its bound and frees the file.
 *
 * The thread runs at low priority (nice + 10), one build at a time,
 * once no request has come for a quarter of a second (the query that
 * asked is answered first, its aggregation not competed with), with
 * every signal blocked, and ends when its queue is empty. The
 * symbolizer never waits for it: freeing the symbolizer only asks it to
 * stop, and the thread frees what it holds when it ends.
 */
#include "prof/symbolize_int.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"

#define NICE_STEP 10
#define QUIET_NS ((int64_t)250 * 1000000) /* no request for this long
                                            before a build starts */

struct ha_symbolize_builder {
    pthread_mutex_t lock;       /* everything below but the atomics */
    pthread_cond_t idle;        /* broadcast when the queue runs dry */
    pthread_cond_t wake;        /* broadcast when it is asked to stop */
    int64_t last_request_ns;    /* ha_clock_ns() of the last request */
    struct ha_symbolize_req *queue, *tail;
    bool running;               /* a thread serves the queue */
    bool busy;                  /* ... and is building one */
    char busy_id[HA_BUILDID_HEX_MAX]; /* ... of this build-id */
    bool orphan;                /* its symbolizer let go: the thread
                                   frees it */
    _Atomic bool stopping;

    char *debug_root;           /* the symbolizer's (its demangler's setup) */
    char *dir;                  /* for log lines */
    uint64_t max_bytes;
    void (*thread_init)(void *arg);
    void *thread_init_arg;
    _Atomic uint64_t written;
    _Atomic uint64_t failed;
};

static void
req_free(struct ha_symbolize_req *r)
{
    if (r == NULL)
        return;
    ha_symbolize_file_free(r->f);
    free(r);
}

static void
builder_destroy(struct ha_symbolize_builder *b)
{
    while (b->queue != NULL) {
        struct ha_symbolize_req *r = b->queue;

        b->queue = r->next;
        req_free(r);
    }
    free(b->debug_root);
    free(b->dir);
    pthread_cond_destroy(&b->idle);
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* Builds r's index and writes it; logs what came of it. */
static void
build_and_write(struct ha_symbolize_builder *b, struct ha_symbolizer *bs,
                const struct ha_symbolize_req *r)
{
    struct ha_buf out = HA_BUF_INIT;
    char name[HA_SYMCACHE_NAME_MAX], why[PATH_MAX + 128];
    int64_t t0 = ha_clock_ns();
    struct timespec cpu0, cpu1;
    int dirfd;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);

    ha_symcache_name(name, sizeof(name), r->h.build_id,
                     (r->h.flags & HA_SYMINDEX_F_DEMANGLED) != 0);
    /* Opened for this write only: no descriptor outlives it. */
    if ((dirfd = ha_symcache_dir_open(b->dir, why, sizeof(why))) < 0 ||
        ha_symbolize_enum_index(bs, r, &b->stopping, &out, why,
                                sizeof(why)) != 0 ||
        atomic_load(&b->stopping) ||
        (out.len > b->max_bytes &&
         (ha_err_set(why, sizeof(why), "%zu bytes, more than the bound of "
                     "%llu", out.len, (unsigned long long)b->max_bytes),
          true)) ||
        ha_symcache_write(dirfd, name, out.data, out.len, why,
                          sizeof(why)) != 0) {
        if (!atomic_load(&b->stopping)) {
            atomic_fetch_add(&b->failed, 1);
            ha_log_info("symbol index of %s not written: %s", r->f->path,
                        why);
        }
        ha_buf_free(&out);
        if (dirfd >= 0)
            close(dirfd);
        return;
    }
    atomic_fetch_add(&b->written, 1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    ha_log_info("symbol index %s/%s written for %s: %zu bytes, made in "
                "%.3f s (%.3f s of CPU at low priority)", b->dir, name,
                r->f->path, out.len, (double)(ha_clock_ns() - t0) / 1e9,
                (double)(cpu1.tv_sec - cpu0.tv_sec) +
                    (double)(cpu1.tv_nsec - cpu0.tv_nsec) / 1e9);
    ha_buf_free(&out);
    ha_symcache_trim(dirfd, b->max_bytes, name);
    close(dirfd);
}

/* ------------------------------------------------------------------ */
/* The thread                                                         */
/* ------------------------------------------------------------------ */

static void *
build_thread(void *arg)
{
    struct ha_symbolize_builder *b = arg;
    struct ha_symbolizer *bs = NULL;
    bool orphan;
    int nice;

    if (b->thread_init != NULL)
        b->thread_init(b->thread_init_arg);
    (void)pthread_setname_np(pthread_self(), "heapadmin-index");
    /* Linux takes a thread id here: only this thread yields. */
    errno = 0;
    nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno == 0)
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
                          nice + NICE_STEP > 19 ? 19 : nice + NICE_STEP);
    pthread_mutex_lock(&b->lock);
    for (;;) {
        struct ha_symbolize_req *r;

        while (!atomic_load(&b->stopping) &&
               ha_clock_ns() < b->last_request_ns + QUIET_NS) {
            int64_t until = b->last_request_ns + QUIET_NS;
            struct timespec ts = {(time_t)(until / 1000000000),
                                  (long)(until % 1000000000)};

            pthread_cond_timedwait(&b->wake, &b->lock, &ts);
        }
        if ((r = atomic_load(&b->stopping) ? NULL : b->queue) == NULL)
            break;
        b->queue = r->next;
        if (b->queue == NULL)
            b->tail = NULL;
        b->busy = true;
        ha_strlcpy(b->busy_id, r->f->build_id, sizeof(b->busy_id));
        pthread_mutex_unlock(&b->lock);
        /* A symbolizer's file-reading part of its own, not a symbolizer:
         * no cache, no debuginfod, no builder. */
        if (bs == NULL && (bs = calloc(1, sizeof(*bs))) != NULL &&
            ha_symbolize_file_setup(bs, b->debug_root) != 0) {
            free(bs);
            bs = NULL;
        }
        if (bs != NULL)
            build_and_write(b, bs, r);
        else
            atomic_fetch_add(&b->failed, 1);
        req_free(r);
        pthread_mutex_lock(&b->lock);
        b->busy = false;
        b->busy_id[0] = '\0';
    }
    b->running = false;
    pthread_cond_broadcast(&b->idle);
    orphan = b->orphan;
    pthread_mutex_unlock(&b->lock);
    if (bs != NULL) {
        ha_symbolize_file_teardown(bs);
        free(bs);
    }
    if (orphan)
        builder_destroy(b);
    return NULL;
}

static struct ha_symbolize_builder *
builder_new(struct ha_symbolizer *s)
{
    struct ha_symbolize_builder *b = calloc(1, sizeof(*b));
    pthread_condattr_t ca;

    if (b == NULL)
        return NULL;
    b->dir = strdup(s->index_dir);
    b->debug_root = s->debug_root != NULL ? strdup(s->debug_root) : NULL;
    if (b->dir == NULL ||
        (s->debug_root != NULL && b->debug_root == NULL) ||
        pthread_mutex_init(&b->lock, NULL) != 0)
        goto fail;
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&b->idle, &ca) != 0) {
        pthread_mutex_destroy(&b->lock);
        goto fail;
    }
    if (pthread_cond_init(&b->wake, &ca) != 0) {
        pthread_cond_destroy(&b->idle);
        pthread_mutex_destroy(&b->lock);
        goto fail;
    }
    pthread_condattr_destroy(&ca);
    b->max_bytes = s->lim.index_max_bytes;
    b->thread_init = s->lim.thread_init;
    b->thread_init_arg = s->lim.thread_init_arg;
    return b;
fail:
    free(b->dir);
    free(b->debug_root);
    free(b);
    return NULL;
}

/* Starts the thread if none serves the queue. Lock held. */
static void
spawn(struct ha_symbolize_builder *b)
{
    pthread_attr_t at;
    pthread_t tid;
    sigset_t all, old;

    if (b->running || pthread_attr_init(&at) != 0)
        return;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* The thread inherits the mask: a host's signals never land on it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&tid, &at, build_thread, b) == 0)
        b->running = true;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
}

/* ------------------------------------------------------------------ */
/* What the symbolizer calls                                          */
/* ------------------------------------------------------------------ */

void
ha_symbolize_build_mark(struct ha_symbolizer *s, struct file *f)
{
    bool wants = !f->own_dwarf && f->local_debug == NULL;

    /* Only a final answer is worth keeping: a file read whole, with a
     * build-id to find it by, no debuginfod answer pending (the file is
     * reopened when it comes, and marked then), and not one debuginfod
     * may still improve on. */
    if (f->dbgi_pending)
        return;
    f->idx_done = true;
    if (f->mod == NULL || f->build_id[0] == '\0' ||
        (s->dbgi != NULL && wants && f->from < HA_SYMS_SRC_DWARF) ||
        s->index_dir == NULL || s->index_dir_bad)
        return;
    f->idx_give = true;
}

/* The request for f: what its index must say of the files, as they are
 * now. NULL on allocation failure. */
static struct ha_symbolize_req *
req_new(struct ha_symbolizer *s, struct file *f)
{
    struct ha_symbolize_req *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    ha_symbolize_index_expect(s, f, f->from,
                              f->from == HA_SYMS_SRC_DEBUGINFOD
                                  ? f->dbgi_path
                                  : NULL,
                              &r->h, r->debug_path, sizeof(r->debug_path));
    r->wants_dbgi = !f->own_dwarf && f->local_debug == NULL;
    r->f = f;
    return r;
}

/* Whether b builds, or has queued, an index of build-id id. Lock
 * held. */
static bool
building(const struct ha_symbolize_builder *b, const char *id)
{
    if (b->busy && strcmp(b->busy_id, id) == 0)
        return true;
    for (const struct ha_symbolize_req *r = b->queue; r != NULL; r = r->next)
        if (strcmp(r->f->build_id, id) == 0)
            return true;
    return false;
}

void
ha_symbolize_build_handover(struct ha_symbolizer *s)
{
    struct file **pp = &s->files;

    while (*pp != NULL) {
        struct file *f = *pp;
        struct ha_symbolize_req *r;

        if (!f->idx_give || f->pinned) {
            pp = &f->next;
            continue;
        }
        f->idx_give = false;
        if (s->builder == NULL && (s->builder = builder_new(s)) == NULL) {
            pp = &f->next;
            continue;
        }
        /* One build per module: while its index is being made (the
         * builder waits for a quiet quarter second, so calls in a row
         * each read the module again before it is written), a file of
         * the same build-id stays in the cache and names the module
         * from its DWARF; handing each over would queue a copy of its
         * DWARF per call (hundreds of MB for libc, in the host). */
        pthread_mutex_lock(&s->builder->lock);
        if (building(s->builder, f->build_id) ||
            (r = req_new(s, f)) == NULL) {
            pthread_mutex_unlock(&s->builder->lock);
            pp = &f->next;
            continue;
        }
        /* Out of the cache: the builder's now, freed when it is done. */
        *pp = f->next;
        f->next = NULL;
        if (s->builder->tail != NULL)
            s->builder->tail->next = r;
        else
            s->builder->queue = r;
        s->builder->tail = r;
        s->builder->last_request_ns = ha_clock_ns();
        spawn(s->builder);
        pthread_mutex_unlock(&s->builder->lock);
    }
}

void
ha_symbolize_build_stop(struct ha_symbolize_builder *b)
{
    atomic_store(&b->stopping, true);
    pthread_mutex_lock(&b->lock);
    pthread_cond_broadcast(&b->wake);
    pthread_mutex_unlock(&b->lock);
}

void
ha_symbolize_build_free(struct ha_symbolize_builder *b)
{
    bool running;

    if (b == NULL)
        return;
    atomic_store(&b->stopping, true);
    pthread_mutex_lock(&b->lock);
    pthread_cond_broadcast(&b->wake);
    b->orphan = true;
    running = b->running;
    pthread_mutex_unlock(&b->lock);
    if (!running)
        builder_destroy(b);
}

void
ha_symbolize_build_counts(const struct ha_symbolize_builder *b,
                          uint64_t *written, uint64_t *failed)
{
    *written = atomic_load(&b->written);
    *failed = atomic_load(&b->failed);
}

int
ha_symbolize_build_wait(struct ha_symbolize_builder *b, int64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000),
                          (long)(deadline_ns % 1000000000)};
    int ret = 0;

    pthread_mutex_lock(&b->lock);
    while (b->running && ret == 0)
        if (pthread_cond_timedwait(&b->idle, &b->lock, &ts) == ETIMEDOUT)
            ret = b->running ? -1 : 0;
    pthread_mutex_unlock(&b->lock);
    return ret;
}
