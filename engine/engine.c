/* SPDX-License-Identifier: MIT
 *
 * The engine (see engine.h) once it is made: its parts handed to the
 * owner and the front-ends, and what the owner sets after ha_engine_new
 * (the key material, the saved settings, the shutdown flag, a gateway's
 * askers, the endpoint, the push). It is made in engine_new.c and
 * stopped in engine_stop.c; this run's record is engine_runrec.c's.
 */
#include "engine/engine.h"
#include "engine/engine_int.h"

#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "engine/hostmetrics.h"
#include "engine/persist.h"
#include "engine/push.h"
#include "heap/caches.h"

int
ha_engine_enable_tls(struct ha_engine *e, char *err, size_t errlen)
{
    return ha_tls_init(&e->tls, e->cfg, e->datadir, err, errlen);
}

int
ha_engine_apply_saved(struct ha_engine *e, bool initial)
{
    struct ha_persist_ctx ctx;

    /* Each saved value goes through the settings engine as an
     * operator's UPDATE of global_variables would. */
    memset(&ctx, 0, sizeof(ctx));
    ctx.heap = &e->heap;
    ctx.who = "start-up";
    ctx.datadir = e->datadir;
    ctx.cfg = e->cfg;
    return ha_persist_apply_saved(&ctx, initial);
}

void
ha_engine_set_shutdown_flag(struct ha_engine *e, const _Atomic bool *flag)
{
    e->tasks.shutdown = flag;
}

struct event_base *
ha_engine_base(const struct ha_engine *e)
{
    return e->base;
}

const struct ha_config *
ha_engine_config(const struct ha_engine *e)
{
    return e->cfg;
}

const char *
ha_engine_datadir(const struct ha_engine *e)
{
    return e->datadir;
}

struct ha_vtab_ctx *
ha_engine_vtab(struct ha_engine *e)
{
    return &e->vtab;
}

struct ha_heap *
ha_engine_heap(struct ha_engine *e)
{
    return &e->heap;
}

struct ha_clients *
ha_engine_clients(struct ha_engine *e)
{
    return &e->clients;
}

struct ha_accounts *
ha_engine_accounts(struct ha_engine *e)
{
    return &e->accounts;
}

const struct ha_tls *
ha_engine_tls(const struct ha_engine *e)
{
    return &e->tls;
}

const struct ha_task_env *
ha_engine_tasks(const struct ha_engine *e)
{
    return &e->tasks;
}

const _Atomic bool *
ha_engine_shutdown_flag(const struct ha_engine *e)
{
    return e->tasks.shutdown;
}

void
ha_engine_set_gateway(struct ha_engine *e, bool gateway)
{
    e->gateway = gateway;
    if (gateway && e->hostmetrics == NULL)
        e->hostmetrics = ha_hostmetrics_new();
    /* Its own threads for asking the agents, each started at its first
     * job: a slow agent holds a scrape to its deadline, never the
     * profile work, nor a scrape queued behind a stats_agents. */
    for (size_t i = 0; gateway && i < HA_ENGINE_ASKERS; i++) {
        char err[256];

        if (e->askers[i] != NULL)
            continue;
        e->askers[i] = ha_worker_new(e->base, e->heap.thread_init,
                                     e->heap.thread_init_arg, err,
                                     sizeof(err));
        if (e->askers[i] == NULL) {
            ha_log_warn("gateway: %s (asking the agents on %zu threads)",
                        err, i);
            break;
        }
        ha_worker_set_name(e->askers[i], "heapadmin-ask");
        e->tasks.askers = e->askers;
        e->tasks.n_askers = i + 1;
    }
}

struct ha_hostmetrics *
ha_engine_hostmetrics(struct ha_engine *e)
{
    return e->gateway ? e->hostmetrics : NULL;
}

bool
ha_engine_is_gateway(const struct ha_engine *e)
{
    return e->gateway;
}

void
ha_engine_set_endpoint(struct ha_engine *e, const char *endpoint)
{
    ha_strlcpy(e->endpoint, endpoint != NULL ? endpoint : "",
               sizeof(e->endpoint));
}

const char *
ha_engine_endpoint(const struct ha_engine *e)
{
    return e->endpoint;
}

static size_t
push_rows(const void *arg, struct ha_push_row *rows, size_t max)
{
    return ha_push_rows(arg, rows, max);
}

void
ha_engine_start_push(struct ha_engine *e, ha_push_encode_fn encode,
                     void *encode_arg)
{
    if (e->push != NULL || e->cfg->n_push == 0)
        return;
    e->push = ha_push_new(e->base, e->cfg, &e->heap, &e->labels, &e->tasks,
                          encode, encode_arg, e->heap.thread_init,
                          e->heap.thread_init_arg);
    e->vtab.push_rows = e->push != NULL ? push_rows : NULL;
    e->vtab.push_arg = e->push;
}

const struct ha_labels *
ha_engine_labels(const struct ha_engine *e)
{
    return &e->labels;
}

const char *
ha_engine_program(const struct ha_engine *e)
{
    return e->program;
}

int
ha_engine_release_caches(struct ha_engine *e, unsigned idle_s)
{
    if (ha_worker_pending(e->worker) > 0 ||
        ha_worker_pending(e->dump_worker) > 0)
        return -1;
    return ha_heap_caches_release(&e->heap, idle_s);
}

const char *
ha_engine_scratch_uri(const struct ha_engine *e)
{
    return e->scratch_uri;
}
