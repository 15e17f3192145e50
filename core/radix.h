/* SPDX-License-Identifier: MIT
 *
 * A stable LSD radix sort of (64-bit key, 64-bit value) pairs, for the
 * heap-profile code's large sorts (tens of thousands of addresses per
 * dump): a comparison sort through qsort's indirect calls costs ~20x
 * more there. Digits of 11 bits (2048 buckets stay in L1); a digit that
 * is the same in every key (the high bits of addresses) costs one
 * counting pass and no move.
 */
#ifndef HA_RADIX_H
#define HA_RADIX_H

#include <stddef.h>
#include <stdint.h>

struct ha_radix_item {
    uint64_t key;
    uint64_t val; /* carried along; equal keys keep their order */
};

/* Sorts v[0 .. n) by key, stably. Returns 0, or -1 when its scratch
 * (n items) cannot be allocated: v is then unchanged. */
int ha_radix_sort(struct ha_radix_item *v, size_t n);

#endif /* HA_RADIX_H */
