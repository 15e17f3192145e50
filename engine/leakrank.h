/* SPDX-License-Identifier: MIT
 *
 * A finished series of dumps ranked unattended, so its leaking sites
 * reach /metrics (heap/profmetrics.h) and an alert can name them: the
 * leak watch hands over its series when it ends; heap_growth ranks it
 * (heap/growth.h: the dumps loaded and summed on the worker) in a task
 * of the engine's, as a query would, and the top sites replace the last
 * series'. The log says what ranked first.
 *
 * One ranking at a time: a series handed over while another is being
 * ranked waits for it (the newest such series only). Loop thread.
 */
#ifndef HA_LEAKRANK_H
#define HA_LEAKRANK_H

#include "core/task.h"
#include "heap/heap.h"

struct ha_leakrank;

/* A ranker of heap's series, its tasks in env. NULL on allocation
 * failure. heap and env must outlive it. */
struct ha_leakrank *ha_leakrank_new(struct ha_heap *heap,
                                    const struct ha_task_env *env);

/* Ranks the series from dump first to dump last (file names in the
 * datadir, one process's), now or after the ranking under way. */
void ha_leakrank_series(struct ha_leakrank *rk, const char *first,
                        const char *last);

/* Stops a ranking under way (its task is ended) and frees rk. NULL is a
 * no-op. */
void ha_leakrank_free(struct ha_leakrank *rk);

#endif /* HA_LEAKRANK_H */
