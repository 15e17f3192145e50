/* SPDX-License-Identifier: MIT
 *
 * The accounts every front-end logs in against (admin_credentials and
 * stats_credentials, engine/credentials.h), with the one check of a
 * password given in clear (HTTP Basic; MySQL's caching_sha2_password
 * full authentication) and the one failed-login throttle
 * (engine/throttle.h), so that a password flood gets the same rate over
 * any port and a good login from another address is never held up.
 *
 * The challenge-response checks of the MySQL plugins stay with the MySQL
 * front-end (admin/auth.h): they prove the same digests kept here.
 * Loop thread only.
 */
#ifndef HA_ACCOUNTS_H
#define HA_ACCOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/credentials.h"
#include "engine/throttle.h"

struct ha_accounts {
    const struct ha_user *users;   /* the config's; outlive this */
    size_t n_users;
    struct ha_throttle throttle;   /* failed logins per peer address */
};

void ha_accounts_init(struct ha_accounts *a, const struct ha_user *users,
                      size_t n_users);

/* Gives back what the throttle holds. */
void ha_accounts_free(struct ha_accounts *a);

/* The account named name, or NULL. */
const struct ha_user *ha_accounts_find(const struct ha_accounts *a,
                                       const char *name);

/* Whether pw (len bytes, in clear; one trailing NUL is ignored) is
 * user's password: its SHA-256 digest, or its native one when it has
 * none. Constant time in the digests; intermediate digests wiped. NULL
 * user: false. */
bool ha_accounts_check_clear(const struct ha_user *user, const uint8_t *pw,
                             size_t len);

/* A credential from host (an address, no port) arrived: returns the ms
 * to wait before checking it (0: at once), the moment reserved. A
 * held check is logged at most once per HA_THROTTLE_SAY_MS per address,
 * with the count held since the last line. See throttle.h for the rule. */
int64_t ha_accounts_admit(struct ha_accounts *a, const char *host);

/* A check of a credential from host failed. */
void ha_accounts_failed(struct ha_accounts *a, const char *host);

/* A login from host succeeded: its failures are forgotten. */
void ha_accounts_succeeded(struct ha_accounts *a, const char *host);

#endif /* HA_ACCOUNTS_H */
