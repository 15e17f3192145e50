/* SPDX-License-Identifier: MIT
 *
 * Debug information fetched by GNU build-id from debuginfod servers,
 * through elfutils' own client (libdebuginfod), for the symbolizer
 * (symbolize.h) when a module has no DWARF of its own and none under the
 * local debug roots.
 *
 * The client is loaded with dlopen() at the first request, never before:
 * it brings libcurl and its TLS stack into the process, which a host
 * that never asks for debuginfod should not carry. libdebuginfod 0.188
 * takes its servers only from DEBUGINFOD_URLS and its cache directory
 * only from DEBUGINFOD_CACHE_PATH (else ~/.cache/debuginfod_client) in
 * the environment, and has no call to set either; this module reads the
 * environment and never writes it (heapadmin may live in someone else's
 * process), so a program that owns its process sets them before it
 * starts threads (heapadmind does, from its config).
 *
 * Fetches run on threads of their own (at most HA_DEBUGINFOD_THREADS at
 * once, started on demand with every signal blocked, after the owner's
 * thread_init), so a caller waits for answers only as long as it wants
 * (ha_debuginfod_wait's deadline), however slow a server is: the
 * client's progress callback, its only way to stop a transfer, is polled
 * once a second. A fetch that outlives its caller's wait goes on in the
 * background, up to HA_DEBUGINFOD_MAX_S, and its answer serves the next
 * request (libdebuginfod keeps a miss in its cache for 10 minutes, so a
 * transfer cut short would read as "not found" that long).
 *
 * Answers are kept per build-id: a file found, for good (unless it
 * leaves the client's cache); a failure, until HA_DEBUGINFOD_RETRY_S
 * later, so one failing module costs one message, not one per frame or
 * per query. Thread-safe: the fetch threads and one caller at a time.
 */
#ifndef HA_DEBUGINFOD_H
#define HA_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_DEBUGINFOD_THREADS 4   /* fetches at once */
#define HA_DEBUGINFOD_MAX_S 300   /* a fetch is cut after this long */
#define HA_DEBUGINFOD_RETRY_S 60  /* a failure is asked again after this */

struct ha_debuginfod;

struct ha_debuginfod_opts {
    /* Run first on each fetch thread (log binding, jemalloc arena and
     * profiling switches of the owner's choosing); may be NULL. */
    void (*thread_init)(void *arg);
    void *thread_init_arg;
};

enum ha_debuginfod_state {
    HA_DEBUGINFOD_UNKNOWN, /* never asked (or a failure due for a retry) */
    HA_DEBUGINFOD_PENDING, /* queued or being fetched */
    HA_DEBUGINFOD_FOUND,   /* a debug file in the client's cache */
    HA_DEBUGINFOD_FAILED,  /* no answer; the reason is kept */
    HA_DEBUGINFOD_STATE_MAX
};

/* Returns NULL on allocation failure. opts may be NULL. */
struct ha_debuginfod *ha_debuginfod_new(const struct ha_debuginfod_opts *o);

/* Stops the fetches (each sees it at its next progress poll, within about
 * a second), joins their threads and frees d. NULL is a no-op. */
void ha_debuginfod_free(struct ha_debuginfod *d);

/* Asks for the debug info of hex (a lower-case hex build-id) unless it is
 * found, pending, or failed less than HA_DEBUGINFOD_RETRY_S ago. Returns
 * its state after the call. A thread that cannot be started leaves the
 * request queued for the next thread (or FAILED when none runs). */
enum ha_debuginfod_state ha_debuginfod_request(struct ha_debuginfod *d,
                                               const char *hex);

/* Waits until none of ids[0 .. n) is pending or CLOCK_MONOTONIC passes
 * deadline_ns. Returns true when all were answered. */
bool ha_debuginfod_wait(struct ha_debuginfod *d, const char *const *ids,
                        size_t n, int64_t deadline_ns);

/* The state of hex; for FOUND the debug file's path, for FAILED the
 * reason (never a file's content), copied into out. */
enum ha_debuginfod_state ha_debuginfod_lookup(struct ha_debuginfod *d,
                                              const char *hex, char *out,
                                              size_t outlen);

/* How many requests have been answered since d was created: a caller
 * that saw requests pending compares it to know there is news. */
uint64_t ha_debuginfod_answers(struct ha_debuginfod *d);

#endif /* HA_DEBUGINFOD_H */
