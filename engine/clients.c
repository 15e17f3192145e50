/* SPDX-License-Identifier: MIT
 *
 * The registry of clients (see clients.h).
 */
#include "engine/clients.h"

#include <limits.h>
#include <string.h>

#include "core/util.h"

void
ha_clients_init(struct ha_clients *reg)
{
    memset(reg, 0, sizeof(*reg));
    reg->started = time(NULL);
}

uint32_t
ha_clients_next_id(struct ha_clients *reg)
{
    for (;;) {
        uint32_t id = ++reg->last_id;

        /* 0 is no id; after 2^32 clients the counter wraps past the
         * ones still listed. */
        if (id != 0 && ha_clients_find(reg, id) == NULL)
            return id;
    }
}

void
ha_clients_add(struct ha_clients *reg, struct ha_client *c)
{
    if (c->listed)
        return;
    c->prev = NULL;
    c->next = reg->head;
    if (reg->head != NULL)
        reg->head->prev = c;
    reg->head = c;
    c->listed = true;
    reg->n++;
    reg->connections++;
    if (reg->n > reg->max_used)
        reg->max_used = reg->n;
    if (reg->on_change != NULL)
        reg->on_change(reg->on_change_arg, reg->n);
}

void
ha_clients_remove(struct ha_clients *reg, struct ha_client *c)
{
    if (!c->listed)
        return;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        reg->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->listed = false;
    reg->n--;
    if (reg->on_change != NULL)
        reg->on_change(reg->on_change_arg, reg->n);
}

struct ha_client *
ha_clients_find(const struct ha_clients *reg, uint32_t id)
{
    for (struct ha_client *c = reg != NULL ? reg->head : NULL; c != NULL;
         c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

int
ha_clients_kill(struct ha_clients *reg, uint32_t id, bool query_only,
                enum ha_role killer_role, const char *killer, int *code,
                char *err, size_t errlen)
{
    struct ha_client *c = ha_clients_find(reg, id);

    if (c == NULL) {
        *code = 1094;
        ha_err_set(err, errlen, "Unknown thread id: %u", id);
        return -1;
    }
    /* MySQL's rule without PROCESS/SUPER: only one's own threads. */
    if (killer_role != HA_ROLE_ADMIN &&
        (c->user == NULL || killer == NULL || strcmp(c->user, killer) != 0)) {
        *code = 1095;
        ha_err_set(err, errlen, "You are not owner of thread %u", id);
        return -1;
    }
    if (c->ops != NULL && c->ops->kill != NULL)
        c->ops->kill(c, query_only);
    return 0;
}

size_t
ha_clients_held(const struct ha_clients *reg)
{
    size_t held = 0;

    for (struct ha_client *c = reg->head; c != NULL; c = c->next)
        if (c->ops != NULL && c->ops->held != NULL)
            held += c->ops->held(c);
    return held;
}

long long
ha_clients_output_left(const struct ha_clients *reg, long long max_total)
{
    size_t held;

    if (max_total <= 0)
        return LLONG_MAX;
    held = ha_clients_held(reg);
    if (held > (size_t)LLONG_MAX)
        return LLONG_MIN;
    return max_total - (long long)held;
}

void
ha_clients_stats(const struct ha_clients *reg, struct ha_clients_stats *out)
{
    time_t now = time(NULL);

    memset(out, 0, sizeof(*out));
    if (reg == NULL)
        return;
    out->uptime = now > reg->started ? (uint64_t)(now - reg->started) : 0;
    out->threads = reg->n;
    out->questions = reg->questions;
    out->connections = reg->connections;
    out->max_used = reg->max_used;
    out->http_requests = reg->http_requests;
}

int
ha_clients_each(const struct ha_clients *reg,
                int (*fn)(const struct ha_client *c, void *arg), void *arg)
{
    const struct ha_client *c, *last = NULL;
    int rc;

    for (c = reg->head; c != NULL; c = c->next)
        last = c;
    for (c = last; c != NULL; c = c->prev)
        if ((rc = fn(c, arg)) != 0)
            return rc;
    return 0;
}
