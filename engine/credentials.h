/* SPDX-License-Identifier: MIT
 *
 * User accounts from admin_variables: "user:pass;user:pass" lists
 * (admin_credentials, stats_credentials, ProxySQL's format). Passwords are
 * kept only as mysql_native_password stage2 hashes, never in clear.
 */
#ifndef HA_CREDENTIALS_H
#define HA_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/digest.h"

#define HA_USER_MAX 128

enum ha_role {
    HA_ROLE_ADMIN,   /* admin_credentials: everything */
    HA_ROLE_STATS,   /* stats_credentials: read-only (security issue) */
    HA_ROLE_PROFILE, /* profile_credentials: heap profiles over HTTP and
                        nothing else (no SQL, no metrics) */
    HA_ROLE_MAX
};

struct ha_user {
    char name[HA_USER_MAX + 1];   /* user name as the client sends it */
    enum ha_role role;
    bool empty_password;          /* the account has no password */
    uint8_t stage2[HA_SHA1_LEN];  /* SHA1(SHA1(password)) */
    bool has_native;              /* stage2 is set */
    uint8_t sha2_stage2[HA_SHA256_LEN]; /* SHA256(SHA256(password)) */
    bool has_sha2;                /* sha2_stage2 is set */
    bool is_default;              /* admin:admin or stats:stats (also
                                     given as a hash) */
};

/* Parses "user:pass;user:pass" (whitespace around items ignored, empty
 * items skipped). A password may be given hashed instead of in clear:
 *   user:*<40 hex>        mysql_native_password, as MySQL's PASSWORD()
 *                         shows it: '*' + SHA1(SHA1(password)); the user
 *                         then has no caching_sha2_password digest
 *   user:sha2:<64 hex>    SHA256(SHA256(password)), the digest
 *                         caching_sha2_password's fast path checks; the
 *                         user then has no native digest
 * (MySQL's own "$A$005$" caching_sha2 storage is a salted crypt and
 * cannot serve the fast path, so it is not accepted.) A password in
 * clear gets both digests. A password starting with '*' or "sha2:" must
 * be such a hash. A password may contain ':'; a ';' in it is written
 * "\;" (else it would end the item: "admin:Ab3;k:9" is two users, admin
 * and k), and a backslash before ';' or '\' is written "\\". Appends
 * one struct ha_user per pair to *users (realloc'd; *n_users updated). A user name is 1..128 characters of
 * [A-Za-z0-9_.@-]; a name already in *users, a missing ':' or a bad name
 * is an error. Returns 0, or -1 with err naming the item and what is
 * allowed; on error *users and *n_users are unchanged. */
int ha_credentials_parse(const char *spec, enum ha_role role,
                         struct ha_user **users, size_t *n_users, char *err,
                         size_t errlen);

/* Writes spec with every password replaced by "****" into out (outlen
 * bytes): the form shown in global_variables and logs. */
void ha_credentials_mask(const char *spec, char *out, size_t outlen);

/* The login policy beyond the password: default credentials (admin:admin,
 * stats:stats) are accepted only from loopback or the unix socket
 * (is_local), as ProxySQL does. */
bool ha_credentials_allows_from(const struct ha_user *u, bool is_local);

/* The role's name as the logs and the gateway's X-Heapadmin-Role header
 * say it: "admin", "stats", "profile". */
const char *ha_credentials_role_name(enum ha_role role);

/* Finds name in users (exact, case-sensitive as MySQL user names are);
 * NULL if absent. */
const struct ha_user *ha_credentials_find(const struct ha_user *users,
                                          size_t n_users, const char *name);

#endif /* HA_CREDENTIALS_H */
