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
ha_appendf(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*at >= len)
        return false;
    va_start(ap, fmt);
    n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len - *at)
        return false;
    *at += (size_t)n;
    return true;
}

void
ha_one_line(const char *in, char *out, size_t outlen)
{
    size_t n = 0;

    for (; *in != '\0' && n + 1 < outlen; in++)
        out[n++] = *in == '\n' || *in == '\r' ? ' ' : *in;
    out[n] = '\0';
}

bool
ha_decimal(const char *s, const char *e, uint64_t *out)
{
    uint64_t v = 0;

    if (s >= e || e - s > 19)
        return false;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v > (uint64_t)INT64_MAX)
        return false;
    *out = v;
    return true;
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

/* clang-format off */
const signed char ha_hex_values[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,
    ['6'] = 7,  ['7'] = 8,  ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
    ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12,
    ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};
/* clang-format on */

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

/* Days since 1970-01-01 to a proleptic Gregorian date, by 400-year eras
 * of 146,097 days (each era's years counted from March, so that the leap
 * day falls at the end of one). */
void
ha_utc_tm(int64_t t, struct tm *tm)
{
    static const int before_month[2][12] = {
        {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334},
        {0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335},
    };
    int64_t days = t / 86400, secs = t % 86400;
    int64_t z, era, doe, yoe, doy, mp, y;
    int m, d, leap;

    if (secs < 0) {
        secs += 86400;
        days--;
    }
    z = days + 719468; /* from 0000-03-01 */
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    d = (int)(doy - (153 * mp + 2) / 5 + 1);
    m = (int)(mp < 10 ? mp + 3 : mp - 9);
    y = yoe + era * 400 + (m <= 2);
    leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    memset(tm, 0, sizeof(*tm));
    tm->tm_year = (int)(y - 1900);
    tm->tm_mon = m - 1;
    tm->tm_mday = d;
    tm->tm_hour = (int)(secs / 3600);
    tm->tm_min = (int)(secs / 60 % 60);
    tm->tm_sec = (int)(secs % 60);
    tm->tm_wday = (int)(((days + 4) % 7 + 7) % 7); /* 1970-01-01: Thu */
    tm->tm_yday = before_month[leap][m - 1] + d - 1;
}

int
ha_utc_stamp(char *buf, size_t len, int64_t t, char sep)
{
    struct tm tm;
    int n;

    if (len == 0)
        return 0;
    ha_utc_tm(t, &tm);
    n = snprintf(buf, len, "%04d-%02d-%02d%c%02d:%02d:%02d",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, sep,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
    return n < 0 ? 0 : (size_t)n >= len ? (int)len - 1 : n;
}
