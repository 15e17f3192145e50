/* SPDX-License-Identifier: MIT
 *
 * The one login of every front-end (the MySQL port, HTTP Basic, the
 * agent socket): the throttle's word before a credential is looked at,
 * the account, the front-end's proof of the password, the rule that the
 * default credentials (admin:admin, stats:stats) count only from a local
 * peer (loopback or the unix socket, as ProxySQL has it), and the
 * throttle told of the outcome. The peer is the kernel's (engine/peer.h),
 * so an IPv4 client, the same client seen as ::ffff:a.b.c.d on a
 * dual-stack listener, an IPv6 one and a unix-socket one are judged
 * alike on every port.
 *
 * How the password is proven stays with the protocol (MySQL's scrambles
 * and caching_sha2_password's exchanges in admin/auth.h; a password in
 * clear, ha_accounts_check_clear): the front-end hands a prove callback.
 * Loop thread only.
 */
#ifndef HA_LOGIN_ENGINE_H
#define HA_LOGIN_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/accounts.h"
#include "engine/credentials.h"
#include "engine/peer.h"

enum ha_login_result {
    HA_LOGIN_OK,            /* logged in as *user */
    HA_LOGIN_UNKNOWN_USER,  /* no such account: answer as a wrong password */
    HA_LOGIN_BAD_PASSWORD,  /* the proof failed */
    HA_LOGIN_NOT_FROM_HERE, /* a default credential from a remote peer:
                               answered as a wrong password, logged why */
    HA_LOGIN_RESULT_MAX
};

/* A connection from peer arrived: 0 when a credential from it could be
 * checked now, else the ms until the throttle would let one through
 * (engine/throttle.h). The front-end then answers at once and closes
 * (MySQL ERR 1129 before its greeting, HTTP 429 with Retry-After): a
 * peer that must wait holds nothing meanwhile. Reserves nothing. */
int64_t ha_login_peek(struct ha_accounts *a, const struct ha_peer *peer);

/* A credential from peer arrived: returns 0 when it is to be checked now
 * (the check reserved), else the ms until the throttle lets one through
 * from there; the front-end answers at once and closes, and nothing is
 * counted against the peer (only failed checks are). */
int64_t ha_login_admit(struct ha_accounts *a, const struct ha_peer *peer);

/* Whole seconds to tell a client to wait for ms (Retry-After, ERR 1129's
 * text): at least 1. */
int64_t ha_login_retry_s(int64_t ms);

/* The front-end's proof that the client knows u's password; u is NULL
 * for an unknown account, and the proof must then fail (as it would for
 * a wrong password: the answer never tells which users exist). */
typedef bool (*ha_login_prove_fn)(const struct ha_user *u, void *arg);

/* Logs name in from peer: finds the account, runs prove, applies the
 * local-only rule of default credentials; then counts a failure against
 * peer in the throttle, or forgets peer's failures. Returns the result;
 * *user is the account (NULL when unknown). The caller answers, and for
 * a failure logs a line with ha_login_result_text's reason when *say is
 * true (the failures' line budget, core/lograte.h: past it the
 * throttle's summary counts them); say may be NULL. */
enum ha_login_result ha_login_check(struct ha_accounts *a,
                                    const struct ha_peer *peer,
                                    const char *name, ha_login_prove_fn prove,
                                    void *arg, const struct ha_user **user,
                                    bool *say);

/* Why a login failed, for the log: "unknown user", "wrong password",
 * "the default credentials are accepted only over loopback or the unix
 * socket; change the password". "" for HA_LOGIN_OK. */
const char *ha_login_result_text(enum ha_login_result r);

/* The agent socket (a host gateway's requests to an agent, http/http.h
 * ha_http_listen_agent): no password crosses it; only root or this
 * process's own user (SO_PEERCRED), who may read its memory anyway, may
 * speak there, and says on whose behalf with role ("admin", else
 * stats). Returns the pseudo-account to serve as, or NULL with *why. */
const struct ha_user *ha_login_agent_socket(const struct ha_peer *peer,
                                            const char *role,
                                            const char **why);

#endif /* HA_LOGIN_ENGINE_H */
