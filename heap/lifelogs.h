/* SPDX-License-Identifier: MIT
 *
 * Lifetime logs as loaded profiles (heap/profiles.h): a prof_log file the
 * lifetime window published (heap/logwin.h), read with its side files
 * (<log>.maps: the mappings its addresses are in; <log>.window: its
 * window's figures; <log>.buildid), its traces symbolized as a heap
 * profile's stacks are, and its lifetimes per allocation site and per
 * stack (prof/lifetimes.h) built once, off the loop, and kept with it.
 *
 * A log without its .maps (one jemalloc wrote on its own, or copied
 * without it) still reads: its frames stay addresses.
 */
#ifndef HA_LIFELOGS_H
#define HA_LIFELOGS_H

#include <stdbool.h>
#include <stddef.h>

#include "prof/lifetimes.h"
#include "heap/profiles.h"

/* Worker thread, from the profile loader: parses the log text buf (pr's
 * file) into pr->log, reads its side files, and makes pr->p of its
 * traces. Returns 0 or -1 with err set. */
int ha_lifelog_parse(struct ha_heap *heap, struct ha_heap_profile *pr,
                     const char *buf, size_t len, char *err, size_t errlen);

/* The lifetimes of log pr (per_stack: per collapsed allocation stack,
 * else per allocation site), built once off the loop and kept with it.
 * Returns 0 with *out set, HA_HEAP_ERROR (err set) or HA_HEAP_STOPPED. */
int ha_heap_profile_lifetimes(struct ha_heap_profile *pr, bool per_stack,
                              const struct ha_lifetimes **out, char *err,
                              size_t errlen);

/* Memory pr's log parts hold, for the cache's accounting. */
size_t ha_lifelog_bytes(const struct ha_heap_profile *pr);

/* Frees pr's log parts (profile_free). */
void ha_lifelog_free(struct ha_heap_profile *pr);

#endif /* HA_LIFELOGS_H */
