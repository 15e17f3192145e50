/* SPDX-License-Identifier: MIT
 *
 * What the files of loaded profiles (heap/profiles.h) share: the cache
 * and its loads under way (profiles_cache.c), a load and its running
 * (profiles_load.c), the live profile's text (profiles_live.c); used by
 * those, the deltas (profiles_delta.c) and the figures
 * (profiles_figures.c). Private to those files.
 */
#ifndef HA_PROFILES_INT_H
#define HA_PROFILES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "heap/mallctl.h"
#include "heap/profiles.h"

/* A load under way, which later askers of the same file wait for. */
struct inflight {
    char *name;
    struct stat st;           /* the file being read */
    struct ha_task **waiters; /* woken when it lands */
    size_t n_waiters, cap_waiters;
    bool landed;
    int rc; /* its result, once landed */
    char err[1024];
    int refs; /* the loader and each waiter */
    struct inflight *next;
};

struct ha_heap_cache {
    struct ha_heap_profile *list; /* most recently used first */
    uint64_t clock;
    unsigned live_seq;         /* private live-dump directories */
    struct inflight *inflight; /* loads under way */
    time_t used;               /* CLOCK_MONOTONIC s of the last use */
};

/* One load: a dump by name, or a live dump's text already taken. */
struct load {
    struct ha_heap *heap;
    struct ha_heap_cache *cache;
    struct ha_heap_profile *pr; /* being filled; NULL after landing */
    char *text;                 /* live: the dump's text, else NULL */
    size_t text_len;
    struct inflight *fl; /* dumps: who else waits; NULL: live */
    int rc;
    char err[1024];
};

/* profiles_cache.c */

/* Memory a profile holds, roughly (its arrays and strings). */
size_t ha_profiles_bytes(const struct ha_heap_profile *pr);

/* heap's cache, made on first use and marked used now; NULL when
 * out of memory. */
struct ha_heap_cache *ha_profiles_cache_of(struct ha_heap *heap);

/* True when a describes the file of identity dev, ino, size, mtime.
 */
bool ha_profiles_same_file(const struct stat *a, dev_t dev, ino_t ino,
                           off_t size, const struct timespec *mtime);

/* The cached profile of name read from the file st describes, made
 * with the current wrapper edits, or NULL. */
struct ha_heap_profile *ha_profiles_cache_find(const struct ha_heap *heap,
                                               struct ha_heap_cache *c,
                                               const char *name,
                                               const struct stat *st);

/* Puts pr (holding one reference for the cache) in front, replacing
 * an older file of the same name. */
void ha_profiles_cache_insert(struct ha_heap_cache *c,
                              struct ha_heap_profile *pr);

/* profiles_load.c */

/* A load of name (a live one, a lifetime log, or a dump) with a new
 * profile holding one reference; NULL when out of memory. */
struct load *ha_profiles_load_new(struct ha_heap *heap, struct ha_heap_cache *c,
                                  const char *name, bool live, bool is_log);

/* Runs l off the loop and lands it. Returns 0 (l->pr loaded, l
 * freed but for the profile, whose reference moves to *out),
 * HA_HEAP_ERROR or HA_HEAP_STOPPED (l is the discard's then). */
int ha_profiles_run_load(struct load *l, struct ha_heap_profile **out,
                         char *err, size_t errlen);

/* profiles_live.c */

/* Memory now, for a live profile: resident, the cgroup, the bins of
 * a fresh epoch. */
void ha_profiles_live_memory(struct ha_heap *heap, struct ha_dumpmem *m);

/* prof.dump into file, read back and removed: the text of a fresh
 * profile (*buf malloc'd, *len bytes). Returns 0, HA_HEAP_BUSY
 * (another dump is being written) or HA_HEAP_ERROR, with err. */
int ha_profiles_dump_read(const struct ha_mallctl_ops *ops, const char *file,
                          char **buf, size_t *len, char *err, size_t errlen);

/* The text of a fresh profile, written where the loop cannot stall
 * (see profiles_live.c). Returns 0, HA_HEAP_BUSY or HA_HEAP_ERROR.
 */
int ha_profiles_live_dump(struct ha_heap *heap, char **buf, size_t *len,
                          char *err, size_t errlen);

#endif /* HA_PROFILES_INT_H */
