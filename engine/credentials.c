/* SPDX-License-Identifier: MIT
 *
 * admin_credentials / stats_credentials lists: "user:pass;user:pass", the
 * format ProxySQL uses. Each pair becomes a struct ha_user holding only the
 * mysql_native_password stage2 hash; the clear password never outlives
 * the parse. Error messages name items by position and user name, never by
 * their text, because an item without ':' may well be a bare password.
 */
#include "engine/credentials.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "engine/digest.h"
#include "core/util.h"

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static bool
is_name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '@' ||
           c == '-';
}

/* Finds the next ';'-separated item of *p, trimmed of whitespace, and
 * advances *p past it. Returns false at the end of the string. Empty items
 * are returned with *len 0 for the caller to skip. */
static bool
next_item(const char **p, const char **item, size_t *len)
{
    const char *s = *p, *end;

    if (*s == '\0')
        return false;
    /* The first ';' not escaped as "\;" ends the item. */
    for (end = s; *end != '\0' && *end != ';'; end++)
        if (end[0] == '\\' && (end[1] == ';' || end[1] == '\\'))
            end++;
    *p = *end == ';' ? end + 1 : end;
    while (s < end && is_space(*s))
        s++;
    while (end > s && is_space(end[-1]))
        end--;
    *item = s;
    *len = (size_t)(end - s);
    return true;
}

/* Decodes 2 * n hex digits (either case) at hex into out. Returns 0 or
 * -1. */
static int
unhex(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < 2 * n; i++) {
        int v = ha_hex_digit(hex[i]);

        if (v < 0)
            return -1;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)(v << 4);
        else
            out[i / 2] |= (uint8_t)v;
    }
    return 0;
}

/* admin:admin or stats:stats, in clear or as either hash. */
static bool
is_default_account(const struct ha_user *u)
{
    uint8_t native[HA_SHA1_LEN], sha2[HA_SHA256_LEN];
    bool is = false;

    if (strcmp(u->name, "admin") != 0 && strcmp(u->name, "stats") != 0)
        return false;
    ha_digest_native_stage2(u->name, 5, native);
    ha_digest_sha2_stage2(u->name, 5, sha2);
    if (u->has_native)
        is = memcmp(native, u->stage2, sizeof(native)) == 0;
    else if (u->has_sha2)
        is = memcmp(sha2, u->sha2_stage2, sizeof(sha2)) == 0;
    return is;
}

/* Parses one trimmed, non-empty item into *u. index is 1-based, for the
 * message. */
static int
parse_item(const char *item, size_t len, unsigned index, enum ha_role role,
           struct ha_user *u, char *err, size_t errlen)
{
    const char *colon = memchr(item, ':', len);
    const char *pw;
    char pwbuf[1024];
    size_t name_len, pw_len;

    if (colon == NULL) {
        ha_err_set(err, errlen,
                   "item %u has no ':'; expected user:password pairs "
                   "separated by ';'",
                   index);
        return -1;
    }
    name_len = (size_t)(colon - item);
    if (name_len == 0 || name_len > HA_USER_MAX) {
        ha_err_set(err, errlen,
                   "item %u: the user name is %zu characters long; it must "
                   "be 1..%d characters of [A-Za-z0-9_.@-]",
                   index, name_len, HA_USER_MAX);
        return -1;
    }
    for (size_t i = 0; i < name_len; i++) {
        if (!is_name_char(item[i])) {
            ha_err_set(err, errlen,
                       "item %u: user name '%.*s' has a character outside "
                       "[A-Za-z0-9_.@-] at position %zu",
                       index, (int)name_len, item, i + 1);
            return -1;
        }
    }

    memset(u, 0, sizeof(*u));
    memcpy(u->name, item, name_len);
    u->name[name_len] = '\0';
    u->role = role;
    /* The password is everything after the first ':', so it may itself
     * contain ':'; ';' (the item separator) is written "\;" and a
     * backslash before ';' or '\' is written "\\". */
    pw_len = 0;
    for (const char *q = colon + 1; q < item + len; q++) {
        if (q[0] == '\\' && q + 1 < item + len &&
            (q[1] == ';' || q[1] == '\\'))
            q++;
        if (pw_len < sizeof(pwbuf))
            pwbuf[pw_len] = *q;
        pw_len++;
    }
    if (pw_len > sizeof(pwbuf)) {
        ha_err_set(err, errlen,
                   "item %u: the password of user '%.*s' is longer than %zu "
                   "bytes",
                   index, (int)name_len, item, sizeof(pwbuf));
        return -1;
    }
    pw = pwbuf;
    if (pw_len > 0 && pw[0] == '*') {
        if (pw_len != 1 + 2 * HA_SHA1_LEN ||
            unhex(pw + 1, u->stage2, HA_SHA1_LEN) != 0) {
            ha_err_set(err, errlen,
                       "item %u: the password of user '%s' starts with '*' "
                       "but is not a mysql_native_password hash: '*' and "
                       "40 hex digits (SHA1(SHA1(password)))",
                       index, u->name);
            return -1;
        }
        u->has_native = true;
    } else if (pw_len >= 5 && memcmp(pw, "sha2:", 5) == 0) {
        if (pw_len != 5 + 2 * sizeof(u->sha2_stage2) ||
            unhex(pw + 5, u->sha2_stage2, sizeof(u->sha2_stage2)) != 0) {
            ha_err_set(err, errlen,
                       "item %u: the password of user '%s' starts with "
                       "'sha2:' but is not 64 hex digits "
                       "(SHA256(SHA256(password)))",
                       index, u->name);
            return -1;
        }
        u->has_sha2 = true;
    } else {
        u->empty_password = pw_len == 0;
        ha_digest_native_stage2(pw, pw_len, u->stage2);
        ha_digest_sha2_stage2(pw, pw_len, u->sha2_stage2);
        u->has_native = u->has_sha2 = true;
    }
    u->is_default = is_default_account(u);
    OPENSSL_cleanse(pwbuf, sizeof(pwbuf));
    return 0;
}

int
ha_credentials_parse(const char *spec, enum ha_role role,
                     struct ha_user **users, size_t *n_users, char *err,
                     size_t errlen)
{
    struct ha_user *add = NULL, *grown;
    size_t n_add = 0, len;
    const char *p = spec, *item;
    unsigned index = 0;

    if (spec == NULL) {
        ha_err_set(err, errlen, "no credentials given");
        return -1;
    }
    /* Parse into a private array first so a bad item leaves *users as it
     * was; only the final append touches the caller's array. */
    while (next_item(&p, &item, &len)) {
        struct ha_user u;

        index++;
        if (len == 0)
            continue;
        if (parse_item(item, len, index, role, &u, err, errlen) < 0)
            goto fail;
        if (ha_credentials_find(*users, *n_users, u.name) != NULL ||
            ha_credentials_find(add, n_add, u.name) != NULL) {
            ha_err_set(err, errlen,
                       "item %u: user '%s' is defined twice; each user "
                       "name may appear once across admin_credentials, "
                       "stats_credentials and profile_credentials",
                       index, u.name);
            goto fail;
        }
        grown = realloc(add, (n_add + 1) * sizeof(*add));
        if (grown == NULL) {
            ha_err_set(err, errlen, "out of memory");
            goto fail;
        }
        add = grown;
        add[n_add++] = u;
    }

    if (n_add > 0) {
        grown = realloc(*users, (*n_users + n_add) * sizeof(**users));
        if (grown == NULL) {
            ha_err_set(err, errlen, "out of memory");
            goto fail;
        }
        memcpy(grown + *n_users, add, n_add * sizeof(*add));
        *users = grown;
        *n_users += n_add;
    }
    free(add);
    return 0;

fail:
    free(add);
    return -1;
}

void
ha_credentials_mask(const char *spec, char *out, size_t outlen)
{
    char *o = out;
    size_t left = outlen;
    const char *p = spec, *item;
    size_t len;
    bool first = true;

    if (out == NULL || outlen == 0)
        return;
    out[0] = '\0';
    if (spec == NULL)
        return;
    while (next_item(&p, &item, &len)) {
        const char *colon;
        size_t keep;
        const char *parts[3];
        size_t part_len[3];

        if (len == 0)
            continue;
        colon = memchr(item, ':', len);
        /* Keep "user:" and hide the rest; an item without ':' is hidden
         * whole since it may be a password typed without its user. */
        keep = colon != NULL ? (size_t)(colon - item) + 1 : 0;
        parts[0] = first ? "" : ";";
        part_len[0] = first ? 0 : 1;
        parts[1] = item;
        part_len[1] = keep;
        parts[2] = "****";
        part_len[2] = 4;
        for (int i = 0; i < 3; i++) {
            size_t n = part_len[i];

            /* Truncation cuts at most into "****" or a user name, so a
             * short buffer can never reveal part of a password. */
            if (n >= left)
                n = left - 1;
            memcpy(o, parts[i], n);
            o += n;
            left -= n;
            *o = '\0';
        }
        first = false;
    }
}

bool
ha_credentials_allows_from(const struct ha_user *u, bool is_local)
{
    return u != NULL && (!u->is_default || is_local);
}

const struct ha_user *
ha_credentials_find(const struct ha_user *users, size_t n_users,
                    const char *name)
{
    if (users == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < n_users; i++) {
        if (strcmp(users[i].name, name) == 0)
            return &users[i];
    }
    return NULL;
}

const char *
ha_credentials_role_name(enum ha_role role)
{
    switch (role) {
    case HA_ROLE_ADMIN:
        return "admin";
    case HA_ROLE_PROFILE:
        return "profile";
    default:
        return "stats";
    }
}
