/* SPDX-License-Identifier: MIT
 *
 * A published lifetime log (heap/logwin.h) read from the datadir with
 * its side files: <log>.maps (the mappings its addresses are in; a log
 * without it still reads, its frames staying addresses) and <log>.window
 * (its window's figures), and its traces made the stacks of a heap
 * profile (prof/traces.h), so the profile loader (heap/profiles.h)
 * symbolizes and caches it as it does a dump. Safe on any thread.
 */
#ifndef HA_LOGFILE_H
#define HA_LOGFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/heapv2.h"
#include "prof/lifetimes.h"
#include "prof/proflog.h"

struct ha_logfile {
    struct ha_proflog log;           /* the log itself */
    struct ha_proflog_window window; /* its .window side file */
    bool has_window;                 /* ... was found and read */
    struct ha_lifetimes *life[2];    /* per site, per stack: built on
                                        first use (heap/lifelogs.h) */
};

/* Parses buf[0 .. len), the log name in datadir, into *out (zeroed
 * first), reads its side files, and makes *p of its traces: one stack
 * each, counting the objects and bytes freed that were allocated there
 * (scaled as jeprof scales samples). Returns 0 or -1 with err set. */
int ha_logfile_parse(const char *datadir, const char *name, const char *buf,
                     size_t len, struct ha_logfile *out, struct ha_heapv2 *p,
                     char *err, size_t errlen);

/* Memory f holds, for a cache's accounting. */
size_t ha_logfile_bytes(const struct ha_logfile *f);

/* Frees what f holds; f is zeroed. NULL-tolerant. */
void ha_logfile_free(struct ha_logfile *f);

#endif /* HA_LOGFILE_H */
