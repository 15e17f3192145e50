/* SPDX-License-Identifier: MIT
 *
 * The disk worker watched (see diskwatch.h).
 */
#include "engine/diskwatch.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "core/worker.h"
#include "engine/clients.h"

struct ha_diskwatch {
    struct ha_worker *w;
    struct ha_clients *clients;
    struct event *tick;
    struct ha_client row;        /* in clients while shown */
    bool shown;
    bool warned;                 /* this episode's line is out */
    const char *what;            /* the job shown */
    const char *who;             /* "the disk worker" */
    const char *behind;          /* what waits behind it */
    int64_t since_ns;
};

static void
row_cb(const struct ha_client *c, time_t now, struct ha_sessions_row *r)
{
    const struct ha_diskwatch *d =
        HA_CONTAINER_OF(c, const struct ha_diskwatch, row);

    (void)now;
    r->id = c->id;
    r->user = "system user";
    r->host = "";
    r->db = NULL;
    r->command = "Daemon";
    r->time = (ha_clock_ns() - d->since_ns) / 1000000000;
    r->state = d->what;
    r->info = NULL;
}

static void
kill_cb(struct ha_client *c, bool query_only)
{
    const struct ha_diskwatch *d =
        HA_CONTAINER_OF(c, const struct ha_diskwatch, row);

    (void)query_only;
    ha_log_warn("KILL %u: %s cannot be stopped in the middle of %s; it "
                "goes on when the disk answers, and SIGTERM leaves it "
                "behind",
                c->id, d->who, d->what);
}

static const struct ha_client_ops row_ops = {
    .row = row_cb,
    .kill = kill_cb,
};

static void
hide(struct ha_diskwatch *d)
{
    if (!d->shown)
        return;
    ha_clients_remove(d->clients, &d->row);
    d->shown = false;
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_diskwatch *d = arg;
    struct timeval tv = {1, 0};
    const char *job;
    int64_t since, ran;

    (void)fd;
    (void)what;
    if (!ha_worker_running(d->w, &job, &since)) {
        hide(d);
        if (d->warned)
            ha_log_info("%s is answering again", d->who);
        d->warned = false;
        if (ha_worker_pending(d->w) > 0)
            evtimer_add(d->tick, &tv);
        return;
    }
    ran = (ha_clock_ns() - since) / 1000000000;
    if (d->shown && (job != d->what || since != d->since_ns))
        hide(d); /* another job: a row of its own */
    d->what = job;
    d->since_ns = since;
    if (ran >= HA_DISKWATCH_SHOW_S && !d->shown) {
        d->row.id = ha_clients_next_id(d->clients);
        d->row.role = HA_ROLE_ADMIN;
        d->row.user = "system user";
        d->row.ops = &row_ops;
        d->row.owner = d;
        ha_clients_add(d->clients, &d->row);
        d->shown = true;
    }
    if (ran >= HA_DISKWATCH_WARN_S && !d->warned) {
        ha_log_warn("%s has been %s for %lld s: the datadir's disk may "
                    "not be answering; %s (SHOW PROCESSLIST shows it)",
                    d->who, job, (long long)ran, d->behind);
        d->warned = true;
    }
    evtimer_add(d->tick, &tv);
}

static void
busy_cb(void *arg)
{
    struct ha_diskwatch *d = arg;
    struct timeval tv = {1, 0};

    if (!evtimer_pending(d->tick, NULL))
        evtimer_add(d->tick, &tv);
}

struct ha_diskwatch *
ha_diskwatch_new(struct event_base *base, struct ha_worker *w,
                 struct ha_clients *clients, const char *who,
                 const char *behind)
{
    struct ha_diskwatch *d = calloc(1, sizeof(*d));

    if (d == NULL || w == NULL)
        goto fail;
    d->w = w;
    d->clients = clients;
    d->who = who;
    d->behind = behind;
    d->tick = evtimer_new(base, tick_cb, d);
    if (d->tick == NULL)
        goto fail;
    ha_worker_on_busy(w, busy_cb, d);
    return d;
fail:
    free(d);
    return NULL;
}

void
ha_diskwatch_free(struct ha_diskwatch *d)
{
    if (d == NULL)
        return;
    ha_worker_on_busy(d->w, NULL, NULL);
    hide(d);
    event_free(d->tick);
    free(d);
}
