/* SPDX-License-Identifier: MIT
 *
 * Shared helpers for the libFuzzer targets in test/fuzz/. Each target
 * defines LLVMFuzzerTestOneInput(), frees everything it allocates before
 * returning (LeakSanitizer runs after every input) and depends only on its
 * input, so a reproducer replays the same way every time.
 *
 * FUZZ_CHECK() states an invariant of the API under test; a violation
 * aborts, which libFuzzer reports as a crash with the input saved.
 */
#ifndef HA_FUZZ_H
#define HA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                           \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__,  \
                    __LINE__, #cond);                                   \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            abort();                                                    \
        }                                                               \
    } while (0)

/* A malloc'd NUL-terminated copy of the input (the parsers under test take
 * C strings); exits on OOM, which the fuzzer's rss limit would report. */
static inline char *
fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);

    if (s == NULL)
        abort();
    if (size > 0)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* True when s[0..n) holds a NUL: a fixed buffer the API promises to
 * terminate really is terminated. */
static inline int
fuzz_has_nul(const char *s, size_t n)
{
    return memchr(s, '\0', n) != NULL;
}

/* xorshift32 seeded from input bytes: slice sizes and other choices that
 * vary per input but replay identically. */
static inline uint32_t
fuzz_rand(uint32_t *state)
{
    uint32_t x = *state != 0 ? *state : 0x9E3779B9u;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

#endif /* HA_FUZZ_H */
