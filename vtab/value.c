/* SPDX-License-Identifier: MIT
 *
 * Parsing and formatting of global_variables values (see value.h). Pure.
 */
#include "vtab/value.h"

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
