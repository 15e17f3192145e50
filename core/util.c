/* SPDX-License-Identifier: MIT
 *
 * Small helpers shared by every layer.
 */
#include "core/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
ha_err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int
ha_strlcpy(char *dst, const char *src, size_t dstlen)
{
    size_t n = strlen(src);

    if (dstlen == 0)
        return -1;
    if (n >= dstlen) {
        memcpy(dst, src, dstlen - 1);
        dst[dstlen - 1] = '\0';
        return -1;
    }
    memcpy(dst, src, n + 1);
    return 0;
}

bool
ha_ct_equal(const void *a, const void *b, size_t n)
{
    /* volatile keeps the compiler from turning this into an early-exit
     * memcmp, which would leak how many bytes of a proof matched. */
    const volatile unsigned char *x = a;
    const volatile unsigned char *y = b;
    unsigned char diff = 0;

    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(x[i] ^ y[i]);
    return diff == 0;
}

static int
lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

bool
ha_str_ieq(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++) {
        if (lower((unsigned char)*a) != lower((unsigned char)*b))
            return false;
    }
    return *a == *b;
}

int
ha_str_distance(const char *a, const char *b)
{
    enum { MAXLEN = 63 };
    int row[MAXLEN + 1];
    size_t la = strlen(a), lb = strlen(b);

    if (la > MAXLEN)
        la = MAXLEN;
    if (lb > MAXLEN)
        lb = MAXLEN;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = lower((unsigned char)a[i - 1]) ==
                               lower((unsigned char)b[j - 1])
                           ? 0
                           : 1;
            int best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
