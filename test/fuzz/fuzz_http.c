/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: what the HTTP front-end parses itself (http/parse.h,
 * http/paths.h): ha_http_query_param with any parameter name over any
 * query string, ha_http_basic_parse on any Authorization value, and the
 * path table's ha_http_path_page, ha_http_path_allows and
 * ha_http_path_admin_only on any path.
 * Input: byte 0 picks the user buffer size and the method, byte 1 the
 * password and Allow buffer sizes; the rest is split at its first NUL
 * into A (parameter name, header value and path) and B (query string,
 * and the password of the round trip). Seeds: corpus/http/.
 *
 * Invariants: query_param returns -1, 0 or 1, *out set exactly on 1,
 * err set on -1, the same answer twice, and a name and value
 * percent-encoded into a query read back as they were; basic_parse
 * returns 0 or -1, a user within its buffer and without ':', a password
 * within its buffer, why set exactly on -1, and user:password
 * base64-encoded reads back; the path table names a page in range,
 * every page takes GET and HEAD, and a refusal's Allow is terminated in
 * any buffer.
 */
#include "fuzz.h"

#include <stdbool.h>

#include <openssl/evp.h>

#include "http/parse.h"
#include "http/paths.h"

/* s percent-encoded (every byte but [A-Za-z0-9._~-]) into a new string. */
static char *
pct_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out;

    if (out == NULL)
        abort();
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' ||
            c == '-') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return out;
}

static void
fuzz_query(const char *name, const char *query)
{
    char *out = NULL, *again = NULL, err[256], err2[256];
    int rc, rc2;

    err[0] = '\0';
    rc = ha_http_query_param(query, name, &out, err, sizeof(err));
    FUZZ_CHECK(rc >= -1 && rc <= 1, "rc %d", rc);
    FUZZ_CHECK((rc == 1) == (out != NULL), "rc %d, out %p", rc,
               (void *)out);
    FUZZ_CHECK(rc != -1 || err[0] != '\0', "error without text");
    FUZZ_CHECK(out == NULL || strlen(out) <= strlen(query),
               "value longer than the query");
    rc2 = ha_http_query_param(query, name, &again, err2, sizeof(err2));
    FUZZ_CHECK(rc2 == rc, "rc %d, then %d", rc, rc2);
    FUZZ_CHECK(rc != 1 || strcmp(out, again) == 0, "value changed");
    free(again);
    /* The round trip: name=value encoded reads back (first wins, so
     * put in front of the query). */
    if (rc == 1) {
        char *en = pct_encode(name), *ev = pct_encode(out), *q;
        size_t ql = strlen(en) + strlen(ev) + strlen(query) + 3;

        q = malloc(ql);
        if (q == NULL)
            abort();
        snprintf(q, ql, "%s=%s&%s", en, ev, query);
        again = NULL;
        rc2 = ha_http_query_param(q, name, &again, err2, sizeof(err2));
        FUZZ_CHECK(rc2 == 1 && strcmp(again, out) == 0,
                   "%s: rc %d, got '%s'", q, rc2, again ? again : "");
        free(again);
        free(q);
        free(en);
        free(ev);
    }
    free(out);
}

static void
fuzz_basic(const char *header, const char *user, const char *password,
           size_t user_cap, size_t pw_cap)
{
    char u[80], pw[HA_HTTP_BASIC_MAX + 1], *hdr;
    unsigned char plain[HA_HTTP_BASIC_MAX + 2];
    const char *why = NULL;
    size_t pw_len = 12345, ul, pl;
    int rc;

    memset(u, 'x', sizeof(u));
    rc = ha_http_basic_parse(header, u, user_cap, pw, pw_cap, &pw_len, &why);
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    FUZZ_CHECK((rc == 0) == (why == NULL), "rc %d, why %s", rc,
               why ? why : "NULL");
    if (rc == 0) {
        FUZZ_CHECK(fuzz_has_nul(u, user_cap), "user not terminated");
        FUZZ_CHECK(u[0] != '\0' && strchr(u, ':') == NULL, "user '%s'", u);
        FUZZ_CHECK(pw_len <= pw_cap, "password %zu > %zu", pw_len, pw_cap);
        FUZZ_CHECK(memchr(pw, '\0', pw_len) == NULL, "NUL in password");
    } else {
        FUZZ_CHECK(pw_len == 0, "pw_len %zu on error", pw_len);
    }

    /* The round trip: "Basic " + base64(user ":" password). */
    ul = strlen(user);
    pl = strlen(password);
    if (ul == 0 || ul >= user_cap || strchr(user, ':') != NULL ||
        pl > pw_cap || ul + 1 + pl > HA_HTTP_BASIC_MAX)
        return;
    memcpy(plain, user, ul);
    plain[ul] = ':';
    memcpy(plain + ul + 1, password, pl);
    hdr = malloc(6 + 4 * ((ul + 1 + pl + 2) / 3) + 1);
    if (hdr == NULL)
        abort();
    memcpy(hdr, "Basic ", 6);
    EVP_EncodeBlock((unsigned char *)hdr + 6, plain, (int)(ul + 1 + pl));
    why = NULL;
    rc = ha_http_basic_parse(hdr, u, user_cap, pw, pw_cap, &pw_len, &why);
    FUZZ_CHECK(rc == 0, "%s: %s", hdr, why ? why : "");
    FUZZ_CHECK(strcmp(u, user) == 0, "user '%s', want '%s'", u, user);
    FUZZ_CHECK(pw_len == pl && memcmp(pw, password, pl) == 0,
               "password of %zu bytes, want %zu", pw_len, pl);
    free(hdr);
}

static void
fuzz_path(const char *path, unsigned methods, size_t allow_len)
{
    char allow[32];
    int page = ha_http_path_page(path);
    bool ok;

    FUZZ_CHECK(page >= -1 && page < HA_HTTP_PAGE_MAX, "page %d", page);
    FUZZ_CHECK(ha_http_path_allows(path, HA_HTTP_GET_HEAD, allow,
                                   sizeof(allow)),
               "%s refuses GET", path);
    memset(allow, 'x', sizeof(allow));
    ok = ha_http_path_allows(path, methods, allow, allow_len);
    FUZZ_CHECK(ok || page >= 0, "%s: no page, yet refused", path);
    FUZZ_CHECK(ok || fuzz_has_nul(allow, allow_len),
               "Allow not terminated in %zu", allow_len);
    FUZZ_CHECK(!ha_http_path_admin_only(path) ||
                   page == HA_HTTP_PAGE_PPROF_CMDLINE,
               "%s: admins only, yet not the command line", path);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned methods[] = {0, HA_HTTP_GET_HEAD, HA_HTTP_POST,
                                       HA_HTTP_GET_HEAD | HA_HTTP_POST};
    const uint8_t *sep;
    char *a, *b;
    size_t user_cap, pw_cap, allow_len;

    if (size < 2)
        return 0;
    user_cap = 1 + data[0] % 64;
    pw_cap = (size_t)data[1] * 2;
    allow_len = 1 + data[1] % 32;
    data += 2;
    size -= 2;
    sep = memchr(data, '\0', size);
    a = fuzz_strndup(data, sep != NULL ? (size_t)(sep - data) : size);
    b = sep != NULL ? fuzz_strndup(sep + 1, size - (size_t)(sep - data) - 1)
                    : fuzz_strndup(data, 0);

    fuzz_query(a, b);
    fuzz_basic(a, a, b, user_cap, pw_cap);
    fuzz_path(a, methods[(data[-2] >> 6) & 3], allow_len);

    free(a);
    free(b);
    return 0;
}
