/* SPDX-License-Identifier: MIT
 *
 * Stable LSD radix sort of key/value pairs (see radix.h).
 */
#include "core/radix.h"

#include <stdlib.h>
#include <string.h>

#define DIGIT_BITS 11
#define BUCKETS (1u << DIGIT_BITS)
#define DIGITS ((64 + DIGIT_BITS - 1) / DIGIT_BITS)

static inline size_t
digit(uint64_t key, unsigned d)
{
    return (size_t)(key >> (d * DIGIT_BITS)) & (BUCKETS - 1);
}

int
ha_radix_sort(struct ha_radix_item *v, size_t n)
{
    struct ha_radix_item *tmp, *src = v, *dst;
    size_t (*count)[BUCKETS];

    if (n < 2)
        return 0;
    tmp = malloc(n * sizeof(*tmp));
    count = calloc(DIGITS, sizeof(*count));
    if (tmp == NULL || count == NULL) {
        free(tmp);
        free(count);
        return -1;
    }
    /* Every digit's histogram in one pass over the keys. */
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < DIGITS; d++)
            count[d][digit(v[i].key, d)]++;
    dst = tmp;
    for (unsigned d = 0; d < DIGITS; d++) {
        size_t sum = 0;

        /* Every key has the same digit here: nothing moves. */
        if (count[d][digit(src[0].key, d)] == n)
            continue;
        for (size_t b = 0; b < BUCKETS; b++) {
            size_t c = count[d][b];

            count[d][b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[d][digit(src[i].key, d)]++] = src[i];
        {
            struct ha_radix_item *t = src;

            src = dst;
            dst = t;
        }
    }
    if (src != v)
        memcpy(v, src, n * sizeof(*v));
    free(tmp);
    free(count);
    return 0;
}
