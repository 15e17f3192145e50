/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the admin_variables list values, admin_credentials /
 * stats_credentials ("user:pass;user:pass", ha_credentials_parse and
 * ha_credentials_mask) and mysql_ifaces ("host:port;/path.sock",
 * ha_iface_parse). Input: byte 0 picks the role and the mask buffer
 * size; the rest is the spec. Seeds: corpus/credentials/.
 *
 * Invariants: 0 or -1; on -1 the list is unchanged; on 0 every user has a
 * valid name, is found by ha_credentials_find() and, if any were added,
 * parsing the same spec again fails (duplicate names); masking terminates its buffer of
 * any size; accepted interfaces have a kind and, for TCP, a valid port.
 */
#include "fuzz.h"

#include "engine/config.h"
#include "engine/credentials.h"
#include "engine/iface.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ha_user *users = NULL, *before;
    struct ha_iface *ifaces = NULL;
    size_t n_users = 0, n_ifaces = 0, n_before, masklen;
    enum ha_role role;
    char *spec, *mask, err[256];
    int rc;

    if (size < 1)
        return 0;
    role = (data[0] & 1) ? HA_ROLE_STATS : HA_ROLE_ADMIN;
    spec = fuzz_strndup(data + 1, size - 1);

    err[0] = '\0';
    rc = ha_credentials_parse(spec, role, &users, &n_users, err, sizeof(err));
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (rc == 0) {
        /* A spec of only empty items ("", ";") adds no one. */
        FUZZ_CHECK(n_users == 0 || users != NULL, "users");
        for (size_t i = 0; i < n_users; i++) {
            size_t nl = strnlen(users[i].name, sizeof(users[i].name));

            FUZZ_CHECK(nl >= 1 && nl <= HA_USER_MAX, "user %zu len %zu", i,
                       nl);
            FUZZ_CHECK(users[i].role == role, "user %zu role", i);
            FUZZ_CHECK(ha_credentials_find(users, n_users, users[i].name) ==
                           &users[i],
                       "user %zu not found", i);
        }
    }
    if (rc == 0 && n_users > 0) {
        before = users;
        n_before = n_users;
        err[0] = '\0';
        rc = ha_credentials_parse(spec, role, &users, &n_users, err,
                                  sizeof(err));
        FUZZ_CHECK(rc == -1, "duplicate users accepted");
        FUZZ_CHECK(users == before && n_users == n_before,
                   "list changed on error");
        FUZZ_CHECK(err[0] != '\0', "error without text");
    } else if (rc != 0) {
        FUZZ_CHECK(users == NULL && n_users == 0, "list changed on error");
        FUZZ_CHECK(err[0] != '\0', "error without text");
    }
    free(users);

    /* The config's own sizing (strlen * 5 + 5) and a cramped buffer. */
    masklen = (data[0] >> 1) % 2 == 0 ? strlen(spec) * 5 + 5
                                      : 1 + (size_t)(data[0] >> 2);
    mask = malloc(masklen);
    if (mask == NULL)
        abort();
    memset(mask, 'x', masklen);
    ha_credentials_mask(spec, mask, masklen);
    FUZZ_CHECK(fuzz_has_nul(mask, masklen), "mask not terminated");
    free(mask);

    err[0] = '\0';
    rc = ha_iface_parse(spec, &ifaces, &n_ifaces, err, sizeof(err));
    FUZZ_CHECK(rc == 0 || rc == -1, "ifaces rc %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(n_ifaces > 0 && ifaces != NULL, "no interfaces");
        for (size_t i = 0; i < n_ifaces; i++) {
            FUZZ_CHECK(ifaces[i].kind < HA_IFACE_KIND_MAX, "kind");
            FUZZ_CHECK(ifaces[i].kind != HA_IFACE_TCP ||
                           (ifaces[i].port >= 1 && ifaces[i].port <= 65535),
                       "port %d", ifaces[i].port);
            FUZZ_CHECK(fuzz_has_nul(ifaces[i].host, sizeof(ifaces[i].host)) &&
                           fuzz_has_nul(ifaces[i].path,
                                        sizeof(ifaces[i].path)),
                       "iface %zu", i);
        }
    } else {
        FUZZ_CHECK(ifaces == NULL && n_ifaces == 0, "ifaces changed on error");
        FUZZ_CHECK(err[0] != '\0', "ifaces error without text");
    }
    free(ifaces);
    free(spec);
    return 0;
}
