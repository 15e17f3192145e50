/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the /proc/<pid>/smaps and /proc/<pid>/status readers
 * (prof/smaps.h), and the RSS
 * breakdown built on what it parsed (prof/breakdown.h) with jemalloc
 * figures taken from the input's first bytes. Seeds: corpus/smaps/ (real
 * smaps of a jemalloc process, with thread stacks and LazyFree).
 *
 * Invariants: 0 or -1, and on -1 the message names a line; on 0 the
 * kinds add up to rss, stacks are never more than the mappings; the
 * breakdown's parts add up to its rss row exactly, whatever jemalloc
 * claims.
 */
#include "fuzz.h"

#include "prof/breakdown.h"
#include "prof/smaps.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ha_breakdown_row rows[HA_BREAKDOWN_ROWS];
    struct ha_breakdown_in in;
    char err[256];
    int64_t sum = 0, rss = 0;

    memset(&in, 0, sizeof(in));
    /* The same bytes as /proc/<pid>/status. */
    if (ha_smaps_parse_status((const char *)data, size, &in.smaps, err,
                              sizeof(err)) == 0)
        FUZZ_CHECK(in.smaps.anon + in.smaps.files == in.smaps.rss &&
                       !in.smaps.detailed,
                   "status: kinds do not add up");
    if (ha_smaps_parse((const char *)data, size, &in.smaps, err,
                       sizeof(err)) != 0) {
        FUZZ_CHECK(strncmp(err, "line ", 5) == 0, "smaps: '%s'", err);
        return 0;
    }
    FUZZ_CHECK(in.smaps.files + in.smaps.stacks + in.smaps.heap +
                       in.smaps.anon ==
                   in.smaps.rss,
               "kinds do not add up to rss");
    FUZZ_CHECK(in.smaps.n_stacks <= in.smaps.n_mappings, "stacks");

    /* jemalloc's figures from the input itself, so they range from
     * nothing to more than the whole RSS. */
    in.have_smaps = true;
    in.have_jemalloc = true;
    in.have_bins = size > 0 && data[0] & 1;
    in.have_own = size > 0 && data[0] & 2;
    for (size_t i = 0; i < size && i < 8; i++) {
        uint64_t v = (uint64_t)data[i] << (8 + 3 * i);

        in.allocated += v;
        in.active += v + (uint64_t)data[i] * 4096;
        in.resident += in.active + v / 2;
        in.tcache += v / 4;
        in.internal += v / 8;
        in.dirty += v / 3;
        in.muzzy += v / 5;
        in.slab_free += v / 7;
        in.own_resident += v / 6;
    }
    ha_breakdown_compute(&in, rows);
    for (int i = 0; i < HA_BREAKDOWN_ROWS; i++) {
        if (rows[i].kind == HA_BREAKDOWN_PART) {
            /* heapadmin's row is NULL where its arena is not apart. */
            bool own = strcmp(rows[i].component, "heapadmin") == 0;

            FUZZ_CHECK(rows[i].known == (!own || in.have_own),
                       "%s known %d", rows[i].component, rows[i].known);
            if (!rows[i].known)
                continue;
            FUZZ_CHECK(rows[i].bytes >= 0 ||
                           strcmp(rows[i].component,
                                  "jemalloc.untouched") == 0,
                       "%s negative", rows[i].component);
            sum += rows[i].bytes;
        } else if (rows[i].kind == HA_BREAKDOWN_TOTAL) {
            rss = rows[i].bytes;
        }
    }
    FUZZ_CHECK(sum == rss, "parts %lld != rss %lld", (long long)sum,
               (long long)rss);
    return 0;
}
