/* SPDX-License-Identifier: MIT
 *
 * A push's wire bodies (see pushwire.h). Pure.
 */
#include "prof/pushwire.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void
ha_pushwire_label_value(const char *value, char *out, size_t outlen)
{
    size_t o = 0;

    if (outlen == 0)
        return;
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0';
         p++) {
        unsigned char c = *p;

        if (o + 1 >= outlen)
            break;
        if (c <= 0x20 || c == 0x7f || c == '{' || c == '}' || c == ',' ||
            c == '=')
            c = '_';
        out[o++] = (char)c;
    }
    /* Never end inside a UTF-8 character: back up to its start. */
    if (o > 0 && ((unsigned char)value[o] & 0xc0) == 0x80 &&
        value[o] != '\0') {
        while (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0x80)
            o--;
        if (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0xc0)
            o--;
    }
    out[o] = '\0';
}

/* RFC 3986's unreserved characters pass; every other byte is %XX. */
static void
urlenc(const char *s, struct ha_buf *out)
{
    static const char hex[] = "0123456789ABCDEF";

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
            c == '~') {
            ha_buf_append_u8(out, c);
        } else {
            ha_buf_append_u8(out, '%');
            ha_buf_append_u8(out, (uint8_t)hex[c >> 4]);
            ha_buf_append_u8(out, (uint8_t)hex[c & 15]);
        }
    }
}

void
ha_pushwire_pyroscope_url(const char *base, const char *app,
                          const struct ha_pushwire_label *labels, size_t n,
                          int64_t from, int64_t until, struct ha_buf *out)
{
    struct ha_buf name = HA_BUF_INIT;
    char v[256];

    ha_pushwire_label_value(app, v, sizeof(v));
    ha_buf_append_str(&name, v);
    ha_buf_append_u8(&name, '{');
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            ha_buf_append_u8(&name, ',');
        ha_buf_append_str(&name, labels[i].name);
        ha_buf_append_u8(&name, '=');
        ha_pushwire_label_value(labels[i].value, v, sizeof(v));
        ha_buf_append_str(&name, v);
    }
    ha_buf_append_u8(&name, '}');
    ha_buf_append_u8(&name, 0);
    ha_buf_append_str(out, base);
    ha_buf_append_str(out, "/ingest?name=");
    if (!ha_buf_failed(&name))
        urlenc((const char *)name.data, out);
    ha_buf_printf(out, "&from=%" PRId64 "&until=%" PRId64
                  "&format=pprof&spyName=heapadmin",
                  from, until);
    ha_buf_free(&name);
}

void
ha_pushwire_boundary(const void *body, size_t len, uint64_t seed, char *out,
                     size_t outlen)
{
    size_t n = (size_t)snprintf(out, outlen, "heapadmin-%016" PRIx64
                                "%016" PRIx64,
                                seed, (uint64_t)(seed * 0x9e3779b97f4a7c15ull));

    /* A boundary must not occur in the part (RFC 2046 5.1.1): grow it
     * with more digits until it does not, at most 70 characters. */
    while (memmem(body, len, out, n) != NULL && n + 1 < outlen && n < 70) {
        out[n] = "0123456789abcdef"[(seed >> (n % 60)) & 15];
        out[++n] = '\0';
    }
}

void
ha_pushwire_multipart(const char *boundary, const void *body, size_t len,
                      struct ha_buf *out)
{
    ha_buf_printf(out,
                  "--%s\r\n"
                  "Content-Disposition: form-data; name=\"profile\"; "
                  "filename=\"profile.pprof\"\r\n"
                  "Content-Type: application/octet-stream\r\n\r\n",
                  boundary);
    ha_buf_append(out, body, len);
    ha_buf_printf(out, "\r\n--%s--\r\n", boundary);
}

void
ha_pushwire_base64(const void *in, size_t len, struct ha_buf *out)
{
    static const char t[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = in;
    size_t i;

    for (i = 0; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
                     p[i + 2];
        char q[4] = {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63],
                     t[v & 63]};

        ha_buf_append(out, q, 4);
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        char q[4] = {t[v >> 18], t[(v >> 12) & 63], '=', '='};

        ha_buf_append(out, q, 4);
    } else if (len - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        char q[4] = {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};

        ha_buf_append(out, q, 4);
    }
}

void
ha_pushwire_json_str(const char *s, struct ha_buf *out)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            ha_buf_append_u8(out, '\\');
            ha_buf_append_u8(out, *p);
        } else if (*p < 0x20 || *p == 0x7f) {
            ha_buf_printf(out, "\\u%04x", *p);
        } else {
            ha_buf_append_u8(out, *p);
        }
    }
}

void
ha_pushwire_parca_json(const struct ha_pushwire_label *labels, size_t n,
                       const void *body, size_t len, struct ha_buf *out)
{
    ha_buf_append_str(out, "{\"series\":[{\"labels\":{\"labels\":[");
    for (size_t i = 0; i < n; i++) {
        ha_buf_append_str(out, i > 0 ? ",{\"name\":\"" : "{\"name\":\"");
        ha_pushwire_json_str(labels[i].name, out);
        ha_buf_append_str(out, "\",\"value\":\"");
        ha_pushwire_json_str(labels[i].value, out);
        ha_buf_append_str(out, "\"}");
    }
    ha_buf_append_str(out, "]},\"samples\":[{\"rawProfile\":\"");
    ha_pushwire_base64(body, len, out);
    ha_buf_append_str(out, "\"}]}],\"normalized\":false}");
}
