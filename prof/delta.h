/* SPDX-License-Identifier: MIT
 *
 * A delta profile, Go's way (net/http/pprof's ?seconds=N, godeltaprof):
 * what a process allocated between two of its heap profiles, with what
 * it holds at the end. From two parsed heap_v2 profiles of one process
 * taken with opt.prof_accum (cumulative counters), base first:
 *   - the result has the end's backtraces, frames, threads and header;
 *   - each backtrace's cumulative figures are the end's less the
 *     base's, matched by the backtrace's frames, as jeprof --base and
 *     heap_profile_diff subtract them: the scaled figures. Those are
 *     what adds up: jemalloc 5.3 unbiases each line (prof_do_unbias,
 *     opt.prof_unbias, on by default) into counts c_in, s_in from which
 *     jeprof's scaling (ha_heapv2_scale) recovers the additive sums
 *     c_out, s_out exactly (x = s_in/c_in, c_out = c_in/(1-exp(-x/R))),
 *     whereas the raw bytes can fall as small objects come (s_in =
 *     s_out(1-exp(-s_out/(c_out R))) falls with c_out). A figure that
 *     fell anyway (rounding; a process with prof_unbias:false, whose
 *     scaling is not additive) counts 0;
 *   - its thread lines carry the end's counts less the base's of the
 *     same uid (bytes at 0 where they fell), which share the figures out
 *     (prof/threads.h);
 *   - the in-use counters are the end's, as taken.
 * The raw cumulative object count only grows while sampling goes on
 * (c_in = c_out(1-exp(-s_out/(c_out R))) grows with c_out and with
 * s_out; without unbiasing it counts samples), so one that fell (a
 * backtrace's, a thread line's, the total), a base backtrace the end
 * lacks (jemalloc drops a backtrace from a dump only once a reset
 * zeroed it), or another sample period means the profile was reset
 * (prof.reset) between the two: refused.
 *
 * Pure: no I/O.
 */
#ifndef HA_DELTA_H
#define HA_DELTA_H

#include <stddef.h>

#include "prof/heapv2.h"

/* What ha_heapv2_delta returns besides 0. */
#define HA_DELTA_NOMEM (-1)   /* out of memory */
#define HA_DELTA_RESET (-2)   /* the counters went back: why says where */
#define HA_DELTA_NOACCUM (-3) /* a profile has no cumulative counters */

/* The delta from base to end into *out (zeroed first; free it with
 * ha_heapv2_free). Its maps text is empty: the caller has the end's.
 * Returns 0, or one of HA_DELTA_* with why set (what fell, by how
 * much). */
int ha_heapv2_delta(const struct ha_heapv2 *end, const struct ha_heapv2 *base,
                    struct ha_heapv2 *out, char *why, size_t whylen);

#endif /* HA_DELTA_H */
