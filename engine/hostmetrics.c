/* SPDX-License-Identifier: MIT
 *
 * A host gateway's merged exposition (see hostmetrics.h).
 */
#include "engine/hostmetrics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/agenthttp.h"
#include "core/agentreg.h"
#include "core/clock.h"
#include "core/exposcan.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "engine/families.h"

#define REASON_IDENTITY HA_EXPOSCAN_REFUSAL_MAX /* not what its name says */
#define N_REASONS (HA_EXPOSCAN_REFUSAL_MAX + 1)

/* One process's refusals so far. */
struct hm_agent {
    pid_t pid;
    int64_t started;                 /* pids are reused */
    uint64_t refused[N_REASONS];
    bool logged;                     /* said once in the log */
    bool listed;                     /* in the last listing */
};

struct ha_hostmetrics {
    pthread_mutex_t lock;            /* guards agents, n, cap: scrapes
                                        run on the worker, one after
                                        another or (SQL and HTTP) at
                                        once */
    struct hm_agent *agents;
    size_t n, cap;
};

static const struct ha_exposcan_policy policy = {
    .rules = ha_families,
    .n_rules = 0, /* set at first use: ha_families_n is not a constant
                     expression */
    .reserved = "pid program user",
    .max_series = HA_HOSTMETRICS_MAX_SERIES,
    .max_bytes = HA_HOSTMETRICS_MAX_BYTES,
};

struct ha_hostmetrics *
ha_hostmetrics_new(void)
{
    struct ha_hostmetrics *hm = calloc(1, sizeof(*hm));

    if (hm != NULL)
        pthread_mutex_init(&hm->lock, NULL);
    return hm;
}

void
ha_hostmetrics_free(struct ha_hostmetrics *hm)
{
    if (hm == NULL)
        return;
    pthread_mutex_destroy(&hm->lock);
    free(hm->agents);
    free(hm);
}

static const char *
reason_name(int r)
{
    return r == REASON_IDENTITY ? "identity"
                                : ha_exposcan_refusal_name(
                                      (enum ha_exposcan_refusal)r);
}

/* The record of agent a, made when new. hm->lock held. */
static struct hm_agent *
record_of(struct ha_hostmetrics *hm, const struct ha_agent *a)
{
    for (size_t i = 0; i < hm->n; i++)
        if (hm->agents[i].pid == a->pid &&
            hm->agents[i].started == a->started)
            return &hm->agents[i];
    if (hm->n == hm->cap) {
        size_t cap = hm->cap ? hm->cap * 2 : 16;
        struct hm_agent *g = realloc(hm->agents, cap * sizeof(*g));

        if (g == NULL)
            return NULL;
        hm->agents = g;
        hm->cap = cap;
    }
    memset(&hm->agents[hm->n], 0, sizeof(hm->agents[0]));
    hm->agents[hm->n].pid = a->pid;
    hm->agents[hm->n].started = a->started;
    return &hm->agents[hm->n++];
}

/* Adds one scrape's refusals of agent a, and says so the first time. */
static void
account(struct ha_hostmetrics *hm, const struct ha_agent *a,
        const size_t refused[N_REASONS], size_t renamed)
{
    struct hm_agent *r;
    char what[512];
    size_t used = 0, total = 0;
    bool say;

    for (int i = 0; i < N_REASONS; i++)
        total += refused[i];
    pthread_mutex_lock(&hm->lock);
    r = record_of(hm, a);
    if (r == NULL) {
        pthread_mutex_unlock(&hm->lock);
        return;
    }
    r->listed = true;
    for (int i = 0; i < N_REASONS; i++)
        r->refused[i] += refused[i];
    say = !r->logged && (total > 0 || renamed > 0);
    r->logged = r->logged || say;
    pthread_mutex_unlock(&hm->lock);
    if (!say)
        return;
    what[0] = '\0';
    for (int i = 0; i < N_REASONS && used < sizeof(what); i++)
        if (refused[i] > 0)
            used += (size_t)snprintf(what + used, sizeof(what) - used,
                                     "%s%s: %zu", used ? ", " : "",
                                     reason_name(i), refused[i]);
    if (refused[REASON_IDENTITY] > 0)
        ha_log_warn("gateway: %s is not merged: %s (said once per process; "
                    "counted in heapadmin_gateway_refused_samples_total)",
                    a->path, a->why);
    else
        ha_log_warn("gateway: process %ld (%s, user %s) answered /metrics "
                    "with samples the gateway does not serve (%s%s%zu "
                    "labels renamed exported_*); its other samples are "
                    "served. Said once per process; counted in "
                    "heapadmin_gateway_refused_samples_total",
                    (long)a->pid, a->program, a->user, what,
                    used ? "; " : "", renamed);
}

/* Forgets processes no longer listed (their series end with them). */
static void
prune(struct ha_hostmetrics *hm)
{
    size_t k = 0;

    pthread_mutex_lock(&hm->lock);
    for (size_t i = 0; i < hm->n; i++)
        if (hm->agents[i].listed) {
            hm->agents[i].listed = false;
            hm->agents[k++] = hm->agents[i];
        }
    hm->n = k;
    pthread_mutex_unlock(&hm->lock);
}

static void
write_refused(struct ha_hostmetrics *hm, struct ha_expo *e)
{
    bool family = false;

    pthread_mutex_lock(&hm->lock);
    for (size_t i = 0; i < hm->n; i++)
        for (int r = 0; r < N_REASONS; r++) {
            char pid[24];
            const char *labels[] = {"pid", pid, "reason", reason_name(r),
                                    NULL};

            if (hm->agents[i].refused[r] == 0)
                continue;
            if (!family)
                ha_expo_family(e, "heapadmin_gateway_refused_samples",
                               HA_EXPO_COUNTER,
                               "Samples of an agent's /metrics the gateway "
                               "refused, by reason (identity: the process "
                               "is not the program its socket's name says; "
                               "bytes_limit: the whole answer, as one).");
            family = true;
            snprintf(pid, sizeof(pid), "%ld", (long)hm->agents[i].pid);
            ha_expo_sample(e, labels, (double)hm->agents[i].refused[r]);
        }
    pthread_mutex_unlock(&hm->lock);
}

/* ------------------------------------------------------------------
 * The job (worker thread)
 * ------------------------------------------------------------------ */

struct job {
    struct ha_hostmetrics *hm;
    char datadir[4096];
    pid_t only;                /* one process's exposition; 0: the host's */
    bool missing;              /* ... which is not served here */
    struct ha_service_name *services; /* a copy of the config's map */
    size_t n_services;
    const char *own;
    size_t own_len;
    long self_pid;
    char self_program[64];
    enum ha_expo_format fmt;
    int64_t deadline_ms;       /* the scrape's end (ha_clock_ms): a job
                                  that waited behind others in the
                                  worker's queue has only what is left */
    struct ha_buf out;
    int rc;
    char err[512];
};

/* One process's exposition, for a scraper that reached it through the
 * gateway's HTTP service discovery (http/sd.h): its target labels say
 * its program and service, so its samples carry neither, and no pid
 * (its series outlive a restart). */
static void
run_one(struct job *j, int64_t left)
{
    struct ha_exposcan_policy pol = policy;
    struct ha_exposcan scan;
    struct ha_agent_fan fan;
    const struct ha_agent *a;
    const struct ha_agent_reply *reply;
    struct ha_exposcan_report rep;
    size_t refused[N_REASONS] = {0};
    struct ha_expo e;

    pol.n_rules = ha_families_n;
    ha_exposcan_init(&scan, &pol);
    memset(&rep, 0, sizeof(rep));
    if (ha_agenthttp_fan(j->datadir, j->only, "stats", "GET", "/metrics",
                         NULL, (int)left, HA_HOSTMETRICS_MAX_BYTES, &fan,
                         j->err, sizeof(j->err)) != 0) {
        j->rc = -1;
        goto out;
    }
    /* Not serving: not asked (ha_agenthttp_get). */
    if (fan.n == 0 || fan.agents[0].state != HA_AGENT_SERVING) {
        snprintf(j->err, sizeof(j->err),
                 "no process %ld is served here now (/sd lists those that "
                 "are)",
                 (long)j->only);
        j->missing = true;
        j->rc = -1;
        goto out;
    }
    a = &fan.agents[0];
    reply = &fan.replies[0];
    if (reply->too_large) {
        refused[HA_EXPOSCAN_BYTES_CAP] = 1;
    } else if (reply->status == 200) {
        const char *expect[] = {
            "program", a->program, "service_name",
            ha_pushcfg_service_of(j->services, j->n_services, a->program),
            NULL};

        if (ha_exposcan_add_expect(&scan, (const char *)reply->body.data,
                                   reply->body.len, NULL, expect, &rep) != 0)
            goto oom;
        memcpy(refused, rep.refused, sizeof(rep.refused));
    } else {
        snprintf(j->err, sizeof(j->err), "process %ld (%s) did not answer: "
                 "%s", (long)a->pid, a->program,
                 reply->err[0] ? reply->err : "an error");
        j->rc = -1;
        goto out;
    }
    account(j->hm, a, refused, rep.renamed);
    ha_expo_init(&e, &j->out, j->fmt);
    ha_exposcan_write(&scan, &e);
    if (ha_expo_finish(&e) != 0 || ha_buf_failed(&j->out))
        goto oom;
    goto out;
oom:
    ha_strlcpy(j->err, "out of memory", sizeof(j->err));
    j->rc = -1;
out:
    ha_exposcan_free(&scan);
    ha_agenthttp_fan_free(&fan);
}

static void
run(void *arg)
{
    struct job *j = arg;
    struct ha_exposcan_policy pol = policy;
    struct ha_exposcan scan;
    struct ha_agent_fan fan;
    struct ha_expo e;
    char pid[24];

    int64_t left = j->deadline_ms - ha_clock_ms();

    if (left < 50) {
        /* Its scraper gave up meanwhile: nothing to do for it. */
        ha_strlcpy(j->err, "the scrape's time ran out before it started",
                   sizeof(j->err));
        j->rc = -1;
        return;
    }
    if (j->only != 0) {
        run_one(j, left);
        return;
    }
    pol.n_rules = ha_families_n;
    ha_exposcan_init(&scan, &pol);
    if (ha_agenthttp_fan(j->datadir, 0, "stats", "GET", "/metrics", NULL,
                         (int)left, HA_HOSTMETRICS_MAX_BYTES, &fan, j->err,
                         sizeof(j->err)) != 0) {
        j->rc = -1;
        goto out;
    }
    snprintf(pid, sizeof(pid), "%ld", j->self_pid);
    {
        const char *self[] = {"pid", pid, "program", j->self_program, NULL};

        if (ha_exposcan_add(&scan, j->own, j->own_len, self, NULL) != 0)
            goto oom;
    }
    for (size_t i = 0; i < fan.n; i++) {
        const struct ha_agent *a = &fan.agents[i];
        struct ha_agent_reply *r = &fan.replies[i];
        struct ha_exposcan_report rep;
        size_t refused[N_REASONS] = {0};
        char apid[24];
        const char *labels[] = {"pid", apid, "program", a->program, NULL};

        snprintf(apid, sizeof(apid), "%ld", (long)a->pid);
        memset(&rep, 0, sizeof(rep));
        /* An entry the kernel says is not that pid's (another user's
         * process has the pid, another process answers there) says
         * nothing about it: no series, not even a refusal. */
        if (a->foreign)
            continue;
        if (a->state == HA_AGENT_MISMATCH) {
            refused[REASON_IDENTITY] = 1;
        } else if (r->too_large) {
            refused[HA_EXPOSCAN_BYTES_CAP] = 1;
            r->status = 0;
        } else if (r->status == 200) {
            if (ha_exposcan_add(&scan, (const char *)r->body.data,
                                r->body.len, labels, &rep) != 0)
                goto oom;
            memcpy(refused, rep.refused, sizeof(rep.refused));
        }
        account(j->hm, a, refused, rep.renamed);
    }
    prune(j->hm);
    ha_expo_init(&e, &j->out, j->fmt);
    ha_exposcan_write(&scan, &e);
    ha_expo_family(&e, "heapadmin_agent_up", HA_EXPO_GAUGE,
                   "1 when the agent of this process answered the "
                   "gateway's scrape, 0 when it did not or is gone "
                   "(stats_agents says why).");
    for (size_t i = 0; i < fan.n; i++) {
        const struct ha_agent *a = &fan.agents[i];
        char apid[24];
        const char *labels[] = {"pid",  apid,    "program", a->program,
                                "user", a->user, NULL};

        /* A process that is not what its name says has no program to
         * label it with: it shows as refused, not here. */
        if (a->state == HA_AGENT_MISMATCH || a->foreign)
            continue;
        snprintf(apid, sizeof(apid), "%ld", (long)a->pid);
        ha_expo_sample(&e, labels, fan.replies[i].status == 200 ? 1 : 0);
    }
    ha_expo_one(&e, "heapadmin_agents", HA_EXPO_GAUGE,
                "Agents registered in the gateway's datadir, gone ones "
                "included.",
                (double)fan.n);
    write_refused(j->hm, &e);
    if (ha_expo_finish(&e) != 0 || ha_buf_failed(&j->out))
        goto oom;
    goto out;
oom:
    ha_strlcpy(j->err, "out of memory", sizeof(j->err));
    j->rc = -1;
out:
    ha_exposcan_free(&scan);
    ha_agenthttp_fan_free(&fan);
}

static void
discard(void *arg)
{
    struct job *j = arg;

    ha_buf_free(&j->out);
    free((void *)j->own);
    free(j->services);
    free(j);
}

int
ha_hostmetrics_collect(struct ha_hostmetrics *hm, const char *datadir,
                       const char *own, size_t own_len, long self_pid,
                       const char *self_program, enum ha_expo_format fmt,
                       int timeout_ms, struct ha_buf *out, char *err,
                       size_t errlen)
{
    struct job *j = calloc(1, sizeof(*j));
    char *copy = malloc(own_len + 1);
    int rc;

    if (j == NULL || copy == NULL) {
        free(j);
        free(copy);
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    /* The job may outlive this task (a KILL): it owns what it reads. */
    memcpy(copy, own, own_len);
    j->hm = hm;
    j->own = copy;
    j->own_len = own_len;
    j->self_pid = self_pid;
    ha_strlcpy(j->self_program, self_program, sizeof(j->self_program));
    ha_strlcpy(j->datadir, datadir, sizeof(j->datadir));
    j->fmt = fmt;
    j->deadline_ms = ha_clock_ms() + timeout_ms;
    ha_buf_init(&j->out);
    if (ha_task_offload_ask(run, discard, j) != 0) {
        ha_err_set(err, errlen, "interrupted");
        return -1;
    }
    rc = j->rc;
    if (rc != 0)
        ha_err_set(err, errlen, "%s", j->err);
    else
        ha_buf_append(out, j->out.data, j->out.len);
    discard(j);
    return rc == 0 && !ha_buf_failed(out) ? 0 : -1;
}

int
ha_hostmetrics_collect_one(struct ha_hostmetrics *hm, const char *datadir,
                           long pid, const struct ha_service_name *services,
                           size_t n_services, enum ha_expo_format fmt,
                           int timeout_ms, struct ha_buf *out, char *err,
                           size_t errlen)
{
    struct job *j = calloc(1, sizeof(*j));
    int rc;

    if (j == NULL || (n_services > 0 &&
                      (j->services = malloc(n_services *
                                            sizeof(*services))) == NULL)) {
        free(j);
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    if (n_services > 0)
        memcpy(j->services, services, n_services * sizeof(*services));
    j->n_services = n_services;
    j->hm = hm;
    j->only = (pid_t)pid;
    ha_strlcpy(j->datadir, datadir, sizeof(j->datadir));
    j->fmt = fmt;
    j->deadline_ms = ha_clock_ms() + timeout_ms;
    ha_buf_init(&j->out);
    if (ha_task_offload_ask(run, discard, j) != 0) {
        ha_err_set(err, errlen, "interrupted");
        return -1;
    }
    rc = j->rc != 0 ? (j->missing ? -2 : -1) : 0;
    if (rc != 0)
        ha_err_set(err, errlen, "%s", j->err);
    else
        ha_buf_append(out, j->out.data, j->out.len);
    discard(j);
    return rc == 0 && ha_buf_failed(out) ? -1 : rc;
}
