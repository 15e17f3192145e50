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
 * ha_maps_lookup() holds the address; every stack's thread lines lie in
 * the array, the header's threads are sorted and found by uid, their
 * names terminated; the per-thread integers (prof/threads.h) add up to
 * the jeprof totals and a thread's filter to no more than the whole; a
 * delta of the profile from itself (prof/delta.h) keeps its stacks, its
 * figures finite and not negative.
 */
#include "fuzz.h"

#include <math.h>

#include "core/buf.h"
#include "prof/aggregate.h"
#include "prof/delta.h"
#include "prof/heapv2.h"
#include "prof/maps.h"
#include "prof/threads.h"

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

    for (size_t i = 0; i < p.n_stacks; i++)
        FUZZ_CHECK((size_t)p.stacks[i].tline_off + p.stacks[i].n_threads <=
                       p.n_tlines,
                   "stack %zu thread lines out of range", i);
    for (uint32_t i = 0; i < p.n_threads; i++) {
        const char *name = ha_heapv2_thread_name(&p, &p.threads[i]);

        FUZZ_CHECK(i == 0 || p.threads[i - 1].uid <= p.threads[i].uid,
                   "threads not sorted at %u", i);
        FUZZ_CHECK(ha_heapv2_thread_of(&p, p.threads[i].uid) != NULL,
                   "thread %u not found", i);
        FUZZ_CHECK(name == NULL ||
                       (p.threads[i].name_off < p.names_len &&
                        strlen(name) <= HA_HEAPV2_NAME_MAX),
                   "thread %u name", i);
    }
    {
        struct ha_threads_row *rows;
        size_t n;

        if (ha_threads_rows(&p, &rows, &n) == 0) {
            long long sb = 0, so = 0;

            for (size_t i = 0; i < n; i++) {
                FUZZ_CHECK(rows[i].i_bytes >= 0 && rows[i].i_objs >= 0,
                           "row %zu negative", i);
                sb += rows[i].i_bytes;
                so += rows[i].i_objs;
            }
            /* Shares of a stack whose lines are zero for a counter its
             * t* line has go to the unattributed row: all adds up. */
            FUZZ_CHECK(n == 0 || !isfinite(p.scaled_bytes) ||
                           p.scaled_bytes >= 9e18 ||
                           sb == ha_heapv2_jeprof_int(p.scaled_bytes),
                       "bytes %lld != %lld", sb,
                       ha_heapv2_jeprof_int(p.scaled_bytes));
            FUZZ_CHECK(n == 0 || !isfinite(p.scaled_objs) ||
                           p.scaled_objs >= 9e18 ||
                           so == ha_heapv2_jeprof_int(p.scaled_objs),
                       "objects %lld != %lld", so,
                       ha_heapv2_jeprof_int(p.scaled_objs));
            free(rows);
        }
        if (p.n_threads > 0) {
            struct ha_threads_match m = {true, p.threads[0].uid, NULL};
            struct ha_heapv2 f;

            if (ha_threads_filter(&p, &m, &f) == 0) {
                FUZZ_CHECK(f.scaled_bytes <= p.scaled_bytes * 1.000001 + 1,
                           "filter %g > %g", f.scaled_bytes, p.scaled_bytes);
                ha_heapv2_free(&f);
            }
        }
    }
    {
        struct ha_heapv2 d;
        int rc = ha_heapv2_delta(&p, &p, &d, err, sizeof(err));

        /* (jemalloc writes a stack once: where a text repeats one,
         * each end stack meets the first, so no zero is promised.) */
        if (rc == 0) {
            FUZZ_CHECK(isfinite(d.scaled_accum_bytes) &&
                           d.scaled_accum_bytes >= 0 &&
                           d.n_stacks == p.n_stacks,
                       "self-delta %g", d.scaled_accum_bytes);
            ha_heapv2_free(&d);
        }
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
