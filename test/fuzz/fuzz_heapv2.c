/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the heap-profile readers that see files from disk
 * (prof/heapv2.h, prof/maps.h): a heap_v2 dump, its MAPPED_LIBRARIES
 * section and a <dump>.buildid side file, then aggregation of what was
 * parsed with an empty symbol table (every frame an unknown address).
 * Seeds: corpus/heapv2/ (real dumps from test/data/heap/ and fragments).
 *
 * Invariants: 0 or -1; on -1 the message names a line; on 0 every stack's
 * frames lie inside the frame array, the maps text is terminated at
 * maps_len, scaled counters are finite and not below the raw ones, the
 * aggregate's total equals the parsed total, and each mapping found by
 * ha_maps_lookup() holds the address.
 */
#include "fuzz.h"

#include <math.h>

#include "core/buf.h"
#include "prof/aggregate.h"
#include "prof/heapv2.h"
#include "prof/maps.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct ha_heapv2 p;
    struct ha_maps m;
    struct ha_buildids b;
    struct ha_syms syms = {0};
    char err[256];

    if (ha_buildids_parse(text, size, &b, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < b.n_ids; i++)
            FUZZ_CHECK(ha_buildids_find(&b, b.paths + b.ids[i].path_off) !=
                           NULL,
                       "id %zu not found by its path", i);
        ha_buildids_free(&b);
    }
    if (ha_maps_parse(text, size, &m, err, sizeof(err)) == 0)
        ha_maps_free(&m);
    else
        FUZZ_CHECK(strncmp(err, "maps line ", 10) == 0, "maps: '%s'", err);

    if (ha_heapv2_parse(text, size, &p, err, sizeof(err)) != 0) {
        FUZZ_CHECK(strncmp(err, "line ", 5) == 0 ||
                       strstr(err, "out of memory") != NULL,
                   "heapv2: '%s'", err);
        return 0;
    }
    FUZZ_CHECK(p.maps != NULL && p.maps[p.maps_len] == '\0',
               "maps not terminated");
    for (size_t i = 0; i < p.n_stacks; i++) {
        const struct ha_heapv2_stack *st = &p.stacks[i];

        FUZZ_CHECK((size_t)st->frame_off + st->n_frames <= p.n_frames,
                   "stack %zu frames out of range", i);
        FUZZ_CHECK(isfinite(st->bytes) && isfinite(st->objs) &&
                       st->bytes >= (double)st->raw.bytes * 0.999999,
                   "stack %zu scaled badly", i);
    }

    if (ha_maps_parse(p.maps, p.maps_len, &m, err, sizeof(err)) == 0) {
        for (size_t i = 0; i < p.n_frames; i++) {
            uint64_t off;
            long e = ha_maps_lookup(&m, p.frames[i], &off);

            FUZZ_CHECK(e < 0 || (p.frames[i] >= m.entries[e].start &&
                                 p.frames[i] < m.entries[e].end),
                       "lookup of %llx wrong",
                       (unsigned long long)p.frames[i]);
        }
        ha_maps_free(&m);
    }

    ha_syms_finish(&syms);
    {
        struct ha_agg a = {0};
        struct ha_buf out = HA_BUF_INIT;

        if (ha_agg_add(&a, &p, &syms, 1, false, err, sizeof(err)) == 0) {
            FUZZ_CHECK(a.total_bytes == p.scaled_bytes ||
                           fabs(a.total_bytes - p.scaled_bytes) <=
                               1e-9 * fabs(p.scaled_bytes),
                       "total %g != %g", a.total_bytes, p.scaled_bytes);
            ha_agg_format_text(&a, false, 20, &out);
        }
        ha_agg_collapsed(&p, &syms, false, &out);
        ha_buf_free(&out);
        ha_agg_free(&a);
    }
    ha_heapv2_free(&p);
    return 0;
}
