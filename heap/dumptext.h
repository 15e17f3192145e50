/* SPDX-License-Identifier: MIT
 *
 * A dump's text served as it is (jeprof's format, /pprof/heap?dump=), in
 * pieces: the file opened by the datadir's file rule (prof/dumpfile.h)
 * and checked to parse as a heap profile (once per file identity: the
 * verdict is kept with the dumps' totals, heap/dumps.h), then read a
 * piece at a time from the open descriptor. Every step runs on the
 * worker thread while the asking task waits, so neither a large dump nor
 * a slow disk holds the loop, and a reader holds one piece, never the
 * file: sixty clients of a 60 MB dump cost sixty pieces.
 *
 * Loop thread (the calls wait on the worker as heap/profiles.h's do).
 */
#ifndef HA_DUMPTEXT_H
#define HA_DUMPTEXT_H

#include <stddef.h>

#include "heap/heap.h"

struct ha_dump_text;

/* Opens dump name and checks it parses. Returns 0 with *out (close it
 * with ha_dump_text_close) and its size in *size (bytes, as opened: the
 * file is read from that descriptor, so a dump replaced meanwhile is
 * still served whole), HA_HEAP_ERROR with err naming the file and what
 * was wrong (never quoting it), or HA_HEAP_STOPPED. */
int ha_dump_text_open(struct ha_heap *heap, const char *name,
                      struct ha_dump_text **out, unsigned long long *size,
                      char *err, size_t errlen);

/* Reads up to max bytes at offset off into *buf (malloc'd; *len bytes,
 * fewer only at the end of the file). Returns 0, HA_HEAP_ERROR (a read
 * error, or the file ended before its opened size: err says so) or
 * HA_HEAP_STOPPED. */
int ha_dump_text_read(struct ha_dump_text *t, unsigned long long off,
                      size_t max, char **buf, size_t *len, char *err,
                      size_t errlen);

/* Lets go of t (its descriptor closes once no read of it is under way
 * on the worker). NULL-tolerant. */
void ha_dump_text_close(struct ha_dump_text *t);

#endif /* HA_DUMPTEXT_H */
