/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: a symbol index as read back from disk (prof/symindex.h).
 * Each input is tried twice: as it is (almost always refused by its CRC)
 * and with its CRC made right, so the fuzzer reaches the header and
 * structure checks a forged file meets. Seeds: corpus/symindex/ (a small
 * hand-made index with inline chains and lines, and libjemalloc's as
 * heapadmin wrote it).
 *
 * Invariants: open returns 0 or -1 with a reason; on 0, lookups at
 * addresses drawn from the input stay in bounds (ASan), chains are at
 * most the depth asked for, every string id is inside the string table,
 * and the naming rule never returns more frames than it was given room
 * for.
 */
#include "fuzz.h"

#include "prof/symindex.h"

/* The cursor is carried from probe to probe, in whatever order they
 * come: it must never change an answer. */
static struct ha_symindex_cursor at;

static void
probe(const struct ha_symindex *ix, uint64_t va)
{
    struct ha_symindex_link chain[HA_SYMINDEX_MAX_DEPTH];
    struct ha_symindex_link again[HA_SYMINDEX_MAX_DEPTH];
    struct ha_syms_frame fr[HA_SYMINDEX_MAX_DEPTH];
    uint32_t file, line, file2, line2, sym;
    size_t depth = ha_symindex_chain(ix, va, chain, HA_SYMINDEX_MAX_DEPTH,
                                     &at);
    size_t n;
    uint64_t out, size;

    FUZZ_CHECK(depth <= HA_SYMINDEX_MAX_DEPTH, "depth %zu", depth);
    FUZZ_CHECK(ha_symindex_chain(ix, va, again, HA_SYMINDEX_MAX_DEPTH,
                                 NULL) == depth &&
                   (depth == 0 || memcmp(again, chain,
                                         depth * sizeof(*chain)) == 0),
               "a cursor changed the chain");
    for (size_t k = 0; k < depth; k++)
        FUZZ_CHECK(chain[k].func < ix->strs_len &&
                       chain[k].call_file < ix->strs_len,
                   "chain string out of range");
    ha_symindex_line(ix, va, &file, &line, &at);
    ha_symindex_line(ix, va, &file2, &line2, NULL);
    FUZZ_CHECK(file == file2 && line == line2, "a cursor changed the line");
    FUZZ_CHECK(file < ix->strs_len, "line file out of range");
    sym = ha_symindex_symbol(ix, va, &size);
    FUZZ_CHECK(sym < ix->strs_len, "symbol name out of range");
    FUZZ_CHECK(sym == 0 || size > 0, "a symbol holds it with no size");
    n = ha_symindex_frames(chain, depth, file, line, fr,
                           HA_SYMINDEX_MAX_DEPTH);
    FUZZ_CHECK(n == depth, "frames %zu of a chain of %zu", n, depth);
    if (ha_symindex_wants_symbol(fr, n))
        (void)ha_symindex_with_symbol(fr, &n, sym, file, line);
    FUZZ_CHECK(n <= HA_SYMINDEX_MAX_DEPTH, "frames %zu", n);
    (void)ha_symindex_vaddr(ix, va, &out);
    (void)strlen(ha_symindex_str(ix, sym));
}

static void
try_open(const uint8_t *bytes, size_t size)
{
    struct ha_symindex ix;
    char why[256] = "";

    at = (struct ha_symindex_cursor)HA_SYMINDEX_CURSOR_INIT;
    if (ha_symindex_open(&ix, bytes, size, why, sizeof(why)) != 0) {
        FUZZ_CHECK(why[0] != '\0', "refused without a reason");
        return;
    }
    probe(&ix, ix.h->base);
    probe(&ix, 0);
    probe(&ix, UINT64_MAX);
    for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
        uint64_t v;

        memcpy(&v, bytes + i, 8);
        probe(&ix, v);
        probe(&ix, ix.h->base + (v & 0xffff));
    }
    for (size_t i = 0; i < ix.n_syms && i < 16; i++)
        probe(&ix, ix.syms[i].addr);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Aligned as a mapping is. */
    uint8_t *copy = malloc(size ? size : 1);
    size_t at = offsetof(struct ha_symindex_header, crc);

    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    try_open(copy, size);
    if (size >= sizeof(struct ha_symindex_header)) {
        uint32_t zero = 0, crc;

        memcpy(copy + at, &zero, sizeof(zero));
        crc = ha_symindex_crc32c(0, copy, size);
        memcpy(copy + at, &crc, sizeof(crc));
        try_open(copy, size);
    }
    free(copy);
    return 0;
}
