/* SPDX-License-Identifier: MIT
 *
 * The usable sizes of a heap profile's live sampled objects, per
 * allocation backtrace, as jemalloc's recent-allocation records give them
 * (experimental.prof_recent, prof/recent.h): what a heap_v2 dump cannot
 * say. jemalloc 5.3 writes each backtrace's counts "pre-unbiased"
 * (opt.prof_unbias, prof_do_unbias in src/prof_data.c), so that jeprof's
 * mean-size rescaling gives unbiased totals: the sizes of the samples
 * behind a backtrace are lost, and a backtrace whose objects span several
 * size classes cannot be placed from the dump alone (prof/fragment.h).
 *
 * Recorded beside each dump heapadmin takes, in its "<dump>.mem"
 * (prof/dumpmem.h), after the lines that file had before:
 *
 *   sizes recent <alloc_max> <records> <live>
 *                      read from jemalloc's records: recent_alloc_max
 *                      then, the records read, the live ones among them
 *   sizes off <why>    none could be read (to the end of the line)
 *   sizes_stack <hash> <usize>:<count> [<usize>:<count> ...]
 *                      the live records of one allocation backtrace:
 *                      hash = ha_livesizes_hash of its frames (16 hex
 *                      digits), each usable size with how many
 *
 * A .mem with no "sizes" line predates them: state HA_LIVESIZES_NONE.
 * Lines of other keys are skipped (the rest of the .mem). Pure.
 */
#ifndef HA_LIVESIZES_H
#define HA_LIVESIZES_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "prof/recent.h"

enum ha_livesizes_state {
    HA_LIVESIZES_NONE,   /* not recorded (a .mem from before they were) */
    HA_LIVESIZES_OFF,    /* recording off or unreadable: why says */
    HA_LIVESIZES_RECENT, /* from jemalloc's recent-allocation records */
};

/* The live records of one backtrace with one usable size. */
struct ha_livesizes_ent {
    uint64_t stack;   /* ha_livesizes_hash of the backtrace */
    uint64_t usize;   /* usable size, bytes */
    uint64_t count;   /* live records */
};

struct ha_livesizes {
    enum ha_livesizes_state state;
    char why[160];               /* HA_LIVESIZES_OFF: why none */
    int64_t alloc_max;           /* recent_alloc_max when read (-1:
                                    unbounded) */
    uint64_t records;            /* records read, live or not */
    uint64_t live;               /* live records among them */
    struct ha_livesizes_ent *ents; /* sorted by stack, then usize */
    size_t n;
};

/* The key of a backtrace (frames[0 .. n), allocation site first, as a
 * dump's "@" line and a record's alloc_trace list them): FNV-1a over the
 * addresses' bytes, little end first. */
uint64_t ha_livesizes_hash(const uint64_t *frames, size_t n);

/* The live records of r grouped into *out (zeroed first), state
 * HA_LIVESIZES_RECENT. Returns 0, or -1 on allocation failure (*out
 * empty). */
int ha_livesizes_from_recent(const struct ha_recent *r,
                             struct ha_livesizes *out);

/* *out as HA_LIVESIZES_OFF with why (one line is kept). */
void ha_livesizes_set_off(struct ha_livesizes *out, const char *why);

/* Appends s's lines (format above; nothing for HA_LIVESIZES_NONE) to
 * out. Returns 0, or -1 when out failed to grow. */
int ha_livesizes_format(const struct ha_livesizes *s, struct ha_buf *out);

/* Reads the sizes lines of a .mem text buf[0 .. len) into *out (zeroed
 * first; other keys skipped). Returns 0, or -1 with err naming the line
 * ("line N: ...") and *out empty. */
int ha_livesizes_parse(const char *buf, size_t len, struct ha_livesizes *out,
                       char *err, size_t errlen);

/* The entries of backtrace hash stack: *first is the index of the first,
 * the return value how many (0: none). */
size_t ha_livesizes_find(const struct ha_livesizes *s, uint64_t stack,
                         size_t *first);

void ha_livesizes_free(struct ha_livesizes *s);

#endif /* HA_LIVESIZES_H */
