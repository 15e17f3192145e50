/* SPDX-License-Identifier: MIT
 *
 * Query parameters and Basic credentials (see parse.h). Pure.
 */
#include "http/parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/util.h"

/* Decodes %XX escapes and '+' of [s, e) into a new string. Returns it,
 * or NULL with *why set (bad escape, NUL, out of memory). */
static char *
decode(const char *s, const char *e, const char **why)
{
    char *out = malloc((size_t)(e - s) + 1), *o = out;

    *why = "out of memory";
    if (out == NULL)
        return NULL;
    for (; s < e; s++) {
        int hi, lo;

        if (*s == '+') {
            *o++ = ' ';
            continue;
        }
        if (*s != '%') {
            *o++ = *s;
            continue;
        }
        if (e - s < 3 || (hi = ha_hex_digit(s[1])) < 0 ||
            (lo = ha_hex_digit(s[2])) < 0) {
            *why = "a '%' not followed by two hexadecimal digits";
            free(out);
            return NULL;
        }
        if (hi == 0 && lo == 0) {
            *why = "a NUL byte (%00)";
            free(out);
            return NULL;
        }
        *o++ = (char)(hi << 4 | lo);
        s += 2;
    }
    *o = '\0';
    return out;
}

int
ha_http_query_param(const char *query, const char *name, char **out,
                    char *err, size_t errlen)
{
    size_t nlen = strlen(name);
    const char *q = query, *why;

    *out = NULL;
    while (q != NULL && *q != '\0') {
        const char *amp = strchr(q, '&'), *end = amp ? amp : q + strlen(q);
        const char *eq = memchr(q, '=', (size_t)(end - q));
        const char *kend = eq ? eq : end;
        char *key = decode(q, kend, &why);

        if (key == NULL) {
            ha_err_set(err, errlen, "query: a parameter name holds %s",
                       why);
            return -1;
        }
        if (strlen(key) == nlen && memcmp(key, name, nlen) == 0) {
            free(key);
            *out = decode(eq ? eq + 1 : end, end, &why);
            if (*out == NULL) {
                ha_err_set(err, errlen, "query: %s= holds %s", name, why);
                return -1;
            }
            return 1;
        }
        free(key);
        q = amp ? amp + 1 : end;
    }
    return 0;
}

int
ha_http_basic_parse(const char *hdr, char *user, size_t user_cap, char *pw,
                    size_t pw_cap, size_t *pw_len, const char **why)
{
    unsigned char dec[HA_HTTP_BASIC_MAX + 4];
    size_t n, len, ulen, pad;
    int got;
    unsigned char *colon;

    *pw_len = 0;
    *why = "no credentials";
    if (hdr == NULL || strncasecmp(hdr, "Basic ", 6) != 0)
        return -1;
    hdr += 6;
    while (*hdr == ' ')
        hdr++;
    n = strlen(hdr);
    while (n > 0 && (hdr[n - 1] == ' ' || hdr[n - 1] == '\t'))
        n--;
    *why = "malformed credentials";
    if (n == 0 || n % 4 != 0)
        return -1;
    /* Decoded, it is 3 bytes per 4 characters less the padding: a
     * credential of HA_HTTP_BASIC_MAX bytes comes padded. */
    pad = (size_t)(hdr[n - 1] == '=') + (size_t)(hdr[n - 2] == '=');
    if (n / 4 * 3 - pad > HA_HTTP_BASIC_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = hdr[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '+' || c == '/' ||
              (c == '=' && i >= n - 2)))
            return -1;
    }
    got = EVP_DecodeBlock(dec, (const unsigned char *)hdr, (int)n);
    if (got < 0)
        return -1;
    len = (size_t)got;
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    if (hdr[n - 1] == '=')
        len--;
    if (n >= 2 && hdr[n - 2] == '=')
        len--;
    colon = memchr(dec, ':', len);
    if (colon == NULL || memchr(dec, '\0', len) != NULL) {
        OPENSSL_cleanse(dec, sizeof(dec));
        return -1;
    }
    ulen = (size_t)(colon - dec);
    if (ulen == 0 || ulen >= user_cap || len - ulen - 1 > pw_cap) {
        OPENSSL_cleanse(dec, sizeof(dec));
        return -1;
    }
    memcpy(user, dec, ulen);
    user[ulen] = '\0';
    *pw_len = len - ulen - 1;
    memcpy(pw, colon + 1, *pw_len);
    OPENSSL_cleanse(dec, sizeof(dec));
    *why = NULL;
    return 0;
}

char *
ha_http_printable(const char *text, char *out, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    if (len == 0)
        return out;
    for (const unsigned char *p = (const unsigned char *)(text != NULL
                                                              ? text
                                                              : "");
         *p != '\0'; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            if (o + 4 >= len)
                break;
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 0xf];
        } else {
            if (o + 1 >= len)
                break;
            out[o++] = (char)*p;
        }
    }
    out[o] = '\0';
    return out;
}
