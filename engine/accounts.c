/* SPDX-License-Identifier: MIT
 *
 * Accounts, the clear-text password check and the throttle (see
 * accounts.h).
 */
#include "engine/accounts.h"

#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "core/clock.h"
#include "core/log.h"
#include "engine/digest.h"

void
ha_accounts_init(struct ha_accounts *a, const struct ha_user *users,
                 size_t n_users)
{
    memset(a, 0, sizeof(*a));
    a->users = users;
    a->n_users = n_users;
}

void
ha_accounts_free(struct ha_accounts *a)
{
    (void)a;
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
ha_accounts_admit(struct ha_accounts *a, const char *host)
{
    int64_t now = ha_clock_ms();
    int64_t wait = ha_throttle_admit(&a->throttle, host, now);
    unsigned held;

    if (wait > 0 && ha_throttle_say(&a->throttle, host, now, &held)) {
        if (held > 1)
            ha_log_info("logins from %s failed too often: this one is "
                        "checked in %lld ms (%u held since the last such "
                        "line)",
                        host, (long long)wait, held);
        else
            ha_log_info("logins from %s failed too often: this one is "
                        "checked in %lld ms",
                        host, (long long)wait);
    }
    return wait;
}

void
ha_accounts_failed(struct ha_accounts *a, const char *host)
{
    ha_throttle_failed(&a->throttle, host, ha_clock_ms());
}

void
ha_accounts_succeeded(struct ha_accounts *a, const char *host)
{
    ha_throttle_succeeded(&a->throttle, host);
}
