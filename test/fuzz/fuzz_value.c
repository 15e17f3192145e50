/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the global_variables value parsers (heap/value.h), which
 * see the right-hand side of any UPDATE global_variables ... SET
 * variable_value = '<text>' an admin sends. Input: byte 0 picks the lg
 * value and buffer size for ha_value_format_lg_bytes(); the rest is the
 * text. Seeds: corpus/value/.
 *
 * The same text also goes to the per-arena list parser and to
 * heap_growth's time parser (prof/dumpseries.h).
 *
 * Invariants: 0 or -1; an accepted integer lies in [min, max] and reads
 * back the same from its own decimal form; an accepted boolean reads back
 * from ha_value_bool_str(); formatting always terminates its buffer.
 */
#include "fuzz.h"

#include <limits.h>
#include <stdbool.h>

#include "prof/dumpseries.h"
#include "heap/value.h"

static const struct {
    long long min, max;
} ranges[] = {
    {LLONG_MIN, LLONG_MAX},
    {0, 62},   /* lg_prof_sample */
    {-1, 62},  /* lg_prof_interval */
    {0, 0},
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text, buf[64];
    unsigned lg;
    size_t outlen;
    long long v, again;
    bool b, b2;

    if (size < 1)
        return 0;
    lg = data[0];
    outlen = 1 + data[0] % sizeof(buf);
    text = fuzz_strndup(data + 1, size - 1);

    if (ha_value_parse_bool(text, &b) == 0) {
        FUZZ_CHECK(ha_value_parse_bool(ha_value_bool_str(b), &b2) == 0 &&
                       b2 == b,
                   "'%s' does not read back", ha_value_bool_str(b));
    }

    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        if (ha_value_parse_int(text, ranges[i].min, ranges[i].max, &v) != 0)
            continue;
        FUZZ_CHECK(v >= ranges[i].min && v <= ranges[i].max,
                   "%lld outside [%lld, %lld]", v, ranges[i].min,
                   ranges[i].max);
        snprintf(buf, sizeof(buf), "%lld", v);
        FUZZ_CHECK(ha_value_parse_int(buf, ranges[i].min, ranges[i].max,
                                      &again) == 0 &&
                       again == v,
                   "%s does not read back", buf);
    }

    memset(buf, 'x', sizeof(buf));
    ha_value_format_lg_bytes(lg, buf, outlen);
    FUZZ_CHECK(fuzz_has_nul(buf, outlen), "lg %u: not terminated in %zu",
               lg, outlen);

    {
        struct ha_value_arena_pair pairs[8];
        int64_t ns;
        size_t n = 0;

        if (ha_value_parse_arena_list(text, 64, -1, 1000, pairs, 8, &n, buf,
                                      sizeof(buf)) == 0) {
            FUZZ_CHECK(n <= 8, "%zu pairs", n);
            for (size_t i = 0; i < n; i++)
                FUZZ_CHECK(pairs[i].arena < 64 && pairs[i].value >= -1 &&
                               pairs[i].value <= 1000,
                           "pair %zu out of range", i);
        }
        if (ha_dumpseries_parse_time(text, &ns) == 0)
            FUZZ_CHECK(ns >= 0, "negative time %lld", (long long)ns);
    }
    free(text);
    return 0;
}
