/* SPDX-License-Identifier: MIT
 *
 * Dumps pushed to Pyroscope and Parca (see push.h): the loop's side.
 * What is queued and when (the start's look, a published dump, the live
 * profile), the encoding on the engine's worker, the push thread's jobs
 * and what each returns: each target's row and its retries' back-off.
 * The jobs' work is push_outbox.c's (the outbox's files) and
 * push_send.c's (the sending).
 */
#include "engine/push.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "core/worker.h"
#include "engine/push_int.h"
#include "engine/pushcfg.h"

#define OUTBOX "push-outbox"
/* The first look at the outbox comes on the loop's first turn: it makes
 * each target's `since` marker, from which the next start takes over the
 * dumps a killed run left unpushed. Two seconds late, a process the OOM
 * killer took within them (redis filling a 160 MiB limit takes 1.4 s)
 * left limit dumps that neither it nor its successor ever pushed. */
#define START_DELAY_S 0

/* A target's state on the loop. */
struct tgt {
    struct ha_push_row row;
    int backoff_s;             /* the wait after the last failure; 0 */
    int64_t next_ms;           /* ha_clock_ms() of the next attempt */
};

struct ha_push {
    struct event_base *base;
    const struct ha_config *cfg;
    struct ha_heap *heap;
    const struct ha_task_env *tasks;
    struct push_conf *conf;
    struct ha_worker *worker;
    struct tgt t[HA_PUSH_TARGETS_MAX];
    ha_push_encode_fn encode;
    void *encode_arg;

    struct item *queue;        /* to encode, oldest first */
    size_t n_queue, cap_queue;
    char (*known)[256];        /* names seen (queued, stored, failed) */
    size_t n_known, cap_known;
    struct ha_task task;       /* the encoding */
    bool encoding;

    bool scanning, scan_again, adopted;
    bool delivering, deliver_again;
    unsigned wants;            /* every target's kinds */
    struct event *start_ev, *retry_ev, *live_ev;
};

static void
job_run(void *arg)
{
    struct pjob *j = arg;

    switch (j->kind) {
    case JOB_SCAN:
        ha_push_outbox_scan(j);
        break;
    case JOB_STORE:
        ha_push_outbox_store(j);
        break;
    case JOB_DELIVER:
        ha_push_send_run(j);
        break;
    }
}

/* ------------------------------------------------------------------
 * The loop's side
 * ------------------------------------------------------------------ */

static void job_done(void *arg);
static void deliver(struct ha_push *p);

static struct pjob *
job_new(struct ha_push *p, enum job_kind kind)
{
    struct pjob *j = calloc(1, sizeof(*j));

    if (j == NULL) {
        ha_log_warn("push: out of memory");
        return NULL;
    }
    j->p = p;
    j->conf = p->conf;
    j->kind = kind;
    j->job.run = job_run;
    j->job.done = job_done;
    j->job.arg = j;
    j->job.what = kind == JOB_DELIVER ? "pushing profiles"
                  : kind == JOB_STORE ? "queueing a profile to push"
                                      : "looking for dumps to push";
    ha_buf_init(&j->body);
    return j;
}

static bool
job_submit(struct ha_push *p, struct pjob *j)
{
    char err[256];

    if (ha_worker_submit(p->worker, &j->job, err, sizeof(err)) != 0) {
        ha_log_warn("push: %s", err);
        ha_buf_free(&j->body);
        free(j);
        return false;
    }
    return true;
}

static bool
known(const struct ha_push *p, const char *name)
{
    for (size_t i = 0; i < p->n_known; i++)
        if (strcmp(p->known[i], name) == 0)
            return true;
    return false;
}

static void
remember(struct ha_push *p, const char *name)
{
    if (p->n_known == p->cap_known) {
        size_t cap = p->cap_known ? p->cap_known * 2 : 32;
        char(*g)[256] = realloc(p->known, cap * sizeof(*g));

        if (g == NULL)
            return;
        p->known = g;
        p->cap_known = cap;
    }
    ha_strlcpy(p->known[p->n_known++], name, sizeof(p->known[0]));
}

static void
enqueue(struct ha_push *p, const struct item *it)
{
    if (p->n_queue == p->cap_queue) {
        size_t cap = p->cap_queue ? p->cap_queue * 2 : 8;
        struct item *g = realloc(p->queue, cap * sizeof(*g));

        if (g == NULL)
            return;
        p->queue = g;
        p->cap_queue = cap;
    }
    p->queue[p->n_queue++] = *it;
}

/* The encoding: each queued profile made on the engine's worker while
 * this task waits, then handed to the push thread. */
static void
encode_body(void *arg)
{
    struct ha_push *p = arg;

    while (p->n_queue > 0 &&
           ha_task_stopped(ha_task_current()) == HA_TASK_GO) {
        struct item it = p->queue[0];
        struct pjob *j;
        char err[1024];
        int rc;

        memmove(p->queue, p->queue + 1, --p->n_queue * sizeof(*p->queue));
        if ((j = job_new(p, JOB_STORE)) == NULL)
            continue;
        j->item = it;
        rc = p->encode(p->encode_arg, it.live ? NULL : it.name, &j->body,
                       err, sizeof(err));
        if (rc != 0) {
            if (rc != HA_HEAP_STOPPED && rc != HA_HEAP_BUSY)
                ha_log_warn("push: %s not queued: %s", it.name, err);
            ha_buf_free(&j->body);
            free(j);
            continue;
        }
        (void)job_submit(p, j);
    }
}

static void
encode_finished(void *arg)
{
    struct ha_push *p = arg;

    p->encoding = false;
    /* More may have come while the last one was made. */
    if (p->n_queue > 0 && p->tasks != NULL) {
        p->encoding = true;
        if (ha_task_run(&p->task, encode_body, encode_finished, p) == 0)
            encode_finished(p);
    }
}

static void
encode_start(struct ha_push *p)
{
    if (p->encoding || p->n_queue == 0)
        return;
    p->encoding = true;
    if (ha_task_run(&p->task, encode_body, encode_finished, p) == 0)
        encode_finished(p);
}

static void
scan(struct ha_push *p, bool adopt)
{
    struct pjob *j;

    if (p->scanning) {
        p->scan_again = true;
        return;
    }
    if ((j = job_new(p, JOB_SCAN)) == NULL)
        return;
    j->adopt = adopt;
    p->scanning = job_submit(p, j);
}

void
ha_push_poke(void *arg)
{
    struct ha_push *p = arg;

    /* The start's look (gone processes' dumps and entries) comes first;
     * until then a poke waits for it. */
    if (p == NULL)
        return;
    if (p->adopted)
        scan(p, false);
    else
        p->scan_again = true; /* once the start's look is done */
}

static void
arm_retry(struct ha_push *p)
{
    int64_t now = ha_clock_ms(), soonest = 0;

    for (size_t i = 0; i < p->conf->n; i++) {
        const struct tgt *t = &p->t[i];

        if (t->row.queued > 0 && t->next_ms > 0 &&
            (soonest == 0 || t->next_ms < soonest))
            soonest = t->next_ms;
    }
    if (soonest > 0 && p->retry_ev != NULL) {
        int64_t ms = soonest > now ? soonest - now : 0;
        struct timeval tv = {(time_t)(ms / 1000),
                             (suseconds_t)(ms % 1000) * 1000};

        (void)event_add(p->retry_ev, &tv);
    }
}

static void
deliver(struct ha_push *p)
{
    int64_t now = ha_clock_ms();
    unsigned due = 0;
    struct pjob *j;

    if (p->delivering) {
        p->deliver_again = true;
        return;
    }
    for (size_t i = 0; i < p->conf->n; i++)
        if (p->t[i].next_ms <= now)
            due |= 1u << i;
    if (due == 0) {
        arm_retry(p);
        return;
    }
    if ((j = job_new(p, JOB_DELIVER)) == NULL)
        return;
    j->due = due;
    p->delivering = job_submit(p, j);
}

static void
took(struct ha_push *p, const struct pjob *j)
{
    time_t now = time(NULL);

    for (size_t i = 0; i < p->conf->n; i++) {
        const struct tgt_out *o = &j->out[i];
        struct tgt *t = &p->t[i];

        t->row.queued = o->queued;
        t->row.queued_bytes = o->queued_bytes;
        t->row.sent += o->sent;
        t->row.sent_bytes += o->sent_bytes;
        t->row.failed += o->failed;
        t->row.dropped += o->dropped;
        if (o->attempted)
            t->row.last_attempt = now;
        if (o->ok) {
            t->row.last_sent = now;
            if (!o->failed_now && t->backoff_s > 0)
                ha_log_info("push: %s takes profiles again",
                            p->conf->targets[i].url);
        }
        if (o->err[0] != '\0')
            ha_strlcpy(t->row.last_error, o->err,
                       sizeof(t->row.last_error));
        if (o->failed_now) {
            if (t->backoff_s == 0)
                ha_log_warn("push: %s: %s; %lld profile%s wait in the "
                            "outbox, tried again within %d s",
                            p->conf->targets[i].url, o->err, o->queued,
                            o->queued == 1 ? "" : "s",
                            p->cfg->push_retry_max_s);
            t->backoff_s = t->backoff_s == 0 ? 1 : t->backoff_s * 2;
            if (t->backoff_s > p->cfg->push_retry_max_s)
                t->backoff_s = p->cfg->push_retry_max_s;
            t->next_ms = ha_clock_ms() + (int64_t)t->backoff_s * 1000;
            t->row.next_attempt = (long long)now + t->backoff_s;
        } else if (o->attempted) {
            t->backoff_s = 0;
            t->next_ms = 0;
            t->row.next_attempt = 0;
        }
    }
}

static void
job_done(void *arg)
{
    struct pjob *j = arg;
    struct ha_push *p = j->p;

    if (!j->job.ran) {
        free(j->items);
        ha_buf_free(&j->body);
        free(j);
        return;
    }
    switch (j->kind) {
    case JOB_SCAN:
        p->scanning = false;
        for (size_t i = 0; i < j->n_items; i++)
            if (!known(p, j->items[i].name)) {
                remember(p, j->items[i].name);
                enqueue(p, &j->items[i]);
            }
        if (j->adopt) {
            p->adopted = true;
            deliver(p);  /* what gone processes left */
        }
        encode_start(p);
        if (p->scan_again) {
            p->scan_again = false;
            scan(p, false);
        }
        break;
    case JOB_STORE:
        took(p, j);
        deliver(p);
        break;
    case JOB_DELIVER:
        p->delivering = false;
        took(p, j);
        if (p->deliver_again) {
            p->deliver_again = false;
            deliver(p);
        } else {
            arm_retry(p);
        }
        break;
    }
    free(j->items);
    ha_buf_free(&j->body);
    free(j);
}

static void
start_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    scan(arg, true);
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    deliver(arg);
}

static void
live_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_push *p = arg;
    struct item it;
    struct timespec ts;

    (void)fd;
    (void)what;
    clock_gettime(CLOCK_REALTIME, &ts);
    memset(&it, 0, sizeof(it));
    it.live = true;
    it.kind = HA_PUSH_KIND_LIVE;
    it.taken_s = ts.tv_sec;
    snprintf(it.name, sizeof(it.name), "live-%ld-%lld", p->conf->pid,
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    for (size_t t = 0; t < p->conf->n; t++)
        if (p->conf->targets[t].kinds & HA_PUSH_KIND_LIVE)
            it.targets |= 1u << t;
    /* One at a time: a live profile still waiting is not doubled. */
    for (size_t i = 0; i < p->n_queue; i++)
        if (p->queue[i].live)
            return;
    enqueue(p, &it);
    encode_start(p);
}

struct ha_push *
ha_push_new(struct event_base *base, const struct ha_config *cfg,
            struct ha_heap *heap, const struct ha_labels *labels,
            const struct ha_task_env *tasks, ha_push_encode_fn encode,
            void *encode_arg, void (*thread_init)(void *), void *init_arg)
{
    struct ha_push *p;
    const char *stem;
    char err[256];
    size_t n = cfg->n_push < HA_PUSH_TARGETS_MAX ? cfg->n_push
                                                 : HA_PUSH_TARGETS_MAX;

    if (n == 0 || heap->datadir == NULL)
        return NULL;
    if ((p = calloc(1, sizeof(*p))) == NULL ||
        (p->conf = calloc(1, sizeof(*p->conf))) == NULL) {
        free(p);
        ha_log_warn("push: out of memory; nothing will be pushed");
        return NULL;
    }
    p->base = base;
    p->cfg = cfg;
    p->heap = heap;
    p->tasks = tasks;
    p->encode = encode;
    p->encode_arg = encode_arg;
    ha_strlcpy(p->conf->dir, heap->datadir, sizeof(p->conf->dir));
    snprintf(p->conf->outbox, sizeof(p->conf->outbox), "%s/" OUTBOX,
             heap->datadir);
    stem = heap->je != NULL && heap->je->dump_prefix[0] != '\0'
               ? heap->je->dump_prefix
               : HA_DEFAULT_DUMP_PREFIX;
    ha_strlcpy(p->conf->stem, stem, sizeof(p->conf->stem));
    p->conf->pid = (long)getpid();
    memcpy(p->conf->targets, cfg->push, n * sizeof(*cfg->push));
    p->conf->n = n;
    p->conf->max_bytes = cfg->push_outbox_max_bytes;
    p->conf->timeout_s = cfg->push_timeout_s;
    p->conf->labels = *labels;
    for (size_t i = 0; i < n; i++) {
        struct ha_push_row *r = &p->t[i].row;
        size_t used = 0;

        ha_strlcpy(r->target, cfg->push[i].id, sizeof(r->target));
        ha_strlcpy(r->type, ha_pushcfg_type_name(cfg->push[i].type),
                   sizeof(r->type));
        ha_strlcpy(r->url, cfg->push[i].url, sizeof(r->url));
        for (unsigned b = 0; b < 8; b++)
            if (cfg->push[i].kinds & (1u << b))
                used += (size_t)snprintf(
                    r->kinds + used, used < sizeof(r->kinds)
                                         ? sizeof(r->kinds) - used
                                         : 0,
                    "%s%s", used ? "," : "", ha_pushcfg_kind_name(1u << b));
        p->wants |= cfg->push[i].kinds;
    }
    p->worker = ha_worker_new(base, thread_init, init_arg, err, sizeof(err));
    if (p->worker == NULL) {
        ha_log_warn("push: %s; nothing will be pushed", err);
        free(p->conf);
        free(p);
        return NULL;
    }
    ha_worker_set_name(p->worker, "heapadmin-push");
    ha_task_init(&p->task, tasks);
    p->start_ev = event_new(base, -1, 0, start_cb, p);
    p->retry_ev = event_new(base, -1, 0, retry_cb, p);
    if (p->start_ev != NULL) {
        struct timeval tv = {START_DELAY_S, 0};

        (void)event_add(p->start_ev, &tv);
    }
    if (cfg->push_live_interval_s > 0 && (p->wants & HA_PUSH_KIND_LIVE)) {
        struct timeval tv = {cfg->push_live_interval_s, 0};

        p->live_ev = event_new(base, -1, EV_PERSIST, live_cb, p);
        if (p->live_ev != NULL)
            (void)event_add(p->live_ev, &tv);
    }
    heap->published = ha_push_poke;
    heap->published_arg = p;
    ha_log_info("push: %zu target%s, outbox %s (at most %lld bytes)", n,
                n == 1 ? "" : "s", p->conf->outbox,
                cfg->push_outbox_max_bytes);
    return p;
}

void
ha_push_free(struct ha_push *p, int64_t deadline_ns)
{
    if (p == NULL)
        return;
    p->heap->published = NULL;
    if (p->encoding)
        ha_task_abort(&p->task);
    ha_task_release(&p->task);
    if (p->start_ev != NULL)
        event_free(p->start_ev);
    if (p->retry_ev != NULL)
        event_free(p->retry_ev);
    if (p->live_ev != NULL)
        event_free(p->live_ev);
    if (ha_worker_free_by(p->worker, deadline_ns) != 0) {
        /* A push that does not end: its thread keeps p->conf and its
         * job; both are left to it. */
        ha_log_warn("push: a push was still being sent at the stop; "
                    "left to end on its own");
        free(p->queue);
        free(p->known);
        return;
    }
    free(p->queue);
    free(p->known);
    free(p->conf);
    free(p);
}

void
ha_push_abandon(struct ha_push *p)
{
    if (p == NULL)
        return;
    ha_worker_abandon(p->worker);
}

size_t
ha_push_rows(const struct ha_push *p, struct ha_push_row *rows, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; p != NULL && i < p->conf->n && n < max; i++)
        rows[n++] = p->t[i].row;
    return n;
}
