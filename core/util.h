/* SPDX-License-Identifier: MIT
 *
 * Small helpers shared by every layer: error text into caller buffers,
 * bounded string copies, constant-time comparison.
 */
#ifndef HA_UTIL_H
#define HA_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HA_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Formats an error message into err (errlen bytes, always NUL-terminated).
 * NULL-tolerant (err may be NULL) and never allocates, so it is safe on
 * every error path. */
void ha_err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies src into dst (dstlen bytes) and NUL-terminates. Returns 0, or -1
 * when src did not fit (dst then holds a truncated copy). */
int ha_strlcpy(char *dst, const char *src, size_t dstlen);

/* Appends printf-style text to buf (len bytes) at *at and moves *at past
 * it. Returns false when it does not fit whole (*at is then left as it
 * was): a record written line by line stops at the first line too long
 * for its buffer. */
bool ha_appendf(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* in into out (outlen bytes, at least 1; cut to fit, NUL-terminated),
 * each newline and carriage return made a space: a value kept to one
 * line of a line-per-key record (a reason or a path may hold either). */
void ha_one_line(const char *in, char *out, size_t outlen);

/* The decimal digits [s, e) as a number into *out. Returns false, *out
 * untouched, when the span is empty, holds anything but 0-9 (no sign,
 * no space), or its value is above INT64_MAX: what fits an int64_t as
 * well, which the callers' fields are. Pure. */
bool ha_decimal(const char *s, const char *e, uint64_t *out);

/* Compares n bytes in time independent of their contents. Returns true
 * when equal. Used for password proofs. */
bool ha_ct_equal(const void *a, const void *b, size_t n);

/* Case-insensitive ASCII equality of two NUL-terminated strings. */
bool ha_str_ieq(const char *a, const char *b);

/* Each byte's value as a hex digit plus one: 1..16 for 0-9, a-f, A-F;
 * 0 for any other byte. Read through ha_hex_digit(). */
extern const signed char ha_hex_values[256];

/* The value of hex digit c (0-9, a-f, A-F), or -1 when c is none. One
 * table lookup: the heap_v2 parser calls it for every digit of every
 * address of a dump. */
static inline int
ha_hex_digit(char c)
{
    return ha_hex_values[(unsigned char)c] - 1;
}

/* Levenshtein distance between two short ASCII strings (each at most 63
 * bytes are considered); used for "did you mean" hints. */
int ha_str_distance(const char *a, const char *b);

/* gmtime_r without its lock: the UTC calendar time of t (seconds since
 * the epoch) into *tm (tm_year since 1900, tm_mon 0-11, tm_mday,
 * tm_hour, tm_min, tm_sec, tm_wday 0 = Sunday, tm_yday 0-365; tm_isdst
 * 0). glibc's conversions take its time-zone lock, which a fork child
 * inherits held if another thread was inside one at the fork; every
 * heapadmin thread stamps log lines, and hosts fork. */
void ha_utc_tm(int64_t t, struct tm *tm);

/* "YYYY-MM-DD<sep>HH:MM:SS" of t in UTC into buf (len bytes, at least
 * 20). Returns the length written. */
int ha_utc_stamp(char *buf, size_t len, int64_t t, char sep);

/* The struct of type that holds member at address ptr. */
#define HA_CONTAINER_OF(ptr, type, member)                                  \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif /* HA_UTIL_H */
