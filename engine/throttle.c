/* SPDX-License-Identifier: MIT
 *
 * Per-address login throttling (see throttle.h).
 */
#include "engine/throttle.h"

#include <stdbool.h>
#include <string.h>

#include "core/util.h"

static struct ha_throttle_entry *
find(struct ha_throttle *t, const char *host, bool create)
{
    struct ha_throttle_entry *lru = &t->e[0];

    for (size_t i = 0; i < HA_THROTTLE_SLOTS; i++) {
        struct ha_throttle_entry *e = &t->e[i];

        if (e->host[0] != '\0' && strcmp(e->host, host) == 0)
            return e;
        if (e->host[0] == '\0' ||
            (lru->host[0] != '\0' && e->last_ms < lru->last_ms))
            lru = e;
    }
    if (!create)
        return NULL;
    memset(lru, 0, sizeof(*lru));
    ha_strlcpy(lru->host, host, sizeof(lru->host));
    return lru;
}

int64_t
ha_throttle_admit(struct ha_throttle *t, const char *host, int64_t now_ms)
{
    struct ha_throttle_entry *e = find(t, host, false);
    int64_t at;

    if (e == NULL)
        return 0;
    if (now_ms - e->last_ms > HA_THROTTLE_FORGET_MS) {
        memset(e, 0, sizeof(*e));
        return 0;
    }
    if (e->fails < HA_THROTTLE_FREE)
        return 0;
    at = now_ms > e->next_ms ? now_ms : e->next_ms;
    e->next_ms = at + HA_THROTTLE_SPACING_MS;
    return at - now_ms;
}

bool
ha_throttle_say(struct ha_throttle *t, const char *host, int64_t now_ms,
                unsigned *held)
{
    struct ha_throttle_entry *e = find(t, host, false);

    *held = 0;
    if (e == NULL)
        return false;
    e->unsaid++;
    if (e->said_ms != 0 && now_ms - e->said_ms < HA_THROTTLE_SAY_MS)
        return false;
    *held = e->unsaid;
    e->unsaid = 0;
    e->said_ms = now_ms;
    return true;
}

void
ha_throttle_failed(struct ha_throttle *t, const char *host, int64_t now_ms)
{
    struct ha_throttle_entry *e = find(t, host, true);
    int64_t wait;

    if (e->fails > 0 && now_ms - e->last_ms > HA_THROTTLE_FORGET_MS) {
        e->fails = 0;
        e->next_ms = 0;
    }
    e->fails++;
    e->last_ms = now_ms;
    if (e->fails < HA_THROTTLE_FREE)
        return;
    wait = (int64_t)(e->fails - HA_THROTTLE_FREE + 1) * HA_THROTTLE_STEP_MS;
    if (wait > HA_THROTTLE_MAX_MS)
        wait = HA_THROTTLE_MAX_MS;
    if (e->next_ms < now_ms + wait)
        e->next_ms = now_ms + wait;
}

void
ha_throttle_succeeded(struct ha_throttle *t, const char *host)
{
    struct ha_throttle_entry *e = find(t, host, false);

    if (e != NULL)
        memset(e, 0, sizeof(*e));
}
