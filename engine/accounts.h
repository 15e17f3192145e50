/* SPDX-License-Identifier: MIT
 *
 * The accounts every front-end logs in against (admin_credentials and
 * stats_credentials, engine/credentials.h), with the one check of a
 * password given in clear (HTTP Basic; MySQL's caching_sha2_password
 * full authentication) and the one failed-login throttle
 * (engine/throttle.h), so that a password flood gets the same rate over
 * any port and a good login from another address is never held up. The
 * login sequence over them is engine/login.h's.
 *
 * The log: the throttle's summary once per HA_THROTTLE_REPORT_MS while
 * anything was refused or failed (never a line per refusal), and the
 * failed logins' own lines within a budget (core/lograte.h), the rest
 * counted in the summary.
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

#include "core/lograte.h"
#include "engine/credentials.h"
#include "engine/peer.h"
#include "engine/throttle.h"

struct event;
struct event_base;

struct ha_accounts {
    const struct ha_user *users;   /* the config's; outlive this */
    size_t n_users;
    struct ha_throttle throttle;   /* failed logins per peer, prefix, in
                                      all */
    struct ha_lograte failures;    /* failed logins' own lines */
    uint64_t unsaid;               /* failures without one, since the
                                      last summary */
    struct event_base *base;       /* for the summary's timer; NULL: the
                                      summary is said on later events */
    struct event *report;          /* armed while there is news */
};

/* Accounts over users (n_users), on base (may be NULL: no timer). */
void ha_accounts_init(struct ha_accounts *a, const struct ha_user *users,
                      size_t n_users, struct event_base *base);

/* Says what is left to say, gives back what the throttle holds. */
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

/* A connection from peer arrived: 0 when a credential from it could be
 * checked now, else the ms it must wait (the front-end answers at once
 * and closes). Reserves nothing. */
int64_t ha_accounts_peek(struct ha_accounts *a, const struct ha_peer *peer);

/* A credential from peer arrived: 0 when it is to be checked now (the
 * check reserved), else the ms it must wait (the front-end answers at
 * once and closes). See throttle.h for the rules. */
int64_t ha_accounts_admit(struct ha_accounts *a, const struct ha_peer *peer);

/* A check of a credential for account user from peer failed. Returns
 * true when the failure may have a log line of its own (the budget's),
 * false when the summary counts it. */
bool ha_accounts_failed(struct ha_accounts *a, const struct ha_peer *peer,
                        const char *user);

/* A login as user from peer succeeded. */
void ha_accounts_succeeded(struct ha_accounts *a, const struct ha_peer *peer,
                           const char *user);

#endif /* HA_ACCOUNTS_H */
