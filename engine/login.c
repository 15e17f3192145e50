/* SPDX-License-Identifier: MIT
 *
 * The one login sequence of every front-end (see login.h).
 */
#include "engine/agentrole.h"
#include "engine/login.h"

#include <string.h>
#include <unistd.h>

int64_t
ha_login_peek(struct ha_accounts *a, const struct ha_peer *peer)
{
    return ha_accounts_peek(a, peer);
}

int64_t
ha_login_admit(struct ha_accounts *a, const struct ha_peer *peer)
{
    return ha_accounts_admit(a, peer);
}

int64_t
ha_login_retry_s(int64_t ms)
{
    return ms <= 1000 ? 1 : (ms + 999) / 1000;
}

enum ha_login_result
ha_login_check(struct ha_accounts *a, const struct ha_peer *peer,
               const char *name, ha_login_prove_fn prove, void *arg,
               const struct ha_user **user, bool *say)
{
    bool line = false;
    const struct ha_user *u = ha_accounts_find(a, name);
    enum ha_login_result r;

    *user = u;
    if (!prove(u, arg) || u == NULL)
        r = u == NULL ? HA_LOGIN_UNKNOWN_USER : HA_LOGIN_BAD_PASSWORD;
    else if (!ha_credentials_allows_from(u, peer->local))
        /* Counted as a failure: a guesser who found admin:admin from
         * afar learns nothing, and pays for the try. */
        r = HA_LOGIN_NOT_FROM_HERE;
    else
        r = HA_LOGIN_OK;
    if (r == HA_LOGIN_OK)
        ha_accounts_succeeded(a, peer, name);
    else
        line = ha_accounts_failed(a, peer, name);
    if (say != NULL)
        *say = line;
    return r;
}

const char *
ha_login_result_text(enum ha_login_result r)
{
    switch (r) {
    case HA_LOGIN_OK:
        return "";
    case HA_LOGIN_UNKNOWN_USER:
        return "unknown user";
    case HA_LOGIN_BAD_PASSWORD:
        return "wrong password";
    case HA_LOGIN_NOT_FROM_HERE:
        return "the default credentials are accepted only over loopback "
               "or the unix socket; change the password";
    default:
        return "refused";
    }
}

/* Who a password-less peer speaks as on the agent socket: root's host
 * gateway for the role it names, a peer of this process's own user at
 * most as stats, and only while the process is dumpable
 * (engine/agentrole.h). */
static const struct ha_user agent_admin = {.name = "gateway",
                                           .role = HA_ROLE_ADMIN};
static const struct ha_user agent_stats = {.name = "gateway",
                                           .role = HA_ROLE_STATS};
static const struct ha_user agent_profile = {.name = "gateway",
                                             .role = HA_ROLE_PROFILE};
static const struct ha_user peer_stats = {.name = "peer",
                                          .role = HA_ROLE_STATS};

const struct ha_user *
ha_login_agent_socket(const struct ha_peer *peer, const char *role,
                      const char **why)
{
    enum ha_role r;

    if (peer->family != HA_PEER_UNIX) {
        *why = "this socket answers only a local peer";
        return NULL;
    }
    if (ha_agentrole_decide(peer->uid, geteuid(),
                            ha_agentrole_self_dumpable(), role, &r,
                            why) != 0)
        return NULL;
    if (peer->uid != 0)
        return &peer_stats;
    return r == HA_ROLE_ADMIN     ? &agent_admin
           : r == HA_ROLE_PROFILE ? &agent_profile
                                  : &agent_stats;
}
