/* SPDX-License-Identifier: MIT
 *
 * The lifetimes of a loaded lifetime log (heap/profiles.h
 * ha_heap_log_get; heap/logfile.h): per allocation site and per stack
 * (prof/lifetimes.h), built once off the loop and kept with the cached
 * log, so a repeated query costs only its rows.
 */
#ifndef HA_LIFELOGS_H
#define HA_LIFELOGS_H

#include <stdbool.h>
#include <stddef.h>

#include "prof/lifetimes.h"
#include "heap/profiles.h"

/* The lifetimes of log pr (per_stack: per collapsed allocation stack,
 * else per allocation site). Returns 0 with *out set, HA_HEAP_ERROR (err
 * set) or HA_HEAP_STOPPED. */
int ha_heap_profile_lifetimes(struct ha_heap_profile *pr, bool per_stack,
                              const struct ha_lifetimes **out, char *err,
                              size_t errlen);

#endif /* HA_LIFELOGS_H */
