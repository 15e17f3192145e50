/* SPDX-License-Identifier: MIT
 *
 * Parsing and formatting of global_variables values (see value.h). Pure.
 */
#include "heap/value.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

/* Copies text without surrounding whitespace into buf; -1 if it does not
 * fit (no accepted value is that long). */
static int
trim_copy(const char *text, char *buf, size_t buflen)
{
    const char *end;
    size_t len;

    while (is_space(*text))
        text++;
    end = text + strlen(text);
    while (end > text && is_space(end[-1]))
        end--;
    len = (size_t)(end - text);
    if (len >= buflen)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    return 0;
}

int
ha_value_parse_bool(const char *text, bool *out)
{
    static const struct {
        const char *word;
        bool value;
    } words[] = {
        {"true", true}, {"1", true},   {"on", true},
        {"false", false}, {"0", false}, {"off", false},
    };
    char buf[8];

    if (text == NULL || trim_copy(text, buf, sizeof(buf)) < 0)
        return -1;
    for (size_t i = 0; i < HA_ARRAY_SIZE(words); i++) {
        if (ha_str_ieq(buf, words[i].word)) {
            *out = words[i].value;
            return 0;
        }
    }
    return -1;
}

const char *
ha_value_bool_str(bool b)
{
    return b ? "true" : "false";
}

int
ha_value_parse_int(const char *text, long long min, long long max,
                   long long *out)
{
    char buf[32], *end;
    long long v;

    if (text == NULL || trim_copy(text, buf, sizeof(buf)) < 0 ||
        buf[0] == '\0')
        return -1;
    /* strtoll would also take "0x10" with base 0 and leading spaces
     * inside; base 10 and the checks below keep it to plain decimals. */
    if (!(buf[0] == '-' || buf[0] == '+' || (buf[0] >= '0' && buf[0] <= '9')))
        return -1;
    errno = 0;
    v = strtoll(buf, &end, 10);
    if (errno != 0 || end == buf || *end != '\0')
        return -1;
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

void
ha_value_format_lg_bytes(unsigned lg, char *out, size_t outlen)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                        "PiB", "EiB"};

    if (lg > 62) {
        snprintf(out, outlen, "2^%u B", lg);
        return;
    }
    snprintf(out, outlen, "%llu %s", 1ULL << (lg % 10), units[lg / 10]);
}

int
ha_value_parse_arena_list(const char *text, unsigned max_arena, long long min,
                          long long max, struct ha_value_arena_pair *out,
                          size_t max_pairs, size_t *n, char *why,
                          size_t whylen)
{
    const char *p = text;

    *n = 0;
    if (text == NULL) {
        ha_err_set(why, whylen, "NULL is not a list");
        return -1;
    }
    while (is_space(*p))
        p++;
    while (*p != '\0') {
        const char *item = p, *colon, *end;
        char num[32], val[32];
        long long a, v;
        size_t len;

        end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        colon = memchr(p, ':', (size_t)(end - p));
        len = (size_t)(end - item);
        if (colon == NULL || (size_t)(colon - p) >= sizeof(num) ||
            (size_t)(end - colon - 1) >= sizeof(val)) {
            ha_err_set(why, whylen,
                       "'%.*s' is not '<arena>:<value>'", (int)(len > 40 ? 40
                                                                 : len),
                       item);
            return -1;
        }
        memcpy(num, p, (size_t)(colon - p));
        num[colon - p] = '\0';
        memcpy(val, colon + 1, (size_t)(end - colon - 1));
        val[end - colon - 1] = '\0';
        if (ha_value_parse_int(num, 0, (long long)max_arena - 1, &a) != 0) {
            ha_err_set(why, whylen,
                       "'%s' is not an arena: allowed 0 to %u "
                       "(arenas.narenas - 1)",
                       num, max_arena > 0 ? max_arena - 1 : 0);
            return -1;
        }
        if (ha_value_parse_int(val, min, max, &v) != 0) {
            ha_err_set(why, whylen,
                       "arena %lld: '%s' is out of range: allowed %lld to "
                       "%lld",
                       a, val, min, max);
            return -1;
        }
        for (size_t i = 0; i < *n; i++)
            if (out[i].arena == (unsigned)a) {
                ha_err_set(why, whylen, "arena %lld is listed twice", a);
                return -1;
            }
        if (*n == max_pairs) {
            ha_err_set(why, whylen, "more than %zu arenas listed",
                       max_pairs);
            return -1;
        }
        out[*n].arena = (unsigned)a;
        out[*n].value = v;
        (*n)++;
        p = *end == ',' ? end + 1 : end;
        while (is_space(*p))
            p++;
        if (end[0] == ',' && *p == '\0') {
            ha_err_set(why, whylen, "a ',' ends the list");
            return -1;
        }
    }
    return 0;
}
