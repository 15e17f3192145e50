/* SPDX-License-Identifier: MIT
 *
 * Dumps pushed to Grafana Pyroscope and Parca (admin_variables.
 * push_targets, engine/pushcfg.h): the evidence a host takes between
 * scrapes (the limit dumps before an OOM kill, the leak watch's series,
 * a peak) leaves the host as soon as it is published, whatever state the
 * receivers are in then.
 *
 * What is sent: each published dump of a kind a target takes, as the
 * gzipped profile.proto /debug/pprof/allocs?dump= serves (the same bytes,
 * made by the HTTP front-end's encoder: ha_push_set_encoder), with the
 * label contract (engine/labels.h: service_name, program, host,
 * build_id) and kind and reason; optionally the live profile every
 * push_live_interval_s (kind "live"). Pyroscope gets POST /ingest,
 * Parca POST /profiles/writeraw (prof/pushwire.h). Every request says
 * the dump's name in an Idempotency-Key header: a receiver, or a proxy
 * before it, can tell a repeat.
 *
 * The outbox: <dump dir>/push-outbox/ (mode 0700), so a push outlives
 * the process that took the dump (an OOM kill right after its limit
 * dump) and a receiver that is down:
 *   <target>.<dump>.q           a dump's claim for a target, made with
 *                               O_EXCL before it is queued: each dump is
 *                               queued once per target, whichever
 *                               process of the directory gets there
 *                               first, however often it is seen
 *   <target>.<dump>.<pid>.push  what is still to be sent (a header and
 *                               the profile), process pid's to send;
 *                               removed once a receiver took it (2xx) or
 *                               refused it for good (a 4xx but 408, 429:
 *                               logged), or dropped, oldest first, when
 *                               the outbox would hold more than
 *                               push_outbox_max_bytes (logged)
 *   <target>.since              when the target was first seen here:
 *                               older dumps of gone processes are not
 *                               pushed
 * At start a process takes over the entries of processes that are gone
 * (renamed to its pid: a rename has one winner) and queues the dumps of
 * gone processes of its directory not queued yet (a limit dump whose
 * process was killed before it was queued; jemalloc's final dump, which
 * is written at exit).
 *
 * Threads: decisions on the loop; the encoding on the engine's worker
 * (a task waits for it, as an HTTP request's does); the outbox's files
 * and the sending on a push thread of its own ("heapadmin-push"), never
 * a host thread, never the loop, and not the dump worker: a receiver
 * that does not answer holds up its pushes for push_timeout_s at a time,
 * never a dump. A failed attempt is retried after 1, 2, 4, ... seconds,
 * at most push_retry_max_s apart; a success resets the wait. The
 * libcurl that sends is loaded at the first push (engine/pushhttp.h).
 */
#ifndef HA_PUSH_H
#define HA_PUSH_H

#include <stddef.h>

#include "core/buf.h"
#include "core/task.h"
#include "engine/config.h"
#include "engine/labels.h"
#include "heap/heap.h"
#include "heap/pushrow.h"

/* Encodes dump (NULL: the live profile) as gzipped profile.proto into
 * out, from a task. Returns 0, or one of the heap's error returns
 * (heap/heap.h) with err. */
typedef int (*ha_push_encode_fn)(void *arg, const char *dump,
                                 struct ha_buf *out, char *err,
                                 size_t errlen);

struct ha_push;


/* The push of an engine, when cfg->n_push > 0 (else NULL): heap (its
 * datadir, dump prefix; heap->published is set to the push's cue),
 * labels, tasks (the engine's, for encoding) and thread_init (run first
 * on the push thread) must outlive it. encode(encode_arg) makes each
 * profile. Nothing runs until the loop does. */
struct ha_push *ha_push_new(struct event_base *base,
                            const struct ha_config *cfg,
                            struct ha_heap *heap,
                            const struct ha_labels *labels,
                            const struct ha_task_env *tasks,
                            ha_push_encode_fn encode, void *encode_arg,
                            void (*thread_init)(void *), void *init_arg);

/* Stops: a push being sent is given until deadline_ns (CLOCK_MONOTONIC)
 * to end, then its thread is left to it; what is in the outbox stays
 * for the next start. NULL is a no-op. */
void ha_push_free(struct ha_push *p, int64_t deadline_ns);

/* For a fork child: forgets the parent's thread and task. */
void ha_push_abandon(struct ha_push *p);

/* A dump may have been published: look for new ones (heap->published). */
void ha_push_poke(void *push);

/* stats_push's rows: up to max into rows; returns how many. */
size_t ha_push_rows(const struct ha_push *p, struct ha_push_row *rows,
                    size_t max);

#endif /* HA_PUSH_H */
