/* SPDX-License-Identifier: MIT
 *
 * Accounts, the clear-text password check and the throttle with its
 * summary line (see accounts.h).
 */
#include "engine/accounts.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/clock.h"
#include "core/log.h"
#include "engine/digest.h"

static void arm(struct ha_accounts *a);

/* Says what the last interval saw; true when it said something. */
static bool
say(struct ha_accounts *a, int64_t now)
{
    struct ha_throttle_report r;
    char who[128] = "", unsaid[64] = "";
    uint64_t refused;

    if (!ha_throttle_report(&a->throttle, now, &r))
        return false;
    refused = r.refused[HA_THROTTLE_ADDRESS] + r.refused[HA_THROTTLE_PREFIX] +
              r.refused[HA_THROTTLE_GLOBAL];
    if (r.peers > 0)
        snprintf(who, sizeof(who), " from %zu peers, most from %s (%llu)",
                 r.peers, r.top, (unsigned long long)r.top_refused);
    if (a->unsaid > 0)
        snprintf(unsaid, sizeof(unsaid), ", %llu of them not logged one by one",
                 (unsigned long long)a->unsaid);
    a->unsaid = 0;
    ha_log_warn("login throttle, last %lld s: %llu login attempts refused "
                "at once (address %llu, /24 or /64 prefix %llu, over the "
                "bound of %d failed checks a second in all %llu)%s; %llu "
                "checks failed%s; throttle table %zu of %zu entries",
                (long long)((r.interval_ms + 500) / 1000),
                (unsigned long long)refused,
                (unsigned long long)r.refused[HA_THROTTLE_ADDRESS],
                (unsigned long long)r.refused[HA_THROTTLE_PREFIX],
                HA_THROTTLE_GLOBAL_PER_S,
                (unsigned long long)r.refused[HA_THROTTLE_GLOBAL], who,
                (unsigned long long)r.failed, unsaid, r.entries, r.capacity);
    return true;
}

static void
report_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_accounts *a = arg;

    (void)fd;
    (void)what;
    if (say(a, ha_clock_ms()))
        arm(a); /* the next interval may have news too */
}

/* The summary is due HA_THROTTLE_REPORT_MS from now (if not already). */
static void
arm(struct ha_accounts *a)
{
    struct timeval tv = {HA_THROTTLE_REPORT_MS / 1000,
                         (HA_THROTTLE_REPORT_MS % 1000) * 1000};

    if (a->base == NULL)
        return;
    if (a->report == NULL &&
        (a->report = evtimer_new(a->base, report_cb, a)) == NULL)
        return;
    if (!evtimer_pending(a->report, NULL))
        evtimer_add(a->report, &tv);
}

/* Something to report happened at now. */
static void
news(struct ha_accounts *a, int64_t now)
{
    if (a->base == NULL)
        (void)say(a, now);
    else
        arm(a);
}

void
ha_accounts_init(struct ha_accounts *a, const struct ha_user *users,
                 size_t n_users, struct event_base *base)
{
    memset(a, 0, sizeof(*a));
    a->users = users;
    a->n_users = n_users;
    a->base = base;
    ha_throttle_init(&a->throttle, 0, 0);
}

void
ha_accounts_free(struct ha_accounts *a)
{
    if (a->report != NULL) {
        event_free(a->report);
        a->report = NULL;
    }
    ha_throttle_free(&a->throttle);
}

const struct ha_user *
ha_accounts_find(const struct ha_accounts *a, const char *name)
{
    return ha_credentials_find(a->users, a->n_users, name);
}

bool
ha_accounts_check_clear(const struct ha_user *user, const uint8_t *pw,
                        size_t len)
{
    uint8_t sha2[HA_SHA256_LEN], sha1[HA_SHA1_LEN];
    bool ok;

    if (user == NULL)
        return false;
    if (len > 0 && pw[len - 1] == 0x00)
        len--;
    if (len == 0 || user->empty_password)
        return len == 0 && user->empty_password;
    if (user->has_sha2) {
        ha_digest_sha2_stage2((const char *)pw, len, sha2);
        ok = CRYPTO_memcmp(sha2, user->sha2_stage2, HA_SHA256_LEN) == 0;
    } else {
        ha_digest_native_stage2((const char *)pw, len, sha1);
        ok = user->has_native &&
             CRYPTO_memcmp(sha1, user->stage2, HA_SHA1_LEN) == 0;
    }
    OPENSSL_cleanse(sha2, sizeof(sha2));
    OPENSSL_cleanse(sha1, sizeof(sha1));
    return ok;
}

int64_t
ha_accounts_peek(struct ha_accounts *a, const struct ha_peer *peer)
{
    int64_t now = ha_clock_ms();
    int64_t wait = ha_throttle_peek(&a->throttle, peer, now, NULL);

    if (wait > 0)
        news(a, now);
    return wait;
}

int64_t
ha_accounts_admit(struct ha_accounts *a, const struct ha_peer *peer)
{
    int64_t now = ha_clock_ms();
    int64_t wait = ha_throttle_admit(&a->throttle, peer, now, NULL);

    if (wait > 0)
        news(a, now);
    return wait;
}

bool
ha_accounts_failed(struct ha_accounts *a, const struct ha_peer *peer,
                   const char *user)
{
    int64_t now = ha_clock_ms();
    uint64_t flushed;
    bool line;

    ha_throttle_failed(&a->throttle, peer, user, now);
    line = ha_lograte_take(&a->failures, now, &flushed);
    if (!line)
        a->unsaid++;
    news(a, now);
    return line;
}

void
ha_accounts_succeeded(struct ha_accounts *a, const struct ha_peer *peer,
                      const char *user)
{
    ha_throttle_succeeded(&a->throttle, peer, user, ha_clock_ms());
}
