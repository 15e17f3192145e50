/* SPDX-License-Identifier: MIT
 *
 * heapadmin's own memory (arena.c): every thread that does heapadmin's
 * work allocates from one jemalloc arena of its own, and the statistics
 * the tables and /metrics show are the host's alone.
 * heapadmin_adopt_thread() (include/heapadmin.h) is the public half.
 */
#ifndef HA_API_ARENA_H
#define HA_API_ARENA_H

struct heapadmin;
struct ha_mallctl_ops;

/* Wraps ops, a jemalloc resolved at run time (ha_mallctl_resolve), in
 * place: stats.allocated, active, metadata, resident, mapped and
 * retained read with the arena's share taken off, heapadmin.<same> read
 * that share, HA_MALLCTL_OWN_ARENA the arena's index. The first jemalloc
 * resolved in the process is the one the arena is made in. */
void ha_api_arena_wrap(struct ha_mallctl_ops *ops);

/* The calling thread (the admin thread, the engine's worker) stays out
 * of the host's heap profiles and, when h's jemalloc is wrapped,
 * allocates from the arena, uncached, so the host's figures can be told
 * apart from ours. Best effort: without profiling or with an old
 * jemalloc these names do not exist. */
void ha_api_arena_hide_thread(const struct heapadmin *h);

#endif /* HA_API_ARENA_H */
