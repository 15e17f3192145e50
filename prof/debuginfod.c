/* SPDX-License-Identifier: MIT
 *
 * Fetching debug info by build-id with libdebuginfod, loaded at run time,
 * on a few threads of our own (see debuginfod.h).
 */
#include "prof/debuginfod.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "core/forkguard.h"
#include "core/clock.h"
#include "core/util.h"
#include "prof/maps.h"

/* One build-id asked for. */
struct entry {
    char hex[HA_BUILDID_HEX_MAX];
    enum ha_debuginfod_state state;
    bool running;         /* a thread has taken it */
    char *path;           /* FOUND: the debug file in the client's cache */
    char why[320];        /* FAILED: the reason */
    int64_t answered_ns;  /* when it was answered */
    struct entry *next;
};

/* A fetch thread's slot, so that every thread is joined. */
struct slot {
    pthread_t tid;
    bool used;            /* tid is a thread not yet joined */
    bool exited;          /* it has left its loop: joining is quick */
};

/* libdebuginfod's calls, from dlsym. */
struct client_fns {
    __typeof__(debuginfod_begin) *begin;
    __typeof__(debuginfod_end) *end;
    __typeof__(debuginfod_find_debuginfo) *find_debuginfo;
    __typeof__(debuginfod_set_progressfn) *set_progressfn;
    __typeof__(debuginfod_set_verbose_fd) *set_verbose_fd;
};

struct ha_debuginfod {
    struct ha_debuginfod_opts opts;
    pthread_mutex_t lock;     /* everything below */
    pthread_cond_t answered;  /* broadcast when an entry is answered */
    struct entry *entries;
    struct slot slots[HA_DEBUGINFOD_THREADS];
    _Atomic bool stopping;    /* read by progress callbacks unlocked */
    _Atomic uint64_t answers;

    bool loaded;              /* the client was looked for */
    struct client_fns fn;     /* NULL members: not loaded */
    char load_err[256];       /* why it could not be loaded */
};

/* What a progress callback needs. */
struct job {
    struct ha_debuginfod *d;
    int64_t deadline_ns;      /* HA_DEBUGINFOD_MAX_S after the start */
};

/* ------------------------------------------------------------------ */
/* The client library                                                  */
/* ------------------------------------------------------------------ */

/* Loads libdebuginfod once. Its handle is never closed: the library's
 * destructor ends libcurl's global state, which the host (or libdw's own
 * debuginfod support) may be using. Called with d->lock held. */
static void
load_client(struct ha_debuginfod *d)
{
    void *h;

    if (d->loaded)
        return;
    d->loaded = true;
    /* The loader's locks (core/forkguard.h): never held at a fork. */
    ha_forkguard_enter();
    h = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();

        ha_forkguard_leave();

        ha_err_set(d->load_err, sizeof(d->load_err),
                   "%s cannot be loaded (Debian package libdebuginfod1): %s",
                   DEBUGINFOD_SONAME, why != NULL ? why : "unknown error");
        return;
    }
    /* The pointer-to-object cast dlsym needs (POSIX). */
    *(void **)&d->fn.begin = dlsym(h, "debuginfod_begin");
    *(void **)&d->fn.end = dlsym(h, "debuginfod_end");
    *(void **)&d->fn.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
    *(void **)&d->fn.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
    *(void **)&d->fn.set_verbose_fd = dlsym(h, "debuginfod_set_verbose_fd");
    ha_forkguard_leave();
    if (d->fn.begin == NULL || d->fn.end == NULL ||
        d->fn.find_debuginfo == NULL || d->fn.set_progressfn == NULL) {
        ha_err_set(d->load_err, sizeof(d->load_err),
                   "%s lacks the client calls of elfutils 0.188",
                   DEBUGINFOD_SONAME);
        memset(&d->fn, 0, sizeof(d->fn));
    }
}

/* The fetch this thread runs. The progress callback gets only the
 * client, and asking the client for its user data would need the
 * library's handle: a thread-local is the callback's way back to its job
 * (one fetch per thread at a time, so nothing is shared). */
static _Thread_local const struct job *current_job;

/* The client's only way to stop a transfer: a non-zero return. It is
 * polled about once a second while a transfer runs. */
static int
progress(debuginfod_client *c, long done, long total)
{
    const struct job *j = current_job;

    (void)c;
    (void)done;
    (void)total;
    return j != NULL && (atomic_load(&j->d->stopping) ||
                         ha_clock_ns() > j->deadline_ns);
}

/* ------------------------------------------------------------------ */
/* Fetch threads                                                       */
/* ------------------------------------------------------------------ */

/* The servers a failure message names: DEBUGINFOD_URLS, cut short. */
static void
servers(char *buf, size_t len)
{
    const char *u = getenv(DEBUGINFOD_URLS_ENV_VAR);

    if (u == NULL)
        u = "";
    if (strlen(u) < 120)
        snprintf(buf, len, "%s", u);
    else
        snprintf(buf, len, "%.117s...", u);
}

/* One query, without the lock. Fills path or why. */
static void
fetch(struct ha_debuginfod *d, const struct client_fns *fn, const char *hex,
      char **path, char *why, size_t whylen)
{
    struct job job = {d, ha_clock_ns() +
                             (int64_t)HA_DEBUGINFOD_MAX_S * 1000000000};
    debuginfod_client *c = fn->begin();
    char urls[128];
    int rc;

    *path = NULL;
    if (c == NULL) {
        ha_err_set(why, whylen, "the debuginfod client could not start");
        return;
    }
    current_job = &job;
    fn->set_progressfn(c, progress);
    /* DEBUGINFOD_VERBOSE would have it write to stderr, which is the
     * host's. */
    if (fn->set_verbose_fd != NULL)
        fn->set_verbose_fd(c, -1);
    rc = fn->find_debuginfo(c, (const unsigned char *)hex, 0, path);
    fn->end(c);
    current_job = NULL;
    if (rc >= 0) {
        close(rc);
        if (*path != NULL)
            return;
        ha_err_set(why, whylen, "the client found it but gave no path");
        return;
    }
    free(*path);
    *path = NULL;
    servers(urls, sizeof(urls));
    switch (-rc) {
    case ENOSYS:
        ha_err_set(why, whylen, "no server: %s is not set in this "
                                "process's environment",
                   DEBUGINFOD_URLS_ENV_VAR);
        break;
    case ENOENT:
        ha_err_set(why, whylen, "no server has it (%s)", urls);
        break;
    default:
        if (atomic_load(&d->stopping))
            ha_err_set(why, whylen, "cancelled");
        else if (ha_clock_ns() > job.deadline_ns)
            ha_err_set(why, whylen, "no answer within %d s (%s)",
                       HA_DEBUGINFOD_MAX_S, urls);
        else
            ha_err_set(why, whylen, "%s (%s)", strerror(-rc), urls);
        break;
    }
}

/* The first entry waiting for a thread, or NULL. Lock held. */
static struct entry *
next_queued(struct ha_debuginfod *d)
{
    for (struct entry *e = d->entries; e != NULL; e = e->next)
        if (e->state == HA_DEBUGINFOD_PENDING && !e->running)
            return e;
    return NULL;
}

static void *
fetch_thread(void *arg)
{
    struct ha_debuginfod *d = arg;
    pthread_t self = pthread_self();

    if (d->opts.thread_init != NULL)
        d->opts.thread_init(d->opts.thread_init_arg);
    pthread_mutex_lock(&d->lock);
    for (;;) {
        struct entry *e = atomic_load(&d->stopping) ? NULL : next_queued(d);
        struct client_fns fn = d->fn;
        char hex[HA_BUILDID_HEX_MAX], why[sizeof(e->why)] = "";
        char *path = NULL;

        if (e == NULL)
            break;
        e->running = true;
        memcpy(hex, e->hex, sizeof(hex));
        pthread_mutex_unlock(&d->lock);
        fetch(d, &fn, hex, &path, why, sizeof(why));
        pthread_mutex_lock(&d->lock);
        e->running = false;
        e->answered_ns = ha_clock_ns();
        if (path != NULL) {
            e->state = HA_DEBUGINFOD_FOUND;
            e->path = path;
        } else {
            e->state = HA_DEBUGINFOD_FAILED;
            memcpy(e->why, why, sizeof(e->why));
        }
        atomic_fetch_add(&d->answers, 1);
        pthread_cond_broadcast(&d->answered);
    }
    for (size_t i = 0; i < HA_DEBUGINFOD_THREADS; i++)
        if (d->slots[i].used && pthread_equal(d->slots[i].tid, self))
            d->slots[i].exited = true;
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* Starts a fetch thread if fewer than HA_DEBUGINFOD_THREADS run, joining
 * threads that have left their loop first. Lock held. Returns 0, or -1
 * when no thread could be started and none runs. */
static int
spawn(struct ha_debuginfod *d)
{
    struct slot *free_slot = NULL;
    size_t running = 0;
    sigset_t all, old;
    int rc;

    for (size_t i = 0; i < HA_DEBUGINFOD_THREADS; i++) {
        struct slot *s = &d->slots[i];

        if (s->used && s->exited) {
            /* It only has to return: no lock is taken after its mark. */
            pthread_join(s->tid, NULL);
            s->used = false;
        }
        if (s->used)
            running++;
        else if (free_slot == NULL)
            free_slot = s;
    }
    if (free_slot == NULL)
        return 0;
    /* The thread inherits the mask: a host's signals never land on it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&free_slot->tid, NULL, fetch_thread, d);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return running > 0 ? 0 : -1;
    free_slot->used = true;
    free_slot->exited = false;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Public                                                              */
/* ------------------------------------------------------------------ */

struct ha_debuginfod *
ha_debuginfod_new(const struct ha_debuginfod_opts *o)
{
    struct ha_debuginfod *d = calloc(1, sizeof(*d));
    pthread_condattr_t ca;

    if (d == NULL)
        return NULL;
    if (o != NULL)
        d->opts = *o;
    if (pthread_mutex_init(&d->lock, NULL) != 0) {
        free(d);
        return NULL;
    }
    /* Waits have monotonic deadlines: the condition counts on that
     * clock, so a change of the wall clock moves no deadline. */
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&d->answered, &ca) != 0) {
        pthread_mutex_destroy(&d->lock);
        free(d);
        return NULL;
    }
    pthread_condattr_destroy(&ca);
    return d;
}

void
ha_debuginfod_free(struct ha_debuginfod *d)
{
    if (d == NULL)
        return;
    atomic_store(&d->stopping, true);
    for (size_t i = 0; i < HA_DEBUGINFOD_THREADS; i++) {
        bool used;
        pthread_t tid;

        pthread_mutex_lock(&d->lock);
        used = d->slots[i].used;
        tid = d->slots[i].tid;
        d->slots[i].used = false;
        pthread_mutex_unlock(&d->lock);
        if (used)
            pthread_join(tid, NULL);
    }
    while (d->entries != NULL) {
        struct entry *e = d->entries;

        d->entries = e->next;
        free(e->path);
        free(e);
    }
    pthread_cond_destroy(&d->answered);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static struct entry *
find(struct ha_debuginfod *d, const char *hex)
{
    for (struct entry *e = d->entries; e != NULL; e = e->next)
        if (strcmp(e->hex, hex) == 0)
            return e;
    return NULL;
}

enum ha_debuginfod_state
ha_debuginfod_request(struct ha_debuginfod *d, const char *hex)
{
    struct entry *e;
    enum ha_debuginfod_state st;

    if (strlen(hex) >= HA_BUILDID_HEX_MAX || hex[0] == '\0')
        return HA_DEBUGINFOD_UNKNOWN;
    pthread_mutex_lock(&d->lock);
    e = find(d, hex);
    if (e != NULL) {
        int64_t age = ha_clock_ns() - e->answered_ns;

        /* A file cleaned out of the client's cache is asked again, and
         * so is a failure once it is old enough. */
        if ((e->state == HA_DEBUGINFOD_FOUND && access(e->path, R_OK) == 0) ||
            e->state == HA_DEBUGINFOD_PENDING ||
            (e->state == HA_DEBUGINFOD_FAILED &&
             age < (int64_t)HA_DEBUGINFOD_RETRY_S * 1000000000)) {
            st = e->state;
            pthread_mutex_unlock(&d->lock);
            return st;
        }
        free(e->path);
        e->path = NULL;
    } else {
        e = calloc(1, sizeof(*e));
        if (e == NULL) {
            pthread_mutex_unlock(&d->lock);
            return HA_DEBUGINFOD_UNKNOWN;
        }
        memcpy(e->hex, hex, strlen(hex) + 1);
        e->next = d->entries;
        d->entries = e;
    }
    load_client(d);
    e->state = HA_DEBUGINFOD_PENDING;
    e->running = false;
    if (d->fn.begin == NULL || spawn(d) != 0) {
        e->state = HA_DEBUGINFOD_FAILED;
        e->answered_ns = ha_clock_ns();
        if (d->fn.begin == NULL)
            memcpy(e->why, d->load_err, sizeof(d->load_err));
        else
            ha_err_set(e->why, sizeof(e->why),
                       "no thread could be started to fetch it");
        atomic_fetch_add(&d->answers, 1);
    }
    st = e->state;
    pthread_mutex_unlock(&d->lock);
    return st;
}

bool
ha_debuginfod_wait(struct ha_debuginfod *d, const char *const *ids,
                   size_t n, int64_t deadline_ns)
{
    bool all = false;

    pthread_mutex_lock(&d->lock);
    for (;;) {
        size_t pending = 0;

        for (size_t i = 0; i < n; i++) {
            const struct entry *e = find(d, ids[i]);

            if (e != NULL && e->state == HA_DEBUGINFOD_PENDING)
                pending++;
        }
        if (pending == 0) {
            all = true;
            break;
        }
        if (ha_clock_ns() >= deadline_ns)
            break;
        {
            struct timespec ts = {(time_t)(deadline_ns / 1000000000),
                                  (long)(deadline_ns % 1000000000)};

            pthread_cond_timedwait(&d->answered, &d->lock, &ts);
        }
    }
    pthread_mutex_unlock(&d->lock);
    return all;
}

enum ha_debuginfod_state
ha_debuginfod_lookup(struct ha_debuginfod *d, const char *hex, char *out,
                     size_t outlen)
{
    const struct entry *e;
    enum ha_debuginfod_state st = HA_DEBUGINFOD_UNKNOWN;

    if (outlen > 0)
        out[0] = '\0';
    pthread_mutex_lock(&d->lock);
    e = find(d, hex);
    if (e != NULL) {
        st = e->state;
        if (st == HA_DEBUGINFOD_FOUND)
            ha_strlcpy(out, e->path, outlen);
        else if (st == HA_DEBUGINFOD_FAILED)
            ha_strlcpy(out, e->why, outlen);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

uint64_t
ha_debuginfod_answers(struct ha_debuginfod *d)
{
    return atomic_load(&d->answers);
}
