/* SPDX-License-Identifier: MIT
 *
 * Authentication: scramble generation from the OS CSPRNG (OpenSSL
 * RAND_bytes), mysql_native_password hashing and proof verification, and
 * the "user:pass;user:pass" credential lists of admin_variables.
 *
 * mysql_native_password (MySQL protocol: Native Authentication):
 *   stage2 = SHA1(SHA1(password))               (what the server stores)
 *   proof  = SHA1(password) XOR SHA1(scramble || stage2)   (client sends)
 *   accept iff SHA1(proof XOR SHA1(scramble || stage2)) == stage2
 */
#ifndef HA_AUTH_H
#define HA_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_AUTH_NATIVE_PLUGIN "mysql_native_password"
#define HA_SHA1_LEN 20

enum ha_role {
    HA_ROLE_ADMIN,   /* admin_credentials: everything */
    HA_ROLE_STATS,   /* stats_credentials: read-only (security issue) */
    HA_ROLE_MAX
};

struct ha_user {
    char name[129];               /* user name as the client sends it */
    enum ha_role role;
    bool empty_password;          /* the account has no password */
    uint8_t stage2[HA_SHA1_LEN];  /* SHA1(SHA1(password)) */
    bool is_default;              /* admin:admin or stats:stats */
};

/* Fills scramble with len bytes from the OS CSPRNG, each in 1..127 and
 * never '$' (MySQL does the same; Connector/J reads the seed as a
 * NUL-terminated string). Returns 0, or -1 if the CSPRNG failed. */
int ha_auth_scramble(uint8_t *scramble, size_t len);

/* stage2 = SHA1(SHA1(password)), password of len bytes. */
void ha_auth_native_stage2(const char *password, size_t len,
                           uint8_t stage2[HA_SHA1_LEN]);

/* The client side of mysql_native_password, for tests and the benchmark:
 * proof = SHA1(pw) XOR SHA1(scramble || SHA1(SHA1(pw))). */
void ha_auth_native_proof(const char *password, size_t len,
                          const uint8_t scramble[20],
                          uint8_t proof[HA_SHA1_LEN]);

/* Verifies a mysql_native_password response against user in constant
 * time. An empty response (or a single 0x00, which libmysqlclient may
 * send) matches only an account with an empty password. */
bool ha_auth_native_check(const struct ha_user *user,
                          const uint8_t scramble[20], const uint8_t *resp,
                          size_t resp_len);

/* Parses "user:pass;user:pass" (whitespace around items ignored, empty
 * items skipped) and appends one struct ha_user per pair to *users
 * (realloc'd; *n_users updated). A user name must be 1..128 characters of
 * [A-Za-z0-9_.-@]; a duplicate name, a missing ':' or an empty list item
 * with only spaces is an error. Returns 0, or -1 with err naming the item
 * and what is allowed; on error *users is unchanged. */
int ha_auth_parse_credentials(const char *spec, enum ha_role role,
                              struct ha_user **users, size_t *n_users,
                              char *err, size_t errlen);

/* Writes spec with every password replaced by "****" into out (outlen
 * bytes): the form shown in global_variables and logs. */
void ha_auth_mask_credentials(const char *spec, char *out, size_t outlen);

/* Finds name in users; NULL if absent. */
const struct ha_user *ha_auth_find_user(const struct ha_user *users,
                                        size_t n_users, const char *name);

#endif /* HA_AUTH_H */
