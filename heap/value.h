/* SPDX-License-Identifier: MIT
 *
 * Parsing and formatting of global_variables values. Pure: no jemalloc,
 * no SQLite, no I/O, so check_mallctl tests every case.
 *
 * Text accepted from an UPDATE may carry surrounding ASCII whitespace,
 * which is ignored; nothing else is forgiven.
 */
#ifndef HA_VALUE_H
#define HA_VALUE_H

#include <stdbool.h>
#include <stddef.h>

/* What ha_value_parse_bool() accepts, for error messages. */
#define HA_VALUE_BOOL_ALLOWED "true/false, 1/0 or on/off (any case)"

/* Parses true/false, 1/0, on/off in any case into *out. Returns 0, or -1
 * (and *out untouched) for anything else, including NULL. */
int ha_value_parse_bool(const char *text, bool *out);

/* "true" or "false": how booleans read back. Static storage. */
const char *ha_value_bool_str(bool b);

/* Parses a decimal integer (optional sign) in [min, max] into *out.
 * Returns 0, or -1 for NULL, empty text, trailing characters, overflow or
 * a value outside the range. */
int ha_value_parse_int(const char *text, long long min, long long max,
                       long long *out);

/* One "<arena>:<value>" pair of a per-arena setting. */
struct ha_value_arena_pair {
    unsigned arena;
    long long value;
};

/* Parses a per-arena list "<arena>:<value>[, <arena>:<value>...]" (ASCII
 * whitespace around items ignored; "" is an empty list): arenas in
 * [0, max_arena), values in [min, max], each arena at most once, at most
 * max_pairs pairs, into out[0..*n). Returns 0, or -1 with the offending
 * item and what is allowed in why. */
int ha_value_parse_arena_list(const char *text, unsigned max_arena,
                              long long min, long long max,
                              struct ha_value_arena_pair *out,
                              size_t max_pairs, size_t *n, char *why,
                              size_t whylen);

/* Formats bytes = 2^lg as "512 KiB", "1 MiB", "8 B"... into out (outlen
 * bytes), for messages about lg_* settings. lg above 62 prints "2^lg B". */
void ha_value_format_lg_bytes(unsigned lg, char *out, size_t outlen);

#endif /* HA_VALUE_H */
