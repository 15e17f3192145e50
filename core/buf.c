/* SPDX-License-Identifier: MIT
 *
 * Growable byte buffer with sticky allocation failure (see buf.h).
 */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
ha_buf_init(struct ha_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = false;
}

void
ha_buf_free(struct ha_buf *b)
{
    free(b->data);
    ha_buf_init(b);
}

void
ha_buf_reset(struct ha_buf *b)
{
    b->len = 0;
    b->failed = false;
}

int
ha_buf_reserve(struct ha_buf *b, size_t n)
{
    size_t cap;
    uint8_t *p;

    if (b->failed)
        return -1;
    if (n <= b->cap - b->len)
        return 0;
    if (n > SIZE_MAX / 2 - b->len) {
        b->failed = true;
        return -1;
    }
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void
ha_buf_append(struct ha_buf *b, const void *p, size_t n)
{
    if (n == 0 || ha_buf_reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void
ha_buf_append_u8(struct ha_buf *b, uint8_t v)
{
    ha_buf_append(b, &v, 1);
}

void
ha_buf_append_le(struct ha_buf *b, uint64_t v, size_t width)
{
    uint8_t tmp[8];

    if (width > sizeof(tmp))
        width = sizeof(tmp);
    for (size_t i = 0; i < width; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    ha_buf_append(b, tmp, width);
}

void
ha_buf_append_str(struct ha_buf *b, const char *s)
{
    ha_buf_append(b, s, strlen(s));
}

void
ha_buf_append_strz(struct ha_buf *b, const char *s)
{
    ha_buf_append(b, s, strlen(s) + 1);
}

void
ha_buf_printf(struct ha_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || ha_buf_reserve(b, (size_t)n + 1) != 0) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void
ha_buf_consume(struct ha_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}
